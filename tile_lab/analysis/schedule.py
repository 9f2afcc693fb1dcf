"""Scheduling models: blocks on SMs over time (waves, tail), and the L2 reuse of a GEMM's
output-tile order (naive row-major vs grouped). Data, no markup: ``render/schedule.py``
draws them.

Both are models: every block (output tile) takes the same time, and the hardware hands
blocks to SMs in linear block-id order, each SM running ``blocks_per_sm`` at once.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["L2Order", "SmTimeline", "WaveTiles", "grouped_order", "order_waves"]


# ---- SM timeline ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SmTimeline:
    """``blocks`` equal-length blocks on ``num_sms`` SMs, ``blocks_per_sm`` resident each."""

    blocks: int
    num_sms: int
    blocks_per_sm: int = 1

    @property
    def slots(self) -> int:
        """Blocks running at once on the whole GPU (one wave)."""
        return self.num_sms * self.blocks_per_sm

    @property
    def waves(self) -> int:
        return -(-self.blocks // self.slots)

    @property
    def tail_blocks(self) -> int:
        """Blocks in the last wave when it is partial (0 when the grid fills every wave)."""
        return self.blocks % self.slots

    @property
    def utilization(self) -> float:
        """Busy slot-time over available slot-time: 1.0 without a tail."""
        return self.blocks / (self.waves * self.slots)

    def placement(self, block: int) -> tuple[int, int, int]:
        """(sm, lane on that SM, wave) of linear block ``block``."""
        wave, rest = divmod(block, self.slots)
        return rest % self.num_sms, rest // self.num_sms, wave

    def summary(self) -> str:
        tail = (f"{self.waves - 1} full wave{'s' if self.waves != 2 else ''} + a tail of "
                f"{self.tail_blocks} block{'s' if self.tail_blocks != 1 else ''}"
                if self.tail_blocks else "no tail")
        return (f"{self.blocks} blocks on {self.num_sms} SMs × {self.blocks_per_sm} per SM: "
                f"{self.waves} wave{'s' if self.waves != 1 else ''} ({tail}); "
                f"SMs busy {100 * self.utilization:.0f}% of the time")


# ---- grouped order and L2 reuse --------------------------------------------------------------

def grouped_order(tile: int, num_m: int, num_n: int, group_m: int) -> tuple[int, int]:
    """Output tile (m, n) of linear tile ``tile`` in grouped order: ``group_m`` tile-rows
    walked column by column (the formula of ``bench/gemm_kernels.py::grouped_tile``);
    ``group_m=1`` is plain row-major."""
    per_group = group_m * num_n
    first_m = (tile // per_group) * group_m
    rows = min(num_m - first_m, group_m)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@dataclass(frozen=True)
class WaveTiles:
    """The output tiles one wave computes, and the A row panels / B column panels they read."""

    wave: int
    tiles: tuple[tuple[int, int], ...]
    a_panels: tuple[int, ...]
    b_panels: tuple[int, ...]

    @property
    def panels(self) -> int:
        return len(self.a_panels) + len(self.b_panels)


@dataclass(frozen=True)
class L2Order:
    """Waves of a ``num_m × num_n`` output-tile grid in one order (``group_m`` = 1: row-major)."""

    num_m: int
    num_n: int
    group_m: int
    num_sms: int
    waves: tuple[WaveTiles, ...]

    @property
    def panels_per_wave(self) -> float:
        """Mean distinct A+B panels a wave reads (fewer = more L2 reuse)."""
        return sum(w.panels for w in self.waves) / len(self.waves)


def order_waves(num_m: int, num_n: int, group_m: int, num_sms: int) -> L2Order:
    """The tiles of a ``num_m × num_n`` grid in grouped order, cut into waves of ``num_sms``."""
    order = [grouped_order(t, num_m, num_n, group_m) for t in range(num_m * num_n)]
    waves = []
    for w in range(-(-len(order) // num_sms)):
        tiles = tuple(order[w * num_sms:(w + 1) * num_sms])
        waves.append(WaveTiles(w, tiles, tuple(sorted({m for m, _ in tiles})),
                               tuple(sorted({n for _, n in tiles}))))
    return L2Order(num_m, num_n, group_m, num_sms, tuple(waves))
