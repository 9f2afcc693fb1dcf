"""tile_lab.array_like: one reading of NumPy, torch, CuPy-style and DLPack arguments, from
metadata only; and the same arrays through inspect, --args and emulate."""

from __future__ import annotations

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest

import tile_lab
from tile_lab.array_like import (
    DTYPE_CODES,
    ArgumentProblem,
    ArrayDesc,
    _numpy_dtype,
    array_info,
    as_launch_args,
    code_for_numpy_dtype,
    contiguous_strides,
    describe_array,
    host_view,
    is_array_like,
    to_host,
)
from tile_lab.compile.signature import build_signature
from tile_lab.errors import EmulationError, SignatureError


class DLPackOnly:
    """An array known only through the DLPack protocol (like a JAX or MLX array)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class DeviceArray:
    """A GPU array as a CUDA-array-interface producer describes it; it has no data here, so
    any attempt to read it would fail: describing it must use the metadata alone."""

    def __init__(self, typestr, shape, ptr, strides=None):
        self.__cuda_array_interface__ = {"typestr": typestr, "shape": shape,
                                         "strides": strides, "data": (ptr, False),
                                         "version": 3}


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)


def test_numpy_and_dlpack_read_the_same():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    for obj in (x, DLPackOnly(x)):
        info = array_info(obj)
        assert (info.dtype, info.shape, info.strides, info.device) == (
            np.dtype(np.float32), (4, 3), (24, 8), "cpu")
        assert info.data_ptr == x.__array_interface__["data"][0]
    assert host_view(DLPackOnly(x)).base is not None  # a view, not a copy
    assert np.shares_memory(host_view(DLPackOnly(x)), x)


def test_device_arrays_are_described_without_touching_data():
    info = array_info(DeviceArray("<f2", (128, 64), 0x7F0000000008, (256, 2)))
    assert (info.dtype, info.shape, info.strides, info.device) == (
        np.dtype(np.float16), (128, 64), (256, 2), "cuda")
    assert info.nbytes == 128 * 64 * 2 and not info.on_host
    assert host_view(DeviceArray("<f4", (4,), 256)) is None
    assert array_info(DeviceArray("<V2", (4,), 256)).dtype == np.dtype(ml_dtypes.bfloat16)


def test_unsupported_dtypes_are_refused_by_every_reader():
    z = np.zeros(8, np.complex64)
    for obj in (z, DLPackOnly(z), DeviceArray("<c8", (8,), 256)):
        with pytest.raises(ArgumentProblem, match="complex64 have no cuTile equivalent"):
            array_info(obj)


def test_scalars_are_not_arrays():
    for v in (1, 2.5, True, np.float32(1), np.int64(3), None, "x", [np.zeros(2)]):
        assert not is_array_like(v)
        assert array_info(v) is None


def test_signature_of_a_device_array_comes_from_its_metadata():
    aligned = build_signature(vadd, [DeviceArray("<f4", (4096,), 1 << 20)] * 3 + [256])
    assert aligned.display == build_signature(vadd, [np.zeros(4096, np.float32)] * 3
                                              + [256]).display
    c = aligned.kernel_signature.parameters[0]
    assert c.base_addr_divisible_by == 16
    misaligned = build_signature(vadd, [DeviceArray("<f4", (4096,), (1 << 20) + 4)] * 3
                                 + [256])
    assert misaligned.kernel_signature.parameters[0].base_addr_divisible_by == 1


def test_launch_args_without_host_arrays_are_returned_as_they_are():
    # the launch fast path: NumPy, device arrays and scalars need no view (and no copy)
    args = (np.zeros(4, np.float32), DeviceArray("<f4", (4,), 256), 3, 2.5)
    assert as_launch_args(args) is args
    dl = DLPackOnly(np.arange(4, dtype=np.float32))
    out = as_launch_args([dl, 1])
    assert isinstance(out[0], np.ndarray) and out[1] == 1
    assert np.shares_memory(out[0], dl._array)


def test_inspect_and_emulate_take_dlpack_objects():
    a, b = np.arange(1024, dtype=np.float32), np.ones(1024, np.float32)
    c = np.zeros(1024, np.float32)
    sig = build_signature(vadd, [DLPackOnly(a), DLPackOnly(b), DLPackOnly(c), 256])
    assert sig.display == "f32[1024], f32[1024], f32[1024], TILE=256"
    tile_lab.emulate(vadd, (4,), (DLPackOnly(a), DLPackOnly(b), DLPackOnly(c), 256))
    np.testing.assert_array_equal(c, a + 1)  # written through the DLPack view


def test_to_host_of_a_gpu_array_without_cupy_says_what_is_missing(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("no cupy")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(ArgumentProblem, match=r"lives on the GPU; .* needs CuPy"):
        to_host(DeviceArray("<f4", (4,), 256), [])


def test_emulate_names_the_argument_of_an_unsupported_array():
    good = np.zeros(1024, np.float32)
    with pytest.raises(EmulationError, match=r"argument 2 \('b'\): arrays of dtype complex64"):
        tile_lab.emulate(vadd, (4,), (good, np.zeros(1024, np.complex64), good, 256))


# -- torch (skipped where torch is not installed) ---------------------------------------------

def test_torch_tensors_read_like_numpy():
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)[:, ::2]
    info = array_info(t)
    assert (info.dtype, info.shape, info.strides, info.device) == (
        np.dtype(np.float32), (4, 3), (24, 8), "cpu")
    for dtype, np_dtype in ((torch.bfloat16, ml_dtypes.bfloat16),
                            (torch.float8_e4m3fn, ml_dtypes.float8_e4m3fn)):
        x = torch.zeros(8, dtype=dtype)
        view = host_view(x)
        assert view.dtype == np.dtype(np_dtype)
        view[3] = 2.0  # the view is the tensor's memory
        assert float(x[3]) == 2.0
    with pytest.raises(ArgumentProblem, match="complex64 have no cuTile equivalent"):
        array_info(torch.zeros(2, dtype=torch.complex64))


def test_inspect_signature_from_torch_equals_numpy():
    torch = pytest.importorskip("torch")
    tensors = [torch.zeros(4096, dtype=torch.bfloat16) for _ in range(3)]
    arrays = [np.zeros(4096, ml_dtypes.bfloat16) for _ in range(3)]
    expected = "bf16[4096], bf16[4096], bf16[4096], TILE=256"
    assert build_signature(vadd, [*tensors, 256]).display == expected
    assert build_signature(vadd, [*arrays, 256]).display == expected


def test_emulate_writes_into_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    a = torch.arange(1024, dtype=torch.float32)
    b = torch.ones(1024, dtype=torch.float32)
    c = torch.zeros(1024, dtype=torch.float32)
    tile_lab.emulate(vadd, (4,), (a, b, c, 256))
    assert torch.equal(c, a + 1)


def test_launch_args_are_zero_copy_views_of_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    t = torch.zeros(16, dtype=torch.float32)
    dev = DeviceArray("<f4", (16,), 256)
    out = as_launch_args((t, dev, 3, [t]))
    assert isinstance(out, tuple) and isinstance(out[0], np.ndarray)
    out[0][5] = 7.0
    assert float(t[5]) == 7.0  # results copied into the view land in the tensor
    assert out[1] is dev and out[2] == 3 and isinstance(out[3][0], np.ndarray)


def test_magic_args_take_torch_tensors():
    torch = pytest.importorskip("torch")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tile_lab")
    shell.user_ns.update(ta=torch.ones(1024), tb=torch.ones(1024), tc=torch.zeros(1024))
    body = """
import cuda.tile as ct

@ct.kernel
def vadd_torch(a, b, c, TILE: ct.Constant[int]):
    t = ct.load(a, index=(ct.bid(0),), shape=(TILE,))
    ct.store(c, index=(ct.bid(0),), tile=t + ct.load(b, index=(ct.bid(0),), shape=(TILE,)))
"""
    shell.run_cell_magic("tile", '--emulate --args "ta, tb, tc, 256" --grid "(4,)"', body)
    assert torch.equal(shell.user_ns["tc"], torch.full((1024,), 2.0))
    shown = []
    shell.display_pub.publish = lambda data, metadata=None, **kw: shown.append(data)
    try:  # --args without a run flag: inspect, the signature read from the tensors
        shell.run_cell_magic("tile", '--args "ta, tb, tc, 256" --show cutile', body)
    finally:
        del shell.display_pub.publish
    assert "f32[1024], f32[1024], f32[1024], TILE=256" in str(shown[0])
    with pytest.raises(SignatureError, match=r"argument 1 \('a'\): .*complex64"):
        tile_lab.inspect(vadd, [torch.zeros(1024, dtype=torch.complex64), *[
            torch.zeros(1024)] * 2, 256])


def test_results_copy_back_into_a_torch_tensor_with_a_repeated_axis(monkeypatch):
    """A device tensor made by ``expand`` (stride 0) is copied to the host for the emulator
    and written back after the launch, which torch refuses for such a tensor as a whole."""
    torch = pytest.importorskip("torch")
    from tile_lab import array_like

    base = torch.arange(4, dtype=torch.float32).reshape(4, 1)
    x = base.expand(4, 8)
    real_view = array_like.host_view
    # x stands in for CUDA memory: no host view of it, and .cpu() makes a copy
    monkeypatch.setattr(array_like, "host_view", lambda v: None if v is x else real_view(v))
    monkeypatch.setattr(torch.Tensor, "cpu", lambda self: self.clone())
    copy_back = []
    host = array_like.to_host(x, copy_back)
    np.testing.assert_array_equal(host, x.numpy())
    host[:] = 5  # the kernel's results
    copy_back[0]()  # torch's x.copy_() refuses: more than one element refers to one location
    np.testing.assert_array_equal(base.numpy().ravel(), [5, 5, 5, 5])


@pytest.mark.timeout(60)
def test_dtype_codes_name_the_same_dtype_in_cutile_and_numpy():
    """Each short code's cuTile and NumPy dtypes agree in size, so an ArrayDesc's itemsize
    (from NumPy) is the byte width cuTile compiles for; a code reads back from its dtype."""
    for code, (ct_name, np_name) in DTYPE_CODES.items():
        desc = ArrayDesc(code, (4, 8), contiguous_strides((4, 8)), True)
        assert desc.itemsize == max(1, getattr(ct, ct_name).bitwidth // 8), code
        assert code_for_numpy_dtype(_numpy_dtype(np_name)) == code
        assert desc.contiguous and desc.display() == f"{code}[4,8]"


@pytest.mark.timeout(60)
def test_describe_array_reads_strides_in_elements_and_device_alignment():
    class Device:  # a device array known by its interface alone
        def __init__(self, ptr):
            self.__cuda_array_interface__ = {"shape": (2, 64), "typestr": "<f4",
                                             "data": (ptr, False), "strides": (512, 4),
                                             "version": 3}

    d = describe_array(Device(0x7F0000000000))
    assert (d.code, d.shape, d.strides, d.aligned) == ("f32", (2, 64), (128, 1), True)
    assert not d.contiguous and d.display() == "f32[2,64](strides 128,1)"
    assert not describe_array(Device(0x7F0000000004)).aligned
    host = describe_array(np.zeros(10, np.int16)[1:])  # host arrays are copied aligned
    assert host.aligned and host.code == "i16"
    assert describe_array(3) is None
    with pytest.raises(ArgumentProblem, match="complex128"):
        describe_array(np.zeros(3, np.complex128))
