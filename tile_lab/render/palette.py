"""Source-line colours: a colour-blind-safe qualitative palette, in light and dark variants.

Every renderer that ties something back to a kernel source line (the inspect view's colour
bands, the partition diagrams) takes its colours from here, so line 12 has the same colour
in every pane and every diagram of the same kernel.

The palette is Okabe & Ito's (2008) set for colour-vision deficiencies, without black
(invisible as a band on a dark theme). Two of its colours carry too little contrast on one
background: pure yellow (#F0E442) on white and dark blue (#0072B2) on near-black, so the
light variant darkens the yellow and the dark variant lightens the blue; hues — what tells
the colours apart for colour-blind readers — are unchanged. Colours are assigned in the
order lines first appear (the order of the sequence given), cycling after seven.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

__all__ = [
    "DARK_THEME_SELECTORS",
    "PALETTE_DARK",
    "PALETTE_LIGHT",
    "css_var",
    "line_color_index",
    "line_colors",
    "line_css_colors",
    "palette_css",
]

# Okabe–Ito order chosen so neighbouring lines (1st, 2nd, 3rd...) differ most.
PALETTE_LIGHT: tuple[str, ...] = (
    "#E69F00",  # orange
    "#0072B2",  # blue
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#CC79A7",  # reddish purple
    "#B3A500",  # yellow, darkened for contrast on white
)
PALETTE_DARK: tuple[str, ...] = (
    "#E69F00",
    "#4EA3E0",  # blue, lightened for contrast on near-black
    "#009E73",
    "#D55E00",
    "#56B4E9",
    "#CC79A7",
    "#F0E442",  # yellow as published
)

# CSS selectors that mean "a dark theme is active" in the front ends we render into:
# JupyterLab / Notebook 7 mark the body, VS Code marks it with a class.
DARK_THEME_SELECTORS: tuple[str, ...] = (
    'body[data-jp-theme-light="false"]',
    "body.vscode-dark",
    "body.vscode-high-contrast:not(.vscode-high-contrast-light)",
)


def line_color_index(lines: Iterable[int | None]) -> dict[int, int]:
    """Palette slot of each distinct line, by order of first appearance (None skipped)."""
    index: dict[int, int] = {}
    for line in lines:
        if line is not None and line not in index:
            index[line] = len(index) % len(PALETTE_LIGHT)
    return index


def line_colors(lines: Sequence[int | None], theme: str = "light") -> dict[int, str]:
    """Hex colour of each distinct source line in ``lines`` (first appearance decides).

    ``theme`` is ``"light"`` or ``"dark"``; the same line gets the same slot in both.
    """
    if theme not in ("light", "dark"):
        raise ValueError(f"theme must be 'light' or 'dark', got {theme!r}")
    palette = PALETTE_LIGHT if theme == "light" else PALETTE_DARK
    return {line: palette[slot] for line, slot in line_color_index(lines).items()}


def css_var(slot: int) -> str:
    """A CSS colour expression for palette ``slot`` that follows the theme where
    :func:`palette_css` is in effect and falls back to the light colour elsewhere."""
    slot %= len(PALETTE_LIGHT)
    return f"var(--tl-c{slot}, {PALETTE_LIGHT[slot]})"


@functools.lru_cache(maxsize=64)
def line_css_colors(lines: tuple[int, ...]) -> Mapping[int, str]:
    """:func:`css_var` of each distinct line's slot (first appearance decides), for
    drawings that follow the theme (the diagrams)."""
    return MappingProxyType({ln: css_var(s) for ln, s in line_color_index(lines).items()})


def palette_css(scope: str = ".tl-view") -> str:
    """CSS defining ``--tl-c0``… ``--tl-c6`` on ``scope``, switched for dark themes
    (JupyterLab's ``data-jp-theme-light``, VS Code's body classes). Front ends that
    give no theme hint (classic notebook, nbconvert HTML) get the light colours: their
    pages are light whatever the OS setting."""
    light = "".join(f"--tl-c{i}:{c};" for i, c in enumerate(PALETTE_LIGHT))
    dark = "".join(f"--tl-c{i}:{c};" for i, c in enumerate(PALETTE_DARK))
    dark_scopes = ",".join(f"{sel} {scope}" for sel in DARK_THEME_SELECTORS)
    return f"{scope}{{{light}}}\n{dark_scopes}{{{dark}}}\n"


# (light, dark) colours of each token class. Mid-saturation so both read on the
# JupyterLab light and dark themes; none is close to a palette band colour in role.
TOKEN_COLORS: dict[str, tuple[str, str]] = {
    "k": ("#7c3aed", "#c4a7ff"),
    "kt": ("#0f766e", "#5eead4"),
    "kc": ("#9a3412", "#fdba74"),
    "kp": ("#9a3412", "#fdba74"),
    "nf": ("#1d4ed8", "#93c5fd"),
    "nv": ("#a16207", "#facc15"),
    "nl": ("#4b5563", "#a1a1aa"),
    "na": ("#0e7490", "#67e8f9"),
    "nb": ("#be123c", "#fda4af"),
    "nd": ("#be185d", "#f9a8d4"),
    "no": ("#4d7c0f", "#bef264"),
    "s": ("#15803d", "#86efac"),
    "m": ("#c2410c", "#fdba74"),
    "c": ("#6b7280", "#9ca3af"),
    "cs": ("#9ca3af", "#6b7280"),
    "cp": ("#6b7280", "#9ca3af"),
}

ITALIC_TOKENS = ("c", "cp")
BOLD_TOKENS = ("nf",)
