"""The environment doctor: ``python -m tile_lab doctor`` / ``tile_lab.doctor()``.

One row per piece tile_lab uses (Python, cuda.tile, each CUDA tool, the JupyterLab
extension, Node, Chromium, the GPU and its driver), and one finding per problem or
missing piece, saying what it disables and how to fix it. Known traps are checked too
(a ``CUDA_HOME`` whose old libnvvm breaks tileiras, a driver older than r580, a GPU
tileiras cannot compile for). Tools are found and run through ``tile_lab.compile.toolchain``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .compile import toolchain as tc
from .errors import ToolchainError


@dataclass(frozen=True)
class Component:
    """One row of the doctor's table: a piece of software, its version and location."""

    name: str
    version: str
    where: str = ""


@dataclass(frozen=True)
class GPUInfo:
    name: str
    arch: str  # "sm_90"
    driver: str  # e.g. "580.65.06" or "CUDA 13.0"


@dataclass(frozen=True)
class Finding:
    """A problem (or a noteworthy fact) the doctor found, with how to fix it."""

    level: str  # "error" | "warning" | "info"
    message: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorReport:
    components: tuple[Component, ...]
    gpu: GPUInfo | None
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.level == "error" for f in self.findings)

    def __str__(self) -> str:
        rows = [(c.name, c.version, c.where) for c in self.components]
        if self.gpu is not None:
            rows.append(("GPU", f"{self.gpu.name} ({self.gpu.arch})", f"driver {self.gpu.driver}"))
        else:
            rows.append(("GPU", "none", ""))
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        out = ["tile_lab doctor", ""]
        out += [f"  {a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows]
        out.append("")
        if not self.findings:
            out.append("No problems found.")
        for f in self.findings:
            out.append(f"[{f.level}] {f.message}")
            if f.fix:
                out.append(f"    fix: {f.fix}")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        from .display import mimebundle  # drawn by render/doctor_view.py

        return str(mimebundle(self).get("text/html", ""))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # text/plain is str(self): a terminal IPython printed the dataclass repr
        from .display import mimebundle

        return mimebundle(self)


def _detect_gpu() -> GPUInfo | None:
    """The first GPU, via cuda.tile's driver bindings; None without a GPU or driver."""
    from . import _cutile_compat

    cc = _cutile_compat.gpu_compute_capability()
    if cc is None:
        return None
    driver = _cutile_compat.driver_cuda_version()
    name, smi_driver = _nvidia_smi_name_and_driver()
    driver_text = smi_driver or (f"CUDA {driver[0]}.{driver[1]}" if driver else "unknown")
    return GPUInfo(name=name or "CUDA GPU", arch=f"sm_{cc[0]}{cc[1]}", driver=driver_text)


def _nvidia_smi_name_and_driver() -> tuple[str | None, str | None]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, None
    try:
        proc = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    first = proc.stdout.decode("utf-8", "replace").strip().splitlines()[:1]
    if proc.returncode != 0 or not first:
        return None, None
    parts = [p.strip() for p in first[0].split(",")]
    return (parts[0] or None), (parts[1] if len(parts) > 1 else None)


def smoke_compile(*, keep_env: bool = False) -> str | None:
    """Compile an empty Tile IR module with tileiras; None on success, else the error.

    ``keep_env=True`` runs tileiras with this process's environment as it is (CUDA_HOME
    included), the way a tileiras found on PATH is run; tile_lab itself never does that.
    """
    import tempfile

    from . import _cutile_compat

    with tempfile.TemporaryDirectory(prefix="tile_lab_") as tmp:
        src, out = Path(tmp) / "empty.tileirbc", Path(tmp) / "empty.cubin"
        src.write_bytes(_cutile_compat.empty_module_bytecode())
        args = [str(tc.find_tool("tileiras")), str(src), "-o", str(out), "--gpu-name=sm_80"]
        try:
            proc = subprocess.run(args, capture_output=True, timeout=60, check=False,
                                  env=dict(os.environ) if keep_env else tc.tool_env())
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)
    if proc.returncode == 0:
        return None
    return (proc.stderr or proc.stdout).decode("utf-8", "replace").strip() or \
        f"exit status {proc.returncode}"


def _check_cuda_home(tileiras_version: str | None) -> list[Finding]:
    findings = []
    for var in tc.STRIPPED_ENV:
        value = os.environ.get(var)
        if not value:
            continue
        if not Path(value).is_dir():
            findings.append(Finding(
                "warning", f"{var}={value} does not exist",
                f"unset {var} (tile_lab and cuTile's pip tileiras do not need it)"))
            continue
        home_version = tc.cuda_home_version(value)
        failure = smoke_compile(keep_env=True) if tileiras_version else None
        if failure:
            what = f"CUDA {home_version}" if home_version else "a toolkit of unknown version"
            findings.append(Finding(
                "warning",
                f"with {var}={value} ({what}) set, tileiras fails (it loads libnvvm from "
                f"there): "
                f"{failure.splitlines()[-1]}. tile_lab strips {var} when it runs tools, "
                "but cuTile launches break when tileiras comes from PATH",
                f"unset {var}, or point it at a CUDA {tileiras_version} or newer toolkit"))
            continue
        if tileiras_version is None or home_version is None:
            continue
        if tc.version_tuple(home_version)[:2] < tc.version_tuple(tileiras_version)[:2]:
            findings.append(Finding(
                "warning",
                f"{var}={value} is CUDA {home_version}, older than tileiras {tileiras_version}: "
                "a tileiras run with it set loads the old libnvvm and fails with "
                "\"failed to compile Tile IR program\" (tile_lab strips it when it runs tools)",
                f"unset {var}, or point it at a CUDA {tileiras_version} or newer toolkit"))
    return findings


def _driver_too_old(gpu: GPUInfo, driver_cuda: tuple[int, int] | None) -> bool:
    m = re.match(r"(\d+)\.", gpu.driver)
    if m and not gpu.driver.startswith("CUDA"):
        return int(m.group(1)) < 580
    return driver_cuda is not None and driver_cuda < tc.MIN_DRIVER_CUDA_VERSION


# -- the front ends: JupyterLab extension, Node, Chromium ----------------------------------

EXTENSION_NAME = "tile-lab"


def labextension_status() -> tuple[str | None, bool]:
    """(folder where JupyterLab finds tile_lab's extension or None, whether it is enabled)."""
    try:
        from jupyter_core.paths import jupyter_config_path, jupyter_path
    except ImportError:
        return None, False
    where = next((str(Path(d) / EXTENSION_NAME) for d in jupyter_path("labextensions")
                  if (Path(d) / EXTENSION_NAME / "package.json").is_file()), None)
    disabled = False
    for d in jupyter_config_path():
        page_config = Path(d) / "labconfig" / "page_config.json"
        try:
            data = json.loads(page_config.read_text())
        except (OSError, ValueError):
            continue
        off = data.get("disabledExtensions", {})
        if (off.get(EXTENSION_NAME) if isinstance(off, dict) else EXTENSION_NAME in off):
            disabled = True
    return where, where is not None and not disabled


def _front_end_pieces() -> tuple[list[Component], list[Finding]]:
    components: list[Component] = []
    findings: list[Finding] = []
    where, enabled = labextension_status()
    if where is None:
        components.append(Component("JupyterLab extension", "not installed"))
        findings.append(Finding(
            "warning", "tile_lab's JupyterLab extension is not installed (an editable install "
                       "without Node builds none): JupyterLab shows the HTML fallback of the "
                       "inspect view, without the linked-pane renderer and %%tile cell "
                       "highlighting",
            "install Node ≥ 20, then pip install -e . again (or install a wheel)"))
    else:
        components.append(Component("JupyterLab extension",
                                    "enabled" if enabled else "disabled", where))
        if not enabled:
            findings.append(Finding("warning", "tile_lab's JupyterLab extension is disabled",
                                    f"jupyter labextension enable {EXTENSION_NAME}"))
    node = shutil.which("node")
    components.append(Component("node", _node_version(node) if node else "missing", node or ""))
    if node is None:
        findings.append(Finding(
            "info", "Node.js not found: no building the JupyterLab extension from source, "
                    "no extension/browser tests", "install Node.js ≥ 20"))
    chromium = next((p for p in (os.environ.get("TILE_LAB_CHROMIUM"),
                                 *map(shutil.which, _CHROMIUM_NAMES)) if p), None)
    components.append(Component("chromium", "found" if chromium else "missing", chromium or ""))
    if chromium is None:
        findings.append(Finding(
            "info", "Chromium not found: the browser tests (diagram screenshots, the "
                    "extension's UI test) skip; notebooks work in any browser",
            "apt-get install chromium, or set TILE_LAB_CHROMIUM to a Chromium binary"))
    return components, findings


def _dist_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# what the optional Triton extra enables (tile_lab.triton; read without importing Triton,
# which takes seconds)
TRITON_ENABLES = ("%%tile --lang triton (Triton IR, TTGIR, PTX, SASS for sm_90 on a CPU), "
                  "tile_lab.compare(triton_kernel, cutile_kernel, ...) with registers, "
                  "instruction mix and outputs compared on a CPU (Triton's interpreter vs the "
                  "emulator), and notebook 19")


def _triton_pieces() -> tuple[list[Component], list[Finding]]:
    triton, torch = _dist_version("triton"), _dist_version("torch")
    enables = f"enables {TRITON_ENABLES}" if triton and torch else ""
    components = [Component("triton", triton or "not installed (optional)", enables),
                  Component("torch", torch or "not installed (optional)")]
    if triton and torch:
        return components, []
    missing = " and ".join(n for n, v in (("triton", triton), ("torch", torch)) if not v)
    return components, [Finding("info", f"{missing} not installed: no {TRITON_ENABLES}",
                                'pip install "tile_lab[triton]"')]


_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _node_version(node: str) -> str:
    try:
        proc = subprocess.run([node, "--version"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "broken"
    return proc.stdout.decode("utf-8", "replace").strip().lstrip("v") or "broken"


def doctor() -> DoctorReport:
    """Check the environment: versions and paths of everything tile_lab uses, the GPU,
    and known traps, each with its fix."""
    from . import _cutile_compat
    from ._version import __version__

    components = [Component("python", platform.python_version(), sys.executable),
                  Component("tile_lab", __version__, str(Path(__file__).parent))]
    findings: list[Finding] = []

    cutile_version = _cutile_compat.installed_version()
    try:
        import cuda.tile as ct
        cutile_where = str(Path(ct.__file__).parent)
    except Exception:  # a broken install shows as missing, it must not crash the doctor
        cutile_where = ""
    components.append(Component("cuda.tile", cutile_version, cutile_where))
    problem = _cutile_compat.version_problem()
    if problem:
        findings.append(Finding("error", problem,
                                "pip install 'cuda-tile[tileiras]>=1.7,<1.8'"))

    versions: dict[str, str | None] = {}
    for name in (*tc.REQUIRED_TOOLS, "nvcc", "cuobjdump"):
        try:
            path = tc.find_tool(name)
        except ToolchainError:
            versions[name] = None
            components.append(Component(name, "missing"))
            level = ("error" if name in tc.REQUIRED_TOOLS
                     else "warning" if name == "nvcc" else "info")
            findings.append(Finding(level, f"{name} not found; without it you lose "
                                           f"{tc.TOOL_DISABLES[name]}",
                                    f"pip install {tc.TOOL_PACKAGES[name].split(' (')[0]}"))
            continue
        try:
            versions[name] = tc.tool_version(name)
            components.append(Component(name, versions[name] or "?", str(path)))
        except ToolchainError as e:
            versions[name] = None
            components.append(Component(name, "broken", str(path)))
            findings.append(Finding("error", f"{name} --version failed: {e.message}",
                                    f"reinstall {tc.TOOL_PACKAGES[name]}"))

    if versions.get("tileiras"):
        failure = smoke_compile()
        if failure:
            findings.append(Finding(
                "error", f"tileiras cannot compile an empty Tile IR module: {failure}",
                f"reinstall {tc.TOOL_PACKAGES['tileiras']}"))
    findings += _check_cuda_home(versions.get("tileiras"))

    for pieces in (_front_end_pieces, _triton_pieces):
        extras, extra_findings = pieces()
        components += extras
        findings += extra_findings

    gpu = _detect_gpu()
    if gpu is None:
        findings.append(Finding(
            "info", "no NVIDIA GPU found: compile, inspect, emulate, trace and sanitize work; "
                    "launch, bench, tune and profiling need an NVIDIA GPU (Hopper or newer, "
                    "driver ≥ r580) and raise NoGPUError here",
            "run on a machine with such a GPU and pip install 'tile_lab[gpu]' (CuPy)"))
    else:
        if versions.get("tileiras"):
            try:
                supported = tc.tileiras_gpu_names()
            except ToolchainError:
                supported = ()
            if supported and gpu.arch not in supported:
                findings.append(Finding(
                    "error",
                    f"this GPU is {gpu.arch}, which tileiras {versions['tileiras']} cannot "
                    f"compile for (it supports {', '.join(supported)})",
                    "use a supported GPU, or inspect with arch= one of those "
                    "(compiling works on any machine)"))
        if _driver_too_old(gpu, _cutile_compat.driver_cuda_version()):
            findings.append(Finding(
                "error", f"the NVIDIA driver ({gpu.driver}) is older than r580; "
                         "cuTile kernels need a driver that supports CUDA 13",
                "install NVIDIA driver 580 or newer"))
    return DoctorReport(tuple(components), gpu, tuple(findings))
