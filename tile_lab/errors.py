"""Every exception and warning class tile_lab raises, one name per error kind.

Errors that point into user code carry a :class:`SourceLocation` and render themselves
(message, the offending line, a caret, a hint) through ``_render_traceback_``, so a
failing ``%%tile`` cell shows the user's line instead of a tile_lab stack trace.
"""

from __future__ import annotations

import contextlib
import linecache
import sys
import warnings
from dataclasses import dataclass
from typing import Any, TextIO

from IPython.core.error import UsageError


@dataclass(frozen=True)
class SourceLocation:
    """A position in user source. ``line`` is 1-based as the user sees it; ``col`` 0-based."""

    filename: str
    line: int
    col: int | None = None
    text: str | None = None  # the source line itself, when known


class TileLabWarning(UserWarning):
    """Warnings of tile_lab itself (turned into errors in tile_lab's own tests)."""


class TileLabError(Exception):
    """Base class. ``location`` (if any) points into the user's cell or file. ``stage`` (class
    data) names the stage of measuring a kernel that fails this way: "compile", "launch",
    "verify" or "measure" (None: not a measuring failure)."""

    stage: str | None = None

    def __init__(self, message: str, location: SourceLocation | None = None,
                 hint: str | None = None) -> None:
        if not message.strip():  # never an empty message: say at least what kind of error
            message = (type(self).__doc__ or type(self).__name__).strip().splitlines()[0]
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def __reduce__(self):  # survive pickling across worker processes
        return (type(self), (self.message, self.location, self.hint))

    def render(self, *, file_line: bool = False) -> str:
        """Plain-text rendering: message, location line, source line, caret, hint.

        An error that carries no location of its own (a bad argument to a public function)
        names the notebook cell line that made the call, found in its traceback.
        ``file_line``: the location as ``path:line`` (programs) rather than ``Cell In[3],
        line 7`` / ``path, line 7``."""
        out = [f"{type(self).__name__}: {self.message}"]
        loc = self.location if self.location is not None else _calling_cell(self)
        if loc is not None:
            out.append(f"  at {loc.filename}:{loc.line}" if file_line else
                       f"  at {location_label(loc.filename)}, line {loc.line}")
            if loc.text is not None:
                out.append(f"  {loc.line:>4} | {loc.text.rstrip()}")
                if loc.col is not None:
                    out.append("       | " + " " * loc.col + "^")
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing a Python traceback.
        return self.render().splitlines()


def _calling_cell(exc: BaseException) -> SourceLocation | None:
    """The innermost notebook-cell line in ``exc``'s traceback (the user's call), if any."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except Exception:  # no IPython
        return None
    if shell is None:
        return None
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if shell.compile.format_code_name(code.co_filename):
            found = (code, tb.tb_lineno, tb.tb_lasti)
        tb = tb.tb_next
    if found is None:
        return None
    import linecache

    code, line, lasti = found
    text = linecache.getline(code.co_filename, line).rstrip("\n") or None
    col = None
    if hasattr(code, "co_positions"):  # Python >= 3.11: where on the line the call is
        positions = list(code.co_positions())
        if 0 <= lasti // 2 < len(positions):
            start_line, _, start_col, _ = positions[lasti // 2]
            col = start_col if start_line == line else None
    return SourceLocation(code.co_filename, line, col, text)


def location_label(filename: str) -> str:
    """A notebook cell's code file as IPython names it ("Cell In[3]"), else the filename."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        named = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # no IPython, or an IPython without format_code_name
        named = None
    return " ".join(named) if named else filename


class ArgumentTypeError(TileLabError, TypeError):
    """A public function got an argument of the wrong type; the message names the argument
    (position and name) and the type it expects."""


class ArgumentValueError(TileLabError, ValueError):
    """An argument cuTile's launcher refuses with a ValueError (an axis in
    ``static_shape_dims`` beyond the array's rank, arrays of a list that differ on an axis
    annotated static); the message is cuTile's, so ``except ValueError`` catches it as it
    catches cuTile's own."""


class OptionError(TileLabError, UsageError):
    """A ``%%tile`` option is wrong or missing. Also an IPython ``UsageError`` (what magics
    raise for usage mistakes), but shown like every tile_lab error: at the ``%%tile`` line,
    with a caret under the option."""


class CompileError(TileLabError):
    """The kernel failed to compile (syntax, cuTile typing, or tileiras)."""

    stage = "compile"


class SignatureError(TileLabError):
    """``--args`` / ``--sig`` could not be turned into a kernel signature."""


class ToolchainError(TileLabError):
    """A compiler tool (tileiras, tileirdisasm, nvdisasm, nvcc) is missing or broken."""

    stage = "compile"


class EmulatorUnsupported(TileLabError):
    """The CPU emulator does not implement this cuTile operation."""


class EmulationError(TileLabError):
    """A kernel did something invalid while running in the emulator."""


class NoGPUError(TileLabError):
    """A GPU-only operation was requested where no usable CUDA GPU is present."""


class LaunchError(TileLabError):
    """A GPU launch failed (fault, timeout, or the worker process died)."""

    stage = "launch"


class CheckMismatch(TileLabError):
    """A kernel's output differs from the reference given as ``check=`` beyond tolerance."""

    stage = "verify"


class DiagramError(TileLabError, ValueError):
    """A diagram was asked for something its trace or arguments do not allow
    (an unknown array, a block outside the grid, a line without memory operations)."""


class ProfilerUnavailable(TileLabError):
    """No usable profiler: Nsight Compute missing, or GPU counters not permitted."""


class ProfilerError(TileLabError):
    """The profiler ran but gave no profile (e.g. the launch failed under every plan)."""


class FileFormatError(TileLabError, ValueError):
    """A saved file (a trace, a notebook to export) that is not what it claims: corrupt,
    truncated, too large, of a newer format version, or holding unknown fields. Raised
    before anything in it is used; nothing in a file is ever executed."""


# ---- where a warning is shown ------------------------------------------------------------------
# The emulator warns at the kernel's line (warnings.warn_explicit with the kernel's own file),
# and Python's warning format has no place for a label: at a notebook cell's line it named the
# file IPython compiled the cell under ("<ipython-input-3-1f2e…>:7" in a terminal IPython,
# "/tmp/ipykernel_81/2871.py:7" in Jupyter). show_warnings_at_cells() (%load_ext tile_lab
# calls it) wraps warnings.showwarning once so that a TileLabWarning at a cell's line says
# "Cell In[3], line 7"; every other warning goes to the function it replaced, and filters
# (-W error) apply as before.

_replaced_showwarning: list[Any] = []  # the showwarning the wrapper took over (at most one)


def format_cell_warning(message: Warning | str, category: type[Warning], filename: str,
                        lineno: int, line: str | None = None) -> str | None:
    """``Cell In[3], line 7: OutOfArrayTileWarning: ...`` and the line's text, for a
    TileLabWarning at a notebook cell's line; None for any other warning."""
    if not issubclass(category, TileLabWarning):
        return None
    label = location_label(filename)
    if not label.startswith("Cell In["):
        return None
    text = linecache.getline(filename, lineno) if line is None else line
    shown = f"{label}, line {lineno}: {category.__name__}: {message}\n"
    return shown + (f"  {text.strip()}\n" if text.strip() else "")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    text = format_cell_warning(message, category, filename, lineno, line)
    if text is None:
        _replaced_showwarning[0](message, category, filename, lineno, file, line)
        return
    with contextlib.suppress(OSError, AttributeError):  # no or a closed stderr, as warnings
        (sys.stderr if file is None else file).write(text)


def show_warnings_at_cells() -> None:
    """Make ``warnings.showwarning`` name notebook cells for tile_lab's warnings (once)."""
    if warnings.showwarning is not _show_warning:
        _replaced_showwarning[:] = [warnings.showwarning]
        warnings.showwarning = _show_warning
