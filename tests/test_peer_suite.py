"""bench/peer_suite.py: junit XML to per-test outcomes, the native/emulated comparison by
file and error class, and a whole emulated run of a small suite of our own on the CPU."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("peer_suite", ROOT / "bench" / "peer_suite.py")
peer_suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer_suite)

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="test_a" name="test_ok[1]" time="0.1"/>
<testcase classname="test_a" name="test_bad" time="0.1">
  <failure message="AssertionError: Tensor-likes are not close!&#10;&#10;Mismatched 3 / 64">
  long traceback</failure></testcase>
<testcase classname="test_b.TestGroup" name="test_err" time="0.1">
  <error message="failed on setup with &quot;RuntimeError: no device&quot;">tb</error></testcase>
<testcase classname="test_b" name="test_skip" time="0.0">
  <skipped type="pytest.skip" message="needs sm_100">skip</skipped></testcase>
<testcase classname="test_b" name="test_fail_then_teardown" time="0.1">
  <failure message="ValueError: x">tb</failure><error message="teardown broke">tb</error>
</testcase>
</testsuite></testsuites>"""


def test_junit_becomes_one_outcome_per_test_id(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    tests = peer_suite.parse_junit(path)
    assert tests == {
        "test_a.py::test_ok[1]": "passed",
        "test_a.py::test_bad": ["failed", "AssertionError: Tensor-likes are not close!"],
        "test_b.py::TestGroup::test_err": ["error",
                                           'failed on setup with "RuntimeError: no device"'],
        "test_b.py::test_skip": ["skipped", "needs sm_100"],
        "test_b.py::test_fail_then_teardown": ["failed", "ValueError: x"],
    }


def test_comparison_counts_only_natively_passing_tests():
    native = {"test_a.py::t1": "passed", "test_a.py::t2": "passed", "test_a.py::t3": "passed",
              "test_b.py::t1": "passed", "test_b.py::t2": ["failed", "no"]}
    emulated = {"test_a.py::t1": "passed",
                "test_a.py::t2": ["failed", "AssertionError: 3 of 64 differ"],
                "test_a.py::t3": ["failed", "AssertionError: 5 of 64 differ"],
                "test_b.py::t2": "passed"}  # test_b.py::t1 missing: not run emulated
    c = peer_suite.compare(native, emulated)
    assert (c["native_passed"], c["emulated_passed_of_those"], c["ratio"]) == (4, 1, 0.25)
    assert c["by_file"] == {"test_a.py": {"native_passed": 3, "emulated_passed": 1},
                            "test_b.py": {"native_passed": 1, "emulated_passed": 0}}
    assert c["by_error"][0] == {"error": "failed: AssertionError: N of N differ", "tests": 2,
                                "example": "test_a.py::t2"}
    assert c["by_error"][1]["error"].startswith("missing")
    text = peer_suite.tables(c, {})
    assert "25.0 %" in text and "test_a.py" in text


OUR_SUITE = '''
import numpy as np
import pytest
import torch
import cuda.tile as ct


@ct.kernel
def plus_one(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, index=(bid,), tile=ct.load(x, index=(bid,), shape=(TILE,)) + 1)


@pytest.mark.parametrize("n", [64, 128])
def test_torch_cuda(n):
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (n // 32,), plus_one, (x, y, 32))
    torch.testing.assert_close(y, x + 1)


def test_wrong_on_purpose():
    x = np.zeros(32, dtype=np.float32)
    ct.launch(None, (1,), plus_one, (x, x, 32))
    assert x[0] == 2.0, "one, not two"
'''


@pytest.mark.timeout(300)
def test_an_emulated_run_of_our_own_small_suite_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    suite = tmp_path / "checkout" / "test"
    suite.mkdir(parents=True)
    (suite / "conftest.py").write_text("")
    (suite / "test_ours.py").write_text(textwrap.dedent(OUR_SUITE))
    # native outcomes recorded elsewhere (a GPU run): all three pass there
    ids = ["test_ours.py::test_torch_cuda[64]", "test_ours.py::test_torch_cuda[128]",
           "test_ours.py::test_wrong_on_purpose"]
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({"runs": {"native": {"tests": dict.fromkeys(ids, "passed")}}}))
    out = tmp_path / "run.json.gz"
    assert peer_suite.main([str(tmp_path / "checkout"), "--mode", "emulated",
                            "--files", "test_ours.py", "test_absent.py",
                            "--native-from", str(gpu), "--out", str(out)]) == 0
    data = peer_suite.load(out)
    run = data["runs"]["emulated"]
    assert run["tests"]["test_ours.py::test_torch_cuda[64]"] == "passed"
    assert run["tests"]["test_ours.py::test_wrong_on_purpose"][0] == "failed"
    assert run["counts"] == {"passed": 2, "failed": 1}
    assert data["missing_files"] == ["test_absent.py"]
    c = data["comparison"]
    assert (c["native_passed"], c["emulated_passed_of_those"]) == (3, 2)
    assert c["by_error"][0]["example"] == "test_ours.py::test_wrong_on_purpose"


def test_a_folder_that_is_no_suite_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="not a cutile-python checkout"):
        peer_suite.test_dir(tmp_path)
