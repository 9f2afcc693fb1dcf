"""torch's float32 transcendentals answering as CUDA's, while the CPU plays the device.

A suite written for a GPU compares a cuTile kernel's ``ct.sin(x)`` with ``torch.sin(x)`` on
CUDA, bit for bit. Both run CUDA's float32 algorithms there (libdevice's ``__nv_sinf`` and
its kin), which differ from the correctly rounded result, and from torch's CPU kernels, by an
ulp on a few percent of inputs. The emulator replays CUDA's algorithms
(:mod:`tile_lab.emulator.device_math`); so that the reference side matches as it would on the
GPU, :func:`device_result` answers these torch calls with the same algorithms:

``sin cos tan sinh cosh tanh exp exp2 log log2 rsqrt``, and ``sqrt`` (correctly rounded on
CUDA; torch's AVX-512 CPU kernel is not), as ``torch.<name>(x)``,
``torch.<name>(x, out=y)``, ``x.<name>()`` and ``x.<name>_()``, for ``x`` a float32 tensor
or an integer or bool one (torch computes those in float32, its default dtype).

Scope: only inside :func:`tile_lab.testing.torch_cpu.cuda_on_cpu` (the plugin on a machine
without CUDA), where every tensor is a CPU tensor standing for a CUDA one, so this applies to
all of them; tensors that need gradients, other dtypes (float16, bfloat16, float64) and
any other call form keep torch's CPU kernels.
"""

from __future__ import annotations

from typing import Any

import torch

from ..emulator import device_math

_NAMES = ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "exp2", "log", "log2", "rsqrt",
          "sqrt")


def _functions() -> dict[Any, tuple[str, bool]]:
    table: dict[Any, tuple[str, bool]] = {}
    for name in _NAMES:
        table[getattr(torch, name)] = (name, False)
        table[getattr(torch.Tensor, name)] = (name, False)
        table[getattr(torch.Tensor, name + "_")] = (name, True)
    return table


_FUNCTIONS = _functions()


def _computes_in_float32(x: torch.Tensor) -> bool:
    if x.dtype == torch.float32:
        return True
    return (not x.is_floating_point() and not x.is_complex()
            and torch.get_default_dtype() == torch.float32)


def device_result(func: Any, args: tuple, kwargs: dict) -> torch.Tensor | None:
    """CUDA's result of the torch call ``func(*args, **kwargs)`` when it is one of the float32
    transcendentals above, else None (torch's own kernel should answer)."""
    entry = _FUNCTIONS.get(func)
    if entry is None or len(args) != 1 or set(kwargs) - {"out"}:
        return None
    name, in_place = entry
    x, out = args[0], kwargs.get("out")
    if (not isinstance(x, torch.Tensor) or x.requires_grad or not _computes_in_float32(x)
            or (in_place and x.dtype != torch.float32)):
        return None  # (torch refuses an integer tensor's in-place sin_ itself)
    if out is not None and (not isinstance(out, torch.Tensor) or out.dtype != torch.float32):
        return None
    values = device_math.FUNCTIONS[name](x.detach().to(torch.float32).numpy())
    result = torch.from_numpy(values)
    if in_place:
        return x.copy_(result)
    if out is not None:
        out.resize_(result.shape)
        return out.copy_(result)
    return result
