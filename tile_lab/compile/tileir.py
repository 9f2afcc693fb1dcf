"""Stage 2 of the compile pipeline (:mod:`tile_lab.compile.pipeline`): Tile IR text from the
bytecode cuTile's front end made, with each op's source line.

``tileirdisasm -g`` prints the MLIR with ``loc(...)`` suffixes and a ``#loc`` alias table
(absolute paths); :func:`tileir_stage` keeps the text and turns the locations into the line
map. The text is for reading only, so :func:`disassemble_tileir_async` schedules it as
nvdisasm is scheduled (:func:`~tile_lab.compile.disassembly.machine_code_work`): a compile
whose Tile IR nobody reads (a timing run, a tuner) needs no tileirdisasm. Triton's IRs are
MLIR with the same locations, so ``triton/build.py`` reads them with :func:`tileir_stage` too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from concurrent.futures import Future

from . import tool_cache
from .artifacts import StageText
from .disassembly import is_code_line, machine_code_work
from .toolchain import tool_failure

__all__ = ["clear_cache", "disassemble_tileir", "disassemble_tileir_async", "tileir_stage"]

_TOOL_TIMEOUT = 300.0  # seconds, as for the other tools of the pipeline
_CACHE_SIZE = 64  # memoised by input bytes (and on disk: tool_cache), as the other tools' outputs


def clear_cache() -> None:
    """Forget memoised tileirdisasm outputs."""
    _tileirdisasm.cache_clear()


def disassemble_tileir_async(bytecode: bytes, *, filename: str | None = None
                             ) -> Future[StageText]:
    """:func:`disassemble_tileir` as :func:`machine_code_work` schedules it; its errors
    (tileirdisasm missing or failing) come out of ``result()``."""
    return machine_code_work(lambda: disassemble_tileir(bytecode, filename=filename))


def disassemble_tileir(bytecode: bytes, *, filename: str | None = None) -> StageText:
    """Tile IR MLIR text of ``bytecode`` (``tileirdisasm -g``) with a line map.

    ``filename``: the source file line numbers refer to; by default the file of the
    kernel entry function itself.
    """
    return tileir_stage(_tileirdisasm(bytes(bytecode)), filename)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _tileirdisasm(bytecode: bytes) -> str:
    proc = tool_cache.run("tileirdisasm", ["-g", "kernel.tileirbc"],
                          inputs={"kernel.tileirbc": bytecode}, timeout=_TOOL_TIMEOUT)
    if proc.returncode != 0:
        raise tool_failure("tileirdisasm", proc)
    return proc.stdout.decode("utf-8", "replace")


_ALIAS_DEF = re.compile(r"^(#[A-Za-z_][\w$.-]*)\s*=\s*(.*)$")
_TRAILING_LOC = re.compile(r"\s+loc\((?P<expr>.*)\)\s*$")
_FILE_LOC = re.compile(r'"(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)')
_ALIAS_REF = re.compile(r"#[A-Za-z_][\w$-]*")


def _resolve_locs(expr: str, aliases: dict[str, str], depth: int = 0
                  ) -> list[tuple[str, int, int]]:
    """All ``"file":line:col`` a loc expression names, following ``#loc`` aliases in order."""
    if depth > 32:
        return []
    out: list[tuple[str, int, int]] = []
    # walk left to right so callee locations come before their call sites
    tokens = sorted([(m.start(), "file", m) for m in _FILE_LOC.finditer(expr)]
                    + [(m.start(), "ref", m) for m in _ALIAS_REF.finditer(expr)],
                    key=lambda t: t[0])
    for _, kind, m in tokens:
        if kind == "file":
            out.append((m.group("file"), int(m.group("line")), int(m.group("col"))))
        elif m.group(0) in aliases:
            out.extend(_resolve_locs(aliases[m.group(0)], aliases, depth + 1))
    return out


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
            lines.append(raw[:m.start()].rstrip())
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
