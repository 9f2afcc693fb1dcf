"""``tune_cpp``: autotune a CUDA Tile C++ kernel with ``tile_lab.tune``'s spaces and strategies.

A C++ kernel's knobs are preprocessor defines: tile sizes (``ct::integral_constant<TILE>``,
``TILE`` in a ``ct::shape``) and optimization hints (``[[ cutile::hint(0, occupancy=OCC) ]]``
on the kernel, ``[[ cutile::hint(0, latency=LAT) ]]`` on a load) read macros, and each config
compiles with ``inspect_cpp(..., defines=...)``. ``tile_lab.tuning.tune`` does the searching;
this module gives it a kernel object that describes its knobs as defines, a measure that
compiles the config and times it with ``bench_cpp``, and a precompiler that runs nvcc for
the configs in parallel while earlier configs are measured.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compile.artifacts import Inspection
from ..errors import TileLabError
from ..tuning.measurer import MeasureRequest, Precompiles
from ..tuning.options import TuneOptions
from ..tuning.result import TuningResult
from ..tuning.space import Config, Space, SpaceError
from ..tuning.store import TuningStore, config_key
from ..tuning.tuner import tune
from . import source as src
from .build import inspect_cpp

DefinesFn = Callable[[Config], Mapping[str, Any]]
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


class CppKernel:
    """The tuner's view of one ``__tile_global__`` kernel: every knob is a ``-D`` define.

    ``compile(config)`` is ``inspect_cpp`` with the config's defines (cached by
    ``inspect_cpp``); ``knob_kinds`` and ``tuning_identity`` are what ``tile_lab.tuning.tune``
    asks of a kernel that is not a cuTile Python kernel.
    """

    def __init__(self, source: str | os.PathLike[str], kernel_name: str | None, *,
                 arch: str, defines_fn: DefinesFn | None = None, filename: str | None = None,
                 include_dirs: Sequence[str | os.PathLike[str]] = (),
                 prebuilt: Mapping[str, Inspection] | None = None) -> None:
        if isinstance(source, os.PathLike):
            path = Path(source)
            self.text = path.read_text()
            self.filename = filename or path.name
            include_dirs = [*include_dirs, path.resolve().parent]
        elif isinstance(source, str):
            self.text, self.filename = source, filename or "kernel.cu"
        else:
            raise TypeError(f"source must be C++ text or a path, not {type(source).__name__}")
        self.source = source
        self.include_dirs = tuple(str(d) for d in include_dirs)
        self.kernel_name = src.choose_kernel(self.text, kernel_name, self.filename)
        self.__name__ = self.kernel_name
        self.arch = arch
        self.defines_fn = defines_fn
        # config key -> Inspection compiled elsewhere (a GPU machine without the pip nvcc)
        self.prebuilt = dict(prebuilt or {})

    def defines(self, config: Config) -> dict[str, Any]:
        if self.defines_fn is None:
            return config.as_dict()
        defines = self.defines_fn(config)
        if not isinstance(defines, Mapping):
            raise TileLabError(f"defines_fn returned {type(defines).__name__} for {config}; it "
                               "must return a mapping of macro name -> value")
        return dict(defines)

    def compile(self, config: Config) -> Inspection:
        hit = self.prebuilt.get(config_key(config))
        if hit is not None:
            if hit.arch != self.arch:
                raise TileLabError(f"the prebuilt Inspection for {config} is for {hit.arch}, "
                                   f"not {self.arch}")
            return hit
        return inspect_cpp(self.source, self.kernel_name, arch=self.arch,
                           defines=self.defines(config), filename=self.filename,
                           include_dirs=self.include_dirs)

    # ---- what tile_lab.tuning.tune asks of a kernel ---------------------------------------
    def knob_kinds(self, space: Space) -> dict[str, str]:
        """Every knob is a define; a macro the source never mentions is an error, so a typo
        never tunes nothing."""
        first = next(space.all_points())
        names = list(self.defines(first)) if self.defines_fn else list(space.knobs)
        text = self._text_with_includes()
        unused = [n for n in names if not re.search(r"\b" + re.escape(n) + r"\b", text)]
        if unused:
            what = "defines_fn returns" if self.defines_fn else "knob"
            raise SpaceError(f"{what} {', '.join(map(repr, unused))}: no macro of that name "
                             f"appears in {self.filename} (a C++ kernel's knobs are -D defines "
                             "its source reads)",
                             hint="e.g. ct::shape{ct::integral_constant<TILE>{}} or "
                                  "[[ cutile::hint(0, occupancy=OCC) ]]; pass defines_fn= to "
                                  "map knobs to other macro names")
        return {name: "define" for name in space.knobs}

    def tuning_identity(self) -> dict[str, Any]:
        from ..compile.toolchain import tool_version

        blob = self._text_with_includes().encode()
        return {"kernel": self.kernel_name, "language": "c++",
                "source_sha": hashlib.sha256(blob).hexdigest()[:16],
                "nvcc": tool_version("nvcc"), "tileiras": tool_version("tileiras")}

    def _text_with_includes(self) -> str:
        """The source and the local headers it includes (one level: where knobs are read)."""
        parts = [src.strip_comments(self.text)]
        for name in _INCLUDE_RE.findall(self.text):
            for d in self.include_dirs:
                header = Path(d) / name
                if header.is_file():
                    parts.append(src.strip_comments(header.read_text()))
                    break
        return "\n".join(parts)


class _Precompiler:
    """nvcc per config in threads (each compile is a subprocess), started before measuring;
    ``error(cfg)`` waits for that config only, ``inspection(cfg)`` returns its result."""

    def __init__(self, kernel: CppKernel, configs: Sequence[Config], workers: int | None) -> None:
        n = workers or max(1, min(len(configs), (os.cpu_count() or 2) - 1))
        self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="tile_lab_nvcc")
        self.futures: dict[str, Future[Inspection]] = {
            config_key(c): self._pool.submit(kernel.compile, c) for c in configs}

    def error(self, cfg: Config) -> str | None:
        fut = self.futures.get(config_key(cfg))
        if fut is None:
            return None
        exc = fut.exception()
        return None if exc is None else f"{type(exc).__name__}: {exc}"

    def inspection(self, cfg: Config) -> Inspection | None:
        fut = self.futures.get(config_key(cfg))
        return None if fut is None or fut.exception() is not None else fut.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class CppMeasurer:
    """The :class:`~tile_lab.tuning.measurer.Measurer` of C++ configs: compile the config's
    defines (nvcc ahead, in threads), then time the Inspection with ``bench_cpp`` — or with an
    injected ``inner(inspection, grid, args, samples)`` (tests, replays)."""

    def __init__(self, inner: Callable[..., Any] | None, *, options: TuneOptions,
                 check: Callable[..., Any] | None) -> None:
        self.inner, self.options, self.check = inner, options, check
        self.precompiler: _Precompiler | None = None

    def precompile(self, kernel: Any, configs: Sequence[Config],
                   args_fn: Callable[[Config], Sequence[Any]], kinds: dict[str, str],
                   arch: str | None, workers: int | None) -> Precompiles | None:
        self.precompiler = _Precompiler(kernel, configs, workers)
        return self.precompiler

    def warm_up(self) -> None:
        pass  # nvcc runs in threads; the first launch's costs are the cubin load, paid in bench

    def measure(self, kernel: Any, config: Config, grid: tuple[int, ...],
                args: tuple[Any, ...], request: MeasureRequest) -> Any:
        insp = self.precompiler.inspection(config) if self.precompiler is not None else None
        if insp is None:
            insp = kernel.compile(config)  # a compile error here is this config's failure
        if self.inner is not None:
            return self.inner(insp, grid, args, request.samples)
        from ..gpu.options import BenchOptions
        from .bench import bench_cpp

        o = self.options
        f = o.flops(config) if callable(o.flops) else o.flops
        b = o.bytes(config) if callable(o.bytes) else o.bytes
        # a short (race) measurement needs one warm-up launch only, as in tile_lab.tune
        timing = o.timing.but(samples=request.samples, warmup=1 if request.samples < 10 else 3)
        return bench_cpp(insp, grid, args, flops=f, bytes=b, check=self.check, timing=timing,
                         options=BenchOptions(params=config.as_dict()))


@dataclass(frozen=True)
class CppBuildOptions:
    """How a C++ kernel's configs compile: ``defines_fn(config)`` -> the ``-D`` defines (default:
    the config itself, knob name = macro name); ``filename``/``include_dirs`` for a source
    given as text; ``prebuilt``: ``compile_configs``' output made on another machine, for a GPU
    machine that cannot run the pip nvcc."""

    defines_fn: DefinesFn | None = None
    filename: str | None = None
    include_dirs: Sequence[str | os.PathLike[str]] = ()
    prebuilt: Mapping[str, Inspection] | None = None


def tune_cpp(source: str | os.PathLike[str], kernel_name: str | None, space: Space,
             grid_fn: Callable[[Config], Sequence[int]],
             args_fn: Callable[[Config], Sequence[Any]], *,
             check: Callable[..., Any] | None = None, store: TuningStore | str | None = None,
             options: TuneOptions | None = None, build: CppBuildOptions | None = None,
             measure: Callable[..., Any] | None = None) -> TuningResult:
    """Tune the C++ kernel ``kernel_name`` of ``source`` over ``space``; a TuningResult.

    Each config compiles with ``inspect_cpp(source, kernel_name, defines=defines_fn(config))``
    (``build``: a :class:`CppBuildOptions`) and is timed with ``bench_cpp``; ``args_fn(config)``
    gives the kernel's arguments (CuPy arrays and scalars, no constants: those are the
    defines), ``grid_fn(config)`` the grid. The rest is ``tile_lab.tuning.tune``: ``options``
    (a TuneOptions: strategy, samples and regime, flops/bytes, ``arch`` — default the local
    GPU's), ``check``, the resumable ``store`` (keyed by the C++ source, nvcc/tileiras versions,
    arrays, arch and GPU). ``measure(inspection, grid, args, samples)`` replaces the GPU timing
    (tests, replays). Without a GPU and without ``measure``: NoGPUError (the CPU emulator runs
    cuTile Python kernels only).
    """
    from dataclasses import replace

    from ..compile.inspect import resolve_arch
    from .launch import _require_gpu

    opts = options or TuneOptions()
    b = build or CppBuildOptions()
    if measure is None:
        _require_gpu()  # before compiling anything
    kernel = CppKernel(source, kernel_name, arch=resolve_arch(opts.arch),
                       defines_fn=b.defines_fn, filename=b.filename,
                       include_dirs=b.include_dirs, prebuilt=b.prebuilt)
    measurer = CppMeasurer(measure, options=opts, check=check)
    return tune(kernel, space, grid_fn, args_fn, store=store,
                options=replace(opts, arch=kernel.arch), measure=measurer)


def compile_configs(source: str | os.PathLike[str], kernel_name: str | None, space: Space, *,
                    arch: str | int | None = None, defines_fn: DefinesFn | None = None,
                    filename: str | None = None,
                    include_dirs: Sequence[str | os.PathLike[str]] = (),
                    workers: int | None = None) -> dict[str, Inspection]:
    """Compile every valid config of ``space`` (nvcc in parallel): config key -> Inspection,
    for ``tune_cpp(..., prebuilt=...)`` on a machine that cannot compile CUDA Tile C++.
    Configs that fail to compile are left out (tune_cpp then reports their compile error)."""
    from ..compile.inspect import resolve_arch

    kernel = CppKernel(source, kernel_name, arch=resolve_arch(arch), defines_fn=defines_fn,
                       filename=filename, include_dirs=include_dirs)
    kernel.knob_kinds(space)
    configs = space.configs(kernel.arch)
    pre = _Precompiler(kernel, configs, workers)
    try:
        return {config_key(c): insp for c in configs
                if (insp := pre.inspection(c)) is not None}
    finally:
        pre.close()
