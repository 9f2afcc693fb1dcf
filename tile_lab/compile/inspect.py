"""``tile_lab.inspect``: compile a kernel for a signature and collect every stage.

This module validates the user's arguments (kernel, arch, hints, panes to show), builds
the signature, runs the pipeline in ``pipeline.py`` and packs the result into an
``Inspection``. It never renders anything.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _cutile_compat as compat
from .. import kernel_source, request
from ..errors import CompileError, SignatureError, ToolchainError
from .artifacts import STAGES, Inspection
from .pipeline import compile_kernel
from .signature import BuiltSignature, signature_of
from .toolchain import tileiras_gpu_names, tool_version

# Used when there is no (supported) local GPU: Hopper, what the notebooks' tour targets (an
# inspection then matches the tour's SASS; tile_lab.testing and the Triton pair default to it).
DEFAULT_ARCH = "sm_90"


def inspect(kernel: Any, args_or_sig: str | Sequence[Any], *, arch: str | None = None,
            hints: Mapping[str, Any] | str | None = None,
            show: Sequence[str] | str | None = None) -> Inspection:
    """Compile ``kernel`` and return what the compiler made of it, stage by stage.

    Args:
        kernel: a ``@ct.kernel`` function.
        args_or_sig: example arguments (NumPy/CuPy arrays, scalars, ``ct.Constant``
            values), or a spec string such as ``"f32[4096], f32[4096], f32[4096], 128"``.
        arch: target GPU, e.g. ``"sm_90"`` (also ``90``, ``"9.0"``, ``(9, 0)``). Default:
            the local GPU's architecture, else ``sm_90`` (``DEFAULT_ARCH``).
        hints: kernel hints on top of the kernel's own, e.g. ``{"num_ctas": 2}`` or
            ``"num_ctas=2,occupancy=4"``.
        show: the panes the rich display shows, among ``STAGES``.

    Returns as soon as the cuTile IR, Tile IR and remarks are ready. The SASS and PTX
    (nvdisasm, about a second of CPU) are made in a background thread started the moment
    the cubin exists; ``.sass``, ``.ptx``, ``.line_map``, ``stages[...]``, ``to_json`` and
    the rich display wait for them when first read, and raise nvdisasm's ToolchainError
    there if it failed.
    """
    return inspect_request(request.Request(kernel, **request.spec_fields(args_or_sig), arch=arch,
                                           hints=hints, panes=parse_show(show)))


def inspect_request(req: request.Request) -> Inspection:
    """The Inspection of ``req.kernel`` compiled for ``req.spec`` (``req.arch``,
    ``req.hints``), showing ``req.panes``: what :func:`inspect` and the core
    (:func:`tile_lab._run.run`) both compile through."""
    prep = prepare(req.kernel, req.spec, req.arch, req.hints, "tile_lab.inspect")
    func = prep.facts.function
    filename = func.__code__.co_filename
    try:
        source_lines, first_line = kernel_source.source_lines(func)
    except (OSError, TypeError) as e:
        # cuTile compiles from source text too, so there is nothing to compile without it
        raise CompileError(f"the source of kernel {func.__name__!r} is not available ({e})",
                           hint="define kernels in a .py file or in a %%tile cell; code "
                                "run with a bare exec() has no source to read") from None
    result = compile_kernel(req.kernel, prep.signature.kernel_signature, arch=prep.arch,
                            options=prep.options, filename=filename)
    extra = {} if req.panes is None else {"show": req.panes}
    return Inspection(
        kernel_name=func.__name__, filename=filename, first_line=first_line,
        source="".join(source_lines), arch=prep.arch, signature=prep.signature.display,
        hints=prep.facts.changed_options, stages=result.stages,
        cubin=result.cubin, remarks=result.remarks, versions=_versions(), **extra)


@dataclass(frozen=True)
class Prepared:
    """A kernel checked and ready to compile: the target arch, the hints as given (a dict),
    what cuTile says of the kernel (its function, parameters and compiler options with the
    hints applied: ``facts``, asked once), and the signature of the arguments."""

    kernel: Any
    arch: str
    hints: dict[str, Any]
    facts: compat.KernelFacts
    signature: BuiltSignature

    @property
    def options(self) -> Any:
        """cuTile's compiler options, the hints applied."""
        return self.facts.options


def prepare(kernel: Any, args_or_sig: str | Sequence[Any] | None, arch: Any,
            hints: Mapping[str, Any] | str | None, caller: str) -> Prepared:
    """The checks and conversions every compile starts with (``tile_lab.inspect``,
    ``tile_lab.reproducer``): ``caller`` names the function in the errors. The target and
    the hints are read first; then cuTile is asked about the kernel once
    (:func:`~tile_lab._cutile_compat.kernel_facts`), and the signature is built from that."""
    compat.require_supported_cutile()
    target = resolve_arch(arch)
    hint_values = parse_hints(hints)
    try:
        facts = compat.kernel_facts(kernel, hint_values)
    except (TypeError, ValueError) as e:
        raise CompileError(f"bad kernel hint: {e}",
                           hint=f"valid hints: {', '.join(compat.hint_names())}") from None
    if facts is None:
        raise SignatureError(f"{caller} expects a @ct.kernel function as `kernel`, "
                             f"got {type(kernel).__name__}")
    return Prepared(kernel, target, hint_values, facts, signature_of(facts, args_or_sig))


# -- argument parsing -------------------------------------------------------------------

@functools.cache
def default_arch() -> str:
    """The local GPU's architecture if tileiras supports it, else ``DEFAULT_ARCH``."""
    cc = compat.gpu_compute_capability()
    if cc is not None:
        local = f"sm_{cc[0]}{cc[1]}"
        try:
            if local in tileiras_gpu_names():
                return local
        except ToolchainError:
            pass
    return DEFAULT_ARCH


def resolve_arch(arch: Any) -> str:
    """Normalise ``arch`` to tileiras' ``sm_XY`` form and check tileiras supports it."""
    if arch is None:
        return default_arch()
    text = None
    if isinstance(arch, tuple) and len(arch) == 2 and all(isinstance(x, int) for x in arch):
        text = f"sm_{arch[0]}{arch[1]}"
    elif isinstance(arch, int) and not isinstance(arch, bool):
        text = f"sm_{arch}"
    elif isinstance(arch, str):
        s = arch.strip().lower()
        # "sm_90a"/"sm_100f": tileiras picks the arch-specific variant itself
        if m := re.fullmatch(r"(?:sm_?|compute_?)?(\d+)[af]?", s):
            text = f"sm_{m.group(1)}"
        elif m := re.fullmatch(r"(\d+)\.(\d)", s):
            text = f"sm_{m.group(1)}{m.group(2)}"
    supported = tileiras_gpu_names()
    if text is None or text not in supported:
        raise CompileError(f"arch {arch!r} is not a GPU architecture tileiras "
                           f"{tool_version('tileiras')} compiles for",
                           hint=f"use one of {', '.join(supported)}")
    return text


def parse_hints(hints: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Kernel hints as a dict; a string is ``"name=value,name=value"`` with int values."""
    if hints is None:
        return {}
    if isinstance(hints, str):
        out: dict[str, Any] = {}
        for part in (p.strip() for p in hints.split(",")):
            if not part:
                continue
            name, eq, value = part.partition("=")
            if not eq or not re.fullmatch(r"[+-]?\d+", value.strip()):
                raise CompileError(f"bad kernel hint {part!r}: write name=integer, "
                                   "e.g. num_ctas=2,occupancy=4",
                                   hint=f"valid hints: {', '.join(compat.hint_names())}")
            out[name.strip()] = int(value)
        hints = out
    if not isinstance(hints, Mapping):
        raise CompileError(f"hints must be a dict or a string like 'num_ctas=2', "
                           f"got {type(hints).__name__}")
    unknown = [k for k in hints if k not in compat.hint_names()]
    if unknown:
        raise CompileError(f"unknown kernel hint {unknown[0]!r}",
                           hint=f"valid hints: {', '.join(compat.hint_names())}")
    return dict(hints)


def parse_show(show: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """The panes to show, validated against ``STAGES``; None keeps the default."""
    panes, _, bad = request.parse_show(show, STAGES)
    if bad is not None:
        raise CompileError(f"unknown pane {bad!r} in show",
                           hint=f"panes: {', '.join(STAGES)}")
    return panes


def _versions() -> dict[str, str]:
    return {"cuda.tile": compat.installed_version(), "tileiras": tool_version("tileiras")}
