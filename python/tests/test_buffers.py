"""What execute reads from the caller's objects: addresses of arrays and buffers, and
streams."""
import array
import ctypes

import pytest

import dnnjit as cudnn
from dnnjit._buffers import address, describe
from dnnjit._handle import stream_address
from helpers import FakeDeviceArray, FakeHostArray


def test_ints_and_none_are_addresses():
    assert address(0x1234) == 0x1234 and address(None) == 0


def test_array_interfaces_give_their_data_pointer():
    assert address(FakeDeviceArray((2,), ptr=0x7F0000002000)) == 0x7F0000002000
    assert address(FakeHostArray((2,), ptr=0x5000)) == 0x5000


def test_python_buffers_and_ctypes_objects():
    a = array.array("f", [1, 2])
    assert address(a) == a.buffer_info()[0]
    c = (ctypes.c_double * 3)()
    assert address(c) == ctypes.addressof(c)
    b = bytearray(8)
    ctypes.memmove(address(b), b"\x01\x02", 2)  # writes land in the bytearray itself
    assert b[:2] == b"\x01\x02"


def test_unaddressable_objects_are_refused():
    for bad in (b"read-only", "text", 1.5, object()):
        with pytest.raises(TypeError, match="cannot take the address"):
            address(bad)


class DLPackOnly:
    """Exposes an array only through __dlpack__."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()


def test_dlpack_gives_address_layout_and_type():
    np = pytest.importorskip("numpy")
    base = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    view = base[:, 1:, ::2]  # offset, non-contiguous
    obj = DLPackOnly(view)
    assert address(obj) == view.__array_interface__["data"][0]
    dims, strides, dtype = describe(obj)
    assert (dims, strides, dtype) == ([2, 2, 2], [12, 4, 2], cudnn.data_type.HALF)


def test_dlpack_buffers_run_through_the_reference_executor():
    np = pytest.importorskip("numpy")
    g = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"), io_data_type=cudnn.data_type.FLOAT)
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    y = np.zeros(8, dtype=np.float32)
    tx = g.tensor_like(DLPackOnly(x), is_pass_by_value=False)
    ty = g.abs(tx).set_output(True)
    g.execute_reference({tx: DLPackOnly(x), ty: DLPackOnly(y)})
    np.testing.assert_array_equal(y, np.abs(x))


class TorchStreamLike:
    cuda_stream = 0x1111


class CupyStreamLike:
    ptr = 0x2222


class ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x3333)


def test_streams_from_ints_and_framework_objects():
    assert stream_address(None) == 0 and stream_address(0x42) == 0x42
    assert stream_address(TorchStreamLike()) == 0x1111
    assert stream_address(CupyStreamLike()) == 0x2222
    assert stream_address(ProtocolStream()) == 0x3333
    with pytest.raises(TypeError, match="not a CUDA stream"):
        stream_address("default")


def test_handles_carry_their_stream(arch_handle):
    assert cudnn.get_stream(arch_handle) == 0
    cudnn.set_stream(handle=arch_handle, stream=CupyStreamLike())
    assert cudnn.get_stream(arch_handle) == 0x2222 and arch_handle.stream == 0x2222
    assert "0x2222" in repr(arch_handle)
    cudnn.set_stream(arch_handle, None)
    assert arch_handle.stream == 0


def test_deviceless_handle_attributes(arch_handle):
    assert arch_handle.arch == "sm_90a" and not arch_handle.has_device
