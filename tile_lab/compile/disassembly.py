"""Stage 4 of the compile pipeline (:mod:`tile_lab.compile.pipeline`): SASS and PTX from a cubin.

One ``nvdisasm -c -g -gp`` run gives the SASS with its source lines (``//## File ...,
line N``) and, for each instruction, the PTX line it came from; the PTX text is the section
tileiras embeds with ``--lineinfo`` (``.nv_debug_ptx_txt``), its lines mapped to source
through the SASS. nvdisasm costs 0.5-1.5 s of CPU for any cubin (its start-up, whatever
the cubin), so the pipeline schedules :func:`disassemble_cubin` as its other reading-only
stages (:func:`~tile_lab.compile.pipeline.machine_code_work`: at once in the background, or
when the SASS is first read). Texts are made for display: no temporary path appears in them.
"""

from __future__ import annotations

import functools
import os
import re
import struct
from collections import Counter

from ..errors import ToolchainError
from .artifacts import StageText
from .stage_rows import sass_offset
from .tileir import is_code_line
from .toolchain import run_cached, tool_failure

_TOOL_TIMEOUT = 300.0  # seconds, as for the other tools of the pipeline
_CACHE_SIZE = 64  # memoised by input bytes (and on disk: run_cached), as the other tools' outputs


def clear_cache() -> None:
    """Forget memoised nvdisasm outputs."""
    _nvdisasm.cache_clear()


def sass_from_cubin(cubin: bytes, arch: str, *, filename: str | None = None) -> StageText:
    """SASS of ``cubin`` (``nvdisasm -c -g -gp``), each instruction mapped to its source line.

    ``arch`` is only used in error messages (nvdisasm reads the target from the cubin).
    ``filename``: the source file line numbers refer to; by default the first file the
    line info names.
    """
    return sass_stage(_nvdisasm(bytes(cubin), arch), filename)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _nvdisasm(cubin: bytes, arch: str) -> str:
    # -g: source lines, -gp: PTX lines (one run: nvdisasm's start-up costs ~0.5 s CPU).
    # Dataflow analysis stays on: without it BRX branch targets go unlabelled.
    proc = run_cached("nvdisasm", ["-c", "-g", "-gp", "kernel.cubin"],
                      inputs={"kernel.cubin": cubin}, timeout=_TOOL_TIMEOUT)
    if proc.returncode != 0:
        # without the temporary directory, the message is the same on every run
        err = tool_failure("nvdisasm", proc).message.replace(proc.workdir + os.sep, "")
        raise ToolchainError(f"disassembling the {arch} cubin: {err}")
    return proc.stdout.decode("utf-8", "replace")


PTX_SECTION = ".nv_debug_ptx_txt"  # PTX text tileiras embeds with --lineinfo, NUL-separated
_SASS_FILE = re.compile(r'^\s*//##\s*File\s+"(?P<file>[^"]*)",\s*line\s+(?P<line>\d+)')
_SASS_DIRECTIVE = re.compile(r"^\s*\.(section|align|global|type|size|other|elftype|headerflags"
                             r"|weak|zero)\b")
_SASS_LABEL = re.compile(r"^\s*([.\w$]+):\s*$")


def sass_stage(text: str, filename: str | None = None) -> StageText:
    """Turn ``nvdisasm -g [-gp]`` output into display text and a line map.

    ``//## File`` comments become the line map; ELF bookkeeping directives and the
    ``.text.<name>:`` section labels are dropped; instructions and branch labels stay.
    """
    return _parse_sass(text, filename)[0]


def _parse_sass(text: str, filename: str | None
                ) -> tuple[StageText, list[tuple[int, int | None]]]:
    """(SASS stage, [(PTX line, source line) per instruction with PTX line info])."""
    lines: list[str] = []
    line_map: list[int | None] = []
    ptx_pairs: list[tuple[int, int | None]] = []
    current: int | None = None
    current_ptx: int | None = None
    for raw in text.splitlines():
        fm = _SASS_FILE.match(raw)
        if fm:
            file, line = fm.group("file"), int(fm.group("line"))
            if file == PTX_SECTION:
                current_ptx = line
                continue
            if filename is None:
                filename = file
            current = line if file == filename and is_code_line(filename, line) else None
            continue
        if _SASS_DIRECTIVE.match(raw):
            continue
        lm = _SASS_LABEL.match(raw)
        if lm and lm.group(1).startswith(".text."):
            continue
        if sass_offset(raw) is not None:  # an instruction
            lines.append(raw.rstrip())
            line_map.append(current)
            if current_ptx is not None:
                ptx_pairs.append((current_ptx, current))
            continue
        if lm and not lm.group(1).startswith(".L"):
            # a new function starts: no line until its first "//## File"
            current = current_ptx = None
        if not raw.strip() and (not lines or not lines[-1].strip()):
            continue  # collapse runs of blank lines
        lines.append(raw.rstrip())
        line_map.append(None)
    while lines and not lines[-1].strip():
        lines.pop()
        line_map.pop()
    return StageText("sass", "\n".join(lines), tuple(line_map)), ptx_pairs


def disassemble_cubin(cubin: bytes, arch: str, *, filename: str | None = None
                      ) -> dict[str, StageText]:
    """The "ptx" (where the cubin embeds PTX) and "sass" stages from one nvdisasm run:
    the same stages as ``ptx_from_cubin`` and ``sass_from_cubin``, keys as
    ``cubin_stage_names`` says."""
    cubin = bytes(cubin)
    sass, pairs = _parse_sass(_nvdisasm(cubin, arch), filename)
    section = elf_section(cubin, PTX_SECTION)
    out = {"ptx": _ptx_stage(section, pairs)} if section else {}
    out["sass"] = sass
    return out


def cubin_stage_names(cubin: bytes) -> tuple[str, ...]:
    """The stages ``disassemble_cubin`` makes for ``cubin``, known without disassembling."""
    return ("ptx", "sass") if elf_section(bytes(cubin), PTX_SECTION) else ("sass",)


def elf_section(image: bytes, name: str) -> bytes | None:
    """The contents of section ``name`` of a 64-bit little-endian ELF image (a cubin)."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", image, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", image, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx][4]
    for sh_name, _type, _flags, _addr, offset, size in headers:
        end = image.index(b"\0", strtab + sh_name)
        if image[strtab + sh_name:end].decode("ascii", "replace") == name:
            return image[offset:offset + size]
    return None


def ptx_from_cubin(cubin: bytes, arch: str, *, filename: str | None = None
                   ) -> StageText | None:
    """The PTX tileiras compiled the kernel through, with a line map; None if absent.

    tileiras has no PTX output option, but with ``--lineinfo`` it embeds the PTX text in
    the cubin's ``.nv_debug_ptx_txt`` section (one NUL-terminated string per PTX line,
    ``.loc`` lines blanked) and maps every SASS instruction to a PTX line. A PTX line
    takes the source line most of its SASS instructions map to.
    """
    section = elf_section(bytes(cubin), PTX_SECTION)
    if not section:
        return None
    _, pairs = _parse_sass(_nvdisasm(bytes(cubin), arch), filename)
    return _ptx_stage(section, pairs)


def _ptx_stage(section: bytes, pairs: list[tuple[int, int | None]]) -> StageText:
    """The PTX stage from the cubin's PTX section and the SASS's (PTX line, source line)
    pairs."""
    votes: dict[int, Counter] = {}
    for ptx_line, src_line in pairs:
        if src_line is not None:
            votes.setdefault(ptx_line, Counter())[src_line] += 1
    raw_lines = section.decode("utf-8", "replace").split("\0")
    source_of = _ptx_statement_lines(raw_lines, votes)
    lines: list[str] = []
    line_map: list[int | None] = []
    depth = 0
    for number, raw in enumerate(raw_lines, start=1):
        text = raw.strip()
        if not text:
            if lines and lines[-1]:
                lines.append("")
                line_map.append(None)
            continue
        if text.startswith("}"):
            depth = max(depth - 1, 0)
        is_label = text.endswith(":") and not text.startswith(".")
        lines.append(("\t" * (depth - is_label if depth else 0)) + text)
        line_map.append(source_of.get(number))
        if text.endswith("{"):
            depth += 1
    while lines and not lines[-1]:
        lines.pop()
        line_map.pop()
    return StageText("ptx", "\n".join(lines), tuple(line_map))


def _ptx_statement_lines(raw_lines: list[str], votes: dict[int, Counter]) -> dict[int, int]:
    """PTX line number -> source line, deciding per statement.

    A statement may span lines (``mma.sync...`` then operand lines ending in ``;``) and
    its SASS maps to any of them, so the votes of all its lines are pooled and the
    winner (most SASS instructions, then the lower line) is given to every line.
    """
    out: dict[int, int] = {}
    statement: list[int] = []
    depth = 0

    def close() -> None:
        pooled: Counter = Counter()
        for n in statement:
            pooled.update(votes.get(n, {}))
        if pooled:
            winner = min(pooled.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            out.update(dict.fromkeys(statement, winner))
        statement.clear()

    for number, raw in enumerate(raw_lines, start=1):
        text = raw.strip()
        if not text:
            continue
        statement.append(number)
        if text.startswith("}"):
            depth = max(depth - 1, 0)
        if text.endswith("{"):
            depth += 1
        if depth == 0 or text.endswith((";", "{", "}", ":")):
            close()
    close()
    return out
