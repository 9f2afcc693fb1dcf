"""The one display hook: data objects ask here for their Jupyter representation.

A data module (a frozen result record) must not import ``tile_lab.render``: it calls
:func:`mimebundle` from its ``_repr_mimebundle_``, and this module looks the renderer up by the
object's type in :data:`RENDERERS` (module path and function name, imported only when a
notebook displays the object). A renderer returns an HTML string, or a whole MIME bundle (a
dict, for views that carry more than HTML). ``text/plain`` (the object's ``str``) is always in
the bundle, also when the renderer fails, so a display never breaks a cell.

:func:`view` builds the displayable view objects that data classes hand out (``Profile.view``),
looked up the same way in :data:`VIEWS`, so the data module names no renderer either.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .errors import TileLabWarning

__all__ = ["RENDERERS", "VIEWS", "mimebundle", "view"]

# "module.Class" of a data type -> "module:function" returning an HTML string or a MIME bundle
RENDERERS: dict[str, str] = {
    "tile_lab.crosschecking.result.CrossCheck": "tile_lab.render.crosscheck:crosscheck_html",
    "tile_lab.artifacts.Inspection": "tile_lab.render.html:inspection_mimebundle",
    "tile_lab.profiling.data.Profile": "tile_lab.render.profile_view:profile_summary_html",
    "tile_lab.cpp.compare.Comparison": "tile_lab.render.compare_view:comparison_html",
    "tile_lab.sanitizer_report.SanitizerReport":
        "tile_lab.render.sanitizer_view:sanitizer_report_html",
    "tile_lab.checker.CheckResult": "tile_lab.render.check_view:check_result_html",
    "tile_lab._doctor.DoctorReport": "tile_lab.render.doctor_view:doctor_report_html",
    "tile_lab.tuning.result.TuningResult": "tile_lab.render.tune_plots:result_table_html",
}

# name of a view -> "module:callable" building a displayable object (or its SVG text)
VIEWS: dict[str, str] = {
    "profile": "tile_lab.render.profile_view:ProfileView",
    "profile_comparison": "tile_lab.render.profile_view:ProfileComparison",
    "check_svg": "tile_lab.render.check_view:check_svg",
}


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def mimebundle(obj: Any) -> dict[str, Any]:
    """``text/plain`` and, where a renderer is registered for ``type(obj)``, ``text/html``
    (or the renderer's whole bundle)."""
    bundle: dict[str, Any] = {"text/plain": str(obj)}
    cls = type(obj)
    target = RENDERERS.get(f"{cls.__module__}.{cls.__qualname__}")
    if target is None:
        return bundle
    try:
        drawn = _load(target)(obj)
    except Exception as exc:  # a broken picture must not break the cell: say so, keep text
        warnings.warn(f"could not draw {cls.__name__}: {type(exc).__name__}: {exc}",
                      TileLabWarning, stacklevel=2)
        return bundle
    if isinstance(drawn, dict):
        bundle.update(drawn)
    else:
        bundle["text/html"] = drawn
    return bundle


def view(name: str, *args: Any) -> Any:
    """The displayable view registered as ``name`` in :data:`VIEWS`, built from ``args``."""
    return _load(VIEWS[name])(*args)
