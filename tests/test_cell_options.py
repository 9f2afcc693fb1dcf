"""The %%tile line as one frozen CellOptions: quotes stripped, the notebook's defaults
filled in, --show parsed; every impossible combination is tested through the magic
(test_magic.py, test_bad_inputs.py)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from IPython.core.error import UsageError

from tile_lab.cell_options import CellOptions, Defaults, resolve_options


def _parsed(**given):
    return SimpleNamespace(**{f.name: f.default for f in dataclasses.fields(CellOptions)
                              if f.name not in ("panes", "partition")} | given)


def test_the_parsed_line_becomes_one_frozen_options_object():
    parsed = _parsed(args="'a, b'", show="source,partition", grid="(4,)", trace=True)
    opts = resolve_options(parsed, Defaults(arch="sm_90"))
    assert (opts.args, opts.arch, opts.panes, opts.partition) == \
        ("a, b", "sm_90", ("source",), True)
    assert opts.flags == ["trace"]
    assert parsed.args == "'a, b'"  # the namespace is read, never changed
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.arch = "sm_100"  # type: ignore[misc]


def test_the_cells_own_choice_beats_the_notebooks_default():
    opts = resolve_options(_parsed(arch="sm_100", show="sass"), Defaults("sm_90", "source"))
    assert (opts.arch, opts.panes) == ("sm_100", ("sass",))


def test_an_impossible_combination_is_refused_before_anything_runs():
    with pytest.raises(UsageError, match="use one of"):
        resolve_options(_parsed(emulate=True, launch=True), Defaults())


def test_the_notebooks_run_settings_travel_as_one_value():
    assert Defaults(max_steps=5, launch_fallback="error").settings.max_steps == 5
