"""Building graphs: tensors, tensor_like, setters, every op and its outputs."""
import pytest

import dnnjit as cudnn
from helpers import FakeDeviceArray, FakeHostArray, graph_json

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
    t = g.tensor_like(FakeHostArray((2, 3, 4), "<i4"))
    assert (t.get_dim(), t.get_stride(), t.get_data_type()) == ([2, 3, 4], [12, 4, 1], cudnn.data_type.INT32)


def test_tensor_like_of_a_0d_array_is_one_element(g):
    assert g.tensor_like(FakeHostArray((), "<f8")).get_dim() == [1]


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
    assert g.tensor_like(a).get_stride() == [6, 1]
    t = g.tensor_like(a.T)
    assert (t.get_dim(), t.get_stride(), t.get_data_type()) == ([6, 4], [1, 6], H)


def test_tensor_like_of_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    g = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"))
    t = g.tensor_like(torch.zeros(3, 5, dtype=torch.bfloat16).t())
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
