/**
 * The tile_lab front-end plugin: the `%%tile` cell editor extension.
 * (The MIME renderer is a separate mimeExtension, see mime.ts.)
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import {
  EditorExtensionRegistry,
  IEditorExtensionRegistry,
  IEditorLanguageRegistry
} from '@jupyterlab/codemirror';

import { IPythonSource, tileCellExtension } from './tileCell';

const tileCellPlugin: JupyterFrontEndPlugin<void> = {
  id: 'tile-lab:tile-cell',
  description: 'Header decoration and Python highlighting for %%tile cells',
  autoStart: true,
  requires: [IEditorExtensionRegistry, IEditorLanguageRegistry],
  activate: (
    _app: JupyterFrontEnd,
    extensions: IEditorExtensionRegistry,
    languages: IEditorLanguageRegistry
  ): void => {
    const python: IPythonSource = { current: null, ready: Promise.resolve() };
    python.ready = languages
      .getLanguage('python')
      .then(lang => {
        python.current = lang?.support?.language ?? null;
      })
      .catch(reason => console.warn('tile-lab: could not load Python highlighting', reason));
    const extension = tileCellExtension(python);
    extensions.addExtension({
      name: 'tile-lab:tile-cell',
      factory: () => EditorExtensionRegistry.createImmutableExtension(extension)
    });
  }
};

export default [tileCellPlugin];
