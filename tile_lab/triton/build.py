"""Compile a ``@triton.jit`` kernel ahead of time on a CPU: Triton IR, TTGIR, PTX, SASS.

``triton.compile`` with an explicit ``GPUTarget("cuda", 90, 32)`` needs no GPU: it lowers the
kernel through Triton IR (``ttir``) and TritonGPU IR (``ttgir``) to PTX and runs the ``ptxas``
its wheel ships. The cubin carries line info (Triton passes ``-lineinfo``) and the PTX it was
assembled from, so the SASS and PTX panes come from the same ``nvdisasm`` run as cuTile's
(``tile_lab.compile.disassembly.disassemble_cubin``) and the MLIR stages from the same loc
parser as Tile IR. The result is an :class:`~tile_lab.compile.artifacts.Inspection`, so the
inspect view, the JupyterLab extension and ``tile_lab.export`` show it as they show a cuTile
kernel.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..compile.artifacts import Inspection, StageText
from ..errors import CompileError, SourceLocation
from ..kernel_source import source_lines
from ._require import require_triton
from .kernel import TritonSignature, jit_function, signature_of

__all__ = ["DEFAULT_ARCH", "TritonBuild", "compile_triton", "inspect_triton", "triton_arch"]

DEFAULT_ARCH = "sm_90"
DEFAULT_SHOW = ("source", "ttir", "sass")


def triton_arch(arch: Any) -> tuple[str, int]:
    """``"sm_90"`` (or 90, ``"sm_90a"``, ``"9.0"``) -> ("sm_90", 90)."""
    if arch is None:
        arch = DEFAULT_ARCH
    text = str(arch).strip().lower()
    m = (re.fullmatch(r"(?:sm_?)?(\d{2,3})[af]?", text)
         or re.fullmatch(r"(\d+)\.(\d)", text))
    if m is None:
        raise CompileError(f"arch {arch!r} is not a GPU architecture such as sm_90")
    cap = int("".join(m.groups())) if len(m.groups()) == 2 else int(m.group(1))
    if cap < 75:
        raise CompileError(f"arch {arch!r}: Triton compiles for sm_75 and newer")
    return f"sm_{cap}", cap


@dataclass(frozen=True)
class TritonBuild:
    """What ``triton.compile`` made: the Inspection and the compiler's own metadata."""

    inspection: Inspection
    shared_bytes: int  # dynamic shared memory a launch asks for (Triton's metadata.shared)
    num_warps: int
    num_stages: int


def _source(kernel: Any) -> tuple[str, str, int, int]:
    """(filename, kernel source from its decorator, first line, the ``def`` line)."""
    fn = kernel.fn
    filename = fn.__code__.co_filename
    lines, first = source_lines(fn)
    def_at = next((i for i, t in enumerate(lines) if t.lstrip().startswith("def ")), 0)
    return filename, "".join(lines), first, first + def_at


def _location(kernel: Any, err: Any) -> SourceLocation | None:
    node = getattr(err, "node", None)
    if node is None or not hasattr(node, "lineno"):
        return None
    filename, source, first, def_line = _source(kernel)
    line = def_line + node.lineno - 1
    lines = source.splitlines()
    text = lines[line - first] if 0 <= line - first < len(lines) else None
    col = getattr(node, "col_offset", None)
    if col is not None:  # Triton parses the dedented function: add the def's indentation back
        def_text = lines[def_line - first]
        col += len(def_text) - len(def_text.lstrip())
    return SourceLocation(filename, line, col, text)


def _compile_error(kernel: Any, err: Exception) -> CompileError:
    msg = getattr(err, "error_message", None)
    if msg is None:  # not Triton's front end: the last line is what went wrong
        text = str(err).strip().splitlines()
        msg = text[-1] if text else type(err).__name__
    cause = err.__cause__
    if cause is not None and str(cause) and str(cause) not in msg:
        msg = f"{msg} ({type(cause).__name__}: {cause})"
    return CompileError(f"Triton could not compile {kernel.__name__}: {msg}",
                        _location(kernel, err))


def _mlir_stage(name: str, text: str, filename: str) -> StageText:
    # Tile IR and Triton's IRs are MLIR with the same locs
    from ..compile.tileir import tileir_stage

    st = tileir_stage(text, filename)
    # the loc parser drops every "#alias = ..." line (Tile IR's are all locations); TTGIR's
    # "#blocked = #ttg.blocked<...>" layouts are what that stage is read for: keep them
    layouts = [t for t in text.splitlines()
               if t.startswith("#") and not t.startswith("#loc") and " = " in t]
    return StageText(name, "\n".join([*layouts, st.text]),
                     (None,) * len(layouts) + st.line_map)


_CACHE: dict[tuple[Any, ...], TritonBuild] = {}


def compile_triton(kernel: Any, args: Any, *, arch: Any = None, num_warps: int = 4,
                   num_stages: int = 3) -> TritonBuild:
    """Compile ``kernel`` for ``args`` (example arguments or a spec string, see
    :func:`tile_lab.triton.kernel.signature_of`) for ``arch`` (default sm_90) on this machine,
    GPU or not. Triton's compile errors raise CompileError at the kernel's line."""
    triton = require_triton("compiling a Triton kernel")
    kernel = jit_function(kernel, "the kernel")
    sig = signature_of(kernel, args)
    arch_name, cap = triton_arch(arch)
    key = (kernel.cache_key, sig.text(), sig.divisible, cap, num_warps, num_stages)
    if key not in _CACHE:
        _CACHE[key] = _build(triton, kernel, sig, arch_name, cap, num_warps, num_stages)
    return _CACHE[key]


@contextlib.contextmanager
def _fresh_compile(triton: Any) -> Iterator[None]:
    """Compile, never read Triton's on-disk cache: its key is the source text, not the file, so
    a kernel first compiled from another checkout (the same code at another path) comes back
    with that path in every IR location, and no line of it would map to this kernel's file."""
    knobs = getattr(getattr(triton, "knobs", None), "compilation", None)
    if knobs is None or not hasattr(knobs, "scope"):
        yield
        return
    with knobs.scope():
        knobs.always_compile = True
        yield


def _build(triton: Any, kernel: Any, sig: TritonSignature, arch: str, cap: int,
           num_warps: int, num_stages: int) -> TritonBuild:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from ..compile.disassembly import disassemble_cubin
    from ..compile.toolchain import tool_version

    src = ASTSource(fn=kernel, signature=dict(sig.types), constexprs=dict(sig.constexprs),
                    attrs={(i,): [["tt.divisibility", 16]] for i in sig.divisible})
    try:
        with _fresh_compile(triton):
            compiled = triton.compile(src, target=GPUTarget("cuda", cap, 32),
                                      options={"num_warps": num_warps, "num_stages": num_stages})
    except Exception as err:  # Triton raises CompilationError, RuntimeError (passes, ptxas)
        raise _compile_error(kernel, err) from None
    filename, source, first, _ = _source(kernel)
    cubin = bytes(compiled.asm["cubin"])
    stages = {"ttir": _mlir_stage("ttir", compiled.asm["ttir"], filename),
              "ttgir": _mlir_stage("ttgir", compiled.asm["ttgir"], filename),
              **disassemble_cubin(cubin, arch, filename=filename)}
    meta = compiled.metadata
    insp = Inspection(
        kernel_name=kernel.__name__, filename=filename, first_line=first, source=source,
        arch=arch, signature=sig.text(),
        hints={"num_warps": num_warps, "num_stages": num_stages}, stages=stages, cubin=cubin,
        versions={"triton": triton.__version__, "nvdisasm": tool_version("nvdisasm")},
        show=DEFAULT_SHOW)
    return TritonBuild(insp, int(getattr(meta, "shared", 0) or 0), num_warps, num_stages)


def inspect_triton(kernel: Any, args: Any, *, arch: Any = None, num_warps: int = 4,
                   num_stages: int = 3, show: tuple[str, ...] | None = None) -> Inspection:
    """The :class:`~tile_lab.compile.artifacts.Inspection` of a ``@triton.jit`` kernel: its source,
    Triton IR (``ttir``), TritonGPU IR (``ttgir``), PTX and SASS, each line tied to the
    kernel line it came from. ``args``: example arguments or a spec string
    (``"*fp32, *fp32, *fp32, i32, 1024"``). Compiled for ``arch`` (default sm_90) with
    Triton's own ptxas: no GPU needed."""
    insp = compile_triton(kernel, args, arch=arch, num_warps=num_warps,
                          num_stages=num_stages).inspection
    return insp.with_show(tuple(show)) if show is not None else insp
