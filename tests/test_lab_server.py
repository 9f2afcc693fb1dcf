"""The UI tests' JupyterLab server (tests/lab_server.py) reads notebooks through a contents
manager that skips two costs (tests/lab_contents.py); what it answers must be what
JupyterLab's own manager answers, for the suite's notebooks and for a notebook that a
signature makes trusted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

# the JupyterLab side of the test extra: a machine with only the GPU wheels skips this file
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("jupyter_server")

import lab_server  # noqa: E402
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager  # noqa: E402
from lab_contents import FastContentsManager  # noqa: E402
from nbformat.sign import NotebookNotary  # noqa: E402
from test_labextension import _code_cell, _notebook  # noqa: E402
from traitlets.config import Config  # noqa: E402


def _answers(manager, names: list[str]) -> dict[str, dict]:
    async def get_all():
        return {n: await manager.get(n, content=True) for n in names}

    out = asyncio.run(get_all())
    for model in out.values():
        for key in ("created", "last_modified"):
            model.pop(key)
    return json.loads(json.dumps(out))


def _notebooks(root: Path) -> list[str]:
    stream = {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]}
    rich = {"output_type": "display_data", "metadata": {"isolated": True},
            "data": {"application/vnd.tile-lab.v1+json": {"source": "x\n" * 50,
                                                           "line_map": [1, 2, None]},
                     "text/plain": ["line 1\n", "line 2"], "text/html": ["<b>", "</b>"]}}
    result = dict(rich, output_type="execute_result", execution_count=3)
    notebooks = {
        "outputs.ipynb": _notebook([_code_cell("c1", "print(1)", [stream, rich]),
                                    _code_cell("c2", ["a = 1\n", "a"], [result]),
                                    {"cell_type": "markdown", "id": "m", "metadata": {},
                                     "source": ["# t\n", "x"]}]),
        "empty.ipynb": _notebook([]),
    }
    transient = _notebook([_code_cell("c", "1")])
    transient["metadata"]["orig_nbformat"] = 3
    transient["cells"][0]["metadata"]["trusted"] = True  # on disk: the server drops it
    notebooks["transient.ipynb"] = transient
    for name, nb in notebooks.items():
        (root / name).write_text(json.dumps(nb))
    return sorted(notebooks)


def test_the_server_config_file_picks_that_manager() -> None:
    c = Config()
    exec(compile(lab_server.SERVER_CONFIG, "jupyter_server_config.py", "exec"), {"c": c})
    assert c.ServerApp.contents_manager_class is FastContentsManager


def test_the_test_server_answers_what_jupyterlab_answers(tmp_path: Path) -> None:
    names = _notebooks(tmp_path)
    fast = FastContentsManager(root_dir=str(tmp_path))
    stock = AsyncLargeFileManager(root_dir=str(tmp_path))
    assert type(fast) is not AsyncLargeFileManager
    assert _answers(fast, names) == _answers(stock, names)
    cell = _answers(fast, ["outputs.ipynb"])["outputs.ipynb"]["content"]["cells"][0]
    assert cell["metadata"]["trusted"] is False
    assert cell["outputs"][0]["text"] == "a\nb\n"  # nbformat's reader joins split lines


def test_a_signed_notebook_is_trusted_by_both(tmp_path: Path) -> None:
    names = _notebooks(tmp_path)
    (tmp_path / "data").mkdir()
    notary = NotebookNotary(data_dir=str(tmp_path / "data"))
    signed = tmp_path / "outputs.ipynb"
    notary.sign(nbformat.read(signed, as_version=4))
    fast = FastContentsManager(root_dir=str(tmp_path))
    stock = AsyncLargeFileManager(root_dir=str(tmp_path))
    fast.notary, stock.notary = notary, notary
    got = _answers(fast, names)
    assert got == _answers(stock, names)
    cells = got["outputs.ipynb"]["content"]["cells"]
    assert cells[0]["metadata"]["trusted"] is True
    assert got["empty.ipynb"]["content"]["cells"] == []
