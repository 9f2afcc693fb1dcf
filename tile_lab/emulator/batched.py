"""Many blocks in one NumPy operation, for kernels whose control flow does not depend on the
block.

A plain ``emulate`` of many blocks first tries to run the kernel ONCE for all blocks: the
kernel is rebuilt against a *batched* namespace in which ``ct.bid`` returns a
:class:`BatchTile` (the block ids of every block, a leading batch axis), ``ct.load`` gathers
every block's tile at once, arithmetic and ``ct.mma`` work on the batch axis, and ``ct.store``
is held back until the kernel finished. Anything outside that small, checked set gives up
before a single element is written (:class:`NotBatchable`), and the launch runs block by block
as always:

* an operation without a batched implementation receiving a batched value (or any operation
  with effects: atomics, prints, gathers); a batched value used by Python (``if``, ``range``,
  ``int()``): control flow that depends on the block;
* a tile entirely outside its array, a loaded tile not entirely inside it without an explicit
  ``padding_mode`` (its lanes past the end are undetermined: the block-by-block run taints
  them) or with ``check_bounds=False``, ``order=`` other than "C", a stored tile whose dtype
  differs from its array's (a loaded tile with a padding mode, and a stored tile, may reach
  past the array's end: the padding value is read there, and nothing is written);
* an array both loaded and stored (blocks could see each other's writes), or two stores
  writing one element (the block order would decide).

So the batched run computes exactly what the block-by-block run computes: every block reads
memory no block writes, and every element written is written once. Traces, the sanitizer,
``blocks=`` subsets and a step budget always run block by block.
"""

from __future__ import annotations

import functools
import threading
import types
import weakref
from typing import Any

import cuda.tile as ct
import numpy as np

from . import batched_memory as memory
from . import state
from .operands import const_shape
from .ops_memory import Array
from .registry import IMPLEMENTATIONS, is_operation
from .tile import _FAST_DTYPES, _FAST_UFUNCS, Tile, binary, compare

MIN_BLOCKS = 16  # fewer blocks gain nothing
# blocks run together in one pass, in grid order, a pass's stores written before the next
# pass: the temporaries of a 1024-element tile stay at 16 MiB (float32), so a launch of 10^8
# elements neither holds several copies of its data at once nor spends its time mapping and
# faulting in fresh pages for each temporary (a 131072-row softmax: 43 s of system time)
BLOCKS_PER_PASS = 4096
_NEVER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # pyfunc -> why not


class NotBatchable(Exception):
    """The kernel cannot run batched (``structural``: never, for any arguments)."""

    def __init__(self, why: str, structural: bool = True) -> None:
        super().__init__(why)
        self.structural = structural


class BatchTile(Tile):
    """One tile value in every block of the batch: ``_a`` has the batch axis first."""

    __slots__ = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape[1:]

    @property
    def ndim(self) -> int:
        return self._a.ndim - 1

    def _aligned(self, rank: int) -> Tile:
        a = self._a
        pad = rank - (a.ndim - 1)
        return Tile(a.reshape(a.shape[:1] + (1,) * pad + a.shape[1:]) if pad else a,
                    self._dtype)


def _align(x: Any, y: Any) -> tuple[Any, Any]:
    """Both operands with the batch axis in front and their tile axes right-aligned."""
    rank = max(_tile_rank(x), _tile_rank(y))
    return _aligned(x, rank), _aligned(y, rank)


def _tile_rank(v: Any) -> int:
    if isinstance(v, BatchTile):
        return v.ndim
    return v.ndim if isinstance(v, Tile) else 0


def _aligned(v: Any, rank: int) -> Any:
    if isinstance(v, BatchTile):
        return v._aligned(rank)
    if type(v) is Tile:
        a = v._a
        return Tile(np.asarray(a).reshape((1,) * (rank + 1 - np.ndim(a)) + np.shape(a)), v._dtype)
    if isinstance(v, (bool, int, float)):
        return v
    raise NotBatchable(f"an operand of type {type(v).__name__}")


def _batched(result: Any) -> BatchTile:
    if type(result) is not Tile:
        raise NotBatchable("an operation gave a non-tile value")
    return BatchTile(result._a, result._dtype)


class _Pending(BatchTile):
    """A batched ``+``, ``-`` or ``*`` of two tiles of one dtype whose storage is the compute
    dtype (what ``tile.binary`` does with one ufunc call), not computed yet: a store of it
    computes it straight into the array at commit (no temporary, no copy, as NumPy's own
    ``c = a + b`` does); any other use computes it on first reading ``_a``. Its operands are
    loads of arrays no block writes, or values already computed, so the result is the same
    whenever it is computed."""

    __slots__ = ("_shape", "_ufunc", "_value", "_x", "_y")

    def __init__(self, ufunc: np.ufunc, x: np.ndarray, y: np.ndarray, dtype: object,
                 shape: tuple[int, ...]) -> None:
        self._ufunc, self._x, self._y, self._shape = ufunc, x, y, shape
        self._value = None
        self._dtype = dtype

    @property
    def _a(self) -> np.ndarray:  # type: ignore[override]
        if self._value is None:
            self._value = self._ufunc(self._x, self._y)
        return self._value

    shape = property(lambda self: self._shape[1:])
    ndim = property(lambda self: len(self._shape) - 1)

    def write_into(self, out: np.ndarray) -> None:
        """Compute into ``out`` (of the result's shape and dtype)."""
        if self._value is not None:
            out[...] = self._value
        else:
            self._ufunc(self._x, self._y, out=out)


def _deferred(fn: str, x: Any, y: Any) -> Any:
    """``binary(fn, x, y)`` of two aligned operands, as a :class:`_Pending` when it is one
    ufunc call on same-dtype tiles; None otherwise."""
    if type(x) is not Tile or type(y) is not Tile or x._dtype is not y._dtype \
            or x._dtype not in _FAST_DTYPES or fn not in _FAST_UFUNCS:
        return None
    try:
        shape = np.broadcast_shapes(np.shape(x._a), np.shape(y._a))
    except ValueError:
        return None  # binary() reports it
    return _Pending(_FAST_UFUNCS[fn], x._a, y._a, x._dtype, shape)


def _binary(fn: str):
    def op(self, o):
        return _compute(fn, *_align(self, o))

    def rop(self, o):
        return _compute(fn, *_align(o, self))
    return op, rop


def _compute(fn: str, x: Any, y: Any) -> BatchTile:
    pending = _deferred(fn, x, y)
    return _batched(binary(fn, x, y)) if pending is None else pending


def _compare(fn: str):
    def op(self, o):
        x, y = _align(self, o)
        return _batched(compare(fn, x, y))
    return op


for _fn in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    _op, _rop = _binary(_fn)
    setattr(BatchTile, f"__{_fn}__", _op)
    setattr(BatchTile, f"__r{_fn}__", _rop)
for _fn in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(BatchTile, f"__{_fn}__", _compare(_fn))


def _refuse(name: str):
    def refused(self, *args, **kwargs):
        raise NotBatchable(f"{name} on a block-dependent value")
    return refused


for _name in ("__index__", "__int__", "__float__", "__bool__", "__getitem__", "__iter__",
              "__array__", "__invert__", "__matmul__", "__rmatmul__",
              "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
              "__lshift__", "__rlshift__", "__rshift__", "__rrshift__", "__divmod__",
              "__rdivmod__", "__format__", "__str__", "numpy", "item", "extract", "insert",
              "reshape", "permute", "transpose"):
    setattr(BatchTile, _name, _refuse(_name))
BatchTile.__pos__ = lambda self: self  # type: ignore[method-assign]
BatchTile.__neg__ = lambda self: _batched(-Tile(self._a, self._dtype))  # type: ignore
BatchTile.__abs__ = lambda self: _batched(abs(Tile(self._a, self._dtype)))  # type: ignore
BatchTile.astype = lambda self, dtype, *, rounding_mode=None: _batched(  # type: ignore
    Tile(self._a, self._dtype).astype(dtype, rounding_mode=rounding_mode))


# ---- the batched operations ------------------------------------------------------------------

class _Run:
    """One batched launch: the blocks, what was loaded, the stores held back."""

    def __init__(self, blocks: np.ndarray) -> None:
        self.blocks = blocks  # (B, 3) int64 block ids, x fastest
        self.loaded: set[int] = set()
        self.stored: set[int] = set()
        self.stores: list[tuple[Array, list[Any], tuple[int, ...], np.ndarray]] = []

    def bid(self, axis: Any) -> BatchTile:
        if type(axis) is not int or not 0 <= axis <= 2:
            raise NotBatchable("ct.bid with a non-constant axis")
        return BatchTile(self.blocks[:, axis].astype(np.int32), ct.int32)

    def starts(self, arr: Array, index: Any, box: tuple[int, ...], ragged: bool = False
               ) -> tuple[list[Any], bool]:
        """Per axis: the first element of every block's tile (an int or a (B,) array), and
        whether a tile reaches past the array's end. NotBatchable for a tile entirely outside
        the array (the block-by-block run warns of it), and, unless ``ragged`` (a load with
        an explicit padding mode, a store: their lanes outside are defined), for any tile
        not entirely inside."""
        if type(index) is not tuple or len(index) != len(box) or len(box) != arr._data.ndim:
            raise NotBatchable("an index that is not one int per axis")
        out, past_end = [], False
        for i, s, n in zip(index, box, arr._data.shape):
            if isinstance(i, BatchTile):
                if i.ndim or i._dtype not in (ct.int32, ct.int64):
                    raise NotBatchable("a tile index that is not an int")
                st = i._a.astype(np.int64) * s
                low, high = int(st.min()), int(st.max())
            elif type(i) is int or (type(i) is Tile and not i.ndim):
                low = high = st = int(i) * s
            else:
                raise NotBatchable("an index of another kind")
            if low < 0 or high >= n:
                raise NotBatchable("a tile outside its array", structural=False)
            if high + s > n:
                if not ragged:
                    raise NotBatchable("a tile not entirely inside its array", structural=False)
                past_end = True
            out.append(st)
        return out, past_end

    def load(self, array, /, index, shape, *, order="C", padding_mode=None, check_bounds=True,
             latency=None, allow_tma=None, memory_order=None, memory_scope=None):
        if memory_order is not None or memory_scope is not None or order != "C" \
                or type(array) is not Array:
            raise NotBatchable("ct.load with a memory order, scope or order")
        if id(array) in self.stored:
            raise NotBatchable("an array loaded after a store to it", structural=False)
        explicit = padding_mode is not None and padding_mode is not ct.PaddingMode.UNDETERMINED
        if not any(isinstance(i, BatchTile) for i in (index if type(index) is tuple else ())):
            from .ops_memory import load  # the same tile for every block

            self.loaded.add(id(array))
            return load(array, index, shape, allow_tma=allow_tma,
                        **({"padding_mode": padding_mode} if explicit else {}))
        box = const_shape(shape, "shape")
        starts, past_end = self.starts(array, index, box, ragged=explicit and check_bounds)
        self.loaded.add(id(array))
        n = len(self.blocks)
        if past_end:
            from .ops_memory import pad_value

            fill = np.asarray(pad_value(padding_mode, array), array._data.dtype)
            return BatchTile(memory.gather_ragged(array._data, starts, box, n, fill), array._dtype)
        return BatchTile(memory.gather(array._data, starts, box, n), array._dtype)

    def store(self, array, /, index, tile, *, order="C", check_bounds=True, latency=None,
              allow_tma=None, memory_order=None, memory_scope=None):
        if memory_order is not None or memory_scope is not None or order != "C" \
                or type(array) is not Array or not isinstance(tile, Tile):
            raise NotBatchable("ct.store with a memory order, scope, order or a non-tile")
        if id(array) in self.loaded:
            raise NotBatchable("an array both loaded and stored", structural=False)
        if tile._dtype is not array._dtype or tile.ndim != array._data.ndim:
            raise NotBatchable("a store that converts or broadcasts")
        box = tuple(tile.shape)
        starts, past_end = self.starts(array, index, box, ragged=check_bounds)
        values = tile if type(tile) is _Pending else \
            tile._a if isinstance(tile, BatchTile) else np.asarray(tile._a)[None]
        self.stored.add(id(array))
        self.stores.append((array, starts, box, values, past_end))

    def mma(self, x, y, /, acc, *, use_fast_acc=False):
        from .ops_math import mma

        n = len(self.blocks)
        parts = []
        for v in (x, y, acc):
            if not isinstance(v, Tile) or v.ndim != 2:
                raise NotBatchable("ct.mma of tiles that are not 2-d")
            a = v._a if isinstance(v, BatchTile) else np.broadcast_to(v._a, (n, *v.shape))
            parts.append(Tile(a, v._dtype))
        return _batched(mma(*parts, use_fast_acc=use_fast_acc))

    def commit(self) -> None:
        """Write the held-back stores, once no element is written twice."""
        by_array: dict[int, list] = {}
        for st in self.stores:
            by_array.setdefault(id(st[0]), []).append(st)
        n = len(self.blocks)
        for stores in by_array.values():
            boxes = {s[2] for s in stores}
            if len(boxes) != 1:
                raise NotBatchable("stores of different tile shapes to one array",
                                   structural=False)
            box = boxes.pop()
            array, starts = stores[0][0], stores[0][1]
            if len(stores) == 1 and not stores[0][4] \
                    and memory.consecutive_view(array._data, starts, box, n) is not None:
                continue  # one store, block i to tile i: no tile written twice
            if memory.written_twice(stores[0][0]._data.shape, box, [s[1] for s in stores], n):
                raise NotBatchable("an element written twice", structural=False)
        if len(self.stores) == 1:  # a pending value may be computed into its array
            array, starts, box, v, past_end = self.stores[0]
            _write(array._data, starts, box, v, n, past_end)
            return
        values = [v._a if type(v) is _Pending else v for *_, v, _ in self.stores]  # all first
        for (array, starts, box, _, past_end), v in zip(self.stores, values):
            _write(array._data, starts, box, v, n, past_end)



def _write(data: np.ndarray, starts: list[Any], box: tuple[int, ...], values: Any, n: int,
           past_end: bool) -> None:
    """One store of the pass into ``data``; a deferred ``a + b`` is computed straight into
    the array where the blocks' tiles follow one another."""
    if not past_end:
        view = memory.consecutive_view(data, starts, box, n)
        if view is not None:
            if type(values) is _Pending and values._shape == view.shape:
                values.write_into(view)
            else:
                view[...] = values._a if type(values) is _Pending else values
            return
    values = values._a if type(values) is _Pending else values
    if past_end:
        memory.scatter_ragged(data, starts, box, values, n)
    else:
        memory.scatter(data, starts, box, values, n)


# ---- the namespace and the run -------------------------------------------------------------

_PURE = frozenset({"full", "zeros", "ones", "num_tiles", "num_blocks", "static_eval",
                   "static_assert", "static_iter", "arange"})
# operations that act on each element alone: the batch axis is just one more axis to them
_ELEMENTWISE = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "cdiv", "minimum", "maximum",
    "greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "where",
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "floor", "ceil", "abs", "negative", "isnan"})
_REDUCTIONS = frozenset({"sum", "prod", "max", "min"})


_CURRENT = threading.local()  # .runs: the batched launches running on this thread


def _of_current_run(name: str):
    """``ct.<name>`` as the batched run now going on this thread does it."""
    def call(*args, **kwargs):
        return getattr(_CURRENT.runs[-1], name)(*args, **kwargs)
    call.__name__ = name
    return call


@functools.cache
def _namespace() -> types.ModuleType:
    """The batched ``cuda.tile``, built once: bid/load/store/mma go to the current run."""
    from .namespace import namespace

    normal = namespace()
    ns = types.ModuleType("cuda.tile", "cuda.tile as seen by the batched emulator")
    for name in dir(normal):
        if name.startswith("_"):
            continue
        value = getattr(normal, name)
        if name in ("bid", "load", "store", "mma"):
            value = _of_current_run(name)
        elif name in _PURE:
            value = _unbatched_only(name, value)
        elif name in _ELEMENTWISE:
            value = _elementwise(value)
        elif name in _REDUCTIONS:
            value = _reduction(name, value)
        elif name in IMPLEMENTATIONS or (name in ct.__all__ and is_operation(name)):
            value = _refused_op(name)
        setattr(ns, name, value)
    return ns


@functools.cache
def _builtin_overrides() -> dict[str, Any]:
    from .namespace import builtin_overrides

    return {name: _unbatched_only(name, fn) for name, fn in builtin_overrides().items()}


def _elementwise(fn):
    def call(*args, **kwargs):
        if not any(isinstance(a, BatchTile) for a in args):
            return _unbatched_only(fn.__name__, fn)(*args, **kwargs)
        if any(isinstance(v, BatchTile) for v in kwargs.values()):
            raise NotBatchable("a block-dependent keyword argument")
        rank = max(_tile_rank(a) for a in args)
        return _batched(fn(*(_aligned(a, rank) for a in args), **kwargs))
    return call


def _reduction(name: str, fn):
    def call(x, *args, **kwargs):
        if not isinstance(x, BatchTile):
            return _unbatched_only(name, fn)(x, *args, **kwargs)
        axis = args[0] if args else kwargs.pop("axis", None)
        if len(args) > 1 or any(isinstance(v, BatchTile) for v in kwargs.values()):
            raise NotBatchable(f"ct.{name} with more arguments")
        nd = x.ndim
        axes = tuple(range(nd)) if axis is None else axis
        axes = axes if isinstance(axes, tuple) else (axes,)
        if not all(type(a) is int and -nd <= a < nd for a in axes):
            raise NotBatchable(f"ct.{name} with an axis of another kind")
        shifted = tuple(a % nd + 1 for a in axes)
        return _batched(fn(Tile(x._a, x._dtype), shifted if isinstance(axis, tuple) or
                           axis is None else shifted[0], **kwargs))
    return call


def _refused_op(name: str):
    def refused(*args, **kwargs):
        raise NotBatchable(f"ct.{name} has no batched implementation")
    return refused


def _unbatched_only(name: str, fn):
    def call(*args, **kwargs):
        if any(isinstance(a, BatchTile) for a in (*args, *kwargs.values())):
            raise NotBatchable(f"ct.{name} of a block-dependent value")
        return fn(*args, **kwargs)
    return call


def try_run(pyfunc: Any, args: list[Any], run: state.RunState,
            grid: tuple[int, int, int]) -> bool:
    """Run every block of ``grid`` in one batched call; False (nothing written) when the
    kernel cannot run batched."""
    gx, gy, gz = grid
    if gx * gy * gz < MIN_BLOCKS or pyfunc in _NEVER:
        return False
    from .namespace import Rebuilder

    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    blocks = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)  # x fastest
    rebuilder = Rebuilder(_namespace(), _builtin_overrides())
    fn = rebuilder.function(pyfunc)
    run.user_codes.update(rebuilder.user_codes)  # the same code objects: where errors point
    state.push(run)
    runs = _CURRENT.__dict__.setdefault("runs", [])
    runs.append(None)
    written = 0  # blocks whose stores reached the arrays
    try:
        with np.errstate(all="ignore"):
            for first in range(0, len(blocks), BLOCKS_PER_PASS):
                batch = _Run(blocks[first:first + BLOCKS_PER_PASS])
                runs[-1] = batch
                fn(*args)
                batch.commit()
                written = first + len(batch.blocks)
    except KeyboardInterrupt as exc:
        from .blocks import EmulationInterrupted

        where = state.location_in_traceback(exc, rebuilder.user_codes)
        at = f" at {where.filename}:{where.line}" if where is not None else ""
        done = (f"the first {written:,} blocks' writes (in grid order) reached the arrays"
                if written else "no block's writes reached the arrays")
        raise EmulationInterrupted(
            f"interrupted while running all {len(blocks)} blocks together (batched){at}; "
            f"{done}", (0, 0, 0), 0, len(blocks), where) from None
    except NotBatchable as exc:
        # passes already written hold what the block-by-block run writes there too: no
        # block reads an array a block writes (each pass checks), and it runs them in the
        # same order
        if exc.structural:
            _NEVER[pyfunc] = str(exc)
        return False
    except Exception:  # the block-by-block run reports it, at its block and line
        return False
    finally:
        runs.pop()
        state.pop()
    return True
