"""Reading CUDA Tile C++ source text: kernel names, parameter lists, symbols.

Plain text scanning (no compiler): enough to find ``__tile_global__`` kernels in a
``%%tile --lang c++`` cell and to match a kernel name with its mangled symbol.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import CompileError, SourceLocation

_IDENT = r"[A-Za-z_]\w*"
# `__tile_global__ void name(`, allowing qualifiers and attributes between the keyword
# and the name, but never a statement end, a brace or another parenthesis.
_KERNEL_RE = re.compile(r"__tile_global__\b[^;{}()]*?\b(" + _IDENT + r")\s*\(")


def strip_comments(source: str) -> str:
    """``source`` with // and /* */ comments (not string contents) blanked out.

    Newlines are kept, so offsets and line numbers stay those of ``source``.
    """
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(source[i:j + 1])
            i = j + 1
        elif source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in source[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def find_kernel_names(source: str) -> list[str]:
    """Names of the ``__tile_global__`` kernels defined in ``source``, in order.

    This is how a ``%%tile --lang c++`` cell finds its kernel when none is named:
    ``__tile_global__ void vector_add(float* a, ...)`` gives ``"vector_add"``.
    """
    names = [m.group(1) for m in _KERNEL_RE.finditer(strip_comments(source))]
    return list(dict.fromkeys(names))


def kernel_parameter_text(source: str, name: str) -> str | None:
    """The parameter list of kernel ``name`` as written, whitespace collapsed, or None."""
    code = strip_comments(source)
    for m in _KERNEL_RE.finditer(code):
        if m.group(1) != name:
            continue
        depth, start = 1, m.end()
        for j in range(start, len(code)):
            if code[j] == "(":
                depth += 1
            elif code[j] == ")":
                depth -= 1
                if depth == 0:
                    return " ".join(code[start:j].split())
    return None


def kernel_line(source: str, name: str) -> int | None:
    """1-based line of the ``__tile_global__`` keyword that defines kernel ``name``."""
    code = strip_comments(source)
    for m in _KERNEL_RE.finditer(code):
        if m.group(1) == name:
            return code.count("\n", 0, m.start()) + 1
    return None


def choose_kernel(source: str, kernel_name: str | None, filename: str) -> str:
    """``kernel_name`` checked against the source, or the only kernel when it is None."""
    names = find_kernel_names(source)
    if kernel_name is not None:
        return kernel_name
    if len(names) == 1:
        return names[0]
    if not names:
        raise CompileError(
            f"{filename} defines no __tile_global__ kernel",
            hint="a CUDA Tile C++ kernel looks like: __tile_global__ void name(float* a, ...)")
    raise CompileError(
        f"{filename} defines several kernels ({', '.join(names)}); say which one to inspect",
        location=SourceLocation(filename, kernel_line(source, names[1]) or 1),
        hint=f"pass kernel_name=, e.g. inspect_cpp(source, {names[0]!r})")


def _parse_length_name(symbol: str, i: int) -> tuple[str, int] | None:
    m = re.match(r"(\d+)", symbol[i:])
    if not m:
        return None
    length = int(m.group(1))
    start = i + len(m.group(1))
    if start + length > len(symbol):
        return None
    return symbol[start:start + length], start + length


def symbol_base_name(symbol: str) -> str:
    """The unqualified function name inside an Itanium-mangled symbol.

    ``_Z10vector_addPfS_S_m`` -> ``vector_add``; ``_ZN2ns4gemmEPfS_`` -> ``gemm``;
    an unmangled (``extern "C"``) symbol is returned as is.
    """
    if not symbol.startswith("_Z"):
        return symbol
    i = 2
    if symbol.startswith("N", i):
        i += 1
        last = symbol
        while i < len(symbol) and symbol[i] != "E":
            if symbol[i] in "KVr":  # cv-qualifiers of a member function
                i += 1
                continue
            parsed = _parse_length_name(symbol, i)
            if parsed is None:
                return symbol
            last, i = parsed
        return last
    parsed = _parse_length_name(symbol, i)
    return parsed[0] if parsed else symbol


def match_symbol(symbols: list[str], kernel_name: str) -> str | None:
    """The symbol among ``symbols`` that is kernel ``kernel_name`` (exact name first)."""
    if kernel_name in symbols:
        return kernel_name
    found = [s for s in symbols if symbol_base_name(s) == kernel_name]
    return found[0] if found else None


_INCLUDE_RE = re.compile(r"^[ \t]*#[ \t]*include\b[ \t]*(.*)$", re.MULTILINE)
_INCLUDE_NAME_RE = re.compile(r'^(?:"([^"\n]+)"|<([^>\n]+)>)')


def include_fingerprint(source: str, include_dirs: Sequence[str]) -> bytes | None:
    """The bytes of every header ``source`` includes from ``include_dirs`` (transitively),
    with their names: what nvcc's output depends on besides the source and the toolkit's
    own headers. None when an ``#include`` names its file through a macro (no text scan
    can follow it: such a compile is never cached)."""
    out: list[bytes] = []
    seen: set[str] = set()
    todo: list[tuple[str, str | None]] = [(source, None)]  # (text, folder it is in)
    while todo:
        text, here = todo.pop()
        for m in _INCLUDE_RE.finditer(strip_comments(text)):
            name_m = _INCLUDE_NAME_RE.match(m.group(1).strip())
            if name_m is None:
                return None
            quoted, name = name_m.group(1) is not None, name_m.group(1) or name_m.group(2)
            folders = ([here] if quoted and here else []) + list(include_dirs)
            found = next((p for p in (Path(f) / name for f in folders) if p.is_file()), None)
            if found is None:  # the toolkit's (cuda_tile.h) or the system's
                out.append(f"<{name}>\0".encode())
                continue
            key = str(found.resolve())
            if key in seen:
                continue
            seen.add(key)
            data = found.read_bytes()
            out.append(f"{key}:{len(data)}\0".encode() + data)
            todo.append((data.decode("utf-8", "replace"), str(found.parent)))
    return b"".join(out)
