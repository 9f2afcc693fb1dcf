"""``ct.launch``'s compile step as something may replace it: a test patching
``ct.kernel._compile`` (to compile for another arch) changes what a launch compiles, and the
emulator's front-end gate follows it.

Part of :mod:`tile_lab._cutile_compat`, the one place that touches cuTile's private API.
"""

from __future__ import annotations

from typing import Any


def overridden_compile(kernel: Any) -> Any:
    """The kernel's ``_compile`` (what ``ct.launch`` calls on a cache miss, with the
    signature, a TileContext and the target's compute capability) when something replaced
    cuTile's own, e.g. a test patching ``ct.kernel._compile`` to target another arch; None
    when it is cuTile's."""
    compile_method = getattr(type(kernel), "_compile", None)
    if compile_method is None or (
            getattr(compile_method, "__module__", None) == "cuda.tile._execution"
            and getattr(compile_method, "__qualname__", None) == "kernel._compile"):
        return None
    return kernel._compile


def compile_with_override(compile_method: Any, signature: Any) -> bool:
    """Call a replaced ``kernel._compile`` as ``ct.launch`` does (cuTile's default context,
    the compute capability cuTile's device query answers): its errors are the kernel's
    verdict. False, without calling it, where no device answers that query."""
    from cuda.tile._cext import default_tile_context, get_compute_capability

    try:
        capability = get_compute_capability()
    except Exception:  # no driver (and no emulated device queries): cuTile could not launch
        return False
    compile_method(signature, default_tile_context, capability)
    return True
