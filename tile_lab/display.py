"""The one display hook: data objects ask here for their Jupyter representation.

A data module (a frozen result record) must not import ``tile_lab.render``: it calls
:func:`mimebundle` from its ``_repr_mimebundle_``, and this module looks the renderer up by the
object's type. Renderers register from above: each ``render/`` module marks the function that
draws a type with ``@renders(TheType)`` (and a displayable view with :func:`register_view`),
and ``tile_lab/__init__.py`` hands this module the function that imports them
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

__all__ = ["mimebundle", "register_view", "renderer_for", "renders", "set_renderer_loader",
           "view", "views"]

T = TypeVar("T")
Drawn = str | dict[str, Any]

_RENDERERS: dict[type, Callable[[Any], Drawn]] = {}
_VIEWS: dict[str, Callable[..., Any]] = {}
_loader: list[Callable[[], None]] = []  # at most one: imports every registering render module


def renders(cls: type[T]) -> Callable[[Callable[[T], Drawn]], Callable[[T], Drawn]]:
    """Decorator: the decorated function draws ``cls`` objects (one renderer per type)."""
    def register(fn: Callable[[T], Drawn]) -> Callable[[T], Drawn]:
        if _RENDERERS.get(cls, fn) is not fn:
            raise ValueError(f"{cls.__qualname__} already has a renderer: "
                             f"{_RENDERERS[cls].__qualname__}")
        _RENDERERS[cls] = fn
        return fn
    return register


def register_view(name: str, build: Callable[..., Any]) -> None:
    """``build(*args)`` makes the displayable view called ``name`` (``Profile.view``...)."""
    if _VIEWS.get(name, build) is not build:
        raise ValueError(f"a view named {name!r} is already registered")
    _VIEWS[name] = build


def set_renderer_loader(load: Callable[[], None]) -> None:
    """``load()`` imports the modules that register renderers; run once, on first display."""
    _loader[:] = [load]


def _load_renderers() -> None:
    while _loader:
        _loader.pop()()


def renderer_for(cls: type) -> Callable[[Any], Drawn] | None:
    """The renderer registered for exactly ``cls`` (None if there is none)."""
    _load_renderers()
    return _RENDERERS.get(cls)


def views() -> dict[str, Callable[..., Any]]:
    """Every registered view by name (a copy)."""
    _load_renderers()
    return dict(_VIEWS)


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


def view(name: str, *args: Any) -> Any:
    """The displayable view registered as ``name``, built from ``args``."""
    _load_renderers()
    return _VIEWS[name](*args)
