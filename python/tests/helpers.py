"""Test helpers that need no third-party package: stand-ins for framework arrays, and
host buffers for the CPU reference executor."""
import array
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
