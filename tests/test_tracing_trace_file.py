"""Saved traces (``Trace.save`` / ``tile_lab.load_trace``, format in
``tile_lab/tracing/trace_file.py``): the notebook 4 GEMM reloads and redraws identically;
gathers, atomics and undetermined writes survive; a corrupt, truncated, oversized, newer or
hostile file is refused with a clear error before anything in it is used."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tile_lab
from tile_lab.errors import FileFormatError
from tile_lab.tracing.trace_file import FORMAT_VERSION

ROOT = Path(__file__).resolve().parent.parent


def _notebook4_kernel(tmp_path: Path):
    """The ``%%tile`` cell of notebooks/src/04_matrix_multiply.py that defines ``matmul``,
    as a module of its own (cuTile reads kernel source from a file)."""
    text = (ROOT / "notebooks" / "src" / "04_matrix_multiply.py").read_text()
    cell = next(c for c in text.split("# %%") if "def matmul(" in c and "%%tile" in c)
    body = cell.split("\n", 2)[2]  # drop the "# %%" rest-of-line and the %%tile line
    path = tmp_path / "nb04_cell.py"
    path.write_text("import cuda.tile as ct\n" + body)
    spec = importlib.util.spec_from_file_location("nb04_cell", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul


@pytest.fixture(scope="module")
def gemm_trace(tmp_path_factory):
    matmul = _notebook4_kernel(tmp_path_factory.mktemp("nb04"))
    M, K, N = 256, 128, 256  # notebook 4's sizes
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    return tile_lab.trace(matmul, (M // 64, N // 64), (A, B, C, 64, 64, 32))


def _same(a: tile_lab.Trace, b: tile_lab.Trace) -> None:
    assert json.loads(a.to_json()) == json.loads(b.to_json())
    assert a.grid == b.grid and a.blocks == b.blocks and a.mma_flops == b.mma_flops


def test_notebook4_gemm_reloads_and_redraws_identically(gemm_trace, tmp_path):
    path = tmp_path / "gemm.tltrace"
    assert gemm_trace.save(str(path)) == path  # the path written, to chain (it was None)
    again = tile_lab.load_trace(path)
    _same(gemm_trace, again)
    for kwargs in ({"block": (1, 2), "view": "gemm"}, {"view": "coverage"},
                   {"block": (1, 2), "view": "order"}, {"block": (0, 3), "iteration": 2}):
        assert tile_lab.diagram(again, **kwargs)._repr_svg_() == \
            tile_lab.diagram(gemm_trace, **kwargs)._repr_svg_(), kwargs
    # the same trace always writes the same bytes (fixed member order and timestamps)
    path2 = tmp_path / "again.tltrace"
    again.save(path2)
    assert path2.read_bytes() == path.read_bytes()
    # NumPy reads it as an .npz without pickle
    with np.load(path, allow_pickle=False) as npz:
        header = json.loads(npz["header"].tobytes())
        assert header["format"] == "tile_lab.trace" and header["version"] == FORMAT_VERSION
        assert npz["access"].shape == (len(gemm_trace), 14)


def test_browser_opens_a_saved_trace(gemm_trace, tmp_path):
    path = tmp_path / "gemm.tltrace"
    gemm_trace.save(path)
    browser = tile_lab.browse(str(path), view="gemm", block=(1, 2))
    assert browser.error is None and browser.diagram is not None
    assert browser.diagram._repr_svg_() == tile_lab.diagram(
        gemm_trace, block=(1, 2), view="gemm")._repr_svg_()
    with pytest.raises(FileFormatError):
        tile_lab.browse(tmp_path / "missing.tltrace")


def test_a_512_cubed_gemm_trace_stays_small(tmp_path):
    from tile_lab.examples.gemm import gemm_naive

    n = 512
    rng = np.random.default_rng(1)
    A = rng.standard_normal((n, n)).astype(np.float16)
    B = rng.standard_normal((n, n)).astype(np.float16)
    C = np.zeros((n, n), np.float32)
    tr = tile_lab.trace(gemm_naive, (n // 64, n // 64), (A, B, C, 64, 64, 32))
    path = tmp_path / "g512.tltrace"
    tr.save(path)
    size, as_json = path.stat().st_size, len(tr.to_json().encode())
    print(f"512^3 GEMM trace: {len(tr)} accesses, {len(tr.mma_calls)} mma calls, "
          f"{size:,} bytes saved ({as_json:,} bytes as JSON)")
    assert size * 10 < as_json  # the columns compress; per-access JSON does not
    _same(tr, tile_lab.load_trace(path))


def test_gathers_atomics_and_ragged_tiles_round_trip(tmp_path):
    import cuda.tile as ct
    from kernels_inspect import gather_scatter

    n = 1000
    src = np.arange(n, dtype=np.float32)
    idx = np.random.default_rng(2).integers(0, n, n).astype(np.int32)
    dst = np.zeros(n, np.float32)
    tr = tile_lab.trace(gather_scatter, (ct.cdiv(n, 128),), (src, idx, dst, 128))
    assert any(a.flat_indices is not None for a in tr.accesses)
    path = tmp_path / "g.tltrace"
    tr.save(path)
    again = tile_lab.load_trace(path)
    _same(tr, again)
    assert str(tile_lab.check_trace(again)) == str(tile_lab.check_trace(tr))


def test_a_trace_without_mma_record_and_with_a_block_subset(tmp_path):
    from tile_lab.tracing.trace import ArrayInfo, MemoryAccess, Trace, UndeterminedWrite

    acc = MemoryAccess(seq=0, block=(1, 0, 0), kind="scatter", op="scatter", arg="y", line=7,
                       iteration=0, flat_indices=np.array([3, 1, 4], dtype=np.int64),
                       out_of_bounds=2, masked_off=1, unchecked=True)
    und = UndeterminedWrite(block=(1, 0, 0), op="store", arg="y", line=8, filename="k.py",
                            load_line=5, load_arg="x", load_op="load", mix_line=None,
                            mix_op=None, box_start=(-2,), box_stop=(6,), elements=3)
    tr = Trace(kernel="k", grid=(4, 1, 1), arrays=(ArrayInfo("y", (8,), "float32"),),
               accesses=(acc,), scalars={"alpha": np.float32(2.5), "n": 3},
               blocks_run=((1, 0, 0),), undetermined=(und,))
    path = tmp_path / "small.tltrace"
    tr.save(path)
    again = tile_lab.load_trace(path)
    assert again.mma_calls is None and again.blocks_run == ((1, 0, 0),)
    assert again.undetermined == (und,) and again.scalars == {"alpha": 2.5, "n": 3}
    assert again.accesses[0].flat_indices.tolist() == [3, 1, 4]
    assert again.accesses[0].unchecked and again.accesses[0].out_of_bounds == 2


# -- bad input: every one a FileFormatError that says what is wrong, nothing executed ------

def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def _write(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=arr.dtype == object)
    return buf.getvalue()


def _with_header(members: dict[str, bytes], **changes) -> dict[str, bytes]:
    header = json.loads(np.load(io.BytesIO(members["header.npy"])).tobytes())
    header.update(changes)
    text = json.dumps(header).encode()
    return {**members, "header.npy": _npy(np.frombuffer(text, dtype=np.uint8))}


@pytest.fixture()
def saved(gemm_trace, tmp_path) -> Path:
    path = tmp_path / "good.tltrace"
    gemm_trace.save(path)
    return path


def _refused(path: Path, pattern: str, **kwargs) -> str:
    with pytest.raises(FileFormatError) as info:
        tile_lab.load_trace(path, **kwargs)
    text = info.value.render()
    assert re.search(pattern, text), text
    assert str(path) in text  # names the file
    return text


def test_truncated_file(saved, tmp_path):
    data = saved.read_bytes()
    path = tmp_path / "cut.tltrace"
    path.write_bytes(data[: len(data) // 2])
    _refused(path, "corrupt or truncated")


def test_corrupt_bytes_fail_the_checksum(saved, tmp_path):
    data = bytearray(saved.read_bytes())
    members = _members(saved)
    # flip bytes inside the compressed access array (after the local headers)
    start = data.find(b"access.npy") + 40
    for i in range(start, start + 64):
        data[i] ^= 0x5A
    path = tmp_path / "flipped.tltrace"
    path.write_bytes(bytes(data))
    assert len(members) >= 6
    _refused(path, "corrupt or truncated|holds|shape|declares")


def test_not_a_zip_at_all(tmp_path):
    path = tmp_path / "text.tltrace"
    path.write_text("hello")
    _refused(path, "corrupt or truncated")
    json_path = tmp_path / "trace.json"
    json_path.write_text("{}")
    _refused(json_path, "corrupt or truncated")


def test_newer_version_says_upgrade(saved, tmp_path):
    path = _write(tmp_path / "v2.tltrace", _with_header(_members(saved), version=2))
    text = _refused(path, "format version 2, written by a newer tile_lab")
    assert "upgrade" in text


def test_unknown_header_field_and_unknown_member(saved, tmp_path):
    members = _members(saved)
    _refused(_write(tmp_path / "f.tltrace", _with_header(members, evil="x")),
             "unknown header field.*'evil'")
    _refused(_write(tmp_path / "m.tltrace", {**members, "extra.npy": _npy(np.zeros(3))}),
             "unknown member.*extra.npy")
    _refused(_write(tmp_path / "t.tltrace", _with_header(members, kernel=["not", "a str"])),
             "'kernel' is not a str")


def test_declared_counts_must_match_the_arrays(saved, tmp_path):
    members = _members(saved)
    header = json.loads(np.load(io.BytesIO(members["header.npy"])).tobytes())
    counts = dict(header["counts"], accesses=header["counts"]["accesses"] + 1)
    _refused(_write(tmp_path / "c.tltrace", _with_header(members, counts=counts)),
             "access.npy has shape .* the header declares")
    bad_strings = _with_header(members, strings=header["strings"][:1])
    _refused(_write(tmp_path / "s.tltrace", bad_strings), "outside the string table")


def test_oversized_file_is_refused_before_decompressing(saved, tmp_path):
    _refused(saved, "over the 1,000-byte limit", max_bytes=1000)
    # a member whose declared (uncompressed) size is huge: a zip bomb is refused from the
    # central directory, before any inflating
    members = _members(saved)
    bomb = _write(tmp_path / "bomb.tltrace", {**members, "flat.npy": _npy(
        np.zeros(40_000_000, dtype=np.int64))})
    assert bomb.stat().st_size < 2_000_000
    _refused(bomb, "over the .*-byte limit", max_bytes=100_000_000)


def test_a_pickle_inside_is_never_unpickled(saved, tmp_path):
    marker = tmp_path / "pwned"
    payload = np.empty(1, dtype=object)
    payload[0] = _Boom(str(marker))
    members = _members(saved)
    path = _write(tmp_path / "pickle.tltrace", {**members, "tuples.npy": _npy(payload)})
    _refused(path, "holds object, expected int64")
    assert not marker.exists()
    # a non-JSON header, and a header that is not even uint8
    _refused(_write(tmp_path / "h.tltrace", {**members, "header.npy": _npy(
        np.frombuffer(b"\xff\xfe not json", dtype=np.uint8))}), "not UTF-8 JSON")
    _refused(_write(tmp_path / "h2.tltrace", {**members, "header.npy": _npy(payload)}),
             "holds object")
    assert not marker.exists()


class _Boom:
    """Unpickling this writes a file: the test checks the loader never does."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (Path(self.path), "unpickled"))
