"""Sphinx configuration of tile_lab's documentation site.

Build it with ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (``.ci/run`` does,
then ``python tools/check_doc_links.py docs/_build/html``). Pages are MyST Markdown; the
tutorials are the nbval-tested ``notebooks/*.ipynb`` rendered with their stored outputs (never
executed here); the API reference comes from the docstrings.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # autodoc documents this checkout's tile_lab, not an installed one

# Sphinx reads sources only under docs/, so each build copies the committed notebooks into
# docs/tutorials/ (git-ignored). copy2 keeps their modification times, so an incremental build
# rereads only the notebooks that changed.
TUTORIALS = DOCS / "tutorials"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
for stale in set(TUTORIALS.glob("*.ipynb")) - {TUTORIALS / nb.name for nb in NOTEBOOKS}:
    stale.unlink()
for notebook in NOTEBOOKS:
    copy = TUTORIALS / notebook.name
    if not copy.exists() or copy.stat().st_mtime != notebook.stat().st_mtime:
        shutil.copy2(notebook, copy)

project = "tile_lab"
author = "the tile_lab authors"
copyright = "the tile_lab authors"

extensions = [
    "myst_nb",  # MyST Markdown pages and .ipynb notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the docstrings' "Args:" / "Returns:" / "Raises:" sections
]

exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["tables.css"]

# notebooks: shown as committed (nbval checks those outputs in the test suite), never run here
nb_execution_mode = "off"
# tile_lab's own MIME bundle (application/vnd.tile-lab.v1+json, drawn by the JupyterLab
# extension) travels with a text/html rendering of the same view, which is what a page shows
nb_mime_priority_overrides = [("html", "application/vnd.tile-lab.v1+json", None)]

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links reach headings down to ###

autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}

html_theme = "furo"
html_title = "tile_lab"
html_theme_options = {"navigation_with_keys": True}


def _unlink_builtins(app, doctree) -> None:
    """Builtin types in signatures (``bytes``, ``int``) stay plain text. Python's own docs are
    not linked (intersphinx needs the network, which CI lacks), and left as references the
    Python domain's fuzzy search would send ``bytes`` to a dataclass field named ``bytes``."""
    import builtins

    from sphinx.addnodes import pending_xref

    for node in list(doctree.findall(pending_xref)):
        if node.get("refdomain") == "py" and hasattr(builtins, node.get("reftarget", "")):
            node.replace_self(node.children or [])


def setup(app) -> None:
    app.connect("doctree-read", _unlink_builtins)
