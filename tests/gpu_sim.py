"""A simulated GPU for CPU tests of state-aware timing: a timer and an NVML reader sharing one
simulated clock and one power state.

The model follows what an H100 does under cuBLAS (see the fixture trace): after ``heat_s``
seconds of busy time the board hits its power cap, NVML reports reason 0x4 (software power
cap) and the SM clock drops from ``boost_mhz`` to ``capped_mhz``; idle time cools it down at
the same rate. A sample of work with base time ``t`` takes ``t * boost / clock`` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tile_lab.gpu.state import GpuState


@dataclass
class SimGPU:
    base_s: dict[str, float]  # work name -> seconds per sample at boost clock
    boost_mhz: float = 1980.0
    capped_mhz: float = 1305.0
    heat_s: float = 0.5
    idle_w: float = 90.0
    cap_w: float = 700.0
    now: float = 0.0
    heat: float = 0.0  # seconds of net busy time, 0..heat_s
    log: list = field(default_factory=list)  # (work name, n, clock) per timed call
    last_work: str | None = None

    # ---- Timer ---------------------------------------------------------------------------
    def time(self, work, samples, *, first):
        out = []
        for _ in range(samples):
            clock = self.clock()
            t = self.base_s[work.name] * self.boost_mhz / clock
            out.append(t)
            self._busy(t)
        self.log.append((work.name, samples, self.clock()))
        self.last_work = work.name
        return out

    # ---- StateReader ---------------------------------------------------------------------
    def read(self):
        hot = self.heat >= self.heat_s
        power = self.cap_w if hot else self.idle_w + (self.cap_w - self.idle_w) * (
            self.heat / self.heat_s)
        return GpuState(self.now, self.clock(), 2619.0, power, 60.0, 0x4 if hot else 0x0,
                        self.cap_w)

    def max_sm_mhz(self):
        return self.boost_mhz

    def sleep(self, seconds):
        self.now += seconds
        self.heat = max(0.0, self.heat - seconds)

    # ---- model ---------------------------------------------------------------------------
    def clock(self):
        return self.capped_mhz if self.heat >= self.heat_s else self.boost_mhz

    def _busy(self, seconds):
        self.now += seconds
        self.heat = min(self.heat_s, self.heat + seconds)


@dataclass(frozen=True)
class Work:
    """A Timeable that only has a name (the simulated timer knows its cost)."""

    name: str
    baseline: str | None = None

    def run(self):
        pass

    def prepare(self):
        pass
