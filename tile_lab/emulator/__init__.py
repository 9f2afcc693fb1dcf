"""tile_lab's CPU emulator of cuTile Python: run any ``@ct.kernel`` block by block with
NumPy, and record every memory access into a :class:`tile_lab.tracing.trace.Trace`.

``emulate_kernel(kernel, grid, args)`` (under ``tile_lab.emulate``) updates array arguments
in place (CuPy/torch/DLPack arrays are copied to the host and back); ``trace_kernel(kernel,
grid, args)`` (under ``tile_lab.trace``) does the same and returns the access trace, including
the shapes of every ``mma``/``matmul`` (for FLOPs); ``trace_kernel(..., blocks=[...])`` runs
only some blocks (to sample a GPU-sized launch); ``with emulation():`` (``program.py``) makes
``ct.launch`` itself run on the emulator, so whole programs run on the CPU (also
``TILE_LAB_EMULATE=1`` and ``python -m tile_lab.emulator script.py``).

How it runs: the kernel's Python function is rebuilt against an emulated ``cuda.tile``
namespace (``namespace.py``; the real module is never patched), then called once per
block, x fastest (``runtime.py``, ``blocks.py``) — or, when its control flow does not depend on
the block, once for all blocks with a batch axis (``batched.py``, the same result bit for
bit). cuTile's front end checks each kernel first (``gate.py``; its acceptances are cached on
disk, ``verdict_cache.py``). Tiles are NumPy arrays tagged with their cuTile dtype
(``tile.py``), so all per-tile work is vectorised. Every public cuTile operation is either
emulated (registered with ``@emulates(ct.xxx)``, whose signature is checked against
cuTile's stub at import) or raises ``EmulatorUnsupported`` naming it.

Layers, top to bottom; a module imports only from the rows below its own (no import circle,
checked by ``tests/test_package_shape.py``)::

    program, runtime           emulation(), emulate_kernel()/trace_kernel(): arguments in
    batched, blocks, gate,     all blocks at once / one by one; cuTile's front-end check
    probe                      (over verdict_cache); a large launch's time estimate
    stubs                      cuTile device functions reached through objects, routed here
    namespace                  the emulated cuda.tile, built from the registry
    ops_foreign                Array.foreign_pointer / Array.from_foreign: strided views
                               over an argument's memory
    ops_raw                    Array.get_raw_memory(): access by element offset
    ops_atomic, ops_math,      the operations, each registered where it is defined together
    ops_reduce, ops_shape,     with the rule by which undetermined lanes move through it:
    ops_misc                   @emulates(ct.sum, taint=poison.REDUCTION)
    ops_gather, ops_memory     arrays, tiled views, load/store, gather/scatter (gather over
                               memory)
    poison, recording          undetermined lanes: where they come from (padding), where they
                               may not go (stores), the rules the ops carry; each access
                               recorded into the trace
    operands                   compile-time constant arguments: ints, tile shapes, axes
    tile, rmw                  Tile and Poisoned (a tile with tainted lanes) and the
                               elementwise core (+, <, & ...), which carries taint lane by
                               lane; t.reshape(...) etc. call their op through the registry;
                               the read-modify-write the atomics share
    registry, dtypes, state,   the op table @emulates fills, dtype tables and promotion,
    rounding                   the launch running now, directed rounding and flush-to-zero

Where the emulator has to choose (the device result is unspecified):

* ``PaddingMode.UNDETERMINED`` pads with poison (NaN, or bytes 0xDB for integers; ``padding=
  "zero"`` for zeros; ``"hardware"``, program mode's default, zeros where the load can be a
  TMA copy) whose taint is tracked to every store (``poison.py``); a tile entirely
  outside its array (undefined behaviour) is padded / discarded like a partial one and
  recorded for the sanitizer.
* Blocks run one after another, and the lanes of one atomic in lane order. A spin on
  ``atomic_cas`` that fails 1000 times in a row on the same element can never succeed
  in that order and raises ``EmulationError``.
* Narrow floats (float16, bfloat16, float8) compute in float32 and round once; float32
  transcendentals (sin, exp, ...) compute in float64 and round once. ``rounding_mode``
  RZ/RM/RP/RA and ``flush_to_zero`` are applied on ``astype``, ``+ - * /`` and ``sqrt``
  (``rounding.py``); on reductions they are accepted and ignored. ``mma`` accumulates in
  the accumulator's precision; float32 inputs are not rounded to tf32 (only
  ``astype(ct.tfloat32)`` rounds).
* Out-of-bounds lanes of ``check_bounds=False`` gathers/scatters/atomics, and raw-memory
  offsets (``Array.get_raw_memory``) past the argument, are skipped (and recorded as
  ``unchecked``) instead of touching foreign memory.
* ``Array.from_foreign(array.foreign_pointer, shape, strides)`` views the argument's memory
  from that array's base element on (``ops_foreign.py``); a view reaching past it, and
  foreign calls (``cuda.tile_preview``: NVSHMEM, other device libraries), raise
  ``EmulatorUnsupported`` naming them. A load with ``check_bounds=False`` and a
  ``padding_mode`` is refused as tileiras refuses it; ``raise ct.static_exception(...)``,
  ``static_assert`` and ``ensure_constant`` raise cuTile's classes even where cuTile's front
  end did not check the kernel first.
* cuTile device functions reached through objects (a stub kept in a dict, a user class's
  method, ``ct.TiledView.load(view, i)``) run emulated: cuTile's dispatch routes them to
  ``stubs.py``; nothing reaches cuTile's host-side stub.
"""

from __future__ import annotations

from .blocks import limits, set_limits
from .program import emulation
from .runtime import emulate_kernel, trace_kernel

__all__ = ["emulate_kernel", "emulation", "limits", "set_limits", "trace_kernel"]
