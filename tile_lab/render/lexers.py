"""Pygments lexers for the compiler stages tile_lab shows: Tile IR, cuTile IR and NVIDIA SASS.

Pygments has no MLIR lexer, and its ``sass`` alias is the CSS preprocessor language, so
these are our own. They target the exact text the toolchain prints:

* :class:`TileIRLexer` — Tile IR as printed by ``tileirdisasm -g`` (MLIR syntax of the
  ``cuda_tile`` dialect: ``%ssa`` values, ``@symbols``, ops such as ``load_view_tko``,
  types such as ``tile<128xf32>``, ``loc(#locN)`` and the ``#loc`` alias definitions).
* :class:`CuTileIRLexer` — cuTile's own Python-level IR as logged with
  ``CUDA_TILE_LOGS=CUTILEIR`` (``$57: Tile[float32,(1,1024)] = tile_load(...)``).
* :class:`SassLexer` — ``nvdisasm`` output: ``/*0010*/`` addresses, ``@!P0`` predicates,
  opcodes with modifiers (``HMMA.16816.F32``), registers, constant banks, labels,
  ELF directives and ``//## File ..., line N`` line-info comments.

PTX is Pygments' own ``ptx`` lexer, with :class:`PtxLexer` adding the forms in
tileiras' PTX that it does not know (``@%p1`` guards, ``::`` qualifiers as in
``tcgen05.alloc.cta_group::1``, ``%r1|%p2`` pairs, and the Tile IR that tileiras embeds
between ``.source_begin`` and ``.source_end``), so real PTX lexes without error tokens.
Registered through the ``pygments.lexers`` entry point, so
``pygments.lexers.get_lexer_by_name("tileir")`` finds them once tile_lab is installed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from pygments.lexer import Lexer, RegexLexer, bygroups, default, include, inherit, this, using
from pygments.lexers import PtxLexer as PygmentsPtxLexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

__all__ = ["CuTileIRLexer", "PtxLexer", "SassLexer", "TileIRLexer"]

# Tile IR ops that are control flow rather than computation: shown as keywords.
_TILEIR_CONTROL_OPS = frozenset({
    "entry", "func", "module", "return", "yield", "continue", "break", "for", "if",
    "else", "loop", "while", "do", "in", "to", "step",
})

_SSA = r"%[\w$.-]+(?::\d+)?(?:#\d+)?"
_ELEMENT_TYPE = r"(?:[isuf]\d+|bf16|tf32|f8E\w+|index)\b"
_STRING = r'"(?:[^"\\]|\\.)*"'
# loc(...) may nest one level: loc(callsite(#loc1 at #loc2)), loc(fused[...]).
_LOC = (r'loc\((?:[^()"]|' + _STRING + r'|\((?:[^()"]|' + _STRING + r')*\))*\)')


def _op_name(lexer: RegexLexer, match: re.Match) -> Iterator[tuple[int, _TokenType, str]]:
    """An op name in op position: control-flow ops read as keywords, others as functions."""
    word = match.group(0)
    yield match.start(), (Keyword if word in _TILEIR_CONTROL_OPS else Name.Function), word


class TileIRLexer(RegexLexer):
    """Tile IR (MLIR of the ``cuda_tile`` dialect) as printed by ``tileirdisasm``."""

    name = "Tile IR"
    # never "mlir": we only know this one dialect
    aliases: ClassVar[list[str]] = ["tileir", "tile-ir", "cuda-tile-ir"]
    filenames: ClassVar[list[str]] = ["*.tileir"]
    mimetypes: ClassVar[list[str]] = ["text/x-tileir"]
    url = "https://docs.nvidia.com/cuda/tile-ir/"

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"\n", Whitespace),
            # `%a, %b = op` — results, then the op name in op position
            (r"^([ \t]*)(" + _SSA + r"(?:[ \t]*,[ \t]*" + _SSA + r")*)([ \t]*)(=)([ \t]*)",
             bygroups(Whitespace, using(this, state="operands"), Whitespace, Operator,
                      Whitespace), "opname"),
            # `#loc3 = ...` attribute alias definitions (the debug-location table)
            (r"^(#[\w$.-]+)([ \t]*)(=)", bygroups(Name.Label, Whitespace, Operator),
             "operands"),
            # an op with no results at the start of a line (return, continue, yield, entry)
            (r"^([ \t]*)(?=[a-z_])", Whitespace, "opname"),
            include("operands"),
        ],
        "opname": [
            (r"[a-z_][\w.]*", _op_name, "#pop"),
            default("#pop"),  # not an op after all: the operand rules take it
        ],
        "operands": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (_LOC, Comment.Special),  # source locations: metadata, shown dimmed
            (_SSA, Name.Variable),
            (r"\^[\w$.-]+", Name.Label),  # block labels
            (r"@[\w$.-]+|@" + _STRING, Name.Function),  # symbols: @kernel_name
            (r"#[\w$.-]+", Name.Label),  # attribute aliases: #loc12, #cuda_tile.di_loc
            (_STRING, String.Double),
            # container types: tile<...>, ptr<...>, tensor_view<...>, partition_view<...>
            (r"\b[a-z_]\w*(?=<)", Keyword.Type),
            (r"-?0x[0-9a-fA-F]+", Number.Hex),  # before shapes: 0xff is not a 0-dim shape
            # shapes: 128x64xf32 (dims before an element type), ?x?, 64x32
            (r"((?:\d+|\?)(?:x(?:\d+|\?))*x)(?=[a-z?])(" + _ELEMENT_TYPE + r"|[a-z_]\w*(?=<))?",
             bygroups(Number.Integer, Keyword.Type)),
            (r"\d+(?:x\d+)+\b", Number.Integer),
            (r"\b" + _ELEMENT_TYPE, Keyword.Type),
            # `name = value` / `name=value` attributes (identifiers followed by =, not ==)
            (r"\b([a-z_]\w*)([ \t]*)(=)(?!=)", bygroups(Name.Attribute, Whitespace, Operator)),
            (r"\btoken\b", Keyword.Type),
            (r"-?\d+\.\d*(?:[eE][+-]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"\b(?:true|false|unknown|inf|nan)\b", Keyword.Constant),
            (r"[a-zA-Z_][\w.]*", Name),  # flags and enum words: weak, signed, less_than
            (r"->", Operator),
            (r"[=+*/-]", Operator),
            (r"[()\[\]{}<>,:?]", Punctuation),
        ],
    }


class CuTileIRLexer(RegexLexer):
    """cuTile's Python-level IR as logged with ``CUDA_TILE_LOGS=CUTILEIR``."""

    name = "cuTile IR"
    aliases: ClassVar[list[str]] = ["cutile-ir", "cutileir"]
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = ["text/x-cutile-ir"]

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"^=+.*?=+[ \t]*$", Comment.Preproc),  # "==== CuTile IR for f ====" banner
            (r"(?://|#).*?$", Comment.Single),  # tile_lab appends "// line N" per op
            (r"\b(?:do|yield|return|const|for|if|else|loop|while|continue|break|in)\b",
             Keyword),
            # `$57: Type = op(` — the op name after '='
            (r"(=)([ \t]*)([a-z_]\w*)(?=\()", bygroups(Operator, Whitespace, Name.Function)),
            (r"\$[\w.]+", Name.Variable),
            (r"\b(?:Tile|Array|PartitionView|TiledView|Token|List|Tuple|pointer|"
             r"tile_shape|order|padding_mode)\b(?=[\[=])", Keyword.Type),
            (r"\b(?:Tile|Array|PartitionView|TiledView|Token|List|Tuple)\b", Keyword.Type),
            (r"\b(?:u?int(?:8|16|32|64)|float(?:8_\w+|16|32|64)|bfloat16|tfloat32|bool_?)\b",
             Keyword.Type),
            (r"\b([a-z_]\w*)(=)(?!=)", bygroups(Name.Attribute, Operator)),
            (r'"(?:[^"\\]|\\.)*"', String.Double),
            (r"'(?:[^'\\]|\\.)*'", String.Single),
            (r"-?0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d*(?:[eE][+-]?\d+)?|-?inf\b|\bnan\b", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"\b(?:None|True|False)\b", Keyword.Constant),
            (r"[A-Za-z_][\w.]*", Name),
            (r"[=+*/<>!-]", Operator),
            (r"[()\[\]{},:?]", Punctuation),
        ],
    }


# Registers: R7, RZ, UR4, URZ, P0, PT, UP0, UPT, B0, SR_TID.X, SRZ — with an optional
# .reuse / .64 / .H1 / .X4 suffix.
_SASS_REGISTER = (r"\b(?:U?R(?:\d+|Z)|U?P(?:\d+|T)|B\d+|SRZ|SR_[A-Za-z0-9_]+(?:\.[XYZ])?)"
                  r"(?:\.[A-Za-z0-9_]+)*\b")


class SassLexer(RegexLexer):
    """NVIDIA SASS as printed by ``nvdisasm`` (or ``cuobjdump -sass``)."""

    name = "NVIDIA SASS"
    # Never "sass": Pygments uses that alias for the CSS preprocessor language.
    aliases: ClassVar[list[str]] = ["nvsass", "nvidia-sass", "cuda-sass"]
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = ["text/x-nvidia-sass"]

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r"//##.*?$", Comment.Special),  # line info: //## File "k.py", line 12
            (r"//.*?$", Comment.Single),
            # instruction address: /*0a30*/ — then the instruction itself
            (r"/\*[0-9a-fA-F]{4,}\*/", Comment.Special, "instruction"),
            (r"/\*.*?\*/", Comment.Multiline),  # encodings of nvdisasm -hex, other comments
            (r"^([\w.$]+)(:)", bygroups(Name.Label, Punctuation)),  # .L_x_3:  kernel:
            (r"\.[\w.]+", Keyword.Pseudo, "directive"),  # .section .text..., .align 128
            (r"[{}]", Punctuation),  # dual-issue braces of older architectures
        ],
        "directive": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r'@"[^"\n]*"', String.Double),
            (r"@\w+", Name.Attribute),
            (r'"[^"\n]*"', String.Double),
            (r"0x[0-9a-fA-F]+", Number.Hex),
            (r"\d+", Number.Integer),
            (r"[\w.$]+", Name.Label),
            (r"[-+(),]", Punctuation),
        ],
        "instruction": [
            (r"[ \t]+", Whitespace),
            (r"\{", Punctuation),
            (r"@!?U?P(?:\d+|T)\b", Name.Decorator),  # predicate guard
            (r"([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)",
             bygroups(Keyword, Name.Attribute), ("#pop", "operands")),
            default("#pop"),
        ],
        "operands": [
            (r";", Punctuation, "#pop"),
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"/\*.*?\*/", Comment.Multiline),
            (r'\(\*".*?"\*\)', Comment.Special),  # BRX ... (*"BRANCH_TARGETS .L_x_1,..."*)
            (r"\}", Punctuation),
            # constant bank: c[0x0][0x160], cx[UR4][R2]
            (r"\bcx?\[[^\]\n]*\]\[[^\]\n]*\]", Name.Constant),
            (_SASS_REGISTER, Name.Variable),
            # memory descriptor spaces: desc[UR6][R4.64], gdesc[UR4], tmem[UR9], idesc[..]
            (r"\b[a-z]+(?=\[)", Name.Builtin),
            (r"`\(", Punctuation, "branch_target"),
            (r"[-+]?0x[0-9a-fA-F]+", Number.Hex),
            (r"[-+]?\d+\.\d+(?:e[+-]?\d+)?", Number.Float),
            (r"[-+](?:INF|QNAN|SNAN|NAN)\b", Number.Float),
            (r"[-+]?\d+", Number.Integer),
            (r"[A-Za-z_][\w.]*", Name),  # other operand keywords (e.g. SR names, enums)
            (r"\.[A-Za-z0-9_]+", Name.Attribute),  # suffix after |R2|.reuse
            (r"[-!|~+]", Operator),
            (r"[\[\](),]", Punctuation),
        ],
        "branch_target": [
            (r"[\w.$]+", Name.Label),
            (r"\)", Punctuation, "#pop"),
            (r"[ \t+\-]+", Operator),
            (r"0x[0-9a-fA-F]+", Number.Hex),
        ],
    }


class PtxLexer(PygmentsPtxLexer):
    """Pygments' PTX lexer plus guards, ``::`` qualifiers and ``|`` result pairs."""

    name = "PTX (tile_lab)"
    aliases: ClassVar[list[str]] = ["tile-lab-ptx"]  # "ptx" stays Pygments' own
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            # tileiras embeds the Tile IR in the PTX's debug info: lex it as Tile IR
            (r"(\.source_begin)((?s:.*?))(\.source_end)",
             bygroups(Keyword.Pseudo, using(TileIRLexer), Keyword.Pseudo)),
            (r"@!?%[\w$.]+", Name.Decorator),  # guard predicate: @%p1 bra ...
            # an opcode with ::-qualifiers, whole (Pygments would take "op.x:" as a label):
            # tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
            (r"[a-zA-Z_][\w$.]*(?:::[\w$.]+)+", Keyword),
            (r"::[\w$]+", Keyword.Pseudo),  # .shared::cta, .cta_group::1
            (r"\|", Operator),  # elect.sync %r21|%p2, -1;
            (r"\b_\b", Name.Builtin),  # the sink operand: mbarrier.arrive ... _, [%r28]
            inherit,
        ],
    }


def token_lines(text: str, lexer: Lexer, classify: Callable[[_TokenType], str]
                ) -> list[list[tuple[str, str]]]:
    """Lex ``text`` once (the whole text, so multi-line lexer state is right) and return, per
    text line, its ``(token class, text)`` pieces left to right (``""``: no colour). The inspect
    view's HTML (``html.highlight_lines``) and the MIME payload's token runs
    (``mime.token_runs``) are both drawn from this."""
    lines: list[list[tuple[str, str]]] = [[]]
    for ttype, value in lexer.get_tokens(text):
        cls = classify(ttype)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if piece:
                lines[-1].append((cls, piece))
    n = len(text.splitlines())
    # Pygments ends the stream with a newline; keep exactly one entry per text line.
    return (lines + [[] for _ in range(n)])[:n]
