"""The contents manager of the UI tests' JupyterLab server (tests/lab_server.py loads it from
the server's config file): JupyterLab's own, minus two costs that cannot change what it
answers here. The size benchmark (bench/labextension_size.py, then a test) opens ~180 MB of
notebooks; its server spent 46 s of CPU, 2 of the run's 9 minutes, in the two:

* the notebook's signature (a keyed hash of every value: 6.8 s for the 31 MB comparison
  notebook, each opening) is computed only when the signature store holds one to match.
  Nothing in the suite signs a notebook, so every notebook is untrusted, as it would be
  after the hash;
* the JSON becomes nbformat's attribute dictionaries only down to the outputs (2.7 s for
  the 1.6 M objects of that notebook's output), which is as deep as the server reads it,
  then nbformat's reader's own rewrites (joined text lines, transient keys dropped).

The JSON sent is the same (compared in tests/test_lab_server.py)."""

from __future__ import annotations

import json

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from nbformat import NotebookNode
from nbformat.v4.rwbase import rejoin_lines, strip_transient


class FastContentsManager(AsyncLargeFileManager):
    def mark_trusted_cells(self, nb, path=""):
        store = self.notary.store
        if store.db is not None and store.db.execute(
                "SELECT count(*) FROM nbsignatures").fetchone()[0]:
            return super().mark_trusted_cells(nb, path)
        self.notary.mark_cells(nb, False)  # what check_signature answers with no signature
        return None

    async def _read_notebook(self, os_path, as_version=4, capture_validation_error=None,
                             raw=False):
        text, _format, raw_bytes = await self._read_file(os_path, "text", raw=True)
        data = json.loads(text)
        if data.get("nbformat") != 4:  # anything else: nbformat's own reading
            return await super()._read_notebook(os_path, as_version,
                                                capture_validation_error, raw)
        nb = NotebookNode(data, metadata=NotebookNode(data.get("metadata", {})))
        nb["cells"] = [NotebookNode(c, metadata=NotebookNode(c.get("metadata", {})),
                                    **({"outputs": [NotebookNode(o) for o in c["outputs"]]}
                                       if "outputs" in c else {}))
                       for c in nb.get("cells", [])]
        nb = strip_transient(rejoin_lines(nb))  # as nbformat's reader does
        return (nb, raw_bytes) if raw else nb
