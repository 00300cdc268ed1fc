"""pygraph and Tensor: the cuDNN frontend's graph surface over dnnjit's C API.

Ownership. The C graph lives in a _GraphState that the pygraph and every Tensor of it
reference, and the state references the handle's state: whatever Python drops first,
the C graph is destroyed only when nothing can reach it any more, and always before its
handle. deserialize() gives a pygraph a new state; Tensors of the old one keep the old
C graph alive and are refused by the new one.
"""
import array
import ctypes
import inspect
import math
import operator
import weakref

from . import _lib
from ._buffers import (ADDRESS_READERS, address, describe, dtype_from_name, host_element, learn_address_reader,
                       on_host)
from ._enums import (NUMERICAL_NOTE_BEHAVIOR, behavior_note, build_plan_policy, data_type, heur_mode,
                     norm_forward_phase, notes_from_bits, numerical_note, pointwise_mode, reduction_mode, softmax_stats)
from ._errors import BadParamError, Error, NotSupportedError, check, error_for
from ._handle import Handle, default_handle, stream_address

lib = _lib.lib
_execute = lib.dnnjit_graph_execute
_NONE = 0  # DNNJIT_TENSOR_NONE


class _GraphState:
    """One C graph: its pointer, its handle's state, and what is cached once it is built
    (frozen): the uid of each tensor id, and the element type of each pass-by-value
    tensor whose value comes from the variant pack."""

    __slots__ = ("ptr", "handle", "frozen", "uids", "scalars", "__weakref__")

    def __init__(self, ptr, handle_state):
        self.ptr = ptr
        self.handle = handle_state
        self.frozen = False
        self.uids = {}
        self.scalars = None
        weakref.finalize(self, lib.dnnjit_graph_destroy, ptr)

    def scalar_types(self):
        """{uid: data_type} of the pass-by-value tensors the variant pack must supply."""
        if self.scalars is not None:
            return self.scalars
        found = {}
        count = ctypes.c_int64()
        check(lib.dnnjit_graph_get_tensor_count(self.ptr, ctypes.byref(count)))
        info = _lib.TensorInfo()
        for tid in range(1, count.value + 1):
            check(lib.dnnjit_tensor_get_info(self.ptr, tid, ctypes.byref(info)))
            if info.is_pass_by_value and not info.has_value and info.has_uid:
                found[info.uid] = info.data_type
        if self.frozen:
            self.scalars = found
        return found


def _name_arg(name):
    """None and "" both mean "let the library choose" (cuDNN's default is "")."""
    return name.encode() if name else None


def _text_arg(text, what):
    """A name that must be given, as bytes: anything but a str is refused by name rather
    than failing inside .encode()."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    return text.encode()


def _dtype_arg(value):
    """A data_type from a data_type, an int, None (NOT_SET) or a framework dtype
    (torch.float16, numpy.dtype("float32"), "bfloat16")."""
    if value is None:
        return data_type.NOT_SET
    if isinstance(value, int):
        return data_type(value)
    return dtype_from_name(value)


def _integer(value, what):
    """An int from an int or a NumPy integer; a float, even 3.0, is refused rather than
    truncated (2.7 would silently become 2)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} holds {value!r}, which is not an integer") from None


def _int64_array(values, what):
    values = [_integer(v, what) for v in values]
    if not values:
        raise BadParamError(f"{what} is empty: tensors have rank 1 to {_lib.MAX_DIMS}")
    return len(values), (ctypes.c_int64 * len(values))(*values)


def _mode_list(modes):
    if isinstance(modes, int):
        modes = [modes]
    modes = [int(heur_mode(m)) for m in modes]
    return (ctypes.c_int * len(modes))(*modes), len(modes)


def _take_string(ptr):
    """A string the library handed over (char **): decoded and freed."""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.dnnjit_free(ptr)


class Tensor:
    """A tensor of a pygraph. Setters return the tensor, so they chain:
    out.set_output(True).set_data_type(cudnn.data_type.HALF)."""

    __slots__ = ("_graph", "_id", "__weakref__")

    def __init__(self, graph_state, tensor_id):
        self._graph = graph_state
        self._id = tensor_id

    def _info(self):
        info = _lib.TensorInfo()
        check(lib.dnnjit_tensor_get_info(self._graph.ptr, self._id, ctypes.byref(info)))
        return info

    # ---- getters ----------------------------------------------------------------------

    def get_uid(self):
        """The uid; one is assigned now if none was set."""
        st = self._graph
        uid = st.uids.get(self._id) if st.frozen else None
        if uid is None:
            value = ctypes.c_int64()
            check(lib.dnnjit_tensor_get_uid(st.ptr, self._id, ctypes.byref(value)))
            uid = value.value
            if st.frozen:
                st.uids[self._id] = uid
        return uid

    def get_name(self):
        return self._info().name.decode("utf-8", "replace")

    def get_dim(self):
        info = self._info()
        return list(info.dim[:info.ndim])

    def get_stride(self):
        info = self._info()
        return list(info.stride[:info.ndim])

    def get_data_type(self):
        """The data type: as set, or NOT_SET until validation resolves it."""
        return data_type(self._info().data_type)

    def get_is_virtual(self):
        return self._info().is_virtual

    def get_is_pass_by_value(self):
        return self._info().is_pass_by_value

    uid = property(get_uid)
    name = property(get_name)
    dim = property(get_dim)
    stride = property(get_stride)
    data_type = property(get_data_type)
    is_virtual = property(get_is_virtual)

    # ---- setters (each returns self) ---------------------------------------------------

    def set_output(self, is_output=True):
        check(lib.dnnjit_tensor_set_output(self._graph.ptr, self._id, bool(is_output)))
        return self

    def set_is_virtual(self, is_virtual=True):
        return self.set_output(not is_virtual)

    def set_data_type(self, dtype):
        check(lib.dnnjit_tensor_set_data_type(self._graph.ptr, self._id, _dtype_arg(dtype)))
        return self

    def set_uid(self, uid):
        check(lib.dnnjit_tensor_set_uid(self._graph.ptr, self._id, int(uid)))
        return self

    def set_name(self, name):
        check(lib.dnnjit_tensor_set_name(self._graph.ptr, self._id, _text_arg(name, "set_name: name")))
        return self

    def set_dim(self, dim):
        n, values = _int64_array(dim, "set_dim: dim")
        check(lib.dnnjit_tensor_set_dim(self._graph.ptr, self._id, n, values))
        return self

    def set_stride(self, stride):
        n, values = _int64_array(stride, "set_stride: stride")
        check(lib.dnnjit_tensor_set_stride(self._graph.ptr, self._id, n, values))
        return self

    # ---- identity ----------------------------------------------------------------------

    def __eq__(self, other):
        return type(other) is Tensor and other._graph is self._graph and other._id == self._id

    def __hash__(self):
        return hash((id(self._graph), self._id))

    def __repr__(self):
        info = self._info()
        uid = info.uid if info.has_uid else None
        return (f"<dnnjit.Tensor {info.name.decode('utf-8', 'replace')!r} dim={list(info.dim[:info.ndim])} "
                f"stride={list(info.stride[:info.ndim])} {data_type(info.data_type).name}"
                f"{' virtual' if info.is_virtual else ''}{' pass-by-value' if info.is_pass_by_value else ''} "
                f"uid={uid}>")


# Pointwise helpers: method name -> mode. Forward activations drop "_FWD", backward ones
# become "<name>_backward"; every other mode is its lower-case name.
def _helper_name(mode_name):
    lower = mode_name.lower()
    if lower.endswith("_fwd"):
        return lower[:-4]
    if lower.endswith("_bwd"):
        return lower[:-4] + "_backward"
    return lower


# Keyword arguments of the helpers (cuDNN's names) -> fields of dnnjit_pointwise_attr_t.
_POINTWISE_ALIASES = {
    "negative_slope": "relu_lower_clip_slope",
    "lower_clip": "relu_lower_clip",
    "upper_clip": "relu_upper_clip",
    "alpha": "elu_alpha",
    "softplus_beta": "softplus_beta",
    "swish_beta": "swish_beta",
}
_POINTWISE_DEFAULTED = {"elu_alpha", "softplus_beta", "swish_beta"}
_POINTWISE_FIELDS = {"relu_lower_clip", "relu_upper_clip", "relu_lower_clip_slope", "elu_alpha", "softplus_beta",
                     "swish_beta"}

# The parameters of the pointwise helpers, in cuDNN's positional order: the operands, the
# attributes cuDNN takes by name, compute_data_type and name. dnnjit's other attributes
# (elu's alpha, softplus_beta, ...) follow as keyword-only arguments. A helper not listed
# here takes its operands by arity, as cuDNN names them: input; loss, input (backward);
# a, b; input0, input1, mask.
_OPTIONS = ("compute_data_type", "name")
_HELPER_PARAMETERS = {
    "relu": ("input", "negative_slope", "lower_clip", "upper_clip") + _OPTIONS,
    "relu_backward": ("loss", "input", "negative_slope", "lower_clip", "upper_clip") + _OPTIONS,
    "swish": ("input", "swish_beta") + _OPTIONS,
    "swish_backward": ("loss", "input", "compute_data_type", "swish_beta", "name"),
    **{op: ("input0", "input1") + _OPTIONS for op in ("max", "min", "mod", "pow")},
    **{f"cmp_{op}": ("input", "comparison") + _OPTIONS for op in ("eq", "neq", "gt", "ge", "lt", "le")},
}
_OPERANDS_BY_ARITY = {1: ("input",), 2: ("a", "b"), 3: ("input0", "input1", "mask")}

# cuDNN's helpers that name a mode otherwise: name -> (mode, parameters, how many of them
# are required, doc).
_ALIAS_HELPERS = {
    "bias": ("ADD", ("input", "bias") + _OPTIONS, 2, "input + bias, the bias broadcast"),
    "scale": ("MUL", ("input", "scale") + _OPTIONS, 2, "input * scale, the scale broadcast"),
    "leaky_relu": ("RELU_FWD", ("input", "negative_slope") + _OPTIONS, 2,
                   "input where it is positive, else input * negative_slope"),
    "leaky_relu_backward": ("RELU_BWD", ("loss", "input", "negative_slope") + _OPTIONS, 3,
                            "loss where input is positive, else loss * negative_slope: the gradient"),
}


class pygraph:
    """A graph of tensors and operations, as in the cuDNN frontend.

    handle: a Handle from create_handle() (None: the process's shared default handle).
    io_data_type / intermediate_data_type / compute_data_type: the defaults of inputs and
    outputs, of virtual tensors, and of every node's computation. name: for messages.
    """

    def __init__(self, name=None, io_data_type=None, intermediate_data_type=None, compute_data_type=None,
                 handle=None):
        if handle is None:
            handle = default_handle()
        if not isinstance(handle, Handle):
            raise TypeError(f"handle must be a dnnjit Handle (cudnn.create_handle()), not {type(handle).__name__}")
        hstate = handle._live_state()
        attr = _lib.GraphAttr(_name_arg(name), _dtype_arg(io_data_type), _dtype_arg(intermediate_data_type),
                              _dtype_arg(compute_data_type))
        ptr = ctypes.c_void_p()
        check(lib.dnnjit_graph_create(hstate.ptr, ctypes.byref(attr), ctypes.byref(ptr)))
        self._st = _GraphState(ptr.value, hstate)

    @classmethod
    def _adopt(cls, ptr, hstate, frozen):
        g = cls.__new__(cls)
        g._st = _GraphState(ptr, hstate)
        g._st.frozen = frozen
        return g

    # ---- tensors ----------------------------------------------------------------------

    def _tensor_id(self, t, what):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be a dnnjit Tensor, not {type(t).__name__}")
        if t._graph is not self._st:
            raise BadParamError(f"{what}: tensor belongs to another graph")
        return t._id

    def _operand(self, x, what):
        """A tensor id for an op input: a Tensor of this graph, or a Python number, which
        becomes a pass-by-value FLOAT constant."""
        if x is None:
            return _NONE
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return self.tensor(dim=[1], data_type=data_type.FLOAT, is_pass_by_value=True, value=float(x))._id
        return self._tensor_id(x, what)

    def _wrap(self, tensor_id):
        return Tensor(self._st, tensor_id) if tensor_id else None

    def tensor(self, dim, stride=None, data_type=None, is_virtual=False, is_pass_by_value=False, name=None, *,
               value=None, uid=None):
        """A graph input. stride: elements, outermost first (None: packed row-major).
        data_type None: the graph's io type. is_pass_by_value: a scalar (all dims 1) given
        by value; `value` fixes it in the graph, else the variant pack supplies it (a
        Python number or a host buffer). uid: a fixed uid (else one is assigned)."""
        ndim, dims = _int64_array(dim, "tensor: dim")
        strides = None
        if stride is not None:
            nstride, strides = _int64_array(stride, "tensor: stride")
            if nstride != ndim:
                raise BadParamError(f"tensor: {ndim} dims but {nstride} strides")
        desc = _lib.TensorDesc(
            name=_name_arg(name), ndim=ndim, dim=dims, stride=strides, data_type=_dtype_arg(data_type),
            is_virtual=bool(is_virtual), is_pass_by_value=bool(is_pass_by_value), has_value=value is not None,
            value=float(value) if value is not None else 0.0, has_uid=uid is not None,
            uid=int(uid) if uid is not None else 0)
        out = _lib.c_tensor()
        check(lib.dnnjit_graph_tensor(self._st.ptr, ctypes.byref(desc), ctypes.byref(out)))
        return Tensor(self._st, out.value)

    def tensor_like(self, input, name=None, *, is_pass_by_value=None):
        """A graph input with the dims, strides and element type of `input`: a torch
        tensor, a CuPy or NumPy array, anything with __cuda_array_interface__,
        __array_interface__ or __dlpack__, or a Tensor (of any graph).

        As in cuDNN, an array in host memory (a NumPy array or scalar, a CPU torch tensor)
        makes a pass-by-value tensor, whose value the variant pack gives: it must hold one
        element. is_pass_by_value=False describes a host array as an ordinary tensor
        instead (for execute_reference, which reads host buffers)."""
        if isinstance(input, Tensor):
            info = input._info()
            return self.tensor(dim=info.dim[:info.ndim], stride=info.stride[:info.ndim], data_type=info.data_type,
                               is_pass_by_value=info.is_pass_by_value, name=name)
        dims, strides, dtype = describe(input)
        if is_pass_by_value is None:
            is_pass_by_value = on_host(input)
            if is_pass_by_value and math.prod(dims) != 1:
                raise BadParamError(
                    f"tensor_like{f' {name!r}' if name else ''}: a host (CPU) array makes a pass-by-value tensor, "
                    f"which holds one element, but this one has shape {dims}; give a device array, or "
                    "is_pass_by_value=False for an ordinary tensor on host buffers (execute_reference)")
        return self.tensor(dim=dims, stride=strides, data_type=dtype, is_pass_by_value=is_pass_by_value, name=name)

    def tensor_by_uid(self, uid):
        """The tensor with this uid (NotFoundError if none): how a deserialized graph's
        tensors are reached."""
        out = _lib.c_tensor()
        check(lib.dnnjit_graph_find_tensor_by_uid(self._st.ptr, int(uid), ctypes.byref(out)))
        return Tensor(self._st, out.value)

    def tensor_by_name(self, name):
        out = _lib.c_tensor()
        check(lib.dnnjit_graph_find_tensor_by_name(self._st.ptr, _text_arg(name, "tensor_by_name: name"),
                                                   ctypes.byref(out)))
        return Tensor(self._st, out.value)

    def _count(self, fn):
        count = ctypes.c_int64()
        check(fn(self._st.ptr, ctypes.byref(count)))
        return count.value

    def tensors(self):
        """Every tensor, in creation order."""
        return [Tensor(self._st, i) for i in range(1, self._count(lib.dnnjit_graph_get_tensor_count) + 1)]

    @property
    def tensor_count(self):
        return self._count(lib.dnnjit_graph_get_tensor_count)

    @property
    def node_count(self):
        return self._count(lib.dnnjit_graph_get_node_count)

    @property
    def name(self):
        attr = _lib.GraphAttr()
        check(lib.dnnjit_graph_get_attr(self._st.ptr, ctypes.byref(attr)))
        return attr.name.decode("utf-8", "replace") if attr.name else ""

    # ---- operations --------------------------------------------------------------------

    def _outputs(self, n):
        return [_lib.c_tensor() for _ in range(n)]

    def matmul(self, A, B, compute_data_type=None, padding=0.0, name=None):
        """C[..., M, N] = A[..., M, K] @ B[..., K, N], batch dims broadcast."""
        attr = _lib.MatmulAttr(_name_arg(name), _dtype_arg(compute_data_type), float(padding))
        (c,) = self._outputs(1)
        check(lib.dnnjit_graph_matmul(self._st.ptr, self._tensor_id(A, "matmul: A"),
                                               self._tensor_id(B, "matmul: B"), ctypes.byref(attr), ctypes.byref(c)))
        return self._wrap(c.value)

    def pointwise(self, mode, input0, input1=None, input2=None, compute_data_type=None, name=None, **attrs):
        """out = mode(input0[, input1[, input2]]) with numpy broadcasting. attrs:
        relu_lower_clip, relu_upper_clip, relu_lower_clip_slope, elu_alpha, softplus_beta,
        swish_beta (or cuDNN's negative_slope, lower_clip, upper_clip, alpha)."""
        fields = {}
        for key, value in attrs.items():
            field = _POINTWISE_ALIASES.get(key, key)
            if field not in _POINTWISE_FIELDS:
                raise TypeError(f"pointwise: unexpected keyword argument {key!r}")
            if field in fields:
                raise TypeError(f"pointwise: {key!r} sets {field}, which another argument set already")
            if value is not None:
                fields[field] = float(value)
                # A number given is used as it is, 0 included (the C API reads 0 alone
                # as "the default").
                if field in _POINTWISE_DEFAULTED:
                    fields["has_" + field] = True
        upper = fields.pop("relu_upper_clip", None)
        attr = _lib.PointwiseAttr(name=_name_arg(name), mode=int(pointwise_mode(mode)),
                                  compute_data_type=_dtype_arg(compute_data_type),
                                  has_relu_upper_clip=upper is not None,
                                  relu_upper_clip=upper if upper is not None else 0.0, **fields)
        ins = [self._operand(x, f"pointwise: input{i}") for i, x in enumerate((input0, input1, input2))]
        (out,) = self._outputs(1)
        check(lib.dnnjit_graph_pointwise(self._st.ptr, ctypes.byref(attr), *ins, ctypes.byref(out)))
        return self._wrap(out.value)

    def reduction(self, input, mode, compute_data_type=None, name=None, *, axes=None):
        """Y = mode-reduction of input over `axes` (a list of axis numbers). Y keeps the
        rank with 1 on reduced axes. axes None: every axis, unless Y's dims are fixed
        later with set_dim (cuDNN's way), which then names the reduced axes."""
        mask = 0
        for axis in axes or ():
            if not 0 <= axis < _lib.MAX_DIMS:
                raise BadParamError(f"reduction: axis {axis} is outside 0..{_lib.MAX_DIMS - 1}")
            mask |= 1 << axis
        attr = _lib.ReductionAttr(_name_arg(name), int(reduction_mode(mode)), _dtype_arg(compute_data_type), mask)
        (y,) = self._outputs(1)
        check(lib.dnnjit_graph_reduction(self._st.ptr, self._tensor_id(input, "reduction: input"),
                                                  ctypes.byref(attr), ctypes.byref(y)))
        return self._wrap(y.value)

    def softmax(self, input, stats=softmax_stats.NONE, compute_data_type=None, name=None):
        """Softmax over the last axis. stats NONE gives S; LOG_SUM_EXP gives [S, lse];
        MAX_SUM_EXP gives [S, max, sum_exp] (stats FLOAT, last axis 1)."""
        stats = softmax_stats(stats)
        attr = _lib.SoftmaxAttr(_name_arg(name), _dtype_arg(compute_data_type), int(stats))
        outs = self._outputs(3)
        check(lib.dnnjit_graph_softmax(self._st.ptr, self._tensor_id(input, "softmax: input"),
                                                ctypes.byref(attr), *(ctypes.byref(o) for o in outs)))
        if stats == softmax_stats.NONE:
            return self._wrap(outs[0].value)
        return [self._wrap(o.value) for o in outs[:2 if stats == softmax_stats.LOG_SUM_EXP else 3]]

    def softmax_backward(self, y, dy, compute_data_type=None, name=None):
        """dX = Y * (dY - sum(dY * Y)) over the last axis."""
        attr = _lib.SoftmaxAttr(_name_arg(name), _dtype_arg(compute_data_type), 0)
        (dx,) = self._outputs(1)
        check(lib.dnnjit_graph_softmax_backward(
            self._st.ptr, self._tensor_id(y, "softmax_backward: y"), self._tensor_id(dy, "softmax_backward: dy"),
            ctypes.byref(attr), ctypes.byref(dx)))
        return self._wrap(dx.value)

    def _norm_attr(self, name, phase, epsilon, compute_data_type, norm_axes):
        """A dnnjit_norm_attr_t; epsilon is a Tensor (pass-by-value or not), a number, or
        None (1e-5)."""
        attr = _lib.NormAttr(name=_name_arg(name), phase=int(norm_forward_phase(phase)),
                             compute_data_type=_dtype_arg(compute_data_type), norm_axes=int(norm_axes))
        if isinstance(epsilon, Tensor):
            attr.epsilon = self._tensor_id(epsilon, "epsilon")
        elif epsilon is not None:
            attr.epsilon_value = float(epsilon)
            attr.has_epsilon_value = True
        return attr

    def layernorm(self, norm_forward_phase, input, scale, bias, epsilon=None, compute_data_type=None, name=None, *,
                  norm_axes=0):
        """[Y, mean, inv_variance] (the statistics are None in the INFERENCE phase). The
        last `norm_axes` axes are normalised (0: every axis but the first)."""
        attr = self._norm_attr(name, norm_forward_phase, epsilon, compute_data_type, norm_axes)
        outs = self._outputs(3)
        check(lib.dnnjit_graph_layernorm(
            self._st.ptr, self._tensor_id(input, "layernorm: input"), self._tensor_id(scale, "layernorm: scale"),
            self._tensor_id(bias, "layernorm: bias"), ctypes.byref(attr), *(ctypes.byref(o) for o in outs)))
        return [self._wrap(o.value) for o in outs]

    def rmsnorm(self, norm_forward_phase, input, scale, bias=None, epsilon=None, compute_data_type=None, name=None, *,
                norm_axes=0):
        """[Y, inv_variance] (inv_variance None in the INFERENCE phase); bias optional."""
        attr = self._norm_attr(name, norm_forward_phase, epsilon, compute_data_type, norm_axes)
        outs = self._outputs(2)
        check(lib.dnnjit_graph_rmsnorm(
            self._st.ptr, self._tensor_id(input, "rmsnorm: input"), self._tensor_id(scale, "rmsnorm: scale"),
            self._operand(bias, "rmsnorm: bias"), ctypes.byref(attr), *(ctypes.byref(o) for o in outs)))
        return [self._wrap(o.value) for o in outs]

    def layernorm_backward(self, grad, input, scale, mean, inv_variance, compute_data_type=None, name=None, *,
                           has_dbias=True, norm_axes=0):
        """[dX, dscale, dbias] from the saved statistics (dbias None unless has_dbias)."""
        attr = self._norm_attr(name, norm_forward_phase.TRAINING, None, compute_data_type, norm_axes)
        outs = self._outputs(3)
        ids = [self._tensor_id(t, f"layernorm_backward: {what}") for t, what in
               ((grad, "grad"), (input, "input"), (scale, "scale"), (mean, "mean"), (inv_variance, "inv_variance"))]
        check(lib.dnnjit_graph_layernorm_backward(
            self._st.ptr, *ids, ctypes.byref(attr), ctypes.byref(outs[0]), ctypes.byref(outs[1]),
            ctypes.byref(outs[2]) if has_dbias else None))
        return [self._wrap(o.value) for o in outs]

    def rmsnorm_backward(self, grad, input, scale, inv_variance, has_dbias=False, compute_data_type=None, name=None, *,
                         norm_axes=0):
        """[dX, dscale, dbias] (dbias None unless has_dbias)."""
        attr = self._norm_attr(name, norm_forward_phase.TRAINING, None, compute_data_type, norm_axes)
        outs = self._outputs(3)
        ids = [self._tensor_id(t, f"rmsnorm_backward: {what}") for t, what in
               ((grad, "grad"), (input, "input"), (scale, "scale"), (inv_variance, "inv_variance"))]
        check(lib.dnnjit_graph_rmsnorm_backward(
            self._st.ptr, *ids, ctypes.byref(attr), ctypes.byref(outs[0]), ctypes.byref(outs[1]),
            ctypes.byref(outs[2]) if has_dbias else None))
        return [self._wrap(o.value) for o in outs]

    def sdpa(self, q, k, v, is_inference=None, attn_scale=None, *, use_causal_mask=False, generate_stats=None,
             compute_data_type=None, name=None):
        """Scaled dot-product attention: [O, Stats]. q [b, h_q, s_q, d], k [b, h_k, s_kv, d],
        v [b, h_v, s_kv, d_v]; attn_scale None: 1/sqrt(d). Stats (the log-sum-exp of each
        row of scores, [b, h_q, s_q, 1]) is made when generate_stats is true (or, as in
        older cuDNN, is_inference is false); else it is None. The positional parameters
        are cuDNN's; the rest, which cuDNN places after options dnnjit lacks (bias,
        dropout, ...), are keyword-only."""
        if generate_stats is None:
            generate_stats = is_inference is not None and not is_inference
        if isinstance(attn_scale, Tensor):
            raise NotSupportedError("sdpa: attn_scale as a tensor is not supported; give a number")
        attr = _lib.SdpaAttr(name=_name_arg(name), compute_data_type=_dtype_arg(compute_data_type),
                             has_attn_scale=attn_scale is not None,
                             attn_scale=float(attn_scale) if attn_scale is not None else 0.0,
                             use_causal_mask=bool(use_causal_mask), generate_stats=bool(generate_stats))
        outs = self._outputs(2)
        check(lib.dnnjit_graph_sdpa(
            self._st.ptr, self._tensor_id(q, "sdpa: q"), self._tensor_id(k, "sdpa: k"), self._tensor_id(v, "sdpa: v"),
            ctypes.byref(attr), ctypes.byref(outs[0]), ctypes.byref(outs[1])))
        return [self._wrap(o.value) for o in outs]

    # ---- validation and the staged build --------------------------------------------

    def validate(self):
        check(lib.dnnjit_graph_validate(self._st.ptr))

    def build_operation_graph(self):
        check(lib.dnnjit_graph_build_operation_graph(self._st.ptr))
        self._st.frozen = True

    def create_execution_plans(self, heur_modes=heur_mode.A):
        modes, n = _mode_list(heur_modes)
        check(lib.dnnjit_graph_create_execution_plans(self._st.ptr, modes, n))
        self._st.frozen = True

    def check_support(self):
        check(lib.dnnjit_graph_check_support(self._st.ptr))

    def deselect_behavior_notes(self, notes):
        """Drops the plans with any of these behavior notes (a list of behavior_note, or
        one) from the list, between create_execution_plans and build_plans."""
        bits = 0
        for note in notes if isinstance(notes, (list, tuple, set)) else [notes]:
            bits |= int(behavior_note(note))
        check(lib.dnnjit_graph_deselect_behavior_notes(self._st.ptr, bits))

    def deselect_numeric_notes(self, notes):
        """Drops the plans with any of these numerical notes (a list of numerical_note, or
        one), as deselect_behavior_notes does. dnnjit's plans report DOWN_CONVERT_INPUTS
        and NONDETERMINISTIC; the other notes are refused (NotSupportedError), as no
        plan says whether it has them."""
        behaviors = []
        for note in notes if isinstance(notes, (list, tuple, set)) else [notes]:
            note = numerical_note(note)
            if note not in NUMERICAL_NOTE_BEHAVIOR:
                raise NotSupportedError(f"deselect_numeric_notes: dnnjit's plans do not report {note.name}; they "
                                        "report " + " and ".join(n.name for n in NUMERICAL_NOTE_BEHAVIOR))
            behaviors.append(NUMERICAL_NOTE_BEHAVIOR[note])
        self.deselect_behavior_notes(behaviors)

    def build_plans(self, policy=build_plan_policy.HEURISTICS_CHOICE):
        check(lib.dnnjit_graph_build_plans(self._st.ptr, int(build_plan_policy(policy))))

    def build_plan_at_index(self, index):
        check(lib.dnnjit_graph_build_plan_at_index(self._st.ptr, int(index)))

    def build(self, heur_modes=heur_mode.A):
        """validate, build_operation_graph, create_execution_plans(heur_modes),
        check_support and build_plans in one call."""
        modes, n = _mode_list(heur_modes)
        check(lib.dnnjit_graph_build(self._st.ptr, modes, n))
        self._st.frozen = True

    # ---- plans ------------------------------------------------------------------------

    def get_execution_plan_count(self):
        return self._count(lib.dnnjit_graph_get_plan_count)

    def get_plan_name_at_index(self, index):
        name = ctypes.c_void_p()
        check(lib.dnnjit_graph_get_plan_name(self._st.ptr, int(index), ctypes.byref(name)))
        return _take_string(name)

    def get_behavior_notes_for_plan_at_index(self, index):
        bits = ctypes.c_uint32()
        check(lib.dnnjit_graph_get_plan_behavior_notes(self._st.ptr, int(index), ctypes.byref(bits)))
        return notes_from_bits(bits.value)

    def get_chosen_plan_index(self):
        """The index of the plan execute runs, or -1 before one is built."""
        return self._count(lib.dnnjit_graph_get_chosen_plan)

    def get_behavior_notes(self):
        """The behavior notes of the chosen plan ([] before one is built)."""
        chosen = self.get_chosen_plan_index()
        return self.get_behavior_notes_for_plan_at_index(chosen) if chosen >= 0 else []

    def get_plan_source(self, index=None):
        """The CUDA source plan `index` generates (default: the chosen plan, else plan 0)."""
        if index is None:
            index = max(self.get_chosen_plan_index(), 0)
        source = ctypes.c_void_p()
        check(lib.dnnjit_graph_get_plan_source(self._st.ptr, int(index), ctypes.byref(source)))
        return _take_string(source)

    def get_workspace_size(self):
        return self._count(lib.dnnjit_graph_get_workspace_size)

    def get_workspace_size_plan_at_index(self, index):
        """The workspace plan `index` needs. The library gives the workspace of the chosen
        plan only, so only the chosen plan's index is answered; any other plan's raises
        NotSupportedError (build_plan_at_index(index) makes it the chosen one)."""
        index = _integer(index, "get_workspace_size_plan_at_index: index")
        count = self.get_execution_plan_count()
        if not 0 <= index < count:
            raise BadParamError(f"get_workspace_size_plan_at_index: index {index} is outside the {count} plans")
        chosen = self.get_chosen_plan_index()
        if index != chosen:
            raise NotSupportedError(
                f"get_workspace_size_plan_at_index({index}): dnnjit gives the workspace of the chosen plan only "
                f"({'plan ' + str(chosen) if chosen >= 0 else 'none is built yet'}); build_plan_at_index({index}) "
                "chooses this one")
        return self.get_workspace_size()

    # ---- execution --------------------------------------------------------------------

    def _uid_of(self, key):
        """The uid a variant pack key names: an int uid, or a Tensor of this graph (whose
        uid is remembered once the graph is built and can no longer change)."""
        if type(key) is Tensor:
            st = self._st
            if key._graph is not st:
                raise BadParamError("variant pack: a tensor of another graph is a key (after deserialize, use uids)")
            uid = st.uids.get(key._id)
            if uid is None:
                uid = key.get_uid()
            return uid
        if isinstance(key, int) and not isinstance(key, bool):
            return int(key)
        raise TypeError(f"variant pack keys are Tensors or int uids, not {type(key).__name__}")

    def _pack(self, variant_pack, scalars, keep):
        """The variant pack as dnnjit_variant_t records ({int64 uid, void *ptr}, two
        int64 words each). A Python number or a one-element host array (a NumPy array or
        scalar, a CPU torch tensor, read with its own element type) given for a
        pass-by-value tensor (a uid in `scalars`) is stored in a buffer of the tensor's
        type, kept alive in `keep` until the call returns; other buffers (array.array,
        ctypes, ...) are taken to hold that type already. This runs on every execute,
        hence the local names."""
        words = []
        append = words.append
        readers = ADDRESS_READERS
        uid_of = self._uid_of
        for key, value in variant_pack.items():
            uid = key if type(key) is int else uid_of(key)
            if scalars and uid in scalars:
                number = value if isinstance(value, (int, float)) else host_element(
                    value, f"variant pack: tensor uid {uid}")
                if number is not None:
                    buf = ctypes.create_string_buffer(8)
                    lib.dnnjit_element_store(scalars[uid], buf, 0, float(number))
                    keep.append(buf)
                    value = ctypes.addressof(buf)
            append(uid)
            append((readers.get(type(value)) or learn_address_reader(value))(value))
        return array.array("q", words)

    def _stream_for(self, handle, stream):
        if stream is not None:
            return stream_address(stream)
        if handle is not None:
            if not isinstance(handle, Handle):
                raise TypeError(f"handle must be a dnnjit Handle, not {type(handle).__name__}")
            return handle._live_state().stream
        return self._st.handle.stream

    def _run(self, fn, variant_pack, scalars, *tail):
        """fn(graph, pack, n, *tail) with the variant pack as dnnjit_variant_t records."""
        keep = []
        words = self._pack(variant_pack, scalars, keep)
        status = fn(self._st.ptr, words.buffer_info()[0], len(words) >> 1, *tail)
        if status:
            raise error_for(status)

    def execute(self, variant_pack, workspace=None, handle=None, stream=None):
        """Runs the chosen plan. variant_pack: {Tensor or uid: buffer}, buffers being torch
        tensors, CuPy arrays, objects with __cuda_array_interface__ or __dlpack__, or int
        device addresses; pass-by-value tensors take a Python number, a one-element host
        array (NumPy, CPU torch; converted from its type) or a host buffer of their type.
        workspace: get_workspace_size() bytes of device memory (None when 0). The stream
        is `stream` if given, else `handle`'s (cudnn.set_stream), else the graph's handle's,
        which is the default stream unless set. Does not synchronize."""
        st = self._st
        self._run(_execute, variant_pack, st.scalar_types() if st.frozen else None, address(workspace),
                  self._stream_for(handle, stream))

    def execute_reference(self, variant_pack):
        """Runs the graph on the CPU in float64 (the definition of every op). Buffers are
        host memory (NumPy arrays, torch CPU tensors, array.array, bytearray, ctypes
        arrays, int addresses) holding each tensor's data type at its strides."""
        self.validate()
        self._run(lib.dnnjit_graph_execute_reference, variant_pack, self._st.scalar_types())

    def autotune(self, variant_pack, workspace=None, handle=None, stream=None):
        """Times the built plans on these buffers and makes the fastest the chosen one
        (build_plans(build_plan_policy.ALL) first)."""
        self._run(_optional("dnnjit_graph_autotune"), variant_pack, self._st.scalar_types(), address(workspace),
                  self._stream_for(handle, stream))

    # ---- persistence ------------------------------------------------------------------

    def serialize(self):
        """The built graph (with its chosen plan and compiled kernels) as bytes, for
        deserialize()."""
        fn = _optional("dnnjit_graph_serialize")
        blob, size = ctypes.c_void_p(), ctypes.c_size_t()
        check(fn(self._st.ptr, ctypes.byref(blob), ctypes.byref(size)))
        try:
            return ctypes.string_at(blob, size.value)
        finally:
            lib.dnnjit_free(blob)

    def deserialize(self, handle_or_data, data=None):
        """Replaces this graph with one serialize() made (bytes, bytearray, memoryview or a
        list of ints, as cuDNN's serialize returns), ready to execute; its tensors are
        reached by uid. JSON text (a str, as print(graph) shows it) gives the graph it
        describes, not yet built, as in cuDNN. Called as deserialize(data) it keeps this
        graph's handle, as deserialize(handle, data) it takes that handle (whose
        architecture must be the blob's)."""
        if data is None:
            hstate, data = self._st.handle, handle_or_data
        elif isinstance(handle_or_data, Handle):
            hstate = handle_or_data._live_state()
        else:
            raise TypeError(f"deserialize(handle, data): handle must be a dnnjit Handle, not "
                            f"{type(handle_or_data).__name__}")
        ptr = ctypes.c_void_p()
        if isinstance(data, str):
            check(lib.dnnjit_graph_from_json(hstate.ptr, data.encode(), ctypes.byref(ptr)))
            self._st = _GraphState(ptr.value, hstate)
            return
        if not isinstance(data, (bytes, bytearray, memoryview, list, tuple)):
            raise TypeError(f"deserialize: data must be what serialize() returns (bytes or a list of ints), a "
                            f"bytearray or memoryview, or JSON text (str), not {type(data).__name__}")
        data = bytes(data)
        check(_optional("dnnjit_graph_deserialize")(hstate.ptr, data, len(data), ctypes.byref(ptr)))
        self._st = _GraphState(ptr.value, hstate)
        self._st.frozen = True

    def to_json(self):
        """The graph as JSON text (validated first; schema: docs/graph-json.md)."""
        text = ctypes.c_void_p()
        check(lib.dnnjit_graph_to_json(self._st.ptr, ctypes.byref(text)))
        return _take_string(text)

    @classmethod
    def from_json(cls, text, handle=None):
        """A graph from JSON text (as to_json writes it)."""
        hstate = (handle if handle is not None else default_handle())._live_state()
        ptr = ctypes.c_void_p()
        check(lib.dnnjit_graph_from_json(hstate.ptr, text.encode(), ctypes.byref(ptr)))
        return cls._adopt(ptr.value, hstate, False)

    def __str__(self):
        """The graph as JSON, as cuDNN prints it; a graph the library cannot write yet
        (still being built, so not valid) prints as its tensors and why."""
        try:
            return self.to_json()
        except Error as e:
            tensors = "".join(f"\n  {t!r}" for t in self.tensors())
            return f"{self!r}, not valid yet ({e.message}); its tensors:{tensors}"

    def __repr__(self):
        return f"<dnnjit.pygraph {self.name!r}: {self.tensor_count} tensors, {self.node_count} nodes>"


def _optional(name):
    fn = _lib.optional(lib, name)
    if fn is None:
        raise NotSupportedError(f"{name} is not in {lib.dnnjit_path} (version "
                                f"{lib.dnnjit_version_string().decode()}); rebuild the library")
    return fn


def _make_pointwise_helper(name, mode, parameters, required, doc):
    """pygraph.<name>: a pointwise `mode` node, called with `parameters` (the first
    `required` without default), then dnnjit's other attributes by keyword."""
    operands = parameters[:mode.arity()]
    P = inspect.Parameter
    signature = inspect.Signature(
        [P(p, P.POSITIONAL_OR_KEYWORD, default=P.empty if i < required else None) for i, p in enumerate(parameters)]
        + [P("attrs", P.VAR_KEYWORD)])

    def helper(self, *args, **kwargs):
        try:
            given = signature.bind(*args, **kwargs).arguments
        except TypeError as e:
            raise TypeError(f"{name}(): {e}") from None
        attrs = given.pop("attrs", {})
        inputs = [given.pop(p) for p in operands]
        return self.pointwise(mode, *inputs, **given, **attrs)

    helper.__name__ = name
    helper.__qualname__ = f"pygraph.{name}"
    helper.__signature__ = signature.replace(
        parameters=[P("self", P.POSITIONAL_OR_KEYWORD), *signature.parameters.values()])
    helper.__doc__ = f"A pointwise {mode.name} node ({doc})."
    return helper


def _pointwise_helpers():
    """(name, mode, parameters, required, doc) of every pointwise helper."""
    for mode in pointwise_mode:
        name = _helper_name(mode.name)
        backward = mode.name.endswith("_BWD")
        operands = ("loss", "input") if backward else _OPERANDS_BY_ARITY[mode.arity()]
        parameters = _HELPER_PARAMETERS.get(name, operands + _OPTIONS)
        if backward:
            doc = "the gradient loss * f'(input)"
        elif mode == pointwise_mode.BINARY_SELECT:
            doc = "mask ? input0 : input1"
        else:
            doc = ", ".join(parameters[:mode.arity()])
        yield name, mode, parameters, mode.arity(), doc
    for name, (mode_name, parameters, required, doc) in _ALIAS_HELPERS.items():
        yield name, pointwise_mode[mode_name], parameters, required, doc


for _helper in _pointwise_helpers():
    setattr(pygraph, _helper[0], _make_pointwise_helper(*_helper))
del _helper
