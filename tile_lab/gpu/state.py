"""The GPU's power state around every timed sample: clocks, power, temperature, and NVML's
clocks-event reasons; whether a sample was throttled, and what to do about it.

tile_lab only *observes* (NVML reads); it never locks clocks or changes power limits: lent and
shared GPUs are not ours to reconfigure. Instead every sample carries the state it ran in, and
a comparison puts both sides in the same state (see :mod:`tile_lab.gpu.regimes`).

Throttle detection follows NVIDIA's nvbench: a sample is throttled when the SM clock is below
``threshold`` × the maximum SM clock (nvbench's ``--throttle-threshold``, default 75%), or when
NVML names a power-cap, thermal or power-brake reason. After throttling, nvbench waits
``recovery_delay_s`` (its ``--throttle-recovery-delay``, 0.05 s) before timing again.

The reader is a protocol (:class:`StateReader`) so the CPU tests replay recorded traces
(:class:`TraceReader`) through the same code the GPU path runs; on a GPU,
:func:`tile_lab.gpu.device.nvml_reader` makes the NVML one.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

from ..record_files import read_record, write_record

# NVML clocks-event reason bits (nvmlClocksEventReason*; the same bits as the older
# nvmlClocksThrottleReason* names).
REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# the reasons that mean "this sample ran slower than the card can run": power and heat
THROTTLE_REASONS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
GPU_IDLE = 0x1

POLICIES = ("wait", "discard", "keep")


def reason_names(mask: int) -> tuple[str, ...]:
    """The names of the bits set in an NVML clocks-event reason mask."""
    return tuple(name for bit, name in REASONS.items() if mask & bit)


@dataclass(frozen=True)
class GpuState:
    """One NVML reading. ``t_s`` is a monotonic time in seconds (only differences matter)."""

    t_s: float
    sm_mhz: float | None
    mem_mhz: float | None
    power_w: float | None
    temp_c: float | None
    reasons: int = 0
    power_limit_w: float | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> GpuState:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class StateReader(Protocol):
    """Where GPU states come from: NVML on a GPU, a recorded trace in tests."""

    def read(self) -> GpuState | None: ...

    def max_sm_mhz(self) -> float | None: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class ThrottlePolicy:
    """When a sample counts as throttled, and what to do then.

    ``action``: "wait" (before each sample or group, wait until the GPU has recovered — up to
    ``max_wait_s`` — then ``recovery_delay_s`` more), "discard" (time anyway, drop throttled
    samples from the statistics but keep their count), "keep" (keep them, flagged). The
    defaults are nvbench's (75% of the maximum SM clock, 50 ms recovery delay)."""

    threshold: float = 0.75
    recovery_delay_s: float = 0.05
    action: str = "wait"
    max_wait_s: float = 10.0
    poll_s: float = 0.02
    # a recovered GPU also draws less than this fraction of its power limit (None: ignore power)
    idle_power_fraction: float | None = 0.5

    def __post_init__(self) -> None:
        if self.action not in POLICIES:
            raise ValueError(f"throttle action {self.action!r}: choose one of "
                             f"{', '.join(POLICIES)}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"throttle threshold {self.threshold!r} must be in (0, 1]")

    def throttled(self, state: GpuState | None, max_sm_mhz: float | None) -> bool:
        """Whether ``state`` is a throttled state (unknown state: not flagged)."""
        if state is None:
            return False
        if state.reasons & THROTTLE_REASONS:
            return True
        if state.reasons & GPU_IDLE:
            return False  # an idle GPU clocks down; the next work ramps it up (not throttling)
        return (state.sm_mhz is not None and max_sm_mhz is not None
                and state.sm_mhz < self.threshold * max_sm_mhz)


@dataclass(frozen=True)
class SampleState:
    """The state recorded with one timed sample (the reading taken right after it)."""

    sm_mhz: float | None
    mem_mhz: float | None
    power_w: float | None
    temp_c: float | None
    reasons: int
    throttled: bool

    @classmethod
    def of(cls, state: GpuState | None, throttled: bool) -> SampleState:
        if state is None:
            return cls(None, None, None, None, 0, False)
        return cls(state.sm_mhz, state.mem_mhz, state.power_w, state.temp_c, state.reasons,
                   throttled)

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> SampleState:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def wait_for_recovery(reader: StateReader, policy: ThrottlePolicy) -> tuple[bool, float]:
    """Block until the GPU is not throttled and draws less than ``idle_power_fraction`` of
    its power limit, then ``recovery_delay_s`` more.

    Returns (recovered, seconds waited); gives up after ``max_wait_s`` (recovered=False)."""
    waited = 0.0
    top = reader.max_sm_mhz()
    while True:
        state = reader.read()
        if not _busy(state, policy, top):
            reader.sleep(policy.recovery_delay_s)
            return True, waited + policy.recovery_delay_s
        if waited >= policy.max_wait_s:
            return False, waited
        reader.sleep(policy.poll_s)
        waited += policy.poll_s


def _busy(state: GpuState | None, policy: ThrottlePolicy, top: float | None) -> bool:
    idle_power_fraction = policy.idle_power_fraction
    if state is None:
        return False
    if policy.throttled(state, top):
        return True
    return (idle_power_fraction is not None and state.power_w is not None
            and state.power_limit_w is not None
            and state.power_w > idle_power_fraction * state.power_limit_w)


# ---- readers ------------------------------------------------------------
class NvmlReader:
    """Reads the current device through nvidia-ml-py (``pynvml``). Observe-only NVML calls."""

    def __init__(self, handle: Any, pynvml: Any) -> None:
        self._h, self._nvml = handle, pynvml
        self._max: float | None = None

    def read(self) -> GpuState | None:
        n, h = self._nvml, self._h
        try:
            sm = float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))
            mem = float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM))
            power = n.nvmlDeviceGetPowerUsage(h) / 1000.0
            temp = float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))
            get_reasons = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                n.nvmlDeviceGetCurrentClocksThrottleReasons
            reasons = int(get_reasons(h))
            limit = n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0
        except Exception:
            return None
        return GpuState(time.monotonic(), sm, mem, power, temp, reasons, limit)

    def max_sm_mhz(self) -> float | None:
        if self._max is None:
            try:
                self._max = float(self._nvml.nvmlDeviceGetMaxClockInfo(
                    self._h, self._nvml.NVML_CLOCK_SM))
            except Exception:
                return None
        return self._max

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class NullReader:
    """No NVML (or no GPU): every state is unknown, nothing is flagged, nothing waits."""

    def read(self) -> GpuState | None:
        return None

    def max_sm_mhz(self) -> float | None:
        return None

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class TraceReader:
    """Replays recorded states (a fake for CPU tests). Time is simulated: ``sleep`` advances a
    clock and ``read`` returns the last recorded state at or before it, so a trace of a GPU
    cooling down recovers after the recorded number of seconds. ``step_s`` advances the clock on
    every read as well (the time a timed sample takes)."""

    def __init__(self, states: Sequence[GpuState], *, max_sm_mhz: float | None,
                 step_s: float = 0.0) -> None:
        if not states:
            raise ValueError("a trace needs at least one state")
        self.states = sorted(states, key=lambda s: s.t_s)
        self.now = self.states[0].t_s
        self.step_s = step_s
        self._max = max_sm_mhz
        self.slept = 0.0
        self.reads = 0

    def read(self) -> GpuState | None:
        self.reads += 1
        current = self.states[0]
        for s in self.states:
            if s.t_s <= self.now:
                current = s
        self.now += self.step_s
        return current

    def max_sm_mhz(self) -> float | None:
        return self._max

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


# ---- recorded traces ------------------------------------------------------------
def record_trace(reader: StateReader, work: Callable[[], None], *, seconds: float,
                 period_s: float = 0.05) -> list[GpuState]:
    """Call ``work`` (which should keep the GPU busy for about ``period_s``) for ``seconds``,
    reading the state after each call: how the card's clocks and power move under load."""
    out: list[GpuState] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        work()
        state = reader.read()
        if state is not None:
            out.append(state)
    return out


def save_trace(states: Iterable[GpuState], path: str | os.PathLike[str], *,
               max_sm_mhz: float | None, device: str) -> None:
    """Write a trace (times relative to its first state) as JSON (gzip-compressed when the name
    ends in ``.gz``)."""
    items = list(states)
    t0 = items[0].t_s if items else 0.0
    doc = {"format": "tile_lab.gpu_state_trace", "device": device, "max_sm_mhz": max_sm_mhz,
           "states": [{**s.to_json_dict(), "t_s": round(s.t_s - t0, 6)} for s in items]}
    write_record(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def load_trace(path: str | os.PathLike[str]) -> tuple[list[GpuState], float | None, str]:
    """(states, max SM clock, device name) of a trace written by :func:`save_trace` (a name
    ending in ``.gz`` is read gzip-compressed)."""
    doc = json.loads(read_record(path))
    if doc.get("format") != "tile_lab.gpu_state_trace":
        raise ValueError(f"{os.fspath(path)!r} is not a tile_lab GPU state trace")
    return ([GpuState.from_json_dict(s) for s in doc["states"]], doc.get("max_sm_mhz"),
            str(doc.get("device", "")))
