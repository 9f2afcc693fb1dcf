"""The GEMM kernels the benchmarks time live in ``tile_lab.examples.gemm`` (shared with the
tutorials); this module keeps the benchmarks' import name."""

from tile_lab.examples.gemm import gemm_grouped, gemm_naive, gemm_persistent, grouped_tile, k_loop

__all__ = ["gemm_grouped", "gemm_naive", "gemm_persistent", "grouped_tile", "k_loop"]
