"""The ``%%tile`` cell as the magic sees it, and errors placed at the user's cell line.

:class:`Cell` is the body as registered with IPython (its ``Cell In[N]`` label and the
``%%tile`` line as typed); the rest evaluate the options in the notebook's namespace and
turn a mistake into a :class:`~tile_lab.errors.TileLabError` whose location is
``Cell In[N], line L`` with a caret under what the user typed (the option, the argument
item, the body line), never IPython's cache filename.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, replace
from typing import Any

from ..errors import OptionError, SignatureError, SourceLocation, TileLabError

__all__ = ["Cell", "eval_grid", "eval_option", "item_location", "line_of", "option_error",
           "option_location", "relabel", "running_cell_number"]


@dataclass(frozen=True)
class Cell:
    """The cell body as registered: ``filename`` in linecache, ``label`` for messages."""

    text: str  # the body with one blank line first: line N here is cell line N
    filename: str
    label: str
    magic_line: str  # "%%tile --args ..." as the user typed it (line 1)


def running_cell_number(shell: Any) -> int:
    """The N of the cell now running, as IPython labels it ("Cell In[N]").

    Not ``shell.execution_count``: IPython >= 9 has already incremented it when the cell
    runs (and does not when history is off). The running cell's code is on the call stack,
    compiled under a filename IPython registered with the cell's number, so that frame
    says which cell this is, in a terminal IPython and in a Jupyter kernel alike.
    """
    format_code_name = getattr(shell.compile, "format_code_name", None)
    frame = sys._getframe(1) if format_code_name is not None else None
    while frame is not None:
        named = format_code_name(frame.f_code.co_filename)
        if named and (m := re.fullmatch(r"In\[(\d+)\]", named[1])):
            return int(m.group(1))
        frame = frame.f_back
    return shell.execution_count  # called outside any cell (run_cell_magic from code)


def line_of(text: str, lineno: int) -> str:
    lines = text.splitlines()
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


def option_location(body: Cell, value: str, offset: int = 0) -> SourceLocation:
    """Line 1 (the ``%%tile`` line), caret under ``value`` (+offset) where it is found."""
    idx = body.magic_line.find(value)
    col = idx + offset if idx >= 0 else None
    return SourceLocation(body.label, 1, col, body.magic_line)


def item_location(body: Cell, option_text: str, message: str) -> SourceLocation | None:
    """The ``%%tile`` line with the caret under the comma-separated item of ``option_text``
    that ``message`` names ("argument 2 (...)", "spec item 2"); None when it names none."""
    m = re.search(r"\b(?:argument|item) (\d+)\b", message)
    if m is None:
        return None
    wanted, depth, start, items = int(m.group(1)), 0, 0, []
    for i, ch in enumerate(option_text + ","):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            items.append(start + len(option_text[start:i]) - len(option_text[start:i].lstrip()))
            start = i + 1
    if not 1 <= wanted <= len(items):
        return None
    return option_location(body, option_text.strip(), items[wanted - 1]
                            - (len(option_text) - len(option_text.lstrip())))


def eval_option(value: str, option: str, body: Cell, ns: dict[str, Any],
                 local: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """Evaluate a comma-separated list of expressions in the user namespace (and ``local``
    names, e.g. ``cfg`` for --explore, which shadow nothing in the notebook)."""
    text = value.strip().rstrip(",")
    if not text:
        return ()
    try:
        tree = ast.parse(f"({text},)", mode="eval")
    except SyntaxError as e:
        off = max((e.offset or 1) - 2, 0)  # -1 for 1-based, -1 for the "(" we added
        raise SignatureError(f"{option} is not a list of Python expressions: {e.msg}",
                             option_location(body, text, off)) from None
    try:
        return tuple(eval(compile(tree, f"<{option}>", "eval"), ns, local))
    except NameError as e:
        name = getattr(e, "name", None) or ""
        m = re.search(rf"\b{re.escape(name)}\b", text) if name else None
        raise SignatureError(f"{option}: name {name!r} is not defined in the notebook",
                             option_location(body, text, m.start() if m else 0),
                             hint="define it in a cell above, then run this cell again"
                             ) from None
    except Exception as e:
        raise SignatureError(f"{option}: evaluating {text!r} raised "
                             f"{type(e).__name__}: {e}", option_location(body, text)
                             ) from None


def eval_grid(value: str, body: Cell, ns: dict[str, Any],
               local: dict[str, Any] | None = None) -> tuple[int, ...]:
    """``--grid``: an int or a tuple of 1-3 positive ints, evaluated in the namespace."""
    items = eval_option(value, "--grid", body, ns, local)
    if len(items) == 1 and isinstance(items[0], (tuple, list)):
        items = tuple(items[0])  # "(8, 4)" is one tuple-valued expression
    ok = 1 <= len(items) <= 3 and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in items)
    if not ok:
        raise SignatureError(f"--grid must be 1 to 3 positive ints, e.g. \"(8,)\", "
                             f"got {items!r}", option_location(body, value.strip()))
    return tuple(int(v) for v in items)


def option_error(message: str, body: Cell) -> OptionError:
    """An OptionError at the ``%%tile`` line, the caret under the first option the message
    names, or just after the line when the option is missing from it."""
    text = message.removeprefix("%%tile: ")
    col = None
    said = text.split(": ", 1)[1] if text.startswith("%%tile --") else text  # skip "--lang c++:"
    named = re.search(r"--[a-z+]+", said)
    if named is not None:  # under that option, or after the line when it is missing there
        idx = body.magic_line.find(named.group(0))
        col = idx if idx >= 0 else len(body.magic_line) + 1
    hint = ("%%tile? lists the options" if "unrecognized arguments" in text
            or "expected one argument" in text else None)
    text = text if text.startswith("%%tile") else f"%%tile: {text}"
    return OptionError(text, SourceLocation(body.label, 1, col, body.magic_line), hint=hint)


def relabel(err: TileLabError, body: Cell) -> TileLabError:
    """Show the cell's label instead of IPython's cache filename, and the line text; an
    error that names no place (a refusal, a missing GPU) points at the ``%%tile`` line."""
    if err.hint and body.filename in err.hint:  # e.g. nvcc's full diagnostics
        err.hint = err.hint.replace(body.filename, body.label)
    loc = err.location
    if loc is None:  # e.g. a refusal: under the option the message is about, if it says
        words = re.findall(r"\b(grid|hint|arch|args|sig|kernel)s?\b", err.message)
        col = next((i for i in (body.magic_line.find(f"--{w}{'s' * (w == 'hint')}")
                                for w in words) if i >= 0), None)
        err.location = SourceLocation(body.label, 1, col, body.magic_line)
    elif loc.filename == body.filename:
        text = loc.text if loc.text is not None else line_of(body.text, loc.line)
        err.location = replace(loc, filename=body.label, text=text)
    return err
