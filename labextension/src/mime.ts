/**
 * The MIME renderer for application/vnd.tile-lab.v1+json.
 *
 * Marked safe: the view never executes or injects markup from the data: every value goes
 * in as text or as a validated number / name (see model.ts and view.ts), so it also
 * renders outputs of untrusted notebooks.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE, parseInspection } from './model';
import { InspectionView, renderError } from './view';

export class TileLabRenderer extends Widget implements IRenderMime.IRenderer {
  private view: InspectionView | null = null;

  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('jp-RenderedTileLab');
    this.mimeType = options.mimeType;
  }

  readonly mimeType: string;

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.view?.dispose();
    this.view = null;
    const doc = this.node.ownerDocument;
    let child: HTMLElement;
    try {
      this.view = new InspectionView(parseInspection(model.data[this.mimeType]), doc);
      child = this.view.node;
    } catch (err) {
      child = renderError(doc, err instanceof Error ? err.message : String(err));
    }
    this.node.replaceChildren(child);
    return Promise.resolve();
  }

  dispose(): void {
    this.view?.dispose();
    this.view = null;
    super.dispose();
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 10,
  createRenderer: options => new TileLabRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'tile-lab:mime-renderer',
  description: 'Linked source / Tile IR / SASS panes for tile_lab views',
  rendererFactory,
  rank: 10,
  dataType: 'json'
};

export default extension;
