"""Plans and the staged build without a GPU: a handle for a named architecture plans,
generates and (with NVRTC) compiles; only execute needs a device."""
import pytest

import dnnjit as cudnn

H = cudnn.data_type.HALF
ALL_MODES = [cudnn.heur_mode.A, cudnn.heur_mode.B, cudnn.heur_mode.FALLBACK]


def pointwise_graph(handle, n=1000):
    g = cudnn.pygraph(handle=handle, io_data_type=H, compute_data_type=cudnn.data_type.FLOAT)
    x, y = g.tensor(name="x", dim=[n]), g.tensor(name="y", dim=[n])
    out = g.sigmoid(g.add(x, y)).set_output(True)
    return g, (x, y, out)


def matmul_softmax_graph(handle):
    """Two groups (a matmul, then a row softmax) with a FLOAT intermediate between them."""
    g = cudnn.pygraph(handle=handle, io_data_type=H, intermediate_data_type=cudnn.data_type.FLOAT)
    a, b = g.tensor(name="a", dim=[4, 64, 128]), g.tensor(name="b", dim=[4, 128, 64])
    g.softmax(g.matmul(a, b)).set_output(True)
    return g


def plan_names(g):
    return [g.get_plan_name_at_index(i) for i in range(g.get_execution_plan_count())]


def test_no_plans_before_planning(arch_handle):
    g, _ = pointwise_graph(arch_handle)
    assert g.get_execution_plan_count() == 0
    assert g.get_chosen_plan_index() == -1 and g.get_behavior_notes() == []


def test_each_mode_lists_plans_with_runtime_compilation(arch_handle):
    for mode in ALL_MODES:
        g, _ = pointwise_graph(arch_handle)
        g.create_execution_plans(mode)
        names = plan_names(g)
        assert names and all(names)
        for i in range(len(names)):
            assert g.get_behavior_notes_for_plan_at_index(i) == [cudnn.behavior_note.RUNTIME_COMPILATION]
        if mode == cudnn.heur_mode.FALLBACK:
            assert all(name.startswith("fallback") for name in names)


def test_modes_together_list_each_plan_once(arch_handle):
    g, _ = pointwise_graph(arch_handle)
    g.create_execution_plans(ALL_MODES)
    names = plan_names(g)
    assert len(names) == len(set(names)) and names[-1].startswith("fallback")


def test_a_plan_of_several_groups_joins_their_choices(arch_handle):
    g = matmul_softmax_graph(arch_handle)
    g.create_execution_plans([cudnn.heur_mode.A])
    assert all(name.count("+") == 1 for name in plan_names(g))


def test_workspace_holds_the_intermediates_between_kernels(arch_handle):
    g = matmul_softmax_graph(arch_handle)
    g.build_operation_graph()
    assert g.get_workspace_size() == 4 * 64 * 64 * 4  # the FLOAT matmul result
    fused, _ = pointwise_graph(arch_handle)
    fused.build_operation_graph()
    assert fused.get_workspace_size() == 0


def test_plan_source_is_cuda_for_the_exact_shape(arch_handle):
    g, _ = pointwise_graph(arch_handle, n=4321)
    g.create_execution_plans(ALL_MODES)
    source = g.get_plan_source(0)
    assert "__global__" in source and "4321" in source


def test_staged_build_compiles_for_the_named_architecture(arch_handle, nvrtc):
    g, _ = pointwise_graph(arch_handle)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    assert g.get_chosen_plan_index() == 0
    assert g.get_behavior_notes() == [cudnn.behavior_note.RUNTIME_COMPILATION]


def test_deselect_behavior_notes_keeps_the_plans_without_them(arch_handle, nvrtc):
    g, _ = pointwise_graph(arch_handle)
    g.create_execution_plans(ALL_MODES)
    names = plan_names(g)
    # No pointwise plan is nondeterministic or reduced in precision: nothing is dropped.
    g.deselect_behavior_notes([cudnn.behavior_note.NONDETERMINISTIC, cudnn.behavior_note.REDUCED_PRECISION])
    assert plan_names(g) == names
    # Every plan compiles at run time: dropping them all is refused and the list stays.
    with pytest.raises(cudnn.NotSupportedError, match="the list is unchanged"):
        g.deselect_behavior_notes(cudnn.behavior_note.RUNTIME_COMPILATION)
    assert plan_names(g) == names
    g.build_plans()
    with pytest.raises(cudnn.BadStateError, match="deselect before build_plans"):
        g.deselect_behavior_notes([cudnn.behavior_note.NONDETERMINISTIC])


def test_deselect_numeric_notes_drops_the_plans_dnnjit_reports_them_for(arch_handle):
    g = cudnn.pygraph(handle=arch_handle, io_data_type=cudnn.data_type.FLOAT)
    g.matmul(g.tensor(name="a", dim=[4, 64, 128]), g.tensor(name="b", dim=[4, 128, 64])).set_output(True)
    g.create_execution_plans(ALL_MODES)
    reduced = cudnn.behavior_note.REDUCED_PRECISION
    kept = [name for i, name in enumerate(plan_names(g)) if reduced not in g.get_behavior_notes_for_plan_at_index(i)]
    assert len(kept) < g.get_execution_plan_count()  # some plans round FLOAT inputs to TF32
    g.deselect_numeric_notes([cudnn.numerical_note.DOWN_CONVERT_INPUTS, cudnn.numerical_note.NONDETERMINISTIC])
    assert plan_names(g) == kept
    for note in (cudnn.numerical_note.TENSOR_CORE, cudnn.numerical_note.WINOGRAD):
        with pytest.raises(cudnn.NotSupportedError, match=f"do not report {note.name}"):
            g.deselect_numeric_notes(note)
    assert plan_names(g) == kept


def test_workspace_size_by_plan_index_answers_for_the_chosen_plan(arch_handle, nvrtc):
    g = matmul_softmax_graph(arch_handle)
    g.create_execution_plans(ALL_MODES)
    count = g.get_execution_plan_count()
    with pytest.raises(cudnn.NotSupportedError, match="none is built yet"):
        g.get_workspace_size_plan_at_index(0)
    with pytest.raises(cudnn.BadParamError, match=f"outside the {count} plans"):
        g.get_workspace_size_plan_at_index(count)
    g.build_plan_at_index(count - 1)
    assert g.get_workspace_size_plan_at_index(count - 1) == g.get_workspace_size() > 0
    with pytest.raises(cudnn.NotSupportedError, match=f"plan {count - 1}"):
        g.get_workspace_size_plan_at_index(0)


def test_build_plan_at_index_chooses_that_plan(arch_handle, nvrtc):
    g, _ = pointwise_graph(arch_handle)
    g.create_execution_plans(ALL_MODES)
    last = g.get_execution_plan_count() - 1
    g.build_plan_at_index(last)
    assert g.get_chosen_plan_index() == last


def test_build_all_plans(arch_handle, nvrtc):
    g, _ = pointwise_graph(arch_handle)
    g.create_execution_plans(ALL_MODES)
    g.build_plans(cudnn.build_plan_policy.ALL)
    assert g.get_chosen_plan_index() == 0


def test_build_in_one_call_and_execute_needs_a_device(arch_handle, nvrtc):
    g, (x, y, out) = pointwise_graph(arch_handle)
    g.build([cudnn.heur_mode.A])
    assert g.get_chosen_plan_index() >= 0
    with pytest.raises(cudnn.BadStateError, match="sm_90a without a device"):
        g.execute({x: 256, y: 512, out: 1024}, None)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_op_family_compiles_deviceless(arch, nvrtc):
    h = cudnn.create_handle(arch=arch)
    g = cudnn.pygraph(handle=h, io_data_type=H, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT)
    x = g.tensor(name="x", dim=[8, 32])
    w = g.tensor(name="w", dim=[32, 16])
    h1 = g.gelu(g.bias(g.matmul(x, w), g.tensor(name="b", dim=[1, 16])))
    y, _ = g.rmsnorm(cudnn.norm_forward_phase.INFERENCE, h1, g.tensor(name="s", dim=[1, 16]), epsilon=1e-5)
    g.reduction(g.softmax(y), cudnn.reduction_mode.MAX, axes=[1]).set_output(True)
    g.build([cudnn.heur_mode.A])
    assert g.get_chosen_plan_index() >= 0
