"""tile_lab.triton.kernel: signatures from example args or a spec; what is not a Triton
kernel is named as such."""

from __future__ import annotations

import numpy as np
import pytest
from triton_cases import needs_triton

from tile_lab.errors import ArgumentTypeError, SignatureError

pytestmark = needs_triton


def test_signature_from_example_args():
    from tile_lab.examples.triton_ports import add_kernel
    from tile_lab.triton.kernel import signature_of

    x = np.zeros(100, np.float32)
    sig = signature_of(add_kernel, (x, x, x.astype(np.float16), 100, 256))
    assert sig.types == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp16", "n": "i32",
                         "BLOCK": "constexpr"}
    assert sig.constexprs == {"BLOCK": 256}
    assert sig.text() == "*fp32, *fp32, *fp16, i32, BLOCK=256"
    # pointers are 16-byte aligned; 100 is not a multiple of 16, 3 pointers are
    assert sig.divisible == (0, 1, 2)
    assert signature_of(add_kernel, (x, x, x, 2**40, 64)).types["n"] == "i64"
    assert 3 in signature_of(add_kernel, (x, x, x, 4096, 64)).divisible


def test_signature_from_spec():
    from tile_lab.examples.triton_ports import add_kernel
    from tile_lab.triton.kernel import signature_of

    sig = signature_of(add_kernel, "*fp32, *fp32, *fp32, i32, 1024")
    assert sig.constexprs == {"BLOCK": 1024} and sig.types["n"] == "i32"
    assert signature_of(add_kernel, "*bf16, *bf16, *bf16, i64, BLOCK=64").constexprs == \
        {"BLOCK": 64}


@pytest.mark.parametrize("args, words", [
    ("*fp32, *fp32, i32, 1024", "takes 5 arguments (x_ptr, y_ptr, out_ptr, n, BLOCK), got 4"),
    ("*fp32, *fp32, *float, i32, 1024", "spec item 3 (out_ptr): '*float' is not a Triton type"),
    ("*fp32, *fp32, *fp32, i32, big", "spec item 5 (BLOCK is a tl.constexpr)"),
])
def test_bad_specs_say_which_item(args, words):
    from tile_lab.examples.triton_ports import add_kernel
    from tile_lab.triton.kernel import signature_of

    with pytest.raises(SignatureError) as info:
        signature_of(add_kernel, args)
    assert words in info.value.message


def test_bad_example_args():
    from tile_lab.examples.triton_ports import add_kernel
    from tile_lab.triton.kernel import signature_of

    x = np.zeros(4, np.float32)
    with pytest.raises(SignatureError, match=r"argument 4 \(n\): str is not"):
        signature_of(add_kernel, (x, x, x, "4", 4))
    with pytest.raises(SignatureError, match="complex64 have no Triton pointer type"):
        signature_of(add_kernel, (x, x, x.astype(np.complex64), 4, 4))
    with pytest.raises(ArgumentTypeError, match="example arguments"):
        signature_of(add_kernel, 42)


def test_what_is_not_a_triton_kernel_is_named():
    from tile_lab.examples.triton_ports import add_kernel, vector_add
    from tile_lab.triton.kernel import is_triton_kernel, jit_function

    assert is_triton_kernel(add_kernel) and not is_triton_kernel(vector_add)
    with pytest.raises(ArgumentTypeError, match=r"must be a @triton.jit kernel, got a cuTile"):
        jit_function(vector_add, "the kernel")
    with pytest.raises(ArgumentTypeError, match="got a plain Python function") as info:
        jit_function(lambda x: x, "the kernel")
    assert "@triton.jit" in info.value.hint
