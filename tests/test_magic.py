"""The ``%%tile`` magic, driven through a real IPython InteractiveShell.

Line numbers in these tests are cell lines as the user sees them: the ``%%tile`` line is
line 1, the first body line is line 2.
"""

from __future__ import annotations

import inspect
import linecache
import subprocess
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shared_kernels import vadd_cell

import tile_lab
from tile_lab._cutile_compat import python_function
from tile_lab.compile.artifacts import MIME_TYPE
from tile_lab.errors import (
    CompileError,
    EmulationError,
    EmulatorUnsupported,
    SignatureError,
    TileLabError,
)

VADD = vadd_cell("vadd")  # vadd's decorator is cell line 4, the loads lines 7-8, the store line 9

TWO_KERNELS = """import cuda.tile as ct

@ct.kernel
def scale(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(y, index=(ct.bid(0),), tile=t * 2)

not_a_kernel = 3

@ct.kernel
def negate(x, y, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(y, index=(ct.bid(0),), tile=-t)
"""
SIG1 = '--sig "f32[1024], f32[1024], 256"'
SIG3 = '--sig "f32[1024], f32[1024], f32[1024], 256"'


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "tile_lab")
    return sh


@pytest.fixture
def shown(shell, monkeypatch):
    """Every mime bundle the magic displays, in order."""
    bundles: list[dict] = []
    monkeypatch.setattr(shell.display_pub, "publish",
                        lambda data, metadata=None, **kw: bundles.append(data))
    return bundles


def run_failing(shell, capsys, cell: str) -> tuple[BaseException, str]:
    """Run a whole ``%%tile`` cell the way a notebook does; return the error and output."""
    capsys.readouterr()
    result = shell.run_cell(cell)
    assert not result.success
    return result.error_in_exec, capsys.readouterr().out


def caret_line(out: str, lineno: int) -> tuple[str, str]:
    """The '  N | text' line and the caret line under it, from a rendered error."""
    lines = out.splitlines()
    i = next(i for i, t in enumerate(lines) if t.lstrip().startswith(f"{lineno} |"))
    return lines[i], lines[i + 1] if i + 1 < len(lines) else ""


# -- loading -------------------------------------------------------------------------------

def test_load_ext_prints_nothing_and_registers(shell, capsys):
    shell.extension_manager.loaded.discard("tile_lab")  # load again, as a fresh kernel would
    capsys.readouterr()
    shell.run_line_magic("load_ext", "tile_lab")
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert "tile" in shell.magics_manager.magics["cell"]


# -- executing the body -------------------------------------------------------------------

def test_kernels_bound_with_cell_line_numbers(shell, shown):
    shell.run_cell_magic("tile", "", TWO_KERNELS)
    ns = shell.user_ns
    assert ns["not_a_kernel"] == 3
    for name, decorator_line in (("scale", 4), ("negate", 11)):
        func = python_function(ns[name])
        assert inspect.getsourcelines(func)[1] == decorator_line
        fname = func.__code__.co_filename
        assert linecache.getline(fname, decorator_line + 1).startswith(f"def {name}(")
        assert linecache.getline(fname, 1) == "\n"  # the %%tile line's stand-in
    assert shown == []  # nothing asked for, nothing shown


def test_sig_inspects_every_kernel_in_order(shell, shown):
    shell.run_cell_magic("tile", SIG1 + " --arch sm_80", TWO_KERNELS)
    assert [b[MIME_TYPE]["kernel_name"] for b in shown] == ["scale", "negate"]
    for b in shown:
        assert set(b) >= {"text/plain", "text/html", MIME_TYPE}
        assert b[MIME_TYPE]["arch"] == "sm_80"
        assert 'data-line="' in b["text/html"]
    # the scale kernel's load is cell line 5, and the Tile IR says so
    assert 5 in shown[0][MIME_TYPE]["stages"]["tileir"]["line_map"]


def test_kernel_option_picks_one(shell, shown):
    shell.run_cell_magic("tile", SIG1 + " --kernel negate --show source,tileir", TWO_KERNELS)
    assert [b[MIME_TYPE]["kernel_name"] for b in shown] == ["negate"]
    assert shown[0][MIME_TYPE]["show"] == ["source", "tileir"]
    assert "tl-pane-sass" not in shown[0]["text/html"]


def test_unknown_kernel_name_is_usage_error(shell):
    with pytest.raises(UsageError, match=r"no @ct.kernel function of that name.*scale, negate"):
        shell.run_cell_magic("tile", SIG1 + " --kernel nope", TWO_KERNELS)


def test_args_resolve_user_variables(shell, shown):
    ns = shell.user_ns
    ns["xa"], ns["xb"], ns["xc"] = (np.zeros(512, np.float16) for _ in range(3))
    ns["tile_n"] = 128
    shell.run_cell_magic("tile", '--args "xa, xb, xc, tile_n" --hints occupancy=2', VADD)
    (b,) = shown
    data = b[MIME_TYPE]
    assert data["signature"].startswith("f16[512], f16[512], f16[512]")
    assert "128" in data["signature"]
    assert data["hints"]["occupancy"] == 2


# -- errors: each fails the cell and names the cell line -------------------------------------

def test_syntax_error(shell, capsys):
    cell = "%%tile " + SIG3 + "\n" + VADD.replace("ta + tb)", "ta + tb))")
    err, out = run_failing(shell, capsys, cell)
    assert isinstance(err, CompileError) and err.location.line == 9
    assert err.location.filename.startswith("Cell In[")
    text, caret = caret_line(out, 9)
    assert "ct.store(c, index=(bid,), tile=ta + tb))" in text
    assert caret.index("^") == text.rindex(")")  # under the unmatched ')'
    assert "Traceback" not in out  # rendered by _render_traceback_, not a Python traceback


def test_non_power_of_two_tile(shell, capsys):
    cell = "%%tile " + SIG3 + "\n" + VADD.replace("shape=(TILE,))\n    tb", "shape=(100,))\n    tb")
    err, out = run_failing(shell, capsys, cell)
    assert isinstance(err, CompileError) and err.location.line == 7
    assert "power of two" in out
    text, caret = caret_line(out, 7)
    assert "shape=(100,)" in text and caret.rstrip().endswith("^")


def test_cutile_type_error_mma_shapes(shell, capsys):
    cell = '''%%tile --sig "f16[64,32], f16[64,32], f32[64,64]"
import cuda.tile as ct

@ct.kernel
def bad_mma(A, B, C):
    a = ct.load(A, index=(0, 0), shape=(64, 32))
    b = ct.load(B, index=(0, 0), shape=(64, 32))
    acc = ct.mma(a, b, ct.zeros((64, 64), dtype=ct.float32))
    ct.store(C, index=(0, 0), tile=acc)
'''
    err, out = run_failing(shell, capsys, cell)
    assert isinstance(err, CompileError) and err.location.line == 8
    text, _ = caret_line(out, 8)
    assert "ct.mma(a, b" in text


def test_tileiras_failure(shell, capsys, monkeypatch):
    """A tileiras failure, simulated: the real tileiras is replaced by a run that fails
    with tileiras' error format naming cell line 8 (no small real kernel makes tileiras
    fail reliably). What is tested is how the magic reports it, not tileiras."""
    import tile_lab.compile.toolchain as toolchain

    real_run_tool = toolchain.run_tool
    marker = "tileiras_failure_marker"

    def fake_run_tool(name, args, **kw):
        if name != "tileiras":
            return real_run_tool(name, args, **kw)
        # the %%tile body as the magic registered it (IPython's own entry for the
        # whole cell holds the marker too, but not a blank first line)
        cellfile = next(f for f, entry in linecache.cache.items()
                        if entry[2][:1] == ["\n"] and any(marker in t for t in entry[2]))
        stderr = f'loc("{cellfile}":8:5): error: failed to legalize operation\n'
        return subprocess.CompletedProcess(["tileiras"], 1, b"", stderr.encode())

    monkeypatch.setattr(toolchain, "run_tool", fake_run_tool)
    cell = "%%tile " + SIG3 + f"\n# {marker}\n" + VADD.replace("vadd", "vadd_tf")
    err, out = run_failing(shell, capsys, cell)
    assert isinstance(err, CompileError) and err.location.line == 8
    assert "tileiras failed" in out and "failed to legalize" in out
    text, _ = caret_line(out, 8)
    assert "ta = ct.load(a" in text  # the marker comment moved vadd down by one line


def test_bad_args_point_at_the_magic_line(shell, capsys, api_calls):
    err, out = run_failing(shell, capsys, '%%tile --args "ea, undefined_thing, ec, 128"\n' + VADD)
    assert isinstance(err, SignatureError) and err.location.line == 1
    text, caret = caret_line(out, 1)
    assert text.endswith('%%tile --args "ea, undefined_thing, ec, 128"')
    assert caret.index("^") == text.index("undefined_thing")
    assert "undefined_thing" in out


def test_args_syntax_error(shell):
    with pytest.raises(SignatureError, match="--args is not a list of Python expressions"):
        shell.run_cell_magic("tile", '--args "ea, , ec"', VADD)


def test_wrong_arg_count_is_signature_error(shell, api_calls):
    with pytest.raises(SignatureError):
        shell.run_cell_magic("tile", '--args "ea, eb"', VADD)


@pytest.mark.parametrize("line,match", [
    ("--bogus", "unrecognized arguments"),
    ("--show source,nonsense " + SIG3, "unknown pane 'nonsense'"),
    ("--lang fortran", "--lang must be python, c\\+\\+ or triton"),
    ("--emulate --trace --grid 4 --args 'ea, eb, ec, 128'", "one of --emulate"),
    ("--grid 4 " + SIG3, "--grid is for running a kernel"),
    ("--emulate --args 'ea, eb, ec, 128'", "needs --grid and --args"),
])
def test_bad_options_are_usage_errors(shell, api_calls, line, match):
    with pytest.raises(UsageError, match=match):
        shell.run_cell_magic("tile", line, VADD)


@pytest.mark.parametrize("line,meant", [
    ("--emulat --grid 4 --args 'ea, eb, ec, 128'", "--emulate"),  # a prefix of one option
    ("--sanitise --grid 4 --args 'ea, eb, ec, 128'", "--sanitize"),  # close to one
    ("--s " + SIG3, "--sanitize or --show or --sig"),  # a prefix of several
])
def test_abbreviated_or_misspelt_options_are_refused_with_the_full_one(shell, api_calls,
                                                                      line, meant):
    # argparse's default takes any unique prefix ("--emulat" ran as --emulate): refused here
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("tile", line, VADD)
    flag = line.split()[0]
    assert str(info.value).startswith(
        f"%%tile: unrecognized arguments: {flag}; did you mean {meant}?")
    assert not api_calls


def test_bad_option_in_notebook_cell_and_shell_keeps_working(shell, capsys, shown):
    capsys.readouterr()
    result = shell.run_cell("%%tile --no-such-flag\nx = 1\n")
    assert isinstance(result.error_in_exec, UsageError)  # an OptionError is a UsageError
    out = capsys.readouterr().out
    assert "OptionError: %%tile: unrecognized arguments: --no-such-flag" in out
    assert f"at Cell In[{result.execution_count}], line 1" in out
    # after failures of every kind, plain cells and %%tile cells still run
    assert shell.run_cell("after_failure = 40 + 2").success
    assert shell.user_ns["after_failure"] == 42
    assert shell.run_cell("%%tile " + SIG3 + "\n" + VADD).success
    assert shown and shown[-1][MIME_TYPE]["kernel_name"] == "vadd"


def test_errors_are_tilelab_errors_with_cell_locations(shell):
    with pytest.raises(TileLabError) as info:
        shell.run_cell_magic("tile", SIG3, "import cuda.tile as ct\nx = (\n")
    assert info.value.location.line >= 2
    assert info.value.location.filename.startswith("Cell In[")


# -- execution flags: the magic hands the right things to the public API -------------------

@pytest.fixture
def api_calls(shell, monkeypatch):
    """Replace the engines under the execution API with recorders (the real ones are tested
    below and in their own modules): checks what the magic passes through the core (the
    functions tile_lab.emulate & co. reach too), not what the emulator does."""
    calls: list[tuple] = []

    def recorder(name, result=None):
        def fn(*args, **kwargs):
            calls.append((name, args, kwargs))
            return result
        return fn

    import tile_lab.emulator
    import tile_lab.gpu
    import tile_lab.render.diagram
    import tile_lab.sanitizer.checks

    # where the core looks them up: the modules that own them
    monkeypatch.setattr(tile_lab.emulator, "emulate_kernel", recorder("emulate"))
    monkeypatch.setattr(tile_lab.emulator, "trace_kernel", recorder("trace", "TRACE"))
    monkeypatch.setattr(tile_lab.render.diagram, "diagram", recorder("diagram", "DIAGRAM"))
    monkeypatch.setattr(tile_lab.sanitizer.checks, "sanitize_kernel",
                        recorder("sanitize", "REPORT"))
    monkeypatch.setattr(tile_lab.gpu, "launch_kernel", recorder("launch"))
    ns = shell.user_ns
    ns["ea"], ns["eb"], ns["ec"] = (np.ones(512, np.float32) for _ in range(3))
    return calls


@pytest.mark.parametrize("flag,expected,displayed", [
    ("--emulate", ["emulate"], []),
    ("--trace", ["trace", "diagram"], ["'DIAGRAM'"]),
    ("--sanitize", ["sanitize"], ["'REPORT'"]),
    ("--launch", ["launch"], []),
])
def test_execution_flags_dispatch(shell, shown, api_calls, flag, expected, displayed):
    ns = shell.user_ns
    shell.run_cell_magic("tile", f'{flag} --grid "(4,)" --args "ea, eb, ec, 128"', VADD)
    assert [c[0] for c in api_calls] == expected
    name, args, kwargs = api_calls[0]
    if name != "diagram":
        kernel, grid, kargs = args
        assert kernel is ns["vadd"] and grid == (4,)
        assert kargs[0] is ns["ea"] and kargs[2] is ns["ec"] and kargs[3] == 128
    if flag == "--launch":
        assert kwargs["fallback"] == "emulate"
    if flag == "--trace":
        assert api_calls[1][1] == ("TRACE",)
    # the trace's diagram and the sanitizer report are shown; no inspect view
    assert [b["text/plain"] for b in shown] == displayed


def test_execution_needs_one_kernel(shell, api_calls):
    with pytest.raises(UsageError, match="pick the one to run with --kernel"):
        shell.run_cell_magic("tile", '--emulate --grid 4 --args "ea, eb, 128"', TWO_KERNELS)
    shell.run_cell_magic("tile", '--emulate --grid 4 --kernel negate --args "ea, eb, 128"',
                         TWO_KERNELS)
    assert api_calls[0][1][0] is shell.user_ns["negate"] and api_calls[0][1][1] == (4,)


@pytest.mark.parametrize("grid,ok", [("8", (8,)), ('"(2, 3)"', (2, 3)), ('"(0,)"', None),
                                     ('"(1, 2, 3, 4)"', None), ('"2.5"', None)])
def test_grid_values(shell, api_calls, grid, ok):
    line = f'--emulate --grid {grid} --args "ea, eb, ec, 128"'
    if ok is None:
        with pytest.raises(SignatureError, match="--grid must be 1 to 3 positive ints"):
            shell.run_cell_magic("tile", line, VADD)
    else:
        shell.run_cell_magic("tile", line, VADD)
        assert api_calls[0][1][1] == ok


def test_inspect_and_execute_together(shell, shown, api_calls):
    shell.run_cell_magic("tile", '--emulate --grid 4 --args "ea, eb, ec, 128" --show source,sass',
                         VADD)
    assert [c[0] for c in api_calls] == ["emulate"]
    assert [b[MIME_TYPE]["show"] for b in shown] == [["source", "sass"]]


# -- execution for real (needs the emulator of issue 3) --------------------------------------

def test_emulate_for_real(shell):
    ns = shell.user_ns
    ns["ra"] = np.arange(1024, dtype=np.float32)
    ns["rb"] = np.full(1024, 0.5, np.float32)
    ns["rc"] = np.zeros(1024, np.float32)
    shell.run_cell_magic("tile", '--emulate --grid "(8,)" --args "ra, rb, rc, 128"', VADD)
    np.testing.assert_array_equal(ns["rc"], ns["ra"] + ns["rb"])


def test_emulate_says_where_it_ran(shell, capsys):
    ns = shell.user_ns
    ns["ra"], ns["rb"] = np.arange(256, dtype=np.float32), np.ones(256, np.float32)
    ns["rc"] = np.zeros(256, np.float32)
    capsys.readouterr()
    shell.run_cell_magic("tile", '--emulate --grid "(2,)" --args "ra, rb, rc, 128"', VADD)
    assert "ran on the tile_lab CPU emulator: grid (2,), 2 blocks" in capsys.readouterr().out


def test_show_partition_without_grid_shows_the_view_and_does_not_fail(shell, shown, api_calls,
                                                                     capsys):
    # nothing was asked to run: the cell succeeds and says what the diagram needs
    shell.run_cell_magic("tile", '--show source,partition --sig "f32[512], f32[512], f32[512], '
                         '128"', VADD)
    assert api_calls == []  # nothing traced or run
    assert shown[0][MIME_TYPE]["show"] == ["source"]  # the inspect view was shown
    assert "add --grid and --args" in capsys.readouterr().out


def test_trace_and_sanitize_for_real(shell, shown):
    ns = shell.user_ns
    ns["ta_"], ns["tb_"], ns["tc_"] = (np.ones(1024, np.float32) for _ in range(3))
    shell.run_cell_magic("tile", '--trace --grid "(8,)" --args "ta_, tb_, tc_, 128"', VADD)
    shell.run_cell_magic("tile", '--sanitize --grid "(8,)" --args "ta_, tb_, tc_, 128"', VADD)
    diagram, report = shown
    assert "image/svg+xml" in diagram and "vadd" in diagram["text/plain"]
    # the report's text (what a terminal IPython prints), not the dataclass repr; and its HTML
    assert report["text/plain"] == ("sanitizer: vadd grid=(8,): 24 memory ops checked, no "
                                    "problems found")
    assert "tile-lab-sanitizer-ok" in report["text/html"]


# -- CUDA Tile C++ cells (needs inspect_cpp of issue 9) ---------------------------------------

CPP = (Path(__file__).parent / "cpp_examples" / "vector_add.cu").read_text()


def test_cpp_cell_inspects(shell, shown):
    shell.run_cell_magic("tile", "--lang c++ --arch sm_90", CPP)
    (b,) = shown
    data = b[MIME_TYPE]
    assert data["kernel_name"] == "vector_add"
    # the C++ source keeps cell numbering: the kernel's first load is on cell line 17
    first_load = 1 + next(i for i, t in enumerate(CPP.splitlines(), 1) if "va.load" in t)
    assert first_load in data["stages"]["tileir"]["line_map"]
    assert "cudaLexer" not in b["text/html"] and 'data-line="' in b["text/html"]


def test_cpp_compile_error_at_cell_line(shell, capsys):
    broken = CPP.replace("auto tb = vb.load(bid);", "auto tb = vb.load(bid)")
    err, out = run_failing(shell, capsys, "%%tile --lang c++ --arch sm_90\n" + broken)
    assert isinstance(err, CompileError)
    caret_line(out, err.location.line)  # the rendered error quotes the cell line
    bad = 1 + next(i for i, t in enumerate(broken.splitlines(), 1) if "vb.load(bid)" in t)
    assert err.location.line in (bad, bad + 1)  # the missing ';' is noticed at or after it
    assert err.location.filename.startswith("Cell In[")


def test_cpp_cell_cannot_emulate(shell, api_calls):
    with pytest.raises(EmulatorUnsupported, match="Python kernels only"):
        shell.run_cell_magic("tile", "--lang c++ --emulate --grid 4 --args 'ea, eb, ec, 4'",
                             CPP)


@pytest.mark.parametrize("option,why", [
    ("--profile --grid 4 --args 'ea, eb, ec, 4'", "--profile runs Nsight Compute on cuTile "
                                                   "Python kernels only"),
    ("--hints num_ctas=2", "--hints does not apply to C\\+\\+ cells"),
    ("--sig 'f32[4]'", "--sig is for Python kernels"),
])
def test_cpp_cell_refuses_python_only_options_before_compiling(shell, shown, monkeypatch,
                                                                option, why):
    import tile_lab.cpp

    def no_compile(*a, **k):
        raise AssertionError("a refused option must fail before anything compiles")

    monkeypatch.setattr(tile_lab.cpp, "inspect_cpp", no_compile)
    with pytest.raises(UsageError, match=f"^%%tile --lang c\\+\\+: {why}"):
        shell.run_cell_magic("tile", f"--lang c++ {option}", CPP)
    assert not shown


def test_cpp_profile_error_points_at_the_option(shell, capsys):
    line = "%%tile --lang c++ --profile --grid 4 --args 'ea, eb, ec, 4'"
    err, out = run_failing(shell, capsys, line + "\n" + CPP)
    assert isinstance(err, UsageError) and "Nsight Compute" in str(err)
    number, caret = caret_line(out, 1)
    assert caret.index("^") - number.index("%%tile") == line.index("--profile")


def test_every_execution_flag_has_a_handler_and_the_messages_name_them_all(shell, api_calls):
    from tile_lab._run import _MODES
    from tile_lab.cell_options import EXECUTION_FLAGS
    from tile_lab.request import MODES

    assert set(_MODES) == set(EXECUTION_FLAGS) == set(MODES)
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("tile", "--grid 4 " + SIG3, VADD)
    assert all(f"--{f}" in str(info.value) for f in EXECUTION_FLAGS)


def test_sanitize_with_partition_shows_the_report_then_the_diagram(shell, shown, api_calls):
    shell.run_cell_magic("tile", '--sanitize --show source,partition --grid 4 '
                                 '--args "ea, eb, ec, 128"', VADD)
    assert [c[0] for c in api_calls] == ["sanitize", "trace", "diagram"]


def test_show_partition_draws_the_trace(shell, shown, api_calls):
    shell.run_cell_magic("tile", '--show source,partition --grid 4 --args "ea, eb, ec, 128"',
                         VADD)
    assert [c[0] for c in api_calls] == ["trace", "diagram"]
    assert shown[0][MIME_TYPE]["show"] == ["source"]  # the inspect view, then the diagram
    assert shown[1]["text/plain"] == "'DIAGRAM'"


def test_under_ipykernel_compiler(shell, shown, monkeypatch, capsys):
    """ipykernel names cells by a temp-file path (for its debugger): the magic must
    register and report through whatever compiler the shell has."""
    from ipykernel.compiler import XCachingCompiler

    monkeypatch.setattr(shell, "compile", XCachingCompiler())
    shell.run_cell_magic("tile", SIG3, VADD)
    func = python_function(shell.user_ns["vadd"])
    assert func.__code__.co_filename.endswith(".py")  # ipykernel's temp-file name
    assert inspect.getsourcelines(func)[1] == 4
    err, out = run_failing(shell, capsys, "%%tile " + SIG3 + "\n" + VADD.replace(
        "shape=(TILE,))\n    tb", "shape=(96,))\n    tb"))
    assert err.location.line == 7 and err.location.filename.startswith("Cell In[")
    assert caret_line(out, 7)[0].endswith("ta = ct.load(a, index=(bid,), shape=(96,))")


def test_errors_in_kernels_defined_in_plain_cells_name_the_cell_not_a_temp_file():
    from IPython.core.interactiveshell import InteractiveShell

    from tile_lab.errors import EmulationError, SourceLocation

    shell = InteractiveShell.instance()
    name = shell.compile.cache("def k():\n    pass\n", 7)
    err = EmulationError("boom", SourceLocation(name, 2, 4, "    pass"))
    text = err.render()
    assert "Cell In[7], line 2" in text and name not in text
    assert EmulationError("x", SourceLocation("/src/k.py", 3)).render().count("/src/k.py") == 1


# ---- --explore: sliders over a Space, --grid/--args written with the slider config cfg --------
SCALE = """import cuda.tile as ct

@ct.kernel
def scale_lat(x, y, TILE: ct.Constant[int], LAT: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), latency=LAT)
    ct.store(y, index=(ct.bid(0),), tile=t * 2)
"""
EXPLORE = ('--explore space --grid "(1024 // cfg[\'TILE\'],)" '
           '--args "ex, ey, cfg[\'TILE\'], cfg[\'LAT\']"')


def test_explore_shows_sliders_that_rerun_the_kernel_with_each_config(shell, monkeypatch):
    from tile_lab.widgets.explore import Explorer

    shown_objects = []
    monkeypatch.setattr("tile_lab.magic.tile_magic.display", shown_objects.append)
    ns = shell.user_ns
    ns["space"] = tile_lab.Space(TILE=[128, 256], LAT=[1, 3])
    ns["ex"] = np.arange(1024, dtype=np.float32)
    ns["ey"] = np.zeros(1024, np.float32)
    shell.run_cell_magic("tile", EXPLORE, SCALE)
    [ex] = shown_objects
    assert isinstance(ex, Explorer) and ex.kernel is ns["scale_lat"]
    assert set(ex.sliders) == {"TILE", "LAT"}
    cfg = ex.config
    assert ex.grid_fn(cfg) == (1024 // cfg["TILE"],)
    args = ex.args_fn(cfg)
    assert args[0] is ns["ex"] and args[2:] == (cfg["TILE"], cfg["LAT"])
    before = ex.redraws
    ex.sliders["TILE"].value = 256  # without a GPU: the emulator draws the new partition
    assert ex.redraws == before + 1 and "<svg" in ex.diagram.value
    assert ex.grid_fn(ex.config) == (4,)


@pytest.mark.parametrize("line,match", [
    (EXPLORE + " --launch", "drop --launch"),
    ("--explore space --args 'ex, ey, 128, 1'", "needs --grid and --args"),
    (EXPLORE + " --lang c++", "for Python kernels"),
])
def test_explore_option_errors(shell, line, match):
    with pytest.raises(UsageError, match=match):
        shell.run_cell_magic("tile", line, SCALE)


def test_explore_errors_name_the_option(shell, monkeypatch):
    monkeypatch.setattr("tile_lab.magic.tile_magic.display", lambda obj: None)
    ns = shell.user_ns
    ns["space"] = tile_lab.Space(TILE=[128, 256], LAT=[1, 3])
    ns["ex"] = ns["ey"] = np.zeros(1024, np.float32)
    with pytest.raises(SignatureError, match=r"--explore needs one tile_lab\.Space, got int"):
        shell.run_cell_magic("tile", EXPLORE.replace("space", "3", 1), SCALE)
    with pytest.raises(SignatureError, match="--args: name 'missing' is not defined"):
        shell.run_cell_magic("tile", EXPLORE.replace("ey,", "missing,"), SCALE)


# -- %config TileMagics: the magic's defaults --------------------------------------------------

@pytest.fixture
def config(shell):
    """The registered TileMagics instance; its traits are restored afterwards."""
    from tile_lab.magic.tile_magic import TileMagics

    magics = [c for c in shell.configurables if isinstance(c, TileMagics)]
    saved = [m.trait_values() for m in magics]
    yield magics
    for m, values in zip(magics, saved):
        for name in ("arch", "show", "emulator_max_blocks", "emulator_max_steps",
                     "launch_fallback"):
            setattr(m, name, values[name])


def test_config_sets_arch_and_show_for_cells_that_omit_them(shell, shown, config):
    shell.run_line_magic("config", 'TileMagics.arch = "sm_80"')
    shell.run_line_magic("config", 'TileMagics.show = "source,tileir"')
    shell.run_cell_magic("tile", SIG3, VADD)
    data = shown[-1][MIME_TYPE]
    assert data["arch"] == "sm_80" and data["show"] == ["source", "tileir"]
    shell.run_cell_magic("tile", SIG3 + " --arch sm_90 --show sass", VADD)  # the cell wins
    data = shown[-1][MIME_TYPE]
    assert data["arch"] == "sm_90" and data["show"] == ["sass"]


def test_config_emulator_block_limit_refuses_big_grids(shell, api_calls, config, capsys):
    shell.run_line_magic("config", "TileMagics.emulator_max_blocks = 8")
    shell.run_cell_magic("tile", '--emulate --grid 8 --args "ea, eb, ec, 64"', VADD)
    assert [c[0] for c in api_calls] == ["emulate"]
    err, out = run_failing(shell, capsys,
                           '%%tile --trace --grid "(4, 4)" --args "ea, eb, ec, 32"\n' + VADD)
    assert isinstance(err, SignatureError) and len(api_calls) == 1  # nothing ran
    assert "16 blocks: too many for the CPU emulator" in out and "limit: 8" in out
    assert "%config TileMagics.emulator_max_blocks" in out
    line, caret = caret_line(out, 1)
    assert line.split("| ", 1)[1][caret.index("^") - len("       | "):].startswith("(4, 4)")


SPIN = """
@ct.kernel
def spin(x, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, (bid,), (TILE,))
    if bid == 2:
        while True:
            t = t + 1
    ct.store(x, (bid,), t + 1)
"""


def test_config_step_budget_stops_a_loop_that_never_ends(shell, config, capsys):
    shell.run_cell("import cuda.tile as ct")
    shell.user_ns["sx"] = np.zeros(32, np.float32)
    shell.run_line_magic("config", "TileMagics.emulator_max_steps = 20000")
    err, out = run_failing(shell, capsys,
                           '%%tile --emulate --grid "(4,)" --args "sx, 8"' + SPIN)
    assert isinstance(err, EmulationError)
    assert "block (2,) executed more than 20,000 kernel lines" in out
    assert "2 of 4 blocks ran completely and the arrays hold their writes" in out
    assert ", line 8" in out and "   8 |             t = t + 1" in out  # the cell's line
    assert "%config TileMagics.emulator_max_steps" in out
    x = shell.user_ns["sx"]
    assert (x[:16] == 1).all() and (x[24:] == 0).all()
    # with the budget off (the default) nothing is traced: a normal cell runs as before
    shell.run_line_magic("config", "TileMagics.emulator_max_steps = 0")
    shell.run_cell_magic("tile", '--emulate --grid "(2,)" --args "sx, 8"', SPIN)
    assert (x[:16] == 2).all()


def test_config_launch_fallback(shell, api_calls, config):
    shell.run_cell_magic("tile", '--launch --grid 4 --args "ea, eb, ec, 128"', VADD)
    shell.run_line_magic("config", 'TileMagics.launch_fallback = "error"')
    shell.run_cell_magic("tile", '--launch --grid 4 --args "ea, eb, ec, 128"', VADD)
    assert [c[2]["fallback"] for c in api_calls] == ["emulate", None]


def test_config_rejects_bad_values(shell, config):
    from traitlets import TraitError

    for setting in ('TileMagics.arch = "sm_77"', 'TileMagics.arch = "hopper"',
                    'TileMagics.show = "bogus"', 'TileMagics.launch_fallback = "maybe"',
                    "TileMagics.emulator_max_blocks = 0", "TileMagics.emulator_max_steps = -1",
                    'TileMagics.emulator_max_steps = "lots"'):
        with pytest.raises(TraitError):
            config[0].update_config(_config_from(setting))


def test_config_names_itself_when_it_refuses_an_arch(shell, config, caplog):
    # %config TileMagics.arch = 'sm_77' was accepted; the next cell then failed without
    # saying the value came from %config. %config logs what it refuses (an error line in
    # the notebook)
    shell.run_line_magic("config", "TileMagics.arch = 'sm_77'")
    said = caplog.text
    assert "TileMagics.arch: arch 'sm_77' is not a GPU architecture tileiras" in said
    assert "use one of" in said and "sm_90" in said
    assert config[0].arch != "sm_77"
    shell.run_line_magic("config", "TileMagics.arch = 'sm_90'")
    assert config[0].arch == "sm_90"


def _config_from(setting: str):
    from traitlets.config import Config

    cfg = Config()
    exec(f"cfg.{setting}", {"cfg": cfg})
    return cfg


def test_config_lists_the_options(shell, capsys):
    capsys.readouterr()
    shell.run_line_magic("config", "TileMagics")
    out = capsys.readouterr().out
    for name in ("arch", "show", "emulator_max_blocks", "emulator_max_steps",
                 "launch_fallback"):
        assert f"TileMagics.{name}" in out


def test_running_cell_number_is_the_cell_ipython_shows(shell, capsys):
    # IPython >= 9 increments execution_count before the cell runs: the label must be the
    # count the cell itself got, for an error in the %%tile cell
    result = shell.run_cell('%%tile --sig "f32[1024], f32[1024], f32[1024], 256"\n'
                            + VADD.replace("ta + tb", "ta + tb + nope"), store_history=True)
    out = capsys.readouterr().out
    assert f"at Cell In[{result.execution_count}], line 9" in out
    assert f"Cell In[{result.execution_count + 1}]" not in out


# -- --crosscheck (GPU vs emulator) ------------------------------------------------------------

def test_crosscheck_runs_both_sides_and_displays_the_verdict(shell, shown, monkeypatch):
    from crosscheck_fakes import ScriptedGpu

    import tile_lab.crosschecking

    monkeypatch.setattr(tile_lab.crosschecking, "CupyGpu", lambda hints=None: ScriptedGpu())
    ns = shell.user_ns
    ns["xa"], ns["xb"] = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    ns["xc"] = np.zeros(1000, np.float32)
    shell.run_cell_magic("tile", '--crosscheck --grid "(8,)" --args "xa, xb, xc, 128"', VADD)
    (bundle,) = shown
    assert bundle["text/plain"].startswith(
        "vadd on scripted GPU vs the emulator: 8 tiles of 1 output: all identical")
    assert "<svg" in bundle["text/html"]
    assert not ns["xc"].any()  # the user's arrays are inputs to both sides, never written


def test_crosscheck_without_a_gpu_fails_the_cell_at_the_tile_line(shell, capsys):
    from tile_lab.crosschecking import gpu_requirements

    if not gpu_requirements():
        pytest.skip("this machine has a usable GPU")
    shell.user_ns["ya"] = np.ones(256, np.float32)
    cell = '%%tile --crosscheck --grid "(2,)" --args "ya, ya, ya, 128"\n' + VADD
    err, out = run_failing(shell, capsys, cell)
    assert type(err).__name__ == "NoGPUError"
    assert "needs CuPy and a CUDA GPU of sm_90 or newer" in out
    assert "line 1" in out and "%%tile --crosscheck" in caret_line(out, 1)[0]


def test_crosscheck_needs_grid_and_args(shell, capsys):
    _, out = run_failing(shell, capsys, "%%tile --crosscheck --grid 2\n" + VADD)
    assert "running a kernel needs --grid and --args" in out
    assert "line 1" in out


def test_crosscheck_is_refused_for_cpp_cells(shell):
    with pytest.raises(EmulatorUnsupported, match="--crosscheck: the CPU emulator runs cuTile"):
        shell.run_cell_magic("tile", "--lang c++ --crosscheck --grid 4 --args 'ea, eb, ec, 4'",
                             "__tile_global__ void k() {}")
