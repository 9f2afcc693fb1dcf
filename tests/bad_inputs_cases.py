"""The bad-input corpus run by test_bad_inputs.py: each case is a notebook cell a new user
might write, and what tile_lab must answer (see ``Case``). Line numbers are cell lines as
IPython counts them: in a ``%%tile`` cell the ``%%tile`` line is line 1."""

from __future__ import annotations

from dataclasses import dataclass

from shared_kernels import vadd_cell


@dataclass(frozen=True)
class Case:
    name: str
    entry: str  # which entry point: compile, --sig, --args, --grid, --hints, options, ...
    cell: str  # the cell that must fail
    error: str  # the exception class name
    line: int | None = None  # "at Cell In[N], line L": L (None: not located)
    words: tuple[str, ...] = ()  # regexes the shown error must contain
    in_cell: int | None = None  # index into ``before`` of the cell the line is in (None: this
    # cell, SETUP_CELL: the SETUP cell, which defines vadd)
    before: tuple[str, ...] = ()  # cells run first (they must succeed)
    caret_under: str | None = None  # the text the caret must point at ("": after the line)
    needs: tuple[str, ...] = ()  # importable modules the case needs (skipped without);
    # "no-gpu": only on a machine without a usable GPU


SETUP_CELL = -1  # Case.in_cell for a line of SETUP

SETUP = """\
import math
import numpy as np
import cuda.tile as ct
import tile_lab

a = np.arange(1024, dtype=np.float32)
b = np.ones(1024, dtype=np.float32)
c = np.zeros(1024, dtype=np.float32)
cz = np.zeros(1024, dtype=np.complex64)
m = np.ones((64, 64), dtype=np.float32)

@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)
"""  # vadd's def is line 13 of this cell

SIG = '--sig "f32[1024], f32[1024], f32[1024], 256"'
RUN = '--args "a, b, c, 256" --grid "(4,)"'

# a %%tile body: decorator on line 2, def 3, bid 4, loads 5-6, store 7
VADD = vadd_cell("vadd_t", header="")


def tile(options: str, body: str = VADD) -> str:
    return f"%%tile {options}\n{body}"


def vadd_with(line: int, text: str) -> str:
    """VADD with cell line ``line`` (4-7) replaced by ``text``."""
    rows = VADD.splitlines()
    rows[line - 2] = text
    return "\n".join(rows) + "\n"


CPP = """#include "cuda_tile.h"
namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void cadd(float* a, float* b, float* c, std::size_t n) {
  auto bid = ct::bid().x;
  auto va = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, ct::shape{256_ic}};
  auto vb = ct::partition_view{ct::tensor_span{b, ct::extents{n}}, ct::shape{256_ic}};
  auto vc = ct::partition_view{ct::tensor_span{c, ct::extents{n}}, ct::shape{256_ic}};
  vc.store(va.load(bid) + vb.load(bid), bid);
}
"""  # in a %%tile cell: the kernel's lines are 6-12, the store line 11


def cpp_with(line: int, text: str) -> str:
    rows = CPP.splitlines()
    rows[line - 2] = text
    return "\n".join(rows) + "\n"


CASES: list[Case] = [
    # -- compile errors in a %%tile cell ------------------------------------------------
    Case("undefined-name", "compile",
         tile(SIG, vadd_with(7, "    ct.store(c, index=(bid,), tile=ta + tb + nope)")),
         "CompileError", 7, (r"Undefined variable nope",), caret_under="nope"),
    Case("index-rank", "compile",
         tile(SIG, vadd_with(5, "    ta = ct.load(a, index=(bid, 0), shape=(TILE,))")),
         "CompileError", 5, (r"Index size 2 does not match the array rank 1",)),
    Case("broadcast-shapes", "compile", tile('--sig "f32[64,1024], f32[512], 1024"', """\
@ct.kernel
def bc(a, b, TILE: ct.Constant[int]):
    t = ct.load(a, index=(0, 0), shape=(1, TILE))
    u = ct.load(b, index=(0,), shape=(TILE // 2,))
    ct.store(a, index=(0, 0), tile=t + u)
"""), "CompileError", 6, (r"shape error", r"not broadcastable: \(1, 1024\), \(512,\)",
                          r"hint: .*broadcast")),
    Case("while-true-no-break", "compile", tile('--sig "f32[1024], 256"', """\
@ct.kernel
def spin(a, TILE: ct.Constant[int]):
    i = 0
    while True:
        i += 1
    ct.store(a, index=(0,), tile=ct.full((TILE,), 1.0, ct.float32))
"""), "CompileError", 5, (r"loop without an exit", r"no `break`", r"hint: .*break")),
    Case("while-true-return-only", "compile", tile('--sig "f32[1024], 256"', """\
@ct.kernel
def first(a, TILE: ct.Constant[int]):
    i = 0
    while True:
        if i > 3:
            return
        i += 1
"""), "CompileError", 5, (r"cuTile compiler failure", r"only exit is a `return`",
                          r"hint: .*break")),
    Case("python-syntax", "compile",
         tile(SIG, vadd_with(5, "    ta = ct.load(a, index=(bid,) shape=(TILE,))")),
         "CompileError", 5, (r"SyntaxError",)),
    Case("tile-not-power-of-two", "compile",
         tile(SIG, vadd_with(5, "    ta = ct.load(a, index=(bid,), shape=(100,))")),
         "CompileError", 5, (r"power of (two|2)",)),
    Case("runtime-shape", "compile", tile('--sig "f32[1024], i32"', """\
@ct.kernel
def dyn(a, n):
    t = ct.load(a, index=(0,), shape=(n,))
    ct.store(a, index=(0,), tile=t)
"""), "CompileError", 4, (r"Expected a constant integer tuple",)),
    Case("no-kernel-in-cell", "compile", tile(SIG, "x = 1\n"), "CompileError", 1,
         (r"defines no @ct.kernel function",)),
    Case("helper-error", "compile", tile(SIG, """\
@ct.function
def twice(t):
    return t.reshape((3,))

@ct.kernel
def vh(a, b, c, TILE: ct.Constant[int]):
    ta = ct.load(a, index=(ct.bid(0),), shape=(TILE,))
    ct.store(c, index=(ct.bid(0),), tile=twice(ta))
"""), "CompileError", 4, (r"Cannot reshape \(256,\) to \(3,\)",
                          r"hint: called from Cell In\[\d+\], line 9")),
    Case("numpy-in-kernel", "compile",
         tile(SIG, vadd_with(7, "    ct.store(c, index=(bid,), tile=np.sqrt(ta))")),
         "CompileError", 7, (r"numpy.ufunc", r"hint: kernels compute with cuTile operations")),
    Case("math-in-kernel", "compile",
         tile(SIG, vadd_with(6, "    tb = math.sqrt(ct.load(b, index=(bid,), shape=(TILE,)))")),
         "CompileError", 6, (r"not callable in a kernel: .*sqrt\(\) is not supported",
                             r"hint: kernels compute with cuTile operations")),
    Case("python-error-in-cell-body", "compile", tile(SIG, VADD + "y = 1 / 0\n"),
         "ZeroDivisionError", 8, (r"division by zero",)),
    Case("store-to-scalar", "compile", tile('--sig "f32[1024], f32[1024], i32"', """\
@ct.kernel
def st(a, b, n):
    t = ct.load(a, index=(0,), shape=(256,))
    ct.store(n, index=(0,), tile=t)
"""), "CompileError", 5, (r"store\(\): Expected an array",)),

    # -- --sig ---------------------------------------------------------------------------
    Case("sig-count", "--sig", tile('--sig "f32[1024], f32[1024], 256"'), "SignatureError", 1,
         (r"vadd_t\(\) takes 4 arguments \(a, b, c, TILE\) but the signature spec",)),
    Case("sig-unknown-dtype", "--sig", tile('--sig "f33[1024], f32[1024], f32[1024], 256"'),
         "SignatureError", 1, (r"unknown dtype 'f33'", r"known dtypes: .*f32"),
         caret_under='f33[1024]'),
    Case("sig-bad-dimension", "--sig", tile('--sig "f32[10x], f32[1024], f32[1024], 256"'),
         "SignatureError", 1, (r"bad dimension '10x'",),
         caret_under='f32[10x]'),
    Case("sig-empty-item", "--sig", tile('--sig "f32[1024], , f32[1024], 256"'),
         "SignatureError", 1, (r"item 2 is empty",)),
    Case("sig-array-for-constant", "--sig",
         tile('--sig "f32[1024], f32[1024], f32[1024], f32[4]"'), "SignatureError", 1,
         (r"argument 4 \('TILE'\)", r"ct.Constant"),
         caret_under='f32[4]'),
    Case("sig-wrong-name", "--sig", tile('--sig "x=f32[1024], f32[1024], f32[1024], 256"'),
         "SignatureError", 1, (r"argument 1 \('a'\)", r"names it 'x'"),
         caret_under='x=f32[1024]'),
    Case("sig-garbage-item", "--sig", tile('--sig "f32[1024], f32[1024], f32[1024], 12abc"'),
         "SignatureError", 1, (r"item 4", r"neither an array"),
         caret_under='12abc'),
    Case("sig-scalar-for-array", "--sig", tile('--sig "i32, f32[1024], f32[1024], 256"'),
         "CompileError", 5, (r"load\(\): Expected an array",)),
    Case("sig-needs-spec", "--sig", tile('--sig "" --show tileir'), "SignatureError", 1,
         (r"takes 4 arguments",)),

    # -- --args --------------------------------------------------------------------------
    Case("args-undefined-name", "--args", tile('--args "a, b, zz, 256"'), "SignatureError", 1,
         (r"--args: name 'zz' is not defined", r"hint: define it"), caret_under="zz"),
    Case("args-syntax", "--args", tile('--args "a, b,, 256"'), "SignatureError", 1,
         (r"not a list of Python expressions",)),
    Case("args-complex64", "--args", tile('--args "cz, b, c, 256"'), "SignatureError", 1,
         (r"argument 1 \('a'\)", r"complex64 have no cuTile equivalent"),
         caret_under='cz'),
    Case("args-count", "--args", tile('--args "a, b, 256"'), "SignatureError", 1,
         (r"takes 4 arguments",)),
    Case("args-raises", "--args", tile('--args "a, b, c, 1 // 0"'), "SignatureError", 1,
         (r"raised ZeroDivisionError",)),
    Case("args-string", "--args", tile('--args "a, \'b\', c, 256"'), "SignatureError", 1,
         (r"argument 2 \('b'\)", r"got str",),
         caret_under="'b'"),
    Case("args-int-too-big", "--args", tile('--args "a, 2**40"', """\
@ct.kernel
def sc(a, n):
    t = ct.load(a, index=(0,), shape=(256,))
    ct.store(a, index=(0,), tile=t + n)
"""), "SignatureError", 1, (r"argument 2 \('n'\)", r"does not fit int32", r"int64"),
         caret_under='2**40'),
    Case("args-negative-strides", "--args", tile('--args "a[::-1], b, c, 256"'),
         "SignatureError", 1, (r"argument 1 \('a'\)", r"negative strides"),
         caret_under='a[::-1]'),
    Case("args-2d-for-1d", "--args", tile('--args "m, b, c, 256"'), "CompileError", 5,
         (r"Index size 1 does not match the array rank 2",)),
    Case("args-torch-complex", "--args", tile('--args "tz, b, c, 256"'), "SignatureError", 1,
         (r"argument 1 \('a'\)", r"complex64"), needs=("torch",),
         before=("import torch\ntz = torch.zeros(1024, dtype=torch.complex64)\n",),
         caret_under='tz'),
    Case("args-object", "--args", tile('--args "a, b, object(), 256"'), "SignatureError", 1,
         (r"argument 3 \('c'\)", r"got object"),
         caret_under='object()'),

    # -- --grid --------------------------------------------------------------------------
    Case("grid-zero", "--grid", tile('--emulate --args "a, b, c, 256" --grid "(0,)"'),
         "SignatureError", 1, (r"--grid must be 1 to 3 positive ints",), caret_under="(0,)"),
    Case("grid-four-dims", "--grid",
         tile('--emulate --args "a, b, c, 256" --grid "(1, 2, 3, 4)"'), "SignatureError", 1,
         (r"1 to 3 positive ints",)),
    Case("grid-huge-emulate", "--grid",
         tile('--emulate --args "a, b, c, 256" --grid "(10**9,)"'), "SignatureError", 1,
         (r"1,000,000,000 blocks", r"too many for the CPU emulator",
          r"TileMagics.emulator_max_blocks"), caret_under="(10**9,)"),
    Case("grid-huge-trace", "--grid", tile('--trace --args "a, b, c, 256" --grid "(10**9,)"'),
         "SignatureError", 1, (r"too many for the CPU emulator",)),
    Case("grid-huge-sanitize", "--grid",
         tile('--sanitize --args "a, b, c, 256" --grid "(4096, 4096)"'), "SignatureError", 1,
         (r"16,777,216 blocks",)),
    Case("grid-undefined", "--grid", tile('--emulate --args "a, b, c, 256" --grid "nope"'),
         "SignatureError", 1, (r"--grid: name 'nope' is not defined",), caret_under="nope"),
    Case("grid-float", "--grid", tile('--emulate --args "a, b, c, 256" --grid "(2.5,)"'),
         "SignatureError", 1, (r"positive ints", r"2\.5")),
    Case("grid-without-flag", "--grid", tile('--args "a, b, c, 256" --grid "(4,)"'),
         "OptionError", 1, (r"--grid is for running a kernel",),
         caret_under='--grid'),
    Case("grid-missing", "--grid", tile('--emulate --args "a, b, c, 256"'), "OptionError",
         1, (r"needs --grid and --args",), caret_under=""),  # after the line: add it there

    # -- --hints -------------------------------------------------------------------------
    Case("hints-not-int", "--hints", tile(SIG + " --hints num_ctas=x"), "CompileError", 1,
         (r"bad kernel hint 'num_ctas=x'", r"name=integer", r"valid hints"),
         caret_under='--hints'),
    Case("hints-unknown", "--hints", tile(SIG + " --hints bogus=2"), "CompileError", 1,
         (r"unknown kernel hint 'bogus'", r"valid hints: .*num_ctas"),
         caret_under='--hints'),
    Case("hints-bad-value", "--hints", tile(SIG + " --hints num_ctas=3"), "CompileError", 1,
         (r"num_ctas should be power of 2, got 3",),
         caret_under='--hints'),
    Case("hints-bad-occupancy", "--hints", tile(SIG + " --hints occupancy=0"), "CompileError",
         1, (r"occupancy should be \[1, 32\], got 0",),
         caret_under='--hints'),
    Case("hints-cpp", "--hints", tile("--lang c++ --hints num_ctas=2", CPP), "OptionError",
         1, (r"--hints does not apply to C\+\+ cells",),
         caret_under='--hints'),

    # -- magic options -------------------------------------------------------------------
    Case("show-unknown-pane", "options", tile(SIG + " --show bogus"), "OptionError", 1,
         (r"unknown pane 'bogus'",),
         caret_under='--show'),
    Case("lang-unknown", "options", tile("--lang fortran"), "OptionError", 1,
         (r"--lang must be python, c\+\+ or triton",),
         caret_under='--lang'),
    Case("two-run-flags", "options", tile("--emulate --trace " + RUN), "OptionError", 1,
         (r"one of --emulate, --trace",),
         caret_under='--emulate'),
    Case("kernel-unknown", "options", tile(SIG + " --kernel nope"), "OptionError", 1,
         (r"--kernel nope: the cell defines no",),
         caret_under='--kernel'),
    Case("arch-unknown", "options", tile(SIG + " --arch sm_12"), "CompileError", 1,
         (r"arch 'sm_12' is not a GPU architecture", r"use one of .*sm_90"),
         caret_under='--arch'),
    Case("explore-not-a-space", "options",
         tile('--explore 42 --grid "(4,)" --args "a, b, c, cfg[\'TILE\']"'),
         "SignatureError", 1, (r"--explore needs one tile_lab.Space, got int",),
         caret_under="42"),
    Case("explore-with-flag", "options", tile('--explore s --emulate ' + RUN), "OptionError",
         1, (r"--explore runs the kernel itself",),
         caret_under='--explore'),
    Case("unknown-option", "options", tile("--bogus 3"), "OptionError", 1,
         (r"unrecognized arguments|bogus",),
         caret_under='--bogus'),
    Case("two-kernels-run", "options", tile("--emulate " + RUN, VADD + VADD.replace(
        "vadd_t", "vadd_u")), "OptionError", 1, (r"pick the one to run with --kernel",)),

    # -- emulate with wrong arrays / failing kernels ---------------------------------------
    Case("emulate-complex64", "emulate", tile('--emulate --args "cz, b, c, 256" --grid "(4,)"'),
         "EmulationError", 1, (r"argument 1 \('a'\)", r"complex64 have no cuTile equivalent"),
         caret_under="cz"),
    Case("emulate-defined-earlier-plain", "emulate",
         "tile_lab.emulate(k2, (4,), (a, 256))\n", "TypeCheckingError", 4,  # cuTile's own class
         (r"Cannot reshape \(256,\) to \(3,\)", r"compiler rejects this kernel"), in_cell=0,
         before=("""\
@ct.kernel
def k2(x, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(x, index=(ct.bid(0),), tile=t.reshape((3,)))
""",)),
    Case("emulate-defined-earlier-tile", "emulate",
         "x = 1\ntile_lab.emulate(k3, (4,), (a, 256))\n", "TypeCheckingError", 5,
         (r"Cannot reshape",), in_cell=0, before=("""%%tile
@ct.kernel
def k3(x, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(x, index=(ct.bid(0),), tile=t.reshape((3,)))
""",)),
    Case("emulate-arg-count", "emulate", "tile_lab.emulate(vadd, (4,), (a, b))\n",
         "ArgumentTypeError", 1, (r"Kernel expects 4 arguments but 2 were given",
                                  r"cuTile's ct.launch rejects these arguments")),
    Case("emulate-grid-zero", "emulate", "tile_lab.emulate(vadd, (0,), (a, b, c, 256))\n",
         "EmulationError", 1, (r"grid must be a tuple of 1 to 3 positive ints, got \(0,\)",)),
    Case("emulate-array-for-constant", "emulate", "tile_lab.emulate(vadd, (4,), (a, b, c, a))\n",
         "ArgumentTypeError", 1, (r"argument #3", r"as a constant")),
    Case("emulate-not-a-kernel", "emulate", "tile_lab.emulate(42, (4,), (a, b, c, 256))\n",
         "EmulationError", 1, (r"expected a @ct.kernel .*, got int",)),
    Case("emulate-torch-complex", "emulate", "import torch\ntile_lab.emulate(vadd, (4,), "
         "(torch.zeros(1024, dtype=torch.complex64), b, c, 256))\n", "EmulationError", 13,
         (r"argument 1 \('a'\)", r"complex64"), needs=("torch",), in_cell=SETUP_CELL,
         caret_under="a, b"),
    Case("trace-block-outside-grid", "emulate",
         "tile_lab.trace(vadd, (4,), (a, b, c, 256), blocks=[(9,)])\n", "EmulationError", 1,
         (r"\(9,\) is not a block id inside grid \(4, 1, 1\)",)),
    Case("sanitize-arg-count", "emulate", "tile_lab.sanitize(vadd, (4,), (a,))\n",
         "ArgumentTypeError", 1, (r"Kernel expects 4 arguments but 1 was given",)),
    Case("emulate-magic-runtime-error", "emulate", tile('--emulate --args "a, 256" --grid "(4,)"',
                                                        """\
@ct.kernel
def k4(x, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(x, index=(ct.bid(0),), tile=t.reshape((3,)))
"""), "TypeCheckingError", 5, (r"Cannot reshape",)),

    # -- bad calls to the Python API ---------------------------------------------------------
    Case("diagram-int", "api", "x = 1\ntile_lab.diagram(42)\n", "ArgumentTypeError", 2,
         (r"argument 1 \(trace\) must be a tile_lab.Trace, got int", r"hint: .*trace\("),
         caret_under="tile_lab.diagram(42)"),
    Case("inspect-not-a-kernel", "api", "tile_lab.inspect(42, 'f32[4]')\n", "SignatureError", 1,
         (r"expects a @ct.kernel function", r"got int")),
    Case("inspect-int-signature", "api", "tile_lab.inspect(vadd, 42)\n", "SignatureError", 1,
         (r"args_or_sig must be", r"got int")),
    Case("inspect-single-array", "api", "tile_lab.inspect(vadd, a)\n", "SignatureError", 1,
         (r"not a single array",)),
    Case("inspect-bad-arch", "api",
         "tile_lab.inspect(vadd, 'f32[1024], f32[1024], f32[1024], 256', arch='sm_1')\n",
         "CompileError", 1, (r"arch 'sm_1' is not a GPU architecture",)),
    Case("inspect-hints-int", "api",
         "tile_lab.inspect(vadd, 'f32[1024], f32[1024], f32[1024], 256', hints=5)\n",
         "CompileError", 1, (r"hints must be a dict", r"got int")),
    Case("inspect-bad-show", "api",
         "tile_lab.inspect(vadd, 'f32[1024], f32[1024], f32[1024], 256', show='bogus')\n",
         "CompileError", 1, (r"unknown pane 'bogus'",)),
    Case("inspect-arg-count", "api", "y = 2\ntile_lab.inspect(vadd, [a, b, c])\n",
         "SignatureError", 2, (r"takes 4 arguments",)),
    Case("partition-zero-tile", "api", "tile_lab.partition((10,), (0,))\n", "DiagramError", 1,
         (r"tile=\(0,\)", r"positive")),
    Case("partition-rank-mismatch", "api", "tile_lab.partition((10,), (2, 2))\n",
         "DiagramError", 1, (r"has 2 dims",)),
    Case("diagram-bad-view", "api",
         "t = tile_lab.trace(vadd, (4,), (a.copy(), b, c.copy(), 256))\n"
         "tile_lab.diagram(t, view='bogus')\n", "DiagramError", 2,
         (r"view='bogus' is not a diagram view",)),

    Case("tune-not-a-space", "api", "tile_lab.tune(vadd, 42, lambda cfg: (4,),\n"
         "              lambda cfg: (a, b, c, 256))\n", "ArgumentTypeError", 1,
         (r"argument 2 \(space\) must be a tile_lab.Space, got int",)),
    Case("space-empty", "api", "tile_lab.Space()\n", "SpaceError", 1,
         (r"a Space needs at least one knob",)),
    Case("sanitize-int-grid", "api", "tile_lab.sanitize(vadd, 4, (a, b, c, 256))\n",
         "EmulationError", 1, (r"grid must be a tuple of 1 to 3 positive ints, got 4",)),

    # -- CUDA Tile C++ cells ---------------------------------------------------------------
    Case("cpp-syntax", "c++", tile("--lang c++ --arch sm_90",
                                   cpp_with(11, "  vc.store(va.load(bid) + vb.load(bid) bid);")),
         "CompileError", 11, (r'expected a "\)"', r"Cell In\[\d+\]\(11\): error")),
    Case("cpp-undeclared", "c++", tile("--lang c++ --arch sm_90",
                                       cpp_with(11, "  vc.store(va.load(bid) + nope, bid);")),
         "CompileError", 11, (r"nope",)),
    Case("cpp-emulate", "c++", tile("--lang c++ --emulate " + RUN, CPP), "EmulatorUnsupported",
         1, (r"runs cuTile Python kernels only",)),
    Case("cpp-source-int", "c++", "tile_lab.inspect_cpp(42)\n", "ArgumentTypeError", 1,
         (r"argument 1 \(source\) must be C\+\+ text or a path, got int",)),
    Case("cpp-no-kernel", "c++", tile("--lang c++", "int x = 1;\n"), "CompileError", 1,
         (r"defines no __tile_global__ kernel",)),
    Case("cpp-sig", "c++", tile("--lang c++ " + SIG, CPP), "OptionError", 1,
         (r"--sig is for Python kernels",),
         caret_under='--sig'),
    Case("cpp-partition", "c++", tile("--lang c++ --show partition", CPP), "OptionError", 1,
         (r"partition diagram needs the CPU emulator",)),

    # -- --crosscheck (needs a GPU: on a machine without one, that is what it says) ----------
    Case("crosscheck-no-grid", "--crosscheck", tile('--crosscheck --args "a, b, c, 256"'),
         "OptionError", 1, (r"needs --grid and --args",), caret_under=""),
    Case("crosscheck-with-emulate", "--crosscheck", tile("--crosscheck --emulate " + RUN),
         "OptionError", 1, (r"one of --emulate, .*--crosscheck",), caret_under="--emulate"),
    Case("crosscheck-no-gpu", "--crosscheck", tile("--crosscheck " + RUN), "NoGPUError", 1,
         (r"crosscheck needs CuPy and a CUDA GPU of sm_90 or newer",), needs=("no-gpu",)),
    Case("crosscheck-cpp", "c++", tile("--lang c++ --crosscheck " + RUN, CPP),
         "EmulatorUnsupported", 1, (r"--crosscheck: the CPU emulator runs cuTile Python",)),
]
