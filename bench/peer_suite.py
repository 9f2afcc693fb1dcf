"""Run a cutile-python checkout's own test suite natively and on tile_lab's emulator.

    python bench/peer_suite.py PATH [--mode auto|native|emulated|both] [-n N] [--out F.json.gz]

PATH is a checkout of NVIDIA's cutile-python (or its ``test/`` folder) that the user names;
nothing of it is copied here. The suite runs with pytest in PATH/test:

* **native**: plain pytest (cuTile compiles and launches on the GPU);
* **emulated**: the same files with ``TILE_LAB_EMULATE=1`` and ``-p tile_lab.testing``. On a
  GPU machine (``--tile-lab-device=cuda``) torch's CUDA tensors are real and are copied to the
  host and back around each emulated launch; on a CPU-only machine (``--tile-lab-device=cpu``)
  torch's CUDA device is played by the CPU (``tile_lab.testing``, README "Testing a cuTile
  project on the CPU").

``--mode auto`` (the default) runs both on a machine where torch sees a GPU and emulated only
elsewhere; there the natively passing set can come from an earlier GPU run
(``--native-from gpu.json.gz``). Each run is ``pytest <files> -q -o addopts= -p
no:cacheprovider --continue-on-collection-errors --timeout T [-n N] --junitxml ...``; the
junit XML is parsed into one outcome per test id (passed, failed, error, skipped) and the
first line of its error. Written: a JSON file (gzip-compressed when the name ends in ``.gz``)
with the command, wall time and outcomes of each run, and the comparison: how many natively
passing tests pass emulated (the ratio), by file and by error class (the first line of the
emulated error). The tables are printed too.

The default files are the 57 of issue 31 (the suite's files that launch kernels);
``--files`` names others, ``-k`` narrows as pytest's does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# issue 31's list (it says 57 files and names these 56): the suite's files that launch kernels
DEFAULT_FILES = tuple(f"test_{name}.py" for name in (
    "copy", "load_store", "load_store_advanced_indexing", "array_slice", "tiled_view",
    "reduction", "scan", "atomic", "gather_scatter", "mma", "cast", "binary_elementwise",
    "reshape", "transpose", "cat", "full", "select", "extract", "insert", "pack_unpack",
    "softmax", "attention", "control_flow", "range", "tuple", "tuple_arguments",
    "dataclass", "closure", "helper_function", "constant", "static_eval", "static_iter",
    "static_assert", "enum", "list", "dict", "unpacking", "array", "num_tiles", "fma",
    "astile", "raw_array_memory", "group_gemm", "mma_scaled", "print", "assert",
    "contextlib_contextmanager", "tuple_comprehension", "constfold", "loose_typing",
    "typeinfer", "global_variables", "uninitialized_vars", "int64_kernel_args", "alias",
    "unary_elementwise"))

PASSED = "passed"


# ---- running ---------------------------------------------------------------------------------

def test_dir(path: str | os.PathLike) -> Path:
    """The suite's folder: PATH/test for a checkout, PATH itself for its test folder."""
    p = Path(path).expanduser().resolve()
    if (p / "test" / "conftest.py").is_file():
        return p / "test"
    if (p / "conftest.py").is_file() or any(p.glob("test_*.py")):
        return p
    raise SystemExit(f"peer_suite: {path}: not a cutile-python checkout (no test/conftest.py)")


def gpu_present(python: str) -> bool:
    """Whether torch in ``python`` sees a CUDA GPU (asked in a subprocess: nothing here
    imports torch)."""
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    try:
        return subprocess.run([python, "-c", probe], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def suite_config(suite: Path, scratch: Path) -> Path:
    """The pytest config the suite runs under: its checkout's own ``pytest.ini`` (markers,
    file patterns), else an empty one, never a config pytest would find further up (a copy of
    the suite inside another project would run under that project's warning filters)."""
    own = suite.parent / "pytest.ini"
    if own.is_file():
        return own
    empty = scratch / "pytest.ini"
    empty.write_text("[pytest]\n")
    return empty


def pytest_command(python: str, files: list[str], junit: Path, *, emulated: bool,
                   device: str, workers: int, timeout: int, keyword: str | None,
                   config: Path | None = None) -> list[str]:
    cmd = [python, "-m", "pytest", *files, "-q", "-o", "addopts=", "-p", "no:cacheprovider",
           "--continue-on-collection-errors", "--timeout", str(timeout),
           f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    if config is not None:
        cmd += ["-c", str(config), "--rootdir", "."]  # run from the suite's folder
    if workers > 0:
        cmd += ["-n", str(workers)]
    if keyword:
        cmd += ["-k", keyword]
    if emulated:
        cmd += ["-p", "tile_lab.testing", f"--tile-lab-device={device}"]
    return cmd


def run_once(suite: Path, files: list[str], *, python: str, emulated: bool, device: str,
             workers: int, timeout: int, keyword: str | None,
             padding: str | None = None) -> dict[str, Any]:
    """One pytest run of ``files``: its command, wall time, exit status and outcomes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILE_LAB_")}
    if emulated:  # our tile_lab, whether or not it is installed where the suite runs
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["TILE_LAB_EMULATE"] = "1"
        if padding:
            env["TILE_LAB_PADDING"] = padding
    with tempfile.TemporaryDirectory(prefix="peer_suite_") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = pytest_command(python, files, junit, emulated=emulated, device=device,
                             workers=workers, timeout=timeout, keyword=keyword,
                             config=suite_config(suite, Path(tmp)))
        started, cpu_before = time.perf_counter(), _children_cpu()
        proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        cpu = _children_cpu() - cpu_before  # on a shared machine: what an idle one needs
        tests = parse_junit(junit) if junit.is_file() else {}
    shown = [("<junit>" if str(junit) in a else a) for a in cmd[1:]]
    return {"command": " ".join(["python", *shown]),
            "mode": "emulated" if emulated else "native", "device": device,
            "padding": (padding or "hardware (program mode's default)") if emulated else None,
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "returncode": proc.returncode,
            "counts": dict(Counter(outcome_of(v) for v in tests.values())),
            "tail": proc.stdout[-1500:] if not tests else proc.stdout[-300:],
            "tests": tests}


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (pytest and its
    workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---- junit XML -------------------------------------------------------------------------------

def test_id(classname: str, name: str) -> str:
    """``test_copy.TestX`` + ``test_a[p]`` -> ``test_copy.py::TestX::test_a[p]``; folders
    above the test module (``test.test_copy``, ``.peer.test.test_copy``: a rootdir above the
    suite) are dropped, so runs from different rootdirs compare."""
    dotted = [p for p in classname.split(".") if p]
    first = next((i for i, p in enumerate(dotted) if p.startswith(("test_", "bench_"))), None)
    if first is None:
        return "::".join(["<collection>", *dotted, name])
    return "::".join([f"{dotted[first]}.py", *dotted[first + 1:], name])


def first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


def parse_junit(path: str | os.PathLike) -> dict[str, Any]:
    """``{test id: "passed" | [outcome, first line of the error]}`` from pytest's junit XML
    (outcomes: passed, failed, error, skipped; a test both failed and errored in teardown
    counts as failed)."""
    tests: dict[str, Any] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tid = test_id(case.get("classname", ""), case.get("name", ""))
        outcome, error = PASSED, None
        for child in case:
            kind = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(child.tag)
            if kind is None or (outcome == "failed" and kind == "error"):
                continue
            outcome = kind
            error = first_line(child.get("message")) or first_line(child.text)
        tests[tid] = PASSED if outcome == PASSED else [outcome, error]
    return tests


def outcome_of(value: Any) -> str:
    return value if isinstance(value, str) else value[0]


# ---- comparing -------------------------------------------------------------------------------

def error_class(message: str) -> str:
    """An error's first line with numbers folded, so that one cause is one row."""
    return re.sub(r"\d+", "N", message)[:120]


def compare(native: dict[str, Any], emulated: dict[str, Any]) -> dict[str, Any]:
    """Of the natively passing tests, how many pass emulated, by file and by error class."""
    passing = sorted(t for t, v in native.items() if v == PASSED)
    by_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    classes: Counter[str] = Counter()
    example: dict[str, str] = {}
    for tid in passing:
        row = by_file[tid.split("::", 1)[0]]
        row[0] += 1
        got = emulated.get(tid, ["missing", "not run emulated"])
        if got == PASSED:
            row[1] += 1
            continue
        key = error_class(f"{outcome_of(got)}: {got[1] if not isinstance(got, str) else ''}")
        classes[key] += 1
        example.setdefault(key, tid)
    both = sum(r[1] for r in by_file.values())
    return {"native_passed": len(passing), "emulated_passed_of_those": both,
            "ratio": round(both / len(passing), 4) if passing else None,
            "by_file": {f: {"native_passed": r[0], "emulated_passed": r[1]}
                        for f, r in sorted(by_file.items())},
            "by_error": [{"error": k, "tests": n, "example": example[k]}
                         for k, n in classes.most_common()]}


def per_file(tests: dict[str, Any]) -> dict[str, Counter[str]]:
    """Outcome counts per test file."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for tid, value in tests.items():
        out[tid.split("::", 1)[0]][outcome_of(value)] += 1
    return dict(sorted(out.items()))


def tables(comparison: dict[str, Any], runs: dict[str, Any]) -> str:
    lines = [f"{name}: {r['wall_s']:.0f} s wall, {r.get('cpu_s', 0):.0f} s CPU, {r['counts']} "
             f"({r['command']})" for name, r in runs.items()]
    if not comparison:  # no native outcomes to compare with: each run's counts per file
        for name, r in runs.items():
            lines += ["", f"{name}: {'file':42} {'passed':>7} {'failed':>7} {'error':>6} "
                      f"{'skipped':>7}"]
            lines += [f"{'':{len(name) + 2}}{f:42} {c['passed']:7d} {c['failed']:7d} "
                      f"{c['error']:6d} {c['skipped']:7d}"
                      for f, c in per_file(r["tests"]).items()]
    if comparison.get("ratio") is not None:
        c = comparison
        lines += ["", f"natively passing: {c['native_passed']}; pass emulated: "
                  f"{c['emulated_passed_of_those']} ({100 * c['ratio']:.1f} %)", "",
                  f"{'file':42} {'native':>7} {'emul.':>7} {'ratio':>7}"]
        for f, r in c["by_file"].items():
            ratio = r["emulated_passed"] / r["native_passed"]
            lines.append(f"{f:42} {r['native_passed']:7d} {r['emulated_passed']:7d} "
                         f"{100 * ratio:6.1f}%")
        lines += ["", f"{'tests':>6}  first line of the emulated error (example test)"]
        lines += [f"{e['tests']:6d}  {e['error']}  ({e['example']})" for e in c["by_error"]]
    return "\n".join(lines)


# ---- the command -----------------------------------------------------------------------------

def load(path: str | os.PathLike) -> dict[str, Any]:
    raw = Path(path).read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def save(data: dict[str, Any], path: str | os.PathLike) -> None:
    text = json.dumps(data, indent=None, separators=(",", ":"), sort_keys=True).encode()
    Path(path).write_bytes(gzip.compress(text, mtime=0) if str(path).endswith(".gz") else text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("path", help="a cutile-python checkout (or its test/ folder)")
    ap.add_argument("--mode", choices=("auto", "native", "emulated", "both"), default="auto")
    ap.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist workers (0: none)")
    ap.add_argument("--native-workers", type=int,
                    help="workers for the native run (default: -n; GPU memory may want fewer)")
    ap.add_argument("--files", nargs="+", help="test files (default: the 56 issue 31 names)")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression")
    ap.add_argument("--timeout", type=int, default=120, help="per-test limit (pytest-timeout)")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="where the emulated run's torch 'cuda' tensors live (auto: the GPU if "
                         "torch sees one, else the CPU; cpu: the CPU even on a GPU machine)")
    ap.add_argument("--padding", choices=("poison", "zero", "hardware"),
                    help="the emulated run's padding policy (TILE_LAB_PADDING; default hardware)")
    ap.add_argument("--native-from", help="a previous run's JSON: its native outcomes")
    ap.add_argument("--out", default="peer_suite.json.gz", help="JSON (.gz: compressed)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs pytest")
    a = ap.parse_args(argv)
    suite = test_dir(a.path)
    wanted = a.files or list(DEFAULT_FILES)
    files = [f for f in wanted if (suite / f).is_file()]
    gpu = gpu_present(a.python)
    modes = {"auto": ("native", "emulated") if gpu else ("emulated",),
             "both": ("native", "emulated")}.get(a.mode, (a.mode,))
    if "native" in modes and not gpu:
        raise SystemExit("peer_suite: a native run needs a GPU that torch sees")
    runs = {}
    for mode in modes:
        print(f"peer_suite: {mode} run of {len(files)} files in {suite} ...", flush=True)
        runs[mode] = run_once(suite, files, python=a.python, emulated=mode == "emulated",
                              device=a.device if a.device != "auto" else
                              ("cuda" if gpu else "cpu"),
                              workers=a.native_workers if mode == "native"
                              and a.native_workers is not None else a.workers,
                              timeout=a.timeout, keyword=a.keyword, padding=a.padding)
    native = runs.get("native", {}).get("tests")
    if native is None and a.native_from:
        native = load(a.native_from)["runs"]["native"]["tests"]
    comparison = compare(native, runs["emulated"]["tests"]) \
        if native is not None and "emulated" in runs else {}
    data = {"suite": str(suite), "files": files,
            "missing_files": sorted(set(wanted) - set(files)), "gpu": gpu, "runs": runs,
            "comparison": comparison}
    save(data, a.out)
    print(tables(comparison, runs))
    print(f"peer_suite: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
