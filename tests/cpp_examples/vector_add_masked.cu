// Masked edge handling: the last tile block runs past n; masked loads pad with zero
// and masked stores drop the out-of-range lanes.
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void vector_add_masked(float* a, float* b, float* c, std::size_t n) {
  auto bid = ct::bid().x;
  auto va = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, ct::shape{256_ic}};
  auto vb = ct::partition_view{ct::tensor_span{b, ct::extents{n}}, ct::shape{256_ic}};
  auto vc = ct::partition_view{ct::tensor_span{c, ct::extents{n}}, ct::shape{256_ic}};
  auto ta = va.load_masked(bid);
  auto tb = vb.load_masked(bid);
  vc.store_masked(ta + tb, bid);
}
