"""tessel.dlpack on CPU memory: reading any producer's tensors, and exports
that torch and numpy consume, with their owners kept alive exactly as long
as a consumer needs them."""

import gc
import weakref

import numpy as np
import pytest

import tessel
from tessel import dlpack
from tessel.dtypes import BFLOAT16

torch = pytest.importorskip("torch")


class Exporter:
    """Exports its numpy buffer's memory as a tessel DLPack tensor."""

    def __init__(self, array, shape=None):
        self.array, self.shape = array, shape or array.shape

    def __dlpack_device__(self):
        return dlpack.CPU, 0

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        return dlpack.export(self.array.ctypes.data, self.shape, self.array.dtype, self.__dlpack_device__(), self)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.bool_, BFLOAT16], ids=str)
def test_numpy_and_torch_tensors_are_read_in_place(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    if dtype is BFLOAT16:  # numpy cannot export bfloat16; torch can
        producers = [torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)]
    else:
        producers = [a, torch.from_numpy(a)]
    for value in producers:
        view = dlpack.read(value)
        assert (view.pointer, view.shape, view.strides, view.dtype, view.device) == (
            a.ctypes.data, (3, 4), (4, 1), np.dtype(dtype), (dlpack.CPU, 0))
        assert view.contiguous
        got = view.numpy()
        assert got.dtype == np.dtype(dtype) and got.ctypes.data == a.ctypes.data
        np.testing.assert_array_equal(got.astype(np.float64), a.astype(np.float64))


def test_strides_offsets_and_empty_tensors():
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    view = dlpack.read(t.T[1:, ::2])
    assert view.shape == (5, 2) and view.strides == (1, 12) and not view.contiguous
    np.testing.assert_array_equal(view.numpy(), t.T[1:, ::2].numpy())
    assert dlpack.read(t[:, :1]).contiguous is False and dlpack.read(t[:1]).contiguous
    assert dlpack.read(np.zeros((0, 3), np.float16)).numpy().shape == (0, 3)


def test_a_read_keeps_the_producers_memory_alive():
    t = torch.randn(3, 5, dtype=torch.bfloat16)
    expected = t.float().numpy().copy()
    array = dlpack.read(t).numpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(array.astype(np.float32), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, BFLOAT16], ids=str)
def test_exports_are_consumed_by_torch_and_numpy(dtype):
    a = (np.arange(6) % 2).astype(dtype)
    t = torch.from_dlpack(Exporter(a, (2, 3)))
    assert t.data_ptr() == a.ctypes.data and t.shape == (2, 3)
    np.testing.assert_array_equal(t.float().numpy().ravel(), a.astype(np.float32))
    if dtype is not BFLOAT16:  # numpy has no bfloat16 DLPack type
        assert np.from_dlpack(Exporter(a)).ctypes.data == a.ctypes.data


def test_an_export_lives_until_its_consumer_lets_go():
    exporter = Exporter(np.arange(4, dtype=np.float32))
    alive = weakref.ref(exporter)
    t = torch.from_dlpack(exporter)
    del exporter
    gc.collect()
    assert alive() is not None and t.sum().item() == 6
    del t
    gc.collect()
    assert alive() is None
    # A capsule nobody consumed releases its owner too.
    exporter = Exporter(np.arange(4, dtype=np.float32))
    alive = weakref.ref(exporter)
    capsule = exporter.__dlpack__()
    del exporter, capsule
    gc.collect()
    assert alive() is None


def test_unsupported_types_are_clear_errors():
    with pytest.raises(tessel.UnsupportedError, match=r"DLPack data type \(code 5, 64 bits"):
        dlpack.read(np.zeros(2, np.complex64))
    with pytest.raises(tessel.UnsupportedError, match="complex64 has no DLPack data type"):
        dlpack.export(0, (2,), np.dtype(np.complex64), (dlpack.CPU, 0), None)
