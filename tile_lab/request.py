"""What a front end asks tile_lab to do with one kernel, as one frozen, typed object.

Every front end builds a :class:`Request` and hands it to the core (``tile_lab/_run.py``):
the ``%%tile`` magic (one per kernel it inspects, one for the kernel it runs; cuTile, Triton
and C++ cells alike), the Python API (``tile_lab.inspect`` compiles through one;
``tile_lab.emulate``, ``trace``, ``sanitize``, ``launch``, ``crosscheck`` and ``profile``, in
``api.py``, run through one) and the command line (``tile-lab inspect``). Nothing else travels
into the core: each mode's options ride along typed and frozen (:class:`EmulateOptions`,
:class:`SanitizeOptions`, :class:`LaunchOptions`, :class:`CrossCheckRun`,
:class:`ProfileOptions`), the notebook's emulator budget and ``--launch``'s fallback as
:class:`RunSettings`. ``--show`` is parsed here, once (:func:`parse_show`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .compile.artifacts import STAGES
from .errors import EmulationError, TileLabError

__all__ = ["FALLBACKS", "LAUNCH_TIMEOUT_S", "MODES", "PADDINGS", "PANES", "PROFILE_TIMEOUT_S",
           "CppSource", "CrossCheckRun",
           "EmulateOptions", "LaunchOptions", "ProfileOptions", "Request", "RunSettings",
           "SanitizeOptions", "check_padding", "parse_show", "spec_fields"]

# how a kernel can run, in the order their output appears (a sanitizer report comes before
# the partition diagram, which a trace draws)
MODES = ("sanitize", "trace", "emulate", "launch", "crosscheck", "profile")
PANES = (*STAGES, "partition")  # "partition": the access-trace diagram, not a compile stage
FALLBACKS = ("emulate", "error")  # what "launch" does without a GPU
LAUNCH_TIMEOUT_S = 120.0  # an isolated launch that takes longer is a hang
PROFILE_TIMEOUT_S = 600.0  # the profiled launch under Nsight Compute (replays: slow)
# what the emulator pads undetermined lanes with (emulator/poison.py's policies)
PADDINGS = ("poison", "zero", "hardware")

Arch = str | int | tuple[int, int]
Hints = Mapping[str, Any] | str


def check_padding(padding: str) -> None:
    """EmulationError unless ``padding`` is one of :data:`PADDINGS`."""
    if padding not in PADDINGS:
        allowed = ", ".join(map(repr, PADDINGS))
        raise EmulationError(f"padding must be one of {allowed}, got {padding!r}")


@dataclass(frozen=True)
class CppSource:
    """A CUDA Tile C++ kernel as a request's ``kernel``: the source text, the
    ``__tile_global__`` kernel's name, and the filename its errors name (a ``%%tile`` cell's
    text has one blank line first, so line N is the cell's line N)."""

    text: str
    name: str
    filename: str | None = None


@dataclass(frozen=True)
class RunSettings:
    """How a run is carried out, set once per notebook (``%config TileMagics``): the
    emulator's line budget per block (0: none) and what ``launch`` does without a GPU
    ("emulate": run on the CPU emulator, with a notice; "error": fail)."""

    max_steps: int = 0
    launch_fallback: str = "emulate"

    def __post_init__(self) -> None:
        if self.max_steps < 0:
            raise ValueError(f"max_steps={self.max_steps}: 0 (no budget) or more")
        if self.launch_fallback not in FALLBACKS:
            raise ValueError(f"launch_fallback={self.launch_fallback!r}: one of "
                             f"{', '.join(FALLBACKS)}")


@dataclass(frozen=True)
class EmulateOptions:
    """How the CPU emulator runs a kernel (modes "emulate" and "trace", and the trace a
    sanitizer or a partition diagram reads): what undetermined padded lanes hold
    (``padding``, one of :data:`PADDINGS`) and, for a trace, the only block ids to run
    (``blocks``; None: all; checked against the grid when the kernel runs)."""

    padding: str = "poison"
    blocks: Sequence[Sequence[int]] | None = None

    def __post_init__(self) -> None:
        check_padding(self.padding)


@dataclass(frozen=True)
class SanitizeOptions:
    """What the sanitizer holds the kernel to: argument names it must write completely
    (``outputs``) and write-only ones it may write in part (``partial``); a name or names,
    kept as a tuple (checked against the kernel's arrays when it has run)."""

    outputs: str | tuple[str, ...] | None = None
    partial: str | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("outputs", "partial"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, tuple)):
                object.__setattr__(self, name, tuple(value))


@dataclass(frozen=True)
class LaunchOptions:
    """How ``launch`` runs a kernel on the GPU: in a worker process (``isolate``, which a
    fault or a hang of ``timeout`` seconds cannot take down), on ``stream`` (None: CuPy's
    current one), and what it does without a GPU (``fallback`` "emulate": the CPU emulator;
    None: NoGPUError)."""

    isolate: bool = False
    stream: Any = None
    fallback: str | None = None
    timeout: float | None = LAUNCH_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.fallback is not None and self.fallback != "emulate":
            raise TileLabError(f"fallback={self.fallback!r}: the only fallback is 'emulate'")


@dataclass(frozen=True)
class CrossCheckRun:
    """How ``crosscheck`` runs: its comparison options (a
    :class:`~tile_lab.crosschecking.CrossCheckOptions`; None: the defaults) and its GPU side
    (a :class:`~tile_lab.crosschecking.run.GpuSide`; None: CuPy's, with the request's hints)."""

    options: Any = None
    gpu: Any = None


@dataclass(frozen=True)
class ProfileOptions:
    """How ``profile`` runs Nsight Compute: the time limit of the profiled launch
    (``timeout_s``), the collection plans tried in order (None: ``profiling.ncu.PLANS``) and
    a folder to keep the report in (``keep_report``; None: none kept)."""

    timeout_s: float = PROFILE_TIMEOUT_S
    plans: tuple[Any, ...] | None = None
    keep_report: Any = None

    def __post_init__(self) -> None:
        if self.plans is not None and not isinstance(self.plans, tuple):
            object.__setattr__(self, "plans", tuple(self.plans))


@dataclass(frozen=True)
class Request:
    """One kernel, and what to do with it.

    ``kernel``: a ``@ct.kernel`` function, a ``@triton.jit`` kernel or a :class:`CppSource`.
    ``mode`` None and ``partition`` False: inspect (compile for ``args``, or for the spec
    string ``sig``, and show ``panes``; None: every pane). Otherwise run it on ``grid`` with
    ``args`` in ``mode`` (one of :data:`MODES`); ``partition`` also traces it and draws the
    diagram. ``hints`` are kernel hints on top of the kernel's own (a mapping, kept as a
    read-only copy, or ``"num_ctas=2,occupancy=4"``). ``emulate``, ``sanitize``,
    ``launch``, ``crosscheck`` and ``profile`` carry the options of the modes of those names
    (``emulate`` also trace's).
    """

    kernel: Any
    args: tuple[Any, ...] | None = None
    sig: str | None = None
    grid: tuple[int, ...] | None = None
    arch: Arch | None = None
    hints: Hints | None = None
    panes: tuple[str, ...] | None = None
    mode: str | None = None
    partition: bool = False
    settings: RunSettings = field(default_factory=RunSettings)
    emulate: EmulateOptions = field(default_factory=EmulateOptions)
    sanitize: SanitizeOptions = field(default_factory=SanitizeOptions)
    launch: LaunchOptions = field(default_factory=LaunchOptions)
    crosscheck: CrossCheckRun = field(default_factory=CrossCheckRun)
    profile: ProfileOptions = field(default_factory=ProfileOptions)

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r}: one of {', '.join(MODES)}")
        # a list (the Python API takes one) is kept as a tuple; anything else is left for
        # the signature to refuse in words
        if isinstance(self.args, list):
            object.__setattr__(self, "args", tuple(self.args))
        if isinstance(self.grid, list):
            object.__setattr__(self, "grid", tuple(self.grid))
        if isinstance(self.hints, Mapping) and not isinstance(self.hints, MappingProxyType):
            object.__setattr__(self, "hints", MappingProxyType(dict(self.hints)))

    @property
    def inspects(self) -> bool:
        return self.mode is None and not self.partition

    @property
    def spec(self) -> tuple[Any, ...] | str | None:
        """What the compile is for: the signature string where given, else the arguments."""
        return self.sig if self.sig is not None else self.args


def spec_fields(args_or_sig: str | Sequence[Any]) -> dict[str, Any]:
    """``args=`` or ``sig=`` of a request, from the Python API's one ``args_or_sig``
    argument (a spec string, or example arguments)."""
    return {"sig": args_or_sig} if isinstance(args_or_sig, str) else {"args": args_or_sig}


def parse_show(show: Sequence[str] | str | None, allowed: Sequence[str] = PANES
               ) -> tuple[tuple[str, ...] | None, bool, str | None]:
    """``(panes, partition, bad)`` of a ``show`` value ("source,sass" or a sequence): the
    inspect panes in the order given (None: the default), whether the partition diagram is
    asked for, and the first name not in ``allowed`` (None when all are), for the caller to
    word its error."""
    if show is None:
        return None, False, None
    names = [s.strip() for s in show.split(",")] if isinstance(show, str) else list(show)
    names = [n for n in names if n]
    bad = next((n for n in names if n not in allowed), None)
    panes = tuple(dict.fromkeys(n for n in names if n != "partition"))
    return panes, "partition" in names, bad
