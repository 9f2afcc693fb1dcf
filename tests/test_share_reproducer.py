"""``tile_lab.reproducer``: the folder reproduces a tileiras failure, a front-end failure and
a working kernel in a fresh process that cannot import tile_lab (run.py needs only cuda-tile
and NumPy), and reruns the working one on the emulator (and, marked gpu, on the GPU)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from kernels_share import fp8_mma, reads_a_dict, scale_rows, tileiras_rejects

import tile_lab
from tile_lab.errors import SignatureError

ROOT = Path(__file__).resolve().parent.parent


def _run(folder: Path, *flags: str, tile_lab_importable: bool = False,
         tmp: Path | None = None) -> subprocess.CompletedProcess:
    """``python run.py FLAGS`` in ``folder``, in a fresh process; unless asked, a module named
    tile_lab that refuses to import shadows the real one (run.py must not need it)."""
    env = dict(os.environ)
    # Entries already on PYTHONPATH stay (on the GPU machine cuda.tile itself is carried there);
    # the first entry decides which tile_lab a fresh process finds.
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if tile_lab_importable:
        first = ROOT
    else:
        first = (tmp or folder.parent) / "no_tile_lab"
        first.mkdir(exist_ok=True)
        (first / "tile_lab.py").write_text(
            "raise ImportError('run.py imported tile_lab')\n")
    env["PYTHONPATH"] = os.pathsep.join([str(first), *kept])
    return subprocess.run([sys.executable, "run.py", *flags], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_kernel_tileiras_rejects_fails_the_same_way_in_a_fresh_process(tmp_path):
    src = np.zeros((1, 4, 32), np.float32)
    rep = tile_lab.reproducer(tileiras_rejects, (1,), (src,), tmp_path / "bug", arch="sm_90")
    assert rep.outcome == "tileiras" and "failed to compile Tile IR program" in rep.message
    record = json.loads((rep.path / "repro.json").read_text())
    assert record["outcome"]["returncode"] == 5
    assert record["outcome"]["error_type"] == "CompilerExecutionError"
    assert record["tileiras"]["argv"][:3] == ["kernel.tileirbc", "-o", "kernel.cubin"]
    assert "--gpu-name=sm_90" in record["tileiras"]["argv"]
    assert record["versions"]["tileiras"] and record["versions"]["cuda-tile"]
    assert (rep.path / "kernel.tileirbc").stat().st_size > 0
    assert "ROWS = 1" in (rep.path / "kernel.py").read_text()
    # the zip holds the same folder; unpack it elsewhere and reproduce from there
    unpacked = tmp_path / "elsewhere"
    with zipfile.ZipFile(rep.zip_path) as zf:
        zf.extractall(unpacked)
    folder = unpacked / "bug"
    checked = _run(folder, "--check", tmp=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # --check answers with its status and one line (it printed the whole report)
    assert checked.stdout == "REPRODUCED the recorded outcome\n" and checked.stderr == ""
    raised = _run(folder, tmp=tmp_path)  # without --check: the report, the error re-raised
    out = raised.stdout
    assert "exit status 5" in out and "failed to compile Tile IR program" in out
    assert out.count("same as recorded") == 2 and "REPRODUCED" in out
    assert raised.returncode == 1
    assert "CompilerExecutionError: Return code 5" in raised.stderr
    assert "failed to compile Tile IR program" in raised.stderr


def test_a_front_end_failure_is_reproduced_too(tmp_path):
    import ml_dtypes

    a = np.zeros((64, 32), ml_dtypes.float8_e4m3fn)
    b = np.zeros((32, 64), ml_dtypes.float8_e4m3fn)
    c = np.zeros((64, 64), np.float32)
    rep = tile_lab.reproducer(fp8_mma, (1,), (a, b, c), tmp_path / "fe", arch="sm_80")
    assert rep.outcome == "frontend" and "not supported on sm_80" in rep.message
    assert not (rep.path / "kernel.tileirbc").exists()
    proc = _run(rep.path, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "REPRODUCED the recorded outcome\n"
    proc = _run(rep.path)
    assert "not supported on sm_80" in proc.stdout and "REPRODUCED" in proc.stdout


def _scale_args(n=96):
    x = np.arange(n * 32, dtype=np.float32).reshape(n, 32) / 7
    return [x, np.zeros_like(x), 1.5, 32]


def test_a_working_kernel_compiles_and_reruns_on_the_emulator(tmp_path):
    args = _scale_args()
    rep = tile_lab.reproducer(scale_rows, (3,), args, tmp_path / "ok", arch="sm_90")
    assert rep.outcome == "ok" and (rep.path / "kernel.cubin").stat().st_size > 0
    text = (rep.path / "kernel.py").read_text()
    assert "def _scaled(tile, factor)" in text and "Const = ct.Constant[int]" in text
    proc = _run(rep.path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compiled" in proc.stdout and "REPRODUCED" in proc.stdout
    emulated = _run(rep.path, "--emulate", tile_lab_importable=True)
    assert emulated.returncode == 0, emulated.stdout + emulated.stderr
    expected = _scale_args()
    tile_lab.emulate(scale_rows, (3,), expected)
    digest = hashlib.sha256(expected[1].tobytes()).hexdigest()[:16]
    assert f"argument 2: float32[96, 32] sha256 {digest}" in emulated.stdout
    # without tile_lab, --emulate says what it needs
    missing = _run(rep.path, "--emulate")
    assert missing.returncode == 2 and "--emulate needs tile_lab" in missing.stdout


def test_large_arrays_become_a_seed_and_a_shape(tmp_path):
    rep = tile_lab.reproducer(scale_rows, (3,), _scale_args(), tmp_path / "big",
                              arch="sm_90", max_inline_bytes=0)
    record = json.loads((rep.path / "repro.json").read_text())
    assert [a["kind"] for a in record["args"]] == ["random", "random", "scalar", "scalar"]
    assert not (rep.path / "args.npz").exists()
    proc = _run(rep.path, "--emulate", tile_lab_importable=True)
    assert proc.returncode == 0 and "float32[96, 32]" in proc.stdout
    # two arrays of one shape get values of their own, not the same values twice
    assert record["args"][0]["seed"] != record["args"][1]["seed"]
    digests = re.findall(r"argument [12]: float32\[96, 32\] sha256 (\w+)", proc.stdout)
    assert len(digests) == 2 and digests[0] != digests[1]


def test_an_existing_folder_of_other_files_is_never_overwritten(tmp_path):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(SignatureError, match="not a tile_lab reproducer"):
        tile_lab.reproducer(scale_rows, (3,), _scale_args(), precious, arch="sm_90")
    assert (precious / "notes.txt").read_text() == "keep me"
    # a previous reproducer is replaced
    rep = tile_lab.reproducer(scale_rows, (3,), _scale_args(), tmp_path / "r", arch="sm_90")
    again = tile_lab.reproducer(scale_rows, (3,), _scale_args(), rep.path, arch="sm_90")
    assert again.outcome == "ok"


def test_names_kernel_py_lacks_are_said(tmp_path):
    x = np.zeros((128, 4), np.float32)
    rep = tile_lab.reproducer(reads_a_dict, (1,), (x, x.copy()), tmp_path / "d", arch="sm_90")
    assert rep.unresolved == ("LIMITS",) and "kernel.py LACKS LIMITS" in rep.summary()


@pytest.mark.gpu
def test_a_working_kernel_reruns_on_the_gpu(tmp_path):
    rep = tile_lab.reproducer(scale_rows, (3,), _scale_args(), tmp_path / "gpu")
    record = json.loads((rep.path / "repro.json").read_text())
    assert record["versions"]["gpu"] and record["versions"]["driver"]
    proc = _run(rep.path, "--gpu", tile_lab_importable=True)
    print(proc.stdout)  # names the device: "launched grid (3,) on NVIDIA ... (driver CUDA ...)"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "launched grid (3,) on" in proc.stdout and "GPU and emulator AGREE" in proc.stdout


# CuPy and torch as a machine without a GPU has them: CuPy's runtime calls fail (as CuPy's
# CUDARuntimeError does), torch is a CPU-only build.
_CUPY_WITHOUT_DEVICE = '''
class CUDARuntimeError(RuntimeError):
    pass


def _no_device(*args):
    raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")


class _runtime:
    getDeviceCount = getDeviceProperties = driverGetVersion = staticmethod(_no_device)


class cuda:
    runtime = _runtime
    get_current_stream = staticmethod(_no_device)
'''
_TORCH_CPU_ONLY = '''
__version__ = "2.9.1+cpu"


class version:
    cuda = None


def _no_driver(*args):
    raise RuntimeError("Found no NVIDIA driver on your system.")


class cuda:
    is_available = staticmethod(lambda: False)
    current_stream = get_device_name = synchronize = staticmethod(_no_driver)
'''


def test_run_py_refuses_in_one_line_what_it_cannot_do(tmp_path):
    rep = tile_lab.reproducer(scale_rows, (3,), _scale_args(), tmp_path / "r", arch="sm_90")
    shadow = tmp_path / "no_tile_lab"  # first on run.py's path (see _run)
    for name, text in (("cupy", _CUPY_WITHOUT_DEVICE), ("torch", _TORCH_CPU_ONLY)):
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(text)
    # --gpu without a GPU: what is missing, in one line, and no traceback
    proc = _run(rep.path, "--gpu", tmp=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "--gpu: no GPU to launch on: CuPy finds no CUDA device (cudaErrorNoDevice: no "
        "CUDA-capable device is detected); torch 2.9.1+cpu (a CPU-only build) finds no CUDA "
        "device")
    # an abbreviated option is refused, not taken for the one it begins
    abbreviated = _run(rep.path, "--gp", tmp=tmp_path)
    assert abbreviated.returncode == 2 and abbreviated.stdout == ""
    assert "run.py: error: unrecognized arguments: --gp" in abbreviated.stderr
