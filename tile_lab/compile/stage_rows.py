"""Compiled stages as typed rows: every stage's text is parsed here, once, and nowhere else.

A :class:`~tile_lab.compile.artifacts.StageText` is display text plus a line map; ``StageText.rows``
(computed on first use, then kept) is one frozen row per text line (``text.split("\\n")``)
holding what downstream code reads: the line's text, its source line, and per stage

* SASS (:class:`SassRow`): the instruction's offset (``/*0070*/``), predicate, opcode
  (``LDG`` of ``@P0 LDG.E.64 R2, desc[UR4][R4.64] ;``), full mnemonic with its modifiers and
  operands; labels, headers and blank lines are rows with no offset;
* Tile IR (:class:`TileIRRow`): the op name and its results, an ``entry``'s symbol and
  parameter types, a load's ``latency`` hint and result tile type, and the facts the TMA
  analysis needs: tensor views (base, shape, strides, element type), partition views,
  ``assume`` facts (``div_by<16>``), and the view each ``load_view_tko``/``store_view_tko``
  reads or writes (:func:`tile_views` gathers them per function);
* PTX and cuTile IR: plain :class:`Row` (text and source line).

The grammar follows what ``nvdisasm -c -g`` and ``tileirdisasm -g`` print (through the
cleaning in ``pipeline.py``, which turns their line info into the line map): an
instruction row is optional spaces/tabs, ``/*hex*/``, spaces, the instruction and ``;``; a
Tile IR op row is ``%results = op operands : types``. The other patterns in the package
read location syntax (``loc(...)``, ``//## File``) where ``pipeline.py`` makes line maps, or
text that is not a compiled stage; ``tests/test_package_shape.py`` keeps it that way.

Pure functions of text (no tile_lab imports), so any Inspection, also one loaded back from
JSON, gets the same rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Assumption", "PartitionView", "Row", "SassRow", "TensorView", "TileIRRow",
           "TileType", "TileViews", "ViewAccess", "displacement", "entry_symbols",
           "normalised_op_text", "parse_rows", "prologue_rows", "sass_offset", "sass_opcode",
           "stack_adjustment", "tile_views", "without_ssa_names"]


@dataclass(frozen=True, slots=True)
class Row:
    """One text line of a stage: ``index`` (0-based) in ``text.split("\\n")``, the text, and
    the source line the line map gives it (None where it gives none)."""

    index: int
    text: str
    line: int | None


# -- SASS ---------------------------------------------------------------------------------

# optional indent, optional /*address*/ (nvdisasm prints 4 or more hex digits), spaces
_SASS_ROW = re.compile(r"[ \t]*(?:/\*([0-9a-fA-F]+)\*/)?")
# an instruction: optional predicate (@P0, @!UP1, @PT), then the opcode
_SASS_PREDICATE = re.compile(r"\s*(@!?U?P\w+)\s+")
_SASS_OPCODE = re.compile(r"([A-Z][A-Z0-9]*)(?=[.\s;]|$)")
_DISPLACEMENT = re.compile(r"\[([^\]]*)\+0x([0-9a-fA-F]+)\]")
# the prologue's stack-pointer adjustment: VIADD R1, R1, -0x.. or IADD3 R1, PT, R1, -0x..
_STACK_ADJUST = re.compile(r"^(?:VIADD|IADD3)\s+R1,\s*(?:PT,\s*)?R1,\s*(-?0x[0-9a-f]+)")


@dataclass(frozen=True, slots=True)
class SassRow(Row):
    """One line of the SASS stage. ``offset`` is the instruction's address (bytes from the
    function start), None for a line that is no instruction (label, header, blank);
    ``address_start``/``address_end`` where its ``/*...*/`` stands in ``text`` (0, 0
    without one). The rest is read off the text on demand, so rowing a 100k-line SASS
    stays cheap."""

    offset: int | None = None
    address_start: int = 0
    address_end: int = 0

    @property
    def address(self) -> str:
        """``/*0070*/`` as printed ("" without one)."""
        return self.text[self.address_start:self.address_end]

    @property
    def indent(self) -> str:
        """The spaces and tabs before the address ("" without one)."""
        return self.text[:self.address_start]

    @property
    def gap(self) -> str:
        """The run of spaces between the address and the instruction."""
        rest = self.text[self.address_end:]
        return rest[:len(rest) - len(rest.lstrip(" "))]

    @property
    def instruction(self) -> str:
        """The instruction without address and closing ``;`` (``@P0 BRA `(.L_x_1)``); for a
        line without address, the line itself so stripped."""
        body = self.text[self.address_end:].strip()
        return body[:-1].rstrip() if body.endswith(";") else body

    @property
    def predicate(self) -> str:
        """``@P0``, ``@!UP1``, ... ("" when unpredicated)."""
        m = _SASS_PREDICATE.match(self.text, self.address_end)
        return m.group(1) if m else ""

    @property
    def opcode(self) -> str | None:
        """The base opcode (``LDL`` of ``@P0 LDL.64 R2, [R1]``), None for no instruction."""
        return _opcode_at(self.text, self.address_end)

    @property
    def mnemonic(self) -> str:
        """Opcode with its modifiers (``SYNCS.EXCH.64``); "" for no instruction."""
        if self.opcode is None:
            return ""
        return _after_predicate(self.instruction).split(None, 1)[0]

    @property
    def operands(self) -> tuple[str, ...]:
        """The operands, split at the commas outside brackets (``[UR8+0x1a000]`` stays
        one)."""
        if self.opcode is None:
            return ()
        parts = _after_predicate(self.instruction).split(None, 1)
        return _split_operands(parts[1]) if len(parts) > 1 else ()


def _after_predicate(instruction: str) -> str:
    m = _SASS_PREDICATE.match(instruction)
    return instruction[m.end():] if m else instruction


def _opcode_at(text: str, pos: int) -> str | None:
    m = _SASS_PREDICATE.match(text, pos)
    start = m.end() if m else pos
    while start < len(text) and text[start].isspace():
        start += 1
    o = _SASS_OPCODE.match(text, start)
    return o.group(1) if o else None


def _split_operands(text: str) -> tuple[str, ...]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    return (*out, last) if last else tuple(out)


def sass_offset(line: str) -> int | None:
    """The address of the instruction on one SASS line (``0x70`` for ``/*0070*/ ...``),
    None for a line that is no instruction."""
    return _sass_row(0, line, None).offset


def sass_opcode(line: str) -> str | None:
    """The base opcode of one SASS line, with or without its ``/*address*/`` (``LDL`` for
    ``@P0 LDL.64 R2, [R1]``, ``BRA`` for Nsight Compute's ``@!P1  BRA 0x7f10...``), None for
    a line that is not an instruction."""
    return _sass_row(0, line, None).opcode


def displacement(operand: str) -> tuple[str, int] | None:
    """(base, byte offset) of a memory operand with an immediate displacement:
    ``("UR8", 0x1a000)`` for ``[UR8+0x1a000]``; None for other operands."""
    m = _DISPLACEMENT.match(operand)
    return (m.group(1), int(m.group(2), 16)) if m else None


def stack_adjustment(instruction: str) -> int | None:
    """The value the prologue adds to the stack pointer R1 (``VIADD R1, R1, -0xe98`` or
    ``IADD3 R1, PT, R1, -0xe98, ...``: -3736), None for any other instruction."""
    m = _STACK_ADJUST.match(instruction)
    if m is None:
        return None
    value = int(m.group(1), 16)
    return value - (1 << 32) if value >= 1 << 31 else value


def _sass_row(index: int, text: str, line: int | None) -> SassRow:
    m = _SASS_ROW.match(text)  # always matches (all of it is optional)
    hexdigits = m.group(1) if m else None
    if hexdigits is None:
        return SassRow(index, text, line)
    return SassRow(index, text, line, int(hexdigits, 16), text.index("/*"),
                   text.index("*/") + 2)


# -- Tile IR --------------------------------------------------------------------------------

_TILEIR_OP = re.compile(r"^\s*(?:(%[^=]*)=\s*)?([a-z_][\w.]*)")
_ENTRY = re.compile(r"^\s*entry @([\w.$]+)\(")
_ENTRY_PARAMS = re.compile(r"^\s*entry @[\w.$]+\((.*?)\)\s*(?:optimization_hints|\{)")
_PARAM_TYPE = re.compile(r"%\w+\s*:\s*tile<(ptr<\w+>|\w+)>")
_LOC_SUFFIX = re.compile(r"\s*loc\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$")
_LATENCY = re.compile(r"latency\s*=\s*(\d+)")
_RESULT_TILE = re.compile(r"->\s*tile<([\dx]+)x(\w+)>")
_VIEW_ACCESS = re.compile(r"=\s*(load|store)_view_tko\b.*?(%[\w.]+)\[")
_ACCESS_TILE = re.compile(r"partition_view<tile=\(([\dx]+)\)")
_MAKE_PVIEW = re.compile(r"(%[\w.]+)\s*=\s*make_partition_view\s+(%[\w.]+)")
_MAKE_TVIEW = re.compile(r"(%[\w.]+)\s*=\s*make_tensor_view\s+(%[\w.]+),\s*shape\s*=\s*"
                         r"\[([^\]]*)\],\s*strides\s*=\s*\[([^\]]*)\]\s*:.*?tensor_view<"
                         r"([^,>]*)")
_ASSUME = re.compile(r"(%[\w.]+)\s*=\s*assume\s+(\w+)<([^>]*)>,\s*(%[\w.]+)")
_SSA_VALUE = re.compile(r"%[\w#:.]+")  # %x, %1#1 (a result of %1), %1:2 (two results)
_SSA_NAME = re.compile(r"%[\w.]+")
_TOKEN_ARG = re.compile(r"\s+token\s*=\s*%")
_LOC_ALIAS = re.compile(r"loc\(#loc\d+\)")


@dataclass(frozen=True, slots=True)
class TileType:
    """``tile<64x32xf16>``: shape (64, 32), element type "f16"."""

    shape: tuple[int, ...]
    elem: str


@dataclass(frozen=True, slots=True)
class TensorView:
    """``%tview = make_tensor_view %base, shape = [...], strides = [...] : ... ->
    tensor_view<?x?xf16, ...>``: sizes and strides as printed (SSA names or integers)."""

    name: str
    base: str
    shape: tuple[str, ...]
    strides: tuple[str, ...]
    elem: str  # element type, e.g. "f16"


@dataclass(frozen=True, slots=True)
class PartitionView:
    """``%pview = make_partition_view %tview : partition_view<tile=(64x32), ...>``."""

    name: str
    tensor_view: str


@dataclass(frozen=True, slots=True)
class Assumption:
    """``%a = assume div_by<16>, %arg0``: kind "div_by", args "16", of value "%arg0"."""

    name: str
    kind: str
    args: str
    value: str

    @property
    def divisor(self) -> int | None:
        """N of ``div_by<N>``; None for other assumptions."""
        return int(self.args) if self.kind == "div_by" and self.args.isdecimal() else None


@dataclass(frozen=True, slots=True)
class ViewAccess:
    """A ``load_view_tko`` / ``store_view_tko``: the partition view it indexes, its tile
    shape (from the view's type) and whether it says ``allow_tma = false``."""

    kind: str  # "load" | "store"
    view: str
    tile: tuple[int, ...] | None
    allow_tma_false: bool


@dataclass(frozen=True, slots=True)
class TileIRRow(Row):
    """One line of the Tile IR stage. ``op`` is the op name (``load_view_tko``, ``for``,
    ``entry``, ``continue``), None for region ends, region arguments and blank lines;
    ``results`` the SSA names it defines (``("%tile", "%result_token")``)."""

    code: str = ""  # the text stripped, without a location suffix
    op: str | None = None
    results: tuple[str, ...] = ()
    symbol: str | None = None  # of an ``entry``
    params: tuple[str, ...] | None = None  # an entry's parameter types: "ptr<f16>", "i32"
    latency: int | None = None  # ``optimization_hints = <... latency = N>``
    result_tile: TileType | None = None  # the first ``-> tile<...>`` with a shape
    access: ViewAccess | None = None
    tensor_view: TensorView | None = None
    partition_view: PartitionView | None = None
    assumption: Assumption | None = None


def _tileir_row(index: int, text: str, line: int | None) -> TileIRRow:
    m = _TILEIR_OP.match(text)
    if m is None:
        return TileIRRow(index, text, line, _LOC_SUFFIX.sub("", text).strip())
    results = tuple(r.strip() for r in m.group(1).split(",")) if m.group(1) else ()
    op = m.group(2)
    symbol = params = None
    if op == "entry" and (e := _ENTRY.match(text)):
        symbol = e.group(1)
        if p := _ENTRY_PARAMS.match(text):
            params = tuple(_PARAM_TYPE.findall(p.group(1)))
    lat, tile = _LATENCY.search(text), _RESULT_TILE.search(text)
    return TileIRRow(
        index, text, line, _LOC_SUFFIX.sub("", text).strip(), op, results, symbol, params,
        int(lat.group(1)) if lat else None,
        TileType(tuple(int(d) for d in tile.group(1).split("x")), tile.group(2)) if tile
        else None,
        _access(text), _tensor_view(text), _partition_view(text), _assumption(text))


def _access(text: str) -> ViewAccess | None:
    m = _VIEW_ACCESS.search(text)
    if m is None:
        return None
    t = _ACCESS_TILE.search(text)
    return ViewAccess(m.group(1), m.group(2),
                      tuple(int(d) for d in t.group(1).split("x")) if t else None,
                      "allow_tma = false" in text)


def _tensor_view(text: str) -> TensorView | None:
    m = _MAKE_TVIEW.search(text)
    if m is None:
        return None
    name, base, shape, strides, elem = m.groups()
    return TensorView(name, base, tuple(s.strip() for s in shape.split(",")),
                      tuple(s.strip() for s in strides.split(",")),
                      elem.split("x")[-1].strip())


def _partition_view(text: str) -> PartitionView | None:
    m = _MAKE_PVIEW.search(text)
    return PartitionView(m.group(1), m.group(2)) if m else None


def _assumption(text: str) -> Assumption | None:
    m = _ASSUME.search(text)
    return Assumption(*m.groups()) if m else None


@dataclass(frozen=True)
class TileViews:
    """The tensor and partition views of a Tile IR text and what was assumed of each value:
    the facts deciding whether a view's loads can be TMA copies."""

    tensor_views: dict[str, TensorView]
    partition_views: dict[str, PartitionView]
    divisors: dict[str, int]  # value -> largest ``div_by`` assumed of it directly
    assumed_from: dict[str, str]  # value -> the value an ``assume`` derived it from

    def divisor(self, value: str) -> int:
        """Largest divisor assumed for ``value`` along its chain of assumes (1: none)."""
        best, seen = 1, set()
        while value and value not in seen:
            seen.add(value)
            best = max(best, self.divisors.get(value, 1))
            value = self.assumed_from.get(value, "")
        return best

    def tensor_view_of(self, partition_view: str) -> TensorView | None:
        p = self.partition_views.get(partition_view)
        return self.tensor_views.get(p.tensor_view) if p else None


def tile_views(rows: Iterable[Row]) -> TileViews:
    """The views and assumptions of Tile IR rows (later definitions of a name win)."""
    tviews: dict[str, TensorView] = {}
    pviews: dict[str, PartitionView] = {}
    div: dict[str, int] = {}
    alias: dict[str, str] = {}
    for r in rows:
        if not isinstance(r, TileIRRow):
            continue
        if r.tensor_view:
            tviews[r.tensor_view.name] = r.tensor_view
        if r.partition_view:
            pviews[r.partition_view.name] = r.partition_view
        if a := r.assumption:
            if (n := a.divisor) is not None:
                div[a.name] = max(div.get(a.name, 1), n)
            alias[a.name] = a.value
    return TileViews(tviews, pviews, div, alias)


def entry_symbols(rows: Iterable[Row]) -> list[str]:
    """The symbols of the ``entry`` functions, in order."""
    return [r.symbol for r in rows if isinstance(r, TileIRRow) and r.symbol]


def normalised_op_text(text: str) -> str:
    """An op's text with SSA names (``%x``, ``%1#1``) and token operands erased, for
    comparing ops across front ends."""
    return " ".join(_TOKEN_ARG.sub("", _SSA_VALUE.sub("%", text)).split())


def without_ssa_names(text: str) -> str:
    """A Tile IR line with its ``loc(#locN)`` and SSA names (``%x`` -> ``%``) erased and
    spaces collapsed, so diffs show op and type changes rather than renumbering."""
    return " ".join(_SSA_NAME.sub("%", _LOC_ALIAS.sub("", text)).split())


# -- any stage --------------------------------------------------------------------------------

def parse_rows(name: str, text: str, line_map: Sequence[int | None]) -> tuple[Row, ...]:
    """One row per line of ``text`` (``split("\\n")``): SassRow for the "sass" stage,
    TileIRRow for "tileir", Row otherwise. Lines past the end of ``line_map`` get line
    None; an empty text has no rows."""
    if not text:
        return ()
    lines = text.split("\n")
    lines_map = tuple(line_map[:len(lines)]) + (None,) * (len(lines) - len(line_map))
    make = {"sass": _sass_row, "tileir": _tileir_row}.get(name, Row)
    return tuple(make(i, t, line) for i, (t, line) in enumerate(zip(lines, lines_map)))


PROLOGUE_OPS = frozenset({"make_token", "assume", "constant", "make_tensor_view"})


def prologue_rows(rows: Sequence[Row]) -> frozenset[int]:
    """Indices of the Tile IR ``rows`` of the argument prologue: after ``entry``, the token,
    the facts cuTile assumed of each argument (``assume div_by``/``bounded``), constants and
    tensor views, all tied to the ``def`` line. The inspect view shows them as their own
    group, so hovering the ``def`` line lights up the signature, not two thirds of a small
    kernel's IR."""
    entry = next((r for r in rows if isinstance(r, TileIRRow) and r.op == "entry"), None)
    if entry is None or entry.line is None:
        return frozenset()
    out = []
    for r in rows[entry.index + 1:]:
        if (r.line != entry.line or not isinstance(r, TileIRRow)
                or r.op not in PROLOGUE_OPS or len(r.results) > 1):
            break
        out.append(r.index)
    return frozenset(out)
