"""RMSNorm over rows, benchmarked the way TileGym's benchmarks do: the device from Triton's
active driver, ``triton.testing.do_bench`` (with quantiles) and ``do_bench_cudagraph``."""

import argparse

import cuda.tile as ct
import torch
import triton
import triton.testing

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@ct.kernel
def rms_norm(x, w, y, eps: float, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, N), padding_mode=ct.PaddingMode.ZERO)
    t = t.astype(ct.float32)
    scale = ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) / x.shape[1] + eps)
    out = t * scale * ct.load(w, index=(0, 0), shape=(1, N), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(row, 0), tile=out.astype(y.dtype))


def norm(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    tile = 1 << (x.shape[1] - 1).bit_length()
    ct.launch(torch.cuda.current_stream(), (x.shape[0],), rms_norm, (x, w, y, eps, tile))
    return y


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=1000)
    opts = parser.parse_args()
    x = torch.randn(opts.rows, opts.cols, dtype=torch.float16, device=DEVICE)
    w = torch.randn(1, opts.cols, dtype=torch.float32, device=DEVICE)
    y = torch.empty_like(x)
    expected = torch.nn.functional.rms_norm(x.float(), (opts.cols,), w[0], eps=1e-6).half()
    torch.testing.assert_close(norm(x, w, y), expected, atol=2e-2, rtol=2e-2)
    ms, low, high = triton.testing.do_bench(lambda: norm(x, w, y), quantiles=[0.5, 0.2, 0.8])
    graph_ms = triton.testing.do_bench_cudagraph(lambda: norm(x, w, y))
    gbps = 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
    print(f"rms_norm {opts.rows}x{opts.cols}: do_bench {ms:.3f} ms ({low:.3f}-{high:.3f}), "
          f"{gbps:.3g} GB/s; do_bench_cudagraph {graph_ms:.3f} ms")


if __name__ == "__main__":
    main()
