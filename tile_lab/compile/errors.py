"""cuTile's compile errors in the user's words, at the user's line.

cuTile raises a ``TileError`` with a location chain (innermost first, then call sites).
This module turns one into a :class:`~tile_lab.errors.CompileError`:

* located at the innermost site in the user's code (cuTile reports its own stub's line first
  for Tile methods such as ``t.reshape``), call sites named as IPython names cells;
* introduced by what kind of mistake it is ("cuTile type error", "shape error", ...), never
  by cuTile's ``InternalError`` label for a user mistake, and never with an empty message
  (an ``InternalError`` wraps the real exception: a ``BroadcastError`` is a shape error; an
  empty one on a ``while True:`` without ``break`` is a loop that never ends);
* with a hint where the fix is known.

Under emulation the same error is raised as :func:`as_cutile_error` makes it: an instance of
cuTile's own exception class too (``ct.TileTypeError`` & co.), whose ``str()`` is cuTile's,
so code and tests written against native cuTile catch and match it unchanged.
"""

from __future__ import annotations

import ast
import linecache
import os
import textwrap

from .. import _cutile_compat as compat
from ..errors import CompileError, SourceLocation, location_label


def source_location(filename: str, line: int, col: int | None) -> SourceLocation:
    text = linecache.getline(filename, line) or None
    return SourceLocation(filename, line, col, text.rstrip("\n") if text else None)


def compile_error_from_tile_error(exc: BaseException) -> CompileError:
    """A CompileError pointing at the user's line for one of cuTile's TileErrors."""
    message = compat.tile_error_message(exc).strip()
    # the innermost site in the user's code: a Tile method (t.reshape) is a cuTile stub
    # that calls the op, and cuTile reports the stub's line first
    all_sites = compat.tile_error_call_sites(exc)
    sites = [site for site in all_sites if not _in_cutile(site[0])] or all_sites
    location = source_location(*sites[0]) if sites else None
    hint = None
    if len(sites) > 1:
        hint = "called from " + ", ".join(f"{_site_label(f)}, line {ln}"
                                          for f, ln, _ in sites[1:])
    kind = _TILE_ERROR_KINDS.get(type(exc).__name__, type(exc).__name__)
    if type(exc).__name__ == "InternalError":
        kind, message, why = _internal_error_words(exc, message, location)
        hint = why if hint is None else f"{why}; {hint}"
    elif "numpy" in message or type(exc).__name__ == "UnsupportedCallError":
        why = ("kernels compute with cuTile operations (ct.sqrt, ct.sum, ...), not NumPy, "
               "math or other Python functions, which run on the host")
        hint = why if hint is None else f"{why}; {hint}"
    return CompileError(f"{kind}: {message}", location, hint)


class CutileCompileError(CompileError):
    """A CompileError that is also the exception cuTile raised (its class is made per cuTile
    class by :func:`as_cutile_error`). ``str()``, ``message`` and ``loc`` are cuTile's, so
    ``except ct.TileTypeError`` and ``pytest.raises(..., match=...)`` behave as natively;
    notebooks show tile_lab's rendering (message in the user's words, the line, a caret)."""

    cutile_class: type = BaseException  # set on each made subclass
    cutile_text = ""  # str() of cuTile's exception
    lab_message = ""  # tile_lab's wording (what render shows)

    def __str__(self) -> str:
        return self.cutile_text

    def render(self, *, file_line: bool = False) -> str:
        shown = CompileError(self.lab_message, self.location, self.hint)
        shown.__traceback__ = self.__traceback__  # for the calling cell, when unlocated
        return shown.render(file_line=file_line)

    def __reduce__(self):  # the made class is not importable: rebuild it on the other side
        return (_rebuild, (self.cutile_class, self.cutile_text, self.message,
                           getattr(self, "loc", None), self.lab_message, self.location,
                           self.hint))


_MADE: dict[type, type] = {}


def _made_class(cutile_class: type) -> type:
    made = _MADE.get(cutile_class)
    if made is None:
        # CutileCompileError first: its __str__/render/__reduce__ win over cuTile's
        made = type(cutile_class.__name__, (CutileCompileError, cutile_class),
                    {"__module__": __name__, "cutile_class": cutile_class,
                     "__doc__": f"cuTile's {cutile_class.__name__}, raised by tile_lab's "
                                "emulator (also a tile_lab CompileError)."})
        _MADE[cutile_class] = made
    return made


def _rebuild(cutile_class: type, text: str, message: str, loc, lab_message: str,
             location: SourceLocation | None, hint: str | None) -> CutileCompileError:
    error = Exception.__new__(_made_class(cutile_class))
    Exception.__init__(error, text)
    error.cutile_text, error.lab_message = text, lab_message
    error.message, error.location, error.hint = message, location, hint
    if loc is not None:
        error.loc = loc
    return error


def as_cutile_error(exc: BaseException, hint: str | None = None) -> CutileCompileError:
    """cuTile's exception ``exc`` as an instance of both its class and CompileError: str,
    ``message`` and ``loc`` from ``exc``; tile_lab's location, wording and hint (``hint``
    added) for display."""
    lab = compile_error_from_tile_error(exc)
    if hint:
        lab.hint = hint if not lab.hint else f"{lab.hint}; {hint}"
    return _rebuild(type(exc), str(exc), compat.tile_error_message(exc),
                    getattr(exc, "loc", None), lab.message, lab.location, lab.hint)


def _in_cutile(filename: str) -> bool:
    import cuda.tile

    return filename.startswith(os.path.dirname(cuda.tile.__file__) + os.sep)


def _site_label(filename: str) -> str:
    label = location_label(filename)
    return label if label != filename else os.path.basename(filename)


# cuTile reports some user mistakes as an InternalError wrapping the original exception
# (its _wrap_exceptions): name them by the wrapped exception's class.
_WRAPPED_KINDS = {
    "BroadcastError": ("shape error", "the two tiles' shapes cannot be broadcast together "
                       "(dimensions must match or be 1, aligned from the right); reshape "
                       "one of them, e.g. with ct.reshape or ct.expand_dims"),
}


def _internal_error_words(exc: BaseException, message: str, location: SourceLocation | None
                          ) -> tuple[str, str, str]:
    """(kind, message, why) for a cuTile InternalError: the user mistake it stands for, or
    an honest "cuTile failed" with the internal exception named, never an empty message."""
    cause = exc.__cause__ or exc.__context__
    cause_name = type(cause).__name__ if cause is not None else ""
    if cause_name in _WRAPPED_KINDS:
        kind, why = _WRAPPED_KINDS[cause_name]
        return kind, message or str(cause), why
    text = (location.text or "").strip() if location else ""
    exits = _while_true_exits(location) if text.startswith("while") and location else None
    if exits == set():
        return ("loop without an exit",
                f"this `{text.rstrip(':')}` loop has no `break` and no condition that can "
                f"end it, so the kernel would never finish",
                "cuTile cannot compile a loop that never ends: add a `break`, or loop over "
                "`range(...)`")
    if exits == {"return"}:  # cuTile 1.7 asserts on it (its finalize_constant_and_loose_type)
        return ("cuTile compiler failure",
                f"cuTile's compiler fails on this `{text.rstrip(':')}` loop, whose only exit "
                "is a `return` (an internal assertion in cuTile 1.7)",
                "leave the loop with `break` and return after it, or give the loop a "
                "condition (`while not done:`)")
    detail = message or (f"{cause_name} inside cuTile's compiler" if cause_name
                         else "no message from cuTile")
    return ("cuTile internal error", detail,
            "cuTile's compiler failed on this line without saying why; rewriting the line "
            "(e.g. splitting the expression) usually gets past it")


def _loop_never_exits(location: SourceLocation) -> bool:
    """True when the ``while`` at ``location`` loops on a constant true test with no
    ``break`` of its own and no ``return``."""
    return _while_true_exits(location) == set()


def _while_true_exits(location: SourceLocation) -> set[str] | None:
    """How the ``while`` loop at ``location`` can end when its test is a constant true:
    ``"break"`` (one of its own, not an inner loop's) and ``"return"``; None for any other
    line."""
    lines = linecache.getlines(location.filename)
    first = location.line - 1
    if not 0 <= first < len(lines):
        return None
    indent = len(lines[first]) - len(lines[first].lstrip())
    block = [lines[first]]
    for raw in lines[first + 1:]:
        if raw.strip() and len(raw) - len(raw.lstrip()) <= indent:
            break
        block.append(raw)
    try:
        loop = ast.parse(textwrap.dedent("".join(block))).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(loop, ast.While) or not (
            isinstance(loop.test, ast.Constant) and loop.test.value):
        return None
    inner = [n for stmt in loop.body for n in ast.walk(stmt)]
    nested = {id(m) for n in inner if isinstance(n, (ast.While, ast.For))
              for m in ast.walk(n) if m is not n}
    exits = {"return"} if any(isinstance(n, ast.Return) for n in inner) else set()
    if any(isinstance(n, ast.Break) and id(n) not in nested for n in inner):
        exits.add("break")
    return exits


# cuTile error class -> how the message introduces it
_TILE_ERROR_KINDS = {
    "TypeCheckingError": "cuTile type error",
    "UnsupportedSyntaxError": "syntax cuTile does not support",
    "InvalidValueError": "invalid value",
    "UnsupportedFeatureError": "unsupported feature",
    "StaticAssertionError": "static assertion",
    "StaticEvalError": "compile-time evaluation error",
    "RecursionLimitError": "recursion limit",
    "CompilerExecutionError": "tileiras error",
    "CompilerTimeoutError": "tileiras timeout",
    "UnsupportedCallError": "not callable in a kernel",
}
