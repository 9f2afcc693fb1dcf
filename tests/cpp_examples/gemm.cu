// GEMM with mma: C[M,N] = A[M,K] @ B[K,N], row-major float; each tile block computes
// one TM x TN tile of C, accumulating TK-wide slabs of A and B on the tensor cores.
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
