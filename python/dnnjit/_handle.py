"""Handles: the GPU (or the named architecture) graphs compile for, and the stream they run on.

The C handle must outlive every graph made with it. Python code may drop or destroy
handles and graphs in any order, so the C handle lives in a _HandleState that the Handle
and every graph made with it reference; it is destroyed when the last of them goes.
destroy_handle() only gives up the Handle's reference.
"""
import ctypes
import threading
import weakref

from ._errors import BadStateError, check
from ._lib import lib


class _HandleState:
    __slots__ = ("ptr", "arch", "has_device", "stream", "__weakref__")

    def __init__(self, ptr):
        self.ptr = ptr
        weakref.finalize(self, lib.dnnjit_handle_destroy, ptr)
        arch = ctypes.create_string_buffer(64)
        has_device = ctypes.c_bool()
        check(lib.dnnjit_handle_get_arch(ptr, arch, len(arch), ctypes.byref(has_device)))
        self.arch = arch.value.decode()
        self.has_device = has_device.value
        self.stream = 0


def stream_address(stream):
    """A CUstream as an int from an int, None (the default stream), a torch.cuda.Stream
    (cuda_stream), a CuPy stream (ptr) or an object with __cuda_stream__."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    raise TypeError(f"not a CUDA stream: {type(stream).__name__} (give an int, a torch.cuda.Stream, a CuPy stream "
                    "or an object with __cuda_stream__)")


class Handle:
    """A dnnjit handle (create with create_handle). Attributes: arch (the architecture
    kernels compile for, "" when there is none), has_device (whether graphs can execute),
    stream (the CUstream execute uses, 0 for the default stream)."""

    __slots__ = ("_state", "__weakref__")

    def __init__(self, arch=None):
        ptr = ctypes.c_void_p()
        if arch is None:
            check(lib.dnnjit_handle_create(ctypes.byref(ptr)))
        else:
            check(lib.dnnjit_handle_create_for_arch(arch.encode(), ctypes.byref(ptr)))
        self._state = _HandleState(ptr.value)

    def _live_state(self):
        if self._state is None:
            raise BadStateError("this handle was destroyed (cudnn.destroy_handle)")
        return self._state

    @property
    def arch(self):
        return self._live_state().arch

    @property
    def has_device(self):
        return self._live_state().has_device

    @property
    def stream(self):
        return self._live_state().stream

    @stream.setter
    def stream(self, stream):
        self._live_state().stream = stream_address(stream)

    def __repr__(self):
        if self._state is None:
            return "<dnnjit.Handle (destroyed)>"
        where = "GPU" if self._state.has_device else "no GPU"
        return f"<dnnjit.Handle arch={self._state.arch or 'none'!r} ({where}) stream={self._state.stream:#x}>"


def create_handle(arch=None):
    """A new handle. Without arguments it targets GPU 0 when a driver and a GPU are present
    (and otherwise can only validate and plan). With arch="sm_90a" (or "sm_80", ...) it
    needs no GPU at all: graphs made with it validate, plan, generate and compile for that
    architecture and serialize, but cannot execute."""
    return Handle(arch)


def destroy_handle(handle):
    """Releases the handle. Graphs made with it keep working; the C handle is freed with
    the last of them. Using the Handle afterwards raises BadStateError."""
    handle._state = None


def set_stream(handle, stream):
    """Makes `handle`'s graphs execute on `stream` (an int CUstream, a torch.cuda.Stream, a
    CuPy stream; None for the default stream)."""
    handle.stream = stream


def get_stream(handle):
    """The CUstream (int) `handle`'s graphs execute on; 0 is the default stream."""
    return handle.stream


_default_lock = threading.Lock()
_default = None


def default_handle():
    """The process's shared handle for graphs made without one (cudnn.pygraph())."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Handle()
        return _default
