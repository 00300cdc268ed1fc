"""Finding libdnnjit.so and declaring the C functions the package calls.

Everything in this module mirrors include/dnnjit.h: the structs are laid out exactly as
the C compiler lays them out (tests/test_abi.py checks this against the header when a C
compiler is at hand), and every function gets its argument and result types so that
ctypes converts Python ints and None without guessing.
"""
import ctypes
import ctypes.util
import os

LIBRARY_ENV = "DNNJIT_LIBRARY"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFoundError(ImportError):
    """libdnnjit.so could not be loaded; the message lists every place that was tried."""


def _candidates():
    """(description, path or name) in the order they are tried.

    An explicit $DNNJIT_LIBRARY comes first and is the only candidate when set, so that a
    test run or a user pointing at one build never silently gets another. Then the copy
    that `pip install` puts inside the package, then the library a checkout's `make`
    builds (python/../build), then whatever the dynamic loader finds on the system.
    """
    explicit = os.environ.get(LIBRARY_ENV)
    if explicit:
        return [(f"${LIBRARY_ENV}", explicit)]
    found = [
        ("inside the package", os.path.join(_PACKAGE_DIR, "libdnnjit.so")),
        ("in the checkout's build directory", os.path.join(_PACKAGE_DIR, "..", "..", "build", "libdnnjit.so")),
    ]
    system = ctypes.util.find_library("dnnjit")
    if system:
        found.append(("on the system (ctypes.util.find_library)", system))
    found.append(("on the loader's search path", "libdnnjit.so.0"))
    return found


def load_library():
    """Loads the first candidate that loads; raises LibraryNotFoundError naming all."""
    tried = []
    for where, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{where}: {path} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{where}: {path} ({e})")
            continue
        lib.dnnjit_path = os.path.realpath(path) if os.sep in path else path
        return lib
    raise LibraryNotFoundError(
        "dnnjit: cannot load libdnnjit.so. Tried:\n  " + "\n  ".join(tried) +
        f"\nBuild it (`make` in the repository, or `pip install ./python`), or set ${LIBRARY_ENV} "
        "to its path.")


# ---- the structs of dnnjit.h --------------------------------------------------------

MAX_DIMS = 8
c_status = ctypes.c_int
c_enum = ctypes.c_int
c_tensor = ctypes.c_uint32
c_int64_p = ctypes.POINTER(ctypes.c_int64)


class GraphAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("io_data_type", c_enum), ("intermediate_data_type", c_enum),
                ("compute_data_type", c_enum)]


class TensorDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ndim", ctypes.c_int), ("dim", c_int64_p), ("stride", c_int64_p),
                ("data_type", c_enum), ("is_virtual", ctypes.c_bool), ("is_pass_by_value", ctypes.c_bool),
                ("has_value", ctypes.c_bool), ("value", ctypes.c_double), ("has_uid", ctypes.c_bool),
                ("uid", ctypes.c_int64)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ndim", ctypes.c_int), ("dim", ctypes.c_int64 * MAX_DIMS),
                ("stride", ctypes.c_int64 * MAX_DIMS), ("data_type", c_enum), ("is_virtual", ctypes.c_bool),
                ("is_pass_by_value", ctypes.c_bool), ("has_value", ctypes.c_bool), ("value", ctypes.c_double),
                ("has_uid", ctypes.c_bool), ("uid", ctypes.c_int64), ("producer", ctypes.c_int64)]


class MatmulAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("compute_data_type", c_enum), ("padding_value", ctypes.c_double)]


class PointwiseAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("mode", c_enum), ("compute_data_type", c_enum),
                ("relu_lower_clip", ctypes.c_double), ("has_relu_upper_clip", ctypes.c_bool),
                ("relu_upper_clip", ctypes.c_double), ("relu_lower_clip_slope", ctypes.c_double),
                ("elu_alpha", ctypes.c_double), ("softplus_beta", ctypes.c_double), ("swish_beta", ctypes.c_double),
                ("has_elu_alpha", ctypes.c_bool), ("has_softplus_beta", ctypes.c_bool),
                ("has_swish_beta", ctypes.c_bool)]


class ReductionAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("mode", c_enum), ("compute_data_type", c_enum),
                ("axes", ctypes.c_uint32)]


class SoftmaxAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("compute_data_type", c_enum), ("stats", c_enum)]


class NormAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("phase", c_enum), ("compute_data_type", c_enum),
                ("norm_axes", ctypes.c_int), ("epsilon", c_tensor), ("epsilon_value", ctypes.c_double),
                ("has_epsilon_value", ctypes.c_bool)]


class SdpaAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("compute_data_type", c_enum), ("has_attn_scale", ctypes.c_bool),
                ("attn_scale", ctypes.c_double), ("use_causal_mask", ctypes.c_bool),
                ("generate_stats", ctypes.c_bool)]


class Variant(ctypes.Structure):
    _fields_ = [("uid", ctypes.c_int64), ("ptr", ctypes.c_void_p)]


# ---- the functions --------------------------------------------------------------------

_P = ctypes.c_void_p
_T = c_tensor
_TP = ctypes.POINTER(c_tensor)
_I64P = c_int64_p

# name: (result type, argument types). Every function of dnnjit.h the package calls.
_SIGNATURES = {
    "dnnjit_status_string": (ctypes.c_char_p, [c_status]),
    "dnnjit_status_name": (ctypes.c_char_p, [c_status]),
    "dnnjit_last_error": (ctypes.c_char_p, []),
    "dnnjit_free": (None, [_P]),
    "dnnjit_version_string": (ctypes.c_char_p, []),
    "dnnjit_data_type_name": (ctypes.c_char_p, [c_enum]),
    "dnnjit_data_type_size": (ctypes.c_size_t, [c_enum]),
    "dnnjit_pointwise_mode_name": (ctypes.c_char_p, [c_enum]),
    "dnnjit_pointwise_mode_arity": (ctypes.c_int, [c_enum]),
    "dnnjit_reduction_mode_name": (ctypes.c_char_p, [c_enum]),
    "dnnjit_handle_create": (c_status, [ctypes.POINTER(_P)]),
    "dnnjit_handle_create_for_arch": (c_status, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "dnnjit_handle_destroy": (None, [_P]),
    "dnnjit_handle_get_arch": (c_status, [_P, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_bool)]),
    "dnnjit_graph_create": (c_status, [_P, ctypes.POINTER(GraphAttr), ctypes.POINTER(_P)]),
    "dnnjit_graph_destroy": (None, [_P]),
    "dnnjit_graph_get_attr": (c_status, [_P, ctypes.POINTER(GraphAttr)]),
    "dnnjit_graph_get_tensor_count": (c_status, [_P, _I64P]),
    "dnnjit_graph_get_node_count": (c_status, [_P, _I64P]),
    "dnnjit_graph_tensor": (c_status, [_P, ctypes.POINTER(TensorDesc), _TP]),
    "dnnjit_tensor_get_info": (c_status, [_P, _T, ctypes.POINTER(TensorInfo)]),
    "dnnjit_tensor_get_uid": (c_status, [_P, _T, _I64P]),
    "dnnjit_graph_find_tensor_by_uid": (c_status, [_P, ctypes.c_int64, _TP]),
    "dnnjit_graph_find_tensor_by_name": (c_status, [_P, ctypes.c_char_p, _TP]),
    "dnnjit_tensor_set_output": (c_status, [_P, _T, ctypes.c_bool]),
    "dnnjit_tensor_set_data_type": (c_status, [_P, _T, c_enum]),
    "dnnjit_tensor_set_uid": (c_status, [_P, _T, ctypes.c_int64]),
    "dnnjit_tensor_set_name": (c_status, [_P, _T, ctypes.c_char_p]),
    "dnnjit_tensor_set_dim": (c_status, [_P, _T, ctypes.c_int, _I64P]),
    "dnnjit_tensor_set_stride": (c_status, [_P, _T, ctypes.c_int, _I64P]),
    "dnnjit_graph_matmul": (c_status, [_P, _T, _T, ctypes.POINTER(MatmulAttr), _TP]),
    "dnnjit_graph_pointwise": (c_status, [_P, ctypes.POINTER(PointwiseAttr), _T, _T, _T, _TP]),
    "dnnjit_graph_reduction": (c_status, [_P, _T, ctypes.POINTER(ReductionAttr), _TP]),
    "dnnjit_graph_softmax": (c_status, [_P, _T, ctypes.POINTER(SoftmaxAttr), _TP, _TP, _TP]),
    "dnnjit_graph_softmax_backward": (c_status, [_P, _T, _T, ctypes.POINTER(SoftmaxAttr), _TP]),
    "dnnjit_graph_layernorm": (c_status, [_P, _T, _T, _T, ctypes.POINTER(NormAttr), _TP, _TP, _TP]),
    "dnnjit_graph_rmsnorm": (c_status, [_P, _T, _T, _T, ctypes.POINTER(NormAttr), _TP, _TP]),
    "dnnjit_graph_layernorm_backward": (c_status, [_P, _T, _T, _T, _T, _T, ctypes.POINTER(NormAttr), _TP, _TP, _TP]),
    "dnnjit_graph_rmsnorm_backward": (c_status, [_P, _T, _T, _T, _T, ctypes.POINTER(NormAttr), _TP, _TP, _TP]),
    "dnnjit_graph_sdpa": (c_status, [_P, _T, _T, _T, ctypes.POINTER(SdpaAttr), _TP, _TP]),
    "dnnjit_graph_validate": (c_status, [_P]),
    "dnnjit_graph_to_json": (c_status, [_P, ctypes.POINTER(_P)]),
    "dnnjit_graph_from_json": (c_status, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "dnnjit_graph_execute_reference": (c_status, [_P, _P, ctypes.c_size_t]),
    "dnnjit_graph_build_operation_graph": (c_status, [_P]),
    "dnnjit_graph_create_execution_plans": (c_status, [_P, ctypes.POINTER(c_enum), ctypes.c_int]),
    "dnnjit_graph_check_support": (c_status, [_P]),
    "dnnjit_graph_deselect_behavior_notes": (c_status, [_P, ctypes.c_uint32]),
    "dnnjit_graph_build_plans": (c_status, [_P, c_enum]),
    "dnnjit_graph_build_plan_at_index": (c_status, [_P, ctypes.c_int64]),
    "dnnjit_graph_build": (c_status, [_P, ctypes.POINTER(c_enum), ctypes.c_int]),
    "dnnjit_graph_get_plan_count": (c_status, [_P, _I64P]),
    "dnnjit_graph_get_plan_name": (c_status, [_P, ctypes.c_int64, ctypes.POINTER(_P)]),
    "dnnjit_graph_get_plan_behavior_notes": (c_status, [_P, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint32)]),
    "dnnjit_graph_get_chosen_plan": (c_status, [_P, _I64P]),
    "dnnjit_graph_get_plan_source": (c_status, [_P, ctypes.c_int64, ctypes.POINTER(_P)]),
    "dnnjit_graph_get_workspace_size": (c_status, [_P, _I64P]),
    "dnnjit_graph_execute": (c_status, [_P, _P, ctypes.c_size_t, _P, _P]),
    "dnnjit_element_load": (ctypes.c_double, [c_enum, _P, ctypes.c_int64]),
    "dnnjit_element_store": (None, [c_enum, _P, ctypes.c_int64, ctypes.c_double]),
}

# Functions newer than some libraries in the field: looked up on first use (optional()),
# so that the package still imports against a library that lacks them.
_OPTIONAL_SIGNATURES = {
    "dnnjit_graph_serialize": (c_status, [_P, ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_size_t)]),
    "dnnjit_graph_deserialize": (c_status, [_P, _P, ctypes.c_size_t, ctypes.POINTER(_P)]),
    "dnnjit_graph_autotune": (c_status, [_P, _P, ctypes.c_size_t, _P, _P]),
}


def _declare(fn, signature):
    fn.restype, fn.argtypes = signature
    return fn


def declare_all(lib):
    """Gives every required function its types; a missing one means a library too old
    for this package, reported as LibraryNotFoundError naming the function."""
    for name, signature in _SIGNATURES.items():
        try:
            _declare(getattr(lib, name), signature)
        except AttributeError:
            raise LibraryNotFoundError(f"dnnjit: {lib.dnnjit_path} lacks {name}; it is older than this package "
                                       "(rebuild it)") from None
    return lib


def optional(lib, name):
    """The optional function `name`, typed, or None when the library lacks it."""
    fn = getattr(lib, name, None)
    return _declare(fn, _OPTIONAL_SIGNATURES[name]) if fn is not None else None


lib = declare_all(load_library())
