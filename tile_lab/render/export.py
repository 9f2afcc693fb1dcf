"""The page ``tile_lab.export`` writes: tile_lab's views in one self-contained HTML file that
opens from disk, offline, in any browser (no Jupyter, no server, no network).

Each section is the HTML of the view's own renderer (``render.html``, ``render.profile_view``,
the diagrams, the sanitizer report), called as the notebook calls it, so the page shows what
the notebook shows; this module adds only the page around them, a measurements table and the
text-only view of a notebook's profile payload.

Safety, as for the JupyterLab extension: every string from data goes through the renderers'
escaping (text only, never markup), and the page carries a strict Content-Security-Policy:
nothing may be fetched (``default-src 'none'``), and the only scripts that run are tile_lab's
own renderer scripts, allowed by hash. Which scripts are tile_lab's own is found by rendering
a fixed, data-free inspection through the same renderer (:func:`known_scripts`); any other
``<script>`` element is removed before the page is written. Deterministic: no timestamps.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

__all__ = ["CSP", "known_scripts", "measurements_html", "note_html", "overlay_html",
           "page_html", "provenance_html", "script_hashes"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src 'none'; "
       "connect-src 'none'; base-uri 'none'; form-action 'none'; script-src {scripts}")
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_VIEW_CLASS = re.compile(r"tl-v-[0-9a-f]{12}")

_PAGE_CSS = """
:root{color-scheme:light}
body{margin:16px 24px;background:#fff;color:#222;font:14px/1.45 system-ui,sans-serif}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:28px 0 8px;padding-top:8px;border-top:1px solid #ddd}
.tl-export-meta{color:#555;margin:0 0 12px}
.tl-export-toc{margin:0 0 8px;padding-left:20px}
.tl-export-note{color:#555;white-space:pre-wrap}
table.tl-export-table{border-collapse:collapse;font-size:12px;margin:4px 0}
table.tl-export-table th,table.tl-export-table td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}
table.tl-export-table th{background:#f3f4f6}
.tl-export-flag{color:#b91c1c;font-weight:600}
svg{max-width:100%;height:auto}
"""


# -- the page --------------------------------------------------------------------------

def page_html(title: str, sections: Sequence[tuple[str, str]], *,
              meta: str = "") -> str:
    """The whole document: ``title``, a line of ``meta`` text, a table of contents and one
    ``<section>`` per ``(heading, fragment)``; fragments are renderer output (HTML)."""
    body = [f'<section class="tl-export-section" id="s{i}"><h2>{html.escape(head)}</h2>\n'
            f"{fragment}\n</section>" for i, (head, fragment) in enumerate(sections, 1)]
    text = _only_known_scripts("\n".join(body))
    hashes = script_hashes(text)
    csp = CSP.format(scripts=" ".join(f"'{h}'" for h in hashes) or "'none'")
    toc = "".join(f'<li><a href="#s{i}">{html.escape(head)}</a></li>'
                  for i, (head, _) in enumerate(sections, 1))
    return "\n".join([
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_PAGE_CSS}</style>",
        "</head><body>",
        f'<h1>{html.escape(title)}</h1><p class="tl-export-meta">{html.escape(meta)}</p>',
        f'<ol class="tl-export-toc">{toc}</ol>' if len(sections) > 1 else "",
        text,
        "</body></html>",
    ]) + "\n"


def script_hashes(page: str) -> list[str]:
    """The CSP ``sha256-…`` source of every ``<script>`` in ``page``, in order, once each."""
    out: dict[str, None] = {}
    for m in _SCRIPT.finditer(page):
        digest = hashlib.sha256(m.group(1).encode("utf-8")).digest()
        out.setdefault("sha256-" + base64.b64encode(digest).decode("ascii"), None)
    return list(out)


@cache
def known_scripts() -> frozenset[str]:
    """tile_lab's own renderer scripts, view class normalised: the scripts the inspect view
    renders for a fixed inspection that holds no user data."""
    from ..compile.artifacts import Inspection, Remark, StageText
    from .html import inspection_html

    probe = Inspection(
        kernel_name="k", filename="k.py", first_line=1, source="def k(x):\n    pass\n",
        arch="sm_90", signature="", hints={},
        stages={"tileir": StageText("tileir", "a\nb\n", (1, 2)),
                "sass": StageText("sass", "/*0000*/ NOP ;\n", (2,))},
        remarks=(Remark("passed", "memory", "m", 2),),
        show=("source", "tileir", "sass", "remarks"))
    return frozenset(_VIEW_CLASS.sub("tl-v-*", m.group(1))
                     for m in _SCRIPT.finditer(inspection_html(probe)))


def _only_known_scripts(text: str) -> str:
    known = known_scripts()

    def keep(m: re.Match) -> str:
        if _VIEW_CLASS.sub("tl-v-*", m.group(1)) in known:
            return m.group(0)
        return "<!-- a script that is not one of tile_lab's own was removed -->"

    return _SCRIPT.sub(keep, text)


def note_html(text: str) -> str:
    """A paragraph of plain text."""
    return f'<p class="tl-export-note">{html.escape(text)}</p>'


# -- measurements ----------------------------------------------------------------------

def measurements_html(measurements: Iterable[Any]) -> str:
    """One row per ``tile_lab.Measurement``: time, rates, the GPU state it ran in, and where
    it ran (device, driver, clocks at measure time, versions)."""
    rows = ["<tr><th>measurement</th><th>time</th><th>rate</th><th>GPU state</th>"
            "<th>device</th><th>clocks at measure time</th><th>versions</th></tr>"]
    for m in measurements:
        p = m.provenance
        cells = [
            f"{m.name} [{m.mode}]" + (f" vs {m.baseline}" if m.baseline else ""),
            f"mean {m.mean_s * 1e6:.2f} ± {m.ci95_s * 1e6:.2f} µs (95% CI, n={m.n}); "
            f"median {m.median_s * 1e6:.2f} µs; min {m.min_s * 1e6:.2f} µs",
            _rates(m),
            _state(m),
            "unknown" if p is None else f"{p.gpu} ({p.arch}, {p.sm_count} SMs); driver "
            f"{p.driver or '?'}, CUDA driver API {p.cuda_driver_api or '?'}",
            "" if p is None else f"SM {_mhz(p.sm_clock_mhz)} (max {_mhz(p.max_sm_clock_mhz)}), "
            f"memory {_mhz(p.mem_clock_mhz)}; locked: {p.clocks_locked}",
            "" if p is None else f"cuda-tile {p.cuda_tile or '?'}, tileiras "
            f"{p.tileiras or '?'}, CuPy {p.cupy or '?'}",
        ]
        flag = ' class="tl-export-flag"' if m.above_roof else ""
        rows.append("<tr>" + "".join(
            f"<td{flag if i == 2 else ''}>{html.escape(c)}</td>" for i, c in enumerate(cells))
            + "</tr>")
    return f'<table class="tl-export-table tl-export-measurements">{"".join(rows)}</table>'


def _rates(m: Any) -> str:
    parts = []
    for value, peak, unit in ((m.gbps, m.peak_gbps, "GB/s"), (m.tflops, m.peak_tflops,
                                                                "TFLOPS")):
        if value is None:
            continue
        if m.above_roof and peak and value > peak:
            parts.append(f"{unit} ABOVE ROOF ({value:.4g} > peak {peak:.4g}: miscounted or "
                         "cached)")
        elif peak:
            parts.append(f"{value:.4g} {unit} ({100 * value / peak:.1f}% of {peak:.4g})")
        else:
            parts.append(f"{value:.4g} {unit}")
    return "; ".join(parts) or "—"


def _state(m: Any) -> str:
    bits = []
    if m.sm_mhz is not None:
        bits.append(f"SM {m.sm_mhz:.0f} MHz (median)")
    if m.power_w is not None:
        bits.append(f"{m.power_w:.0f} W")
    if m.regime:
        bits.append(f"{m.regime} regime")
    if m.throttled_samples:
        bits.append(f"{m.throttled_samples} throttled samples")
    return ", ".join(bits) or "not recorded"


def _mhz(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} MHz"


def provenance_html(provenance: Mapping[str, Any],
                    collection: Mapping[str, Any] | None = None) -> str:
    """Where a profile was taken (GPU, driver, clocks, versions) and how (the profiler's
    collection notes), as a two-column table."""
    rows = [(k, v) for k, v in sorted(provenance.items())]
    rows += [(f"collection: {k}", v) for k, v in sorted((collection or {}).items())]
    cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_plain(v))}</td></tr>"
                    for k, v in rows)
    return f'<table class="tl-export-table tl-export-provenance">{cells}</table>'


def _plain(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(_plain(v) for v in value) or "—"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items()) or "—"
    return str(value)


# -- a notebook's profile payload (no Profile object, only its overlay) ----------------

def overlay_html(overlay: Mapping[str, Any], top: int = 8) -> str:
    """A profile overlay (``application/vnd.tile-lab.profile.v1+json``) as text: its summary
    and hottest lines. (The heat gutter needs the Profile itself: ``tile_lab.export``.)"""
    rows = ["<tr><th>line</th><th>source</th><th>samples</th><th>top stall reasons</th></tr>"]
    for h in list(overlay.get("hot_lines", []))[:top]:
        stalls = sorted(h.get("stalls", {}).items(), key=lambda kv: -kv[1])[:3]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            h.get("line"), h.get("text", ""), h.get("samples"),
            ", ".join(f"{k} {v}" for k, v in stalls))) + "</tr>")
    return (f"{note_html(str(overlay.get('summary', '')))}"
            f'<table class="tl-export-table">{"".join(rows)}</table>')
