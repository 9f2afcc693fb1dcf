"""Running the profiler, without a GPU: the missing-profiler and no-permission errors, and
the plan fallback of ``tile_lab.profile`` driven through a fake ``ncu`` that replays the
recorded exports of the GEMM cliff config (fixtures/profile)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.errors import ProfilerError, ProfilerUnavailable
from tile_lab.profiling import ncu

FIX = Path(__file__).parent / "fixtures" / "profile"

FAKE_NCU = r'''#!{python}
"""Fake ncu: SourceCounters runs fail like the cliff config did; others replay the
recorded PC-sampling run; --import prints the matching recorded export."""
import os, sys
FIX = {fix!r}
MODE = {mode!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)")
    sys.exit(0)
if "--import" in args:
    kind = open(args[args.index("--import") + 1]).read()
    page = args[args.index("--page") + 1]
    name = {{("failed", "source"): "gemm_cliff_failed_head.source.csv",
             ("failed", "raw"): "gemm_cliff_failed.raw.csv",
             ("ok", "source"): "gemm_cliff_sampling_head.source.csv",
             ("ok", "raw"): "gemm_cliff.raw.csv"}}[kind, page]
    sys.stdout.write(open(os.path.join(FIX, name)).read())
    sys.exit(0)
assert "tile_lab.profiling.target" in args, args
if MODE == "noperm":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
          "GPU Performance Counters on the target device 0.")
    sys.exit(1)
report = args[args.index("-o") + 1]
failed = MODE == "fail" or "SourceCounters" in args
open(report, "w").write("failed" if failed else "ok")
if failed:
    print(open(os.path.join(FIX, "gemm_cliff_failed.ncu.log")).read())
    sys.exit(9)
print(open(os.path.join(FIX, "gemm_cliff.ncu.log")).read())
'''


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


def fake_ncu(tmp_path: Path, mode: str) -> str:
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable, fix=str(FIX), mode=mode))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def no_ncu(monkeypatch, tmp_path):
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "_NCU_PLACES", ())


@pytest.fixture
def fake_gpu(monkeypatch):
    """The GPU boundary answered as an H100 would, so profile() reaches the profiler."""
    from tile_lab.gpu import device

    monkeypatch.setattr(device, "require_gpu", lambda what="": None)
    monkeypatch.setattr(device, "local_arch", lambda: "sm_90")
    monkeypatch.setattr(device, "provenance", lambda **kw: SimpleNamespace(
        to_json_dict=lambda: {"gpu": "NVIDIA H100 80GB HBM3 (fake)", "arch": "sm_90"}))


def args():
    x = np.ones(4096, np.float32)
    return (x, x, np.zeros_like(x), 1024)


def test_missing_ncu_says_what_to_do(no_ncu):
    with pytest.raises(ProfilerUnavailable) as info:
        tile_lab.profile(vadd, (4,), args())
    text = info.value.render()
    assert "Nsight Compute (`ncu`)" in text and "not installed or not on PATH" in text
    assert "TILE_LAB_NCU" in text and "tile_lab.load_profile" in text


def test_ncu_env_that_is_not_an_executable(monkeypatch, tmp_path):
    monkeypatch.setenv(ncu.NCU_ENV, str(tmp_path / "nope"))
    with pytest.raises(ProfilerUnavailable, match="is not an executable"):
        ncu.find_ncu()


def test_counters_not_permitted(monkeypatch, tmp_path, fake_gpu):
    monkeypatch.setenv(ncu.NCU_ENV, fake_ncu(tmp_path, "noperm"))
    with pytest.raises(ProfilerUnavailable) as info:
        tile_lab.profile(vadd, (4,), args())
    assert "ERR_NVGPUCTRPERM" in info.value.message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in info.value.hint


def test_launch_failing_under_source_counters_falls_back_to_sampling(
        monkeypatch, tmp_path, fake_gpu):
    monkeypatch.setenv(ncu.NCU_ENV, fake_ncu(tmp_path, "sourcecounters-fail"))
    prof = tile_lab.profile(vadd, (4,), args(), keep_report=tmp_path / "kept")
    assert prof.collection["plan"] == "stall sampling only"
    assert prof.collection["ncu_version"] == "2025.3.1.0"
    assert len(prof.collection["failed_plans"]) == 1
    assert "LaunchFailed" in prof.collection["failed_plans"][0]
    assert prof.total_samples > 0 and not prof.has_executed
    assert prof.config == {"a": "float32[4096]", "b": "float32[4096]", "c": "float32[4096]",
                           "TILE": 1024, "grid": [4]}
    assert prof.provenance["gpu"].endswith("(fake)")
    assert prof.metrics.registers_per_thread == 255
    assert (tmp_path / "kept" / "source.csv").read_text().startswith('"Kernel Name"')


def test_every_plan_failing_is_an_error_with_ncus_words(monkeypatch, tmp_path, fake_gpu):
    monkeypatch.setenv(ncu.NCU_ENV, fake_ncu(tmp_path, "fail"))
    with pytest.raises(ProfilerError) as info:
        tile_lab.profile(vadd, (4,), args())
    assert info.value.message.count("LaunchFailed") == len(ncu.PLANS)
    assert "tile_lab.launch" in info.value.hint


def test_profile_command_leaves_clocks_alone():
    cmd = ncu.profile_command("ncu", ncu.SOURCE_COUNTERS, "^k(_|$)", Path("r.ncu-rep"), ["py"])
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("-c") + 1] == "1" and cmd[-1] == "py"
    assert "SourceCounters" in cmd and "SourceCounters" not in ncu.SAMPLING_ONLY.args()


def test_profile_tuning_profiles_best_and_worst(monkeypatch, tmp_path, fake_gpu):
    from tile_lab.tuning.result import Success, TuningResult
    from tile_lab.tuning.space import Config

    monkeypatch.setenv(ncu.NCU_ENV, fake_ncu(tmp_path, "sourcecounters-fail"))
    fast = Success(Config((("TILE", 1024),)), SimpleNamespace(mean_s=1e-4))
    slow = Success(Config((("TILE", 256),)), SimpleNamespace(mean_s=9e-4))
    result = TuningResult(kernel_name="vadd", successes=(slow, fast), failures=())
    seen = []

    def args_fn(cfg):
        seen.append(cfg["TILE"])
        return (*args()[:3], cfg["TILE"])

    shown = tile_lab.profile_tuning(vadd, result, lambda cfg: (4096 // cfg["TILE"],), args_fn)
    assert seen == [1024, 256]
    labels = [label for label, _ in shown.profiles]
    assert labels == ["best: TILE=1024 (tuned 100.0 µs)", "worst: TILE=256 (tuned 900.0 µs)"]
    assert [p.config["TILE"] for _, p in shown.profiles] == [1024, 256]
    assert "worst: TILE=256" in shown._repr_mimebundle_()["text/html"]
    with pytest.raises(ValueError, match="which="):
        tile_lab.profile_tuning(vadd, result, None, None, which=("median",))
