"""Records on disk (measurements, GPU state traces, profiles, tuning stores): text as it is,
or gzip-compressed when the file name ends in ``.gz`` (level 9, no timestamp inside, so the
same record gives the same bytes and a committed one does not change when written again)."""

from __future__ import annotations

import gzip
import os
from typing import IO

__all__ = ["is_compressed", "open_record", "read_record", "write_record"]


def is_compressed(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a gzip-compressed record (its name ends in ``.gz``)."""
    return os.fspath(path).endswith(".gz")


def write_record(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), compressed when :func:`is_compressed`."""
    data = text.encode("utf-8")
    if is_compressed(path):
        data = gzip.compress(data, 9, mtime=0)
    with open(path, "wb") as fh:
        fh.write(data)


def open_record(path: str | os.PathLike[str]) -> IO[str]:
    """``path`` opened for reading text, decompressed when :func:`is_compressed`."""
    if is_compressed(path):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_record(path: str | os.PathLike[str]) -> str:
    """The text of ``path``, decompressed when :func:`is_compressed`."""
    with open_record(path) as fh:
        return fh.read()
