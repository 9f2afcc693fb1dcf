"""tile_lab.display: the one display hook (renderers registered by type from above, text always
there)."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

import tile_lab
from tile_lab import display
from tile_lab.errors import TileLabWarning

PACKAGE = Path(tile_lab.__file__).parent


class Plain:
    def __str__(self) -> str:
        return "plain words"


@pytest.fixture
def plain_renderer(monkeypatch):
    """Registers a renderer for ``Plain`` for one test (the registry itself is left as found)."""
    monkeypatch.setattr(display, "_RENDERERS", dict(display._RENDERERS))

    def register(fn):
        return display.renders(Plain)(fn)
    return register


def test_a_type_without_a_renderer_gets_text_only():
    assert display.mimebundle(Plain()) == {"text/plain": "plain words"}


def test_a_failing_renderer_keeps_the_text_and_warns(plain_renderer):
    @plain_renderer
    def broken(obj: Plain) -> str:
        raise KeyError("no picture")

    with pytest.warns(TileLabWarning, match="could not draw Plain: KeyError"):
        bundle = display.mimebundle(Plain())
    assert bundle == {"text/plain": "plain words"}


def test_a_renderer_may_return_a_whole_bundle(plain_renderer):
    plain_renderer(lambda obj: {"text/html": "<b>x</b>", "application/x": {"a": 1}})
    assert display.mimebundle(Plain()) == {"text/plain": "plain words", "text/html": "<b>x</b>",
                                           "application/x": {"a": 1}}


def test_a_type_gets_one_renderer(plain_renderer):
    plain_renderer(lambda obj: "one")
    with pytest.raises(ValueError, match="Plain already has a renderer"):
        plain_renderer(lambda obj: "two")


def _displayed_types() -> list[type]:
    """Every class in the package with a method that imports display.mimebundle (outside
    render/, which draws rather than asks)."""
    import importlib

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "render" in path.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(imp, ast.ImportFrom) and (imp.module or "").endswith("display")
                    and any(a.name == "mimebundle" for a in imp.names)
                    for imp in ast.walk(node)):
                rel = path.relative_to(PACKAGE.parent).with_suffix("")
                module = importlib.import_module(".".join(rel.parts))
                found.append(getattr(module, node.name))
    return found


def test_every_displayed_data_type_has_a_typed_renderer_in_render():
    types = _displayed_types()
    assert len(types) >= 8, types
    for cls in types:
        draw = display.renderer_for(cls)
        assert draw is not None, f"{cls.__qualname__} displays through the registry, no renderer"
        assert draw.__module__.startswith("tile_lab.render."), draw.__module__
        # typed: the renderer's first parameter is annotated with exactly the type it draws
        first = next(iter(inspect.signature(draw).parameters))
        hints = typing.get_type_hints(draw)
        assert hints[first] is cls, f"{draw.__qualname__}({first}: {hints[first]}) drawn for {cls}"


def test_the_other_drawings_are_found_by_type_and_none_by_name():
    from tile_lab.checker import CheckResult

    draw = display.renderer_for(CheckResult, "image/svg+xml")
    assert draw is not None and draw.__module__ == "tile_lab.render.check_view"
    assert not hasattr(display, "view") and not hasattr(display, "register_view")
    with pytest.raises(KeyError, match="no image/svg\\+xml drawing"):
        display.drawing(object(), "image/svg+xml")
