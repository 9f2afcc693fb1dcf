"""Run a ``@triton.jit`` kernel on the CPU with Triton's interpreter, leaving Triton as it was.

Triton's interpreter (what ``TRITON_INTERPRET=1`` selects) runs a kernel block by block on
NumPy data behind torch CPU tensors. To do it, it rebinds ``triton.language``'s builtins
process-wide and copies its helpers into the kernel's globals (its ``_patch_lang``), after
which ``triton.compile`` in the same process fails. :func:`interpreting` takes a snapshot of
everything it patches and puts it back afterwards, so a notebook can compile a kernel, run it
on the CPU, and compile again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import EmulationError
from ._require import require_torch, require_triton
from .kernel import jit_function, param_names

__all__ = ["interpreting", "run_triton_cpu"]


def _patched_objects(kernel: Any) -> list[Any]:
    import triton.language as tl

    return [tl, tl.core, tl.math, tl.standard, tl.tensor, tl.core.tensor, tl.dtype,
            tl.core.tensor_descriptor_base]


def _interpret_jit_helpers(objs: list[Any], fn_globals: dict[str, Any], kernel: Any,
                           interpreted: Any) -> dict[str, Any]:
    """Swap every ``@triton.jit`` helper the kernel may call (``tl.max``, ``tl.softmax``, the
    user's own) for its interpreted version, as ``TRITON_INTERPRET=1`` at import would have
    made it; returns the user globals replaced (the modules are restored from their snapshot)."""
    from .kernel import is_triton_kernel

    for mod in objs:
        if isinstance(mod, type):
            continue
        for name, value in list(vars(mod).items()):
            if is_triton_kernel(value):
                setattr(mod, name, interpreted(value.fn))
    replaced = {k: v for k, v in fn_globals.items() if is_triton_kernel(v) and v is not kernel}
    for k, v in replaced.items():
        fn_globals[k] = interpreted(v.fn)
    return replaced


@contextlib.contextmanager
def interpreting(kernel: Any) -> Iterator[Any]:
    """Triton's interpreted version of ``kernel``; on exit ``triton.language`` and the
    kernel's globals are as they were before."""
    from triton.runtime.interpreter import InterpretedFunction

    # Triton imports Gluon lazily on a first launch, and Gluon checks at import that
    # tl.standard's helpers are JITFunctions: import it before they are swapped below
    with contextlib.suppress(ImportError):
        from triton.experimental.gluon.nvidia import hopper  # noqa: F401
    objs = list({id(o): o for o in _patched_objects(kernel)}.values())
    saved = [dict(vars(o)) for o in objs]
    fn_globals = kernel.fn.__globals__
    global_keys = set(fn_globals)
    replaced: dict[str, Any] = {}
    import triton.runtime.interpreter as interp_mod
    patch_tensor = interp_mod._patch_lang_tensor
    try:
        replaced = _interpret_jit_helpers(objs, fn_globals, kernel, InterpretedFunction)
        interp_mod._patch_lang_tensor = _index_fix(patch_tensor)
        yield InterpretedFunction(kernel.fn)
    finally:
        interp_mod._patch_lang_tensor = patch_tensor
        fn_globals.update(replaced)
        for obj, before in zip(objs, saved):
            for name in [k for k in vars(obj) if k not in before]:
                delattr(obj, name)
            for name, value in before.items():
                if vars(obj).get(name, _MISSING) is not value:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(obj, name, value)
        for name in [k for k in fn_globals if k not in global_keys]:
            del fn_globals[name]  # the interpreter's helpers, copied into the user's namespace
        # its cached rewrites (the kernel's and tl.max's, ...) refer to the helpers just removed
        # from those globals: rewrite them all again next time
        InterpretedFunction.rewritten_fn.clear()


_MISSING = object()


def _index_fix(patch_tensor: Any) -> Any:
    """Triton 3.5's interpreter turns a scalar into an int with ``int(array)``, which NumPy
    >= 2.4 refuses for its one-element 1-D arrays (``range(0, K, BK)`` over a runtime ``K``
    fails); ``.item()`` reads the same value on every NumPy. (Triton 3.9 squeezes the array
    itself, and passes the patch a scope that undoes it, hence ``*scope``.)"""
    def patched(tensor: Any, *scope: Any) -> None:
        patch_tensor(tensor, *scope)
        tensor.__index__ = lambda self: int(self.handle.data.item())

    return patched


def _to_torch(torch: Any, value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)  # shares memory: the kernel writes into the array
    return value


def run_triton_cpu(kernel: Any, grid: Sequence[int], args: Sequence[Any]) -> None:
    """Run ``kernel[grid](*args)`` on the CPU through Triton's interpreter. NumPy arrays
    become torch CPU tensors sharing their memory, so outputs land in the arrays passed."""
    require_triton("running a Triton kernel on the CPU")
    torch = require_torch("running a Triton kernel on the CPU")
    kernel = jit_function(kernel, "the kernel")
    names = param_names(kernel)
    if len(args) != len(names):
        raise EmulationError(f"{kernel.__name__} takes {len(names)} arguments "
                             f"({', '.join(names)}), got {len(args)}")
    targs = [_to_torch(torch, a) for a in args]
    with interpreting(kernel) as interp:
        try:
            interp[tuple(int(g) for g in grid)](*targs)
        except Exception as err:  # InterpreterError wraps the kernel's own exception
            cause = err.__cause__ or err
            raise EmulationError(f"Triton's interpreter failed running {kernel.__name__}: "
                                 f"{type(cause).__name__}: {cause}") from None
