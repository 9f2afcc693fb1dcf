"""Reproduce a cuTile kernel's compile (and launch) from this folder: ``python run.py``.

Written by ``tile_lab.reproducer`` next to ``repro.json`` (what was recorded), ``kernel.py``
(the kernel), ``args.npz`` (its array arguments) and ``kernel.tileirbc`` (the Tile IR
bytecode cuTile made of it). Needs Python >= 3.10, NumPy and cuda-tile (with tileiras);
tile_lab only for ``--emulate`` and for checking ``--gpu`` against the emulator.

    python run.py            reproduce the compile: (1) tileiras on the saved bytecode with the
                             recorded command line, (2) cuTile's own compile of kernel.py; then
                             re-raise the error if the recorded compile failed and it failed again
    python run.py --check    the same checks, quietly: one line, exit 0 when both match the
                             recording, 1 when not (for scripts, CI, git bisect)
    python run.py --emulate  run the kernel on tile_lab's CPU emulator (pip install tile_lab)
    python run.py --gpu      launch it on the GPU (CuPy or torch), compared with the emulator
                             when tile_lab is installed
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RECORD: dict = {}  # repro.json, read by main()


def main() -> int:
    RECORD.update(json.loads((HERE / "repro.json").read_text(encoding="utf-8")))
    # allow_abbrev=False: "--emu" is refused, not taken for --emulate
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--check", action="store_true",
                        help="exit 0 when the compile reproduces what was recorded, else 1")
    parser.add_argument("--emulate", action="store_true", help="run on tile_lab's emulator")
    parser.add_argument("--gpu", action="store_true", help="launch on the GPU")
    parser.add_argument("--grid", help="launch grid, e.g. 8,8 (default: the recorded one)")
    opts = parser.parse_args()
    if opts.check and not (opts.emulate or opts.gpu):
        report = io.StringIO()  # the report is for people; --check answers with its status
        with contextlib.redirect_stdout(report), contextlib.redirect_stderr(report):
            matched = _reproduce(opts)[0]
        print("REPRODUCED the recorded outcome" if matched else
              "DID NOT reproduce the recorded outcome (python run.py shows the report)")
        return 0 if matched else 1
    out = RECORD["outcome"]
    k = RECORD["kernel"]
    print(f"kernel {k['name']} from {k['origin']}, arch {RECORD['arch']}, "
          f"signature {RECORD['signature_text']}")
    print(f"recorded with {_versions(RECORD['versions'])}")
    print(f"recorded outcome: {_outcome_text(out)}")
    if opts.emulate or opts.gpu:
        return run(opts)
    matched, error = _reproduce(opts)
    print("\nREPRODUCED the recorded outcome" if matched else
          "\nDID NOT reproduce the recorded outcome (see above)")
    if error is not None and out["stage"] != "ok":
        raise error  # the same error, raised here for a full traceback
    return 0 if matched else 1


def _reproduce(opts: argparse.Namespace) -> tuple[bool, BaseException | None]:
    """Both compiles, reported on stdout: (whether both match the recording, cuTile's error)."""
    same_tileiras = compile_saved_bytecode()
    same_cutile, error = compile_with_cutile()
    return same_tileiras is not False and same_cutile, error


# -- compile ---------------------------------------------------------------------------

def compile_saved_bytecode() -> bool | None:
    """tileiras on ``kernel.tileirbc`` with the recorded arguments and environment; True
    when its exit status and error text match the recording (None: nothing to run)."""
    tool = RECORD["tileiras"]
    if not (HERE / "kernel.tileirbc").exists():
        print("\n[1] no Tile IR bytecode was recorded (cuTile's front end failed first)")
        return None
    exe = find_tileiras()
    print(f"\n[1] tileiras on the saved bytecode ({exe or 'tileiras: NOT FOUND'})")
    if exe is None:
        print("    install it: pip install 'cuda-tile[tileiras]'")
        return False
    env = {k: v for k, v in os.environ.items() if k not in tool["env_removed"]}
    env.update(tool["env_set"])
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(HERE / "kernel.tileirbc", Path(tmp) / "kernel.tileirbc")
        print("    $ cd <temp dir> && " + " ".join([exe, *tool["argv"]]))
        print(f"    environment: {', '.join(tool['env_removed'])} removed"
              + (f"; {tool['env_set']}" if tool["env_set"] else ""))
        try:
            proc = subprocess.run([exe, *tool["argv"]], cwd=tmp, env=env, capture_output=True,
                                  timeout=tool["timeout_s"])
        except subprocess.TimeoutExpired:
            print(f"    tileiras did not finish within {tool['timeout_s']} s")
            return RECORD["outcome"]["stage"] == "tileiras timeout"
        stderr = proc.stderr.decode("utf-8", "replace")
    print(f"    exit status {proc.returncode}" + (f"; stderr:\n{_indent(stderr)}" if stderr
                                                   else ""))
    rec = RECORD["outcome"]
    want_status = rec.get("returncode", 0)
    same = proc.returncode == want_status and (
        proc.returncode == 0 or stderr.strip() == rec.get("stderr", "").strip())
    print(f"    {'same as recorded' if same else 'DIFFERENT from recorded'} (recorded exit "
          f"status {want_status})")
    return same


def compile_with_cutile() -> tuple[bool, BaseException | None]:
    """cuTile's own compile of kernel.py for the recorded signature and arch (through its
    public ``cuda.tile.compilation.export_kernel``): (matches the recording, its error)."""
    print("\n[2] cuTile compiles kernel.py (cuda.tile.compilation.export_kernel, cubin)")
    try:
        from cuda.tile.compilation import export_kernel
    except ImportError as e:
        print(f"    cuda-tile is not installed ({e}): pip install 'cuda-tile[tileiras]'")
        return False, None
    kernel = load_kernel()
    signature = decode_signature(RECORD["signature"])
    error: BaseException | None = None
    try:
        export_kernel(kernel, [signature], io.BytesIO(), output_format="cubin",
                      gpu_code=RECORD["arch"])
    except Exception as e:  # what cuTile raises is the point: keep it for re-raising
        error = e
    rec = RECORD["outcome"]
    if error is None:
        print("    compiled")
        same = rec["stage"] == "ok"
    else:
        text = str(getattr(error, "message", error))
        print(f"    {type(error).__name__}: {_indent(text).strip()}")
        want = rec.get("cutile_error")
        same = rec["stage"] != "ok" and type(error).__name__ == rec.get("error_type") and (
            want is None or text.strip() == want.strip())
    print(f"    {'same as recorded' if same else 'DIFFERENT from recorded'}")
    return same, error


# -- run -------------------------------------------------------------------------------

def run(opts: argparse.Namespace) -> int:
    grid = tuple(int(g) for g in opts.grid.split(",")) if opts.grid else RECORD["grid"]
    if not grid:
        print("no launch grid was recorded: give one with --grid 8,8")
        return 2
    grid = tuple(grid)
    gpu = None
    if opts.gpu:  # before anything runs: without a GPU, one line saying what is missing
        try:
            gpu = _gpu_arrays()
        except NoGPU as e:
            print(f"--gpu: {e}")
            return 2
    kernel = load_kernel()
    args = load_args()
    expected = None
    try:
        import tile_lab
    except ImportError:
        tile_lab = None
    if opts.emulate:
        if tile_lab is None:
            print("--emulate needs tile_lab (pip install tile_lab)")
            return 2
        tile_lab.emulate(kernel, grid, args)
        print(f"\nemulated grid {grid} on the CPU (tile_lab {tile_lab.__version__}):")
        _report(args)
        return 0
    if tile_lab is not None:
        expected = load_args()
        tile_lab.emulate(kernel, grid, expected)
    import cuda.tile as ct

    device, stream, to_device, to_host = gpu
    dev_args = [to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    ct.launch(stream, grid, kernel, tuple(dev_args))
    got = [to_host(d) if isinstance(a, np.ndarray) else a for a, d in zip(args, dev_args)]
    print(f"\nlaunched grid {grid} on {device}:")
    _report(got)
    if expected is None:
        print("(install tile_lab to compare with the CPU emulator)")
        return 0
    worst = 0.0
    ok = True
    for i, (g, e) in enumerate(zip(got, expected)):
        if isinstance(g, np.ndarray) and g.size:
            diff = float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64))))
            scale = float(np.max(np.abs(e.astype(np.float64)))) or 1.0
            worst = max(worst, diff)
            tol = 1e-2 if g.dtype.itemsize <= 2 else 1e-4
            ok = ok and diff <= tol * scale
            print(f"  argument {i + 1}: max |GPU - emulator| = {diff:.3g}")
    print("GPU and emulator AGREE" if ok else "GPU and emulator DIFFER")
    return 0 if ok else 1


class NoGPU(Exception):
    """Neither CuPy nor torch reaches a CUDA device; the message says what each lacks."""


def _gpu_arrays():
    """(device name, stream, to_device, to_host) through CuPy, else torch."""
    missing = []
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except ImportError:
        missing.append("CuPy is not installed (pip install cupy-cuda13x)")
    except Exception as e:  # no driver, no device, no CUDA runtime: CuPy says which
        missing.append(f"CuPy finds no CUDA device ({_first_line(e)})")
    else:
        stream = cupy.cuda.get_current_stream()
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        name += f" (driver CUDA {cupy.cuda.runtime.driverGetVersion()})"

        def to_host_cupy(d):
            stream.synchronize()
            return d.get()
        return name, stream, cupy.asarray, to_host_cupy
    try:
        import torch
    except ImportError:
        missing.append("torch is not installed")
    else:
        if torch.cuda.is_available():
            return _torch_arrays(torch)
        build = "a CPU-only build" if torch.version.cuda is None else \
            f"built for CUDA {torch.version.cuda}"
        missing.append(f"torch {torch.__version__} ({build}) finds no CUDA device")
    raise NoGPU("no GPU to launch on: " + "; ".join(missing))


def _torch_arrays(torch):
    stream = torch.cuda.current_stream()

    def to_device_torch(a):
        return torch.from_numpy(a).cuda()

    def to_host_torch(d):
        torch.cuda.synchronize()
        return d.cpu().numpy()
    return torch.cuda.get_device_name(0), stream, to_device_torch, to_host_torch


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _report(args) -> None:
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            digest = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]
            finite = a.astype(np.float64) if a.dtype.kind in "fc" else a
            print(f"  argument {i + 1}: {a.dtype}{list(a.shape)} sha256 {digest}… "
                  f"sum {float(np.sum(finite)):.6g}")


# -- the recorded kernel, signature and arguments --------------------------------------

def load_kernel():
    spec = importlib.util.spec_from_file_location("kernel", HERE / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, RECORD["kernel"]["name"])
    if RECORD["hints"]:
        kernel = kernel.replace_hints(**RECORD["hints"])
    return kernel


def load_args() -> list:
    arrays = np.load(HERE / "args.npz", allow_pickle=False) if (HERE / "args.npz").exists() \
        else {}
    return [_arg(a, arrays) for a in RECORD["args"]]


def _arg(a: dict, arrays):
    kind = a["kind"]
    if kind == "array":
        raw = arrays[a["key"]]
        return raw.view(_dtype(a["dtype"])).copy() if raw.dtype.name != a["dtype"] else raw.copy()
    if kind == "random":
        rng = np.random.default_rng(a["seed"])
        dt = _dtype(a["dtype"])
        if np.dtype(dt).kind in "iu":
            return rng.integers(0, 16, size=a["shape"]).astype(dt)
        if np.dtype(dt).kind == "b":
            return rng.random(a["shape"]) < 0.5
        return rng.standard_normal(a["shape"]).astype(dt)
    if kind == "scalar":
        return getattr(np, a["numpy"])(a["value"]) if a.get("numpy") else a["value"]
    if kind == "tuple":
        return tuple(_arg(x, arrays) for x in a["items"])
    raise ValueError(f"argument kind {kind!r} is not one this run.py knows")


def _dtype(name: str):
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # bfloat16, float8_*: NumPy has no such dtypes of its own

        return np.dtype(getattr(ml_dtypes, name))


def decode_signature(value):
    """The recorded KernelSignature, rebuilt from cuda.tile.compilation's public classes
    (only those: nothing else in repro.json is turned into an object)."""
    import cuda.tile as ct
    import cuda.tile.compilation as comp

    if isinstance(value, list):
        return tuple(decode_signature(v) for v in value)
    if not isinstance(value, dict):
        return value
    if "__dtype__" in value:
        dt = getattr(ct, value["__dtype__"])
        assert isinstance(dt, ct.DType), value
        return dt
    if "__cconv__" in value:
        assert value["__cconv__"] in ("cutile_python_v1", "cutile_python_v2"), value
        return getattr(comp.CallingConvention, value["__cconv__"])()
    cls = value["__class__"]
    assert cls == "KernelSignature" or cls.endswith("Constraint"), cls
    fields = {k: decode_signature(v) for k, v in value.items() if k != "__class__"}
    return getattr(comp, cls)(**fields)


def find_tileiras() -> str | None:
    """tileiras from NVIDIA's pip wheel (as cuTile finds it), else $TILEIRAS, else PATH."""
    try:
        import nvidia.cu13 as cu13

        for d in getattr(cu13, "__path__", []):
            found = shutil.which("tileiras", path=str(Path(d) / "bin"))
            if found:
                return found
    except ImportError:
        pass
    return os.environ.get("TILEIRAS") or shutil.which("tileiras")


def _outcome_text(out: dict) -> str:
    if out["stage"] == "ok":
        return "compiled"
    if out["stage"] == "frontend":
        return f"cuTile's front end raised {out['error_type']}: {out['cutile_error']}"
    if out["stage"] == "tileiras timeout":
        return f"tileiras did not finish within {RECORD['tileiras']['timeout_s']} s"
    return (f"tileiras exited with status {out['returncode']}: "
            f"{out['stderr'].strip() or '(no message)'}")


def _versions(v: dict) -> str:
    return ", ".join(f"{k} {val}" for k, val in v.items())


def _indent(text: str) -> str:
    return "\n".join("      " + line for line in text.rstrip().splitlines())


if __name__ == "__main__":
    sys.exit(main())
