"""Keep cuTile's compiler from importing torch when nothing in the process uses torch.

cuda-tile 1.7's C extension builds its table of foreign dtypes (numpy's, ml_dtypes', torch's)
on the first question asked of it (``foreign_dtype_object_to_native``, ``classify_constant``,
``foreign_dtype_object_register``), and that first question imports torch wherever torch is
installed: ``cuda.tile._ir.core_ops`` asks at import time, and the front end for every constant.
torch's import is 2.5-3 s of CPU, most of a first compile on a laptop, paid by every Jupyter
kernel, every worker of a parallel compile and every test subprocess that compiles, whether or
not a torch object is ever near a kernel (and a Ctrl-C landing in that C-level import was lost).

A torch dtype cannot exist before torch is imported, so until ``torch`` is in ``sys.modules``
the answers are those for numpy's and ml_dtypes' dtypes, given here from the same pairs the C
table holds (matched by identity, as the C table matches: a dtype with metadata or a
byte-swapped one is not in it), and ``classify_constant``'s rules, in its order. From the
moment torch is imported (by the user or anything else), or a dtype is registered by hand,
every question goes to the C extension. ``tests/test_cutile_compat.py`` compares each answer
with the C functions' own over every numpy and ml_dtypes type and values of every other kind.
"""

from __future__ import annotations

import enum
import sys
from typing import Any

# numpy scalar types whose dtypes cuTile 1.7's table holds (each named as its cuTile dtype)
_NUMPY_NAMES = ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64")
_ML_DTYPES_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")

_state: dict[str, Any] = {}


def _table() -> dict[int, tuple[Any, Any]]:
    """id(foreign object) -> (the object, its cuTile dtype): the scalar types and their dtypes."""
    table = _state.get("table")
    if table is None:
        import cuda.tile as ct
        import numpy as np

        pairs = [(getattr(np, n), getattr(ct, n)) for n in _NUMPY_NAMES]
        try:
            import ml_dtypes
        except ImportError:
            pass
        else:
            pairs += [(getattr(ml_dtypes, n), getattr(ct, n)) for n in _ML_DTYPES_NAMES
                      if hasattr(ml_dtypes, n)]
        table = {}
        for scalar_type, native in pairs:
            for obj in (scalar_type, np.dtype(scalar_type)):
                table[id(obj)] = (obj, native)
        _state["table"] = table
    return table


def _torch_may_be_asked() -> bool:
    """From now on every question goes to the C extension: torch is imported (its dtypes and
    tensors can exist), or a dtype was registered by hand (only the C table holds it)."""
    return "torch" in sys.modules or bool(_state.get("registered"))


def _numpy_lookup(obj: Any) -> Any:
    entry = _table().get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def _classify(obj: Any, kernel_arg: bool, kinds: Any, native_dtype_type: type) -> Any:
    """cuTile 1.7's classify_constant for a process without torch, in its order: bool, int
    (an IntEnum too), float (numpy's float64 too); for a kernel argument nothing more; None,
    a str (exactly), an Enum member, a cuTile dtype, a foreign dtype."""
    if isinstance(obj, bool):
        return kinds.Bool
    if isinstance(obj, int):
        return kinds.Int
    if isinstance(obj, float):
        return kinds.Float
    if kernel_arg:
        return None
    if obj is None:
        return kinds.None_
    if type(obj) is str:
        return kinds.String
    if isinstance(obj, enum.Enum):
        return kinds.Enum
    if isinstance(obj, native_dtype_type):
        return kinds.NativeDType
    if _numpy_lookup(obj) is not None:
        return kinds.ForeignDType
    return None


def _deferring_functions(cext: Any) -> dict[str, Any]:
    """The replacements for the C functions that build the foreign-dtype table, by name."""
    c_lookup = cext.foreign_dtype_object_to_native
    c_classify = cext.classify_constant
    c_register = cext.foreign_dtype_object_register

    def foreign_dtype_object_to_native(obj: Any) -> Any:
        return c_lookup(obj) if _torch_may_be_asked() else _numpy_lookup(obj)

    def classify_constant(obj: Any, kernel_arg: bool) -> Any:
        if _torch_may_be_asked():
            return c_classify(obj, kernel_arg)
        return _classify(obj, kernel_arg, cext.ConstantKind, cext.DType)

    def foreign_dtype_object_register(foreign: Any, native: Any) -> Any:
        _state["registered"] = True
        return c_register(foreign, native)

    replacements = {"foreign_dtype_object_to_native": (c_lookup, foreign_dtype_object_to_native),
                    "classify_constant": (c_classify, classify_constant),
                    "foreign_dtype_object_register": (c_register, foreign_dtype_object_register)}
    for original, replacement in replacements.values():
        replacement.__doc__ = original.__doc__
    return replacements


def defer_torch_import() -> None:
    """Install the deferring functions in cuTile's C extension module and in every cuTile
    module that took one of them by name before (idempotent; nothing when cuTile is
    missing)."""
    if _state.get("installed"):
        return
    try:
        import cuda.tile._cext as cext
    except ImportError:
        return
    replacements = _deferring_functions(cext)
    _state["c_functions"] = {name: pair[0] for name, pair in replacements.items()}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "cuda.tile" or
                                  module_name.startswith("cuda.tile.")):
            continue
        for name, (original, replacement) in replacements.items():
            if getattr(module, name, None) is original:
                setattr(module, name, replacement)
    _state["installed"] = True


def c_functions() -> dict[str, Any]:
    """cuTile's own C functions that ``defer_torch_import`` replaced, by name (for tests)."""
    return dict(_state.get("c_functions", {}))


def answer_without_torch(name: str, *args: Any) -> Any:
    """What the replacement answers while torch is not imported (for tests that compare it
    with the C function in a process where torch is)."""
    import cuda.tile._cext as cext

    if name == "foreign_dtype_object_to_native":
        return _numpy_lookup(*args)
    return _classify(*args, cext.ConstantKind, cext.DType)
