"""Stage 2 of the compile pipeline (:mod:`tile_lab.compile.pipeline`): Tile IR text from the
bytecode cuTile's front end made, with each op's source line.

``tileirdisasm -g`` prints the MLIR with ``loc(...)`` suffixes and a ``#loc`` alias table
(absolute paths); :func:`tileir_stage` keeps the text and turns the locations into the line
map. The text is for reading only, so the pipeline schedules :func:`disassemble_tileir` as
it schedules nvdisasm (:func:`~tile_lab.compile.pipeline.machine_code_work`): a compile
whose Tile IR nobody reads (a timing run, a tuner) needs no tileirdisasm. Triton's IRs are
MLIR with the same locations, so ``triton/build.py`` reads them with :func:`tileir_stage` too.
:func:`is_code_line` (which source lines a line map may name) serves the SASS's map as well.
"""

from __future__ import annotations

import functools
import linecache
import re
from collections.abc import Iterable

from .artifacts import StageText
from .toolchain import run_cached, tool_failure

__all__ = ["clear_cache", "disassemble_tileir", "is_code_line", "tileir_stage"]

_TOOL_TIMEOUT = 300.0  # seconds, as for the other tools of the pipeline
_CACHE_SIZE = 64  # memoised by input bytes (and on disk: run_cached), as the other tools' outputs


def clear_cache() -> None:
    """Forget memoised tileirdisasm outputs."""
    _tileirdisasm.cache_clear()


def disassemble_tileir(bytecode: bytes, *, filename: str | None = None) -> StageText:
    """Tile IR MLIR text of ``bytecode`` (``tileirdisasm -g``) with a line map.

    ``filename``: the source file line numbers refer to; by default the file of the
    kernel entry function itself.
    """
    return tileir_stage(_tileirdisasm(bytes(bytecode)), filename)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _tileirdisasm(bytecode: bytes) -> str:
    proc = run_cached("tileirdisasm", ["-g", "kernel.tileirbc"],
                      inputs={"kernel.tileirbc": bytecode}, timeout=_TOOL_TIMEOUT)
    if proc.returncode != 0:
        raise tool_failure("tileirdisasm", proc)
    return proc.stdout.decode("utf-8", "replace")


_ALIAS_DEF = re.compile(r"^(#[A-Za-z_][\w$.-]*)\s*=\s*(.*)$")
_TRAILING_LOC = re.compile(r"^(?P<text>.*?)\s+loc\((?P<expr>.*)\)\s*$")  # an op, its loc(...)
# a loc expression's tokens, left to right: a "file":line:col, or a #loc alias reference
_LOC_TOKEN = re.compile(r'"(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)|(?P<ref>#[A-Za-z_][\w$-]*)')


def _resolve_locs(expr: str, aliases: dict[str, str], depth: int = 0
                  ) -> list[tuple[str, int, int]]:
    """All ``"file":line:col`` a loc expression names, following ``#loc`` aliases in order."""
    if depth > 32:
        return []
    out: list[tuple[str, int, int]] = []
    # left to right, so callee locations come before their call sites
    for m in _LOC_TOKEN.finditer(expr):
        ref = m.group("ref")
        if ref is None:
            out.append((m.group("file"), int(m.group("line")), int(m.group("col"))))
        elif ref in aliases:
            out.extend(_resolve_locs(aliases[ref], aliases, depth + 1))
    return out


def is_code_line(filename: str, line: int) -> bool:
    """False for a line past the end of the file, or known to be blank or a comment
    (tileiras' line info for sm_90 wgmma sequences names such lines after the kernel, even
    one past the file's last line); True when the file's text is unknown."""
    lines = linecache.getlines(filename)
    if not lines:
        return line > 0
    if not 0 < line <= len(lines):
        return False
    stripped = lines[line - 1].strip()
    return bool(stripped) and not stripped.startswith("#")


def _pick_line(locs: Iterable[tuple[str, int, int]], filename: str | None) -> int | None:
    for file, line, _ in locs:
        if (filename is None or file == filename) and is_code_line(file, line):
            return line
    return None


def tileir_stage(text: str, filename: str | None = None) -> StageText:
    """Split ``tileirdisasm -g`` output into display text (no loc suffixes, no alias
    table, which holds absolute paths) and a line map."""
    body, aliases = [], {}
    for raw in text.splitlines():
        m = _ALIAS_DEF.match(raw)
        if m and not raw.startswith(" "):
            aliases[m.group(1)] = m.group(2)
        else:
            body.append(raw)
    while body and not body[-1].strip():
        body.pop()
    if filename is None:  # the file of the entry function: its closing "} loc(...)"
        for raw in reversed(body):
            m = _TRAILING_LOC.search(raw)
            if raw.lstrip().startswith("}") and m:
                locs = _resolve_locs(m.group("expr"), aliases)
                if locs:
                    filename = locs[0][0]
                    break
    lines, line_map = [], []
    for raw in body:
        m = _TRAILING_LOC.search(raw)
        if m:
            lines.append(m.group("text").rstrip())
            line_map.append(_pick_line(_resolve_locs(m.group("expr"), aliases), filename))
        else:
            lines.append(raw.rstrip())
            line_map.append(None)
    # MLIR prints a region op's location after its closing "}": give it to the opening line.
    open_lines: list[int] = []
    for i, text_line in enumerate(lines):
        stripped = text_line.strip()
        if stripped.startswith("}") and open_lines:
            opener = open_lines.pop()
            if line_map[opener] is None:
                line_map[opener] = line_map[i]
        if stripped.endswith("{"):
            open_lines.append(i)
    # An op whose region starts on the next line ("(%lhs, %rhs) {") shares its location.
    for i in range(len(lines) - 1):
        nxt = lines[i + 1].strip()
        if line_map[i] is None and nxt.startswith("(") and nxt.endswith("{"):
            line_map[i] = line_map[i + 1]
    return StageText("tileir", "\n".join(lines), tuple(line_map))
