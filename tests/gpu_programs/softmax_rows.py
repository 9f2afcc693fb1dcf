"""Softmax over the rows of a matrix, one row per block (a tile spans the row), on a side
stream, checked against torch.softmax and timed with CUDA events."""

import argparse

import cuda.tile as ct
import torch
from gpu_timing import time_ms


@ct.kernel
def softmax_rows(x, y, TILE: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
    t = t.astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    out = e / ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=out.astype(y.dtype))


def softmax(x: torch.Tensor, y: torch.Tensor, stream: torch.cuda.Stream) -> None:
    rows, cols = x.shape
    tile = 1 << (cols - 1).bit_length()  # the next power of two: one tile covers a row
    ct.launch(stream, (rows,), softmax_rows, (x, y, tile))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=781)
    parser.add_argument("--iters", type=int, default=3)
    opts = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(opts.rows, opts.cols, device=torch.device("cuda", 0))
    y = torch.empty_like(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        softmax(x, y, stream)
    stream.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
    ms = time_ms(softmax, x, y, stream, iters=opts.iters)
    gbps = 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
    print(f"softmax_rows {opts.rows}x{opts.cols}: {ms:.3f} ms, {gbps:.3g} GB/s "
          f"on {torch.cuda.get_device_name(0)}")


if __name__ == "__main__":
    main()
