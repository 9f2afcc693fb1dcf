// Block sum with atomics: every tile block reduces its slice to one value and adds
// it into total[0] with an atomic add (the order of the adds is not fixed).
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
