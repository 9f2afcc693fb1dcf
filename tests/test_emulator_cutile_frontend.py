"""Every kernel of the emulator's differential tests is valid cuTile: it goes through
cuTile's own front end (typing, constant folding, ``static_assert``) for sm_90 on this
CPU. This keeps the ``gpu`` variants launchable, and cross-checks the emulator's typing:
the ``static_assert``s on dtypes in those kernels are evaluated by cuTile's compiler here.
"""

from __future__ import annotations

import numpy as np
import pytest
import test_emulator_atomic
import test_emulator_kernels
import test_emulator_math
import test_emulator_memory
import test_emulator_reduce
import test_emulator_runtime
import test_emulator_shape
from test_emulator_harness import Case

from tile_lab import _cutile_compat as compat
from tile_lab.compile.signature import build_signature

MODULES = (test_emulator_math, test_emulator_memory, test_emulator_shape, test_emulator_reduce,
           test_emulator_atomic, test_emulator_kernels)


def _cases() -> list[Case]:
    seen: dict[str, Case] = {}
    for module in MODULES:
        for name in dir(module):
            value = getattr(module, name)
            if name.isupper() and isinstance(value, list):
                for case in value:
                    if isinstance(case, Case):
                        seen.setdefault(f"{module.__name__}:{case.name}", case)
    return list(seen.values())


EXTRA = [  # kernels whose dtype static_asserts are checked by the compiler
    (test_emulator_math.promotion, lambda: (np.zeros(4, np.float32),)),
    (test_emulator_shape.scalar_bitcast, lambda: (np.zeros(2, np.uint32),)),
    (test_emulator_atomic.ticket, lambda: (np.zeros(1, np.int32), np.zeros(6, np.int32))),
    (test_emulator_runtime.widths, lambda: (np.zeros(1, np.int64), 2, 2**40, True, 0.5)),
    (test_emulator_runtime.foreign_dtypes,
     lambda: (np.zeros(8, np.float16), np.zeros(8, np.float32))),
    (test_emulator_runtime.uses_helpers,
     lambda: (np.zeros(8, np.float32), np.zeros(8, np.float32))),
    (test_emulator_runtime.printing, lambda: (np.zeros(4, np.int64),)),
    (test_emulator_runtime.tuple_params,
     lambda: ((np.ones(4, np.float32), np.ones(4, np.float32)), (3, 5), np.zeros(4, np.float32))),
    (test_emulator_runtime.static_length,
     lambda: (np.zeros(8, np.int32), np.zeros(8, np.int32))),
]


def _front_end(kernel, args) -> None:
    signature = build_signature(kernel, list(args)).kernel_signature
    compat.compile_frontend(kernel, signature, "sm_90", compat.compiler_options(kernel, {}))


@pytest.mark.slow
@pytest.mark.parametrize("case", _cases(), ids=str)
def test_case_kernel_compiles_with_cutile(case):
    _front_end(case.kernel, case.make_args(np.random.default_rng(case.seed)))


@pytest.mark.slow
@pytest.mark.parametrize("kernel, make_args", EXTRA, ids=lambda v: getattr(v, "__name__", ""))
def test_typing_asserts_hold_in_cutile(kernel, make_args):
    _front_end(kernel, make_args())


def test_cutile_rejects_what_the_emulator_rejects():
    # the same static_assert that fails in the emulator fails in cuTile's compiler
    with pytest.raises(Exception, match="stays float16"):
        _front_end(test_emulator_math.static_assert_fails, (np.zeros(4, np.float16),))


@pytest.mark.slow
@pytest.mark.parametrize("kernel, args", [
    (test_emulator_memory.narrowing_store, (np.zeros(4, np.float32), np.zeros(4, np.float16))),
    (test_emulator_memory.float_into_int_scatter, (np.zeros(4, np.int32),)),
    (test_emulator_memory.atomic_max_on_floats, (np.zeros(4, np.float32),)),
    (test_emulator_math.bad_promotion, (np.zeros(4, np.int32),)),
], ids=["narrowing-store", "float-scatter-into-int", "atomic-max-float", "mixed-sign"])
def test_cutile_also_rejects_what_the_emulator_rejects(kernel, args):
    with pytest.raises(Exception, match=r"(?i)cast|support|promotion"):
        _front_end(kernel, args)
