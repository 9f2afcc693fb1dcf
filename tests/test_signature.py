"""Signatures from example arguments and spec strings (no compiling here)."""

from __future__ import annotations

from typing import Annotated

import cuda.tile as ct
import kernels_inspect as K
import ml_dtypes
import numpy as np
import pytest
from cuda.tile.compilation import ArrayConstraint, ConstantConstraint, ScalarConstraint

from tile_lab.array_like import describe_array
from tile_lab.compile.signature import (
    build_signature,
    parse_spec,
    signature_from_args,
    signature_from_spec,
)
from tile_lab.errors import ArgumentValueError, SignatureError


class FakeDeviceArray:
    """Stands in for a CuPy array: only ``__cuda_array_interface__``."""

    def __init__(self, shape, typestr, ptr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": strides,
                                         "version": 3}


def params(built):
    return built.kernel_signature.parameters


def test_parse_spec_items():
    items = parse_spec("f32[4096], bf16[M=8192, K=1_024], i32, TILE=128, 0.5, True, (64, 32)")
    assert [(i.kind, i.code, i.shape, i.value, i.name) for i in items] == [
        ("array", "f32", (4096,), None, None),
        ("array", "bf16", (8192, 1024), None, None),
        ("scalar", "i32", (), None, None),
        ("value", None, (), 128, "TILE"),
        ("value", None, (), 0.5, None),
        ("value", None, (), True, None),
        ("value", None, (), (64, 32), None),
    ]


@pytest.mark.parametrize("spec, message", [
    ("x32[4]", "unknown dtype 'x32'"),
    ("f32[4,]", "bad dimension ''"),
    ("f32[4], , 3", "item 2 is empty"),
    ("f32[n]", "bad dimension 'n'"),
    ("f32[4] + 1", "neither an array"),
])
def test_parse_spec_errors(spec, message):
    with pytest.raises(SignatureError, match=message):
        parse_spec(spec)


def test_numpy_args_and_spec_agree():
    a = np.zeros(4096, np.float32)
    from_args = signature_from_args(K.vector_add, (a, a, a, 128))
    from_spec = signature_from_spec(K.vector_add, "f32[4096], f32[4096], f32[4096], 128")
    assert from_args.kernel_signature == from_spec.kernel_signature
    assert from_args.display == "f32[4096], f32[4096], f32[4096], TILE=128"
    # the display form is itself a valid spec
    assert signature_from_spec(K.vector_add, from_args.display).kernel_signature == \
        from_args.kernel_signature


def test_array_assumptions_follow_the_launcher():
    [a, _, _, tile] = params(signature_from_spec(K.vector_add, "f32[4096], f32[8], f32[9], 16"))
    assert isinstance(a, ArrayConstraint) and a.dtype == ct.float32 and a.ndim == 1
    assert a.stride_constant == (1,) and a.base_addr_divisible_by == 16
    assert a.shape_divisible_by == (16,) and not a.may_alias_internally
    assert tile == ConstantConstraint(16)
    [_, b, c, _] = params(signature_from_spec(K.vector_add, "f32[4096], f32[8], f32[9], 16"))
    assert b.shape_divisible_by == (1,) and c.shape_divisible_by == (1,)


def test_strided_and_transposed_numpy_arrays():
    base = np.zeros((256, 512), np.float16)
    c = np.zeros((512, 256), np.float32).T  # column-major view
    built = signature_from_args(K.gemm, (base, base[:, ::2], c, 64, 64, 32))
    a, b, cc = params(built)[:3]
    assert a.stride_constant == (None, 1) and a.stride_divisible_by == (8, 1)
    assert b.stride_constant == (None, None)  # every other column: stride 2
    assert cc.stride_constant == (1, None) and cc.stride_divisible_by == (1, 4)
    assert built.display.startswith("f16[256,512], f16[256,256](strides 512,2), "
                                    "f32[256,512](strides 1,256)")


def test_device_array_interface_and_alignment():
    aligned = FakeDeviceArray((1024,), "<f4", 0x7F0000000000)
    misaligned = FakeDeviceArray((1024,), "<f4", 0x7F0000000004)
    [x, y, _, _] = params(signature_from_args(K.vector_add, (aligned, misaligned, aligned, 64)))
    assert x.base_addr_divisible_by == 16 and y.base_addr_divisible_by == 1
    bf16 = FakeDeviceArray((2, 64), "<V2", 0x7F0000000000, strides=(256, 2))
    d = describe_array(bf16)
    assert d.code == "bf16" and d.shape == (2, 64) and d.strides == (128, 1)


def test_bfloat16_numpy_and_scalars():
    x = np.zeros(128, ml_dtypes.bfloat16)
    built = signature_from_args(K.scale, (x, x, 2.0, 128))
    assert params(built)[0].dtype == ct.bfloat16
    assert params(built)[2] == ScalarConstraint(ct.float32)
    assert built.display == "bf16[128], bf16[128], f32, TILE=128"
    assert params(signature_from_args(K.scale, (x, x, 3, 128)))[2] == ScalarConstraint(ct.int32)
    assert params(signature_from_args(K.scale, (x, x, np.float16(3), 128)))[2] == \
        ScalarConstraint(ct.float16)
    assert params(signature_from_spec(K.scale, "bf16[128], bf16[128], f16, 128"))[2] == \
        ScalarConstraint(ct.float16)
    # numpy scalars as constants become plain Python values
    assert params(signature_from_args(K.scale, (x, x, 1.0, np.int64(64))))[3] == \
        ConstantConstraint(64)


def test_list_of_arrays():
    xs = [np.zeros(64, np.float32), np.zeros(32, np.float32)]
    built = signature_from_args(K.scale, (xs, xs[0], 1.0, 16))
    lst = params(built)[0]
    assert lst.element.dtype == ct.float32 and lst.element.shape_divisible_by == (16,)
    assert built.display.startswith("list[2 x f321d]")


StaticRows = Annotated[list, ct.ListAnnotation(element=ct.ArrayAnnotation(static_shape_dims=(0,)))]
StaticPitch = Annotated[list,
                        ct.ListAnnotation(element=ct.ArrayAnnotation(static_stride_dims=(0,)))]
WideList = Annotated[list, ct.ListAnnotation(element=ct.IndexedWithInt64)]


@ct.kernel
def sum_rows(xs: StaticRows, out):
    ct.store(out, (0, 0), ct.load(xs[0], (0, 0), (4, 4)))


@ct.kernel
def sum_pitched(xs: StaticPitch, out):
    ct.store(out, (0, 0), ct.load(xs[0], (0, 0), (4, 4)))


@ct.kernel
def sum_wide(xs: WideList, out):
    ct.store(out, (0, 0), ct.load(xs[0], (0, 0), (4, 4)))


def test_a_list_annotation_describes_each_array_in_the_list():
    out = np.zeros((4, 4), np.float32)
    rows8 = [np.zeros((8, 4), np.float32), np.ones((8, 4), np.float32)]
    built = signature_from_args(sum_rows, (rows8, out))
    element = params(built)[0].element
    assert element.shape_constant == (8, None)  # the annotated axis is a constant
    assert built.kernel_signature.calling_convention == \
        ct.compilation.CallingConvention.cutile_python_v2()
    rows16 = [np.zeros((16, 4), np.float32)] * 2
    assert params(signature_from_args(sum_rows, (rows16, out)))[0].element.shape_constant == \
        (16, None)

    pitched = [np.zeros((4, 10), np.float32)[:, :4] for _ in range(3)]
    element = params(signature_from_args(sum_pitched, (pitched, out)))[0].element
    assert element.stride_constant == (10, None)  # listed strides replace the unit inference

    # a list of arrays over 2**31 elements (a broadcast view: no memory) is fine for int64
    huge = np.broadcast_to(np.zeros((1, 4), np.int8), (2**32 + 16, 4))
    element = params(signature_from_args(sum_wide, ([huge, huge], out)))[0].element
    assert element.index_dtype == ct.int64
    with pytest.raises(SignatureError, match="exceed int32"):
        signature_from_args(sum_rows, ([huge], out))


def test_list_items_that_differ_on_a_static_axis_are_a_value_error():
    out = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="vary in static shape at axis 0: 8 vs 16") as info:
        signature_from_args(sum_rows, ([np.zeros((8, 4)), np.zeros((16, 4))], out))
    assert isinstance(info.value, ArgumentValueError)
    with pytest.raises(ValueError, match="vary in static stride at axis 0: 10 vs 12"):
        signature_from_args(sum_pitched, ([np.zeros((4, 10))[:, :4], np.zeros((4, 12))[:, :4]],
                                          out))


@pytest.mark.parametrize("annotation, message", [
    (ct.ArrayAnnotation(static_shape_dims=(2,)), "static_shape_dims contains axis 2 but"),
    (ct.ArrayAnnotation(static_stride_dims=(-3,)), "static_stride_dims contains axis -3 but"),
    (ct.ArrayAnnotation(static_stride_dims=(1, -1)), "static_stride_dims contains duplicate"),
])
def test_static_axes_outside_the_array_are_cutiles_value_error(annotation, message):
    def copy(x, out):
        ct.store(out, (0, 0), ct.load(x, (0, 0), (4, 4)))

    copy.__annotations__ = {"x": Annotated[ct.Array, annotation]}  # not a string: a local
    k = ct.kernel(copy)
    with pytest.raises(ValueError, match=message):
        signature_from_args(k, (np.zeros((4, 4)), np.zeros((4, 4))))


@pytest.mark.parametrize("args, message", [
    ((np.zeros(8, np.float32),), r"takes 4 arguments \(a, b, c, TILE\)"),
    ((np.zeros(8), np.zeros(8), np.zeros(8), np.zeros(8)),
     r"argument 4 \('TILE'\): the parameter is a ct.Constant"),
    ((np.zeros(8, np.complex64), np.zeros(8), np.zeros(8), 4),
     r"argument 1 \('a'\): arrays of dtype complex64 have no cuTile equivalent"),
    ((np.zeros(8, np.float32)[::-1], np.zeros(8), np.zeros(8), 4),
     r"argument 1 \('a'\): negative strides"),
    ((np.zeros(8), object(), np.zeros(8), 4),
     r"argument 2 \('b'\): expected an array or a scalar, got object"),
])
def test_argument_errors_name_the_argument(args, message):
    with pytest.raises(SignatureError, match=message):
        signature_from_args(K.vector_add, args)


def test_annotations_decide_array_or_scalar():
    with pytest.raises(SignatureError, match=r"argument 1 \('x'\): expected an array"):
        signature_from_args(K.annotated, (3, 1, 16))
    with pytest.raises(SignatureError, match=r"argument 2 \('n'\): the parameter is annotated "
                                             r"as a scalar"):
        signature_from_args(K.annotated, (np.zeros(16), np.zeros(16), 16))
    with pytest.raises(SignatureError, match=r"argument 1 \('x'\): expected an array"):
        signature_from_spec(K.annotated, "i32, i32, 16")
    with pytest.raises(SignatureError, match=r"does not fit int32"):
        signature_from_args(K.annotated, (np.zeros(16), 2**40, 16))


def test_spec_errors_name_the_argument():
    with pytest.raises(SignatureError, match=r"argument 2 \('b'\): the spec names it 'q'"):
        signature_from_spec(K.vector_add, "f32[4], q=f32[4], f32[4], 4")
    with pytest.raises(SignatureError, match=r"argument 4 \('TILE'\): .*ct.Constant"):
        signature_from_spec(K.vector_add, "f32[4], f32[4], f32[4], i32")
    with pytest.raises(SignatureError, match=r"but the signature spec .* has 2"):
        signature_from_spec(K.vector_add, "f32[4], f32[4]")


def test_build_signature_dispatch():
    assert build_signature(K.vector_add, "f32[16], f32[16], f32[16], 16").display == \
        "f32[16], f32[16], f32[16], TILE=16"
    assert build_signature(K.vector_add, [np.zeros(16, np.float32)] * 3 + [16]).display == \
        "f32[16], f32[16], f32[16], TILE=16"
    with pytest.raises(SignatureError, match="not a single array"):
        build_signature(K.vector_add, np.zeros(16))
    with pytest.raises(SignatureError, match="got int"):
        build_signature(K.vector_add, 5)
