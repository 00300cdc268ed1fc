"""Every kind of error the library reports surfaces as the exception of its status,
carrying the library's own message (which names the node, port and dimension)."""
import ctypes

import pytest

import dnnjit as cudnn
from dnnjit import _errors, _lib

F = cudnn.data_type.FLOAT


@pytest.fixture
def g(arch_handle):
    return cudnn.pygraph(handle=arch_handle, io_data_type=F, intermediate_data_type=F, compute_data_type=F)


def raises(cls, message):
    """pytest.raises for `cls` whose message contains `message` verbatim."""
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(cls)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.ctx.__exit__(*exc)
            assert message in str(self.info.value), f"{str(self.info.value)!r} lacks {message!r}"
            return handled
    return Check()


# ---- the hierarchy ---------------------------------------------------------------------

def test_every_status_the_library_knows_has_its_class():
    code = 1
    while _errors.status_name(code) is not None:
        name = _errors.status_name(code)
        cls = _errors._CLASS_OF_STATUS.get(name)
        assert cls is not None, f"no exception class for status {name}"
        assert issubclass(cls, cudnn.Error)
        code += 1
    assert code > 5


def test_errors_carry_status_name_code_and_message(g):
    with pytest.raises(cudnn.InvalidGraphError) as info:
        g.validate()
    e = info.value
    assert e.status == "INVALID_GRAPH" and _errors.status_name(e.code) == "INVALID_GRAPH"
    assert e.message == str(e) == 'graph "" has no nodes'
    assert isinstance(e, cudnn.Error) and isinstance(e, ValueError)


def test_python_exception_bases():
    assert issubclass(cudnn.NotSupportedError, NotImplementedError)
    assert issubclass(cudnn.BadStateError, RuntimeError)
    assert issubclass(cudnn.NotFoundError, LookupError)
    assert issubclass(cudnn.OutOfMemoryError, MemoryError)
    assert cudnn.cudnnGraphNotSupportedError is cudnn.NotSupportedError


def test_a_status_this_package_does_not_know_is_a_plain_error():
    e = _errors.error_for(9999)
    assert type(e) is cudnn.Error and e.status == "status 9999" and e.code == 9999


def test_the_newer_statuses_map_by_name():
    assert _errors._CLASS_OF_STATUS["COMPILE_ERROR"] is cudnn.CompileError
    assert _errors._CLASS_OF_STATUS["CUDA_ERROR"] is cudnn.CudaError
    assert cudnn.CompileError("x").status == "COMPILE_ERROR"


# ---- tensor descriptions: BAD_PARAM ----------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(dim=[1] * 9), 'tensor "t": rank 9 is outside 1..8'),
    (dict(dim=[2, 0]), 'tensor "t": dim[1]=0 but dims must be >= 1'),
    (dict(dim=[2, 2], stride=[2, -1]), 'tensor "t": stride[1]=-1 is negative'),
    (dict(dim=[2], is_pass_by_value=True), 'tensor "t": dim[0]=2 but a pass-by-value scalar has all dims 1'),
    (dict(dim=[2], data_type=77), "77"),
])
def test_bad_tensor_descriptions(g, kwargs, message):
    with raises((cudnn.BadParamError, ValueError), message):
        g.tensor(name="t", **kwargs)


def test_dims_and_strides_must_agree_in_rank(g):
    with raises(cudnn.BadParamError, "2 dims but 1 strides"):
        g.tensor(dim=[2, 2], stride=[1])


def test_duplicate_tensor_name_and_uid(g):
    g.tensor(name="a", dim=[1], uid=3)
    with raises(cudnn.BadParamError, 'tensor "a": another tensor already has this name'):
        g.tensor(name="a", dim=[1])
    with raises(cudnn.BadParamError, 'tensor "b": uid 3 is already used by tensor "a"'):
        g.tensor(name="b", dim=[1], uid=3)
    b = g.tensor(name="b", dim=[1])
    with raises(cudnn.BadParamError, "3"):
        b.set_uid(3)


def test_pointwise_arity(g):
    x = g.tensor(name="x", dim=[2])
    with raises(cudnn.BadParamError, 'pointwise "p": mode ADD takes 2 inputs but IN_1 is missing'):
        g.pointwise(cudnn.pointwise_mode.ADD, x, name="p")
    with raises(cudnn.BadParamError, 'pointwise "q": mode RELU_FWD takes 1 input but IN_1 is given'):
        g.pointwise(cudnn.pointwise_mode.RELU_FWD, x, x, name="q")


# ---- op shapes and types: INVALID_GRAPH ------------------------------------------------

def test_matmul_shape_errors(g):
    a = g.tensor(name="a", dim=[4, 64, 128])
    with raises(cudnn.InvalidGraphError, 'matmul "mm": A.dim[2]=128 but B.dim[1]=64 (K must match)'):
        g.matmul(a, g.tensor(name="b", dim=[4, 64, 64]), name="mm")
    with raises(cudnn.InvalidGraphError, 'matmul "m2": A (tensor "v") has 1 dim but needs at least 2'):
        g.matmul(g.tensor(name="v", dim=[128]), g.tensor(name="w", dim=[128, 2]), name="m2")
    with raises(cudnn.InvalidGraphError, 'matmul "m3": A.dim[0]=4 but B.dim[0]=3 (batch dims must match or be 1)'):
        g.matmul(a, g.tensor(name="c", dim=[3, 128, 2]), name="m3")


def test_matmul_compute_type_must_accumulate(g):
    with raises(cudnn.InvalidGraphError, 'matmul "mm": compute data type INT8 cannot accumulate'):
        g.matmul(g.tensor(name="a", dim=[2, 2]), g.tensor(name="b", dim=[2, 2]), name="mm",
                 compute_data_type=cudnn.data_type.INT8)


def test_broadcast_errors_name_both_tensors(g):
    with raises(cudnn.InvalidGraphError, 'does not broadcast against'):
        g.add(g.tensor(name="x", dim=[2, 3]), g.tensor(name="y", dim=[4, 3]), name="sum")


def test_reduction_output_shape_errors(g):
    y = g.reduction(g.tensor(name="x", dim=[2, 3]), cudnn.reduction_mode.ADD, name="r")
    y.set_output(True).set_dim([2, 2])
    with raises(cudnn.InvalidGraphError, 'reduction "r": Y.dim[1]=2 but must be 1 or X.dim[1]=3'):
        g.validate()


def test_norm_parameter_shape_errors(g):
    x = g.tensor(name="x", dim=[4, 16])
    with raises(cudnn.InvalidGraphError, 'layernorm "ln": SCALE.dim[1]=8 but X.dim[1]=16'):
        g.layernorm(cudnn.norm_forward_phase.INFERENCE, x, g.tensor(name="s", dim=[1, 8]),
                    g.tensor(name="b", dim=[1, 16]), name="ln")


def test_norm_epsilon_must_be_one_element(g):
    x = g.tensor(name="x", dim=[4, 16])
    with raises(cudnn.InvalidGraphError, 'rmsnorm "rn": EPSILON (tensor "eps") must hold one element'):
        g.rmsnorm(cudnn.norm_forward_phase.INFERENCE, x, g.tensor(name="s", dim=[1, 16]),
                  epsilon=g.tensor(name="eps", dim=[2]), name="rn")


def test_sdpa_shape_errors(g):
    q = g.tensor(name="q", dim=[2, 6, 16, 64])
    with raises(cudnn.InvalidGraphError, 'sdpa "a1": Q.dim[1]=6 is not a multiple of K.dim[1]=4'):
        g.sdpa(q, g.tensor(name="k", dim=[2, 4, 16, 64]), g.tensor(name="v", dim=[2, 4, 16, 64]), name="a1")
    with raises(cudnn.InvalidGraphError, 'sdpa "a2": K.dim[3]=32 but Q.dim[3]=64 (head dim must match)'):
        g.sdpa(q, g.tensor(name="k2", dim=[2, 6, 16, 32]), g.tensor(name="v2", dim=[2, 6, 16, 64]), name="a2")
    with raises(cudnn.InvalidGraphError, 'sdpa "a3": Q (tensor "q3") has 3 dims but needs 4'):
        g.sdpa(g.tensor(name="q3", dim=[2, 16, 64]), g.tensor(name="k3", dim=[2, 6, 16, 64]),
               g.tensor(name="v3", dim=[2, 6, 16, 64]), name="a3")


def test_fixed_output_dims_are_checked_at_validation(g):
    y = g.relu(g.tensor(name="x", dim=[2, 3]), name="r").set_output(True).set_dim([3, 2])
    with raises(cudnn.InvalidGraphError, 'pointwise "r": output OUT_0 (tensor "r::OUT_0") has dims [3,2] but the '
                'inputs give [2,3]'):
        g.validate()
    assert y.get_dim() == [3, 2]


# ---- whole-graph checks: INVALID_GRAPH -------------------------------------------------

def test_graph_level_errors(g):
    with raises(cudnn.InvalidGraphError, 'graph "" has no nodes'):
        g.validate()
    x = g.tensor(name="x", dim=[2])
    g.relu(x, name="r")
    with raises(cudnn.InvalidGraphError, 'tensor "r::OUT_0" is virtual but no node reads it'):
        g.validate()


def test_an_input_nobody_reads(g):
    g.relu(g.tensor(name="x", dim=[2]), name="r").set_output(True)
    g.tensor(name="lonely", dim=[2])
    with raises(cudnn.InvalidGraphError, 'tensor "lonely" is an input that no node reads'):
        g.validate()


def test_duplicate_node_names(g):
    x = g.tensor(name="x", dim=[2])
    g.relu(x, name="same").set_output(True)
    with raises(cudnn.BadParamError, 'pointwise "same": another node already has this name'):
        g.tanh(x, name="same")


def test_a_written_tensor_must_not_overlap(g):
    g.relu(g.tensor(name="x", dim=[2, 3]), name="r").set_output(True).set_stride([1, 1])
    with raises(cudnn.InvalidGraphError, "its elements overlap"):
        g.validate()


def test_a_tensor_needs_a_data_type(arch_handle):
    g = cudnn.pygraph(handle=arch_handle)
    g.relu(g.tensor(name="x", dim=[2]), name="r").set_output(True)
    with raises(cudnn.InvalidGraphError, 'tensor "x" has no data type'):
        g.validate()


def test_norms_need_floating_point_inputs(g):
    x = g.tensor(name="x", dim=[4, 16], data_type=cudnn.data_type.INT32)
    g.layernorm(cudnn.norm_forward_phase.INFERENCE, x, g.tensor(name="s", dim=[1, 16]),
                g.tensor(name="b", dim=[1, 16]), name="ln")[0].set_output(True)
    with raises(cudnn.InvalidGraphError, 'layernorm "ln": X (tensor "x") is INT32 but must be a floating-point'):
        g.validate()


# ---- state, lookup, parsing, planning --------------------------------------------------

def test_a_built_graph_cannot_change(g):
    x = g.tensor(name="x", dim=[2])
    y = g.relu(x).set_output(True)
    g.build_operation_graph()
    message = 'graph "" is built (build_operation_graph was called) and can no longer change'
    with raises(cudnn.BadStateError, message):
        g.tensor(name="late", dim=[2])
    with raises(cudnn.BadStateError, message):
        y.set_data_type(cudnn.data_type.HALF)


def test_execute_before_build_and_without_a_device(g):
    x = g.tensor(name="x", dim=[2])
    y = g.relu(x).set_output(True)
    with raises(cudnn.BadStateError, "has no built plan (call build first)"):
        g.execute({x: 16, y: 32})
    with raises(cudnn.BadStateError, "is not built (call build_operation_graph first)"):
        g.get_workspace_size()


def test_lookups(g):
    g.tensor(name="x", dim=[2])
    with pytest.raises(cudnn.NotFoundError):
        g.tensor_by_uid(12345)
    with pytest.raises(cudnn.NotFoundError):
        g.tensor_by_name("nobody")


def test_json_parse_errors_have_line_and_column(arch_handle):
    with pytest.raises(cudnn.ParseError) as info:
        cudnn.pygraph.from_json('{\n  "nodes": [,\n}', handle=arch_handle)
    assert "line 2" in str(info.value)


def test_check_support_without_plans(g):
    g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    with raises(cudnn.NotSupportedError, "has no execution plans (call create_execution_plans first)"):
        g.check_support()


def test_plan_index_out_of_range(g):
    g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    g.create_execution_plans([cudnn.heur_mode.FALLBACK])
    count = g.get_execution_plan_count()
    with raises(cudnn.BadParamError, f"plan index {count} is outside 0..{count - 1}"):
        g.get_plan_name_at_index(count)


def test_build_needs_an_architecture():
    h = cudnn.create_handle()
    if h.has_device:
        pytest.skip("this machine has a GPU, so the default handle has an architecture")
    g = cudnn.pygraph(handle=h, io_data_type=F)
    g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    with pytest.raises(cudnn.BadStateError):
        g.build()


def test_bad_architecture_names():
    with raises(cudnn.BadParamError, "sm_x"):
        cudnn.create_handle(arch="sm_x")


def test_variant_pack_keys_and_values_are_checked(g):
    x = g.tensor(name="x", dim=[2])
    y = g.relu(x).set_output(True)
    with pytest.raises(TypeError, match="keys are Tensors or int uids"):
        g.execute({"x": 0})
    with pytest.raises(TypeError, match="cannot take the address of a str"):
        g.execute({x: "memory", y: 0})
    with pytest.raises(TypeError, match="cannot take the address of a bytes"):
        g.execute({x: b"read-only", y: 0})


def test_reference_pack_errors_name_the_tensor(g):
    x = g.tensor(name="x", dim=[2])
    g.relu(x).set_output(True)
    buf = (ctypes.c_float * 2)()
    with raises(cudnn.BadParamError, "no buffer"):
        g.execute_reference({x: buf})
    with raises(cudnn.BadParamError, "uid 999"):
        g.execute_reference({999: buf})


def test_errors_from_calls_without_a_graph_use_the_threads_message():
    ptr = ctypes.c_void_p()
    status = _lib.lib.dnnjit_graph_from_json(None, b"[", ctypes.byref(ptr))
    e = _errors.error_for(status)
    assert isinstance(e, cudnn.ParseError) and e.message
