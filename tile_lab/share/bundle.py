"""``tile_lab.export``: tile_lab objects into one self-contained HTML file.

This module only sorts what it is given into page sections and asks each object's own
renderer for its HTML (the page itself is ``render/export.py``): an ``Inspection`` is the
inspect view, an ``(Inspection, Profile)`` pair or a ``ProfileView`` the view with the
profile's heat gutter, a ``Trace`` its partition diagram, a ``Diagram``/``Picture`` itself,
a ``SanitizerReport`` its table, ``Measurement``s a table with the device, clocks and
versions. Strings become notes (text).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..compile.artifacts import Inspection
from ..errors import TileLabError
from ..gpu.measurement import Measurement
from ..profiling.data import Profile, ProfileView
from ..render.diagram import Diagram, diagram
from ..render.export import measurements_html, note_html, page_html, provenance_html
from ..render.picture import Picture
from ..render.profile_view import profile_summary_html, profile_view_html
from ..sanitizer.checks import SanitizerReport
from ..tracing.trace import Trace

__all__ = ["ACCEPTED", "export", "sections"]

ACCEPTED = ("Inspection", "(Inspection, Profile) or ProfileView", "Profile", "Trace",
            "Diagram", "Picture", "SanitizerReport", "Measurement (or a list of them)",
            "str (a note)")


def export(obj_or_list: Any, path: str | os.PathLike, *, title: str | None = None) -> Path:
    """Write ``obj_or_list`` (one object or a list, shown in order) as one HTML file that
    opens from disk, offline, in any browser: the inspect view with its linked hover
    between source, IR and SASS (and the TMA badges), a profile's heat gutter, diagrams, the
    sanitizer report and measurements with their device, clocks and versions.

    Accepted: see ``ACCEPTED``. The file holds no network reference and no script but
    tile_lab's own (a Content-Security-Policy allows only those, by hash); every string of
    the data is escaped text. Returns the path written."""
    parts = sections(obj_or_list)
    if not parts:
        raise TileLabError("tile_lab.export: nothing to export (an empty list)")
    kernels = sorted({k for k in (_kernel_of(o) for o in _items(obj_or_list)) if k})
    name = title or ("tile_lab: " + ", ".join(kernels) if kernels else "tile_lab export")
    from .._version import __version__

    page = page_html(name, parts, meta=f"exported by tile_lab {__version__}; opens offline, "
                                       "no network, no Jupyter")
    out = Path(path)
    out.write_text(page, encoding="utf-8")
    return out


def sections(obj_or_list: Any) -> list[tuple[str, str]]:
    """``(heading, HTML)`` per object, in order (the measurements of a list share one
    table)."""
    out: list[tuple[str, str]] = []
    pending: list[Measurement] = []
    for obj in _items(obj_or_list):
        if isinstance(obj, Measurement):
            pending.append(obj)
            continue
        if pending:
            out.append(_measurements(pending))
            pending = []
        out.append(_section(obj))
    if pending:
        out.append(_measurements(pending))
    return out


def _items(obj_or_list: Any) -> list[Any]:
    if isinstance(obj_or_list, (list, tuple)) and not _is_pair(obj_or_list):
        return [x for item in obj_or_list for x in _items(item)]
    return [obj_or_list]


def _is_pair(obj: Any) -> bool:
    return (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], Inspection)
            and isinstance(obj[1], Profile))


def _section(obj: Any) -> tuple[str, str]:
    if _is_pair(obj):
        obj = ProfileView(obj[0], obj[1])
    if isinstance(obj, ProfileView):
        prof = obj.profile
        body = profile_view_html(obj.inspection, prof, top=obj.top)
        return (f"{obj.inspection.kernel_name}: profile on {prof.provenance.get('gpu', '?')}",
                body + provenance_html(prof.provenance, prof.collection))
    if isinstance(obj, Inspection):
        from ..render.html import inspection_html

        return (f"{obj.kernel_name} ({obj.arch}): source, IR and SASS",
                inspection_html(obj))
    if isinstance(obj, Profile):
        return (f"{obj.kernel_name}: profile",
                profile_summary_html(obj) + provenance_html(obj.provenance, obj.collection))
    if isinstance(obj, Trace):
        return f"{obj.kernel}: partition diagram", diagram(obj)._repr_html_()
    if isinstance(obj, (Diagram, Picture)):
        return _picture_title(obj), obj._repr_html_()
    if isinstance(obj, SanitizerReport):
        return f"{obj.kernel}: sanitizer", obj._repr_html_()
    if isinstance(obj, str):
        return "note", note_html(obj)
    raise TileLabError(f"tile_lab.export cannot show a {type(obj).__name__}",
                       hint="it shows: " + "; ".join(ACCEPTED))


def _measurements(ms: Sequence[Measurement]) -> tuple[str, str]:
    names = ", ".join(dict.fromkeys(m.name for m in ms))
    return f"measurements: {names}", measurements_html(ms)


def _picture_title(obj: Diagram | Picture) -> str:
    label = getattr(getattr(obj, "scene", None), "label", "") or ""
    return f"diagram: {label}" if label else "diagram"


def _kernel_of(obj: Any) -> str | None:
    if _is_pair(obj):
        return obj[0].kernel_name
    for attr in ("kernel_name", "kernel"):
        value = getattr(obj, attr, None)
        if isinstance(value, str):
            return value
    if isinstance(obj, ProfileView):
        return obj.inspection.kernel_name
    return None
