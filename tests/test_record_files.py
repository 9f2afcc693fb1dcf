"""Records on disk: plain text as is, ``.gz`` compressed with no timestamp (same bytes)."""

from __future__ import annotations

import gzip

import pytest

from tile_lab.record_files import is_compressed, open_record, read_record, write_record

pytestmark = pytest.mark.timeout(60)


def test_plain_and_compressed_records_round_trip(tmp_path):
    text = '{"a": 1, "é": [2, 3]}\n' * 50
    plain, packed = tmp_path / "r.json", tmp_path / "r.json.gz"
    write_record(plain, text)
    write_record(packed, text)
    assert plain.read_text(encoding="utf-8") == text
    assert gzip.decompress(packed.read_bytes()).decode("utf-8") == text
    assert packed.stat().st_size < plain.stat().st_size / 5
    assert read_record(plain) == read_record(packed) == text
    with open_record(packed) as fh:
        assert fh.readline() == '{"a": 1, "é": [2, 3]}\n'
    assert is_compressed(packed) and not is_compressed(plain)


def test_the_same_record_gives_the_same_bytes(tmp_path):
    first, second = tmp_path / "a.gz", tmp_path / "b.gz"
    write_record(first, "same\n")
    write_record(second, "same\n")  # gzip's header holds no time: committed records stay put
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[4:8] == b"\0\0\0\0"  # MTIME field
