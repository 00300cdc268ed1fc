"""Building graphs: tensors, tensor_like, setters, every op and its outputs."""
import inspect

import pytest

import dnnjit as cudnn
from helpers import FakeDeviceArray, FakeDLPackArray, FakeHostArray, FakeNumpyScalar, graph_json

F = cudnn.data_type.FLOAT
H = cudnn.data_type.HALF


@pytest.fixture
def g(arch_handle):
    return cudnn.pygraph(handle=arch_handle, io_data_type=F, intermediate_data_type=F, compute_data_type=F)


def test_tensor_keeps_name_dims_strides_and_type(g):
    t = g.tensor(name="A", dim=[4, 64, 128], stride=[64 * 128, 1, 64], data_type=H)
    assert (t.get_name(), t.get_dim(), t.get_stride(), t.get_data_type()) == ("A", [4, 64, 128], [8192, 1, 64], H)
    assert (t.name, t.dim, t.stride, t.data_type) == ("A", [4, 64, 128], [8192, 1, 64], H)
    assert not t.get_is_virtual() and not t.get_is_pass_by_value()


def test_tensor_without_stride_is_packed_row_major(g):
    assert g.tensor(dim=[2, 3, 5]).get_stride() == [15, 5, 1]


def test_data_type_accepts_enum_int_and_framework_names(g):
    assert g.tensor(dim=[1], data_type=cudnn.data_type.BFLOAT16).data_type == cudnn.data_type.BFLOAT16
    assert g.tensor(dim=[1], data_type=int(H)).data_type == H
    assert g.tensor(dim=[1], data_type="float16").data_type == H
    assert g.tensor(dim=[1], data_type="torch.bfloat16").data_type == cudnn.data_type.BFLOAT16
    with pytest.raises(cudnn.BadParamError, match="complex64"):
        g.tensor(dim=[1], data_type="complex64")


def test_setters_chain_and_take_effect(g):
    x = g.tensor(name="x", dim=[4, 8])
    y = g.relu(x)
    assert y.get_is_virtual()
    same = y.set_output(True).set_data_type(H).set_uid(42).set_name("y")
    assert same is y
    assert (y.get_is_virtual(), y.get_data_type(), y.get_uid(), y.get_name()) == (False, H, 42, "y")
    assert y.set_is_virtual(True).get_is_virtual()


def test_set_dim_and_set_stride_fix_an_output_layout(g):
    x = g.tensor(name="x", dim=[2, 3])
    y = g.relu(x).set_output(True).set_dim([2, 3]).set_stride([1, 2])
    assert (y.get_dim(), y.get_stride()) == ([2, 3], [1, 2])
    g.validate()
    assert graph_json(g)["tensors"][y.name]["stride"] == [1, 2]


def test_names_must_be_strings(g):
    t = g.tensor(name="a", dim=[2])
    with pytest.raises(TypeError, match="set_name: name must be a str, not NoneType"):
        t.set_name(None)
    with pytest.raises(TypeError, match="tensor_by_name: name must be a str, not NoneType"):
        g.tensor_by_name(None)


class IndexLike:
    """An integer that is not an int, as numpy.int64 is."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_dims_and_strides_must_be_integers(g):
    t = g.tensor(dim=[IndexLike(2), 3], stride=[IndexLike(3), 1])
    assert (t.get_dim(), t.get_stride()) == ([2, 3], [3, 1])
    for call in (lambda: g.tensor(dim=[2.7, 3]), lambda: g.tensor(dim=[2.0, 3]),
                 lambda: g.tensor(dim=[2, 3], stride=[1.5, 1]), lambda: t.set_dim([2, 3.5]),
                 lambda: t.set_stride([3.0, 1])):
        with pytest.raises(TypeError, match="not an integer"):
            call()
    assert t.get_dim() == [2, 3]


def test_uids_are_assigned_on_demand_and_unique(g):
    a, b = g.tensor(name="a", dim=[2]), g.tensor(name="b", dim=[2], uid=100)
    g.add(a, b).set_output(True)
    uids = [t.get_uid() for t in g.tensors()]
    assert 100 in uids and len(set(uids)) == 3


def test_tensor_like_reads_a_cuda_array_interface_with_byte_strides(g):
    # A transposed half array: strides in bytes become strides in elements.
    t = g.tensor_like(FakeDeviceArray((3, 4), "<f2", strides=(2, 6)), name="t")
    assert (t.get_dim(), t.get_stride(), t.get_data_type(), t.get_name()) == ([3, 4], [1, 3], H, "t")


def test_tensor_like_reads_an_array_interface_and_packs_missing_strides(g):
    t = g.tensor_like(FakeHostArray((2, 3, 4), "<i4"), is_pass_by_value=False)
    assert (t.get_dim(), t.get_stride(), t.get_data_type()) == ([2, 3, 4], [12, 4, 1], cudnn.data_type.INT32)


def test_tensor_like_of_a_0d_array_is_one_element(g):
    assert g.tensor_like(FakeHostArray((), "<f8")).get_dim() == [1]


def test_tensor_like_of_a_host_scalar_is_pass_by_value_as_in_cudnn(g):
    # cuDNN's sample 20: epsilon = graph.tensor_like(torch.full((1, 1, 1, 1), 1e-3)), a CPU tensor.
    for host in (FakeHostArray((1, 1, 1, 1), "<f4"), FakeDLPackArray([1e-3], (1, 1, 1, 1))):
        t = g.tensor_like(host)
        assert t.get_is_pass_by_value() and t.get_dim() == [1, 1, 1, 1]
    assert g.tensor_like(FakeNumpyScalar("<f8", 1e-3)).get_is_pass_by_value()
    for device in (FakeDeviceArray((1, 1)), FakeDLPackArray([0.0], (1, 1), device_type=2)):
        assert not g.tensor_like(device).get_is_pass_by_value()
    assert not g.tensor_like(FakeHostArray((1,), "<f4"), is_pass_by_value=False).get_is_pass_by_value()


def test_tensor_like_refuses_a_host_array_of_many_elements(g):
    for host in (FakeHostArray((2, 3), "<f4"), FakeDLPackArray([0.0] * 6, (2, 3))):
        with pytest.raises(cudnn.BadParamError, match=r"tensor_like 'eps': .* pass-by-value .* shape \[2, 3\]"):
            g.tensor_like(host, name="eps")
        assert not g.tensor_like(host, is_pass_by_value=False).get_is_pass_by_value()


def test_tensor_like_refuses_a_foreign_byte_order(g):
    with pytest.raises(cudnn.BadParamError, match="byte order"):
        g.tensor_like(FakeHostArray((4,), ">f4"), is_pass_by_value=False)


def test_tensor_like_copies_a_tensor_of_any_graph(g, arch_handle):
    other = cudnn.pygraph(handle=arch_handle)
    src = other.tensor(dim=[5, 6], stride=[1, 5], data_type=H)
    t = g.tensor_like(src)
    assert (t.get_dim(), t.get_stride(), t.get_data_type()) == ([5, 6], [1, 5], H)


def test_tensor_like_rejects_unknown_types_and_objects(g):
    with pytest.raises(cudnn.BadParamError, match="u1"):
        g.tensor_like(FakeHostArray((2,), "|u1"))
    with pytest.raises(TypeError, match="__dlpack__"):
        g.tensor_like(object())


def test_tensor_like_of_numpy_arrays_and_views():
    np = pytest.importorskip("numpy")
    g = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"))
    a = np.zeros((4, 6), dtype=np.float16)
    assert g.tensor_like(a, is_pass_by_value=False).get_stride() == [6, 1]
    t = g.tensor_like(a.T, is_pass_by_value=False)
    assert (t.get_dim(), t.get_stride(), t.get_data_type()) == ([6, 4], [1, 6], H)


def test_tensor_like_of_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    g = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"))
    t = g.tensor_like(torch.zeros(3, 5, dtype=torch.bfloat16).t(), is_pass_by_value=False)
    assert (t.get_dim(), t.get_stride(), t.get_data_type()) == ([5, 3], [1, 5], cudnn.data_type.BFLOAT16)


def test_matmul_broadcasts_batch_dims(g):
    a = g.tensor(name="a", dim=[1, 64, 32])
    b = g.tensor(name="b", dim=[8, 32, 16])
    c = g.matmul(a, b, name="mm")
    assert c.get_dim() == [8, 64, 16] and c.get_name() == "mm::C"
    c2 = g.matmul(A=a, B=b, compute_data_type=F)
    assert c2.get_dim() == [8, 64, 16]


def test_bias_is_a_broadcast_pointwise_add(g):
    x = g.tensor(name="x", dim=[4, 64, 16])
    out = g.bias(name="bias", input=x, bias=g.tensor(name="d", dim=[1, 64, 16]))
    out.set_output(True)
    (node,) = graph_json(g)["nodes"]
    assert (node["tag"], node["mode"], node["name"]) == ("POINTWISE", "ADD", "bias")
    assert out.get_dim() == [4, 64, 16]


def helper_inputs(g, arity):
    return [g.tensor(dim=[2, 3]) for _ in range(arity)]


@pytest.mark.parametrize("mode", list(cudnn.pointwise_mode), ids=lambda m: m.name)
def test_every_pointwise_mode_has_a_helper_making_its_node(g, mode):
    name = mode.name.lower().replace("_fwd", "").replace("_bwd", "_backward")
    helper = getattr(g, name)
    out = helper(*helper_inputs(g, mode.arity()), name="n")
    out.set_output(True)
    (node,) = graph_json(g)["nodes"]
    assert (node["tag"], node["mode"], node["name"]) == ("POINTWISE", mode.name, "n")
    assert out.get_dim() == [2, 3]


def test_pointwise_attributes_reach_the_node(g):
    x = g.tensor(name="x", dim=[4])
    g.relu(x, negative_slope=0.1, lower_clip=-1.0, upper_clip=6.0, name="r").set_output(True)
    g.elu(x, alpha=0.5, name="e").set_output(True)
    g.swish(x, swish_beta=2.0, name="s").set_output(True)
    g.softplus(x, softplus_beta=3.0, name="p").set_output(True)
    nodes = {n["name"]: n for n in graph_json(g)["nodes"]}
    assert (nodes["r"]["relu_lower_clip_slope"], nodes["r"]["relu_lower_clip"]) == (0.1, -1.0)
    assert nodes["r"]["has_relu_upper_clip"] and nodes["r"]["relu_upper_clip"] == 6.0
    assert not nodes["e"]["has_relu_upper_clip"]
    assert (nodes["e"]["elu_alpha"], nodes["s"]["swish_beta"], nodes["p"]["softplus_beta"]) == (0.5, 2.0, 3.0)


def test_zero_attributes_are_used_as_given(g):
    # The C API reads a 0 alone as "the default"; a 0 given here must still be 0.
    x = g.tensor(name="x", dim=[4, 16])
    g.elu(x, alpha=0.0, name="e").set_output(True)
    g.swish(x, swish_beta=0.0, name="s").set_output(True)
    g.elu(x, name="d").set_output(True)
    scale, bias = g.tensor(name="sc", dim=[1, 16]), g.tensor(name="b", dim=[1, 16])
    g.layernorm(cudnn.norm_forward_phase.INFERENCE, x, scale, bias, epsilon=0.0, name="ln")[0].set_output(True)
    g.rmsnorm(cudnn.norm_forward_phase.INFERENCE, x, scale, name="rn")[0].set_output(True)
    nodes = {n["name"]: n for n in graph_json(g)["nodes"]}
    assert (nodes["e"]["elu_alpha"], nodes["s"]["swish_beta"], nodes["d"]["elu_alpha"]) == (0.0, 0.0, 1.0)
    assert (nodes["ln"]["epsilon_value"], nodes["rn"]["epsilon_value"]) == (0.0, 1e-5)
    with pytest.raises(cudnn.InvalidGraphError, match="softplus_beta is 0"):
        g.softplus(x, softplus_beta=0.0, name="p")


def test_pointwise_rejects_unknown_keywords(g):
    with pytest.raises(TypeError, match="gamma"):
        g.relu(g.tensor(dim=[1]), gamma=1.0)
    with pytest.raises(TypeError, match="relu_lower_clip_slope, which another argument set"):
        g.relu(g.tensor(dim=[1]), 0.1, relu_lower_clip_slope=0.2)


# The parameters of cuDNN's op methods, in order (the cuDNN frontend's python/pygraph/*.cpp),
# for every op dnnjit has; dnnjit's own parameters may only follow, keyword-only.
_UNARY = ("input", "compute_data_type", "name")
_BINARY = ("a", "b", "compute_data_type", "name")
_BACKWARD = ("loss", "input", "compute_data_type", "name")
CUDNN_PARAMETERS = {
    **{op: _UNARY for op in ("sqrt", "tanh", "elu", "gelu", "sigmoid", "softplus", "gelu_approx_tanh", "erf",
                             "identity", "exp", "log", "neg", "abs", "ceil", "floor", "rsqrt", "reciprocal", "sin",
                             "cos", "tan", "logical_not")},
    **{op: _BINARY for op in ("add", "mul", "sub", "div", "add_square", "logical_and", "logical_or")},
    **{op: _BACKWARD for op in ("tanh_backward", "sigmoid_backward", "elu_backward", "gelu_backward",
                                "softplus_backward", "gelu_approx_tanh_backward")},
    **{op: ("input0", "input1", "compute_data_type", "name") for op in ("max", "min", "mod", "pow")},
    **{f"cmp_{op}": ("input", "comparison", "compute_data_type", "name")
       for op in ("eq", "neq", "gt", "ge", "lt", "le")},
    "bias": ("input", "bias", "compute_data_type", "name"),
    "scale": ("input", "scale", "compute_data_type", "name"),
    "relu": ("input", "negative_slope", "lower_clip", "upper_clip", "compute_data_type", "name"),
    "leaky_relu": ("input", "negative_slope", "compute_data_type", "name"),
    "swish": ("input", "swish_beta", "compute_data_type", "name"),
    "relu_backward": ("loss", "input", "negative_slope", "lower_clip", "upper_clip", "compute_data_type", "name"),
    "leaky_relu_backward": ("loss", "input", "negative_slope", "compute_data_type", "name"),
    "swish_backward": ("loss", "input", "compute_data_type", "swish_beta", "name"),
    "binary_select": ("input0", "input1", "mask", "compute_data_type", "name"),
    "matmul": ("A", "B", "compute_data_type", "padding", "name"),
    "reduction": ("input", "mode", "compute_data_type", "name"),
    "layernorm": ("norm_forward_phase", "input", "scale", "bias", "epsilon", "compute_data_type", "name"),
    "rmsnorm": ("norm_forward_phase", "input", "scale", "bias", "epsilon", "compute_data_type", "name"),
    "layernorm_backward": ("grad", "input", "scale", "mean", "inv_variance", "compute_data_type", "name"),
    "rmsnorm_backward": ("grad", "input", "scale", "inv_variance", "has_dbias", "compute_data_type", "name"),
    "sdpa": ("q", "k", "v", "is_inference", "attn_scale"),
    "tensor_like": ("input", "name"),
}


@pytest.mark.parametrize("op", sorted(CUDNN_PARAMETERS))
def test_op_methods_take_cudnns_parameters_in_cudnns_order(g, op):
    parameters = list(inspect.signature(getattr(g, op)).parameters.values())
    expected = CUDNN_PARAMETERS[op]
    assert tuple(p.name for p in parameters[:len(expected)]) == expected
    assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in parameters[len(expected):])


def test_positional_arguments_mean_what_they_mean_in_cudnn(g):
    q, k, v = (g.tensor(name=n, dim=[1, 2, 16, 64]) for n in "qkv")
    o, stats = g.sdpa(q, k, v, True, 0.125, name="attn")  # is_inference, attn_scale
    assert stats is None
    o.set_output(True)
    o2, stats2 = g.sdpa(q, k, v, False)
    assert stats2 is not None
    o2.set_output(True)
    stats2.set_output(True)
    x = g.tensor(name="x", dim=[4, 8])
    g.reduction(x, cudnn.reduction_mode.ADD, cudnn.data_type.DOUBLE, "sum").set_output(True)
    g.relu(x, 0.1, -1.0, 6.0, F, "r").set_output(True)
    g.swish_backward(x, x, F, 2.0, "sb").set_output(True)
    g.leaky_relu(x, 0.2, F, "l").set_output(True)
    g.leaky_relu_backward(x, x, 0.3, F, "lb").set_output(True)
    g.scale(x, 2.0, F, "s").set_output(True)
    nodes = {n["name"]: n for n in graph_json(g)["nodes"]}
    attn = nodes["attn"]
    assert (attn["attn_scale"], attn["use_causal_mask"], attn["generate_stats"]) == (0.125, False, False)
    assert (nodes["sum"]["tag"], nodes["sum"]["compute_data_type"]) == ("REDUCTION", "DOUBLE")
    r = nodes["r"]
    assert (r["relu_lower_clip_slope"], r["relu_lower_clip"], r["relu_upper_clip"]) == (0.1, -1.0, 6.0)
    assert (nodes["sb"]["mode"], nodes["sb"]["swish_beta"]) == ("SWISH_BWD", 2.0)
    assert (nodes["l"]["mode"], nodes["l"]["relu_lower_clip_slope"]) == ("RELU_FWD", 0.2)
    assert (nodes["lb"]["mode"], nodes["lb"]["relu_lower_clip_slope"]) == ("RELU_BWD", 0.3)
    assert nodes["s"]["mode"] == "MUL"
    dx, _, dbias = g.layernorm_backward(x, x, g.tensor(dim=[1, 8]), g.tensor(dim=[4, 1]), g.tensor(dim=[4, 1]), F,
                                        "lnb")
    assert dx.get_name().startswith("lnb") and dbias is not None
    assert g.rmsnorm_backward(x, x, g.tensor(dim=[1, 8]), g.tensor(dim=[4, 1]), True, F, "rnb")[2] is not None


def test_cudnn_keyword_names_are_accepted(g):
    x, t = g.tensor(name="x", dim=[4]), g.tensor(name="t", dim=[4])
    g.cmp_gt(input=x, comparison=t, name="gt").set_output(True)
    for op in ("max", "min", "pow", "mod"):
        getattr(g, op)(input0=x, input1=t, name=op).set_output(True)
    g.leaky_relu(input=x, negative_slope=0.01, name="lr").set_output(True)
    g.scale(input=x, scale=t, name="sc").set_output(True)
    g.binary_select(input0=x, input1=t, mask=g.cmp_lt(x, t), name="sel").set_output(True)
    modes = {n["name"]: n["mode"] for n in graph_json(g)["nodes"]}
    assert {k: modes[k] for k in ("gt", "max", "pow", "lr", "sc", "sel")} == {
        "gt": "CMP_GT", "max": "MAX", "pow": "POW", "lr": "RELU_FWD", "sc": "MUL", "sel": "BINARY_SELECT"}
    with pytest.raises(TypeError, match="negative_slope"):
        g.leaky_relu(x)


def test_python_numbers_become_pass_by_value_constants(g):
    x = g.tensor(name="x", dim=[3])
    g.mul(x, 2.5, name="scale").set_output(True)
    doc = graph_json(g)
    constant = doc["tensors"][doc["nodes"][0]["inputs"]["IN_1"]]
    assert constant["is_pass_by_value"] and constant["pass_by_value"] == 2.5


def test_reduction_reduces_the_named_axes(g):
    x = g.tensor(name="x", dim=[2, 3, 4])
    assert g.reduction(x, cudnn.reduction_mode.ADD, axes=[1, 2]).set_output(True).get_dim() == [2, 1, 1]
    y = g.reduction(input=x, mode=cudnn.reduction_mode.MAX).set_dim([2, 3, 1]).set_output(True)
    g.validate()
    assert y.get_dim() == [2, 3, 1]
    with pytest.raises(cudnn.BadParamError, match="axis 9"):
        g.reduction(x, cudnn.reduction_mode.ADD, axes=[9])


def test_softmax_outputs_follow_the_stats_kind(g):
    p = g.tensor(name="p", dim=[2, 8])
    s = g.softmax(p)
    assert isinstance(s, cudnn.Tensor) and s.get_dim() == [2, 8]
    s, lse = g.softmax(p, stats=cudnn.softmax_stats.LOG_SUM_EXP)
    assert lse.get_dim() == [2, 1]
    s, mx, total = g.softmax(p, stats=cudnn.softmax_stats.MAX_SUM_EXP)
    assert mx.get_dim() == total.get_dim() == [2, 1]
    dx = g.softmax_backward(s, g.tensor(name="dy", dim=[2, 8]))
    assert dx.get_dim() == [2, 8]


def test_layernorm_outputs_by_phase(g):
    x = g.tensor(name="x", dim=[4, 16])
    scale, bias = g.tensor(name="s", dim=[1, 16]), g.tensor(name="b", dim=[1, 16])
    y, mean, inv_var = g.layernorm(cudnn.norm_forward_phase.TRAINING, x, scale, bias, epsilon=1e-3)
    assert (y.get_dim(), mean.get_dim(), inv_var.get_dim()) == ([4, 16], [4, 1], [4, 1])
    y, mean, inv_var = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.INFERENCE, input=x, scale=scale,
                                   bias=bias)
    assert y is not None and mean is None and inv_var is None
    dx, dscale, dbias = g.layernorm_backward(g.tensor(name="dy", dim=[4, 16]), x, scale, mean=g.tensor(
        name="m", dim=[4, 1]), inv_variance=g.tensor(name="iv", dim=[4, 1]))
    assert (dx.get_dim(), dscale.get_dim(), dbias.get_dim()) == ([4, 16], [1, 16], [1, 16])


def test_norm_epsilon_may_be_a_tensor(g):
    x = g.tensor(name="x", dim=[4, 16])
    eps = g.tensor(name="eps", dim=[1, 1], is_pass_by_value=True)
    y, _ = g.rmsnorm(cudnn.norm_forward_phase.INFERENCE, x, g.tensor(name="s", dim=[1, 16]), epsilon=eps)
    y.set_output(True)
    assert graph_json(g)["nodes"][0]["inputs"]["EPSILON"] == "eps"


def test_rmsnorm_and_its_backward(g):
    x = g.tensor(name="x", dim=[4, 16])
    scale = g.tensor(name="s", dim=[1, 16])
    y, inv_rms = g.rmsnorm(cudnn.norm_forward_phase.TRAINING, x, scale, epsilon=1e-6)
    assert inv_rms.get_dim() == [4, 1]
    dx, dscale, dbias = g.rmsnorm_backward(g.tensor(name="dy", dim=[4, 16]), x, scale, inv_rms)
    assert dx.get_dim() == [4, 16] and dscale.get_dim() == [1, 16] and dbias is None
    assert g.rmsnorm_backward(g.tensor(name="dy2", dim=[4, 16]), x, scale, inv_rms, has_dbias=True)[2] is not None


def test_sdpa_outputs(g):
    q = g.tensor(name="q", dim=[2, 8, 16, 64])
    k = g.tensor(name="k", dim=[2, 2, 32, 64])
    v = g.tensor(name="v", dim=[2, 2, 32, 48])
    o, stats = g.sdpa(q=q, k=k, v=v, generate_stats=True, attn_scale=0.125, use_causal_mask=True, name="attn")
    assert (o.get_dim(), stats.get_dim()) == ([2, 8, 16, 48], [2, 8, 16, 1])
    assert g.sdpa(q, k, v)[1] is None
    assert g.sdpa(q, k, v, is_inference=False)[1] is not None
    assert g.sdpa(q, k, v, is_inference=True)[1] is None


def test_tensors_compare_by_graph_and_id(g):
    a = g.tensor(name="a", dim=[2], uid=5)
    assert g.tensor_by_name("a") == a and hash(g.tensor_by_uid(5)) == hash(a)
    assert g.tensor(name="b", dim=[2]) != a
    assert {a: 1}[g.tensors()[0]] == 1


def test_a_tensor_of_another_graph_is_refused(g, arch_handle):
    other = cudnn.pygraph(handle=arch_handle).tensor(dim=[2])
    with pytest.raises(cudnn.BadParamError, match="another graph"):
        g.relu(other)


def test_graph_attributes_and_repr(arch_handle):
    g = cudnn.pygraph(name="mine", handle=arch_handle, io_data_type=H)
    g.relu(g.tensor(dim=[2])).set_output(True)
    assert (g.name, g.tensor_count, g.node_count) == ("mine", 2, 1)
    assert "mine" in repr(g) and "2 tensors" in repr(g)
    assert "HALF" in repr(g.tensors()[0])
