"""tile_lab.emulate / trace / sanitize / launch / crosscheck / profile (tile_lab/api.py): each
builds one frozen
Request carrying its options and hands it to the core function of its mode, the one the
magic's --emulate & co. reach too. What the engines do is tested in their own modules."""

from __future__ import annotations

import inspect

import cuda.tile as ct
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from shared_kernels import vadd_cell

import tile_lab
from tile_lab import _run, api
from tile_lab.errors import EmulationError, TileLabError
from tile_lab.request import (
    CrossCheckRun,
    EmulateOptions,
    LaunchOptions,
    ProfileOptions,
    Request,
    SanitizeOptions,
)


@pytest.fixture
def core(monkeypatch):
    """The requests the core's per-mode functions receive, by mode (their engines not run)."""
    got: list[tuple[str, Request]] = []
    for mode in ("emulate", "trace", "sanitize", "launch", "crosscheck", "profile"):
        def record(req, mode=mode):
            got.append((mode, req))
            return f"{mode.upper()} RESULT"
        monkeypatch.setattr(_run, f"{mode}_request", record)
    return got


def test_the_public_names_are_the_api_modules():
    for name in ("emulate", "trace", "sanitize", "launch", "crosscheck", "profile"):
        assert getattr(tile_lab, name) is getattr(api, name)


def test_emulate_and_trace_build_one_request_with_their_options(core):
    kernel, x = object(), np.zeros(4)
    assert tile_lab.emulate(kernel, [2], [x, 4], padding="zero") is None
    blocks = [(0,), (1,)]
    assert tile_lab.trace(kernel, (2,), (x, 4), blocks=blocks) == "TRACE RESULT"
    (m1, emu), (m2, tr) = core
    assert (m1, m2) == ("emulate", "trace")
    assert emu.kernel is kernel and emu.grid == (2,) and emu.args[0] is x and emu.args[1] == 4
    assert emu.mode == "emulate" and emu.emulate == EmulateOptions(padding="zero")
    assert tr.mode == "trace" and tr.emulate == EmulateOptions("poison", blocks)


def test_sanitize_and_launch_build_one_request_with_their_options(core):
    kernel, stream = object(), object()
    assert tile_lab.sanitize(kernel, (1,), (), outputs=["c"], partial="d") == "SANITIZE RESULT"
    tile_lab.launch(kernel, 3, (), hints={"num_ctas": 2}, isolate=True, stream=stream,
                    fallback="emulate", timeout=5.0)
    (_, san), (_, lau) = core
    assert san.mode == "sanitize" and san.sanitize == SanitizeOptions(("c",), "d")
    assert lau.mode == "launch" and lau.grid == 3 and dict(lau.hints) == {"num_ctas": 2}
    assert lau.launch == LaunchOptions(isolate=True, stream=stream, fallback="emulate",
                                       timeout=5.0)


def test_bad_options_fail_as_before_without_reaching_the_core(core):
    with pytest.raises(EmulationError, match="padding must be one of 'poison', 'zero', "
                                             "'hardware', got 'nan'"):
        tile_lab.emulate(object(), (1,), (), padding="nan")
    with pytest.raises(TileLabError, match="fallback='cpu': the only fallback is 'emulate'"):
        tile_lab.launch(object(), (1,), (), fallback="cpu")
    assert core == []


def test_signatures_and_defaults_are_unchanged():
    for name in ("emulate", "trace", "sanitize", "launch"):
        assert list(inspect.signature(getattr(tile_lab, name)).parameters)[:3] == \
            ["kernel", "grid", "args"]
    assert tile_lab.emulate.__kwdefaults__ == {"padding": "poison"}
    assert tile_lab.trace.__kwdefaults__ == {"blocks": None, "padding": "poison"}
    assert tile_lab.sanitize.__kwdefaults__ == {"outputs": None, "partial": None}
    assert tile_lab.launch.__kwdefaults__ == {"hints": None, "isolate": False, "stream": None,
                                              "fallback": None, "timeout": 120.0}
    assert tile_lab.emulate.__doc__.startswith("Run ``kernel`` over ``grid`` on the CPU")


def test_the_engines_receive_the_requests_pieces(monkeypatch):
    import tile_lab.emulator
    import tile_lab.gpu
    import tile_lab.sanitizer.checks

    calls = []
    monkeypatch.setattr(tile_lab.emulator, "trace_kernel",
                        lambda *a, **kw: calls.append(("trace", a, kw)))
    monkeypatch.setattr(tile_lab.sanitizer.checks, "sanitize_kernel",
                        lambda *a, **kw: calls.append(("sanitize", a, kw)))
    monkeypatch.setattr(tile_lab.gpu, "launch_kernel",
                        lambda *a, **kw: calls.append(("launch", a, kw)))
    kernel = object()
    tile_lab.trace(kernel, (2,), [1], blocks=[(1,)], padding="hardware")
    tile_lab.sanitize(kernel, (2,), [1], outputs={"x"})
    tile_lab.launch(kernel, (2,), [1], hints={"occupancy": 2}, fallback="emulate")
    assert calls == [
        ("trace", (kernel, (2,), (1,)), {"blocks": [(1,)], "padding": "hardware"}),
        ("sanitize", (kernel, (2,), (1,)), {"outputs": ("x",), "partial": None}),
        ("launch", (kernel, (2,), (1,)), {"hints": {"occupancy": 2}, "isolate": False,
                                          "stream": None, "fallback": "emulate",
                                          "timeout": 120.0})]


@pytest.mark.parametrize("mode", ["emulate", "sanitize", "launch"])
def test_the_magic_and_the_api_reach_the_same_core_function(core, mode):
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "tile_lab")
    a = np.ones(512, np.float32)
    sh.user_ns.update(ea=a, eb=a.copy(), ec=a.copy())
    sh.run_cell_magic("tile", f'--{mode} --grid "(4,)" --args "ea, eb, ec, 128"', vadd_cell())
    getattr(tile_lab, mode)(sh.user_ns["vadd"], (4,), (a, a, a, 128))
    (m_cell, from_cell), (m_api, from_api) = core
    assert m_cell == m_api == mode
    assert from_cell.kernel is from_api.kernel and from_cell.grid == from_api.grid == (4,)
    assert from_cell.mode == from_api.mode == mode


def test_crosscheck_and_profile_build_one_request_with_their_options(core):
    kernel, options, gpu = object(), object(), object()
    assert tile_lab.crosscheck(kernel, (2,), [1], options=options, gpu=gpu) == \
        "CROSSCHECK RESULT"
    assert tile_lab.profile(kernel, (2,), [1], hints={"occupancy": 2}, timeout_s=30.0,
                            plans=["a", "b"], keep_report="/r") == "PROFILE RESULT"
    (m1, cc), (m2, pr) = core
    assert (m1, cc.mode, m2, pr.mode) == ("crosscheck", "crosscheck", "profile", "profile")
    assert cc.grid == (2,) and cc.args == (1,) and cc.crosscheck == CrossCheckRun(options, gpu)
    assert dict(pr.hints) == {"occupancy": 2}
    assert pr.profile == ProfileOptions(timeout_s=30.0, plans=("a", "b"), keep_report="/r")


def test_crosscheck_and_profile_engines_receive_the_requests_pieces(monkeypatch):
    import tile_lab.crosschecking
    import tile_lab.profiling
    from tile_lab.profiling import ncu

    calls = []
    monkeypatch.setattr(tile_lab.crosschecking, "crosscheck_kernel",
                        lambda *a, **kw: calls.append(("crosscheck", a, kw)))
    monkeypatch.setattr(tile_lab.profiling, "profile_kernel",
                        lambda *a, **kw: calls.append(("profile", a, kw)))
    kernel, gpu = object(), object()
    tile_lab.crosscheck(kernel, (2,), [1], gpu=gpu)
    tile_lab.profile(kernel, (2,), [1])
    assert calls[0] == ("crosscheck", (kernel, (2,), (1,)), {"options": None, "gpu": gpu})
    assert calls[1] == ("profile", (kernel, (2,), (1,)),
                        {"hints": None, "timeout_s": 600.0, "keep_report": None})
    # without a GPU side of its own, crosscheck's is CuPy's, given the request's hints
    calls.clear()
    _run.crosscheck_request(Request(kernel, (1,), grid=(2,), hints="occupancy=2",
                                    mode="crosscheck"))
    side = calls[0][2]["gpu"]
    assert isinstance(side, tile_lab.crosschecking.CupyGpu) and side.hints == {"occupancy": 2}
    assert ncu.PLANS  # profile_kernel's own default plans apply when the request names none


@ct.kernel
def add_tiles(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))


def test_a_crosscheck_through_the_request_compares_a_scripted_gpu_on_the_cpu():
    from crosscheck_fakes import ScriptedGpu

    a = np.arange(512, dtype=np.float32)
    b, c = a * 2, np.zeros_like(a)
    gpu = ScriptedGpu()
    result = tile_lab.crosscheck(add_tiles, (4,), (a, b, c, 128), gpu=gpu)
    assert gpu.seen is not None and result.ok
    assert (c == 0).all()  # the caller's arrays are not written
