"""The Request every front end builds: frozen, typed, and what the core reads (the magic's
use of it is tested through the magic in test_magic.py)."""

from __future__ import annotations

import dataclasses

import pytest

from tile_lab.errors import EmulationError, TileLabError
from tile_lab.request import (
    MODES,
    CppSource,
    EmulateOptions,
    LaunchOptions,
    Request,
    RunSettings,
    SanitizeOptions,
    parse_show,
    spec_fields,
)


def test_a_request_is_frozen_and_its_hints_cannot_change_under_it():
    hints = {"num_ctas": 2}
    req = Request(object(), args=[1, 2], hints=hints, grid=[4])
    hints["num_ctas"] = 4  # the caller's dict changes; the request's copy does not
    assert req.hints["num_ctas"] == 2 and req.args == (1, 2) and req.grid == (4,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.arch = "sm_90"  # type: ignore[misc]
    with pytest.raises(TypeError):
        req.hints["num_ctas"] = 8  # type: ignore[index]


def test_derived_requests_are_new_ones():
    req = Request(object(), sig="f32[4]")
    profiled = dataclasses.replace(req, arch="sm_90", panes=("sass",))
    assert (req.arch, req.panes) == (None, None) and profiled.arch == "sm_90"
    assert req.inspects and req.spec == "f32[4]"


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_runs_and_none_inspects(mode):
    assert not Request(object(), mode=mode).inspects
    assert not Request(object(), partition=True).inspects


def test_bad_mode_and_settings_fail_where_they_are_made():
    with pytest.raises(ValueError, match="mode='fly'"):
        Request(object(), mode="fly")
    with pytest.raises(ValueError, match="launch_fallback='gpu'"):
        RunSettings(launch_fallback="gpu")
    with pytest.raises(ValueError, match="max_steps=-1"):
        RunSettings(max_steps=-1)


def test_spec_fields_split_the_python_apis_one_argument():
    assert spec_fields("f32[4], 128") == {"sig": "f32[4], 128"}
    assert Request(object(), **spec_fields([1, 2])).args == (1, 2)


def test_a_cpp_kernel_is_a_value():
    src = CppSource("__tile_global__ void k() {}", "k", "cell.cu")
    assert Request(src).kernel == CppSource("__tile_global__ void k() {}", "k", "cell.cu")


def test_parse_show_keeps_the_order_given_and_names_the_first_bad_pane():
    assert parse_show("sass, source,partition") == (("sass", "source"), True, None)
    assert parse_show(["tileir", "nope", "worse"])[2] == "nope"
    assert parse_show(None) == (None, False, None)


def test_each_modes_options_are_frozen_typed_fields_with_defaults():
    req = Request(object(), mode="sanitize", sanitize=SanitizeOptions(outputs=["c", "d"]))
    assert req.sanitize.outputs == ("c", "d") and req.sanitize.partial is None
    assert req.emulate == EmulateOptions() and req.launch == LaunchOptions()
    assert (req.emulate.padding, req.launch.fallback, req.launch.timeout) == ("poison", None,
                                                                              120.0)
    for opts, name in ((req.emulate, "padding"), (req.sanitize, "outputs"),
                       (req.launch, "fallback")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(opts, name, None)
    # a name stays a name (the sanitizer reads "c" as ["c"]), a generator is kept as a tuple
    assert SanitizeOptions("c", (n for n in "ab")) == SanitizeOptions("c", ("a", "b"))


def test_options_refuse_bad_values_as_the_api_always_did():
    with pytest.raises(EmulationError, match="padding must be one of 'poison', 'zero', "
                                             "'hardware', got 'zeros'"):
        EmulateOptions(padding="zeros")
    with pytest.raises(TileLabError, match="fallback='cpu': the only fallback is 'emulate'"):
        LaunchOptions(fallback="cpu")
    EmulateOptions(padding="hardware", blocks=[(0,)])  # blocks: checked against the grid later
