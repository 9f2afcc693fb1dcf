"""``tile_lab.reproducer``: a folder (and a zip of it) that reproduces a kernel's compile
and launch on another machine — the bug report a cuTile maintainer can run.

What the folder holds (``README.md`` in it says the same to its reader):

- ``kernel.py``: the kernel's source, with the names it reads written out before it
  (``tile_lab/kernel_source.py``);
- ``args.npz``: its array arguments (read with ``allow_pickle=False``), or, past
  ``max_inline_bytes``, a seed and shape per array in ``repro.json`` (random values);
- ``kernel.tileirbc``: the Tile IR bytecode cuTile's front end made (absent when the front end
  itself failed), and ``kernel.cubin`` / ``remarks.yaml`` when tileiras succeeded;
- ``repro.json``: the signature, arch, hints, grid, arguments, the exact tileiras command
  line and environment, what happened (exit status, stderr, cuTile's own error) and versions;
- ``run.py``: reproduces it all (needs cuda-tile and NumPy; tile_lab only for ``--emulate``).

Making a reproducer never raises for a kernel that fails to compile: that is the main case.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _cutile_compat as compat
from ..array_like import DTYPE_CODES, array_info, to_host
from ..compile.inspect import prepare
from ..compile.pipeline import tileiras_args
from ..compile.signature import parse_spec
from ..compile.toolchain import STRIPPED_ENV, find_tool, run_tool, tool_version
from ..errors import SignatureError, TileLabError, ToolchainError
from ..kernel_source import kernel_module

__all__ = ["FORMAT", "Reproducer", "reproducer", "spec_args"]

FORMAT = "tile_lab.reproducer"
FORMAT_VERSION = 1
MAX_INLINE_BYTES = 64 << 20  # arrays past this (together) become seed + shape
TILEIRAS_TIMEOUT_S = 300
_ENV_RECORDED = ("CUDA_TILE_", "TILEIRAS")  # variables worth naming; others stay private
RUN_SCRIPT = Path(__file__).with_name("run_reproducer.py")


@dataclass(frozen=True)
class Reproducer:
    """A reproducer on disk: ``path`` (the folder), ``zip_path``, and what the compile did
    (``outcome``: "ok", "frontend", "tileiras" or "tileiras timeout"; ``message``: the
    error text)."""

    path: Path
    zip_path: Path
    outcome: str
    message: str
    kernel: str
    arch: str
    unresolved: tuple[str, ...] = ()  # names kernel.py needs but could not write out

    def summary(self) -> str:
        what = ("compiled" if self.outcome == "ok" else
                f"{self.outcome} failure: {self.message.strip().splitlines()[0]}"
                if self.message.strip() else f"{self.outcome} failure")
        missing = (f"; kernel.py LACKS {', '.join(self.unresolved)}: define them there by "
                   "hand" if self.unresolved else "")
        return (f"reproducer for {self.kernel} ({self.arch}; {what}) in {self.path} and "
                f"{self.zip_path.name}: run `python run.py` there (--emulate, --gpu)"
                f"{missing}")

    def __repr__(self) -> str:
        return f"Reproducer({self.summary()})"


def reproducer(kernel: Any, grid: Sequence[int] | None, args: Sequence[Any] | str,
               path: str | os.PathLike, *, arch: str | None = None,
               hints: Mapping[str, Any] | str | None = None,
               max_inline_bytes: int = MAX_INLINE_BYTES) -> Reproducer:
    """Write a reproducer of ``kernel`` compiled for ``args`` (and launched on ``grid``,
    which may be None for a compile-only report) into folder ``path``, plus ``path.zip``.
    ``args`` may be a signature spec (``"f32[1,4,32], 128"``): its arrays are then zeros.

    The compile is run here, as ``tile_lab.inspect`` runs it (cuTile's front end, then
    tileiras with the recorded command line); a failure is recorded, not raised. Arrays on
    the GPU are copied to the host. The folder's ``run.py`` reproduces the compile on any
    machine and the launch on the emulator (``--emulate``) or a GPU (``--gpu``)."""
    if isinstance(args, str):
        args = spec_args(args)
    prep = prepare(kernel, list(args), arch, hints, "tile_lab.reproducer")
    target, hint_values, options, built = prep.arch, prep.hints, prep.options, prep.signature
    out = _fresh_folder(Path(path))
    func = compat.python_function(kernel)
    origin = f"{os.path.basename(func.__code__.co_filename)}"
    module = kernel_module(kernel, origin)
    (out / "kernel.py").write_text(module.text, encoding="utf-8")
    record_args = _write_args(list(args), out, max_inline_bytes)
    outcome, tool = _compile(kernel, built.kernel_signature, target, options, out)
    record = {
        "format": FORMAT, "version": FORMAT_VERSION,
        "kernel": {"name": func.__name__, "origin": origin, "file": "kernel.py",
                   "line_in_kernel_py": module.kernel_line,
                   "first_line_in_origin": func.__code__.co_firstlineno,
                   "unresolved_names": list(module.unresolved)},
        "arch": target, "hints": hint_values,
        "options": {k: repr(v) for k, v in compat.options_as_dict(options).items()},
        "signature": _encode(built.kernel_signature), "signature_text": built.display,
        "grid": None if grid is None else [int(g) for g in grid],
        "args": record_args, "tileiras": tool, "outcome": outcome, "versions": _versions(),
    }
    (out / "repro.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    shutil.copyfile(RUN_SCRIPT, out / "run.py")
    (out / "README.md").write_text(_readme(record), encoding="utf-8")
    zip_path = out.with_name(out.name + ".zip")
    _zip(out, zip_path)
    message = outcome.get("stderr") or outcome.get("cutile_error") or ""
    return Reproducer(out, zip_path, outcome["stage"], message, func.__name__, target,
                      module.unresolved)


# -- the compile, recorded --------------------------------------------------------------

def _compile(kernel: Any, signature: Any, arch: str, options: Any, out: Path
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    opt = compat.opt_level(options, arch)
    argv = tileiras_args("kernel.tileirbc", "kernel.cubin", "remarks.yaml", arch, opt)
    tool = {"argv": argv, "env_removed": list(STRIPPED_ENV),
            "env_set": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(_ENV_RECORDED)},
            "timeout_s": TILEIRAS_TIMEOUT_S, "path_here": None}
    try:
        front = compat.compile_frontend(kernel, signature, arch, options)
    except Exception as e:
        if not compat.is_tile_error(e):
            raise
        return ({"stage": "frontend", "error_type": type(e).__name__,
                 "cutile_error": compat.tile_error_message(e)}, tool)
    (out / "kernel.tileirbc").write_bytes(front.bytecode)
    try:
        tool["path_here"] = str(find_tool("tileiras"))
        proc = run_tool("tileiras", argv, timeout=TILEIRAS_TIMEOUT_S, cwd=out)
    except ToolchainError as e:
        if "did not finish" not in e.message:
            raise
        return {"stage": "tileiras timeout", "error_type": "TileCompilerTimeoutError",
                "cutile_error": None}, tool
    if proc.returncode == 0:
        return {"stage": "ok", "returncode": 0}, tool
    outcome = {"stage": "tileiras", "returncode": proc.returncode,
               "stderr": proc.stderr.decode("utf-8", "replace")[-65536:],
               "error_type": None, "cutile_error": None}
    try:  # what cuTile itself raises for it (run.py checks the same error comes back)
        compat.compile_cubin_like_cutile(kernel, signature, arch, options)
    except Exception as e:
        if compat.is_tile_error(e):
            outcome["error_type"] = type(e).__name__
            outcome["cutile_error"] = compat.tile_error_message(e)
    return outcome, tool


# -- arguments -------------------------------------------------------------------------

def spec_args(spec: str) -> list[Any]:
    """Example arguments for a signature spec: zero-filled arrays, zero scalars of the
    spec's dtype, and the spec's values."""
    import ml_dtypes

    def dtype(code: str) -> Any:
        name = DTYPE_CODES[code][1]
        return np.dtype(getattr(ml_dtypes, name)) if not hasattr(np, name) else np.dtype(name)

    out: list[Any] = []
    for item in parse_spec(spec):
        if item.kind == "array":
            out.append(np.zeros(item.shape, dtype(item.code or "f32")))
        elif item.kind == "scalar":
            out.append(dtype(item.code or "i32").type(0))
        else:
            out.append(item.value)
    return out


def _write_args(args: list[Any], out: Path, max_inline_bytes: int) -> list[dict[str, Any]]:
    arrays: dict[str, np.ndarray] = {}
    budget = [max_inline_bytes, 0]  # bytes left to store, array arguments met so far
    records = [_arg(a, arrays, budget, f"argument {i + 1}") for i, a in enumerate(args)]
    if arrays:  # an .npz written without pickle (np.load(..., allow_pickle=False) reads it)
        with zipfile.ZipFile(out / "args.npz", "w", zipfile.ZIP_DEFLATED) as zf:
            for key, arr in arrays.items():
                buf = io.BytesIO()
                np.lib.format.write_array(buf, arr, allow_pickle=False)
                info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, buf.getvalue())
    return records


_OUR_FILES = ("kernel.py", "args.npz", "kernel.tileirbc", "kernel.cubin", "remarks.yaml",
              "repro.json", "run.py", "README.md")


def _fresh_folder(out: Path) -> Path:
    """``out`` made empty for a reproducer: created, or a previous reproducer's files removed.
    Any other existing file or folder is refused (nothing of the user's is deleted)."""
    if out.exists() and not out.is_dir():
        raise SignatureError(f"reproducer path {str(out)!r} is a file: give a folder name")
    if out.is_dir():
        entries = {p.name for p in out.iterdir()}
        if entries and ("repro.json" not in entries or entries - set(_OUR_FILES)):
            raise SignatureError(
                f"reproducer folder {str(out)!r} exists and holds files that are not a "
                f"tile_lab reproducer's: give a new folder name")
        for name in entries:
            (out / name).unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out


def _arg(value: Any, arrays: dict[str, np.ndarray], budget: list[int], what: str
         ) -> dict[str, Any]:
    """One argument's record; ``budget``: [bytes left to store arrays, arrays met so far]."""
    if isinstance(value, (tuple, list)):
        return {"kind": "tuple", "items": [_arg(v, arrays, budget, what) for v in value]}
    if isinstance(value, (bool, int, float)):
        return {"kind": "scalar", "value": value, "numpy": None}
    if isinstance(value, np.generic):
        return {"kind": "scalar", "value": value.item(), "numpy": value.dtype.name}
    if array_info(value) is None:
        raise SignatureError(f"{what}: a {type(value).__name__} cannot be written to a "
                             "reproducer (arrays, scalars and tuples of them can)")
    host = np.ascontiguousarray(to_host(value, []))
    entry = {"shape": list(host.shape), "dtype": host.dtype.name}
    budget[1] += 1
    if host.nbytes > budget[0]:
        # one seed per argument: arrays of one shape get different values (Q, K and V alike
        # would hide a kernel that mixes them up)
        seed = budget[1] + 1000 * len(entry["shape"])
        return {"kind": "random", "seed": seed, **entry,
                "note": "too large to store: random values of this shape and dtype"}
    budget[0] -= host.nbytes
    key = f"a{len(arrays)}"
    # bfloat16 / float8 (ml_dtypes) have no .npy description without pickle: store the bits
    plain = host.dtype.kind in "biufc" and host.dtype.isbuiltin
    arrays[key] = host if plain else host.view(f"u{host.dtype.itemsize}")
    return {"kind": "array", "key": key, **entry}


# -- the record ------------------------------------------------------------------------

def _encode(value: Any) -> Any:
    """A KernelSignature as JSON: dataclasses by class name, dtypes and calling conventions
    by name (run.py rebuilds them from ``cuda.tile.compilation``'s public classes)."""
    import cuda.tile as ct
    from cuda.tile.compilation import CallingConvention

    if isinstance(value, ct.DType):
        return {"__dtype__": value.name}
    if isinstance(value, CallingConvention):
        return {"__cconv__": next(n for n in ("cutile_python_v1", "cutile_python_v2")
                                  if getattr(CallingConvention, n)() == value)}
    if is_dataclass(value) and not isinstance(value, type):
        return {"__class__": type(value).__name__,
                **{f.name: _encode(getattr(value, f.name)) for f in fields(value)
                   if f.init}}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise TypeError(f"cannot record {type(value).__name__} in a signature")


def _versions() -> dict[str, str]:
    from .._version import __version__

    out = {"python": platform.python_version(), "numpy": np.__version__,
           "cuda-tile": compat.installed_version(), "tile_lab": __version__}
    try:
        out["tileiras"] = tool_version("tileiras")
    except TileLabError:
        out["tileiras"] = "missing"
    driver = compat.driver_cuda_version()
    out["driver (CUDA)"] = "none (no GPU driver)" if driver is None else \
        f"{driver[0]}.{driver[1]}"
    from ..gpu.device import device_identity, gpu_available

    if gpu_available():  # the GPU and driver release (NVML), where there is one
        ident = device_identity()
        out["gpu"] = str(ident.get("gpu"))
        out["driver"] = str(ident.get("driver"))
    return out


def _readme(record: dict[str, Any]) -> str:
    out = record["outcome"]
    what = {"ok": "compiles", "frontend": "fails in cuTile's front end",
            "tileiras": "fails in tileiras", "tileiras timeout": "hangs in tileiras"}
    lines = [
        f"# Reproducer: `{record['kernel']['name']}` {what[out['stage']]} ({record['arch']})",
        "", "Made by `tile_lab.reproducer`. Needs Python >= 3.10, NumPy and "
        "`pip install 'cuda-tile[tileiras]'`.", "",
        "```", "python run.py            # the compile, as recorded (re-raises its error)",
        "python run.py --check    # exit 0 when the outcome matches the recording",
        "python run.py --emulate  # the launch on tile_lab's CPU emulator (pip install tile_lab)",
        "python run.py --gpu      # the launch on a GPU (CuPy or torch)", "```", "",
        f"- signature: `{record['signature_text']}`; grid: `{record['grid']}`",
        f"- tileiras command line: `tileiras {' '.join(record['tileiras']['argv'])}` "
        f"(environment without {', '.join(record['tileiras']['env_removed'])})",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in record["versions"].items()),
    ]
    if out["stage"] == "tileiras":
        lines += ["", f"tileiras exited with status {out['returncode']}:", "", "```",
                  out["stderr"].rstrip() or "(no message)", "```"]
    if out.get("cutile_error"):
        lines += ["", f"cuTile raises `{out['error_type']}`:", "", "```",
                  out["cutile_error"].rstrip(), "```"]
    if any(a.get("kind") == "random" for a in record["args"]):
        lines += ["", "Some arrays were too large to store: they are random values of the "
                  "same shape and dtype (seed in repro.json)."]
    return "\n".join(lines) + "\n"


def _zip(folder: Path, zip_path: Path) -> None:
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.iterdir()):
            info = zipfile.ZipInfo(f"{folder.name}/{f.name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, f.read_bytes())
