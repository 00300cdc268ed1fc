"""Results through execute_reference (the CPU float64 executor) on host buffers, against
formulas written here: this checks what the binding passes (layouts, attributes,
scalars, variant packs) without a GPU."""
import array
import ctypes
import math

import pytest

import dnnjit as cudnn
from helpers import FakeDLPackArray, FakeHostArray, FakeNumpyScalar, HostTensor, close, floats, uniform

F = cudnn.data_type.FLOAT


@pytest.fixture
def g():
    return cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"), io_data_type=F, intermediate_data_type=F,
                         compute_data_type=F)


def test_matmul_bias_with_a_transposed_input(g):
    batch, m, k, n = 2, 3, 4, 5
    # A is stored transposed: element (b, i, j) at b*m*k + j*m + i.
    a_store, b_vals, d_vals = uniform(batch * m * k, 1), uniform(batch * k * n, 2), uniform(m * n, 3)
    a = g.tensor(name="A", dim=[batch, m, k], stride=[m * k, 1, m])
    b = g.tensor(name="B", dim=[batch, k, n])
    d = g.tensor(name="D", dim=[1, m, n])
    c = g.bias(g.matmul(a, b, name="mm"), d, name="bias").set_output(True)
    out = floats([0] * (batch * m * n))
    g.execute_reference({a: floats(a_store), b: floats(b_vals), d: floats(d_vals), c: out})
    expected = [sum(a_store[bi * m * k + kk * m + i] * b_vals[bi * k * n + kk * n + j] for kk in range(k))
                + d_vals[i * n + j]
                for bi in range(batch) for i in range(m) for j in range(n)]
    assert close(list(out), expected, 1e-5)


def test_keys_may_be_uids(g):
    x = g.tensor(name="x", dim=[3], uid=10)
    y = g.neg(x).set_output(True).set_uid(11)
    out = floats([0, 0, 0])
    g.execute_reference({10: floats([1, -2, 3]), 11: out})
    assert list(out) == [-1, 2, -3]
    g.execute_reference({x: floats([4, 5, 6]), y.get_uid(): out})
    assert list(out) == [-4, -5, -6]


def test_constants_and_pass_by_value_scalars(g):
    x = g.tensor(name="x", dim=[4])
    s = g.tensor(name="s", dim=[1], is_pass_by_value=True)
    y = g.relu(g.add(g.mul(x, s), 0.5), upper_clip=2.0).set_output(True)
    xs = [-1.0, 0.25, 0.5, 3.0]
    for scale in (2.0, -1, 3):  # a float, and ints taken as values (s is pass-by-value)
        out = floats([0] * 4)
        g.execute_reference({x: floats(xs), s: scale, y: out})
        assert list(out) == [min(max(v * scale + 0.5, 0.0), 2.0) for v in xs]


def test_a_scalar_from_a_host_buffer(g):
    x = g.tensor(name="x", dim=[2])
    s = g.tensor(name="s", dim=[1], is_pass_by_value=True, data_type=cudnn.data_type.DOUBLE)
    y = g.mul(x, s).set_output(True)
    out = floats([0, 0])
    g.execute_reference({x: floats([1, 2]), s: array.array("d", [0.25]), y: out})
    assert list(out) == [0.25, 0.5]


def scaled_graph(g):
    """y = x * s, s a pass-by-value FLOAT scalar the variant pack gives."""
    x = g.tensor(name="x", dim=[4])
    s = g.tensor(name="s", dim=[1], is_pass_by_value=True)
    return x, s, g.mul(x, s).set_output(True)


def test_a_scalar_from_a_one_element_host_array_is_read_with_its_type(g):
    x, s, y = scaled_graph(g)
    xs = [1.0, -2.0, 3.0, 0.5]
    double = ctypes.c_double(0.25)
    for value, scale in ((FakeNumpyScalar("<i8", 2), 2), (FakeNumpyScalar("<f8", -0.5), -0.5),
                         (FakeNumpyScalar("|b1", True), 1),
                         (FakeHostArray((1, 1), "<f8", ptr=ctypes.addressof(double)), 0.25),
                         (FakeDLPackArray([3], (1,), code=0, bits=64), 3), (FakeDLPackArray([1.5], (1, 1)), 1.5)):
        out = floats([0] * 4)
        g.execute_reference({x: floats(xs), s: value, y: out})
        assert list(out) == [v * scale for v in xs], value


def test_a_scalar_from_a_host_array_of_many_elements_is_refused(g):
    x, s, y = scaled_graph(g)
    with pytest.raises(cudnn.BadParamError, match=rf"uid {s.get_uid()} is pass-by-value.*shape \[2, 2\]"):
        g.execute_reference({x: floats([0] * 4), s: FakeDLPackArray([1.0] * 4, (2, 2)), y: floats([0] * 4)})


def test_foreign_byte_order_is_refused(g):
    x, s, y = scaled_graph(g)
    big = array.array("f", [1, 2, 3, 4])
    big.byteswap()
    big_array = FakeHostArray((4,), ">f4", ptr=big.buffer_info()[0])
    with pytest.raises(cudnn.BadParamError, match="byte order"):
        g.execute_reference({x: big_array, s: 2.0, y: floats([0] * 4)})
    with pytest.raises(cudnn.BadParamError, match="byte order"):
        g.execute_reference({x: floats([0] * 4), s: FakeHostArray((1,), ">f4", ptr=big.buffer_info()[0]),
                             y: floats([0] * 4)})


def test_layernorm_epsilon_from_a_host_tensor_as_in_cudnn_sample_20(g):
    rows, cols, eps = 2, 6, 0.25
    vals, scale, bias = uniform(rows * cols, 5), uniform(cols, 6), uniform(cols, 7)
    x = g.tensor(name="x", dim=[rows, cols])
    sc, bi = g.tensor(name="scale", dim=[1, cols]), g.tensor(name="bias", dim=[1, cols])
    epsilon_cpu = FakeDLPackArray([eps], (1, 1))  # torch.full((1, 1), eps) on the CPU
    epsilon = g.tensor_like(epsilon_cpu)
    assert epsilon.get_is_pass_by_value()
    y, mean, inv_var = g.layernorm(cudnn.norm_forward_phase.TRAINING, x, sc, bi, epsilon=epsilon)
    for t in (y, mean, inv_var):
        t.set_output(True)
    out_iv = floats([0] * rows)
    g.execute_reference({x: floats(vals), sc: floats(scale), bi: floats(bias), epsilon: epsilon_cpu,
                         y: floats([0] * rows * cols), mean: floats([0] * rows), inv_var: out_iv})
    for r in range(rows):
        row = vals[r * cols:(r + 1) * cols]
        mu = sum(row) / cols
        assert close([out_iv[r]], [1 / math.sqrt(sum((v - mu) ** 2 for v in row) / cols + eps)], 1e-5)


def test_leaky_relu_and_its_backward(g):
    x, dy = g.tensor(name="x", dim=[4]), g.tensor(name="dy", dim=[4])
    y = g.leaky_relu(x, 0.25).set_output(True)
    dx = g.leaky_relu_backward(dy, x, 0.25).set_output(True)
    xs, dys = [-2.0, -0.5, 0.5, 2.0], [1.0, 2.0, 3.0, 4.0]
    out_y, out_dx = floats([0] * 4), floats([0] * 4)
    g.execute_reference({x: floats(xs), dy: floats(dys), y: out_y, dx: out_dx})
    assert list(out_y) == [v if v > 0 else 0.25 * v for v in xs]
    assert list(out_dx) == [d if v > 0 else 0.25 * d for v, d in zip(xs, dys)]


def test_half_inputs_and_outputs(g):
    x = g.tensor(name="x", dim=[3], data_type=cudnn.data_type.HALF)
    y = g.sigmoid(x).set_output(True).set_data_type(cudnn.data_type.HALF)
    xs = [-1.0, 0.0, 2.0]
    src, dst = HostTensor(cudnn.data_type.HALF, xs), HostTensor.zeros(cudnn.data_type.HALF, 3)
    g.execute_reference({x: src.buffer, y: dst.buffer})
    assert close(dst.values(), [1 / (1 + math.exp(-v)) for v in xs], 1e-3)


def test_reduction_and_softmax(g):
    rows, cols = 3, 5
    vals = uniform(rows * cols, 4, -3, 3)
    x = g.tensor(name="x", dim=[rows, cols])
    total = g.reduction(x, cudnn.reduction_mode.ADD, axes=[1]).set_output(True)
    s, lse = g.softmax(x, stats=cudnn.softmax_stats.LOG_SUM_EXP)
    s.set_output(True)
    lse.set_output(True)
    out_total, out_s, out_lse = floats([0] * rows), floats([0] * rows * cols), floats([0] * rows)
    g.execute_reference({x: floats(vals), total: out_total, s: out_s, lse: out_lse})
    for r in range(rows):
        row = vals[r * cols:(r + 1) * cols]
        log_sum = math.log(sum(math.exp(v) for v in row))
        assert close([out_total[r]], [sum(row)], 1e-6)
        assert close([out_lse[r]], [log_sum], 1e-6)
        assert close(list(out_s[r * cols:(r + 1) * cols]), [math.exp(v - log_sum) for v in row], 1e-6)


def test_layernorm_training(g):
    rows, cols, eps = 2, 6, 1e-3
    vals, scale, bias = uniform(rows * cols, 5), uniform(cols, 6), uniform(cols, 7)
    x = g.tensor(name="x", dim=[rows, cols])
    sc, bi = g.tensor(name="scale", dim=[1, cols]), g.tensor(name="bias", dim=[1, cols])
    y, mean, inv_var = g.layernorm(cudnn.norm_forward_phase.TRAINING, x, sc, bi, epsilon=eps)
    for t in (y, mean, inv_var):
        t.set_output(True)
    outs = {t: floats([0] * n) for t, n in ((y, rows * cols), (mean, rows), (inv_var, rows))}
    g.execute_reference({x: floats(vals), sc: floats(scale), bi: floats(bias), **outs})
    for r in range(rows):
        row = vals[r * cols:(r + 1) * cols]
        mu = sum(row) / cols
        iv = 1 / math.sqrt(sum((v - mu) ** 2 for v in row) / cols + eps)
        assert close([outs[mean][r], outs[inv_var][r]], [mu, iv], 1e-5)
        assert close(list(outs[y][r * cols:(r + 1) * cols]),
                     [(v - mu) * iv * s + b for v, s, b in zip(row, scale, bias)], 1e-5)


def test_sdpa_scale_and_causal_mask(g):
    s, d, scale = 3, 2, 0.7
    qv, kv, vv = uniform(s * d, 8), uniform(s * d, 9), uniform(s * d, 10)
    q, k, v = (g.tensor(name=n, dim=[1, 1, s, d]) for n in "qkv")
    o, stats = g.sdpa(q, k, v, attn_scale=scale, use_causal_mask=True, generate_stats=True)
    o.set_output(True)
    stats.set_output(True)
    out_o, out_stats = floats([0] * (s * d)), floats([0] * s)
    g.execute_reference({q: floats(qv), k: floats(kv), v: floats(vv), o: out_o, stats: out_stats})
    for i in range(s):
        scores = [scale * sum(qv[i * d + c] * kv[j * d + c] for c in range(d)) for j in range(i + 1)]
        lse = math.log(sum(math.exp(x) for x in scores))
        weights = [math.exp(x - lse) for x in scores]
        assert close([out_stats[i]], [lse], 1e-5)
        assert close(list(out_o[i * d:(i + 1) * d]),
                     [sum(w * vv[j * d + c] for j, w in enumerate(weights)) for c in range(d)], 1e-5)


def test_numpy_scalars_and_byte_order():
    np = pytest.importorskip("numpy")
    g = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"), io_data_type=F, compute_data_type=F)
    x, s, y = scaled_graph(g)
    xs = np.array([1, 2, 3, 4], dtype=np.float32)
    for value in (np.int64(2), np.float32(2), np.float64(2), np.array(2.0), np.array([[2]], dtype=np.int32)):
        out = np.zeros(4, dtype=np.float32)
        g.execute_reference({x: xs, s: value, y: out})
        np.testing.assert_array_equal(out, xs * 2)
    with pytest.raises(cudnn.BadParamError, match="byte order"):
        g.execute_reference({x: xs.astype(">f4"), s: 2, y: np.zeros(4, dtype=np.float32)})
    assert g.tensor_like(np.float32(1e-3)).get_is_pass_by_value()


def test_numpy_arrays_and_views():
    np = pytest.importorskip("numpy")
    g = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_90a"), io_data_type=F, compute_data_type=F)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 6, 4)).astype(np.float32).transpose(0, 2, 1)  # a non-contiguous view
    b = rng.standard_normal((3, 6, 5)).astype(np.float32)
    c = np.zeros((3, 4, 5), dtype=np.float32)
    ta, tb = g.tensor_like(a, is_pass_by_value=False), g.tensor_like(b, is_pass_by_value=False)
    tc = g.matmul(ta, tb).set_output(True)
    g.execute_reference({ta: a, tb: b, tc: c})
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
