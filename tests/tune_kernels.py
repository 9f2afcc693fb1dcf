"""Small kernels with Constant parameters for the tuning tests (compiled/emulated, never timed)."""

import cuda.tile as ct


@ct.kernel
def scale_copy(x, y, TILE: ct.Constant[int], LAT: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), latency=LAT)
    ct.store(y, index=(bid,), tile=t * 2)
