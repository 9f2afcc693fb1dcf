"""The one display hook: data objects ask here for their Jupyter representation.

A data module (a frozen result record) must not import ``tile_lab.render``: it calls
:func:`mimebundle` from its ``_repr_mimebundle_``, and this module looks the renderer up by the
object's type. Renderers register from above: each ``render/`` module marks the function that
draws a type with ``@renders(TheType)`` (and another drawing of it, such as its SVG, with
``@renders(TheType, "image/svg+xml")``: looked up by type too, never by a name), and
``tile_lab/__init__.py`` hands this module the function that imports them
(:func:`set_renderer_loader`), run the first time anything is displayed. So no module here or
below names a renderer, not even as a string, and every import is one the layer test sees.

A renderer returns an HTML string, or a whole MIME bundle (a dict, for views that carry more
than HTML). ``text/plain`` (the object's ``str``) is always in the bundle, also when the
renderer fails, so a display never breaks a cell.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["drawing", "mimebundle", "renderer_for", "renders", "set_renderer_loader"]

T = TypeVar("T")
Drawn = str | dict[str, Any]

# (type, None) -> its rich display; (type, MIME type) -> another drawing of it
_RENDERERS: dict[tuple[type, str | None], Callable[[Any], Drawn]] = {}
_loader: list[Callable[[], None]] = []  # at most one: imports every registering render module


def renders(cls: type[T], mime: str | None = None
            ) -> Callable[[Callable[[T], Drawn]], Callable[[T], Drawn]]:
    """Decorator: the decorated function draws ``cls`` objects (one renderer per type), or,
    with ``mime``, draws them as that MIME type (read with :func:`drawing`)."""
    def register(fn: Callable[[T], Drawn]) -> Callable[[T], Drawn]:
        key = (cls, mime)
        if _RENDERERS.get(key, fn) is not fn:
            raise ValueError(f"{cls.__qualname__} already has a renderer"
                             f"{f' for {mime}' if mime else ''}: "
                             f"{_RENDERERS[key].__qualname__}")
        _RENDERERS[key] = fn
        return fn
    return register


def set_renderer_loader(load: Callable[[], None]) -> None:
    """``load()`` imports the modules that register renderers; run once, on first display."""
    _loader[:] = [load]


def _load_renderers() -> None:
    while _loader:
        _loader.pop()()


def renderer_for(cls: type, mime: str | None = None) -> Callable[[Any], Drawn] | None:
    """The renderer registered for exactly ``cls`` (with ``mime``: its drawing as that MIME
    type); None if there is none."""
    _load_renderers()
    return _RENDERERS.get((cls, mime))


def mimebundle(obj: Any) -> dict[str, Any]:
    """``text/plain`` and, where a renderer is registered for ``type(obj)``, ``text/html``
    (or the renderer's whole bundle)."""
    bundle: dict[str, Any] = {"text/plain": str(obj)}
    draw = renderer_for(type(obj))
    if draw is None:
        return bundle
    try:
        drawn = draw(obj)
    except Exception as exc:  # a broken picture must not break the cell: say so, keep text
        # imported here: display.py is imported with the package (the start-up hook imports
        # tile_lab before site-packages such as IPython are on the path), errors.py needs IPython
        from .errors import TileLabWarning

        warnings.warn(f"could not draw {type(obj).__name__}: {type(exc).__name__}: {exc}",
                      TileLabWarning, stacklevel=2)
        return bundle
    if isinstance(drawn, dict):
        bundle.update(drawn)
    else:
        bundle["text/html"] = drawn
    return bundle


def drawing(obj: Any, mime: str) -> str:
    """``obj`` drawn as ``mime`` (e.g. a check's tile map as "image/svg+xml") by the renderer
    registered for its type; KeyError where there is none."""
    draw = renderer_for(type(obj), mime)
    if draw is None:
        raise KeyError(f"no {mime} drawing is registered for {type(obj).__qualname__}")
    return str(draw(obj))
