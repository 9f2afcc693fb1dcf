"""Saved traces: ``Trace.save(path)`` writes one, ``tile_lab.load_trace(path)`` reads it back.

The format, ``tile_lab.trace`` version 1, is a ZIP archive of NumPy ``.npy`` arrays (so
``numpy.load(path, allow_pickle=False)`` opens it too), deflate-compressed, members written
in a fixed order with fixed timestamps (the same trace always gives the same bytes):

``header.npy``  ``uint8``: UTF-8 JSON ``{"format": "tile_lab.trace", "version": 1, "kernel",
                "grid", "arrays": [{"name", "shape", "dtype"}], "source", "first_line",
                "filename", "scalars", "blocks_run", "undetermined", "strings",
                "counts": {"accesses", "tuples", "flat", "mma_calls"}}``
``access.npy``  ``int64 [accesses, 14]``: per memory access, the columns ``ACCESS_COLUMNS``
                (string fields are indices into ``strings``; ``-1`` means None)
``tuple_len.npy`` ``int64 [accesses, 4]``: lengths of ``tile_index``, ``tile_shape``,
                ``box_start``, ``box_stop`` (``-1``: None); their values follow one another
                in ``tuples.npy`` (``int64 [tuples]``)
``flat_len.npy`` ``int64 [accesses]``: length of ``flat_indices`` (``-1``: None); the values
                are in ``flat.npy`` (``int64 [flat]``)
``mma.npy``     ``int64 [mma_calls, 13]``: per matrix product, ``MMA_COLUMNS`` (absent when
                the trace recorded none: ``counts.mma_calls`` is null)

Loading trusts nothing in the file: only these members and header fields are accepted, every
array's dtype and shape is checked against the header's counts before its bytes are read,
declared sizes are capped (``max_bytes``), string indices are range-checked, and no pickle is
ever read. A corrupt, truncated, oversized or newer-version file raises
:class:`~tile_lab.errors.FileFormatError` naming the file and what is wrong with it.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
import zlib
from typing import Any

import numpy as np

from ..errors import FileFormatError

__all__ = ["ACCESS_COLUMNS", "FORMAT", "FORMAT_VERSION", "MAX_BYTES", "MMA_COLUMNS",
           "TUPLE_FIELDS", "json_scalars", "read_trace_file", "write_trace_file"]

FORMAT = "tile_lab.trace"
FORMAT_VERSION = 1
MAX_BYTES = 1 << 30  # default cap on the uncompressed size of a file's arrays (1 GiB)
_MAX_HEADER = 64 << 20  # the JSON header (it holds the kernel source and small tables)
ACCESS_COLUMNS = ("seq", "block_x", "block_y", "block_z", "kind", "op", "arg", "line",
                  "iteration", "filename", "out_of_bounds", "masked_off", "padding",
                  "unchecked")
MMA_COLUMNS = ("block_x", "block_y", "block_z", "op", "m", "n", "k", "batch", "dtype", "line",
               "iteration", "filename", "acc_dtype")
TUPLE_FIELDS = ("tile_index", "tile_shape", "box_start", "box_stop")
_HEADER_KEYS = {"format", "version", "kernel", "grid", "arrays", "source", "first_line",
                "filename", "scalars", "blocks_run", "undetermined", "strings", "counts"}
_UNDETERMINED_KEYS = {"block", "op", "arg", "line", "filename", "load_line", "load_arg",
                      "load_op", "mix_line", "mix_op", "box_start", "box_stop", "elements"}
_MEMBERS = ("header", "access", "tuple_len", "tuples", "flat_len", "flat", "mma")


# -- writing ---------------------------------------------------------------------------

def write_trace_file(path: str | os.PathLike, header: dict[str, Any],
                     arrays: dict[str, np.ndarray]) -> None:
    """Write ``header`` (completed with the format, version and counts) and the arrays
    (members named in ``MEMBERS``) to ``path``. ``Trace.save`` calls this."""
    unknown = set(arrays) - set(_MEMBERS[1:])
    if unknown:
        raise ValueError(f"unknown trace arrays {sorted(unknown)}")
    head = {"format": FORMAT, "version": FORMAT_VERSION, **header, "counts": {
        "accesses": int(arrays["access"].shape[0]), "tuples": int(arrays["tuples"].size),
        "flat": int(arrays["flat"].size),
        "mma_calls": int(arrays["mma"].shape[0]) if "mma" in arrays else None}}
    text = json.dumps(head, sort_keys=True, default=_plain).encode("utf-8")
    members = {"header": np.frombuffer(text, dtype=np.uint8), **arrays}
    with zipfile.ZipFile(os.fspath(path), "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for member in _MEMBERS:
            if member not in members:
                continue
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(members[member]),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"{member}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())


def json_scalars(scalars: dict) -> dict:
    """A trace's scalar arguments as plain JSON values (NumPy scalars unwrapped, anything
    else as its repr)."""
    return json.loads(json.dumps({str(k): v for k, v in scalars.items()}, default=_plain))


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


# -- reading ---------------------------------------------------------------------------

def read_trace_file(path: str | os.PathLike, *, max_bytes: int = MAX_BYTES
                    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The checked header and arrays of a trace file (``tile_lab.load_trace`` builds the
    Trace from them). Every string index in the arrays is inside ``header["strings"]`` and
    every length adds up, so building the objects cannot fail on a file that passed.

    Raises :class:`~tile_lab.errors.FileFormatError` for a file that is not a tile_lab
    trace, is corrupt or truncated, too large, of a newer format version, or holds unknown
    fields. Nothing in the file is executed (no pickle)."""
    name = os.fspath(path)
    try:
        size = os.path.getsize(name)
    except OSError as e:
        raise FileFormatError(f"cannot read trace file {name!r}: {e.strerror or e}") from None
    if size > max_bytes:
        raise _bad(name, f"the file is {size:,} bytes, over the {max_bytes:,}-byte limit "
                         "(load_trace(..., max_bytes=N) raises it)")
    try:
        with zipfile.ZipFile(name) as zf:
            return _read(name, zf, max_bytes)
    except FileFormatError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, TypeError,
            IndexError, zlib.error) as e:
        raise _bad(name, f"corrupt or truncated ({type(e).__name__}: {e})") from None


def _bad(name: str, why: str) -> FileFormatError:
    return FileFormatError(f"{name!r} is not a readable tile_lab trace: {why}",
                           hint="save traces with trace.save(path); load_trace reads "
                                f"format {FORMAT!r} version {FORMAT_VERSION}")


def _read(name: str, zf: zipfile.ZipFile, max_bytes: int
          ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    infos = {i.filename: i for i in zf.infolist()}
    unknown = sorted(set(infos) - {f"{m}.npy" for m in _MEMBERS})
    if unknown:
        raise _bad(name, f"unknown member(s) {', '.join(map(repr, unknown[:5]))}")
    missing = [m for m in _MEMBERS[:-1] if f"{m}.npy" not in infos]
    if missing:
        raise _bad(name, f"missing member(s) {', '.join(missing)}")
    total = sum(i.file_size for i in infos.values())
    if total > max_bytes:
        raise _bad(name, f"its arrays would take {total:,} bytes uncompressed, over the "
                         f"{max_bytes:,}-byte limit (load_trace(..., max_bytes=N) raises it)")
    raw = _member(name, zf, infos["header.npy"], np.uint8, None, _MAX_HEADER)
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(name, f"its header is not UTF-8 JSON ({e})") from None
    _check_header(name, header, infos)
    counts = header["counts"]
    n, n_mma = counts["accesses"], counts["mma_calls"]
    shapes = {"access": (n, len(ACCESS_COLUMNS)), "tuple_len": (n, len(TUPLE_FIELDS)),
              "tuples": (counts["tuples"],), "flat_len": (n,), "flat": (counts["flat"],)}
    if n_mma is not None:
        shapes["mma"] = (n_mma, len(MMA_COLUMNS))
    arrays = {m: _member(name, zf, infos[f"{m}.npy"], np.int64, shape, max_bytes)
              for m, shape in shapes.items()}
    tuple_len, flat_len = arrays["tuple_len"], arrays["flat_len"]
    if (tuple_len < -1).any() or (flat_len < -1).any():
        raise _bad(name, "negative lengths")
    if int(tuple_len[tuple_len > 0].sum()) != counts["tuples"] or (
            int(flat_len[flat_len > 0].sum()) != counts["flat"]):
        raise _bad(name, "the tuple/index lengths do not add up to the arrays' sizes")
    n_strings = len(header["strings"])
    for member, columns, required, optional in (
            ("access", ACCESS_COLUMNS, ("kind", "op", "arg"), ("filename", "padding")),
            ("mma", MMA_COLUMNS, ("op", "dtype"), ("filename", "acc_dtype"))):
        if member not in arrays:
            continue
        for col in (*required, *optional):
            values = arrays[member][:, columns.index(col)]
            low = 0 if col in required else -1
            if values.size and (values.min() < low or values.max() >= n_strings):
                raise _bad(name, f"{member} column {col!r} indexes outside the string "
                                 f"table of {n_strings}")
    return header, arrays


def _member(name: str, zf: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: Any,
            shape: tuple[int, ...] | None, cap: int) -> np.ndarray:
    """One ``.npy`` member, its dtype and shape checked before its data is read."""
    if info.file_size > cap:
        raise _bad(name, f"{info.filename} declares {info.file_size:,} bytes, over the limit")
    with zf.open(info) as fp:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            got_shape, fortran, got_dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            got_shape, fortran, got_dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise _bad(name, f"{info.filename}: unsupported .npy version {version}")
        want = np.dtype(dtype).newbyteorder("<")
        if got_dtype != want:
            raise _bad(name, f"{info.filename} holds {got_dtype}, expected {want}")
        if fortran or (shape is not None and tuple(got_shape) != shape) or (
                shape is None and len(got_shape) != 1):
            raise _bad(name, f"{info.filename} has shape {tuple(got_shape)}, the header "
                             f"declares {shape}")
        nbytes = int(np.prod(got_shape, dtype=np.int64)) * got_dtype.itemsize
        if nbytes > cap:
            raise _bad(name, f"{info.filename} would take {nbytes:,} bytes, over the limit")
        data = fp.read(nbytes + 1)
    if len(data) != nbytes:
        raise _bad(name, f"{info.filename} holds {len(data):,} bytes of data, its header "
                         f"declares {nbytes:,}")
    return np.frombuffer(data, dtype=got_dtype).reshape(got_shape).astype(dtype)


def _check_header(name: str, h: Any, infos: dict[str, zipfile.ZipInfo]) -> None:
    """Every header field: present, known, of the right type (nothing else is trusted)."""
    if not isinstance(h, dict):
        raise _bad(name, "its header is not a JSON object")
    if h.get("format") != FORMAT:
        raise _bad(name, f"its header names format {h.get('format')!r}, not {FORMAT!r}")
    version = h.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad(name, f"its format version {version!r} is not a number")
    if version > FORMAT_VERSION:
        raise FileFormatError(
            f"{name!r} is a tile_lab trace of format version {version}, written by a newer "
            f"tile_lab; this tile_lab reads version {FORMAT_VERSION}",
            hint="upgrade tile_lab (pip install -U tile_lab) to read it")
    if version < 1:
        raise _bad(name, f"format version {version} does not exist")
    unknown = sorted(set(h) - _HEADER_KEYS)
    if unknown:
        raise _bad(name, f"unknown header field(s) {', '.join(map(repr, unknown[:5]))}")
    missing = sorted(_HEADER_KEYS - set(h))
    if missing:
        raise _bad(name, f"missing header field(s) {', '.join(missing)}")
    _expect(name, "kernel", h["kernel"], str)
    _expect(name, "source", h["source"], str)
    _expect(name, "filename", h["filename"], str)
    _expect(name, "first_line", h["first_line"], int)
    _expect(name, "scalars", h["scalars"], dict)
    _int_list(name, "grid", h["grid"], 3)
    if not isinstance(h["arrays"], list):
        raise _bad(name, "'arrays' is not a list")
    for a in h["arrays"]:
        if not isinstance(a, dict) or set(a) != {"name", "shape", "dtype"}:
            raise _bad(name, "an 'arrays' entry is not {name, shape, dtype}")
        _expect(name, "arrays[].name", a["name"], str)
        _expect(name, "arrays[].dtype", a["dtype"], str)
        _int_list(name, "arrays[].shape", a["shape"], None)
    if h["blocks_run"] is not None:
        if not isinstance(h["blocks_run"], list):
            raise _bad(name, "'blocks_run' is not a list")
        for b in h["blocks_run"]:
            _int_list(name, "blocks_run[]", b, 3)
    if not isinstance(h["undetermined"], list):
        raise _bad(name, "'undetermined' is not a list")
    for u in h["undetermined"]:
        if not isinstance(u, dict) or set(u) != _UNDETERMINED_KEYS:
            raise _bad(name, "an 'undetermined' entry has unknown or missing fields")
        for key in ("op", "arg", "filename", "load_arg", "load_op"):
            _expect(name, f"undetermined[].{key}", u[key], str)
        for key in ("line", "load_line", "elements"):
            _expect(name, f"undetermined[].{key}", u[key], int)
        if u["mix_line"] is not None:
            _expect(name, "undetermined[].mix_line", u["mix_line"], int)
        if u["mix_op"] is not None:
            _expect(name, "undetermined[].mix_op", u["mix_op"], str)
        _int_list(name, "undetermined[].block", u["block"], 3)
        _int_list(name, "undetermined[].box_start", u["box_start"], None, signed=True)
        _int_list(name, "undetermined[].box_stop", u["box_stop"], None, signed=True)
    strings = h["strings"]
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        raise _bad(name, "'strings' is not a list of strings")
    counts = h["counts"]
    if not isinstance(counts, dict) or set(counts) != {"accesses", "tuples", "flat",
                                                       "mma_calls"}:
        raise _bad(name, "'counts' is not {accesses, tuples, flat, mma_calls}")
    for key in ("accesses", "tuples", "flat"):
        _expect(name, f"counts.{key}", counts[key], int)
        if counts[key] < 0:
            raise _bad(name, f"counts.{key} is negative")
    if counts["mma_calls"] is not None:
        _expect(name, "counts.mma_calls", counts["mma_calls"], int)
        if counts["mma_calls"] < 0 or "mma.npy" not in infos:
            raise _bad(name, "counts.mma_calls does not match the mma member")
    elif "mma.npy" in infos:
        raise _bad(name, "an mma member without counts.mma_calls")


def _expect(name: str, field: str, value: Any, kind: type) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _bad(name, f"header field {field!r} is not a {kind.__name__}")


def _int_list(name: str, field: str, value: Any, length: int | None, *,
              signed: bool = False) -> None:
    ok = isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and (signed or v >= 0) for v in value)
    if not ok or (length is not None and len(value) != length):
        want = f"{length} " if length is not None else ""
        sign = "" if signed else "non-negative "
        raise _bad(name, f"header field {field!r} is not a list of {want}{sign}ints")
