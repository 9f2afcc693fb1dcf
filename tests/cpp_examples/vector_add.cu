// Vector add: one tile block adds one 1024-element slice (n is a multiple of 1024).
// assume_aligned promises 16-byte aligned pointers, which lets tileiras use TMA loads.
#include "cuda_tile.h"

namespace ct = cuda::tiles;
using namespace ct::literals;

__tile_global__ void vector_add(float* a, float* b, float* c, std::size_t n) {
  a = ct::assume_aligned(a, 16_ic);
  b = ct::assume_aligned(b, 16_ic);
  c = ct::assume_aligned(c, 16_ic);
  auto bid = ct::bid().x;
  auto va = ct::partition_view{ct::tensor_span{a, ct::extents{n}}, ct::shape{1024_ic}};
  auto vb = ct::partition_view{ct::tensor_span{b, ct::extents{n}}, ct::shape{1024_ic}};
  auto vc = ct::partition_view{ct::tensor_span{c, ct::extents{n}}, ct::shape{1024_ic}};
  auto ta = va.load(bid);
  auto tb = vb.load(bid);
  vc.store(ta + tb, bid);
}
