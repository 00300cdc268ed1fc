"""Random matmul graphs without a GPU: whatever the input types (one or two of HALF,
BFLOAT16 and FLOAT), layouts, broadcast batch, prologues and epilogues, the first plan of
the list is a tensor-core GEMM, and it and the fallback compile for the handle's
architecture. Such graphs found inputs of two types (a 16-bit A beside a prologue's FLOAT
result) left to the fallback engine alone."""
import random

import pytest

import dnnjit as cudnn

DT = cudnn.data_type
TYPES = [DT.HALF, DT.BFLOAT16, DT.FLOAT]
SIZES = [1, 7, 16, 77, 128, 130, 1000]
UNARY = ["relu", "sigmoid", "tanh", "gelu", "abs", "neg"]


def layout(rng, dim):
    """Packed strides in a random order of the axes, rows sometimes padded."""
    order = list(range(len(dim)))
    rng.shuffle(order)
    stride, step = [0] * len(dim), 1
    for axis in reversed(order):
        stride[axis] = step
        step *= dim[axis] + (rng.choice([0, 1, 8]) if dim[axis] > 1 else 0)
    return stride


def random_matmul(rng, handle):
    g = cudnn.pygraph(handle=handle, io_data_type=rng.choice(TYPES), intermediate_data_type=DT.FLOAT,
                      compute_data_type=DT.FLOAT)
    m, n, k = (rng.choice(SIZES) for _ in range(3))
    batch = rng.choice([[1], [3], [2, 3]])

    def operand(name, rows, cols):
        dim = [b if rng.random() < 0.7 else 1 for b in batch] + [rows, cols]
        return g.tensor(name=name, dim=dim, stride=layout(rng, dim), data_type=rng.choice(TYPES))

    a, b = operand("a", m, k), operand("b", k, n)
    if rng.random() < 0.3:
        a = getattr(g, rng.choice(UNARY))(a)  # a prologue whose result stays FLOAT
    if rng.random() < 0.3:
        scale = g.tensor(name="scale", dim=[1] * (len(batch) + 1) + [n], data_type=rng.choice(TYPES))
        b = g.mul(b, scale)
    c = g.matmul(a, b)
    if rng.random() < 0.5:
        c = g.add(c, g.tensor(name="bias", dim=[1] * (len(batch) + 1) + [n], data_type=rng.choice(TYPES)))
    if rng.random() < 0.5:
        c = getattr(g, rng.choice(UNARY))(c)
    c.set_output(True).set_data_type(rng.choice(TYPES))
    return g


@pytest.mark.parametrize("seed", range(32))
def test_random_matmul_gets_a_tensor_core_plan_that_compiles(nvrtc, seed):
    rng = random.Random(seed)
    handle = cudnn.create_handle(arch=rng.choice(["sm_80", "sm_90a"]))
    g = random_matmul(rng, handle)
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK])
    names = [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]
    assert names[0].startswith("gemm"), (names, g.to_json())
    assert names[-1].startswith("fallback"), names
    g.build_plan_at_index(0)
    g.build_plan_at_index(len(names) - 1)
