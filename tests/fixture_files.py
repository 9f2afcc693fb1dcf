"""The recorded fixtures in tests/fixtures. The compiled-kernel inspections are kept gzipped
(``NAME.json.gz``): as plain JSON they were 0.5 MiB of the repository, which travels to the lent
GPU machine beside the GPU bundle under a 64 MiB limit."""

from __future__ import annotations

import gzip
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_text(name: str) -> str:
    """The text of fixture ``name`` (e.g. ``"tma_gemm_sm_90.json"``), stored plain or as
    ``name + ".gz"``."""
    path = FIXTURES / name
    if path.exists():
        return path.read_text(encoding="utf-8")
    return gzip.decompress((FIXTURES / f"{name}.gz").read_bytes()).decode("utf-8")


def inspection_fixture(name: str):
    """The recorded :class:`tile_lab.Inspection` ``name`` (without ``.json``)."""
    from tile_lab.compile.artifacts import Inspection

    return Inspection.from_json(fixture_text(f"{name}.json"))
