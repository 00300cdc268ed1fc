"""Test helpers that need no third-party package: stand-ins for framework arrays, and
host buffers for the CPU reference executor."""
import array
import ctypes
import json
import struct

import dnnjit

# struct formats of the element types a host buffer can hold here.
_FORMAT = {
    dnnjit.data_type.FLOAT: "f", dnnjit.data_type.DOUBLE: "d", dnnjit.data_type.HALF: "e",
    dnnjit.data_type.INT8: "b", dnnjit.data_type.INT32: "i", dnnjit.data_type.INT64: "q",
    dnnjit.data_type.BOOLEAN: "?",
}


class FakeDeviceArray:
    """An object exposing only __cuda_array_interface__ (version 3), like a CuPy array."""

    def __init__(self, shape, typestr="<f2", strides=None, ptr=0x7F0000001000):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3}


class FakeHostArray:
    """An object exposing only __array_interface__, like a NumPy array."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x1000):
        self.__array_interface__ = {"shape": tuple(shape), "typestr": typestr, "strides": strides,
                                    "data": (ptr, False), "version": 3}


class FakeNumpyScalar:
    """Like a NumPy scalar: each read of __array_interface__ makes a new one-element
    buffer, kept alive by nothing but the "__ref" entry of the dict it returns."""

    _CTYPES = {"<i8": ctypes.c_int64, "<f8": ctypes.c_double, "<f4": ctypes.c_float, "|b1": ctypes.c_bool}

    def __init__(self, typestr, value):
        self.typestr, self.value = typestr, value

    @property
    def __array_interface__(self):
        element = self._CTYPES[self.typestr](self.value)
        return {"shape": (), "typestr": self.typestr, "strides": None, "version": 3,
                "data": (ctypes.addressof(element), False), "__ref": element}


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDLPackArray:
    """An object exposing only __dlpack__ and __dlpack_device__, as a torch tensor does:
    packed `values` of a DLPack type (code, bits) in memory it owns, said to be on
    `device_type` (1: the CPU, as a CPU torch tensor; 2: a CUDA device)."""

    _CTYPES = {(2, 32): ctypes.c_float, (2, 64): ctypes.c_double, (0, 64): ctypes.c_int64}

    def __init__(self, values, shape, code=2, bits=32, device_type=1):
        self.data = (self._CTYPES[code, bits] * len(values))(*values)
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.managed = _DLManagedTensor(_DLTensor(
            data=ctypes.addressof(self.data), device_type=device_type, ndim=len(shape), code=code, bits=bits,
            lanes=1, shape=self.shape))
        self.device_type = device_type

    def __dlpack__(self, stream=None):
        # No deleter: the memory is this object's, which the caller keeps.
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (self.device_type, 0)


class HostTensor:
    """Host memory holding `count` elements of a data type, readable as floats.
    `buffer` is what goes into a variant pack."""

    def __init__(self, dtype, values):
        self.dtype = dtype
        self.format = _FORMAT[dtype]
        self.buffer = bytearray(struct.pack(f"<{len(values)}{self.format}", *values))

    @classmethod
    def zeros(cls, dtype, count):
        return cls(dtype, [0] * count)

    def values(self):
        return list(struct.unpack(f"<{len(self.buffer) // struct.calcsize(self.format)}{self.format}",
                                  self.buffer))


def floats(values):
    """A FLOAT host buffer (array.array) of the values."""
    return array.array("f", values)


def uniform(count, seed, low=-1.0, high=1.0):
    """Deterministic pseudo-random floats (a linear congruential generator), exactly
    representable in half precision so that half and float computations agree."""
    out, state = [], seed
    for _ in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        unit = (state >> 11) / 2**53
        out.append(round((low + (high - low) * unit) * 256) / 256)
    return out


def graph_json(g):
    return json.loads(g.to_json())


def close(a, b, tol):
    return all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b)) and len(a) == len(b)
