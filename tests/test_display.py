"""tile_lab.display: the one display hook (renderers looked up by type, text always there)."""

from __future__ import annotations

import pytest

from tile_lab import display
from tile_lab.errors import TileLabWarning


class Plain:
    def __str__(self) -> str:
        return "plain words"


def test_a_type_without_a_renderer_gets_text_only():
    assert display.mimebundle(Plain()) == {"text/plain": "plain words"}


def test_a_failing_renderer_keeps_the_text_and_warns(monkeypatch):
    key = f"{Plain.__module__}.{Plain.__qualname__}"
    monkeypatch.setitem(display.RENDERERS, key, "tile_lab.render.crosscheck:no_such_function")
    with pytest.warns(TileLabWarning, match="could not draw Plain"):
        bundle = display.mimebundle(Plain())
    assert bundle == {"text/plain": "plain words"}


def test_every_registered_renderer_exists():
    import importlib

    for target in display.RENDERERS.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name))


def test_a_renderer_may_return_a_whole_bundle(monkeypatch):
    key = f"{Plain.__module__}.{Plain.__qualname__}"
    monkeypatch.setitem(display.RENDERERS, key, "tile_lab.render.mime:MimeLimits")
    monkeypatch.setattr("tile_lab.render.mime.MimeLimits",
                        lambda obj: {"text/html": "<b>x</b>", "application/x": {"a": 1}})
    assert display.mimebundle(Plain()) == {"text/plain": "plain words", "text/html": "<b>x</b>",
                                           "application/x": {"a": 1}}


def test_every_registered_view_exists_and_data_modules_name_no_renderer():
    import ast
    import importlib
    from pathlib import Path

    for target in display.VIEWS.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name))
    # the data classes that display through the registry import no renderer themselves
    # (tests/test_package_shape.py holds every module outside render/ and the front ends to it)
    for key, target in display.RENDERERS.items():
        assert target.startswith("tile_lab.render."), target
        module_name, _, cls = key.rpartition(".")
        module = importlib.import_module(module_name)
        assert isinstance(getattr(module, cls), type), key  # the key names a real class
        tree = ast.parse(Path(module.__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert "render" not in (node.module or ""), (
                    f"{module.__name__}:{node.lineno} imports {node.module}")
