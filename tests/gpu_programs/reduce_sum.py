"""Sum of a large vector in two launches (per-block partial sums, then one block sums those),
checked against torch.sum, with torch's CUDA memory statistics around it."""

import argparse

import cuda.tile as ct
import torch
from gpu_timing import time_ms


@ct.kernel
def partial_sums(x, partial, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(partial, index=(bid,), tile=ct.sum(t.astype(ct.float32)))


@ct.kernel
def total(partial, out, TILE: ct.Constant[int]):
    acc = ct.full((TILE,), 0, dtype=ct.float32)
    for i in range(ct.num_tiles(partial, axis=0, shape=(TILE,))):
        acc += ct.load(partial, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(0,), tile=ct.sum(acc))


def vector_sum(x: torch.Tensor, partial: torch.Tensor, out: torch.Tensor, tile: int) -> None:
    stream = torch.cuda.current_stream()
    ct.launch(stream, (partial.shape[0],), partial_sums, (x, partial, tile))
    ct.launch(stream, (1,), total, (partial, out, 1024))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3_000_000)
    parser.add_argument("--tile", type=int, default=4096)
    parser.add_argument("--iters", type=int, default=3)
    opts = parser.parse_args()
    free, total_bytes = torch.cuda.mem_get_info()
    print(f"{torch.cuda.get_device_name()}: {free / 2**30:.1f} of "
          f"{total_bytes / 2**30:.1f} GiB free")
    torch.cuda.reset_peak_memory_stats()
    x = torch.rand(opts.n, device="cuda")
    partial = torch.empty(ct.cdiv(opts.n, opts.tile), device="cuda")
    out = torch.zeros(1, device="cuda")
    vector_sum(x, partial, out, opts.tile)
    torch.cuda.synchronize()
    torch.testing.assert_close(out[0], x.double().sum().float(), rtol=1e-5, atol=0)
    ms = time_ms(vector_sum, x, partial, out, opts.tile, iters=opts.iters)
    peak = torch.cuda.max_memory_allocated() / 2**20
    print(f"reduce_sum n={opts.n}: {ms:.3f} ms, {x.numel() * 4 / (ms * 1e-3) / 1e9:.3g} GB/s, "
          f"peak {peak:.0f} MiB allocated")


if __name__ == "__main__":
    main()
