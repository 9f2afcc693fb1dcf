"""Compile CUDA Tile C++ with the pip-installed nvcc: source -> Tile IR -> cubin -> Inspection.

``nvcc -std=c++20 -enable-tile -tilebc -arch=sm_XY`` runs the C++ front end and writes
Tile IR bytecode; tileiras turns that same bytecode into the cubin (``--lineinfo``), so
the Tile IR shown and the SASS shown come from one front-end run. No system CUDA is
needed: nvcc finds ``cuda_tile.h`` next to itself in the wheel; it needs a host C++
compiler (g++) only to preprocess.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..compile.artifacts import Inspection, LazyStages, StageText
from ..compile.inspect import resolve_arch
from ..compile.stage_rows import entry_symbols
from ..errors import ArgumentTypeError, CompileError, SourceLocation, ToolchainError
from . import diagnostics
from . import source as src

_DEFINE_NAME_RE = re.compile(r"^[A-Za-z_]\w*$")
DEFAULT_FILENAME = "kernel.cu"
# the source file named bare, as nvcc names it when run on that name: "kernel.cu(11): error"
_BARE_SOURCE = re.compile(r"(?<![\w./-])" + re.escape(DEFAULT_FILENAME) + r"(?=[(:])")
_NVCC_TIMEOUT = 300.0  # seconds; the C++ front end instantiates many templates
NVCC_MIN = (13, 4)  # the nvcc tile_lab's C++ cells are built and tested with (-enable-tile)


def define_flags(defines: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``-DNAME=VALUE`` flags (sorted, so equal dicts give equal flags)."""
    flags = []
    for name, value in sorted((defines or {}).items()):
        if not isinstance(name, str) or not _DEFINE_NAME_RE.match(name):
            raise CompileError(f"defines: {name!r} is not a C++ macro name")
        if value is None:
            flags.append(f"-D{name}")
            continue
        text = str(int(value)) if isinstance(value, bool) else str(value)
        if "\n" in text:
            raise CompileError(f"defines[{name!r}]: the value must be one line")
        flags.append(f"-D{name}={text}")
    return tuple(flags)


class _Paths:
    """Where the temporary source lives, and how to name it to the user instead."""

    def __init__(self, tmpdir: Path, filename: str) -> None:
        self.tmpdir = tmpdir
        self.source = tmpdir / DEFAULT_FILENAME
        self.filename = filename
        from ..compile.toolchain import find_tool

        nvcc_bin = find_tool("nvcc").parent
        # nvcc names its headers through "<bin>/../include"; also catch the resolved form
        self.include_dirs = sorted({str(nvcc_bin / ".." / "include"),
                                    str((nvcc_bin / ".." / "include").resolve())},
                                   key=len, reverse=True)

    def is_user_file(self, path: str) -> bool:
        p = path.strip().strip('"')
        if p in (str(self.source), DEFAULT_FILENAME):
            return True
        try:
            return Path(p).resolve() == self.source.resolve()
        except OSError:
            return False

    def scrub(self, text: str) -> str:
        """Temporary and install paths replaced: the same text on every machine and run."""
        text = text.replace(str(self.source), self.filename)
        # nvcc runs on the role name (run_cached): its messages say "kernel.cu(11): error"
        text = _BARE_SOURCE.sub(lambda _m: self.filename, text)
        for inc in self.include_dirs:
            text = text.replace(inc, "<cuda>/include")
        return text.replace(str(self.tmpdir), ".")


def _run_nvcc(source: str, arch: str, defines: tuple[str, ...], includes: tuple[str, ...],
              filename: str) -> tuple[bytes, _Paths]:
    """nvcc's Tile IR bytecode for ``source``, and the paths it was compiled under.

    The run (or an earlier one's output, from the disk cache) happened in ``paths.tmpdir``:
    nvcc writes that folder into the bytecode's locations, so line maps and scrubbing use it.
    """
    from ..compile.toolchain import run_cached

    args = ["-std=c++20", "-enable-tile", "-tilebc", f"-arch={arch}", "-lineinfo", *defines,
            *(f"-I{d}" for d in includes), DEFAULT_FILENAME, "-o", "kernel.tilebc"]
    # nvcc preprocesses with the host compiler: a new one is a new cache key too
    host = shutil.which("g++") or ""
    extra = src.include_fingerprint(source, includes)
    if extra is not None and host:
        st = os.stat(host)
        extra += f"host:{os.path.realpath(host)}:{st.st_size}:{st.st_mtime_ns}".encode()
    proc = run_cached("nvcc", args, inputs={DEFAULT_FILENAME: source.encode()},
                      outputs=("kernel.tilebc",), timeout=_NVCC_TIMEOUT, extra=extra)
    paths = _Paths(Path(proc.workdir), filename)
    if proc.returncode == 0 and "kernel.tilebc" in proc.files:
        return proc.files["kernel.tilebc"], paths
    _check_nvcc_version()  # an nvcc without CUDA Tile C++ fails with a riddle ('ilebc')
    output = (proc.stderr + proc.stdout).decode("utf-8", "replace")
    if re.search(r"(gcc|g\+\+|cc1plus)[^\n]*(not found|No such file)", output):
        raise ToolchainError("nvcc could not run its host C++ compiler",
                             hint="install g++ (e.g. apt-get install g++): nvcc uses it to "
                                  "preprocess CUDA Tile C++")
    raise diagnostics.compile_error_from_output(
        "nvcc", output, source=source, filename=paths.filename,
        is_user_file=paths.is_user_file, scrub=paths.scrub)


def _check_nvcc_version() -> None:
    """Raise a ToolchainError saying so when the nvcc found predates CUDA Tile C++."""
    from ..compile.toolchain import find_tool, tool_version

    try:
        version = tool_version("nvcc")
        found = tuple(int(x) for x in version.split(".")[:2])
    except (ToolchainError, ValueError):
        return  # no version to judge by: the compile error itself is the better message
    if found < NVCC_MIN:
        need = ".".join(map(str, NVCC_MIN))
        raise ToolchainError(
            f"nvcc {version} ({find_tool('nvcc')}) is too old for CUDA Tile C++: "
            f"--lang c++ / inspect_cpp need nvcc {need} or newer (CUDA Tile C++, "
            "-enable-tile)",
            hint=f"pip install 'nvidia-cuda-nvcc>={need}' (tile_lab uses the pip wheel's "
                 "nvcc before the one on PATH)")


def _run_tileiras(bytecode: bytes, arch: str, paths: _Paths, source: str) -> tuple[bytes, str]:
    """compile.run_tileiras, its errors re-pointed from the temporary file to the user's."""
    from ..compile.pipeline import run_tileiras

    try:
        return run_tileiras(bytecode, arch)
    except CompileError as e:
        loc = e.location
        if loc is None or not paths.is_user_file(loc.filename):
            raise CompileError(paths.scrub(e.message), None, e.hint) from None
        lines = source.splitlines()
        text = lines[loc.line - 1] if 0 < loc.line <= len(lines) else None
        raise CompileError(paths.scrub(e.message),
                           SourceLocation(paths.filename, loc.line, loc.col, text),
                           e.hint) from None


def _scrubbed(stage: StageText, paths: _Paths) -> StageText:
    return StageText(stage.name, paths.scrub(stage.text), stage.line_map)


@functools.lru_cache(maxsize=64)
def _inspect_cached(source: str, kernel_name: str, arch: str, defines: tuple[str, ...],
                    includes: tuple[str, ...], filename: str) -> Inspection:
    from ..compile.disassembly import sass_from_cubin
    from ..compile.pipeline import machine_code_work, parse_remarks
    from ..compile.tileir import disassemble_tileir
    from ..compile.toolchain import tool_version

    bytecode, paths = _run_nvcc(source, arch, defines, includes, filename)
    user_file = str(paths.source)  # the line maps keep only lines of this file
    # the disassembler and the optimizing assembler are independent: overlap them
    with ThreadPoolExecutor(max_workers=1) as pool:
        tileir_future = pool.submit(disassemble_tileir, bytecode, filename=user_file)
        cubin, remarks_yaml = _run_tileiras(bytecode, arch, paths, source)
        tileir = _scrubbed(tileir_future.result(), paths)
    remarks = tuple(replace(r, message=paths.scrub(r.message))
                    for r in parse_remarks(remarks_yaml, filename=user_file))

    symbols = entry_symbols(tileir.rows)
    if src.match_symbol(symbols, kernel_name) is None:
        found = ", ".join(src.symbol_base_name(s) for s in symbols) or "none"
        raise CompileError(f"{filename} has no __tile_global__ kernel named {kernel_name!r} "
                           f"(kernels compiled: {found})",
                           hint="a template kernel is compiled only once it is instantiated")
    params = src.kernel_parameter_text(source, kernel_name) or ""
    signature = ", ".join([params, *defines]) if defines else params
    # nvdisasm (~0.7 s of CPU) now or when the SASS is first read: a tuner compiling many
    # configs reads none of it (pipeline.when_machine_code)
    machine_code = machine_code_work(
        lambda: {"sass": _scrubbed(sass_from_cubin(cubin, arch, filename=user_file), paths)})
    return Inspection(
        kernel_name=kernel_name, filename=filename, first_line=1, source=source, arch=arch,
        signature=signature, hints={"defines": list(defines)} if defines else {},
        stages=LazyStages({"tileir": tileir}, ("sass",), machine_code), cubin=cubin,
        remarks=remarks,
        versions={"nvcc": tool_version("nvcc"), "tileiras": tool_version("tileiras")})


def inspect_cpp(source: str | os.PathLike[str], kernel_name: str | None = None, *,
                arch: str | int | None = None, defines: Mapping[str, Any] | None = None,
                filename: str | None = None,
                include_dirs: Sequence[str | os.PathLike[str]] = ()) -> Inspection:
    """Compile CUDA Tile C++ ``source`` and return its Inspection (source, Tile IR, SASS).

    ``source`` is C++ text (or a path to a ``.cu`` file); ``kernel_name`` picks the
    ``__tile_global__`` kernel (None: the only one). ``arch`` as for ``tile_lab.inspect``
    (default: the local GPU's, else ``sm_90``). ``defines`` become ``-D`` flags (tile
    sizes, hint values). ``include_dirs`` are searched for ``#include "..."`` files (a
    path ``source`` adds its own folder).
    ``filename`` is the name errors use; line N of ``source`` is line N as the user sees
    it (a ``%%tile`` cell passes its text with one blank line first).
    Compile errors raise CompileError located at the user's line.
    """
    includes = [str(Path(d).resolve()) for d in include_dirs]
    if isinstance(source, os.PathLike):
        path = Path(source)
        text = path.read_text()
        filename = filename or path.name
        includes.append(str(path.resolve().parent))
    elif isinstance(source, str):
        text = source
    else:
        raise ArgumentTypeError(f"tile_lab.inspect_cpp: argument 1 (source) must be C++ text "
                                f"or a path, got {type(source).__name__}")
    filename = filename or DEFAULT_FILENAME
    if "\n" in filename or '"' in filename:
        raise CompileError(f"filename={filename!r} must be one line without quotes")
    name = src.choose_kernel(text, kernel_name, filename)
    return _inspect_cached(text, name, resolve_arch(arch), define_flags(defines),
                           tuple(dict.fromkeys(includes)), filename)
