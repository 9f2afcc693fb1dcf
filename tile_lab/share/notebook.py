"""``tile-lab export notebook.ipynb``: every tile_lab view a notebook holds, in one HTML file.

tile_lab's JSON payloads (``application/vnd.tile-lab.v1+json``, the inspect view, and
``application/vnd.tile-lab.profile.v1+json``, a profile on it) are validated against the
schema the JupyterLab extension validates against, then drawn by the same renderers as
``tile_lab.export``: their data is only ever text in the page. The views a notebook saves
only as markup (diagrams, checker, sanitizer and cross-check reports, charts, the doctor...:
``render.safe_markup.TILE_LAB_VIEWS``) are recognised by their outermost class and copied
through ``render.safe_markup.clean_markup``, an allow-list of static HTML and SVG (no script,
no event handler, no link, nothing fetched, CSS scoped to tile_lab's classes), each in a box
that clips it. Other outputs (a notebook's own HTML, images) are counted and left out; the
page says how many.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compile.artifacts import MIME_TYPE, Inspection, Remark, StageText
from ..errors import FileFormatError
from ..render.export import note_html, overlay_html, page_html
from ..render.html import inspection_html
from ..render.mime import mime_schema
from ..render.profile_view import PROFILE_MIME_TYPE, PROFILE_SCHEMA_FILE
from ..render.safe_markup import markup_section, markup_title, tile_lab_view

__all__ = ["MAX_NOTEBOOK_BYTES", "NotebookExport", "export_notebook"]

MAX_NOTEBOOK_BYTES = 256 << 20


@dataclass(frozen=True)
class NotebookExport:
    """What ``export_notebook`` wrote: the page, how many views, and how many outputs it
    left out (not tile_lab's)."""

    path: Path
    views: int
    skipped_outputs: int

    def summary(self) -> str:
        return (f"wrote {self.path}: {self.views} tile_lab view{'s' * (self.views != 1)}"
                + (f"; {self.skipped_outputs} other output{'s' * (self.skipped_outputs != 1)}"
                   " left out (not tile_lab views)" if self.skipped_outputs else ""))


def export_notebook(notebook: str | os.PathLike, out: str | os.PathLike | None = None, *,
                    max_bytes: int = MAX_NOTEBOOK_BYTES) -> NotebookExport:
    """Write the tile_lab views of ``notebook`` (an ``.ipynb``) to ``out`` (default: the
    notebook's name with ``.html``). Raises FileFormatError, before writing anything, for a
    file that is not a notebook, is truncated, larger than ``max_bytes``, or holds a
    tile_lab payload that does not match its schema."""
    src = Path(notebook)
    name = str(src)
    try:
        size = src.stat().st_size
    except OSError as e:
        raise FileFormatError(f"cannot read notebook {name!r}: {e.strerror or e}") from None
    if size > max_bytes:
        raise FileFormatError(f"notebook {name!r} is {size:,} bytes, over the "
                              f"{max_bytes:,}-byte limit",
                              hint="export_notebook(..., max_bytes=N) raises it")
    try:
        nb = json.loads(src.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FileFormatError(f"{name!r} is not a notebook (not UTF-8 JSON: {e}); a "
                              "truncated file reads like this") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or nb.get("nbformat") != 4:
        raise FileFormatError(f"{name!r} is not a version-4 Jupyter notebook (no 'cells' "
                              "list, or 'nbformat' is not 4)")
    sections: list[tuple[str, str]] = []
    skipped = printed = 0
    for number, cell in enumerate(cells, 1):
        for output in _outputs(name, number, cell):
            data = output.get("data")
            if not isinstance(data, dict):
                printed += output.get("output_type") == "stream"
                skipped += output.get("output_type") != "stream"
                continue
            where = _cell_label(number, cell)
            if PROFILE_MIME_TYPE in data:
                overlay = _valid(name, where, data[PROFILE_MIME_TYPE], _profile_validator())
                insp = inspection_from_payload(overlay["inspection"])
                sections.append((f"{where}: {insp.kernel_name}, profiled on "
                                 f"{overlay.get('gpu') or '?'}",
                                 inspection_html(insp) + overlay_html(overlay)))
            elif MIME_TYPE in data:
                insp = inspection_from_payload(_valid(name, where, data[MIME_TYPE],
                                                      _inspection_validator()))
                sections.append((f"{where}: {insp.kernel_name} ({insp.arch})",
                                 inspection_html(insp)))
            elif (view := _markup_view(data)) is not None:
                kind, markup = view
                sections.append((f"{where}: {kind}{_detail(markup, data)}",
                                 markup_section(markup)))
            else:
                skipped += 1
    if not sections:  # a page with no views helps nobody: say why, write nothing
        why = ("none of its cells has an output: it was saved without running" if not
               skipped + printed else
               f"its outputs ({skipped + printed}: {printed} printed text, {skipped} other) "
               "hold no tile_lab view")
        raise FileFormatError(f"{name!r} has no tile_lab views to export: {why}",
                              hint="nothing was written; run the notebook in Jupyter (Run "
                                   "All), save it, then export")
    if skipped:
        sections.append(("left out", note_html(
            f"{skipped} other output{'s' * (skipped != 1)} (the notebook's own HTML, "
            "images) left out: only tile_lab's views are copied into this page.")))
    target = Path(out) if out is not None else src.with_suffix(".html")
    from .._version import __version__

    target.write_text(page_html(f"tile_lab views of {src.name}", sections,
                                meta=f"exported by tile_lab {__version__} from {src.name}"),
                      encoding="utf-8")
    views = len([s for s in sections if s[0] != "left out"])
    return NotebookExport(target, views, skipped)


def _text(value: Any) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


def _markup_view(data: dict[str, Any]) -> tuple[str, str] | None:
    """(what the view is called, its markup) for a tile_lab view saved as HTML or SVG."""
    for mime in ("text/html", "image/svg+xml"):
        markup = _text(data.get(mime, ""))
        kind = tile_lab_view(markup)
        if kind is not None:
            return kind, markup
    return None


def _detail(markup: str, data: dict[str, Any]) -> str:
    """The view's own one-line title: the first line of its text; where that is a
    ``Name(...)`` repr (IPython's text/plain), a picture's aria-label or the view's first
    line of text."""
    line = _text(data.get("text/plain", "")).strip().split("\n")[0]
    if re.match(r"^\w+\(", line):
        line = markup_title(markup)
    if not line:
        return ""
    return ": " + (line if len(line) <= 120 else line[:119] + "…")


def inspection_from_payload(d: dict[str, Any]) -> Inspection:
    """An Inspection from a schema-valid ``application/vnd.tile-lab.v1+json`` payload (the
    cubin is not in it)."""
    return Inspection(
        kernel_name=d["kernel_name"], filename=d["filename"], first_line=d["first_line"],
        source=d["source"], arch=d["arch"], signature=d["signature"], hints=d["hints"],
        stages={k: StageText(k, v["text"], tuple(v["line_map"]))
                for k, v in d["stages"].items()},
        remarks=tuple(Remark(**r) for r in d["remarks"]), versions=d["versions"],
        show=tuple(d["show"]))


def _outputs(name: str, number: int, cell: Any) -> list[dict[str, Any]]:
    if not isinstance(cell, dict):
        raise FileFormatError(f"{name!r}: cell {number} is not a JSON object")
    outputs = cell.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
        raise FileFormatError(f"{name!r}: cell {number}'s 'outputs' is not a list of objects")
    return outputs


def _cell_label(number: int, cell: dict[str, Any]) -> str:
    count = cell.get("execution_count")
    return f"cell {number}" + (f" (In[{count}])" if isinstance(count, int) else "")


def _valid(name: str, where: str, payload: Any, validator: Any) -> dict[str, Any]:
    errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        at = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise FileFormatError(f"{name!r}, {where}: a tile_lab payload does not match its "
                              f"schema at {at}: {e.message[:200]}",
                              hint="nothing was written; a notebook from a newer tile_lab, "
                                   "or an edited one, reads like this")
    return payload


def _inspection_validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(mime_schema())


def _profile_validator() -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry = Registry().with_resource("mime_schema.json",
                                        Resource.from_contents(mime_schema()))
    schema = json.loads(PROFILE_SCHEMA_FILE.read_text(encoding="utf-8"))
    return Draft202012Validator(schema, registry=registry)
