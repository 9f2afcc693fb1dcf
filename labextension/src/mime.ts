/**
 * The MIME renderers for application/vnd.tile-lab.v1+json (an inspect view) and
 * application/vnd.tile-lab.profile.v1+json (an inspect view with a GPU profile).
 *
 * Marked safe: the view never executes or injects markup from the data: every value goes
 * in as text or as a validated number / name (see model.ts and view.ts), so it also
 * renders outputs of untrusted notebooks.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE, parseInspection } from './model';
import { PROFILE_MIME_TYPE, parseProfile } from './profile';
import { ProfileView } from './profileView';
import { InspectionView, renderError } from './view';

/** What each MIME type renders: its data checked, then its view. */
function makeView(mimeType: string, data: unknown, doc: Document): InspectionView | ProfileView {
  return mimeType === PROFILE_MIME_TYPE
    ? new ProfileView(parseProfile(data), doc)
    : new InspectionView(parseInspection(data), doc);
}

export class TileLabRenderer extends Widget implements IRenderMime.IRenderer {
  private view: InspectionView | ProfileView | null = null;

  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('jp-RenderedTileLab');
    this.mimeType = options.mimeType;
  }

  readonly mimeType: string;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.view?.dispose();
    this.view = null;
    const doc = this.node.ownerDocument;
    const data = model.data[this.mimeType];
    // Draw in a task of its own, not inside the one that opens the notebook (which, for a
    // big notebook, already runs for a while): each stays as short as it can be.
    const ticket = ++this.renders;
    await new Promise<void>(resolve => (doc.defaultView ?? globalThis).setTimeout(resolve, 0));
    if (ticket !== this.renders || this.isDisposed) {
      return; // a newer model came, or the output went away
    }
    let child: HTMLElement;
    try {
      this.view = makeView(this.mimeType, data, doc);
      child = this.view.node;
    } catch (err) {
      child = renderError(doc, err instanceof Error ? err.message : String(err));
    }
    this.node.replaceChildren(child);
  }

  private renders = 0;

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

/** Ranked ahead of the inspect view: a bundle with both shows the profile. */
export const profileRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [PROFILE_MIME_TYPE],
  defaultRank: 9,
  createRenderer: options => new TileLabRenderer(options)
};

const extensions: IRenderMime.IExtension[] = [
  {
    id: 'tile-lab:mime-renderer',
    description: 'Linked source / Tile IR / SASS panes for tile_lab views',
    rendererFactory,
    rank: 10,
    dataType: 'json'
  },
  {
    id: 'tile-lab:profile-renderer',
    description: 'GPU profiles on the linked panes: heat gutter, stall reasons, hot lines',
    rendererFactory: profileRendererFactory,
    rank: 9,
    dataType: 'json'
  }
];

export default extensions;
