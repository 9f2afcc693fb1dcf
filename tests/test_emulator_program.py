"""Whole programs on the CPU: ``ct.launch`` runs on the emulator under the environment
variable (in a subprocess), ``python -m tile_lab.emulator``, ``with tile_lab.emulation()``
and ``%tile_emulate``; NumPy arrays and torch CPU tensors are updated in place."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import cuda.tile as ct
import numpy as np
import pytest

import tile_lab
from tile_lab.emulator import program

ROOT = Path(__file__).resolve().parents[1]

# In the style of NVIDIA's samples: a kernel, a host wrapper that launches it on the current
# stream, and a __main__ check against NumPy.
SAMPLE = textwrap.dedent('''\
    import sys
    import numpy as np
    import cuda.tile as ct
    {extra_import}

    @ct.kernel
    def vector_add(a, b, c, tile: ct.Constant[int]):
        pid = ct.bid(0)
        ta = ct.load(a, index=(pid,), shape=(tile,))
        tb = ct.load(b, index=(pid,), shape=(tile,))
        ct.store(c, index=(pid,), tile=ta + tb)


    def vector_add_host(a, b, stream=None):
        c = np.empty_like(a)
        tile = 256
        grid = (ct.cdiv(a.shape[0], tile), 1, 1)
        ct.launch(stream, grid, vector_add, (a, b, c, tile))
        return c


    if __name__ == "__main__":
        n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
        a = np.arange(n, dtype=np.float32)
        b = np.full(n, 2.0, np.float32)
        c = vector_add_host(a, b)
        np.testing.assert_array_equal(c, a + b)
        print("vector_add OK", n)
    ''')


def _run(script: str, *argv: str, env: dict | None = None, module: bool = False,
         tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "sample.py"
    path.write_text(script)
    cmd = [sys.executable, *(["-m", "tile_lab.emulator"] if module else []), str(path), *argv]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=120,
                          cwd=tmp_path)


def test_env_var_runs_a_whole_program_on_the_cpu(tmp_path):
    script = SAMPLE.format(extra_import="import tile_lab  # TILE_LAB_EMULATE switches launch")
    done = _run(script, "5000", env={"TILE_LAB_EMULATE": "1"}, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "vector_add OK 5000" in done.stdout


TORCH_SAMPLE = textwrap.dedent('''\
    import torch
    import cuda.tile as ct
    import tile_lab


    @ct.kernel
    def scale_rows(x, out, alpha: float, tile: ct.Constant[int]):
        row = ct.bid(0)
        t = ct.load(x, index=(row, 0), shape=(1, tile), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(row, 0), tile=t * alpha)


    def scale_rows_host(x, alpha, stream=None):
        out = torch.empty_like(x)
        ct.launch(stream, (x.shape[0],), scale_rows, (x, out, alpha, 64))
        return out


    if __name__ == "__main__":
        x = torch.randn(16, 48)
        torch.testing.assert_close(scale_rows_host(x, 0.5), x * 0.5)
        print("scale_rows OK")
    ''')


def test_env_var_runs_a_torch_program_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    done = _run(TORCH_SAMPLE, env={"TILE_LAB_EMULATE": "1"}, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "scale_rows OK" in done.stdout


def test_without_the_switch_launch_needs_a_gpu(tmp_path):
    script = SAMPLE.format(extra_import="import tile_lab")
    done = _run(script, env={"TILE_LAB_EMULATE": "0"}, tmp_path=tmp_path)
    assert done.returncode != 0 and "vector_add OK" not in done.stdout


def test_module_runner_needs_no_tile_lab_import(tmp_path):
    done = _run(SAMPLE.format(extra_import=""), "1000", module=True, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "vector_add OK 1000" in done.stdout


def test_env_var_sanitize_reports_every_launch_with_its_line(tmp_path):
    script = SAMPLE.format(extra_import="import tile_lab") + textwrap.dedent('''\
        vector_add_host(np.ones(300, np.float32), np.ones(300, np.float32))
        ''')
    done = _run(script, "512", env={"TILE_LAB_EMULATE": "sanitize"}, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    reports = [ln for ln in done.stdout.splitlines() if ln.startswith("[tile_lab]")]
    line = script.splitlines().index("    ct.launch(stream, grid, vector_add, (a, b, c, tile))") + 1
    assert reports == [f"[tile_lab] sample.py:{line}: ct.launch of vector_add grid=(2, 1, 1)"] * 2
    assert done.stdout.count("no problems found") == 2


@pytest.mark.parametrize("module", [False, True], ids=["env-var", "runner"])
def test_a_cuda_tensor_without_the_device_variable_says_to_add_it(tmp_path, module):
    """Issue 49: torch's traceback and a hint without TILE_LAB_DEVICE=cpu. Now: one short
    message naming the user's line and the command that runs the program as it is."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("needs a CPU-only torch")
    script = SAMPLE.format(extra_import="import torch").replace(
        "c = vector_add_host(a, b)", "c = vector_add_host(a, b, torch.cuda.current_stream())")
    env = {"TILE_LAB_EMULATE": "1"} if not module else {}
    done = _run(script, "64", env=env, module=module, tmp_path=tmp_path)
    assert done.returncode == 1
    runner = "-m tile_lab.emulator " if module else ""
    variables = "TILE_LAB_DEVICE=cpu" if module else "TILE_LAB_EMULATE=1 TILE_LAB_DEVICE=cpu"
    lines = done.stderr.splitlines()
    assert lines[0].startswith("tile_lab: `c = vector_add_host(a, b, "
                               "torch.cuda.current_stream())` (sample.py:26) needs a GPU ("), lines
    assert lines[-1] == f"  {variables} python {runner}{tmp_path / 'sample.py'} 64"
    assert len(lines) == 3 and "Traceback" not in done.stderr
    # what it says to run runs
    done = _run(script, "64", env={**env, "TILE_LAB_DEVICE": "cpu"}, module=module,
                tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "vector_add OK 64" in done.stdout


def test_a_call_the_cpu_does_not_play_is_named_without_suggesting_the_variable(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("needs a CPU-only torch")
    script = "import torch\nimport cuda.tile as ct\n\ngraph = torch.cuda.CUDAGraph()\n"
    done = _run(script, env={"TILE_LAB_EMULATE": "1", "TILE_LAB_DEVICE": "cpu"},
                tmp_path=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith("tile_lab: `graph = torch.cuda.CUDAGraph()` (sample.py:4) needs "
                               "a GPU (")
    assert lines[1].startswith("TILE_LAB_DEVICE=cpu plays torch's CUDA tensors") and \
        "not this call" in lines[1] and len(lines) == 2


# ---- in process ------------------------------------------------------------------------------

@ct.kernel
def scale(x, y, factor: float, tile: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(tile,)) * factor)


def test_context_manager_with_numpy_and_any_stream():
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    real = ct.launch
    with tile_lab.emulation():
        ct.launch(None, (4,), scale, (x, y, 2.0, 16))
        ct.launch(object(), 4, scale, (y, y, 0.5, 16))
    assert ct.launch is real
    np.testing.assert_array_equal(y, x)


def test_context_manager_updates_torch_cpu_tensors_in_place():
    torch = pytest.importorskip("torch")
    x = torch.arange(64, dtype=torch.float32)
    y = torch.zeros(64)
    with tile_lab.emulation():
        ct.launch(None, (4,), scale, (x, y, 3.0, 16))
    assert torch.equal(y, x * 3)


def test_sanitize_mode_prints_a_report_per_launch(capsys):
    x = np.ones(1000, np.float32)
    with tile_lab.emulation(sanitize=True):
        ct.launch(None, (4,), scale, (x, np.zeros(1024, np.float32), 1.0, 256))  # line A
        ct.launch(None, (3,), scale, (x, np.zeros(1000, np.float32), 1.0, 256))  # line B
    out = capsys.readouterr().out
    here = Path(__file__).name
    lines = [ln for ln in out.splitlines() if ln.startswith("[tile_lab]")]
    assert len(lines) == 2 and all(here in ln and "ct.launch of scale" in ln for ln in lines)
    assert "undetermined value reaches output y" in out  # launch A: 24 padded lanes stored
    assert "uncovered_output" in out  # launch B: grid too small for 1000 elements


def test_gpu_note_in_the_context_manager():
    def host():
        raise AssertionError("Torch not compiled with CUDA enabled")
    with pytest.raises(AssertionError) as info, tile_lab.emulation():
        host()
    assert any("stream=None" in n for n in info.value.__notes__)


def test_magic_switches_launch_on_and_off(capsys):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tile_lab")
    real = ct.launch
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    try:
        shell.run_line_magic("tile_emulate", "on")
        assert program.is_enabled()
        ct.launch(None, (2,), scale, (x, y, 2.0, 16))
        np.testing.assert_array_equal(y, 2 * x)
        shell.run_line_magic("tile_emulate", "sanitize")
        ct.launch(None, (2,), scale, (x, y, 1.0, 16))
        assert "no problems found" in capsys.readouterr().out
        shell.run_line_magic("tile_emulate", "")  # status only
        assert program.is_enabled()
        assert "CPU emulator (sanitizing every launch)" in capsys.readouterr().out
    finally:
        shell.run_line_magic("tile_emulate", "off")
    assert ct.launch is real and not program.is_enabled()
    out = capsys.readouterr().out
    from tile_lab.gpu.device import gpu_available

    if gpu_available():
        assert "ct.launch runs on the GPU" in out
    else:  # never claims a GPU the machine lacks
        assert "runs on the GPU" not in out and "this machine has none" in out


def test_a_bad_env_var_value_is_a_one_line_error(tmp_path):
    done = _run("import tile_lab, cuda.tile as ct\nprint('ran')\n",
                env={"TILE_LAB_EMULATE": "maybe"}, tmp_path=tmp_path)
    assert done.returncode == 1 and "ran" not in done.stdout
    assert done.stderr.strip().splitlines() == [
        "tile_lab: TILE_LAB_EMULATE='maybe' is not a mode: use 1 (emulate every ct.launch), "
        "sanitize (sanitize every launch), or 0 (off)"]


# ---- program-mode errors --------------------------------------------------------------------

def test_runner_errors_show_the_kernel_line_with_a_caret(tmp_path):
    script = SAMPLE.format(extra_import="").replace("ta = ct.load(", "ta = ct.lod(")
    done = _run(script, module=True, tmp_path=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    kernel_line = script.splitlines().index("    ta = ct.lod(a, index=(pid,), shape=(tile,))") + 1
    launch_line = script.splitlines().index(
        "    ct.launch(stream, grid, vector_add, (a, b, c, tile))") + 1
    assert lines[0] == "CompileError: cuTile type error: Module 'cuda.tile' has no attribute 'lod'"
    assert lines[1] == f"  at {tmp_path / 'sample.py'}:{kernel_line}"
    assert lines[2].endswith("|     ta = ct.lod(a, index=(pid,), shape=(tile,))")
    assert lines[3].endswith("|          ^")
    assert lines[-1] == (f"  launched at sample.py:{launch_line}: "
                         "ct.launch(stream, grid, vector_add, (a, b, c, tile))")
    assert "Traceback" not in done.stderr and "runpy" not in done.stderr


def test_runner_usage_mistakes_are_one_line(tmp_path):
    for argv, says in ((["missing.py"], "missing.py: no such file"),
                       ([str(tmp_path)], "is a directory"),
                       (["--sanitise", "x.py"], "unknown option '--sanitise'")):
        done = subprocess.run([sys.executable, "-m", "tile_lab.emulator", *argv],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr
        assert "Traceback" not in done.stderr


RACE = textwrap.dedent('''\
    import numpy as np
    import cuda.tile as ct


    @ct.kernel
    def every_block_writes_tile_0(x, out, tile: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(tile,))
        ct.store(out, index=(0,), tile=t)


    x = np.arange(64, dtype=np.float32)
    out = np.zeros(16, np.float32)
    ct.launch(None, (4,), every_block_writes_tile_0, (x, out, 16))
    print("ran")
    ''')


def test_runner_sanitize_exit_status_says_whether_anything_was_found(tmp_path):
    done = _run(RACE, env={}, module=True, tmp_path=tmp_path)
    assert done.returncode == 0 and "ran" in done.stdout  # plain emulation: no checks
    path = tmp_path / "race.py"
    path.write_text(RACE)
    found = subprocess.run([sys.executable, "-m", "tile_lab.emulator", "--sanitize", str(path)],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert found.returncode == 3, found.stderr
    assert "ran" in found.stdout and "race" in found.stdout.lower()
    assert "1 launch with findings (exit status 3)" in found.stderr
    (tmp_path / "sample.py").write_text(SAMPLE.format(extra_import=""))
    clean = subprocess.run([sys.executable, "-m", "tile_lab.emulator", "--sanitize",
                            str(tmp_path / "sample.py")], capture_output=True, text=True,
                           cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert clean.returncode == 0, clean.stderr
    assert "no problems found" in clean.stdout


def test_env_var_sanitize_exit_status_matches_the_runner(tmp_path):
    # TILE_LAB_EMULATE=sanitize printed the findings and exited 0; the README says 3
    env = {"TILE_LAB_EMULATE": "sanitize"}
    found = _run(RACE + "open('kept.txt', 'w').write('kept')\n", env=env, tmp_path=tmp_path)
    assert found.returncode == 3, found.stderr
    assert "ran" in found.stdout and "write_race" in found.stdout
    assert "TILE_LAB_EMULATE=sanitize: 1 launch with findings (exit status 3)" in found.stderr
    assert (tmp_path / "kept.txt").read_text() == "kept"  # an unclosed file is still flushed
    # the program's own failure keeps its status
    assert _run(RACE + "import sys; sys.exit(5)\n", env=env, tmp_path=tmp_path).returncode == 5
    failed = _run(RACE + "raise ValueError('boom')\n", env=env, tmp_path=tmp_path)
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr


# An object that computes its __class__ and warns when asked, as torch.distributed.reduce_op
# does (a FutureWarning printed after the findings whenever the program had imported torch)
WARNS_WHEN_ITS_CLASS_IS_READ = textwrap.dedent('''\
    import warnings


    class Deprecated:
        @property
        def __class__(self):
            warnings.warn("Deprecated is deprecated", FutureWarning, stacklevel=2)
            return type(self)


    kept = Deprecated()
    ''')


def test_env_var_sanitize_exit_reads_no_objects_class(tmp_path):
    found = _run(RACE + WARNS_WHEN_ITS_CLASS_IS_READ, env={"TILE_LAB_EMULATE": "sanitize"},
                 tmp_path=tmp_path)
    assert found.returncode == 3, found.stderr
    assert found.stderr.endswith(
        "TILE_LAB_EMULATE=sanitize: 1 launch with findings (exit status 3)\n"), found.stderr
    assert "FutureWarning" not in found.stderr


SPIN = textwrap.dedent('''\
    import signal, sys, threading, time
    import numpy as np
    import cuda.tile as ct


    @ct.kernel
    def spin(x, tile: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(tile,))
        while True:
            t = t + 1
        ct.store(x, index=(ct.bid(0),), tile=t)


    def say_go_once_the_blocks_run():  # the emulator's Ctrl-C guard is in place
        while signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            time.sleep(0.01)
        print("go", flush=True)


    threading.Thread(target=say_go_once_the_blocks_run, daemon=True).start()
    ct.launch(None, (4,), spin, (np.zeros(64, np.float32), 16))
    ''')


@pytest.mark.parametrize("module", [False, True])
def test_ctrl_c_in_a_program_prints_the_kernel_line_not_our_stack(tmp_path, module):
    import signal

    path = tmp_path / "spin.py"
    path.write_text(SPIN)
    cmd = [sys.executable, *(["-m", "tile_lab.emulator"] if module else []), str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT),
                                               "TILE_LAB_EMULATE": "0" if module else "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "go"
        proc.send_signal(signal.SIGINT)  # one Ctrl-C
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    body = SPIN.splitlines().index("        t = t + 1") + 1
    assert "Traceback" not in err and "blocks.py" not in err and "runtime.py" not in err, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("EmulationInterrupted: emulate spin: interrupted in block (0,)")
    # the Ctrl-C lands in the loop: at its `while True:` head or in its body, both true
    assert lines[1:4] in ([f"  at {path}:{body}", f"  {body:>4} |         t = t + 1",
                           "       |         ^"],
                          [f"  at {path}:{body - 1}", f"  {body - 1:>4} |     while True:",
                           "       |     ^"]), lines[1:4]
    assert lines[4].startswith("  launched at spin.py:")


def test_runner_tracebacks_start_at_the_script(tmp_path):
    done = _run("x = 1\nraise ValueError('boom')\n", module=True, tmp_path=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[1].strip().startswith(f'File "{tmp_path / "sample.py"}"')
    assert "runpy" not in done.stderr and "tile_lab" not in done.stderr
    assert done.stderr.rstrip().endswith("ValueError: boom")


def test_env_var_mode_errors_show_the_kernel_line_too(tmp_path):
    script = SAMPLE.format(extra_import="import tile_lab").replace("ta = ct.load(", "ta = ct.lod(")
    done = _run(script, env={"TILE_LAB_EMULATE": "1"}, tmp_path=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("CompileError: cuTile type error: Module 'cuda.tile' has no "
                                  "attribute 'lod'\n  at ")
    assert "|          ^" in done.stderr and "Traceback" not in done.stderr


def test_env_var_values():
    assert program.mode_from_env("1") == "emulate" and program.mode_from_env("0") is None
    assert program.mode_from_env("Sanitize") == "sanitize"
    with pytest.raises(ValueError, match="TILE_LAB_EMULATE"):
        program.mode_from_env("maybe")
