"""The inspect view: an :class:`~tile_lab.compile.artifacts.Inspection` as line-linked HTML panes.

Panes sit side by side (source · cuTile IR · Tile IR · PTX · SASS · remarks, as picked by
``Inspection.show``). Every IR/SASS line that the compiler tied to a source line carries
``data-line="N"``, the class ``tl-lN`` and a colour-slot class ``tl-cK``; the stylesheet
turns those into a colour band per source line and highlights every line of the same
source line on hover, with CSS ``:has()`` rules generated only for the lines present, so
no script is needed for it. A small inline script adds click-to-pin (and scrolls the other
panes to the pinned line) as progressive enhancement where the front end runs scripts.

What survives where: JupyterLab runs inline styles and scripts only for *trusted* output
(a cell the user just ran, or a notebook they saved). Untrusted output is sanitized:
``<style>``, ``<script>`` and ``data-*`` attributes are removed, while classes and
simple inline styles stay. The few layout styles (side-by-side, scrollable panes) are
therefore inline on the containers, and every IR line also shows its source line number
in a gutter, so an untrusted view still reads correctly, just without colour.

Output is deterministic: the view's class is derived from a hash of its content (no
random ids, no timestamps), so the same Inspection renders to byte-identical HTML.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import CudaLexer, PythonLexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    String,
    _TokenType,
)

from ..compile.artifacts import MIME_TYPE, STAGES, Inspection, StageText
from ..compile.stage_rows import SassRow, prologue_rows
from ..display import renders
from .inspect_style import stylesheet as _stylesheet
from .lexers import CuTileIRLexer, PtxLexer, SassLexer, TileIRLexer, token_lines
from .mime import MIME_VERSION, TOKEN_STAGES, cut_to_limits, token_runs
from .palette import line_color_index
from .tma import TMA_OPCODES, tma_badge_html, tma_field, tma_op_html, tma_summary_html

__all__ = [
    "JSON_SCHEMA_VERSION",
    "highlight_lines",
    "inspection_html",
    "inspection_json",
    "inspection_mimebundle",
    "view_class",
]

JSON_SCHEMA_VERSION = MIME_VERSION

PANE_TITLES = {
    "source": "Source",
    "cutile": "cuTile IR",
    "ttir": "Triton IR",
    "ttgir": "TritonGPU IR",
    "tileir": "Tile IR",
    "ptx": "PTX",
    "sass": "SASS",
    "remarks": "Remarks",
}

# Token type -> short class suffix. A token takes the class of its nearest listed
# ancestor type; unlisted types (plain names, punctuation, whitespace) get no class.
_TOKEN_CLASSES: dict[_TokenType, str] = {
    Keyword: "k",
    Keyword.Type: "kt",
    Keyword.Constant: "kc",
    Keyword.Pseudo: "kp",
    Operator.Word: "k",
    Name.Function: "nf",
    Name.Class: "nf",
    Name.Variable: "nv",
    Name.Label: "nl",
    Name.Attribute: "na",
    Name.Builtin: "nb",
    Name.Decorator: "nd",
    Name.Constant: "no",
    String: "s",
    Number: "m",
    Comment: "c",
    Comment.Special: "cs",
    Comment.Preproc: "cp",
}


# Layout styles put inline on the few container elements, so the layout survives
# JupyterLab's sanitizer for untrusted output. Panes wrap onto rows rather than shrink:
# at notebook width (~900 px) two sit side by side at ~440 px each, the others below, so
# Tile IR and SASS lines stay readable; each pane scrolls its own long lines.
_STYLE_VIEW = "contain:paint;max-width:100%"
_STYLE_PANES = "display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start"
_STYLE_PANE = "flex:1 1 30em;min-width:min(30em,100%);max-width:100%"
# the source takes its natural width (its longest line and TMA badges), up to the row
_STYLE_PANE_SOURCE = "flex:1 1 auto;min-width:min(30em,100%);max-width:100%"
_STYLE_PANE_MISSING = "flex:0 1 14em;min-width:10em;max-width:18em"
_STYLE_CODE = "max-height:36em;overflow:auto;margin:0"

# What a static HTML pane draws (it has no script in untrusted output, so it cannot draw
# rows as they scroll into view as the extension does): more rows are cut with a notice
# saying how to get them; one very long row is cut with a sign saying how much is left.
# 10,000 rows open in about 0.9 s in Chromium; a GEMM's PTX, the longest real pane seen
# here, has 7,844.
HTML_MAX_ROWS = 10_000
HTML_ROW_CHARS = 2_000
HTML_MAX_REMARKS = 2_000

# Click-to-pin, scroll-to-line. Binds to its own view only (the view holding this script;
# where a page moved the script out of it, to tile_lab's HTML views, class tl-v-*), builds
# its line -> rows index once, and looks rows up by line number, never by a selector made
# from the data. Same text in every output (deterministic); harmless when run twice.
_SCRIPT = """(function(s){
var own=s&&s.closest?s.closest('.tl-view'):null;
var views=own?[own]:[].filter.call(document.querySelectorAll('.tl-view'),function(v){
return /(^| )tl-v-[0-9a-f]{12}( |$)/.test(v.className);});
views.forEach(function(v){
if(v.getAttribute('data-tl-bound'))return;v.setAttribute('data-tl-bound','1');
var idx=new Map();
v.querySelectorAll('[data-line]').forEach(function(e){
var n=e.getAttribute('data-line');if(!/^[1-9][0-9]{0,8}$/.test(n))return;
var l=idx.get(n);if(l)l.push(e);else idx.set(n,[e]);});
v.addEventListener('click',function(e){
var t=e.target&&e.target.closest?e.target.closest('[data-line]'):null;
if(!t||!v.contains(t))return;
var n=t.getAttribute('data-line'),was=v.getAttribute('data-pin')===n;
v.querySelectorAll('.tl-pin').forEach(function(x){x.classList.remove('tl-pin');});
if(was||!idx.has(n)){v.removeAttribute('data-pin');return;}
v.setAttribute('data-pin',n);
var rows=idx.get(n),own=t.closest('.tl-code'),seen=new Set();
rows.forEach(function(x){if(x.classList.contains('tl-l'+n))x.classList.add('tl-pin');
var p=x.closest('.tl-code');
if(p&&p!==own&&!seen.has(p)){seen.add(p);p.scrollTop=Math.max(0,x.offsetTop-p.clientHeight/3);}
});});});})(document.currentScript);"""


# -- public API ------------------------------------------------------------------------

def _shown(insp: Inspection) -> Inspection:
    """The Inspection restricted to the stages in ``show``: the view never reads (so never
    waits for) a stage it does not display, e.g. SASS still being disassembled."""
    from dataclasses import replace

    return replace(insp, stages={k: insp.stages[k] for k in insp.stages if k in insp.show})


def view_class(insp: Inspection, payload: dict[str, Any] | None = None) -> str:
    """Deterministic class naming this view: ``tl-v-`` + 12 hex digits of a content hash.

    The hash covers what the view shows (the JSON payload; ``payload`` where the caller has
    built it already), not the cubin: under ipykernel a cell's filename is a temp path holding
    the kernel's process id, the cubin's line info embeds that path, and the same cell must
    render the same in every session.
    """
    return _class_of(inspection_json(insp) if payload is None else payload)


def _class_of(data: dict[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"tl-v-{digest[:12]}"


def inspection_json(insp: Inspection) -> dict[str, Any]:
    """The ``application/vnd.tile-lab.v1+json`` payload: the Inspection's data without
    the cubin bytes (whose line info holds the cell's temp path, so even their size differs
    between sessions), plus the version, the colour slot of each mapped source line, the
    token runs of the Tile IR (so the extension colours lines and tokens as this view does)
    and, where the view shows Tile IR and SASS, the TMA verdict per source line (``tma``,
    drawn as badges by this view and by the extension).
    ``tile_lab/render/mime_schema.json`` describes it."""
    # Only the panes the user asked for travel in the notebook: a GEMM's SASS and PTX are
    # hundreds of KB, and a notebook stores every output it shows.
    shown = _shown(insp)
    data = shown.to_json_dict()
    data.pop("cubin", None)
    # A notebook cell's file is a temp path with a process id in it: not stable, not useful.
    data["filename"] = _display_filename(insp.filename)
    data["version"] = JSON_SCHEMA_VERSION
    data["line_colors"] = {str(k): v for k, v in _color_slots(insp).items()}
    for name, stage in data["stages"].items():
        stage.pop("name", None)  # the key already says it
        if name in TOKEN_STAGES:
            stage["tokens"] = token_runs(stage["text"], _stage_lexer(name), _token_class)
    tma = tma_field(shown)
    if tma is not None:
        data["tma"] = tma
    # The schema's size limits: what is over them is cut and the size before recorded.
    cut_to_limits(data)
    # Round-trip through JSON: tuples become lists, odd hint values become strings,
    # so the bundle is exactly what a front end receives.
    return json.loads(json.dumps(data, sort_keys=True, default=str))


def _display_filename(filename: str) -> str:
    name = filename.replace("\\", "/")
    # a notebook cell (ipykernel caches cells as <tmp>/ipykernel_<pid>/<hash>.py) or a terminal
    # IPython cell: its path is different every session, so the view names neither
    if "/ipykernel_" in name or name.startswith("<ipython-input"):
        return "<cell>"
    return name.rsplit("/", 1)[-1]


@renders(Inspection)
def inspection_mimebundle(insp: Inspection) -> dict[str, Any]:
    """``text/plain``, ``text/html`` and the tile-lab JSON, for ``_repr_mimebundle_``: the
    JSON payload is built once and the HTML drawn from it."""
    data = inspection_json(insp)
    return {
        "text/plain": repr(insp),
        "text/html": _view_html(insp, data),
        MIME_TYPE: data,
    }


def inspection_html(insp: Inspection, payload: dict[str, Any] | None = None) -> str:
    """The inspect view as one self-contained HTML fragment, drawn from ``payload``
    (``inspection_json(insp)``, built here where the caller has not built it already).

    Where the view shows Tile IR and SASS, the TMA verdict (the JSON payload's ``tma`` field,
    the very data the extension draws) is drawn too: a badge at the end of every source line
    holding a tile-space load/store, a summary under the header, TMA opcodes boxed in SASS."""
    return _view_html(insp, inspection_json(insp) if payload is None else payload)


def _view_html(insp: Inspection, data: dict[str, Any]) -> str:
    """The view drawn from ``data``, the payload ``inspection_json(insp)`` built: its hash
    names the view, its colour slots and TMA verdict are the ones drawn."""
    vclass = _class_of(data)
    # in line order, as _color_slots made them (JSON sorted the keys as text)
    slots = dict(sorted((int(line), slot) for line, slot in data["line_colors"].items()))
    tma = data.get("tma")
    panes = [_pane(insp, name, slots, tma) for name in _pane_names(insp)]
    parts = [
        f'<div class="tl-view {vclass}" style="{_STYLE_VIEW}">',
        f"<style>{_stylesheet(vclass, slots)}</style>",
        _header(insp),
        (tma_summary_html(tma) if tma else "")
        + f'<div class="tl-panes" style="{_STYLE_PANES}">',
        *panes,
        "</div>",
        f"<script>{_SCRIPT}</script>",
        "</div>",
    ]
    return "\n".join(parts)


def highlight_lines(text: str, lexer: Lexer,
                    boxed: frozenset[str] = frozenset()) -> list[str]:
    """One HTML fragment per text line (escaped, with ``tl-t*`` token classes), from one
    lexing of the whole text. Coloured tokens whose text is in ``boxed`` (TMA opcodes in
    SASS) are drawn boxed."""
    out = []
    for pieces in token_lines(text, lexer, _token_class):
        parts = []
        for cls, piece in pieces:
            if cls and piece in boxed:
                parts.append(tma_op_html(cls, piece))
            else:
                esc = html.escape(piece, quote=False)
                parts.append(f'<span class="tl-t{cls}">{esc}</span>' if cls else esc)
        out.append("".join(parts))
    return out


# -- panes -----------------------------------------------------------------------------

def _pane_names(insp: Inspection) -> list[str]:
    """Panes to draw, in the fixed stage order, from ``insp.show``. Names that are not
    panes of this view (e.g. ``partition``, drawn by the diagram renderer) are skipped."""
    wanted = set(insp.show)
    return [name for name in STAGES if name in wanted]


def _color_slots(insp: Inspection) -> dict[int, int]:
    """Palette slot per source line that some stage or remark maps to, assigned in
    source order (first appearance in the kernel), so neighbouring lines differ."""
    mapped = {line for st in _shown(insp).stages.values() for line in st.line_map
              if line is not None}
    mapped |= {r.line for r in insp.remarks if r.line is not None}
    return line_color_index(sorted(mapped))


def _source_lexer(insp: Inspection) -> Lexer:
    name = insp.filename.lower()
    if name.endswith((".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp")) or (
            "__tile_global__" in insp.source or insp.source.lstrip().startswith("#include")):
        return CudaLexer(stripnl=False)
    return PythonLexer(stripnl=False)


def _stage_lexer(name: str) -> Lexer:
    if name in ("tileir", "ttir", "ttgir"):  # all MLIR: ops, types, attributes alike
        return TileIRLexer(stripnl=False)
    if name == "sass":
        return SassLexer(stripnl=False)
    if name == "cutile":
        return CuTileIRLexer(stripnl=False)
    return PtxLexer(stripnl=False)


def _pane(insp: Inspection, name: str, slots: dict[int, int],
          tma: dict[str, Any] | None = None) -> str:
    title = PANE_TITLES[name]
    if name == "source":
        badges = {t["line"]: tma_badge_html(t) for t in tma["lines"]} if tma else {}
        body = _source_code(insp, slots, badges)
    elif name == "remarks":
        body = _remarks(insp, slots)
        title = f"{title} ({len(insp.remarks)})"
    elif name in insp.stages:
        st = insp.stages[name]
        text = _compact_sass(st) if name == "sass" else st.text
        prologue = prologue_rows(st.rows) if name == "tileir" else frozenset()
        boxed = frozenset(TMA_OPCODES) if name == "sass" and tma else frozenset()
        body = _stage_code(text, st.line_map, _stage_lexer(name), slots, prologue,
                           f'insp.stages["{name}"].text', boxed)
        title = f"{title} ({len(st.line_map):,} lines)"
    else:  # asked for but not produced: a narrow pane that says why
        return (f'<section class="tl-pane tl-pane-{name} tl-pane-missing" '
                f'style="{_STYLE_PANE_MISSING}"><div class="tl-title">{html.escape(title)}'
                f'</div><div class="tl-missing">{html.escape(_missing_reason(name))}</div>'
                f"</section>")
    style = _STYLE_PANE_SOURCE if name == "source" else _STYLE_PANE
    return (f'<section class="tl-pane tl-pane-{name}" style="{style}">'
            f'<div class="tl-title">{html.escape(title)}</div>{body}</section>')


def _missing_reason(name: str) -> str:
    return f"(no {PANE_TITLES[name]} in this inspection)"


def _compact_sass(sass: StageText) -> str:
    """Drop nvdisasm's fixed-width padding around instruction addresses (about 30
    blank columns per line), keeping predicates and opcodes aligned. Display only."""
    rows = sass.rows
    # addresses as nvdisasm pads them: "/*0070*/" (4 or more hex digits), then spaces
    padded = [r for r in rows if isinstance(r, SassRow) and len(r.address) >= 8 and r.gap]
    if not padded:
        return sass.text
    cut = min(len(r.gap) for r in padded) - 1
    out = [r.text for r in rows]
    for r in padded:
        out[r.index] = "  " + r.address + r.text[r.address_end + cut:]
    return "\n".join(out)


def _line_span(line: int | None, slots: dict[int, int], gutter: str, code: str) -> str:
    # the space inside the gutter separates it from the code even where CSS is stripped
    gut = f'<span class="tl-g">{gutter} </span>'
    if line is None:
        return f'<span class="tl-ln">{gut}{code}\n</span>'
    classes = f"tl-ln tl-l{line}"
    if line in slots:
        classes += f" tl-c{slots[line]}"
    return f'<span class="{classes}" data-line="{line}">{gut}{code}\n</span>'


def _capped(text: str) -> tuple[str, dict[int, int], int]:
    """``text`` cut to what a static pane draws: its first HTML_MAX_ROWS lines, each at most
    HTML_ROW_CHARS characters. Returns (text, line index -> characters left out, lines)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    if total <= HTML_MAX_ROWS and all(len(x) <= HTML_ROW_CHARS for x in lines):
        return text, {}, total
    lines = lines[:HTML_MAX_ROWS]
    more = {i: len(x) - HTML_ROW_CHARS for i, x in enumerate(lines) if len(x) > HTML_ROW_CHARS}
    return "\n".join(x[:HTML_ROW_CHARS] for x in lines) + "\n", more, total


def _more_sign(n: int) -> str:
    return f'<span class="tl-more"> … {n:,} more characters</span>'


def _cut_notice(shown: int, total: int, where: str) -> str:
    """The line above a pane cut to HTML_MAX_ROWS rows."""
    return (f'<div class="tl-notice" style="padding:1px 6px;border-left:3px solid #D55E00">'
            f"showing {shown:,} of {total:,} lines · the whole text: "
            f"<code>{html.escape(where)}</code></div>")


def _source_code(insp: Inspection, slots: dict[int, int], badges: dict[int, str]) -> str:
    """The source pane; ``badges``: line number -> the TMA badge ending that line."""
    numbered = insp.source_lines
    text, more, total = _capped(insp.source)
    fragments = highlight_lines(text, _source_lexer(insp))
    width = len(str(numbered[-1][0])) if numbered else 1
    rows = [_line_span(no, slots, str(no).rjust(width),
                       frag + (_more_sign(more[i]) if i in more else "") + badges.get(no, ""))
            for i, ((no, _text), frag) in enumerate(zip(numbered, fragments))]
    notice = _cut_notice(len(rows), total, "insp.source") if total > len(rows) else ""
    return f'{notice}<pre class="tl-code" style="{_STYLE_CODE}">{"".join(rows)}</pre>'


def _stage_code(text: str, line_map: Sequence[int | None], lexer: Lexer,
                slots: dict[int, int], prologue: frozenset[int] = frozenset(),
                where: str = "the stage's text", boxed: frozenset[str] = frozenset()) -> str:
    text, more, total = _capped(text)
    fragments = highlight_lines(text, lexer, boxed)
    mapped = [ln for ln in line_map[: len(fragments)] if ln is not None]
    width = len(str(max(mapped))) if mapped else 1
    rows = []
    for i, frag in enumerate(fragments):
        line = line_map[i] if i < len(line_map) else None
        if i in more:
            frag += _more_sign(more[i])
        if i in prologue:
            rows.append(_prologue_span(line, "·".rjust(width), frag))
            continue
        gutter = str(line).rjust(width) if line is not None else " " * width
        rows.append(_line_span(line, slots, gutter, frag))
    notice = _cut_notice(len(rows), total, where) if total > len(rows) else ""
    return f'{notice}<pre class="tl-code" style="{_STYLE_CODE}">{"".join(rows)}</pre>'


def _prologue_span(line: int | None, gutter: str, code: str) -> str:
    where = f" (tied to line {line}, the def)" if line is not None else ""
    tip = ("argument prologue" + where + ": what cuTile assumed of the arguments "
           "(divisibility, bounds) and the tensor views built on them")
    # data-line stays (the rows are the def line's), the tl-lN class does not: hovering
    # the def line then lights up the signature only
    data = f' data-line="{line}"' if line is not None else ""
    return (f'<span class="tl-ln tl-pro"{data} title="{html.escape(tip, quote=True)}">'
            f'<span class="tl-g">{gutter} </span>{code}\n</span>')


def _remarks(insp: Inspection, slots: dict[int, int]) -> str:
    if not insp.remarks:
        return f'<pre class="tl-code tl-missing" style="{_STYLE_CODE}">(no remarks)</pre>'
    items = []
    for r in insp.remarks[:HTML_MAX_REMARKS]:
        kind = html.escape(r.kind)
        head = f'<span class="tl-kind tl-kind-{kind}">{kind}</span>'
        if r.category:
            head += f' <span class="tl-cat">[{html.escape(r.category)}]</span>'
        msg = html.escape(r.message)
        if r.line is None:
            items.append(f'<li class="tl-rm">{head} {msg}</li>')
            continue
        classes = f"tl-rm tl-ln tl-l{r.line}"
        if r.line in slots:
            classes += f" tl-c{slots[r.line]}"
        where = f"line {r.line}" + (f":{r.col}" if r.col is not None else "")
        items.append(f'<li class="{classes}" data-line="{r.line}">{head} '
                     f'<a class="tl-link" title="highlight line {r.line}">{where}</a> {msg}</li>')
    n = len(insp.remarks)
    notice = (_cut_notice(HTML_MAX_REMARKS, n, "insp.remarks").replace(" lines ·", " remarks ·")
              if n > HTML_MAX_REMARKS else "")
    return (f'{notice}<ul class="tl-code tl-remarks" style="{_STYLE_CODE}">'
            f'{"".join(items)}</ul>')


def _header(insp: Inspection) -> str:
    bits = [f'<b class="tl-kernel">{html.escape(insp.kernel_name)}</b>',
            html.escape(insp.arch), html.escape(insp.signature)]
    if insp.hints:
        bits.append(html.escape(", ".join(f"{k}={v}" for k, v in sorted(insp.hints.items()))))
    if insp.versions:
        bits.append(html.escape(" ".join(f"{k} {v}" for k, v in sorted(insp.versions.items()))))
    return f'<div class="tl-head">{" · ".join(bits)}</div>'


# -- styles ----------------------------------------------------------------------------

def _token_class(ttype: _TokenType) -> str:
    while ttype is not None:
        cls = _TOKEN_CLASSES.get(ttype)
        if cls is not None:
            return cls
        ttype = ttype.parent
    return ""
