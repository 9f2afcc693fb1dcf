"""Vector addition on the GPU with cuTile, checked against torch and timed with CUDA events."""

import argparse

import cuda.tile as ct
import torch
from gpu_timing import time_ms


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)


def add(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, tile: int) -> None:
    grid = (ct.cdiv(a.shape[0], tile), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, vector_add, (a, b, c, tile))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_003)
    parser.add_argument("--tile", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=3)
    opts = parser.parse_args()
    assert torch.cuda.is_available(), "this program needs a GPU"
    torch.manual_seed(0)
    a = torch.randn(opts.n, dtype=torch.float32, device="cuda")
    b = torch.randn(opts.n, dtype=torch.float32, device="cuda")
    c = torch.empty_like(a)
    add(a, b, c, opts.tile)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)
    ms = time_ms(add, a, b, c, opts.tile, iters=opts.iters)
    gbps = 3 * a.numel() * a.element_size() / (ms * 1e-3) / 1e9
    print(f"vector_add n={opts.n} tile={opts.tile}: {ms:.3f} ms, {gbps:.3g} GB/s "
          f"on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
