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

import { IInspectionData, MIME_TYPE, parseInspection } from './model';
import { IProfileData, PROFILE_MIME_TYPE, parseProfileSteps } from './profile';
import { payloadOf } from './payload';
import { ProfileView } from './profileView';
import { InspectionView, renderError } from './view';

/** The data of either MIME type, checked (throws InvalidViewData), in steps (see
 * parseProfileSteps): `next` is awaited between them and says whether to go on. */
async function parse(
  mimeType: string,
  data: unknown,
  next: () => Promise<boolean>
): Promise<IInspectionData | IProfileData | null> {
  if (mimeType !== PROFILE_MIME_TYPE) {
    return parseInspection(data);
  }
  const steps = parseProfileSteps(data);
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) {
      return step.value;
    }
    if (!(await next())) {
      return null;
    }
  }
}

/** Its view. */
function makeView(data: IInspectionData | IProfileData, doc: Document): InspectionView | ProfileView {
  return 'inspection' in data ? new ProfileView(data, doc) : new InspectionView(data, doc);
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
    const data = payloadOf(model, this.mimeType);
    // Check the data in tasks of their own, not inside the one that opens the notebook
    // (which, for a big notebook, already runs for a while), and draw in the next one:
    // each stays as short as it can be. (The 7.7 MB comparison of 8 configs of issue 28,
    // on a 2-core machine: about 10 ms a config to check, about 60 ms to draw.)
    const ticket = ++this.renders;
    const win = doc.defaultView ?? globalThis;
    const tick = async (): Promise<boolean> => {
      await new Promise<void>(resolve => win.setTimeout(resolve, 0));
      return ticket === this.renders && !this.isDisposed; // else a newer model came, or the output went away
    };
    let child: HTMLElement;
    try {
      if (!(await tick())) {
        return;
      }
      const parsed = await parse(this.mimeType, data, tick);
      if (!parsed || !(await tick())) {
        return;
      }
      this.view = makeView(parsed, doc);
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
