"""Tuning over schedules as well as tiles: several kernels behind one ``schedule`` knob.

``tile_lab.tune(Schedules(splitk=k1, streamk=k2), Space(schedule=["splitk", "streamk"], ...),
grid_fn, args_fn)``: each config's ``schedule`` value names the kernel that config launches;
``grid_fn``/``args_fn`` see the whole config, so each schedule gets its own grid and arguments
(e.g. its own workspace). The other knobs are hints (applied to whichever kernel is picked) or
constants of at least one of the kernels; a constant a schedule does not take is simply left out
of that schedule's arguments by ``args_fn``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .space import KERNEL_HINTS, Config, Space, SpaceError, constant_parameters


class Schedules:
    """Kernels by schedule name, tuned as one: what ``tile_lab.tune`` measures for a config is
    ``for_config(config)``, the kernel its ``knob`` value names, with the config's hints."""

    def __init__(self, kernels: Mapping[str, Any] | None = None, *, knob: str = "schedule",
                 **named: Any) -> None:
        self.kernels = dict(kernels or {}, **named)
        if not self.kernels:
            raise SpaceError("Schedules needs at least one kernel, e.g. "
                             "Schedules(splitk=gemm_splitk_ws)")
        self.knob = knob
        self._hints: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Schedules({', '.join(self.kernels)})"

    def replace_hints(self, **hints: Any) -> Schedules:
        out = Schedules(self.kernels, knob=self.knob)
        out._hints = dict(self._hints, **hints)
        return out

    def for_config(self, cfg: Config | Mapping[str, Any]) -> Any:
        """The kernel ``cfg`` launches (with the hints given to ``replace_hints``)."""
        name = cfg[self.knob] if isinstance(cfg, Mapping) else cfg.get(self.knob)
        if name not in self.kernels:
            raise SpaceError(f"{self.knob}={name!r} names no kernel; schedules: "
                             f"{', '.join(self.kernels)}")
        kernel = self.kernels[name]
        return kernel.replace_hints(**self._hints) if self._hints else kernel

    def knob_kinds(self, space: Space) -> dict[str, str]:
        """knob -> "schedule" | "hint" | "constant"; SpaceError for a knob none takes or a
        schedule value that names no kernel."""
        if self.knob not in space.knobs:
            raise SpaceError(f"a space over Schedules needs a {self.knob!r} knob "
                             f"(values: {', '.join(self.kernels)})")
        unknown = [v for v in space.knobs[self.knob] if v not in self.kernels]
        if unknown:
            raise SpaceError(f"{self.knob} values {unknown} name no kernel; schedules: "
                             f"{', '.join(self.kernels)}")
        constants = {p for k in self.kernels.values() for p in constant_parameters(k)}
        kinds = {}
        for name in space.knobs:
            if name == self.knob:
                kinds[name] = "schedule"
            elif name in KERNEL_HINTS:
                kinds[name] = "hint"
            elif name in constants:
                kinds[name] = "constant"
            else:
                raise SpaceError(f"knob {name!r} is neither a kernel hint nor a ct.Constant "
                                 f"parameter of any schedule's kernel "
                                 f"({', '.join(sorted(constants)) or 'none'})")
        return kinds

    def tuning_identity(self) -> dict[str, Any]:
        """What results are valid for: every kernel's name and source, cuTile and tileiras."""
        from .._cutile_compat import installed_version, python_function
        from ..compile.toolchain import tool_version
        from ..kernel_source import source_identity

        digest = hashlib.sha256()
        for name, kernel in sorted(self.kernels.items()):
            func = python_function(kernel)
            src = source_identity(func)
            digest.update(f"{name}={func.__name__}\n{src}".encode())
        return {"kernel": f"schedules({', '.join(self.kernels)})",
                "source_sha": digest.hexdigest()[:16], "cuda_tile": installed_version(),
                "tileiras": tool_version("tileiras")}

    @property
    def __name__(self) -> str:  # the tuner's progress bar and result name it
        return f"schedules({', '.join(self.kernels)})"


def resolve(kernel: Any, cfg: Config) -> Any:
    """The kernel a config launches: ``kernel.for_config(cfg)`` for a Schedules, else
    ``kernel``."""
    pick = getattr(kernel, "for_config", None)
    return pick(cfg) if pick is not None else kernel
