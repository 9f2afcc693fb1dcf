"""HTML for a :class:`~tile_lab.triton.pair.PortComparison` (``tile_lab.compare`` of a Triton
kernel and its cuTile port): one table of what each compiled to (registers, shared memory,
SASS instruction mix), the outputs' agreement as the crosscheck draws it, the GPU timings
where there are any, and the two inspect views (source and SASS) side by side.

Deterministic and escaped; the nested views are the inspect view's own HTML.
"""

from __future__ import annotations

import html
from typing import Any

from ..display import renders
from ..triton.pair import PortComparison, PortSide
from ..triton.resources import MIX_CLASSES
from .crosscheck import crosscheck_html
from .html import inspection_html

__all__ = ["port_comparison_html", "port_comparison_mimebundle"]

_TD = "<td style='text-align:right;padding:1px 8px'>"
_TH = "<th style='text-align:left;padding:1px 8px'>"
_TL = "<td style='text-align:left;padding:1px 8px'>"
_PANES = ("source", "sass")


def _num(v: Any, unit: str = "") -> str:
    return "?" if v is None else f"{v:,}{unit}"


def _rows(t: PortSide, c: PortSide) -> list[tuple[str, str, str]]:
    rows = [("kernel", t.inspection.kernel_name, c.inspection.kernel_name),
            ("signature", t.inspection.signature, c.inspection.signature),
            ("grid", str(t.grid) if t.grid else "-", str(c.grid) if c.grid else "-"),
            ("registers / thread", _num(t.resources.registers), _num(c.resources.registers)),
            ("shared memory / block", _num(t.resources.shared_bytes, " B"),
             _num(c.resources.shared_bytes, " B")),
            ("stack frame", _num(t.resources.frame_bytes, " B"),
             _num(c.resources.frame_bytes, " B")),
            ("spill loads / stores", f"{t.resources.spill_loads} / {t.resources.spill_stores}",
             f"{c.resources.spill_loads} / {c.resources.spill_stores}"),
            ("SASS instructions", _num(t.instructions), _num(c.instructions))]
    for name in [n for n, _ in MIX_CLASSES] + ["other"]:
        if name in t.mix or name in c.mix:
            rows.append((f"\u2003{name}", _num(t.mix.get(name, 0)), _num(c.mix.get(name, 0))))
    return rows


def _resource_table(cmp: PortComparison) -> str:
    e = html.escape
    t, c = cmp.triton, cmp.cutile
    head = (f"<tr>{_TH}</th>{_TH}Triton ({e(t.inspection.arch)})</th>"
            f"{_TH}cuTile ({e(c.inspection.arch)})</th></tr>")
    body = "".join(f"<tr>{_TL}{e(k)}</td>{_TD}{e(a)}</td>{_TD}{e(b)}</td></tr>"
                   for k, a, b in _rows(t, c))
    return f"<table class='tl-port-table'><thead>{head}</thead><tbody>{body}</tbody></table>"


def _timing_table(timing: dict[str, Any]) -> str:
    e = html.escape
    head = "".join(f"{_TH}{h}</th>" for h in (
        "regime", "Triton median", "cuTile median", "cuTile / Triton (95% CI)", "SM clock"))
    body = ""
    for r in timing["rows"]:
        clocks = f"{r['triton_sm_mhz'] or '?'} / {r['cutile_sm_mhz'] or '?'} MHz"
        body += (f"<tr>{_TL}{e(r['regime'])}</td>{_TD}{r['triton_us']:.1f} us</td>"
                 f"{_TD}{r['cutile_us']:.1f} us</td>{_TD}{r['ratio']:.3f} "
                 f"({r['ci_low']:.3f}-{r['ci_high']:.3f})</td>{_TD}{e(clocks)}</td></tr>")
    return (f"<div class='tl-port-timing'><b>On {e(timing['device'])}</b> "
            f"(compare_timed, {e(timing['mode'])} L2)<table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def port_comparison_html(cmp: PortComparison) -> str:
    """The pair as one HTML fragment (see the module docstring)."""
    e = html.escape
    parts = [f"<div class='tl-port'><div class='tl-port-summary'><b>{e(cmp.summary())}</b>"
             "</div>", _resource_table(cmp)]
    if cmp.outputs is not None:
        parts.append(f"<div class='tl-port-outputs'>{crosscheck_html(cmp.outputs)}</div>")
    if cmp.timing is not None:
        parts.append(_timing_table(cmp.timing))
    parts += [f"<div class='tl-port-note'>{e(n)}</div>" for n in cmp.notes]
    col = "flex:1 1 28em;min-width:min(28em,100%);max-width:100%"
    views = "".join(
        f"<div class='tl-port-side' style='{col}'><div><b>{e(s.language)}: "
        f"{e(s.inspection.kernel_name)}</b></div>"
        f"{inspection_html(s.inspection.with_show(_PANES))}</div>"
        for s in (cmp.triton, cmp.cutile))
    parts.append(f"<div class='tl-port-views' style='display:flex;flex-wrap:wrap;gap:12px'>"
                 f"{views}</div></div>")
    return "".join(parts)


@renders(PortComparison)
def port_comparison_mimebundle(cmp: PortComparison) -> dict[str, Any]:
    """``text/html`` and the comparison's JSON (``application/json``) for a front end."""
    return {"text/html": port_comparison_html(cmp), "application/json": cmp.to_json()}
