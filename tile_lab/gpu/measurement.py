"""``Measurement``: one benchmark result with its raw samples, derived rates and provenance.

Plain data (frozen dataclasses, JSON-serialisable, no HTML). A measurement recorded on a
lent GPU is saved with :func:`save_measurements` and loaded anywhere, GPU or not, with
:func:`load_measurements`; the plots in :mod:`tile_lab.render.plots` read only these fields.

Times are in seconds. ``gbps``/``tflops`` are computed from the *mean* time. A rate above
the device's theoretical roof is kept as the arithmetic gave it but ``above_roof`` is set,
and every text or plot shows it flagged, never as a plain number: it means the bytes or
FLOPs were counted wrong or the data came from cache (warm L2), not that the GPU beat
physics.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ..record_files import read_record, write_record
from .state import SampleState

FORMAT = "tile_lab.measurements"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Provenance:
    """Where and how a measurement was taken (no timestamps: outputs stay deterministic)."""

    gpu: str
    arch: str
    sm_count: int
    driver: str | None  # driver release, e.g. "580.159.04"
    cuda_driver_api: int | None  # cudaDriverGetVersion, e.g. 13000
    cuda_tile: str | None
    tileiras: str | None
    cupy: str | None
    sm_clock_mhz: float | None  # at measure time
    mem_clock_mhz: float | None  # at measure time
    max_sm_clock_mhz: float | None
    clocks_locked: str  # "yes" | "no" | "unknown"
    isolated: bool = False  # measured in a worker process

    def to_json_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict) -> Provenance:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Measurement:
    """One benchmark of one kernel configuration. See the module docstring for units."""

    kernel: str
    mode: str  # "cold" | "warm" | "graph"
    grid: tuple[int, ...]
    samples_s: tuple[float, ...]
    mean_s: float
    median_s: float
    min_s: float
    std_s: float
    ci95_s: float  # half-width of the 95% confidence interval of the mean
    launches_per_sample: int = 1
    label: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    bytes: int | None = None
    bytes_source: str | None = None  # "user" | "array sizes" | "trace"
    flops: int | None = None
    flops_source: str | None = None  # "user" | "mma shapes"
    gbps: float | None = None
    tflops: float | None = None
    peak_gbps: float | None = None
    peak_tflops: float | None = None  # tensor (dense FP16/BF16) roof, else FP32
    peak_fp32_tflops: float | None = None
    above_roof: bool = False
    fresh_outputs: bool = False  # outputs restored before every sample (in-place kernel)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    provenance: Provenance | None = None
    notes: tuple[str, ...] = ()
    # the GPU state around each kept sample (empty when NVML was unavailable or for records
    # made before tile_lab recorded states), and what the throttle policy saw and did
    regime: str | None = None  # "burst" | "sustained"
    states: tuple[SampleState, ...] = ()
    throttled_samples: int = 0
    discarded_samples: int = 0
    throttle_policy: str | None = None  # "wait" | "discard" | "keep"
    baseline: str | None = None  # a library baseline's call and version

    # ---- convenience ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.samples_s)

    @property
    def mean_us(self) -> float:
        return self.mean_s * 1e6

    @property
    def ci95_us(self) -> float:
        return self.ci95_s * 1e6

    @property
    def pct_peak_bw(self) -> float | None:
        if self.gbps is None or not self.peak_gbps:
            return None
        return 100.0 * self.gbps / self.peak_gbps

    @property
    def pct_peak_flops(self) -> float | None:
        if self.tflops is None or not self.peak_tflops:
            return None
        return 100.0 * self.tflops / self.peak_tflops

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOPs per byte, when both are known."""
        if not self.flops or not self.bytes:
            return None
        return self.flops / self.bytes

    @property
    def name(self) -> str:
        return self.label or self.kernel

    @property
    def sm_mhz(self) -> float | None:
        """Median SM clock over the samples' recorded states."""
        return _median(s.sm_mhz for s in self.states)

    @property
    def power_w(self) -> float | None:
        """Median board power over the samples' recorded states."""
        return _median(s.power_w for s in self.states)

    def rate_interval(self, metric: str) -> tuple[float, float] | None:
        """(low, high) of ``metric`` ("gbps" or "tflops") over the 95% CI of the mean time.

        The fast end is never taken below the fastest sample seen: with few, noisy samples
        the CI of the mean can reach zero time, which no sample supports."""
        amount, scale = ((self.bytes, 1e9) if metric == "gbps" else (self.flops, 1e12))
        if not amount:
            return None
        slow = self.mean_s + self.ci95_s
        fast = max(self.mean_s - self.ci95_s, self.min_s, 1e-15)
        return amount / slow / scale, amount / fast / scale

    def summary(self) -> str:
        """One line of plain text; rates above the roof are flagged, not shown as numbers."""
        head = (f"{self.name} [{self.mode}]: mean {_fmt_time(self.mean_s)} "
                f"± {_fmt_time(self.ci95_s)} (95% CI, n={self.n}), "
                f"median {_fmt_time(self.median_s)}, min {_fmt_time(self.min_s)}")
        parts = [head]
        if self.gbps is not None:
            parts.append(_rate_text(self.gbps, self.peak_gbps, "GB/s", self.above_roof
                                    and self.peak_gbps is not None
                                    and self.gbps > self.peak_gbps))
        if self.tflops is not None:
            parts.append(_rate_text(self.tflops, self.peak_tflops, "TFLOPS", self.above_roof
                                    and self.peak_tflops is not None
                                    and self.tflops > self.peak_tflops))
        if self.max_abs_err is not None:
            parts.append(f"max abs err {self.max_abs_err:.3g}, max rel err "
                         f"{self.max_rel_err:.3g}")
        gpu = self.provenance.gpu if self.provenance else "unknown GPU"
        state = ""
        if self.sm_mhz is not None:
            state = f" at SM {self.sm_mhz:.0f} MHz"
            if self.power_w is not None:
                state += f", {self.power_w:.0f} W"
        if self.regime:
            state += f" ({self.regime}"
            if self.throttled_samples:
                state += f", {self.throttled_samples} throttled"
            state += ")"
        parts.append(f"on {gpu}{state}")
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.summary()

    # ---- JSON ----------------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        data = asdict(self)
        data["grid"] = list(self.grid)
        data["samples_s"] = list(self.samples_s)
        data["notes"] = list(self.notes)
        data["states"] = [st.to_json_dict() for st in self.states]
        data["provenance"] = None if self.provenance is None else self.provenance.to_json_dict()
        return data

    @classmethod
    def from_json_dict(cls, data: dict) -> Measurement:
        data = _known(cls, data)
        data["grid"] = tuple(data["grid"])
        data["samples_s"] = tuple(float(x) for x in data["samples_s"])
        data["notes"] = tuple(data.get("notes", ()))
        data["states"] = tuple(SampleState.from_json_dict(st) for st in data.get("states", ()))
        prov = data.get("provenance")
        data["provenance"] = None if prov is None else Provenance.from_json_dict(prov)
        return cls(**data)

    def with_label(self, label: str, **params: Any) -> Measurement:
        return replace(self, label=label, params={**self.params, **params})

    def save(self, path: str | os.PathLike) -> None:
        save_measurements([self], path)


def save_measurements(measurements: Iterable[Measurement], path: str | os.PathLike) -> None:
    """Write measurements to a JSON file (sorted keys, stable formatting: diffs stay small;
    gzip-compressed, with reproducible bytes, when the name ends in ``.gz``)."""
    doc = {"format": FORMAT, "version": FORMAT_VERSION,
           "measurements": [m.to_json_dict() for m in measurements]}
    write_record(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def load_measurements(path: str | os.PathLike) -> list[Measurement]:
    """Load measurements saved by :func:`save_measurements` (works without a GPU; a name ending
    in ``.gz`` is read gzip-compressed)."""
    doc = json.loads(read_record(path))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a tile_lab measurements file "
                         f"(expected \"format\": \"{FORMAT}\")")
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"{os.fspath(path)!r} has measurements format version "
                         f"{doc.get('version')!r}; this tile_lab reads version {FORMAT_VERSION}")
    return [Measurement.from_json_dict(d) for d in doc["measurements"]]


def _known(cls: type, data: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _median(values: Iterable[float | None]) -> float | None:
    import statistics

    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} µs"


def _rate_text(value: float, peak: float | None, unit: str, above: bool) -> str:
    if above:
        return (f"{unit} ABOVE ROOF (computed {value:.4g} > peak {peak:.4g}: bytes/FLOPs "
                f"miscounted or served from cache)")
    if peak:
        return f"{value:.4g} {unit} ({100 * value / peak:.1f}% of peak {peak:.4g})"
    return f"{value:.4g} {unit}"
