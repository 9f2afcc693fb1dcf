"""The inspect view's stylesheet (``render/html.py`` draws the view): scoped to the view's
content-hash class, so two views on one page never restyle each other."""

from __future__ import annotations

from collections.abc import Iterable

from .palette import BOLD_TOKENS as _BOLD
from .palette import DARK_THEME_SELECTORS, palette_css
from .palette import ITALIC_TOKENS as _ITALIC
from .palette import TOKEN_COLORS as _TOKEN_COLORS

__all__ = ["stylesheet"]


def _css_rules(selectors: Iterable[str], decl: str) -> str:
    sel = ",".join(selectors)
    return f"{sel}{{{decl}}}" if sel else ""


# A pane whose lines run past its right (or left) edge shows a soft shadow on that edge:
# the covers scroll with the content (local), the shadows stay (scroll), so a shadow shows
# only where more text is hidden. --tl-bg is the page colour the covers paint.
_SCROLL_SIGNS = (
    "background:linear-gradient(to right,var(--tl-bg) 30%,transparent) left/24px 100% "
    "no-repeat local,linear-gradient(to left,var(--tl-bg) 30%,transparent) right/24px 100% "
    "no-repeat local,linear-gradient(to right,rgba(128,128,128,.45),transparent) left/10px "
    "100% no-repeat scroll,linear-gradient(to left,rgba(128,128,128,.45),transparent) "
    "right/10px 100% no-repeat scroll")


def stylesheet(vclass: str, slots: dict[int, int]) -> str:
    """The view's ``<style>``: token colours (light/dark), one colour band per palette slot
    in use, hover rules for the source lines present, and the panes' layout."""
    v = f".{vclass}"
    dark_v = ",".join(f"{s} {v}" for s in DARK_THEME_SELECTORS)
    light_vars = "".join(f"--tl-t{k}:{c[0]};" for k, c in _TOKEN_COLORS.items())
    dark_vars = "".join(f"--tl-t{k}:{c[1]};" for k, c in _TOKEN_COLORS.items())
    token_rules = "".join(
        f"{v} .tl-t{k}{{color:var(--tl-t{k})"
        + (";font-style:italic" if k in _ITALIC else "")
        + (";font-weight:600" if k in _BOLD else "") + "}"
        for k in _TOKEN_COLORS)
    used_slots = sorted(set(slots.values()))
    band_rules = "".join(f"{v} .tl-c{s}{{--tl-band:var(--tl-c{s})}}" for s in used_slots)
    # Hover on any element of line N lights up every element of line N in every pane.
    lines = sorted(slots)
    hover = _css_rules((f"{v}:has(.tl-l{n}:hover) .tl-l{n}" for n in lines),
                       "background:color-mix(in srgb,var(--tl-band) 30%,transparent)")
    return "\n".join(filter(None, [
        palette_css(v).strip(),
        f"{v}{{{light_vars}font-family:var(--jp-code-font-family,monospace);"
        f"font-size:var(--jp-code-font-size,12px);line-height:1.35}}",
        f"{dark_v}{{{dark_vars}--tl-bg:var(--jp-layout-color0,#111)}}",
        token_rules,
        f"{v} .tl-head{{font-family:var(--jp-ui-font-family,sans-serif);margin:2px 0 6px}}",
        f"{v}{{contain:paint;max-width:100%;--tl-bg:var(--jp-layout-color0,#fff)}}",
        f"{v} .tl-panes{{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}}",
        f"{v} .tl-pane{{flex:1 1 30em;min-width:min(30em,100%);max-width:100%;"
        f"border:1px solid var(--jp-border-color2,#ccc);border-radius:3px}}",
        f"{v} .tl-pane-source{{flex:1 1 auto}}",
        f"{v} .tl-pro{{color:var(--jp-content-font-color2,#666)}}",
        f"{v}:has(.tl-pro:hover) .tl-pro{{background:color-mix(in srgb,#888 22%,transparent)}}",
        f"{v} .tl-title{{font-family:var(--jp-ui-font-family,sans-serif);font-weight:600;"
        f"padding:2px 6px;border-bottom:1px solid var(--jp-border-color2,#ccc)}}",
        f"{v} .tl-code{{position:relative;max-height:36em;overflow:auto;margin:0;padding:0;"
        f"white-space:pre;list-style:none;{_SCROLL_SIGNS}}}",
        f"{v} .tl-more{{color:var(--jp-content-font-color3,#999);font-style:italic}}",
        f"{v} .tl-notice{{font-family:var(--jp-ui-font-family,sans-serif);font-size:11px;"
        f"background:color-mix(in srgb,#D55E00 12%,transparent)}}",
        f"{v} .tl-ln{{display:block;border-left:4px solid transparent;padding-right:6px;"
        f"cursor:default}}",
        f"{v} .tl-ln[data-line]{{border-left-color:var(--tl-band,transparent);cursor:pointer}}",
        f"{v} .tl-g{{display:inline-block;color:var(--jp-content-font-color3,#999);"
        f"padding:0 4px 0 4px;user-select:none;text-align:right}}",
        f"{v} .tl-pin{{background:color-mix(in srgb,var(--tl-band,#888) 45%,transparent);"
        f"outline:1px solid var(--tl-band,#888)}}",
        f"{v} .tl-missing{{color:var(--jp-content-font-color3,#999);padding:4px 6px}}",
        f"{v} .tl-pane-missing{{flex:0 1 14em;min-width:10em}}",
        f"{v} .tl-remarks{{white-space:normal;padding:2px 0}}",
        f"{v} .tl-rm{{padding:2px 6px}}",
        f"{v} .tl-kind{{font-weight:600}}",
        f"{v} .tl-kind-missed,{v} .tl-kind-failed{{color:var(--tl-tnb)}}",
        f"{v} .tl-kind-passed{{color:var(--tl-ts)}}",
        f"{v} .tl-link{{text-decoration:underline;cursor:pointer}}",
        band_rules,
        hover,
    ]))
