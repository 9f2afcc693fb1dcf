"""Profiles in the inspect view: a heat gutter per line in every pane, the hovered line's
stall reasons, a table of the hottest lines, and two configs' profiles side by side.

The view is the ordinary inspect view (``render.html.inspection_html``) wrapped with a
stylesheet and two blocks; nothing in ``html.py`` changes. Its rows already carry the source
line (class ``tl-lN``) in every pane, so per-line heat is one CSS rule per hot line; SASS rows
get per-instruction heat by position (``:nth-child``), since each SASS text line is one row.

Untrusted output loses ``<style>`` (so the gutter colours and hover panel), but the hot-lines
table, its numbers and its inline-styled stall bars survive. Deterministic: no ids, no
timestamps, sorted iteration, class names from ``render.html.view_class``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..compile.artifacts import Inspection, StageText
from ..compile.stage_rows import SassRow
from ..display import renders
from ..profiling.data import (
    STALL_REASONS,
    LineProfile,
    Profile,
    ProfileComparison,
    ProfileView,
)
from .html import inspection_html, inspection_json, view_class

__all__ = ["PROFILE_MIME_TYPE", "PROFILE_SCHEMA_FILE", "aligned_profile", "heat_level",
           "profile_comparison_html", "profile_comparison_view_html", "profile_overlay_json",
           "profile_summary_html", "profile_view_bundle", "profile_view_html"]

# The overlay a front end (the JupyterLab extension) draws on the inspect view it already
# renders from the inspection's own MIME payload; see ``profile_overlay_json``.
PROFILE_MIME_TYPE = "application/vnd.tile-lab.profile.v1+json"
# The one contract for that payload (its ``inspection`` refers to mime_schema.json); the
# Python tests and the extension's tests both validate against it.
PROFILE_SCHEMA_FILE = Path(__file__).with_name("profile_schema.json")

HEAT_LEVELS = 6  # 0 = no samples, 1..5 = share of the hottest line/instruction
# (light, dark) heat colours, pale to saturated
_HEAT = (("transparent", "transparent"), ("#fde68a", "#78350f"), ("#fdba74", "#9a3412"),
         ("#fb923c", "#c2410c"), ("#f87171", "#dc2626"), ("#dc2626", "#f87171"))
# stall reason -> bar colour (both themes); the rest share one grey
_STALL_COLORS = {"long_sb": "#dc2626", "lg": "#9333ea", "wait": "#f59e0b",
                 "warpgroup_arrive": "#0891b2", "barrier": "#2563eb", "misc": "#6b7280",
                 "selected": "#16a34a", "mio": "#db2777", "short_sb": "#ea580c",
                 "branch_resolving": "#65a30d", "sleep": "#0d9488", "math": "#4f46e5",
                 "no_inst": "#a16207", "drain": "#78716c"}
_OTHER_COLOR = "#a8a29e"
_SPILL_OPCODES = ("LDL", "STL")


def heat_level(samples: int, hottest: int) -> int:
    """0 below 1% of ``hottest`` (noise a reader should not chase), else 1..5 by share of
    ``hottest`` (fifths, rounded up)."""
    if samples <= 0 or hottest <= 0 or 100 * samples < hottest:
        return 0
    return max(1, min(HEAT_LEVELS - 1, -(-samples * (HEAT_LEVELS - 1) // hottest)))


def aligned_profile(prof: Profile, insp: Inspection) -> Profile:
    """``prof`` with lines in ``insp``'s numbering: shifted when the kernel source is the
    same text at another place, else re-joined with ``insp``'s SASS by offset."""
    if prof.source == insp.source:
        return prof if prof.first_line == insp.first_line else prof.shifted_to(insp.first_line)
    return prof.with_lines(insp)


# -- the view: inspect view + heat ---------------------------------------------------------

def profile_view_html(insp: Inspection, prof: Profile, *, top: int = 8,
                      payload: dict[str, Any] | None = None) -> str:
    """The inspect view of ``insp`` with ``prof``'s heat in every pane, the hovered line's
    stall reasons, and the ``top`` hottest lines. ``payload``: the inspection payload
    (``inspection_json(insp)``) where the caller has built it already; built here once
    otherwise, and both the view's class and its panes come from it."""
    prof = aligned_profile(prof, insp)
    payload = inspection_json(insp) if payload is None else payload
    vclass = view_class(insp, payload)
    lines = prof.by_line()
    hottest = max((lp.samples for lp in lines), default=0)
    parts = [
        '<div class="tl-prof" style="contain:paint">',
        f"<style>{_view_css(vclass, insp, prof, lines, hottest)}</style>",
        _summary(prof),
        _hot_table(prof, top),
        _hover_panel(lines),
        inspection_html(insp, payload),
        "</div>",
    ]
    return "\n".join(parts)


@renders(Profile)
def profile_summary_html(prof: Profile, *, top: int = 8) -> str:
    """A profile without its kernel's panes: summary and hottest lines (``Profile``'s own
    rich display)."""
    return "\n".join(['<div class="tl-prof" style="contain:paint">', _summary(prof),
                      _hot_table(prof, top), "</div>"])


@renders(ProfileView)
def profile_view_bundle(view: ProfileView) -> dict[str, Any]:
    """The HTML view and the extension's overlay, both from one inspection payload."""
    payload = inspection_json(view.inspection)
    page = profile_view_html(view.inspection, view.profile, top=view.top, payload=payload)
    if view.compare:
        page = f"{page}\n{profile_comparison_html(view.compare)}"
    return {"text/html": page,
            PROFILE_MIME_TYPE: profile_overlay_json(view.inspection, view.profile, top=view.top,
                                                    compare=view.compare, payload=payload)}


def profile_overlay_json(insp: Inspection, prof: Profile, *, top: int = 8,
                         compare: Sequence[tuple[str, Profile]] = (),
                         payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the HTML view draws, as data for a front end that renders the inspection itself
    (``profile_schema.json`` is the contract): ``version`` (the one version field, as in
    the inspection payload), ``inspection`` (the inspect view's own MIME payload),
    ``line_heat`` / ``line_samples`` / ``line_stalls`` keyed by source line (as strings),
    ``sass_row_heat`` keyed by SASS text line index, ``hot_lines`` (hottest first),
    ``unattributed_samples``, ``metrics``, ``summary``, ``gpu``, ``collection``, and
    ``comparison`` (one entry per profile of ``compare``, lines in ``insp``'s numbering)
    when ``compare`` is given. Heat levels are 0..5 as in the HTML. ``payload``: the
    inspection payload where the caller has built it already."""
    prof = aligned_profile(prof, insp)
    lines = _hottest_lines(prof.by_line())
    hottest = max((lp.samples for lp in lines), default=0)
    sass_heat: dict[str, int] = {}
    if "sass" in insp.stages and "sass" in insp.show:
        samples = {i.offset: i.samples for i in prof.instructions if i.samples}
        top_ins = max(samples.values(), default=0)
        for row, off in enumerate(_row_offsets(insp.stages["sass"])):
            level = heat_level(samples.get(off, 0), top_ins) if off is not None else 0
            if level:
                sass_heat[str(row)] = level
    out = {
        "version": 1,
        "inspection": inspection_json(insp) if payload is None else payload,
        "total_samples": prof.total_samples,
        "unattributed_samples": prof.unattributed_samples(),
        "line_heat": {str(lp.line): heat_level(lp.samples, hottest) for lp in lines},
        "line_samples": {str(lp.line): lp.samples for lp in lines},
        "line_stalls": {str(lp.line): lp.stalls for lp in lines},
        "sass_row_heat": sass_heat,
        "hot_lines": [{"line": lp.line, "text": lp.text, "samples": lp.samples,
                       "executed": lp.executed if prof.has_executed else None,
                       "stalls": lp.stalls} for lp in prof.hot_lines(top)],
        "stall_reasons": {k: STALL_REASONS[k] for k in sorted(STALL_REASONS)},
        "metrics": {k: v for k, v in vars(prof.metrics).items()},
        "summary": prof.summary(), "gpu": prof.provenance.get("gpu"),
        "collection": prof.collection,
    }
    if compare:
        out["comparison"] = [_comparison_entry(label, aligned_profile(p, insp))
                             for label, p in compare]
    return out


def _comparison_entry(label: str, prof: Profile) -> dict[str, Any]:
    """One column of the two-config comparison, as the HTML table's cells are made."""
    loose, spills = _loose(prof), _spills(prof)
    return {
        "label": label, "summary": prof.summary(), "gpu": prof.provenance.get("gpu"),
        "spills": _spill_text(prof), "total_samples": prof.total_samples,
        "line_samples": {str(lp.line): lp.samples for lp in _hottest_lines(prof.by_line())
                         if lp.samples},
        "line_stalls": {str(lp.line): lp.stalls for lp in _hottest_lines(prof.by_line())
                        if lp.samples},
        "unattributed": _group_json(loose), "spill_instructions": _group_json(spills),
    }


def _hottest_lines(lines: Sequence[LineProfile]) -> Sequence[LineProfile]:
    """At most the schema's limit of source lines (``line_samples``' maxProperties): the
    hottest, in line order. A real kernel has far fewer lines with samples."""
    limit = _profile_line_limit()
    if len(lines) <= limit:
        return lines
    keep = sorted(lines, key=lambda lp: (-lp.samples, lp.line))[:limit]
    return sorted(keep, key=lambda lp: lp.line)


@cache
def _profile_line_limit() -> int:
    import json

    schema = json.loads(PROFILE_SCHEMA_FILE.read_text(encoding="utf-8"))
    return int(schema["properties"]["line_samples"]["maxProperties"])


def _group_json(lp: LineProfile | None) -> dict[str, Any]:
    return {"samples": lp.samples if lp else 0, "stalls": dict(lp.stalls) if lp else {}}


def _view_css(vclass: str, insp: Inspection, prof: Profile, lines: Sequence[LineProfile],
              hottest: int) -> str:
    v = f".{vclass}"
    rules = [_heat_vars(".tl-prof")]
    for lp in lines:
        level = heat_level(lp.samples, hottest)
        if level:
            rules.append(f"{v} .tl-l{lp.line}>.tl-g{{background:var(--tl-h{level})}}")
    # SASS rows: per-instruction heat replaces the per-line heat
    if "sass" in insp.stages and "sass" in insp.show:
        rules.append(f"{v} .tl-pane-sass .tl-ln>.tl-g{{background:none}}")
        st = insp.stages["sass"]
        row_of = {off: i for i, off in enumerate(_row_offsets(st))}
        samples = {i.offset: i.samples for i in prof.instructions if i.samples}
        top_ins = max(samples.values(), default=0)
        for off, n in sorted(samples.items()):
            level = heat_level(n, top_ins)
            if off in row_of and level:
                rules.append(f"{v} .tl-pane-sass .tl-code>:nth-child({row_of[off] + 1})>.tl-g"
                             f"{{background:var(--tl-h{level})}}")
    # the hovered line's stall bars
    rules.append(".tl-prof .tl-stall{display:none}")
    rules.extend(f".tl-prof:has(.tl-l{lp.line}:hover) .tl-stall-{lp.line}{{display:block}}"
                 for lp in lines if lp.samples)
    rules.append(".tl-prof:has(.tl-ln[data-line]:hover) .tl-stall-hint{display:none}")
    return "\n".join(rules)


def _row_offsets(sass: StageText) -> list[int | None]:
    """Per text line of the SASS pane (one row each, as ``html.py`` draws it), the offset of
    the instruction on it."""
    return [r.offset if isinstance(r, SassRow) else None for r in sass.rows]


def _heat_vars(scope: str) -> str:
    from .palette import DARK_THEME_SELECTORS

    light = "".join(f"--tl-h{i}:{c[0]};" for i, c in enumerate(_HEAT))
    dark = "".join(f"--tl-h{i}:{c[1]};" for i, c in enumerate(_HEAT))
    dark_scopes = ",".join(f"{s} {scope}" for s in DARK_THEME_SELECTORS)
    return f"{scope}{{{light}}}{dark_scopes}{{{dark}}}"


# -- blocks ----------------------------------------------------------------------------------

_TABLE = "border-collapse:collapse;margin:4px 0 8px;font-size:12px"
_CELL = "padding:1px 8px;text-align:left;vertical-align:middle"
_NUM = "padding:1px 8px;text-align:right;font-variant-numeric:tabular-nums"
_BAR_BOX = "display:flex;width:16em;height:10px;background:rgba(128,128,128,.15)"


def _summary(prof: Profile) -> str:
    m = prof.metrics
    bits = [f"<b>{_e(prof.kernel_name)}</b>", _e(_config_text(prof.config))]
    if m.duration_ns is not None:
        bits.append(f"{m.duration_ns / 1000:,.1f} µs")
    if m.registers_per_thread is not None:
        bits.append(f"{m.registers_per_thread} registers/thread")
    if m.achieved_occupancy_pct is not None:
        theo = (f" of {m.theoretical_occupancy_pct:.1f}% theoretical"
                if m.theoretical_occupancy_pct is not None else "")
        bits.append(f"occupancy {m.achieved_occupancy_pct:.1f}%{theo}")
    if m.shared_mem_per_block_bytes is not None:
        bits.append(f"{m.shared_mem_per_block_bytes / 1024:,.1f} KiB shared/block")
    spill = _spill_text(prof)
    if spill:
        bits.append(f'<span class="tl-spill" style="color:#dc2626">{_e(spill)}</span>')
    bits.append(f"{prof.total_samples:,} stall samples")
    where = [prof.provenance.get("gpu"), prof.collection.get("tool"),
             prof.collection.get("ncu_version"), prof.collection.get("plan")]
    if prof.provenance.get("sm_clock_mhz"):
        where.append(f"SM {prof.provenance['sm_clock_mhz']:.0f} MHz at start")
    head = " · ".join(bits)
    tail = _e(" · ".join(str(w) for w in where if w))
    return (f'<div class="tl-prof-head" style="font-family:var(--jp-ui-font-family,sans-serif);'
            f'margin:2px 0 4px">{head}<br><span style="opacity:.7">{tail}</span></div>')


def _spill_text(prof: Profile) -> str:
    m = prof.metrics
    if not (m.spill_loads or m.spill_stores):
        return ""
    at = sum(i.samples for i in prof.instructions if i.opcode in _SPILL_OPCODES)
    total = prof.total_samples
    share = f", {100 * at / total:.0f}% of samples at them" if total else ""
    frame = f", {m.stack_frame_bytes:,} B stack/thread" if m.stack_frame_bytes else ""
    return f"spills: {m.spill_stores:,} STL + {m.spill_loads:,} LDL{frame}{share}"


def _hot_table(prof: Profile, top: int) -> str:
    total = prof.total_samples
    rows = []
    for lp in prof.hot_lines(top):
        rows.append(_hot_row(f"{lp.line}", lp.text, lp.samples, total, lp.stalls,
                             lp.executed if prof.has_executed else None, lp.line))
    loose = prof.unattributed_samples()
    if loose:
        stalls: dict[str, int] = {}
        for i in prof.instructions:
            if i.line is None:
                for k, n in i.stalls.items():
                    stalls[k] = stalls.get(k, 0) + n
        rows.append(_hot_row("–", "(instructions with no source line)", loose, total,
                             stalls, 0 if prof.has_executed else None, None))
    if not rows:
        return '<div class="tl-prof-empty">(no stall samples in this profile)</div>'
    execd = f'<th style="{_NUM}">executed</th>' if prof.has_executed else ""
    head = (f'<tr><th style="{_CELL}">line</th><th style="{_CELL}">source</th>'
            f'<th style="{_NUM}">samples</th><th style="{_NUM}">share</th>{execd}'
            f'<th style="{_CELL}">stall reasons</th></tr>')
    return (f'<table class="tl-hot" style="{_TABLE}"><caption style="text-align:left;'
            f'font-weight:600">Hottest source lines (warp-stall samples)</caption>'
            f"{head}{''.join(rows)}</table>")


def _hot_row(label: str, text: str, samples: int, total: int, stalls: Mapping[str, int],
             executed: int | None, line: int | None) -> str:
    attrs = f' class="tl-ln tl-l{line}" data-line="{line}"' if line is not None else ""
    share = f"{100 * samples / total:.1f}%" if total else "–"
    count = f"{executed:,}" if executed else ""
    execd = "" if executed is None else f'<td style="{_NUM}">{count}</td>'
    return (f"<tr{attrs}><td style=\"{_NUM}\">{label}</td>"
            f'<td style="{_CELL}"><code>{_e(text[:60])}</code></td>'
            f'<td style="{_NUM}">{samples:,}</td><td style="{_NUM}">{share}</td>{execd}'
            f'<td style="{_CELL}">{_stall_bar(stalls, samples)}</td></tr>')


def _stall_bar(stalls: Mapping[str, int], samples: int, *, legend: int = 2,
               fill: float = 1.0) -> str:
    """A stacked bar of the stall reasons (inline styles) filling ``fill`` of its box, then
    the top reasons in words."""
    if samples <= 0:
        return ""
    ranked = sorted(stalls.items(), key=lambda kv: (-kv[1], kv[0]))
    segs = "".join(
        f'<span title="{_e(k)}: {n:,}" style="width:{100 * fill * n / samples:.2f}%;'
        f'background:{_STALL_COLORS.get(k, _OTHER_COLOR)}"></span>'
        for k, n in ranked if n)
    words = ", ".join(f"{k} {100 * n / samples:.0f}%" for k, n in ranked[:legend])
    return (f'<span style="display:inline-flex;align-items:center;gap:6px">'
            f'<span style="{_BAR_BOX}">{segs}</span><span>{_e(words)}</span></span>')


def _hover_panel(lines: Sequence[LineProfile]) -> str:
    blocks = ['<div class="tl-stall-hint" style="opacity:.7">Hover a line in any pane to '
              "see its stall reasons.</div>"]
    for lp in lines:
        if not lp.samples:
            continue
        items = "".join(
            f'<div style="display:flex;gap:6px;align-items:center">'
            f'<span style="width:12em">{_e(k)}</span>'
            f'<span style="display:inline-block;height:9px;width:{12 * n / lp.samples:.2f}em;'
            f'background:{_STALL_COLORS.get(k, _OTHER_COLOR)}"></span>'
            f'<span>{n:,} ({100 * n / lp.samples:.0f}%) · {_e(STALL_REASONS.get(k, ""))}</span>'
            f"</div>" for k, n in lp.top_stalls(6))
        blocks.append(f'<div class="tl-stall tl-stall-{lp.line}"><b>line {lp.line}</b> '
                      f"<code>{_e(lp.text[:70])}</code>: {lp.samples:,} samples{items}</div>")
    # a fixed height (the hint plus a line's header and its six reasons, unwrapped): a panel
    # that grew with the hovered line's reasons pushed the panes below it down, out from
    # under the pointer, so another line took the hover and the view flickered
    return (f'<div class="tl-stalls" style="height:11.8em;overflow:hidden;margin:4px 0;'
            f'white-space:nowrap;font-family:var(--jp-ui-font-family,sans-serif);'
            f'font-size:12px;line-height:1.4">{"".join(blocks)}</div>')


# -- two configs side by side ----------------------------------------------------------------

def profile_comparison_html(profiles: Sequence[tuple[str, Profile]]) -> str:
    """Profiles of the same kernel under different configs (e.g. a tuning result's best and
    cliff configs), side by side: summaries, then per source line each one's share of its
    samples and top stall reasons."""
    cols = "".join(f'<div style="flex:1 1 28em;min-width:24em"><div style="font-weight:600">'
                   f"{_e(label)}</div>{_summary(p)}</div>" for label, p in profiles)
    per = [{lp.line: lp for lp in p.by_line()} for _, p in profiles]
    lines = sorted(set().union(*per))
    head = "".join(f'<th style="{_CELL}">{_e(label)}</th>' for label, _ in profiles)
    rows = []
    texts = {lp.line: lp.text for d in per for lp in d.values()}
    for line in lines:
        cells = []
        for (_, p), d in zip(profiles, per):
            lp = d.get(line)
            cells.append(f'<td style="{_CELL}">{_share_cell(lp, p.total_samples)}</td>')
        rows.append(f'<tr><td style="{_NUM}">{line}</td><td style="{_CELL}"><code>'
                    f"{_e(texts[line][:60])}</code></td>{''.join(cells)}</tr>")
    loose = "".join(
        f'<td style="{_CELL}">{_share_cell(_loose(p), p.total_samples)}</td>'
        for _, p in profiles)
    rows.append(f'<tr><td style="{_NUM}">–</td><td style="{_CELL}">(no source line)</td>'
                f"{loose}</tr>")
    spill = "".join(f'<td style="{_CELL}">{_share_cell(_spills(p), p.total_samples)}</td>'
                    for _, p in profiles)
    rows.append(f'<tr><td style="{_NUM}">–</td><td style="{_CELL}">spill instructions '
                f"(LDL/STL, any line)</td>{spill}</tr>")
    table = (f'<table class="tl-compare" style="{_TABLE}"><tr><th style="{_CELL}">line</th>'
             f'<th style="{_CELL}">source</th>{head}</tr>{"".join(rows)}</table>')
    return (f'<div class="tl-prof-compare" style="contain:paint"><div style="display:flex;gap:16px;'
            f'flex-wrap:wrap">{cols}</div>{table}</div>')


@renders(ProfileComparison)
def profile_comparison_view_html(comparison: ProfileComparison) -> str:
    """:func:`profile_comparison_html` of ``comparison``'s profiles."""
    return profile_comparison_html(comparison.profiles)


def _loose(p: Profile) -> LineProfile | None:
    return _group(p, [i for i in p.instructions if i.line is None])


def _spills(p: Profile) -> LineProfile | None:
    return _group(p, [i for i in p.instructions if i.opcode in _SPILL_OPCODES])


def _group(p: Profile, loose: list[Any]) -> LineProfile | None:
    n = sum(i.samples for i in loose)
    if not n:
        return None
    stalls: dict[str, int] = {}
    for i in loose:
        for k, c in i.stalls.items():
            stalls[k] = stalls.get(k, 0) + c
    return LineProfile(0, "", n, 0, len(loose), stalls)


def _share_cell(lp: LineProfile | None, total: int) -> str:
    """The line's share of the profile's samples, as a number and as the length of its
    stall-reason bar."""
    if lp is None or not lp.samples or not total:
        return ""
    share = lp.samples / total
    return (f'<span style="display:inline-block;width:3.5em;text-align:right">'
            f"{100 * share:.1f}%</span> " + _stall_bar(lp.stalls, lp.samples, fill=share))


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()
                     if not (isinstance(v, str) and "[" in v))


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)

