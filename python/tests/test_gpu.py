"""On a GPU: results against torch on random data, for every kind of buffer the variant
pack takes (torch, CuPy, DLPack-only objects, raw pointers), non-contiguous layouts,
streams and CUDA graph capture. Skipped without torch and a CUDA GPU."""
import pytest

import dnnjit as cudnn

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

H, F = cudnn.data_type.HALF, cudnn.data_type.FLOAT


@pytest.fixture(scope="module")
def handle():
    h = cudnn.create_handle()
    yield h
    cudnn.destroy_handle(h)


def new_graph(handle, io=H):
    return cudnn.pygraph(handle=handle, io_data_type=io, intermediate_data_type=F, compute_data_type=F)


def run(g, pack, modes=(cudnn.heur_mode.A,), **kwargs):
    """Builds (if needed) and executes with a workspace of the right size, then waits."""
    if g.get_chosen_plan_index() < 0:
        g.build(list(modes))
    workspace = torch.empty(g.get_workspace_size(), device="cuda", dtype=torch.uint8)
    g.execute(pack, workspace, **kwargs)
    torch.cuda.synchronize()


def randn(*shape, dtype=torch.float16):
    return torch.randn(*shape, device="cuda", dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(4, 64, 128, 64), (3, 33, 17, 65)])
def test_bmm_matches_torch(handle, dtype, shape):
    batch, m, k, n = shape
    a, b = randn(batch, m, k, dtype=dtype), randn(batch, k, n, dtype=dtype)
    c = torch.full((batch, m, n), float("nan"), device="cuda", dtype=dtype)
    g = new_graph(handle, io=cudnn.data_type.NOT_SET)
    ta, tb = g.tensor_like(a), g.tensor_like(b)
    tc = g.matmul(ta, tb).set_output(True).set_data_type(ta.get_data_type())
    run(g, {ta: a, tb: b, tc: c})
    ref = torch.bmm(a.float(), b.float())
    tol = {torch.float16: 1e-2, torch.bfloat16: 6e-2, torch.float32: 1e-3}[dtype]
    torch.testing.assert_close(c.float(), ref, atol=tol * k ** 0.5, rtol=tol)


@pytest.mark.parametrize("modes", [[cudnn.heur_mode.A], [cudnn.heur_mode.B], [cudnn.heur_mode.FALLBACK]])
def test_matmul_bias_relu_matches_torch(handle, modes):
    a, b, d = randn(8, 96, 64), randn(8, 64, 48), randn(1, 96, 48)
    out = torch.empty(8, 96, 48, device="cuda", dtype=torch.float16)
    g = new_graph(handle)
    ta, tb, td = g.tensor_like(a), g.tensor_like(b), g.tensor_like(d)
    to = g.relu(g.bias(g.matmul(ta, tb), td)).set_output(True)
    run(g, {ta: a, tb: b, td: d, to: out}, modes)
    torch.testing.assert_close(out, torch.relu(a.float() @ b.float() + d.float()).half(), atol=2e-2, rtol=1e-2)


# name: (build on graph g from x [and y], the same in torch). Binary ones broadcast y.
UNARY = {
    "relu": (lambda g, x: g.relu(x), torch.relu),
    "gelu": (lambda g, x: g.gelu(x), torch.nn.functional.gelu),
    "gelu_approx_tanh": (lambda g, x: g.gelu_approx_tanh(x),
                         lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    "sigmoid": (lambda g, x: g.sigmoid(x), torch.sigmoid),
    "tanh": (lambda g, x: g.tanh(x), torch.tanh),
    "exp": (lambda g, x: g.exp(x), torch.exp),
    "leaky relu": (lambda g, x: g.relu(x, negative_slope=0.1), lambda x: torch.nn.functional.leaky_relu(x, 0.1)),
}
BINARY = {
    "add": (lambda g, x, y: g.add(x, y), lambda x, y: x + y),
    "sub": (lambda g, x, y: g.sub(x, y), lambda x, y: x - y),
    "mul": (lambda g, x, y: g.mul(x, y), lambda x, y: x * y),
    "max": (lambda g, x, y: g.max(x, y), torch.maximum),
    "sigmoid(x + y * 1.5)": (lambda g, x, y: g.sigmoid(g.add(x, g.mul(y, 1.5))),
                             lambda x, y: torch.sigmoid(x + y * 1.5)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_pointwise_matches_torch(handle, name):
    build, reference = UNARY[name]
    x = randn(64, 257)
    out = torch.empty_like(x)
    g = new_graph(handle)
    tx = g.tensor_like(x)
    to = build(g, tx).set_output(True)
    run(g, {tx: x, to: out})
    torch.testing.assert_close(out.float(), reference(x.float()), atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_pointwise_matches_torch(handle, name):
    build, reference = BINARY[name]
    x, y = randn(64, 257), randn(1, 257)
    out = torch.empty_like(x)
    g = new_graph(handle)
    tx, ty = g.tensor_like(x), g.tensor_like(y)
    to = build(g, tx, ty).set_output(True)
    run(g, {tx: x, ty: y, to: out})
    torch.testing.assert_close(out.float(), reference(x.float(), y.float()), atol=2e-3, rtol=2e-3)


def test_row_ops_match_torch(handle):
    x = randn(32, 200)
    scale, bias = randn(1, 200), randn(1, 200)
    outs = {k: torch.empty(32, 200 if k != "sum" else 1, device="cuda", dtype=torch.float16)
            for k in ("softmax", "layernorm", "rmsnorm", "sum")}
    g = new_graph(handle)
    tx, ts, tb = g.tensor_like(x), g.tensor_like(scale), g.tensor_like(bias)
    t = {"softmax": g.softmax(tx),
         "layernorm": g.layernorm(cudnn.norm_forward_phase.INFERENCE, tx, ts, tb, epsilon=1e-5)[0],
         "rmsnorm": g.rmsnorm(cudnn.norm_forward_phase.INFERENCE, tx, ts, epsilon=1e-5)[0],
         "sum": g.reduction(tx, cudnn.reduction_mode.ADD, axes=[1])}
    for v in t.values():
        v.set_output(True)
    run(g, {tx: x, ts: scale, tb: bias, **{t[k]: outs[k] for k in t}})
    xf = x.float()
    ref = {"softmax": torch.softmax(xf, -1),
           "layernorm": torch.nn.functional.layer_norm(xf, (200,), scale.float()[0], bias.float()[0], 1e-5),
           "rmsnorm": xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * scale.float(),
           "sum": xf.sum(-1, keepdim=True)}
    for k in t:
        torch.testing.assert_close(outs[k].float(), ref[k], atol=2e-2, rtol=1e-2, msg=k)


def test_sdpa_matches_torch(handle):
    q, k, v = randn(2, 4, 100, 64), randn(2, 2, 120, 64), randn(2, 2, 120, 64)
    o = torch.empty_like(q)
    g = new_graph(handle)
    tq, tk, tv = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    to, _ = g.sdpa(tq, tk, tv, attn_scale=0.1, use_causal_mask=True)
    to.set_output(True)
    run(g, {tq: q, tk: k, tv: v, to: o})
    kk, vv = k.repeat_interleave(2, 1).float(), v.repeat_interleave(2, 1).float()
    # dnnjit aligns the causal mask bottom-right: query i sees keys j <= i + (s_kv - s_q).
    mask = torch.ones(100, 120, device="cuda", dtype=torch.bool).tril(diagonal=20)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), kk, vv, attn_mask=mask, scale=0.1)
    torch.testing.assert_close(o.float(), ref, atol=1e-2, rtol=1e-2)


def test_non_contiguous_inputs_and_outputs(handle):
    a = randn(4, 128, 64).transpose(1, 2)          # [4, 64, 128], column-major matrices
    b = randn(4 * 128 * 32 * 2)[::2].view(4, 128, 32)  # every other element
    c = torch.zeros(4, 32, 64, device="cuda", dtype=torch.float16).transpose(1, 2)  # written transposed
    assert not a.is_contiguous() and not c.is_contiguous()
    g = new_graph(handle)
    ta, tb = g.tensor_like(a), g.tensor_like(b)
    tc = g.matmul(ta, tb).set_output(True).set_stride(list(c.stride()))
    run(g, {ta: a, tb: b, tc: c})
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)


def test_uids_raw_pointers_and_dlpack_only_objects(handle):
    class DLPackOnly:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

    x, y = randn(1000), torch.empty(1000, device="cuda", dtype=torch.float16)
    g = new_graph(handle)
    tx = g.tensor_like(DLPackOnly(x))
    ty = g.neg(tx).set_output(True)
    for pack in ({tx.get_uid(): x.data_ptr(), ty.get_uid(): y.data_ptr()}, {tx: DLPackOnly(x), ty: DLPackOnly(y)}):
        y.fill_(0)
        run(g, pack)
        torch.testing.assert_close(y, -x)


def test_cupy_arrays(handle):
    cupy = pytest.importorskip("cupy")
    a = cupy.random.standard_normal((2, 32, 48)).astype(cupy.float16)
    b = cupy.random.standard_normal((2, 48, 16)).astype(cupy.float16)
    c = cupy.zeros((2, 32, 16), dtype=cupy.float16)
    g = new_graph(handle)
    ta, tb = g.tensor_like(a), g.tensor_like(b)
    tc = g.matmul(ta, tb).set_output(True)
    g.build()
    stream = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.Device().synchronize()  # the inputs were made on the default stream
    g.execute({ta: a, tb: b, tc: c}, None, stream=stream)
    stream.synchronize()
    ref = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    assert float(cupy.abs(c.astype(cupy.float32) - ref).max()) < 5e-2


def test_pass_by_value_scalar_from_python(handle):
    x, y = randn(4096), torch.empty(4096, device="cuda", dtype=torch.float16)
    g = new_graph(handle)
    tx = g.tensor_like(x)
    s = g.tensor(dim=[1], data_type=F, is_pass_by_value=True)
    ty = g.mul(tx, s).set_output(True)
    for scale in (0.5, -3.0):
        run(g, {tx: x, s: scale, ty: y})
        torch.testing.assert_close(y, (x.float() * scale).half())


def test_pass_by_value_scalar_from_a_cpu_tensor(handle):
    # cuDNN's sample 20: tensor_like of a CPU tensor is pass-by-value, its value read with its own type.
    x, y = randn(4096), torch.empty(4096, device="cuda", dtype=torch.float16)
    g = new_graph(handle)
    scale_cpu = torch.full((1, 1), 0.5)
    tx, ts = g.tensor_like(x), g.tensor_like(scale_cpu)
    assert ts.get_is_pass_by_value() and not tx.get_is_pass_by_value()
    ty = g.mul(tx, ts).set_output(True)
    run(g, {tx: x, ts: scale_cpu, ty: y})
    torch.testing.assert_close(y, (x.float() * 0.5).half())
    run(g, {tx: x, ts: torch.tensor(-3, dtype=torch.int64), ty: y})
    torch.testing.assert_close(y, (x.float() * -3).half())


def test_streams(handle):
    x = randn(1 << 20)
    y = torch.empty_like(x)
    g = new_graph(handle)
    tx = g.tensor_like(x)
    ty = g.sigmoid(tx).set_output(True)
    g.build()
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    # The handle's stream...
    cudnn.set_stream(handle=handle, stream=side)
    try:
        g.execute({tx: x, ty: y}, None)
        side.synchronize()
    finally:
        cudnn.set_stream(handle=handle, stream=None)
    torch.testing.assert_close(y, torch.sigmoid(x.float()).half())
    # ...or torch's current stream, given explicitly.
    y.zero_()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        g.execute({tx: x, ty: y}, None, stream=torch.cuda.current_stream())
    side.synchronize()
    torch.testing.assert_close(y, torch.sigmoid(x.float()).half())


def test_cuda_graph_capture_and_replay(handle):
    x = randn(1 << 16)
    y = torch.empty_like(x)
    g = new_graph(handle)
    tx = g.tensor_like(x)
    ty = g.tanh(tx).set_output(True)
    g.build()
    capture = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        g.execute({tx: x, ty: y}, None, stream=side)  # warm up outside the capture
    side.synchronize()
    with torch.cuda.graph(capture):
        g.execute({tx: x, ty: y}, None, stream=torch.cuda.current_stream())
    x.copy_(randn(1 << 16))
    y.zero_()
    capture.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.tanh(x.float()).half())


def test_workspace_between_kernels(handle):
    a, b = randn(4, 64, 128), randn(4, 128, 64)
    s = torch.empty(4, 64, 64, device="cuda", dtype=torch.float16)
    g = new_graph(handle)
    ta, tb = g.tensor_like(a), g.tensor_like(b)
    ts = g.softmax(g.matmul(ta, tb)).set_output(True)
    g.build()
    assert g.get_workspace_size() > 0
    with pytest.raises(cudnn.BadParamError, match="workspace"):
        g.execute({ta: a, tb: b, ts: s}, None)
    run(g, {ta: a, tb: b, ts: s})
    torch.testing.assert_close(s.float(), torch.softmax(a.float() @ b.float(), -1), atol=1e-2, rtol=1e-2)


def test_bad_buffers_name_the_tensor(handle):
    x = randn(16)
    g = new_graph(handle)
    tx = g.tensor_like(x, name="x")
    ty = g.relu(tx).set_output(True).set_name("y")
    g.build()
    with pytest.raises(cudnn.BadParamError, match='tensor "y"'):
        g.execute({tx: x}, None)
    with pytest.raises(cudnn.BadParamError, match='tensor "x"'):
        g.execute({tx: x.cpu(), ty: torch.empty_like(x)}, None)


def test_serialized_graph_runs_in_a_new_graph(handle):
    if getattr(cudnn._clib, "dnnjit_graph_serialize", None) is None:
        pytest.skip("the library has no dnnjit_graph_serialize")
    x = randn(3, 1000)
    g = new_graph(handle)
    tx = g.tensor_like(x).set_uid(10)
    g.gelu(tx).set_output(True).set_uid(11)
    g.build()
    again = cudnn.pygraph()
    again.deserialize(g.serialize())
    y = torch.empty_like(x)
    run(again, {10: x, 11: y})
    torch.testing.assert_close(y.float(), torch.nn.functional.gelu(x.float()), atol=2e-3, rtol=2e-3)


def test_autotune_keeps_results_right(handle):
    if getattr(cudnn._clib, "dnnjit_graph_autotune", None) is None:
        pytest.skip("the library has no dnnjit_graph_autotune")
    x, y = randn(1 << 20), torch.empty(1 << 20, device="cuda", dtype=torch.float16)
    g = new_graph(handle)
    tx = g.tensor_like(x)
    ty = g.relu(tx).set_output(True)
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK])
    g.build_plans(cudnn.build_plan_policy.ALL)
    g.autotune({tx: x, ty: y})
    assert 0 <= g.get_chosen_plan_index() < g.get_execution_plan_count()
    run(g, {tx: x, ty: y})
    torch.testing.assert_close(y, torch.relu(x))


def test_execute_from_a_thread_that_never_used_cuda(handle):
    # A Python worker thread (a server's, a data loader's) has no current CUDA context of
    # its own until something makes one current; execute must still run there.
    import threading

    x = randn(4096)
    y = torch.empty_like(x)
    g = new_graph(handle)
    tx = g.tensor_like(x)
    ty = g.sigmoid(tx).set_output(True)
    g.build()
    torch.cuda.synchronize()
    errors = []

    def work():
        try:
            g.execute({tx: x, ty: y}, None)
        except Exception as e:  # reported in the main thread
            errors.append(e)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert errors == []
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.sigmoid(x.float()).half())
