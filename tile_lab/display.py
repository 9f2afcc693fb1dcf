"""The one display hook: data objects ask here for their Jupyter representation.

A data module (a frozen result record) must not import ``tile_lab.render``: it calls
:func:`mimebundle` from its ``_repr_mimebundle_``, and this module looks the renderer up by the
object's type in :data:`RENDERERS` (module path and function name, imported only when a
notebook displays the object). ``text/plain`` (the object's ``str``) is always in the bundle,
also when the renderer fails, so a display never breaks a cell.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .errors import TileLabWarning

__all__ = ["RENDERERS", "mimebundle"]

# "module.Class" of a data type -> "module:function" returning an HTML string
RENDERERS: dict[str, str] = {
    "tile_lab.parity.result.CrossCheck": "tile_lab.render.crosscheck:crosscheck_html",
}


def mimebundle(obj: Any) -> dict[str, Any]:
    """``text/plain`` and, where a renderer is registered for ``type(obj)``, ``text/html``."""
    bundle: dict[str, Any] = {"text/plain": str(obj)}
    cls = type(obj)
    target = RENDERERS.get(f"{cls.__module__}.{cls.__qualname__}")
    if target is None:
        return bundle
    module, _, name = target.partition(":")
    try:
        bundle["text/html"] = getattr(importlib.import_module(module), name)(obj)
    except Exception as exc:  # a broken picture must not break the cell: say so, keep text
        warnings.warn(f"could not draw {cls.__name__}: {type(exc).__name__}: {exc}",
                      TileLabWarning, stacklevel=2)
    return bundle
