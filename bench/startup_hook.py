"""What ``tile_lab_emulate.pth`` (the TILE_LAB_EMULATE start-up hook) costs every Python
start-up when the variable is unset. Goal: at most 1 ms.

Two measurements, side by side in one run:

1. **Interpreter start-up**, ``python -c pass``, in a bare venv (``--without-pip``) without and
   with the hook copied into its site-packages: ``--runs`` start-ups of each, interleaved
   (A, B, A, B, ...) so a busy machine slows both alike; the median difference and a bootstrap
   95% CI of it. This is the end-to-end number, and noisy on a loaded machine.
2. **The hook itself**: ``site.addpackage`` on the hook file (what Python's ``site`` does with
   it at start-up: open, read, exec the line), timed in-process over many calls. This is the
   cost that (1) measures through the noise.

Run::

    python bench/startup_hook.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOK = Path(__file__).resolve().parents[1] / "tile_lab_emulate.pth"
GOAL_MS = 1.0


def bare_venv(root: Path) -> tuple[Path, Path]:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return python, Path(purelib)


def start_once(python: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(python), "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t0


def startup_difference(runs: int) -> tuple[float, float, float, float, float]:
    """(median without, median with, median difference, CI low, CI high), seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TILE_LAB_EMULATE")}
    with tempfile.TemporaryDirectory() as tmp:
        plain, _ = bare_venv(Path(tmp) / "plain")
        hooked, site_dir = bare_venv(Path(tmp) / "hooked")
        shutil.copy(HOOK, site_dir / HOOK.name)
        for _ in range(10):  # warm the file cache
            start_once(plain, env)
            start_once(hooked, env)
        a, b = [], []
        for _ in range(runs):
            a.append(start_once(plain, env))
            b.append(start_once(hooked, env))
    diffs = [y - x for x, y in zip(a, b)]
    rng = random.Random(0)
    boot = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
    return (statistics.median(a), statistics.median(b), statistics.median(diffs),
            boot[50], boot[1949])


def hook_itself(calls: int = 20000) -> float:
    """Seconds per ``site.addpackage`` of the hook with the variable unset."""
    os.environ.pop("TILE_LAB_EMULATE", None)
    known: set[str] = set()
    t0 = time.perf_counter()
    for _ in range(calls):
        site.addpackage(str(HOOK.parent), HOOK.name, known)
    return (time.perf_counter() - t0) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=200, help="start-ups of each (default 200)")
    opts = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; hook: {HOOK.read_text()!r}")
    per_call = hook_itself()
    print(f"the hook itself (site.addpackage, variable unset): {per_call * 1e6:.1f} µs per "
          "start-up")
    plain, hooked, diff, low, high = startup_difference(opts.runs)
    ok = high * 1e3 <= GOAL_MS
    print(f"python -c pass, {opts.runs} interleaved start-ups each: {plain * 1e3:.2f} ms "
          f"without the hook, {hooked * 1e3:.2f} ms with it (medians); difference "
          f"{diff * 1e3:+.3f} ms (95% CI {low * 1e3:+.3f} to {high * 1e3:+.3f} ms; goal <= "
          f"{GOAL_MS:.0f} ms: {'met' if ok else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
