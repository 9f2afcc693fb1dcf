"""The attention grid's rows and tuning space, apart from its GPU driver
(``gpu_attention_grid.py``): FlashAttention-3's benchmark rows, stage 1's tiles, the new-knob
variants of stage 4, and the sm_90 spill screen that leaves spilling configs out (run on a CPU
with tileiras: ``python bench/gpu_attention_grid.py --screen``)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from attention_kernels import NEW_KNOB_DEFAULTS  # noqa: E402
from sweep_common import read_payload, save_payload  # noqa: E402

TOKENS, HIDDEN = 16384, 2048
SCREEN = os.path.join(HERE, "results", "attention_grid_spill_screen.json.gz")
SEQS = (16384, 2048, 8192, 4096)
CONSTANTS = ("BM", "BN", "LAT_K", "LAT_V", "TMA", "PIPE", "EVEN", "FOLD", "SPLIT", "RESCALE",
             "ORDER")
# knobs that change which registers a config needs; the latency hints, TMA and bounds checks
# do not name a screened config apart (see ``spill_count``)
SHAPE = ("BM", "BN", "PIPE", "FOLD", "SPLIT", "RESCALE")
HINTS = ("num_worker_warps", "occupancy", "num_ctas")
# (BM, BN, worker warps) without spills in notebook 15's sm_90 screen, fastest first there
# (notebooks/data/attention.json: D=128 64x128/4 warps 241 us, 128x256/8 246, 128x128/8 248;
# D=64 128x64/8 579 us, 64x128/4 582, 128x128/8 621)
TILES = {128: ((64, 128, 4), (128, 128, 8), (128, 64, 8)),
         64: ((128, 64, 8), (64, 128, 4), (128, 128, 8))}


@dataclass(frozen=True)
class AttnRow:
    dtype: str
    seq: int
    d: int
    causal: bool

    @property
    def batch(self) -> int:
        return max(1, TOKENS // self.seq)

    @property
    def heads(self) -> int:
        return HIDDEN // self.d

    @property
    def name(self) -> str:
        return (f"{self.dtype} {self.batch}x{self.heads}x{self.seq}x{self.d}"
                + (" causal" if self.causal else ""))

    @property
    def tuning_class(self) -> str:
        return f"D={self.d} causal={int(self.causal)} {'short' if self.seq <= 4096 else 'long'}"

    @property
    def flops(self) -> int:
        return 4 * self.batch * self.heads * self.seq * self.seq * self.d // (
            2 if self.causal else 1)

    def as_json(self) -> dict[str, Any]:
        return dict(dtype=self.dtype, batch=self.batch, heads=self.heads, seq=self.seq,
                    d=self.d, causal=self.causal)


ROWS = tuple(AttnRow(dt, s, d, c) for s in SEQS for d in (128, 64) for c in (False, True)
             for dt in ("fp16", "bf16"))


def even(row: AttnRow, bm: int, bn: int) -> int:
    """1 when no tile crosses the end of the sequence (bounds checks can go)."""
    return int(row.seq % bm == 0 and row.seq % bn == 0)


def stage1(row: AttnRow, spills: dict[str, int] | None = None) -> list[dict[str, int]]:
    """Tiles × occupancy × PIPE, the other knobs at notebook 15's values; configs whose sm_90
    SASS spills in the CPU screen (``spills``: screen key -> LDL/STL count) left out."""
    out = []
    for bm, bn, warps in TILES[row.d]:
        for occ in (2, 1):
            for pipe in (0, 1):
                c = dict(BM=bm, BN=bn, LAT_K=2, LAT_V=4, TMA=1, PIPE=pipe,
                         EVEN=even(row, bm, bn), FOLD=0, SPLIT=0, RESCALE=0, ORDER=0,
                         num_worker_warps=warps, occupancy=occ, num_ctas=1)
                if not spill_count(spills, row, c):
                    out.append(c)
    return out


def screen_key(row: AttnRow, c: dict[str, int]) -> str:
    """The screen's name of a config; the issue-34 knobs appear only when on, so the keys of the
    configs screened before them still name the same kernel."""
    return f"D={row.d} causal={int(row.causal)} " + ",".join(
        f"{k}={c[k]}" for k in (*CONSTANTS, *HINTS)
        if k not in NEW_KNOB_DEFAULTS or c.get(k, 0) != NEW_KNOB_DEFAULTS[k])


def shape_key(row: AttnRow, c: dict[str, int]) -> str:
    return f"shape D={row.d} causal={int(row.causal)} " + ",".join(
        f"{k}={c.get(k, 0)}" for k in (*SHAPE, *HINTS))


def load_screen(path: str = SCREEN) -> dict[str, int]:
    """Screen key -> LDL/STL count, plus, per register shape (``shape_key``), the most any
    screened config of that shape spilled."""
    if not os.path.exists(path):
        return {}
    out: dict[str, int] = {}
    for r in read_payload(path)["configs"]:
        if isinstance(r["spills"], int):
            out[r["key"]] = r["spills"]
            d, causal = (int(w.split("=")[1]) for w in r["key"].split()[:2])
            sk = shape_key(AttnRow("fp16", 2048, d, bool(causal)), r["config"])
            out[sk] = max(out.get(sk, 0), r["spills"])
    return out


def spill_count(spills: dict[str, int] | None, row: AttnRow, c: dict[str, int]) -> int:
    """LDL/STL of ``c`` in the screen: its own entry, else the worst screened config of its
    register shape (a later stage's config differs from a screened one in latency hints or
    bounds checks only), else 0 (not screened)."""
    spills = spills or {}
    own = spills.get(screen_key(row, c))
    return own if own is not None else spills.get(shape_key(row, c), 0)


def screen_jobs(heads: tuple[int, ...] = (128, 64)) -> list[tuple[AttnRow, dict[str, int]]]:
    """What ``--screen`` compiles: every stage-1 config and its new-knob variants (stage 4's
    candidates when it is stage 1's best), per head size and mask."""
    jobs = []
    for d in heads:
        for causal in (False, True):
            row = AttnRow("fp16", 2048, d, causal)
            for c in stage1(row):
                jobs += [(row, v) for v in [c, *new_knob_variants(row, c)]]
    return jobs


def screen(path: str = SCREEN, heads: tuple[int, ...] = (128, 64)) -> None:
    """Compile every config of ``screen_jobs`` for sm_90 on this CPU and count LDL/STL in its
    SASS (no GPU); the grid leaves spilling ones out. Configs already in ``path`` are kept, not
    compiled again."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from attention_kernels import flash_attention_knobs, knob_args

    import tile_lab
    from tile_lab.compile.toolchain import tool_version

    done: dict[str, dict[str, Any]] = {}
    if os.path.exists(path):
        done = {r["key"]: r for r in read_payload(path)["configs"]}
    jobs = [(row, c) for row, c in screen_jobs(heads) if screen_key(row, c) not in done]

    def one(job: tuple[AttnRow, dict[str, int]]) -> dict[str, Any]:
        row, c = job
        q = np.zeros((1, row.seq, row.d), np.float16)
        try:
            insp = tile_lab.inspect(flash_attention_knobs,
                                    knob_args(q, q, q, q, 0.1, row.d, row.causal, c),
                                    arch="sm_90", hints={h: c[h] for h in HINTS})
            n: int | str = sum(insp.spill_instructions().values())
        except Exception as e:
            n = f"{type(e).__name__}: {str(e)[:200]}"
        return dict(key=screen_key(row, c), config=c, spills=n)

    with ThreadPoolExecutor(max(1, os.cpu_count() or 2)) as pool:
        results = list(pool.map(one, jobs))
    for r in results:
        done[r["key"]] = r
    save_payload(dict(arch="sm_90", kernel="attention_kernels.flash_attention_knobs",
                      dtype="float16 (bf16 compiles to the same register use)",
                      tileiras=tool_version("tileiras"),
                      configs=sorted(done.values(), key=lambda r: r["key"])), path)
    bad = [r for r in results if r["spills"] != 0]
    print(f"screened {len(results)} new configs ({len(done)} in all): {len(bad)} spill or "
          f"fail; wrote {path}")
    for r in bad:
        print(f"  {r['key']}: {r['spills']}")


# Stage 4 (issue 34): the knobs added for head size 128, each alone and all together, on stage
# 1-3's fastest config and on the fastest of another tile shape in stage 1: the softmax scale
# folded into Q, the causal loop split at the diagonal (masked tiles apart; with PIPE=0), the
# accumulator rescaled only when a row max grows by more than 2^8 (FA4's threshold); on causal
# rows, where a query block's work grows with its index, the longest blocks launched first, per
# head (ORDER 1) and across heads (ORDER 2).
NEW_KNOBS = (("FOLD", 1), ("RESCALE", 8), ("SPLIT", 1), ("ORDER", 1), ("ORDER", 2))


def new_knob_variants(row: AttnRow, base: dict[str, int]) -> list[dict[str, int]]:
    """``base`` with each new knob on alone, then all of them on (SPLIT only where it applies:
    a causal row with PIPE=0; ORDER on causal rows, at 2 when all are on)."""
    on = [(k, v) for k, v in NEW_KNOBS
          if (k != "SPLIT" or (row.causal and not base["PIPE"])) and (k != "ORDER" or row.causal)]
    out = [dict(base, **{k: v}) for k, v in on]
    out.append(dict(base, **dict(on)))
    return [c for i, c in enumerate(out) if c != base and c not in out[:i]]
