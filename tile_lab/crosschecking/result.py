"""What a crosscheck found: frozen, JSON-serialisable records (no HTML here).

A :class:`CrossCheck` holds one :class:`OutputComparison` per array the kernel wrote, each a
list of :class:`TileComparison` — one per tile a store (or scatter/atomic) wrote, with the
blocks and source line that wrote it. Every differing element falls into one class:

* ``undetermined``: the emulator marks the lanes undetermined (padding of a
  ``PaddingMode.UNDETERMINED`` load reached the output): expected to differ;
* ``design``: within the error the kernel's approximate math, flush-to-zero, rounding modes or
  device-chosen summation order allow (:mod:`tile_lab.crosschecking.sites`): expected to differ;
* ``mismatch``: anything else: an emulator bug.

A tile's ``verdict`` is ``agree`` (bit for bit, NaN where NaN) or the worst class among its
differing elements (mismatch > design > undetermined).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .sites import DesignSite

CLASSES = ("undetermined", "design", "mismatch")
VERDICTS = ("agree", *CLASSES)


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class Hazard:
    """Undetermined lanes the emulator saw reach ``arg``: padded by the load of
    ``load_arg`` at ``load_line``, mixed into kept lanes by ``mix_op`` at ``mix_line`` (None:
    stored as they are), written at ``store_line``; ``elements`` counts them."""

    arg: str
    store_line: int
    load_line: int
    load_arg: str
    mix_line: int | None
    mix_op: str | None
    elements: int
    blocks: int

    def describe(self) -> str:
        how = (f", mixed into kept lanes by {self.mix_op} at line {self.mix_line}"
               if self.mix_line else ", stored as they are")
        return (f"padding of the {self.load_arg!r} load at line {self.load_line} "
                f"(PaddingMode.UNDETERMINED){how}")


@dataclass(frozen=True)
class TileComparison:
    """One tile of one output, GPU vs emulator.

    ``box_start``/``box_stop``: the element box the tile covers inside the array (for a
    scatter/atomic: the bounding box of the elements it wrote); ``blocks``: the blocks that
    wrote it (first 8) and ``n_blocks`` how many; ``line``/``op``: the writing op.
    Errors count elements that are not bitwise equal (two NaNs are equal): ``max_abs`` and
    ``max_ulp`` over elements finite on both sides (None when there are none);
    ``nan_gpu``/``nan_emulator`` count NaNs, ``nan_mismatch``/``inf_mismatch`` elements NaN
    (±Inf) on one side only; ``classes`` maps each class to its element count."""

    arg: str
    box_start: tuple[int, ...]
    box_stop: tuple[int, ...]
    line: int
    op: str
    blocks: tuple[tuple[int, int, int], ...]
    n_blocks: int
    elements: int
    differing: int = 0
    max_abs: float | None = None
    max_ulp: int | None = None
    nan_gpu: int = 0
    nan_emulator: int = 0
    nan_mismatch: int = 0
    inf_mismatch: int = 0
    classes: dict[str, int] = field(default_factory=dict)
    verdict: str = "agree"
    reason: str = ""
    # one differing element of the tile's class: (index, GPU value, emulator value), the
    # values as Python writes them ("nan", "1.0000001")
    example: tuple[tuple[int, ...], str, str] | None = None

    @property
    def block(self) -> tuple[int, int, int]:
        return self.blocks[0]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["max_abs"] = _num(self.max_abs) if self.max_abs is not None else None
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TileComparison:
        d = dict(d)
        for k in ("box_start", "box_stop"):
            d[k] = tuple(d[k])
        d["blocks"] = tuple(tuple(b) for b in d["blocks"])
        if d.get("example") is not None:
            idx, g, e = d["example"]
            d["example"] = (tuple(idx), g, e)
        return cls(**d)


@dataclass(frozen=True)
class OutputComparison:
    """One output array: its tiles, and ``unwritten_differing`` — elements no tile wrote
    that differ anyway (the GPU wrote where the emulator's kernel did not: a mismatch)."""

    arg: str
    shape: tuple[int, ...]
    dtype: str
    tiles: tuple[TileComparison, ...]
    unwritten_differing: int = 0

    def count(self, verdict: str) -> int:
        return sum(1 for t in self.tiles if t.verdict == verdict)

    @property
    def elements_by_class(self) -> dict[str, int]:
        out = dict.fromkeys(CLASSES, 0)
        for t in self.tiles:
            for k, n in t.classes.items():
                out[k] += n
        out["mismatch"] += self.unwritten_differing
        return out

    def to_json(self) -> dict[str, Any]:
        return {"arg": self.arg, "shape": list(self.shape), "dtype": self.dtype,
                "tiles": [t.to_json() for t in self.tiles],
                "unwritten_differing": self.unwritten_differing}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OutputComparison:
        return cls(d["arg"], tuple(d["shape"]), d["dtype"],
                   tuple(TileComparison.from_json(t) for t in d["tiles"]),
                   d.get("unwritten_differing", 0))


@dataclass(frozen=True)
class CrossCheck:
    """The result of :func:`tile_lab.crosscheck`: ``kernel`` run over ``grid`` on ``device``
    and on the emulator from identical inputs; ``outputs`` compared per tile; ``sites`` the
    kernel's by-design sites; ``hazards`` the emulator's undetermined-value findings."""

    kernel: str
    grid: tuple[int, ...]
    device: str
    outputs: tuple[OutputComparison, ...]
    sites: tuple[DesignSite, ...] = ()
    hazards: tuple[Hazard, ...] = ()
    filename: str = ""
    source: str = ""
    first_line: int = 1
    notes: tuple[str, ...] = ()
    # where a result shown is not this session's run: "recorded 2026-11-25 on an H100, read
    # from data/x.json"; views put it first, so a CPU box never passes it off as live
    recording: str = ""

    # -- verdicts ------------------------------------------------------------------------
    @property
    def tiles(self) -> tuple[TileComparison, ...]:
        return tuple(t for o in self.outputs for t in o.tiles)

    @property
    def elements_by_class(self) -> dict[str, int]:
        out = dict.fromkeys(CLASSES, 0)
        for o in self.outputs:
            for k, n in o.elements_by_class.items():
                out[k] += n
        return out

    @property
    def mismatches(self) -> tuple[TileComparison, ...]:
        return tuple(t for t in self.tiles if t.verdict == "mismatch")

    @property
    def ok(self) -> bool:
        """True when every difference is explained (no emulator bug found)."""
        return not self.mismatches and not any(o.unwritten_differing for o in self.outputs)

    @property
    def agreement(self) -> str:
        """``"identical"``, ``"explained"`` (every difference undetermined or by design),
        ``"mismatch"``, or ``"nothing compared"`` (the kernel wrote no array)."""
        if not self.ok:
            return "mismatch"
        if not self.tiles:
            return "nothing compared"
        return "identical" if all(t.verdict == "agree" for t in self.tiles) else "explained"

    def summary(self) -> str:
        """Agreement in words, one line."""
        tiles = self.tiles
        n_out = len(self.outputs)
        head = (f"{self.kernel} on {self.device} vs the emulator: {len(tiles)} tile"
                f"{'s' * (len(tiles) != 1)} of {n_out} output{'s' * (n_out != 1)}")
        agree = sum(t.verdict == "agree" for t in tiles)
        if self.agreement == "identical":
            return f"{head}: all identical, bit for bit."
        if self.agreement == "nothing compared":
            return f"{head}: the kernel wrote no array on the emulator, nothing to compare."
        parts = [f"{agree} identical"]
        for cls, words in (("undetermined", "differ in lanes the emulator marks undetermined"),
                           ("design", "differ by design (within the error the kernel's ops "
                                      "allow)"),
                           ("mismatch", "MISMATCH (emulator bug)")):
            n = sum(t.verdict == cls for t in tiles)
            if n:
                parts.append(f"{n} {words}")
        stray = sum(o.unwritten_differing for o in self.outputs)
        if stray:
            parts.append(f"{stray} elements no emulated store wrote differ (emulator bug)")
        return f"{head}: {'; '.join(parts)}."

    def explanations(self) -> list[str]:
        """One line per distinct reason a tile differs, with the tiles it covers."""
        groups: dict[tuple[str, str], list[TileComparison]] = {}
        for t in self.tiles:
            if t.verdict != "agree":
                groups.setdefault((t.verdict, t.reason), []).append(t)
        out = []
        for (verdict, reason), ts in groups.items():
            args = sorted({t.arg for t in ts})
            out.append(f"[{verdict}] {len(ts)} tile{'s' * (len(ts) != 1)} of "
                       f"{', '.join(args)}: {reason}")
        for o in self.outputs:
            if o.unwritten_differing:
                out.append(f"[mismatch] {o.unwritten_differing} elements of {o.arg} that no "
                           "emulated store wrote differ on the GPU: emulator bug")
        return out

    def __str__(self) -> str:
        return "\n".join([*([f"A recording, not run here: {self.recording}"]
                            if self.recording else []),
                          self.summary(), *(f"- {e}" for e in self.explanations()),
                          *self.notes])

    def __repr__(self) -> str:
        return f"CrossCheck({self.summary()})"

    # -- serialisation -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "grid": list(self.grid), "device": self.device,
                "agreement": self.agreement, "summary": self.summary(),
                "outputs": [o.to_json() for o in self.outputs],
                "sites": [s.to_json() for s in self.sites],
                "hazards": [asdict(h) for h in self.hazards], "filename": self.filename,
                "source": self.source, "first_line": self.first_line,
                "notes": list(self.notes), "recording": self.recording}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, d: dict[str, Any], *, recording: str | None = None) -> CrossCheck:
        """A result saved with :meth:`to_json`. ``recording``: where it comes from (when,
        on what, which file), shown first by its views (default: what ``d`` says)."""
        return cls(kernel=d["kernel"], grid=tuple(d["grid"]), device=d["device"],
                   recording=d.get("recording", "") if recording is None else recording,
                   outputs=tuple(OutputComparison.from_json(o) for o in d["outputs"]),
                   sites=tuple(DesignSite(**s) for s in d.get("sites", ())),
                   hazards=tuple(Hazard(**h) for h in d.get("hazards", ())),
                   filename=d.get("filename", ""), source=d.get("source", ""),
                   first_line=d.get("first_line", 1), notes=tuple(d.get("notes", ())))

    # -- display: the renderer is looked up, never imported here --------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..display import mimebundle

        return mimebundle(self)
