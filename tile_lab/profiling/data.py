"""``Profile``: one kernel launch profiled per SASS instruction, joined with tile_lab's line maps.

Plain, frozen, JSON-serialisable data (no HTML, no profiler calls). Each instruction carries
its offset from the function start, its SASS text, the warp-stall samples Nsight Compute took
at it (by reason), how often it executed, and the source line tile_lab's own SASS line map
gives it: Nsight Compute's source view attributes cuTile kernels to ``cuda/tile/_stub.py``, so
the join is by offset with the SASS tile_lab disassembled from the same cubin.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..compile.artifacts import Inspection
from ..compile.stage_rows import Row, SassRow, TileIRRow, parse_rows, sass_opcode
from ..record_files import read_record, write_record

PROFILE_SCHEMA = "tile-lab.profile"
PROFILE_SCHEMA_VERSION = 1

# Nsight Compute's warp-stall reasons (its source page columns ``stall_<reason>``), with
# what each means for a tile kernel, for tables and tooltips.
STALL_REASONS: dict[str, str] = {
    "long_sb": "waiting on a global/local memory result (long scoreboard)",
    "wait": "fixed-latency wait (instruction dependency)",
    "barrier": "waiting at a block barrier",
    "branch_resolving": "resolving a branch target",
    "dispatch": "dispatch stall",
    "drain": "draining memory stores at exit",
    "imc": "immediate constant cache miss",
    "lg": "local/global memory queue full (spills, uncoalesced access)",
    "math": "math pipe busy",
    "membar": "memory barrier",
    "mio": "shared-memory/MIO queue full",
    "misc": "miscellaneous",
    "no_inst": "no instruction fetched (i-cache)",
    "not_selected": "ready, another warp was picked",
    "selected": "issuing",
    "short_sb": "waiting on shared memory/MUFU (short scoreboard)",
    "sleep": "sleeping (nanosleep / mbarrier try-wait)",
    "tex": "texture/TMA queue",
    "warpgroup_arrive": "waiting for a warpgroup MMA's operands (warpgroup arrive)",
}


@dataclass(frozen=True)
class InstructionSample:
    """One SASS instruction of the profiled kernel."""

    offset: int  # bytes from the function start
    sass: str  # the instruction as Nsight Compute printed it
    samples: int  # warp-stall samples at this instruction (all reasons)
    executed: int  # warp-level executions
    stalls: dict[str, int] = field(default_factory=dict)  # reason -> samples (nonzero only)
    line: int | None = None  # source line, from tile_lab's SASS line map

    @property
    def opcode(self) -> str:
        return opcode(self.sass)


@dataclass(frozen=True)
class KernelMetrics:
    """Launch-level numbers of the profiled launch (None: the profiler did not give it)."""

    duration_ns: float | None = None
    registers_per_thread: int | None = None
    block_size: int | None = None
    grid_size: int | None = None
    shared_mem_per_block_bytes: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    local_load_bytes: float | None = None  # dynamic local-memory traffic (spills, stack)
    local_store_bytes: float | None = None
    spill_loads: int = 0  # static: LDL / STL instructions in the kernel's SASS
    spill_stores: int = 0
    stack_frame_bytes: int | None = None  # per thread, from the prologue's stack adjust


@dataclass(frozen=True)
class LineProfile:
    """Samples and executions summed over the instructions of one source line."""

    line: int
    text: str
    samples: int
    executed: int
    instructions: int
    stalls: dict[str, int]

    def top_stalls(self, n: int = 3) -> list[tuple[str, int]]:
        return sorted(self.stalls.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


@dataclass(frozen=True)
class Profile:
    """What Nsight Compute saw in one launch of one kernel, on tile_lab's source lines.

    ``source``/``first_line`` are the kernel's source as ``Inspection`` holds it; lines are
    numbered like ``Inspection.source_lines``. ``config`` holds the launch's compile-time
    constants and grid; ``collection`` how the data was taken (ncu version, sections, replay
    mode, and what had to be dropped); ``provenance`` the GPU, driver, clocks, versions.
    """

    kernel_name: str
    function_name: str  # the mangled name Nsight Compute reports
    arch: str
    source: str
    first_line: int
    config: dict[str, Any]
    instructions: tuple[InstructionSample, ...]
    metrics: KernelMetrics
    collection: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    matched_instructions: int = 0  # instructions whose opcode tile_lab's SASS confirms

    # -- aggregation -------------------------------------------------------------------
    @property
    def total_samples(self) -> int:
        return sum(i.samples for i in self.instructions)

    @property
    def has_samples(self) -> bool:
        return self.total_samples > 0

    @property
    def has_executed(self) -> bool:
        """False for a profile taken by PC sampling alone (no executed counts)."""
        return any(i.executed for i in self.instructions)

    def source_text(self, line: int) -> str:
        lines = self.source.splitlines()
        i = line - self.first_line
        return lines[i] if 0 <= i < len(lines) else ""

    def by_line(self) -> tuple[LineProfile, ...]:
        """Per source line (in line order), the sums over its instructions."""
        acc: dict[int, list[InstructionSample]] = {}
        for ins in self.instructions:
            if ins.line is not None:
                acc.setdefault(ins.line, []).append(ins)
        return tuple(LineProfile(line, self.source_text(line).strip(),
                                 sum(i.samples for i in group), sum(i.executed for i in group),
                                 len(group), _sum_stalls(i.stalls for i in group))
                     for line, group in sorted(acc.items()))

    def unattributed_samples(self) -> int:
        """Samples at instructions the line map ties to no source line."""
        return sum(i.samples for i in self.instructions if i.line is None)

    def hot_lines(self, n: int = 5) -> tuple[LineProfile, ...]:
        """The ``n`` source lines with the most samples, hottest first."""
        ranked = sorted(self.by_line(), key=lambda lp: (-lp.samples, lp.line))
        return tuple(lp for lp in ranked[:n] if lp.samples > 0)

    def hot_instructions(self, n: int = 10) -> tuple[InstructionSample, ...]:
        return tuple(sorted(self.instructions, key=lambda i: (-i.samples, i.offset))[:n])

    def stall_totals(self) -> dict[str, int]:
        return _sum_stalls(i.stalls for i in self.instructions)

    def by_tileir_op(self, tileir_text: str, tileir_line_map: Sequence[int | None]
                     ) -> tuple[tuple[int, str, int, int], ...]:
        """(Tile IR text line, op name, source line, samples of that source line) for each
        Tile IR op line: the SASS carries source lines, not Tile IR ops, so an op gets the
        samples of the source line it shares with its SASS (all ops of a line share them)."""
        per_line = {lp.line: lp.samples for lp in self.by_line()}
        return tuple((r.index, r.op, r.line, per_line.get(r.line, 0))
                     for r in parse_rows("tileir", tileir_text, tileir_line_map)
                     if isinstance(r, TileIRRow) and r.line is not None and r.op is not None)

    def shifted_to(self, first_line: int) -> Profile:
        """The same profile with lines renumbered for the same source starting at
        ``first_line`` (e.g. the kernel pasted into a notebook cell)."""
        from dataclasses import replace

        d = first_line - self.first_line
        return replace(self, first_line=first_line, instructions=tuple(
            replace(i, line=None if i.line is None else i.line + d) for i in self.instructions))

    def with_lines(self, inspection: Any) -> Profile:
        """This profile joined with ``inspection``'s SASS line map (an ``Inspection`` of the
        same kernel and launch config for the same arch, e.g. compiled on a CPU machine for
        a profile recorded where the disassemblers were missing). Instructions whose opcode
        differs at the same offset get no line, so a different cubin cannot mislabel."""
        from dataclasses import replace

        if inspection.arch != self.arch:
            raise ValueError(f"the profile is of {self.arch} SASS, the inspection of "
                             f"{inspection.arch}")
        joined, matched = join_lines(self.instructions, inspection.stages["sass"])
        # tileiras' line info names some lines after the kernel (e.g. for sm_90 wgmma code);
        # in a notebook cell such a line may be unrelated code: only kernel lines count
        first, count = inspection.first_line, len(inspection.source.splitlines())
        joined = tuple(i if i.line is None or first <= i.line < first + count
                       else replace(i, line=None) for i in joined)
        return replace(self, instructions=joined, matched_instructions=matched,
                       source=inspection.source, first_line=inspection.first_line)

    # -- serialisation -----------------------------------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schema"] = PROFILE_SCHEMA
        d["schema_version"] = PROFILE_SCHEMA_VERSION
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any]) -> Profile:
        d = dict(d)
        if d.pop("schema", PROFILE_SCHEMA) != PROFILE_SCHEMA:
            raise ValueError("not a tile-lab profile")
        d.pop("schema_version", None)
        d["instructions"] = tuple(InstructionSample(**i) for i in d["instructions"])
        d["metrics"] = KernelMetrics(**_known(KernelMetrics, d["metrics"]))
        return cls(**_known(cls, d))

    @classmethod
    def from_json(cls, text: str) -> Profile:
        return cls.from_json_dict(json.loads(text))

    def save(self, path: str | os.PathLike) -> None:
        """Write the profile as JSON; gzip-compressed (no timestamp inside, so the same
        profile gives the same bytes) when the name ends in ``.gz``."""
        write_record(path, self.to_json() + "\n")

    # -- display -----------------------------------------------------------------------
    def summary(self) -> str:
        m = self.metrics
        bits = [f"{self.kernel_name} {_config_text(self.config)}"]
        if m.duration_ns is not None:
            bits.append(f"{m.duration_ns / 1000:.1f} µs")
        if m.registers_per_thread is not None:
            bits.append(f"{m.registers_per_thread} regs/thread")
        if m.achieved_occupancy_pct is not None:
            bits.append(f"{m.achieved_occupancy_pct:.1f}% achieved occupancy")
        if m.spill_loads or m.spill_stores:
            bits.append(f"{m.spill_stores} STL / {m.spill_loads} LDL spill instructions")
        bits.append(f"{self.total_samples} stall samples")
        return ", ".join(bits)

    def view(self, inspection: Inspection, *, top: int = 8) -> ProfileView:
        """The inspect view of ``inspection`` with this profile's heat, stall reasons and
        hottest lines (a displayable :class:`ProfileView`)."""
        return ProfileView(inspection, self, top)

    def __repr__(self) -> str:
        gpu = self.provenance.get("gpu", "unknown GPU")
        return f"Profile({self.summary()}; {gpu})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..display import mimebundle

        return mimebundle(self)


def load_profile(path: str | os.PathLike) -> Profile:
    """Read a profile written by ``Profile.save`` (gzip-compressed when the name ends in
    ``.gz``: recorded profiles are kept that way, a tenth of the size)."""
    return Profile.from_json(read_record(path))


def compare_profiles(profiles: Mapping[str, Profile]) -> ProfileComparison:
    """Profiles of one kernel under different configs side by side, e.g.
    ``compare_profiles({"best 128x128x64": best, "cliff 256x256x32": cliff})``."""
    return ProfileComparison(tuple(profiles.items()))


# -- the displayable views: data here, drawn by render/profile_view.py (found by type) --------

@dataclass(frozen=True)
class ProfileView:
    """``inspection`` with ``profile`` overlaid (heat per line, stall reasons, the ``top``
    hottest lines), followed by ``compare`` (labelled profiles of the same kernel, e.g. a
    tuning result's best and cliff configs) when given."""

    inspection: Inspection
    profile: Profile
    top: int = 8
    compare: tuple[tuple[str, Profile], ...] = ()

    def __str__(self) -> str:
        return f"ProfileView({self.profile.summary()})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..display import mimebundle

        return mimebundle(self)


@dataclass(frozen=True)
class ProfileComparison:
    """Labelled profiles of one kernel side by side (:func:`compare_profiles`)."""

    profiles: tuple[tuple[str, Profile], ...]

    def __str__(self) -> str:
        return "\n".join(f"{label}: {p.summary()}" for label, p in self.profiles)

    def view(self, inspection: Inspection, *, top: int = 8) -> ProfileView:
        """The inspect view of ``inspection`` with the first profile's heat, followed by
        this comparison (one output that the JupyterLab extension also draws)."""
        if not self.profiles:
            raise ValueError("compare_profiles({...}).view(insp): no profiles to show; "
                             "pass at least one {label: Profile}")
        return ProfileView(inspection, self.profiles[0][1], top, self.profiles)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..display import mimebundle

        return mimebundle(self)


def opcode(sass: str) -> str:
    """The opcode of a SASS instruction, predicate and modifiers dropped (``@!P1 BRA`` →
    ``BRA``, ``HGMMA.64x128x16.F32`` → ``HGMMA``); "" for no instruction."""
    return sass_opcode(sass) or ""


def sass_offsets(text: str, line_map: Sequence[int | None]) -> dict[int, tuple[str, int | None]]:
    """offset -> (instruction, source line) for each instruction line of a SASS stage."""
    return _offsets(parse_rows("sass", text, line_map))


def _offsets(rows: Sequence[Row]) -> dict[int, tuple[str, int | None]]:
    return {r.offset: (r.instruction, r.line) for r in rows
            if isinstance(r, SassRow) and r.offset is not None}


def join_lines(instructions: Sequence[InstructionSample], sass: Any
               ) -> tuple[tuple[InstructionSample, ...], int]:
    """Give each instruction the source line of tile_lab's SASS (a ``StageText``) at the
    same offset, when both disassemblies agree on the opcode there; count the agreements."""
    from dataclasses import replace

    ours = _offsets(sass.rows)
    joined, matched = [], 0
    for ins in instructions:
        mine = ours.get(ins.offset)
        same = mine is not None and opcode(mine[0]) == ins.opcode
        matched += same
        joined.append(replace(ins, line=mine[1] if same else None))
    return tuple(joined), matched


def _sum_stalls(stall_maps: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for stalls in stall_maps:
        for reason, n in stalls.items():
            total[reason] = total.get(reason, 0) + n
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def _known(cls: type, d: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())
