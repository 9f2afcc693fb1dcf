"""A scripted GPU side for crosscheck tests on the CPU: the emulator with zero padding (what a
TMA load fills padded lanes with), then an edit that stands in for what a real GPU does
differently (NaN in undetermined lanes, an ULP after approximate math, a wrong value)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tile_lab.emulator import emulate_kernel as emulate


class ScriptedGpu:
    def __init__(self, edit: Callable[[tuple], None] | None = None, *,
                 padding: str = "zero") -> None:
        self.edit = edit
        self.padding = padding
        self.seen: tuple | None = None  # the arguments the crosscheck handed over

    def device(self) -> str:
        return "scripted GPU"

    def run(self, kernel: Any, grid: tuple[int, ...], args: tuple) -> tuple:
        self.seen = args
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the padded lanes: what the test is about
            emulate(kernel, grid, args, padding=self.padding)
        if self.edit is not None:
            self.edit(args)
        return args
