"""dnnjit: deep-learning graphs compiled just in time, with the cuDNN frontend's Python API.

    import dnnjit as cudnn
    handle = cudnn.create_handle()            # or create_handle(arch="sm_90a"): no GPU needed
    graph = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.HALF,
                          compute_data_type=cudnn.data_type.FLOAT)
    a, b = graph.tensor_like(a_gpu), graph.tensor_like(b_gpu)
    c = graph.matmul(a, b).set_output(True)
    graph.build([cudnn.heur_mode.A])
    graph.execute({a: a_gpu, b: b_gpu, c: c_gpu}, workspace, handle=handle)

Pure Python over ctypes: libdnnjit.so is found through $DNNJIT_LIBRARY, inside the
package (pip install), in a checkout's build/ directory (make), or on the system.
"""
from ._lib import LIBRARY_ENV, LibraryNotFoundError, lib as _clib
from ._errors import (BadParamError, BadStateError, CompileError, CudaError, Error, InputOutputError,
                      InternalError, InvalidGraphError, NotFoundError, NotSupportedError, OutOfMemoryError,
                      ParseError, cudnnGraphNotSupportedError)
from ._enums import (behavior_note, build_plan_policy, data_type, heur_mode, norm_forward_phase, numerical_note,
                     pointwise_mode, reduction_mode, softmax_stats)
from ._handle import Handle, create_handle, destroy_handle, get_stream, set_stream
from ._graph import Tensor, pygraph
from ._decorators import graph, graph_cache, jit

__version__ = "0.1.0"


def backend_version():
    """The loaded library's version as one number: major * 10000 + minor * 100 + patch."""
    major, minor, patch = (int(p) for p in backend_version_string().split(".")[:3])
    return major * 10000 + minor * 100 + patch


def backend_version_string():
    """The loaded library's version, e.g. "0.1.0"."""
    return _clib.dnnjit_version_string().decode()


def library_path():
    """The path of the libdnnjit.so this package loaded."""
    return _clib.dnnjit_path


__all__ = [
    "BadParamError", "BadStateError", "CompileError", "CudaError", "Error", "Handle", "InputOutputError",
    "InternalError", "InvalidGraphError", "LIBRARY_ENV", "LibraryNotFoundError", "NotFoundError",
    "NotSupportedError", "OutOfMemoryError", "ParseError", "Tensor", "backend_version", "backend_version_string",
    "behavior_note", "build_plan_policy", "create_handle", "cudnnGraphNotSupportedError", "data_type",
    "destroy_handle", "get_stream", "graph", "graph_cache", "heur_mode", "jit", "library_path",
    "norm_forward_phase", "numerical_note", "pointwise_mode", "pygraph", "reduction_mode", "set_stream",
    "softmax_stats",
]
