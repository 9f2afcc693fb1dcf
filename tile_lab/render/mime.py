"""The ``application/vnd.tile-lab.v1+json`` contract with the JupyterLab extension.

``mime_schema.json`` (next to this file) is the one description of the bundle: the Python
tests validate what :func:`tile_lab.render.html.inspection_json` writes against it, and the
extension's TypeScript tests validate their fixtures and hostile payloads against the same
file. This module holds what both sides derive from Python's own tables, so nothing is
written twice:

- :func:`token_runs`: syntax-highlighting runs for a stage's text, made by the same Pygments
  lexers and token classes as the HTML view (the extension colours runs, it does not lex);
- :func:`extension_css`: the extension's colour stylesheet (``labextension/style/colors.css``),
  generated from the line palette and the token colours of the HTML view;
- :func:`mime_limits` / :func:`cut_to_limits`: the schema's size limits (its maxLength /
  maxItems / maxProperties), read from the schema file, and the writer's side of them: data
  over a limit is cut to it and the size before is recorded in ``truncated`` (the extension
  then says "showing N of M"). The extension reads the same numbers; the tests check both
  against ``labextension/test/fixtures/schema_cases.json.gz``.

Versions: ``MIME_VERSION`` is what the writer writes; the extension reads it and every
earlier one still stored in notebooks (version 1 lacks ``tma``, the TMA verdict).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pygments.lexer import Lexer
from pygments.token import _TokenType

from .lexers import token_lines
from .palette import PALETTE_LIGHT, palette_css

__all__ = ["MIME_VERSION", "SCHEMA_PATH", "TOKEN_STAGES", "MimeLimits", "cut_to_limits",
           "extension_css", "mime_limits", "mime_schema", "token_runs"]

SCHEMA_PATH = Path(__file__).with_name("mime_schema.json")
# 2: the view may carry the TMA verdict (``tma``). Views of version 1 (notebooks saved before)
# still open: the extension reads both, a version-1 view simply has no TMA badges.
MIME_VERSION = 2
# Stages whose text travels with token runs. Tile IR is what the extension colours: it is
# short (tens to hundreds of lines); SASS and PTX would double the size of a stored notebook.
TOKEN_STAGES: tuple[str, ...] = ("tileir",)


@cache
def mime_schema() -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of the bundle."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class MimeLimits:
    """The schema's size limits (``mime_schema.json``); see :func:`mime_limits`."""

    text_chars: int  # source, a stage's text
    rows: int  # a line map's / token list's entries: lines a pane shows
    runs_per_line: int
    remarks: int
    name_chars: int  # kernel_name, arch, remark kind, hint values, ...
    message_chars: int  # signature, remark messages
    hints: int
    key_chars: int
    line_max: int
    tma_lines: int  # entries of tma.lines
    sass_ops: int  # opcodes of one tma line


@cache
def mime_limits() -> MimeLimits:
    """The size limits, read from the schema (the one place they are written)."""
    s = mime_schema()
    d, p = s["$defs"], s["properties"]
    return MimeLimits(
        text_chars=d["text"]["maxLength"], rows=d["stage"]["properties"]["line_map"]["maxItems"],
        runs_per_line=d["stage"]["properties"]["tokens"]["items"]["maxItems"],
        remarks=p["remarks"]["maxItems"], name_chars=d["name"]["maxLength"],
        message_chars=d["message"]["maxLength"], hints=p["hints"]["maxProperties"],
        key_chars=p["hints"]["propertyNames"]["maxLength"], line_max=d["lineNo"]["maximum"],
        tma_lines=d["tma"]["properties"]["lines"]["maxItems"],
        sass_ops=d["tmaLine"]["properties"]["sass_ops"]["maxItems"])


def _cut_str(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut_lines(text: str, rows: int, chars: int) -> tuple[str, int, int]:
    """``text`` cut to at most ``rows`` lines and ``chars`` characters (at a line break);
    returns (text, lines kept, lines before)."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if total <= rows and len(text) <= chars:
        return text, total, total
    kept, size = [], 0
    for line in lines[:rows]:
        if size + len(line) > chars:
            break
        kept.append(line)
        size += len(line)
    return "".join(kept), len(kept), total


def cut_to_limits(data: dict[str, Any]) -> dict[str, Any]:
    """The payload (``inspection_json``'s, before its JSON round trip) cut to the schema's
    size limits, in place; ``truncated`` records the size before of each cut text."""
    lim = mime_limits()
    truncated: dict[str, int] = {}
    for key in ("kernel_name", "filename", "arch"):
        data[key] = _cut_str(data[key], lim.name_chars)
    data["signature"] = _cut_str(data["signature"], lim.message_chars)
    source, _, total = _cut_lines(data["source"], lim.rows, lim.text_chars)
    if source != data["source"]:
        data["source"], truncated["source"] = source, total
    for name, stage in data["stages"].items():
        text, kept, total = _cut_lines(stage["text"], lim.rows, lim.text_chars)
        if text != stage["text"]:
            stage["text"], truncated[f"stages.{name}.text"] = text, total
        stage["line_map"] = list(stage["line_map"][:kept])
        if "tokens" in stage:
            stage["tokens"] = [runs if len(runs) <= lim.runs_per_line else []
                               for runs in stage["tokens"][:kept]]
    if len(data["remarks"]) > lim.remarks:
        truncated["remarks"] = len(data["remarks"])
        data["remarks"] = data["remarks"][: lim.remarks]
    for r in data["remarks"]:
        for key in ("kind", "category", "pass_name"):
            r[key] = _cut_str(r[key], lim.name_chars)
        r["message"] = _cut_str(r["message"], lim.message_chars)
    hints = {}
    for k, v in sorted(data["hints"].items())[: lim.hints]:
        if not (v is None or isinstance(v, (bool, int, float, str))):
            v = json.dumps(v, sort_keys=True, default=str)
        hints[_cut_str(str(k), lim.key_chars)] = (_cut_str(v, lim.name_chars)
                                                  if isinstance(v, str) else v)
    data["hints"] = hints
    if "tma" in data:
        _cut_tma(data["tma"], lim, truncated)
    if truncated:
        data["truncated"] = truncated
    return data


def _cut_tma(tma: dict[str, Any], lim: MimeLimits, truncated: dict[str, int]) -> None:
    """The ``tma`` field cut to its limits (its summary still counts every line)."""
    tma["arch"] = _cut_str(tma["arch"], lim.name_chars)
    tma["summary"] = _cut_str(tma["summary"], lim.message_chars)
    if len(tma["lines"]) > lim.tma_lines:
        truncated["tma.lines"] = len(tma["lines"])
        tma["lines"] = tma["lines"][: lim.tma_lines]
    for t in tma["lines"]:
        t["sass_ops"] = list(t["sass_ops"][: lim.sass_ops])
        t["reason"] = _cut_str(t["reason"], lim.message_chars)


def token_runs(text: str, lexer: Lexer,
               classify: Callable[[_TokenType], str]) -> list[list[list[Any]]]:
    """Per text line, ``[[token_class, length], ...]`` covering the line left to right.

    Lengths count code points (Python ``len``; the extension counts with ``Array.from``).
    Adjacent runs of one class are merged; ``""`` is text without a colour."""
    out: list[list[list[Any]]] = []
    for pieces in token_lines(text, lexer, classify):
        runs: list[list[Any]] = []
        for cls, piece in pieces:
            if runs and runs[-1][0] == cls:
                runs[-1][1] += len(piece)
            else:
                runs.append([cls, len(piece)])
        out.append(runs)
    return out


def extension_css() -> str:
    """The extension's colours: the line palette (light/dark) as ``--tl-c0``…, one band rule
    per palette slot, and the HTML view's token colours as ``.tl-t*`` rules."""
    from .palette import BOLD_TOKENS as _BOLD
    from .palette import DARK_THEME_SELECTORS
    from .palette import ITALIC_TOKENS as _ITALIC
    from .palette import TOKEN_COLORS as _TOKEN_COLORS

    light = "".join(f"--tl-t{k}:{c[0]};" for k, c in _TOKEN_COLORS.items())
    dark = "".join(f"--tl-t{k}:{c[1]};" for k, c in _TOKEN_COLORS.items())
    dark_scopes = ",".join(f"{sel} .tl-view" for sel in DARK_THEME_SELECTORS)
    rules = [
        "/* Generated by tile_lab.render.mime.extension_css() from tile_lab/render/palette.py",
        "   and the token colours of tile_lab/render/html.py; tests/test_render_mime.py checks",
        "   it is current (TILE_LAB_WRITE_FIXTURE=1 rewrites it). Do not edit by hand. */",
        palette_css(".tl-view").strip(),
        f".tl-view{{{light}}}",
        f"{dark_scopes}{{{dark}}}",
    ]
    rules += [f".tl-view .tl-band.tl-c{s}{{border-left-color:var(--tl-c{s})}}"
              for s in range(len(PALETTE_LIGHT))]
    for k in _TOKEN_COLORS:
        style = "font-style:italic;" if k in _ITALIC else ""
        style += "font-weight:600;" if k in _BOLD else ""
        rules.append(f".tl-view .tl-t{k}{{color:var(--tl-t{k});{style}}}")
    return "\n".join(rules) + "\n"
