"""nvcc / tileiras error output -> a CompileError pointing at the user's line.

nvcc's C++ front end reports ``file(12): error: message``, then the offending line and a
caret; errors inside ``cuda_tile.h`` (a failed ``static_assert``) name the user's line
only in ``detected during ... at line 12 of file``. The host preprocessor (gcc) reports
``file:12:5: fatal error: ...``; tileiras reports MLIR-style ``file:12:5: error: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CompileError, SourceLocation

_EDG_RE = re.compile(r"^(?P<path>.+?)\((?P<line>\d+)\): (?P<sev>error|warning|catastrophic error|"
                     r"remark)(?: #[\w-]+)?: (?P<msg>.*)$")
_GCC_RE = re.compile(r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|"
                     r"error|warning): (?P<msg>.*)$")
_AT_LINE_RE = re.compile(r"at line (\d+) of (\S+)")
_CARET_RE = re.compile(r"^\s*\^[~^]*\s*$")

MAX_HINT_LINES = 40


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic of the compiler output, with the lines that belong to it."""

    path: str
    line: int
    col: int | None  # 0-based
    severity: str
    message: str
    detail: tuple[str, ...]  # following lines (context, caret, "detected during ...")


def parse_diagnostics(stderr: str) -> list[Diagnostic]:
    """Diagnostics in nvcc/gcc/tileiras output, in order."""
    out: list[Diagnostic] = []
    head: re.Match[str] | None = None
    col: int | None = None
    detail: list[str] = []

    def flush() -> None:
        if head is not None:
            out.append(Diagnostic(head.group("path"), int(head.group("line")), col,
                                  head.group("sev"), head.group("msg").strip(), tuple(detail)))

    for line in stderr.splitlines():
        m = _EDG_RE.match(line) or _GCC_RE.match(line)
        if m:
            flush()
            head, detail = m, []
            col = int(m.group("col")) - 1 if "col" in m.groupdict() and m.group("col") else None
        elif head is not None:
            detail.append(line)
    flush()
    return out


def _caret_column(diag: Diagnostic, source_line: str | None) -> int | None:
    """0-based column of the caret nvcc printed under its copy of the source line."""
    if diag.col is not None:
        return diag.col
    for i, text in enumerate(diag.detail):
        if i == 0 or not _CARET_RE.match(text):
            continue
        caret = text.index("^")
        shown = diag.detail[i - 1]
        if source_line is None or not source_line.strip():
            return None
        # nvcc indents its copy of the line; measure the indent against the real line
        core = source_line.strip()
        offset = shown.find(core) - source_line.find(core)
        return max(caret - offset, 0) if shown.find(core) >= 0 else None
    return None


def _scrub_lines(lines: list[str], scrub: Callable[[str], str]) -> str:
    text = "\n".join(scrub(x) for x in lines).strip("\n")
    kept = text.splitlines()
    if len(kept) > MAX_HINT_LINES:
        kept = [*kept[:MAX_HINT_LINES], f"... ({len(kept) - MAX_HINT_LINES} more lines)"]
    return "\n".join(kept)


def compile_error_from_output(tool: str, output: str, *, source: str, filename: str,
                              is_user_file: Callable[[str], bool],
                              scrub: Callable[[str], str]) -> CompileError:
    """A CompileError for failed ``tool`` output, located at the user's line when possible.

    ``is_user_file`` recognises the compiled file's path in the output; ``scrub`` turns
    temporary paths into the user-facing ``filename`` (the message must be stable).
    """
    diags = [d for d in parse_diagnostics(output) if "error" in d.severity]
    lines = source.splitlines()
    if not diags:
        text = scrub(output.strip()) or f"{tool} failed without a message"
        return CompileError(f"{tool} failed: {text.splitlines()[0]}",
                            hint=_scrub_lines(text.splitlines()[1:], lambda s: s) or None)
    first = diags[0]
    line: int | None = None
    col: int | None = None
    if is_user_file(first.path):
        line = first.line
        col = _caret_column(first, lines[line - 1] if 0 < line <= len(lines) else None)
    else:  # inside a header: the user's line is where the template was instantiated
        for text in first.detail:
            for m in _AT_LINE_RE.finditer(text):
                if is_user_file(m.group(2)):
                    line = int(m.group(1))
        if line is None:  # else the first error that is in the user's file
            user = next((d for d in diags if is_user_file(d.path)), None)
            if user is not None:
                line = user.line
    location = None
    if line is not None:
        text = lines[line - 1] if 0 < line <= len(lines) else None
        location = SourceLocation(filename, line, col, text)
    where = "" if is_user_file(first.path) else f" (in {scrub(first.path)}, line {first.line})"
    message = f"{scrub(first.message)}{where}"
    if len(diags) > 1:
        message += f" [{tool} reported {len(diags)} errors; all are listed below]"
    return CompileError(message, location=location,
                        hint=_scrub_lines(output.splitlines(), scrub) if len(diags) > 1 else None)
