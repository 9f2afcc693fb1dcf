"""The compile pipeline: one function per stage, each stage's text mapped to source lines.

    Python kernel + signature
      -> cuTile front end ..... cuTile IR (``// file:line:col`` per op)  cutile_stage
      -> Tile IR bytecode ..... tileirdisasm -g (``loc(...)`` per op)    disassemble_tileir
      -> tileiras --lineinfo .. cubin + YAML remarks                     run_tileiras,
                                                                         parse_remarks
      -> nvdisasm -g -gp ...... SASS (``//## File ..., line N``)         sass_from_cubin
      -> cubin section ........ PTX (lines mapped through the SASS)      ptx_from_cubin

SASS and PTX are lazy in ``compile_kernel``: nvdisasm costs 0.5-1.5 s of CPU for any
cubin (more than all of tile_lab's other work), and the API's users that never read them
(the tuner's "why" view, ``cpp.compare``, panes without SASS/PTX) should not wait for it.
It starts in a background thread the moment the cubin exists (a subprocess, so the GIL
stays free) and the stages wait for it only when first read (``LazyStages``).

PTX: tileiras has no PTX output option (not even under ``--help-hidden``), but with
``--lineinfo`` it embeds the PTX it compiled in the cubin (``.nv_debug_ptx_txt``) and
maps each SASS instruction to a PTX line; ``ptx_from_cubin`` reads both.

Stage texts are made for display: location suffixes and tables are removed (the line
map carries them) and no temporary path appears in any text.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
import struct
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _cutile_compat as compat
from .artifacts import LazyStages, Remark, StageText
from .compile_errors import compile_error_from_tile_error, source_location
from .errors import CompileError, SignatureError, ToolchainError
from .stage_rows import sass_offset
from .toolchain import run_tool, tool_failure

_TOOL_TIMEOUT = 300.0  # seconds; big tiles can make tileiras slow
# Tool outputs are memoised by input bytes: re-running an unchanged cell only pays for
# cuTile's front end (tens of ms) instead of tileiras + nvdisasm (about a second).
_CACHE_SIZE = 64


def clear_caches() -> None:
    """Forget memoised tool outputs (benchmarks measure cold compiles)."""
    for f in (_tileiras, _tileirdisasm, _nvdisasm):
        f.cache_clear()


@dataclass(frozen=True)
class CompileResult:
    """Everything one compile produced (``_inspect`` wraps it into an Inspection).

    ``stages`` is a LazyStages: "sass" and "ptx" (present when the cubin embeds PTX) may
    still be in the making and wait for nvdisasm when read."""

    symbol: str
    stages: LazyStages
    cubin: bytes
    bytecode: bytes
    remarks: tuple[Remark, ...]


def compile_kernel(kernel: Any, signature: Any, *, arch: str, options: Any,
                   filename: str) -> CompileResult:
    """Run every stage for one kernel signature. ``filename`` is the kernel's source file
    (line maps point into it). Compile errors raise CompileError at the user's line."""
    front = run_frontend(kernel, signature, arch, options)
    cutile = cutile_stage(front.cutile_ir, filename)
    opt = compat.opt_level(options, arch)
    # The disassembler and the optimizing assembler are independent processes: overlap them.
    with ThreadPoolExecutor(max_workers=1) as pool:
        tileir_future = pool.submit(disassemble_tileir, front.bytecode, filename=filename)
        cubin, remarks_yaml = run_tileiras(front.bytecode, arch, opt)
        # nvdisasm may outlive this call: it runs on the long-lived background pool
        machine_code = disassemble_cubin_async(cubin, arch, filename=filename)
        tileir = tileir_future.result()
    stages = LazyStages({"cutile": cutile, "tileir": tileir},
                        cubin_stage_names(cubin), machine_code)
    return CompileResult(symbol=front.symbol, stages=stages,
                         cubin=cubin, bytecode=front.bytecode,
                         remarks=parse_remarks(remarks_yaml, filename))


# -- stage 1: the cuTile front end ----------------------------------------------------

def run_frontend(kernel: Any, signature: Any, arch: str, options: Any) -> compat.FrontendResult:
    """cuTile IR and Tile IR bytecode; cuTile's errors become CompileError/SignatureError."""
    try:
        return compat.compile_frontend(kernel, signature, arch, options)
    except Exception as e:
        if compat.is_tile_error(e):
            raise compile_error_from_tile_error(e) from None
        if isinstance(e, TypeError) and "kernel parameter" in str(e):
            # cuTile checks signatures against annotations with a plain TypeError
            raise SignatureError(str(e).replace("Invalid kernel parameter", "parameter")) from None
        raise


_CUTILE_LOC = re.compile(r"\s*//\s*(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)\s*$")


def cutile_stage(text: str, filename: str) -> StageText:
    """cuTile IR text with each op's ``// file:line:col`` turned into the line map.

    The comment stays as ``// line N`` (``// other.py:N`` for code from another file) so
    the text reads on its own; full paths are dropped to keep output deterministic.
    """
    lines, line_map = [], []
    for raw in text.splitlines():
        m = _CUTILE_LOC.search(raw)
        if not m:
            lines.append(raw.rstrip())
            line_map.append(None)
            continue
        body, file, line = raw[:m.start()].rstrip(), m.group("file"), int(m.group("line"))
        if file == "<unknown>" or line == 0:
            lines.append(body)
            line_map.append(None)
        elif file == filename:
            lines.append(f"{body}  // line {line}")
            line_map.append(line)
        else:
            lines.append(f"{body}  // {os.path.basename(file)}:{line}")
            line_map.append(None)
    return StageText("cutile", "\n".join(lines), tuple(line_map))


# -- stage 2: Tile IR (MLIR text) -----------------------------------------------------

def disassemble_tileir(bytecode: bytes, *, filename: str | None = None) -> StageText:
    """Tile IR MLIR text of ``bytecode`` (``tileirdisasm -g``) with a line map.

    ``filename``: the source file line numbers refer to; by default the file of the
    kernel entry function itself.
    """
    return tileir_stage(_tileirdisasm(bytes(bytecode)), filename)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _tileirdisasm(bytecode: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="tile_lab_") as tmp:
        path = Path(tmp) / "kernel.tileirbc"
        path.write_bytes(bytecode)
        proc = run_tool("tileirdisasm", ["-g", str(path)], timeout=_TOOL_TIMEOUT)
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
        if (filename is None or file == filename) and _is_code(file, line):
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


# -- stage 3: tileiras -> cubin + remarks ---------------------------------------------

def run_tileiras(bytecode: bytes, arch: str, opt_level: int = 3) -> tuple[bytes, str]:
    """Compile bytecode to a cubin with line info; returns (cubin, remarks YAML text).

    tileiras failures raise CompileError at the source line tileiras names.
    """
    return _tileiras(bytes(bytecode), arch, opt_level)


def tileiras_args(src: str, out: str, remarks: str, arch: str, opt_level: int) -> list[str]:
    """The arguments tile_lab runs tileiras with (after the executable): ``src`` Tile IR
    bytecode to cubin ``out``, with line info and every remark as YAML in ``remarks``.
    ``tile_lab.reproducer`` records exactly this command line."""
    return [src, "-o", out, f"--gpu-name={arch}", f"-O{opt_level}", "--lineinfo",
            "--remark-format=yaml", "--remarks=all", f"--remarks-output-file={remarks}"]


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _tileiras(bytecode: bytes, arch: str, opt_level: int) -> tuple[bytes, str]:
    with tempfile.TemporaryDirectory(prefix="tile_lab_") as tmp:
        src, out, remarks = (Path(tmp) / n for n in ("kernel.tileirbc", "kernel.cubin",
                                                     "remarks.yaml"))
        src.write_bytes(bytecode)
        proc = run_tool("tileiras", tileiras_args(str(src), str(out), str(remarks), arch,
                                                  opt_level), timeout=_TOOL_TIMEOUT)
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace").replace(tmp + os.sep, "")
            message, where = compat.parse_tileiras_stderr(stderr)
            location = source_location(*where) if where else None
            raise CompileError(f"tileiras failed for {arch}: {message.strip()}", location,
                               hint="tileiras is cuTile's optimizing assembler; the line "
                                    "shown is where it reports the problem")
        cubin = out.read_bytes()
        remarks_text = remarks.read_text("utf-8", "replace") if remarks.exists() else ""
    return cubin, remarks_text


_DOC_START = re.compile(r"^---\s*!(\w+)")
_DEBUG_LOC = re.compile(r"File:\s*'(?P<file>[^']*)',\s*Line:\s*(?P<line>\d+),"
                        r"\s*Column:\s*(?P<col>\d+)")
_ARG = re.compile(r"^\s*-\s*(\w+):\s*(.*)$")
_KIND = {"Passed": "passed", "Missed": "missed", "Failure": "failed", "Analysis": "analysis"}


def _yaml_scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    return text


def parse_remarks(yaml_text: str, filename: str | None = None) -> tuple[Remark, ...]:
    """Remarks from tileiras' YAML remarks file (LLVM optimization-record format).

    Each ``--- !Kind`` document becomes one Remark: category from ``Pass``, the message
    from the ``Remark`` argument plus the other arguments (reasons de-duplicated, their
    absolute-path ``loc(...)`` prefixes removed). Duplicates are dropped; the result is
    sorted by source line. Locations outside ``filename`` (when given) get line None.
    """
    docs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for raw in yaml_text.splitlines():
        m = _DOC_START.match(raw)
        if m:
            cur = {"kind": _KIND.get(m.group(1), m.group(1).lower()), "args": []}
            docs.append(cur)
            continue
        if cur is None or raw.strip() == "...":
            continue
        am = _ARG.match(raw)
        if am and raw.startswith(" "):
            cur["args"].append((am.group(1), _yaml_scalar(am.group(2))))
        elif ":" in raw and not raw.startswith(" "):
            key, _, value = raw.partition(":")
            cur[key.strip()] = value.strip()
    remarks = []
    for d in docs:
        line = col = None
        lm = _DEBUG_LOC.search(d.get("DebugLoc", ""))
        if lm and (filename is None or lm.group("file") == filename):
            line, col = int(lm.group("line")), int(lm.group("col"))
        remarks.append(Remark(kind=d["kind"], category=_category(d.get("Pass", "")),
                              message=_remark_message(d["args"]), line=line, col=col,
                              pass_name=_yaml_scalar(d.get("Name", ""))))
    unique = list(dict.fromkeys(remarks))
    return tuple(sorted(unique, key=lambda r: (r.line is None, r.line or 0, r.col or 0)))


def _category(pass_field: str) -> str:
    return re.sub(r"[^a-z]", "", _yaml_scalar(pass_field).lower())  # "Tensor-core" -> "tensorcore"


_LOC_PREFIX = re.compile(r'^loc\([^)]*\):\s*')


def _remark_message(args: list[tuple[str, str]]) -> str:
    main = next((v for k, v in args if k == "Remark"), "")
    reasons = list(dict.fromkeys(_LOC_PREFIX.sub("", v) for k, v in args if k == "Reason"))
    extras = [f"{k}: {v}" for k, v in args if k not in ("Remark", "Reason", "RemarkId")]
    text = main
    if reasons:
        text += ": " + "; ".join(reasons)
    if extras:
        text += " (" + "; ".join(extras) + ")"
    return text


# -- stage 4: SASS and PTX -------------------------------------------------------------

def sass_from_cubin(cubin: bytes, arch: str, *, filename: str | None = None) -> StageText:
    """SASS of ``cubin`` (``nvdisasm -c -g -gp``), each instruction mapped to its source line.

    ``arch`` is only used in error messages (nvdisasm reads the target from the cubin).
    ``filename``: the source file line numbers refer to; by default the first file the
    line info names.
    """
    return sass_stage(_nvdisasm(bytes(cubin), arch), filename)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _nvdisasm(cubin: bytes, arch: str) -> str:
    with tempfile.TemporaryDirectory(prefix="tile_lab_") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        # -g: source lines, -gp: PTX lines (one run: nvdisasm's start-up costs ~0.5 s CPU).
        # Dataflow analysis stays on: without it BRX branch targets go unlabelled.
        proc = run_tool("nvdisasm", ["-c", "-g", "-gp", str(path)], timeout=_TOOL_TIMEOUT)
        if proc.returncode != 0:
            # without the temporary directory, the message is the same on every run
            err = tool_failure("nvdisasm", proc).message.replace(tmp + os.sep, "")
            raise ToolchainError(f"disassembling the {arch} cubin: {err}")
    return proc.stdout.decode("utf-8", "replace")


def _is_code(filename: str, line: int) -> bool:
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
            current = line if file == filename and _is_code(filename, line) else None
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


def disassemble_cubin_async(cubin: bytes, arch: str, *, filename: str | None = None
                            ) -> Future[dict[str, StageText]]:
    """Start ``disassemble_cubin`` in a background thread; its errors come out of
    ``result()``."""
    return _background_pool().submit(disassemble_cubin, cubin, arch, filename=filename)


# One small pool per process: a few disassemblies at once at most (each nvdisasm keeps a
# core busy), and a forked child must not inherit the parent's pool, whose threads it
# does not have (submitting to it would wait forever).
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _background_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1),
                                       thread_name_prefix="tile_lab-nvdisasm")
        return _pool


def _forget_pool_in_child() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


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
