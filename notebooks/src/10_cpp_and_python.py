# %% [markdown]
# # 10 · CUDA Tile C++ and cuTile Python, side by side
#
# The CUDA programming guide teaches every tile pattern twice: in **cuTile Python** and in
# **CUDA Tile C++** (`#include "cuda_tile.h"`, `__tile_global__`, `ct::partition_view`, `_ic`
# literals). Both front ends emit the same **Tile IR**, which `tileiras` turns into the cubin.
# This notebook walks the guide's pairs — vector add, masked edges, gather, a `tile_sum` loop,
# GEMM with `mma`, `block_sum` with atomics — and for each one shows the C++ cell, the Python
# kernel, and `tile_lab.compare` lining up their Tile IR op by op.
#
# Everything here runs on a CPU: the C++ compiles with the pip-installed `nvcc` (no CUDA
# toolkit needed), the Python twins run on the tile_lab emulator. Cells that launch on a GPU
# say so in one line when there is none.

# %%
import numpy as np
import cuda.tile as ct
import tile_lab
from tile_lab.gpu import TimingOptions, gpu_available

%load_ext tile_lab
GPU = gpu_available()
ARCH = "sm_90"  # one fixed target, so the Tile IR below is the same on every machine


def cpp_cell(kernel_name):
    """The text of the latest `%%tile --lang c++` cell defining `kernel_name`. The magic
    registers every cell with `linecache` (a blank line first, so line N is the cell's line N);
    this reads it back from there, so the C++ is written once, in the cell."""
    import linecache

    marker = f"__tile_global__ void {kernel_name}("
    for entry in reversed(list(linecache.cache.values())):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if text.startswith("\n") and marker in text and '#include "cuda_tile.h"' in text:
            return text
    raise LookupError(f"no %%tile --lang c++ cell defines {kernel_name}")


def where(comparison, *ops):
    """Which side's Tile IR has each op (anywhere: the front ends order some ops differently)."""
    py = {p.py.op for p in comparison.pairs if p.py}
    cpp = {p.cpp.op for p in comparison.pairs if p.cpp}
    for op in ops:
        print(f"  {op:<22} {'Python' if op in py else '-':<7} {'C++' if op in cpp else '-'}")

# %% [markdown]
# ## 1 · Vector add
#
# `%%tile --lang c++` compiles the cell as CUDA Tile C++ and shows the same inspect view as a
# Python cell: source and Tile IR, line-linked (hover a Tile IR line to see its C++ line).
# A tile block is one CUDA block (block size 1); `ct::bid().x` is the Python `ct.bid(0)`.

# %%
%%tile --lang c++ --arch sm_90 --show source,tileir
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void vector_add(float* a, float* b, float* c, std::size_t n) {
  auto bid = ct::bid().x;
  auto va = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, ct::shape{1024_ic}};
  auto vb = ct::partition_view{ct::tensor_span{b, ct::extents{n}}, ct::shape{1024_ic}};
  auto vc = ct::partition_view{ct::tensor_span{c, ct::extents{n}}, ct::shape{1024_ic}};
  vc.store(va.load(bid) + vb.load(bid), bid);
}

# %% [markdown]
# The Python twin: an array argument carries its own shape, so there is no `n` and no
# `tensor_span`; `ct.load(a, index=(bid,), shape=(1024,))` is the partition view's `load(bid)`.

# %%
@ct.kernel
def vector_add(a, b, c):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(1024,))
    tb = ct.load(b, index=(bid,), shape=(1024,))
    ct.store(c, index=(bid,), tile=ta + tb)

# %% [markdown]
# `tile_lab.compare(python, c++)` compiles both for the same target and aligns their Tile IR:
# **same** ops line up, **similar** ones differ only in types or attributes, and ops only one
# side has are marked. The core is identical — partition views, two `load_view_tko`, `addf`,
# `store_view_tko`. The differences are at the edges: Python passes each array's shape and
# strides as kernel parameters and states what it knows about them (`assume`: divisibility,
# bounds), while C++ builds the tensor view from `n` with a few integer ops (note the
# `trunci`: the `std::size_t` extent is narrowed to 32 bits). The two front ends also place
# `get_tile_block_id` at different points, so the alignment lists it once on each side.

# %%
# NBVAL_CHECK_OUTPUT
add_cmp = tile_lab.compare(vector_add, cpp_cell("vector_add"),
                           py_args="f32[4096], f32[4096], f32[4096]", arch=ARCH)
print(add_cmp.summary())
print("aligned op by op:", ", ".join(op for op in add_cmp.common_ops
                                    if op not in ("constant", "assume")))
where(add_cmp, "get_tile_block_id", "load_view_tko", "addf", "store_view_tko", "trunci")

# %%
add_cmp

# %% [markdown]
# The C++ kernel runs only on a GPU (the emulator covers Python kernels); the Python twin runs
# here, which is how you check the algorithm on a laptop.

# %%
# NBVAL_CHECK_OUTPUT
a = np.arange(4096, dtype=np.float32)
b = np.full(4096, 0.5, np.float32)
c = np.zeros_like(a)
tile_lab.emulate(vector_add, (4,), (a, b, c))
print("Python twin on the emulator matches NumPy:", np.array_equal(c, a + b))

# %% [markdown]
# ## 2 · Masked edges
#
# When `n` is not a multiple of the tile, the last tile hangs over the end. C++ says so with
# `load_masked` / `store_masked`; Python with a padding mode on the load (stores past the end
# are dropped either way).

# %%
%%tile --lang c++ --arch sm_90 --show tileir
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void vector_add_masked(float* a, float* b, float* c, std::size_t n) {
  auto bid = ct::bid().x;
  auto va = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, ct::shape{256_ic}};
  auto vb = ct::partition_view{ct::tensor_span{b, ct::extents{n}}, ct::shape{256_ic}};
  auto vc = ct::partition_view{ct::tensor_span{c, ct::extents{n}}, ct::shape{256_ic}};
  vc.store_masked(va.load_masked(bid) + vb.load_masked(bid), bid);
}

# %%
@ct.kernel
def vector_add_masked(a, b, c):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(256,), padding_mode=ct.PaddingMode.ZERO)
    tb = ct.load(b, index=(bid,), shape=(256,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(c, index=(bid,), tile=ta + tb)

# %%
# NBVAL_CHECK_OUTPUT
print(tile_lab.compare(vector_add_masked, cpp_cell("vector_add_masked"),
                       py_args="f32[1000], f32[1000], f32[1000]", arch=ARCH).summary())
a, b, c = np.ones(1000, np.float32), np.arange(1000, dtype=np.float32), np.zeros(1000, np.float32)
tile_lab.emulate(vector_add_masked, (ct.cdiv(1000, 256),), (a, b, c))
print("1000 elements in 4 tiles of 256, matches NumPy:", np.array_equal(c, a + b))

# %% [markdown]
# ## 3 · Gather
#
# A tile of indices turns into a tile of pointers: C++ writes the pointer arithmetic
# (`broadcast(tile{x}) + offsets`, then `ct::load(ptrs)`), Python calls `ct.gather`. Both
# become `offset` + `load_ptr_tko` in Tile IR.

# %%
%%tile --lang c++ --arch sm_90 --show tileir
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void gather(float* x, int* idx, float* out, std::size_t n) {
  auto bid = ct::bid().x;
  auto vidx = ct::partition_view{ct::tensor_span{idx, ct::extents{n}}, ct::shape{128_ic}};
  auto vout = ct::partition_view{ct::tensor_span{out, ct::extents{n}}, ct::shape{128_ic}};
  auto ptrs = ct::broadcast(ct::tile{x}, ct::shape{128_ic}) + vidx.load(bid);
  vout.store(ct::load(ptrs), bid);
}

# %%
@ct.kernel
def gather(x, idx, out):
    bid = ct.bid(0)
    offsets = ct.load(idx, index=(bid,), shape=(128,))
    ct.store(out, index=(bid,), tile=ct.gather(x, offsets))

# %%
# NBVAL_CHECK_OUTPUT
gather_cmp = tile_lab.compare(gather, cpp_cell("gather"),
                              py_args="f32[1024], i32[512], f32[512]", arch=ARCH)
print(gather_cmp.summary())
where(gather_cmp, "broadcast", "offset", "load_ptr_tko")
x = np.arange(1024, dtype=np.float32) * 10
idx = np.random.default_rng(0).integers(0, 1024, 512).astype(np.int32)
out = np.zeros(512, np.float32)
tile_lab.emulate(gather, (4,), (x, idx, out))
print("matches x[idx]:", np.array_equal(out, x[idx]))

# %% [markdown]
# ## 4 · A loop: `tile_sum`
#
# Row sums of a matrix, 16 rows per block, walking the columns 64 at a time. The C++
# `for (int j : ct::irange(...))` and the Python `for j in range(ct.num_tiles(...))` both
# become a Tile IR `for` with the accumulator carried through `continue`. The loop body and
# the reduction align op for op; the loop *bounds* do not: Python asks the partition view for
# its number of tiles (`get_index_space_shape`), C++ divides `cols / 64` and, before the loop,
# checks the extents with integer ops of its own.

# %%
%%tile --lang c++ --arch sm_90 --show source
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void tile_sum(float* x, float* out, int rows, int cols) {
  auto bid = ct::bid().x;
  auto vx = ct::partition_view{ct::tensor_span{x, ct::extents{rows, cols}},
                               ct::shape{16_ic, 64_ic}};
  auto vout = ct::partition_view{ct::tensor_span{out, ct::extents{rows}}, ct::shape{16_ic}};
  auto acc = ct::zeros<ct::tile<float, ct::shape<16, 64>>>();
  for (int j : ct::irange(0, cols / 64)) {
    acc = acc + vx.load(bid, j);
  }
  vout.store(ct::reshape(ct::sum(acc, 1_ic), ct::shape{16_ic}), bid);
}

# %%
@ct.kernel
def tile_sum(x, out):
    bid = ct.bid(0)
    acc = ct.zeros((16, 64), dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(16, 64))):
        acc = acc + ct.load(x, index=(bid, j), shape=(16, 64))
    ct.store(out, index=(bid,), tile=ct.sum(acc, axis=1))

# %%
# NBVAL_CHECK_OUTPUT
sum_cmp = tile_lab.compare(tile_sum, cpp_cell("tile_sum"), py_args="f32[64,256], f32[64]",
                           arch=ARCH)
print(sum_cmp.summary())
print("aligned op by op:", ", ".join(op for op in sum_cmp.common_ops
                                    if op not in ("constant", "assume")))
where(sum_cmp, "for", "get_index_space_shape", "divi", "reduce")
x = np.random.default_rng(1).random((64, 256), dtype=np.float32)
out = np.zeros(64, np.float32)
tile_lab.emulate(tile_sum, (4,), (x, out))
print("matches x.sum(axis=1):", np.allclose(out, x.sum(axis=1), rtol=1e-5))

# %% [markdown]
# ## 5 · GEMM with `mma`
#
# Each block computes one 64×64 tile of C, accumulating 64×32 by 32×64 slabs on the tensor
# cores: `ct::mma` and `ct.mma` are both Tile IR `mmaf`.

# %%
%%tile --lang c++ --arch sm_90 --show source
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void gemm(float* A, float* B, float* C, int M, int N, int K) {
  auto bm = ct::bid().x;
  auto bn = ct::bid().y;
  auto va = ct::partition_view{ct::tensor_span{A, ct::extents{M, K}}, ct::shape{64_ic, 32_ic}};
  auto vb = ct::partition_view{ct::tensor_span{B, ct::extents{K, N}}, ct::shape{32_ic, 64_ic}};
  auto vc = ct::partition_view{ct::tensor_span{C, ct::extents{M, N}}, ct::shape{64_ic, 64_ic}};
  auto acc = ct::zeros<ct::tile<float, ct::shape<64, 64>>>();
  for (int k : ct::irange(0, K / 32)) {
    acc = ct::mma(va.load(bm, k), vb.load(k, bn), acc);
  }
  vc.store(acc, bm, bn);
}

# %%
@ct.kernel
def gemm(A, B, C):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.zeros((64, 64), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(64, 32))):
        a = ct.load(A, index=(bm, k), shape=(64, 32))
        b = ct.load(B, index=(k, bn), shape=(32, 64))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc)

# %%
# NBVAL_CHECK_OUTPUT
gemm_cmp = tile_lab.compare(gemm, cpp_cell("gemm"),
                            py_args="f32[256,256], f32[256,256], f32[256,256]", arch=ARCH)
print(gemm_cmp.summary())
where(gemm_cmp, "for", "mmaf", "store_view_tko")
A = np.random.default_rng(2).random((128, 64), dtype=np.float32)
B = np.random.default_rng(3).random((64, 128), dtype=np.float32)
C = np.zeros((128, 128), np.float32)
tile_lab.emulate(gemm, (2, 2), (A, B, C))
print("matches A @ B:", np.allclose(C, A @ B, rtol=1e-4))

# %% [markdown]
# ## 6 · `block_sum` with atomics
#
# Every block sums its tile and adds the partial sum to one total. The sum is the same
# `reduce` in both; the atomic is not. C++ adds through a partition view of `total`
# (`atomic_red_view_tko`, with the memory order and scope it names explicitly), Python's
# `ct.atomic_add(total, 0, partial)` computes a pointer to element 0 and does an atomic
# read-modify-write on it (`offset` + `atomic_rmw_tko`). The comparison shows the two
# spellings facing each other as differences.

# %%
%%tile --lang c++ --arch sm_90 --show tileir
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void block_sum(float* x, float* total, std::size_t n) {
  auto bid = ct::bid().x;
  auto vx = ct::partition_view{ct::tensor_span{x, ct::extents{n}}, ct::shape{1024_ic}};
  auto partial = ct::sum(vx.load_masked(bid), 0_ic);
  auto vtotal = ct::partition_view{ct::tensor_span{total, ct::extents{1_ic}}, ct::shape{1_ic}};
  vtotal.atomic_add(ct::reshape(partial, ct::shape{1_ic}), ct::memory_order_relaxed_t{},
                    ct::thread_scope_device_t{}, 0);
}

# %%
@ct.kernel
def block_sum(x, total):
    bid = ct.bid(0)
    partial = ct.sum(ct.load(x, index=(bid,), shape=(1024,), padding_mode=ct.PaddingMode.ZERO))
    ct.atomic_add(total, 0, partial)

# %%
# NBVAL_CHECK_OUTPUT
bsum_cmp = tile_lab.compare(block_sum, cpp_cell("block_sum"), py_args="f32[5000], f32[1]",
                            arch=ARCH)
print(bsum_cmp.summary())
where(bsum_cmp, "reduce", "atomic_red_view_tko", "offset", "atomic_rmw_tko")
x = np.arange(5000, dtype=np.float32) % 7
total = np.zeros(1, np.float32)
tile_lab.emulate(block_sum, (ct.cdiv(5000, 1024),), (x, total))
print("total:", total[0], "NumPy:", x.sum())

# %% [markdown]
# ## Knobs: tile sizes and hints are `-D` defines
#
# A C++ kernel's compile-time constants are template arguments and `_ic` literals, and its
# optimization hints are `[[ cutile::hint(...) ]]` attributes. Writing them as macros makes
# them knobs: `inspect_cpp(..., defines={...})` compiles a variant, and the Tile IR shows the
# tile shape and the hint arriving (`occupancy` on the entry, `latency` on the load).
# Careful: the compiler silently ignores a hint name it does not know — check the Tile IR.

# %%
SCALE = """#include "cuda_tile.h"
namespace ct = cuda::tiles;

[[ cutile::hint(0, occupancy=OCC) ]]
__tile_global__ void scale(float* x, float* y, std::size_t n) {
  auto vx = ct::partition_view{ct::tensor_span{x, ct::extents{n}},
                               ct::shape{ct::integral_constant<TILE>{}}};
  auto vy = ct::partition_view{ct::tensor_span{y, ct::extents{n}},
                               ct::shape{ct::integral_constant<TILE>{}}};
  auto b = ct::bid().x;
  ct::tile<float, ct::shape<TILE>> t;
  [[ cutile::hint(0, latency=LAT) ]]
  t = vx.load(b);
  vy.store(t * 2.0f, b);
}
"""

# %%
# NBVAL_CHECK_OUTPUT
import re

for defines in ({"TILE": 256, "OCC": 1, "LAT": 2}, {"TILE": 1024, "OCC": 4, "LAT": 8}):
    insp = tile_lab.inspect_cpp(SCALE, "scale", arch=ARCH, defines=defines)
    print(defines, "->", *sorted(set(re.findall(
        r"tile=\(\d+\)|occupancy = \d+|latency = \d+", insp.tileir))))

# %% [markdown]
# Hint names are not checked by the compiler. The guide's cluster hint, spelled
# `num_cta_per_cga`, leaves no trace in this nvcc's Tile IR; `num_cta_in_cga` (the Tile IR
# name) arrives:

# %%
# NBVAL_CHECK_OUTPUT
for hint in ("num_cta_per_cga", "num_cta_in_cga"):
    src = SCALE.replace("occupancy=OCC", f"{hint}=2")
    entry = next(line for line in tile_lab.inspect_cpp(
        src, "scale", arch="sm_100", defines={"TILE": 256, "LAT": 2}).tileir.splitlines()
        if line.startswith("entry "))
    print(f"{hint}=2 ->", re.findall(r"optimization_hints=<.*?>", entry) or "no entry hint")

# %% [markdown]
# `tile_lab.cpp.tune_cpp` searches such a space with the same strategies, checks and resumable
# store as `tile_lab.tune` (notebook 9), compiling the configs with nvcc in parallel, and
# `tile_lab.cpp.bench_cpp` times one C++ kernel with the same protocol and statistics as
# `tile_lab.bench`. Both need a GPU.

# %%
from tile_lab.cpp import bench_cpp, tune_cpp
from tile_lab.tuning import TuneOptions
from tile_lab.tuning import Space

if not GPU:
    print("no GPU here: the C++ kernels were compiled and compared above; launching, timing "
          "and tuning them needs a GPU (the emulator runs the Python twins only)")
else:
    import cupy as cp
    from tile_lab.gpu.device import local_arch

    n = 1 << 24
    x, y = cp.random.rand(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)
    result = tune_cpp(SCALE, "scale", Space(TILE=[256, 1024, 4096], OCC=[1, 2], LAT=[3]),
                      lambda cfg: (n // cfg["TILE"],), lambda cfg: (x, y, n),
                      check=lambda x, y, n: np.multiply(x, 2, out=y),
                      options=TuneOptions(arch=local_arch(), progress=False))
    print(result.summary())

# %% [markdown]
# ## Same kernel, two languages, one GPU
#
# With a GPU, launch the C++ and Python vector adds and GEMMs on the same CuPy arrays, check
# they agree, and time them side by side in one run (for the careful version, with rounds that
# alternate the languages, see `bench/cpp_vs_python.py`).

# %%
if not GPU:
    print("no GPU here: skipping the side-by-side launch and timing")
else:
    arch = local_arch()
    n, m = 1 << 24, 2048
    a, b = cp.random.rand(n, dtype=cp.float32), cp.random.rand(n, dtype=cp.float32)
    c = cp.empty_like(a)
    A, B = cp.random.rand(m, m, dtype=cp.float32), cp.random.rand(m, m, dtype=cp.float32)
    C = cp.empty((m, m), cp.float32)
    pairs = [("vector add", cpp_cell("vector_add"), vector_add, (n // 1024,),
              [a, b, c, n], (a, b, c), None),
             ("gemm", cpp_cell("gemm"), gemm, (m // 64, m // 64),
              [A, B, C, m, m, m], (A, B, C), 2 * m**3)]
    for label, cpp_src, py_kernel, grid, cpp_args, py_args, flops in pairs:
        cpp_insp = tile_lab.inspect_cpp(cpp_src, arch=arch)
        m_cpp = bench_cpp(cpp_insp, grid, cpp_args, flops=flops, timing=TimingOptions(samples=20))
        cpp_out = cpp_args[2].copy()
        m_py = tile_lab.bench(py_kernel, grid, py_args, flops=flops,
                              timing=TimingOptions(samples=20))
        agree = bool(cp.allclose(cpp_out, py_args[2], rtol=1e-3, atol=1e-3))
        print(f"{label}: C++ {m_cpp.median_s * 1e6:.1f} µs, Python {m_py.median_s * 1e6:.1f} µs, "
              f"C++/Python {m_cpp.median_s / m_py.median_s:.3f}, results agree: {agree}")
