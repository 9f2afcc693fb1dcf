"""Registers, shared memory, stack and instruction mix of a compiled kernel, read from its
cubin and SASS rows: the same reading for a Triton and a cuTile kernel, no GPU needed.

The register count and stack frame come from the cubin's ``.nv.info`` attributes (what
``cuobjdump --dump-resource-usage`` prints), static shared memory from the size of its
``.nv.shared.<kernel>`` section. Dynamic shared memory is a launch parameter, not in the
cubin: the caller adds it (Triton's compiler reports it in its metadata).
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..compile.stage_rows import Row, SassRow

__all__ = ["MIX_CLASSES", "Resources", "cubin_resources", "instruction_mix", "mix_class"]

_EIATTR_REGCOUNT = 0x2F
_EIATTR_FRAME_SIZE = 0x11
_EIFMT_SVAL = 0x04
_EIFMT_HVAL = 0x03


@dataclass(frozen=True)
class Resources:
    """Per-thread registers, shared memory per block (static + dynamic), stack frame bytes
    and spill instructions (local loads/stores) of one kernel."""

    registers: int | None
    shared_bytes: int
    frame_bytes: int | None
    spill_loads: int = 0
    spill_stores: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _sections(image: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (type, offset, size) of a 64-bit little-endian ELF."""
    if image[:4] != b"\x7fELF" or image[4] != 2:
        return {}
    shoff = struct.unpack_from("<Q", image, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQ", image, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx][4]
    out = {}
    for name_off, typ, _f, _a, off, size in hdrs:
        end = image.index(b"\0", strtab + name_off)
        out[image[strtab + name_off:end].decode("ascii", "replace")] = (typ, off, size)
    return out


def _symbol_index(image: bytes, secs: dict[str, tuple[int, int, int]], name: str) -> int | None:
    if ".symtab" not in secs or ".strtab" not in secs:
        return None
    _, off, size = secs[".symtab"]
    strtab = secs[".strtab"][1]
    for i in range(size // 24):
        st_name = struct.unpack_from("<I", image, off + 24 * i)[0]
        end = image.index(b"\0", strtab + st_name)
        if image[strtab + st_name:end].decode("ascii", "replace") == name:
            return i
    return None


def _attributes(data: bytes) -> Iterable[tuple[int, bytes]]:
    """(attribute, value bytes) of an ``.nv.info`` section."""
    i = 0
    while i + 4 <= len(data):
        fmt, attr, size = data[i], data[i + 1], struct.unpack_from("<H", data, i + 2)[0]
        if fmt == _EIFMT_SVAL:
            yield attr, data[i + 4:i + 4 + size]
            i += 4 + size
        else:  # NVAL / BVAL / HVAL: the two bytes are the value (or padding)
            if fmt == _EIFMT_HVAL:
                yield attr, data[i + 2:i + 4]
            i += 4


def _per_symbol(data: bytes, attr: int, sym: int | None) -> int | None:
    for a, value in _attributes(data):
        if a == attr and len(value) >= 8:
            idx, n = struct.unpack_from("<II", value)
            if sym is None or idx == sym:
                return n
    return None


def cubin_resources(cubin: bytes, kernel: str, *, dynamic_shared: int = 0,
                    sass_rows: Iterable[Row] = ()) -> Resources:
    """The resources of entry ``kernel`` in ``cubin`` (see the module docstring)."""
    image = bytes(cubin)
    secs = _sections(image)
    sym = _symbol_index(image, secs, kernel)
    regs = frame = None
    for name in (".nv.info", f".nv.info.{kernel}"):
        if name in secs:
            _, off, size = secs[name]
            data = image[off:off + size]
            regs = regs if regs is not None else _per_symbol(data, _EIATTR_REGCOUNT, sym)
            frame = frame if frame is not None else _per_symbol(data, _EIATTR_FRAME_SIZE, sym)
    static = secs.get(f".nv.shared.{kernel}", (0, 0, 0))[2]
    ops = Counter(r.opcode for r in sass_rows if isinstance(r, SassRow))
    return Resources(regs, static + dynamic_shared, frame, ops["LDL"], ops["STL"])


# Instruction classes, in the order tables show them. The first class whose opcode set
# holds an instruction's opcode (its name before the first ".") takes it.
MIX_CLASSES: tuple[tuple[str, frozenset[str]], ...] = (
    ("tensor core", frozenset({"HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "BGMMA", "DMMA",
                               "UTCHMMA", "UTCQMMA", "UTCIMMA", "WARPGROUP"})),
    ("TMA / bulk copy", frozenset({"UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UBLKCP",
                                   "UBLKRED", "UBLKPF", "UTMACCTL", "UTMACMDFLUSH"})),
    ("global memory", frozenset({"LDG", "STG", "LDGSTS", "LDGDEPBAR", "RED", "ATOMG", "ATOM",
                                 "REDG", "LD", "ST"})),
    ("shared memory", frozenset({"LDS", "STS", "LDSM", "STSM", "ATOMS", "REDS", "SYNCS"})),
    ("local (spill)", frozenset({"LDL", "STL"})),
    ("float math", frozenset({"FADD", "FMUL", "FFMA", "FMNMX", "FSETP", "FSEL", "FCHK", "MUFU",
                              "HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSETP2", "DADD", "DMUL",
                              "DFMA", "FSET", "FADD32I", "FMUL32I", "FFMA32I"})),
    ("conversion", frozenset({"F2F", "F2I", "I2F", "F2FP", "I2FP", "F2IP", "FRND"})),
    ("integer / address", frozenset({"IADD3", "IMAD", "IADD", "LOP3", "SHF", "ISETP", "LEA",
                                     "LEA.HI", "IMNMX", "VIADD", "VIMNMX", "SEL", "PRMT",
                                     "IABS", "FLO", "POPC", "SGXT", "BMSK", "IADD32I",
                                     "LOP32I", "ULEA", "UIADD3", "UIMAD", "ULOP3", "USHF",
                                     "UISETP", "USEL", "UFLO", "UPOPC", "ULOP", "USGXT",
                                     "UPRMT", "UIADD", "UBMSK"})),
    ("control / sync", frozenset({"BRA", "EXIT", "BAR", "BSSY", "BSYNC", "WARPSYNC", "RET",
                                  "CALL", "JMP", "BRX", "YIELD", "NOP", "MEMBAR", "DEPBAR",
                                  "ELECT", "ACQBULK", "FENCE", "CCTL", "ERRBAR", "BPT",
                                  "VOTE", "VOTEU", "SHFL", "REDUX", "MATCH", "PLOP3",
                                  "UPLOP3", "ENDCOLLECTIVE"})),
    ("moves / constants", frozenset({"MOV", "UMOV", "LDC", "ULDC", "S2R", "S2UR", "CS2R",
                                     "CS2UR", "R2UR", "P2R", "R2P", "SETCTAID"})),
)


def mix_class(opcode: str) -> str:
    base = opcode.split(".", 1)[0]
    for name, ops in MIX_CLASSES:
        if base in ops or opcode in ops:
            return name
    return "other"


def instruction_mix(rows: Iterable[Row]) -> dict[str, int]:
    """SASS instructions per class (:data:`MIX_CLASSES`, then "other"), classes with none
    left out; the order is the table's."""
    counts = Counter(mix_class(r.opcode) for r in rows
                     if isinstance(r, SassRow) and r.opcode is not None)
    order = [n for n, _ in MIX_CLASSES] + ["other"]
    return {n: counts[n] for n in order if counts[n]}
