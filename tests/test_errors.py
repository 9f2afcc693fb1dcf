"""tile_lab.errors: every error renders message, place, source line, caret and hint; none is
empty; option errors are IPython UsageErrors too."""

from __future__ import annotations

import pickle

from IPython.core.error import UsageError

from tile_lab.errors import (
    ArgumentTypeError,
    CompileError,
    OptionError,
    SourceLocation,
    TileLabError,
)


def test_render_has_place_line_caret_and_hint():
    err = CompileError("cuTile type error: bad", SourceLocation("k.py", 7, 4, "    t = x"),
                       hint="do y")
    assert err.render().splitlines() == [
        "CompileError: cuTile type error: bad", "  at k.py, line 7", "     7 |     t = x",
        "       |     ^", "hint: do y"]


def test_an_empty_message_becomes_the_kind_of_error():
    assert str(CompileError("")) == "The kernel failed to compile (syntax, cuTile typing, or " \
                                    "tileiras)."
    assert str(TileLabError("  ")).startswith("Base class.")


def test_errors_survive_pickling_with_their_place():
    err = ArgumentTypeError("argument 1 (trace) must be a Trace, got int",
                            SourceLocation("f.py", 2, 0, "x"), hint="h")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.message, back.location, back.hint) == (
        ArgumentTypeError, err.message, err.location, "h")
    assert isinstance(back, TypeError)


def test_option_errors_are_usage_errors_rendered_like_the_rest():
    err = OptionError("%%tile: unknown pane", SourceLocation("Cell In[3]", 1, 7, "%%tile x"))
    assert isinstance(err, UsageError) and isinstance(err, TileLabError)
    assert err._render_traceback_()[:2] == ["OptionError: %%tile: unknown pane",
                                            "  at Cell In[3], line 1"]
