"""What the package reads from the caller's arrays: addresses for the variant pack, and
shape, strides and element type for tensor_like.

Arrays are recognised by protocol, never by importing a framework: torch tensors
(data_ptr, shape, stride(), dtype), objects with __cuda_array_interface__ (CuPy, Numba,
...) or __array_interface__ (NumPy, host memory), objects with __dlpack__ (read through
the capsule without consuming it), writable Python buffers (bytearray, array.array) and
ctypes objects. A plain int is taken as a raw address. Host arrays (NumPy, CPU torch
tensors) are told from device arrays, as the cuDNN frontend does, because a host array
stands for a pass-by-value scalar.

The address of each type is found once and cached (execute is called in hot loops).
"""
import ctypes
import math
import sys

from ._enums import data_type
from ._errors import BadParamError
from ._lib import lib

# ---- element types -------------------------------------------------------------------

# torch dtype name (str(torch.float16) without "torch.") or NumPy-style dtype name.
_DTYPE_BY_NAME = {
    "float32": data_type.FLOAT, "float": data_type.FLOAT,
    "float64": data_type.DOUBLE, "double": data_type.DOUBLE,
    "float16": data_type.HALF, "half": data_type.HALF,
    "bfloat16": data_type.BFLOAT16,
    "float8_e4m3fn": data_type.FP8_E4M3, "float8_e4m3": data_type.FP8_E4M3,
    "float8_e5m2": data_type.FP8_E5M2,
    "int8": data_type.INT8, "int32": data_type.INT32, "int64": data_type.INT64,
    "bool": data_type.BOOLEAN,
}

# __array_interface__ / __cuda_array_interface__ typestr kind + size.
_DTYPE_BY_TYPESTR = {
    "f4": data_type.FLOAT, "f8": data_type.DOUBLE, "f2": data_type.HALF, "i1": data_type.INT8,
    "i4": data_type.INT32, "i8": data_type.INT64, "b1": data_type.BOOLEAN,
}

# DLPack (type code, bits): kDLInt 0, kDLFloat 2, kDLBfloat 4, kDLBool 6, kDLFloat8_e4m3fn 10
# (dnnjit's FP8_E4M3 saturates at 448, as e4m3fn does), kDLFloat8_e5m2 12.
_DTYPE_BY_DLPACK = {
    (2, 32): data_type.FLOAT, (2, 64): data_type.DOUBLE, (2, 16): data_type.HALF, (4, 16): data_type.BFLOAT16,
    (0, 8): data_type.INT8, (0, 32): data_type.INT32, (0, 64): data_type.INT64, (6, 8): data_type.BOOLEAN,
    (10, 8): data_type.FP8_E4M3, (12, 8): data_type.FP8_E5M2,
}


def dtype_from_name(dtype):
    """The data_type of a framework's element type: torch.float16 (str gives
    "torch.float16"), numpy.dtype("float16") (str gives "float16"), the class
    numpy.float16 (__name__) or the string "float16"."""
    for name in (str(dtype), getattr(dtype, "__name__", None)):
        if isinstance(name, str) and name.rpartition(".")[2] in _DTYPE_BY_NAME:
            return _DTYPE_BY_NAME[name.rpartition(".")[2]]
    raise BadParamError(f"element type {dtype} has no dnnjit data type")


# The byte-order mark of an array interface type whose elements this machine would misread.
_FOREIGN_ORDER = ">" if sys.byteorder == "little" else "<"


def _check_byte_order(typestr):
    if typestr[0] == _FOREIGN_ORDER:
        raise BadParamError(f"array interface type {typestr!r} is not in this machine's byte order ({sys.byteorder} "
                            "endian); convert it first, e.g. a.astype(a.dtype.newbyteorder('=')) in NumPy")


def _dtype_from_typestr(typestr):
    _check_byte_order(typestr)
    try:
        return _DTYPE_BY_TYPESTR[typestr[1:]]
    except KeyError:
        raise BadParamError(f"tensor_like: array interface type {typestr!r} has no dnnjit data type") from None


# ---- DLPack --------------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


_DL_CPU = 1  # DLPack's kDLCPU: host memory (pinned kDLCUDAHost memory counts as a device buffer, as in cuDNN)


def _read_dlpack(obj):
    """(address, shape, strides in elements, data_type, DLPack device type) of an object
    with __dlpack__.

    The capsule is read and dropped unconsumed: its destructor then releases the export,
    while `obj` keeps the memory alive for the caller.
    """
    capsule = obj.__dlpack__()
    # DLManagedTensor starts with its DLTensor.
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        strides = [t.strides[i] for i in range(t.ndim)]
    else:
        strides = _packed_strides(shape)
    dtype = _DTYPE_BY_DLPACK.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    return (t.data or 0) + t.byte_offset, shape, strides, dtype, t.device.device_type


# ---- layouts -------------------------------------------------------------------------

def _packed_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return strides[::-1]


def _interface_layout(interface, itemsize):
    shape = list(interface["shape"])
    byte_strides = interface.get("strides")
    strides = [s // itemsize for s in byte_strides] if byte_strides else _packed_strides(shape)
    return shape, strides


def describe(array):
    """(dims, strides in elements, data_type) of an array, for tensor_like. A 0-d array
    becomes [1]: dnnjit tensors have rank 1 to 8."""
    if _is_torch(array):
        shape, strides, dtype = list(array.shape), list(array.stride()), dtype_from_name(array.dtype)
    else:
        interface = getattr(array, "__cuda_array_interface__", None) or getattr(array, "__array_interface__", None)
        if interface is not None:
            dtype = _dtype_from_typestr(interface["typestr"])
            shape, strides = _interface_layout(interface, int(interface["typestr"][2:]))
        elif hasattr(array, "__dlpack__"):
            _, shape, strides, dtype, _ = _read_dlpack(array)
            if dtype is None:
                raise BadParamError("tensor_like: the DLPack element type has no dnnjit data type")
        else:
            raise TypeError(f"tensor_like: cannot read the layout of a {type(array).__name__} (expected a torch "
                            "tensor, an object with __cuda_array_interface__, __array_interface__ or __dlpack__)")
    if not shape:
        shape, strides = [1], [1]
    return shape, strides, dtype


# ---- host arrays ---------------------------------------------------------------------

def _host_view(array):
    """(address, shape, data_type, keep) of an array in host memory, or None for anything
    else (device arrays, Python buffers, numbers). `keep` must be held while the address
    is read: a NumPy scalar makes a new __array_interface__ at each read, whose "__ref"
    entry alone keeps alive the temporary array the address points into."""
    if _is_torch(array):
        if array.device.type != "cpu":
            return None
        return array.data_ptr(), list(array.shape), dtype_from_name(array.dtype), array
    if hasattr(array, "__cuda_array_interface__"):
        return None
    interface = getattr(array, "__array_interface__", None)
    if interface is not None:
        dtype = _dtype_from_typestr(interface["typestr"])
        return interface["data"][0] or 0, list(interface["shape"]), dtype, interface
    if not hasattr(array, "__dlpack__"):
        return None
    address, shape, _, dtype, device = _read_dlpack(array)
    if device != _DL_CPU:
        return None
    if dtype is None:
        raise BadParamError("the DLPack element type has no dnnjit data type")
    return address, shape, dtype, array


def on_host(array):
    """Whether an array is in host memory (a NumPy array or scalar, a CPU torch tensor, a
    DLPack exporter on the CPU): tensor_like makes such an array a pass-by-value tensor."""
    return _host_view(array) is not None


def host_element(array, what):
    """The one element of a host array as a float, read with the array's own element type
    (the value a pass-by-value tensor gets from the variant pack), or None when `array` is
    not a host array. An array of more than one element is refused, naming `what`."""
    view = _host_view(array)
    if view is None:
        return None
    address, shape, dtype, _ = view  # `view` keeps the memory alive while it is read
    count = math.prod(shape)
    if count != 1:
        raise BadParamError(f"{what} is pass-by-value, which takes one element; the host array given has shape "
                            f"{shape} ({count} elements)")
    return lib.dnnjit_element_load(dtype, address, 0)


# ---- addresses -----------------------------------------------------------------------

def _is_torch(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _cupy_address(a):
    return a.data.ptr


def _cuda_interface_address(a):
    return a.__cuda_array_interface__["data"][0] or 0


def _host_interface_address(a):
    interface = a.__array_interface__
    _check_byte_order(interface["typestr"])
    return interface["data"][0] or 0


def _dlpack_address(a):
    return _read_dlpack(a)[0]


def _ctypes_address(a):
    return ctypes.addressof(a)


def _buffer_address(a):
    return ctypes.addressof((ctypes.c_char * memoryview(a).nbytes).from_buffer(a))


def _address_reader(cls, sample):
    if _is_torch(sample):
        return cls.data_ptr  # the method itself: one C call per address
    if cls.__module__.startswith("cupy") and hasattr(sample, "data") and hasattr(sample.data, "ptr"):
        return _cupy_address
    if hasattr(sample, "__cuda_array_interface__"):
        return _cuda_interface_address
    if hasattr(sample, "__array_interface__"):
        return _host_interface_address
    if hasattr(sample, "__dlpack__"):
        return _dlpack_address
    if isinstance(sample, (ctypes._SimpleCData, ctypes.Array, ctypes.Structure)):
        return _ctypes_address
    try:
        view = memoryview(sample)
    except TypeError:
        view = None
    if view is not None and not view.readonly:
        return _buffer_address
    return None


# type -> function giving the address of a value of that type, learnt on first sight.
ADDRESS_READERS = {int: int, type(None): lambda _: 0}


def learn_address_reader(value):
    """The address reader for type(value), found once and remembered."""
    cls = type(value)
    reader = _address_reader(cls, value)
    if reader is None:
        raise TypeError(f"cannot take the address of a {cls.__name__}: expected a torch tensor, a CuPy array, "
                        "an object with __cuda_array_interface__, __array_interface__ or __dlpack__, a "
                        "writable buffer, or an int address")
    ADDRESS_READERS[cls] = reader
    return reader


def address(value):
    """The memory address of an array, a buffer or a raw int pointer (None gives 0)."""
    reader = ADDRESS_READERS.get(type(value)) or learn_address_reader(value)
    return reader(value)
