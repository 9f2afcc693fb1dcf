"""Nsight Compute's CSV exports, read into tile_lab's profile data.

Two exports of one ``.ncu-rep`` (``ncu --import REP --csv``):

- ``--page source --print-source sass``: a ``"Kernel Name",NAME`` line, a header, then one
  row per SASS instruction with its absolute address, text, ``Warp Stall Sampling (All
  Samples)``, ``Instructions Executed`` and one ``stall_<reason>`` column per reason;
- ``--page raw``: a header of metric names, a row of units, a row of values per launch.

Parsing needs no GPU and no Nsight Compute, so recorded exports work on any machine.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..compile.stage_rows import stack_adjustment
from .data import InstructionSample, KernelMetrics, opcode

# Total samples per instruction: the SourceCounters column, else the raw PC-sampling metric
_SAMPLES = ("Warp Stall Sampling (All Samples)", "smsp__pcsamp_sample_count")
_EXECUTED = "Instructions Executed"
# Per-reason columns: SourceCounters' "stall_<reason>", or the PC-sampling metrics themselves
# (whose "_not_issued" twins, like SourceCounters' "(Not Issued)" ones, are not taken).
_STALL = re.compile(r"^(?:stall_|smsp__pcsamp_warps_issue_stalled_)(?P<reason>[a-z_]+)$")
# PC-sampling metric reason -> the short name SourceCounters uses for it
_REASON_ALIASES = {"dispatch_stall": "dispatch", "imc_miss": "imc", "lg_throttle": "lg",
                   "long_scoreboard": "long_sb", "math_pipe_throttle": "math",
                   "mio_throttle": "mio", "no_instructions": "no_inst",
                   "short_scoreboard": "short_sb", "sleeping": "sleep", "tex_throttle": "tex"}


@dataclass(frozen=True)
class SourcePage:
    """The per-instruction rows of one kernel's source page."""

    function_name: str
    instructions: tuple[InstructionSample, ...]  # offsets from the first instruction
    has_samples: bool  # False when the launch failed and only the SASS came out
    has_executed: bool  # False without SourceCounters' instrumented (SASS-patched) pass


def parse_source_csv(text: str) -> SourcePage:
    """Read ``ncu --page source --csv --print-source sass`` output (one kernel)."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    while rows and rows[0][0] != "Kernel Name" and rows[0][0] != "Address":
        rows.pop(0)  # ncu's ==PROF== / ==WARNING== lines, if they were captured
    name = ""
    if rows and rows[0][0] == "Kernel Name":
        name = rows.pop(0)[1]
    if not rows or rows[0][0] != "Address":
        raise ValueError("not an Nsight Compute source-page CSV (no 'Address' header)")
    header = rows.pop(0)
    col = {h: i for i, h in enumerate(header)}
    stall_cols = [(_REASON_ALIASES.get(m.group("reason"), m.group("reason")), i)
                  for h, i in col.items()
                  if (m := _STALL.match(h)) and not h.endswith("_not_issued")]
    samples_col = next((col[c] for c in _SAMPLES if c in col), None)
    executed_col = col.get(_EXECUTED)
    base = None
    out = []
    for r in rows:
        address = int(r[0], 16)
        base = address if base is None else base
        stalls = {reason: n for reason, i in stall_cols if (n := _int(r[i]))}
        out.append(InstructionSample(
            offset=address - base, sass=r[1].strip(),
            samples=_int(r[samples_col]) if samples_col is not None else 0,
            executed=_int(r[executed_col]) if executed_col is not None else 0, stalls=stalls))
    return SourcePage(name, tuple(out), samples_col is not None, executed_col is not None)


# Raw-page metric -> (KernelMetrics field, multiplier to the field's unit by the unit row)
_RAW_FIELDS = {
    "gpu__time_duration.sum": "duration_ns",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__block_size": "block_size",
    "launch__grid_size": "grid_size",
    "launch__shared_mem_per_block": "shared_mem_per_block_bytes",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum": "local_load_bytes",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum": "local_store_bytes",
}
_UNIT_SCALE = {"ns": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
               "nsecond": 1.0, "s": 1e9, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6,
               "Gbyte": 1e9, "Kbyte/block": 1e3, "byte/block": 1.0, "Mbyte/block": 1e6}
_INT_FIELDS = {"registers_per_thread", "block_size", "grid_size"}


def parse_raw_csv(text: str) -> dict[str, tuple[str, str]]:
    """Metric name -> (unit, value text) of the first launch in ``--page raw --csv``."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    while rows and not rows[0][0].startswith("ID"):
        rows.pop(0)
    if len(rows) < 3:
        raise ValueError("not an Nsight Compute raw-page CSV (need header, units, values)")
    header, units, values = rows[0], rows[1], rows[2]
    return {h: (u, v) for h, u, v in zip(header, units, values)}


def metrics_from_raw(raw: Mapping[str, tuple[str, str]]) -> KernelMetrics:
    """The launch-level numbers tile_lab shows, with units normalised (ns, bytes, %).
    Metrics the export lacks or marks ``n/a``/``no data`` stay None."""
    got: dict[str, Any] = {}
    for metric, name in _RAW_FIELDS.items():
        if metric not in raw:
            continue
        unit, value = raw[metric]
        number = _float(value)
        if number is None:
            continue
        number *= _UNIT_SCALE.get(unit, 1.0)
        got[name] = round(number) if name in _INT_FIELDS else number
    if not got.get("grid_size") or not got.get("duration_ns"):  # a failed launch: no data
        return KernelMetrics()
    return KernelMetrics(**got)


def static_spills(instructions: tuple[InstructionSample, ...]) -> dict[str, int | None]:
    """Spill and stack facts read off the SASS itself: LDL/STL counts and the prologue's
    stack-pointer adjustment (``VIADD R1, R1, -N`` or ``IADD3 R1, R1, -N``)."""
    loads = sum(1 for i in instructions if i.opcode == "LDL")
    stores = sum(1 for i in instructions if i.opcode == "STL")
    frame = None
    for ins in instructions[:16]:
        adjust = stack_adjustment(ins.sass)
        if adjust is not None:
            frame = -adjust
            break
    return {"spill_loads": loads, "spill_stores": stores, "stack_frame_bytes": frame}


def _int(text: str) -> int:
    value = _float(text)
    return 0 if value is None else round(value)


def _float(text: str) -> float | None:
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


__all__ = ["SourcePage", "metrics_from_raw", "opcode", "parse_raw_csv", "parse_source_csv",
           "static_spills"]
