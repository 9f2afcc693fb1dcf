// Row sums with a loop over tiles: each tile block owns 16 rows and walks the
// columns 64 at a time, accumulating in a register tile before one reduction.
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
