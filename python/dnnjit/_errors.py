"""The exception hierarchy: one class per dnnjit_status_t, all under dnnjit.Error.

Status codes are matched by name (dnnjit_status_name), never by number, so that codes a
newer library appends map to their class, and codes this package does not know yet
still raise a plain dnnjit.Error that names them.
"""
from ._lib import lib


class Error(Exception):
    """Base of every error the library reports.

    message: the library's detailed message (it names the node, tensor and dimension at
    fault); status: the status name, e.g. "INVALID_GRAPH"; code: its number.
    """

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else _STATUS_OF_CLASS.get(type(self))
        self.code = code


class BadParamError(Error, ValueError):
    """BAD_PARAM: an argument is invalid."""


class InvalidGraphError(Error, ValueError):
    """INVALID_GRAPH: the graph does not validate."""


class NotSupportedError(Error, NotImplementedError):
    """NOT_SUPPORTED: no engine supports the graph, or a needed component (NVRTC) is
    missing."""


class OutOfMemoryError(Error, MemoryError):
    """OUT_OF_MEMORY."""


class ParseError(Error, ValueError):
    """PARSE_ERROR: JSON that does not parse (the message has line and column)."""


class InputOutputError(Error, OSError):
    """IO_ERROR: reading or writing a file failed."""


class BadStateError(Error, RuntimeError):
    """BAD_STATE: the call is not allowed in the graph's current state (e.g. changing a
    built graph, executing before build, executing without a GPU)."""


class NotFoundError(Error, LookupError):
    """NOT_FOUND: no tensor has that uid or name."""


class InternalError(Error, RuntimeError):
    """INTERNAL: a bug in dnnjit."""


class CompileError(Error, RuntimeError):
    """COMPILE_ERROR: NVRTC rejected generated code (the message carries its log)."""


class CudaError(Error, RuntimeError):
    """CUDA_ERROR: the CUDA driver reported a failure."""


# The cuDNN frontend's name for the error a graph nobody supports raises.
cudnnGraphNotSupportedError = NotSupportedError

_CLASS_OF_STATUS = {
    "BAD_PARAM": BadParamError,
    "INVALID_GRAPH": InvalidGraphError,
    "NOT_SUPPORTED": NotSupportedError,
    "OUT_OF_MEMORY": OutOfMemoryError,
    "PARSE_ERROR": ParseError,
    "IO_ERROR": InputOutputError,
    "BAD_STATE": BadStateError,
    "NOT_FOUND": NotFoundError,
    "INTERNAL": InternalError,
    "COMPILE_ERROR": CompileError,
    "CUDA_ERROR": CudaError,
}
_STATUS_OF_CLASS = {cls: name for name, cls in _CLASS_OF_STATUS.items()}


def status_name(code):
    """"BAD_PARAM", ... for a status code, or None for one the library does not know."""
    name = lib.dnnjit_status_name(code)
    return name.decode() if name else None


def error_for(code):
    """The exception for a call that just failed on this thread: its class from the status
    name, its message the thread's last error. The thread's message is used rather than
    the graph's because every failure sets it, including those raised inside helpers
    that know no graph (e.g. execute's device-pointer check); no other dnnjit call runs on
    this thread between the failing call and this one."""
    raw = lib.dnnjit_last_error()
    message = raw.decode("utf-8", "replace") if raw else ""
    name = status_name(code)
    if not message:
        message = lib.dnnjit_status_string(code).decode()
    cls = _CLASS_OF_STATUS.get(name, Error)
    return cls(message, name or f"status {code}", code)


def check(code):
    """Raises the error of a failed call; does nothing on success (0)."""
    if code:
        raise error_for(code)
