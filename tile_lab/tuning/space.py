"""Search spaces: the knobs of a cuTile kernel, which of them are what, and which configs are valid.

Three kinds of knob (the distinction decides how a config reaches the kernel):
- **kernel hints** (``num_ctas``, ``occupancy``, ``opt_level``, ``num_worker_warps``): compiler
  options applied with ``kernel.replace_hints(...)``;
- **constants**: the kernel's ``ct.Constant[...]`` parameters (tile sizes, and per-load hints such
  as ``latency``/``allow_tma`` that the kernel forwards to ``ct.load(..., latency=LAT)``), passed in
  the argument list;
- anything else is an error naming the knob, so a typo never tunes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TileLabError

KERNEL_HINTS = ("num_ctas", "occupancy", "opt_level", "num_worker_warps")

# Architectures whose cuTile backend accepts only num_ctas=1 (no thread-block clusters used).
SINGLE_CTA_ARCHS = frozenset({"sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_120", "sm_121"})

# Shared memory one CTA may use, in bytes (CUDA C Programming Guide, compute capability table).
SMEM_PER_BLOCK = {
    "sm_80": 163 * 1024, "sm_86": 99 * 1024, "sm_87": 163 * 1024, "sm_88": 99 * 1024,
    "sm_89": 99 * 1024, "sm_90": 227 * 1024, "sm_100": 227 * 1024, "sm_103": 227 * 1024,
    "sm_110": 227 * 1024, "sm_120": 99 * 1024, "sm_121": 99 * 1024,
}

_HINT_RANGES: dict[str, Callable[[Any], bool]] = {
    "num_ctas": lambda v: v in (1, 2, 4, 8, 16),
    "occupancy": lambda v: isinstance(v, int) and 1 <= v <= 32,
    "opt_level": lambda v: v in (0, 1, 2, 3),
    "num_worker_warps": lambda v: v in (1, 2, 4, 8, 16, 32),
}
# Per-load hints are constants forwarded to ct.load; their documented ranges.
_LOAD_HINT_RANGES: dict[str, Callable[[Any], bool]] = {
    "latency": lambda v: v is None or (isinstance(v, int) and 1 <= v <= 10),
    "allow_tma": lambda v: v in (None, True, False),
}


class SpaceError(TileLabError):
    """A search space that cannot work with the kernel (unknown knob, bad value)."""


@dataclass(frozen=True)
class Config:
    """One point of a space: knob name -> value, in the space's knob order."""

    items: tuple[tuple[str, Any], ...]

    def __getitem__(self, name: str) -> Any:
        for k, v in self.items:
            if k == name:
                return v
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.items).get(name, default)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.items)

    def hints(self) -> dict[str, Any]:
        return {k: v for k, v in self.items if k in KERNEL_HINTS}

    def constants(self) -> dict[str, Any]:
        return {k: v for k, v in self.items if k not in KERNEL_HINTS}

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.items)

    def __str__(self) -> str:
        return self.label()


@dataclass(frozen=True)
class Rejected:
    config: Config
    reason: str


class Space:
    """``Space(tm=[64, 128, 256], tn=[64, 128], num_ctas=[1, 2], occupancy=[1, 2, 4])``.

    ``constraints``: callables ``config -> bool`` (or a str reason for rejecting); a config is kept
    when every constraint accepts it. ``smem_bytes``: optional ``config -> bytes`` estimate of the
    shared memory a config needs (e.g. ``(tm*tk + tk*tn) * 2 * stages``); configs that cannot
    fit the architecture's per-block limit are filtered out with the reason recorded.
    """

    def __init__(self, *, constraints: Sequence[Callable[[Config], Any]] = (),
                 smem_bytes: Callable[[Config], int] | None = None,
                 **knobs: Sequence[Any]) -> None:
        if not knobs:
            raise SpaceError("a Space needs at least one knob, e.g. Space(tm=[64, 128])")
        self.knobs: dict[str, tuple[Any, ...]] = {}
        for name, values in knobs.items():
            vals = tuple(values) if isinstance(values, (list, tuple, range)) else (values,)
            if not vals:
                raise SpaceError(f"knob {name!r} has no values")
            check = _HINT_RANGES.get(name) or _LOAD_HINT_RANGES.get(name)
            for v in vals:
                if check is not None and not check(v):
                    raise SpaceError(f"knob {name!r}: value {v!r} is outside cuTile's range")
            self.knobs[name] = vals
        self.constraints = tuple(constraints)
        self.smem_bytes = smem_bytes

    def __len__(self) -> int:
        n = 1
        for v in self.knobs.values():
            n *= len(v)
        return n

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={list(v)}" for k, v in self.knobs.items())
        return f"Space({inner}; {len(self)} points)"

    # ---- which knob is what ----------------------------------------------------------------
    def classify(self, kernel: Any) -> dict[str, str]:
        """knob -> "hint" | "constant" for ``kernel``; SpaceError for anything else."""
        constants = constant_parameters(kernel)
        kinds = {}
        for name in self.knobs:
            if name in KERNEL_HINTS:
                kinds[name] = "hint"
            elif name in constants:
                kinds[name] = "constant"
            else:
                raise SpaceError(
                    f"knob {name!r} is neither a kernel hint ({', '.join(KERNEL_HINTS)}) nor a "
                    f"ct.Constant parameter of the kernel (its Constant parameters: "
                    f"{', '.join(constants) or 'none'})",
                    hint="per-load hints (latency, allow_tma) must be Constant parameters "
                         "that the kernel passes to ct.load")
        return kinds

    # ---- enumeration -----------------------------------------------------------------------
    def all_points(self) -> Iterator[Config]:
        names = list(self.knobs)
        for values in itertools.product(*(self.knobs[n] for n in names)):
            yield Config(tuple(zip(names, values)))

    def split(self, arch: str | None = None) -> tuple[list[Config], list[Rejected]]:
        """(valid configs, rejected configs with the reason) for ``arch``."""
        kept, rejected = [], []
        for cfg in self.all_points():
            reason = self._reject_reason(cfg, arch)
            if reason is None:
                kept.append(cfg)
            else:
                rejected.append(Rejected(cfg, reason))
        return kept, rejected

    def configs(self, arch: str | None = None) -> list[Config]:
        return self.split(arch)[0]

    def _reject_reason(self, cfg: Config, arch: str | None) -> str | None:
        if arch in SINGLE_CTA_ARCHS and cfg.get("num_ctas", 1) not in (1, None):
            return f"num_ctas={cfg['num_ctas']} is not supported on {arch} (only 1)"
        if self.smem_bytes is not None and arch in SMEM_PER_BLOCK:
            need = int(self.smem_bytes(cfg))
            if need > SMEM_PER_BLOCK[arch]:
                return (f"needs {need} B of shared memory; {arch} allows "
                        f"{SMEM_PER_BLOCK[arch]} B per block")
        for c in self.constraints:
            verdict = c(cfg)
            if verdict is False or isinstance(verdict, str):
                name = getattr(c, "__name__", "constraint")
                return verdict if isinstance(verdict, str) else f"rejected by {name}"
        return None

    def neighbours(self, cfg: Config, knob: str) -> list[Config]:
        """Configs equal to ``cfg`` except for ``knob`` (every value of it)."""
        base = cfg.as_dict()
        out = []
        for v in self.knobs[knob]:
            base[knob] = v
            out.append(Config(tuple((k, base[k]) for k in self.knobs)))
        return out


def constant_parameters(kernel: Any) -> list[str]:
    """Names of the ``ct.Constant[...]`` parameters of a kernel, as cuTile parses them."""
    from .._cutile_compat import kernel_parameters

    return [p.name for p in kernel_parameters(kernel) if p.constant]


def config_from_mapping(space: Space, values: Mapping[str, Any]) -> Config:
    """A Config in ``space``'s knob order from a mapping (e.g. slider values)."""
    missing = [k for k in space.knobs if k not in values]
    if missing:
        raise SpaceError(f"missing knob values: {', '.join(missing)}")
    return Config(tuple((k, values[k]) for k in space.knobs))
