// Gather: out[i] = x[idx[i]]. The index tile becomes a tile of pointers, loaded lane by lane.
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void gather(float* x, int* idx, float* out, std::size_t n) {
  auto bid = ct::bid().x;
  auto vidx = ct::partition_view{ct::tensor_span{idx, ct::extents{n}}, ct::shape{128_ic}};
  auto vout = ct::partition_view{ct::tensor_span{out, ct::extents{n}}, ct::shape{128_ic}};
  auto offsets = vidx.load(bid);
  auto ptrs = ct::broadcast(ct::tile{x}, ct::shape{128_ic}) + offsets;
  auto values = ct::load(ptrs);
  vout.store(values, bid);
}
