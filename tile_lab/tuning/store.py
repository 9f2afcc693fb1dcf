"""An append-only, resumable store of tuning results (JSON lines).

One line per finished config, written and fsync'ed as soon as the config is measured, so a crash
loses at most the config in flight. Each record carries the *context* it is valid in — GPU,
driver, cuda.tile/tileiras versions, kernel source hash, argument shapes/dtypes — and the config;
a rerun in the same context skips what is stored. A torn last line (crash mid-write) is ignored
on read and overwritten by the next append.

A store whose name ends in ``.gz`` (``tuning.jsonl.gz``, written with ``gzip``) is read-only: a
record shipped with a notebook is read as it is, and appending to it raises
:class:`ReadOnlyStoreError` (copy it out with ``gunzip -k`` to record into it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..record_files import is_compressed, open_record
from .space import Config

FORMAT_VERSION = 1


def context_key(context: Mapping[str, Any]) -> str:
    """A short stable hash of a context mapping (order-independent)."""
    blob = json.dumps(context, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def config_key(config: Config) -> str:
    return json.dumps(config.as_dict(), sort_keys=True, default=str)


@dataclass(frozen=True)
class StoredRecord:
    context: dict[str, Any]
    config: Config
    status: str  # "ok" | "failed"
    measurement: dict[str, Any] | None  # Measurement.to_json_dict() when ok
    error: str | None  # the failure's message when failed
    stage: str | None  # where it failed: "compile" | "launch" | "check" | "timeout"

    def to_json(self) -> str:
        return json.dumps({
            "v": FORMAT_VERSION, "context_key": context_key(self.context),
            "context": self.context, "config": [list(kv) for kv in self.config.items],
            "status": self.status, "measurement": self.measurement,
            "error": self.error, "stage": self.stage,
        }, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, line: str) -> StoredRecord:
        d = json.loads(line)
        return cls(context=d["context"], config=Config(tuple(tuple(kv) for kv in d["config"])),
                   status=d["status"], measurement=d.get("measurement"),
                   error=d.get("error"), stage=d.get("stage"))


class ReadOnlyStoreError(ValueError):
    """An append to a compressed (``.gz``) store, which is read-only."""


class TuningStore:
    """``TuningStore("tuning.jsonl")``: append records, list them, find what is already done.
    ``TuningStore("tuning.jsonl.gz")`` reads a gzip-compressed store and refuses appends."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def read_only(self) -> bool:
        """True for a compressed (``.gz``) store: it is read, never appended to."""
        return is_compressed(self.path)

    def check_writable(self) -> None:
        """Raise :class:`ReadOnlyStoreError` when this store cannot be appended to."""
        if self.read_only:
            plain = self.path.with_suffix("")
            raise ReadOnlyStoreError(
                f"{self.path} is a compressed tuning store, which is read-only; to record into "
                f"it, decompress it (gunzip -k {self.path.name}) and use {plain.name}, or pass "
                "another store")

    def __repr__(self) -> str:
        return f"TuningStore({str(self.path)!r})"

    def records(self, context: Mapping[str, Any] | None = None) -> list[StoredRecord]:
        """Every intact record (in the given context, if one is given), oldest first."""
        want = None if context is None else context_key(context)
        out = []
        for line in self._intact_lines():
            rec = StoredRecord.from_json(line)
            if want is None or context_key(rec.context) == want:
                out.append(rec)
        return out

    def done(self, context: Mapping[str, Any]) -> dict[str, StoredRecord]:
        """config key -> latest record, for configs finished in this context."""
        return {config_key(r.config): r for r in self.records(context)}

    def append(self, record: StoredRecord) -> None:
        self.check_writable()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(record.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _intact_lines(self) -> Iterator[str]:
        if not self.path.exists():
            return
        with open_record(self.path) as f:
            for line in f:
                if not line.endswith("\n"):
                    return  # torn write at the end
                line = line.strip()
                if not line:
                    continue
                try:
                    json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn line in the middle (never written by us): skip it
                yield line

    def _drop_torn_tail(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)


def recorded_measurement(data: dict[str, Any]) -> Any:
    """A stored measurement as a :class:`~tile_lab.gpu.measurement.Measurement`, or, when that
    class cannot rebuild it (a fake's record), an object with the stored fields."""
    try:
        from ..gpu.measurement import Measurement

        return Measurement.from_json_dict(data)
    except Exception:
        return RecordedMeasurement(data)


class RecordedMeasurement:
    """A stored measurement when the full Measurement class cannot rebuild it (e.g. one
    written by a custom ``measure``). Only Measurement's own field names become attributes,
    read through ``__getattr__`` (which Python consults after the class), so a crafted store
    line can neither replace a method nor set a dunder; every key is kept for to_json_dict."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            raise TypeError("a stored measurement must be a JSON object, got "
                            f"{type(data).__name__}")
        object.__setattr__(self, "_data", {str(k): v for k, v in data.items()})

    def __getattr__(self, name: str) -> Any:
        if name in _measurement_fields() and name in self._data:
            return self._data[name]
        raise AttributeError(f"recorded measurement has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a recorded measurement is read-only")

    def __reduce__(self) -> tuple[Any, ...]:  # pickle / deepcopy rebuild through __init__
        return (type(self), (dict(self._data),))

    def to_json_dict(self) -> dict[str, Any]:
        return dict(self._data)


@functools.cache
def _measurement_fields() -> frozenset[str]:
    from dataclasses import fields

    from ..gpu.measurement import Measurement

    return frozenset(f.name for f in fields(Measurement))
