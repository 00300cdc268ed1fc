"""serialize / deserialize without a GPU: a graph built for a named architecture round
trips through bytes, and the rebuilt graph is the same graph with the same plan."""
import gc
import weakref

import pytest

import dnnjit as cudnn
from dnnjit import _graph
from helpers import close, floats, uniform

F = cudnn.data_type.FLOAT


def built_graph(handle):
    """Seed 004's serialization example (matmul + bias, uids 0..3), in FLOAT so that the
    reference executor can check it with array buffers."""
    g = cudnn.pygraph(handle=handle, io_data_type=F, intermediate_data_type=F, compute_data_type=F)
    a = g.tensor(name="a", dim=[2, 8, 16]).set_uid(0)
    b = g.tensor(name="b", dim=[2, 16, 4]).set_uid(1)
    d = g.tensor(name="d", dim=[1, 8, 4]).set_uid(2)
    c = g.bias(name="bias", input=g.matmul(name="mm", A=a, B=b), bias=d)
    c.set_output(True).set_uid(3)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, (a, b, d, c)


@pytest.fixture
def blob(arch_handle, nvrtc, serialization):
    g, _ = built_graph(arch_handle)
    return g, g.serialize()


def reference_output(g):
    out = floats([0] * (2 * 8 * 4))
    g.execute_reference({0: floats(uniform(2 * 8 * 16, 1)), 1: floats(uniform(2 * 16 * 4, 2)),
                         2: floats(uniform(8 * 4, 3)), 3: out})
    return list(out)


def test_serialize_gives_bytes(blob):
    g, data = blob
    assert isinstance(data, bytes) and len(data) > 100


def test_deserialized_graph_is_the_same_graph_with_its_plan(arch_handle, blob):
    g, data = blob
    new = cudnn.pygraph(handle=arch_handle)
    new.deserialize(data)
    assert new.to_json() == g.to_json()
    assert new.get_execution_plan_count() == 1 and new.get_chosen_plan_index() == 0
    assert new.get_plan_name_at_index(0) == g.get_plan_name_at_index(g.get_chosen_plan_index())
    assert new.get_workspace_size() == g.get_workspace_size()
    assert new.get_behavior_notes() == [cudnn.behavior_note.RUNTIME_COMPILATION]
    assert new.tensor_by_uid(3).get_dim() == [2, 8, 4]
    assert close(reference_output(new), reference_output(g), 0)


def test_deserialize_accepts_a_list_of_ints_and_buffers(arch_handle, blob):
    _, data = blob
    for form in (list(data), bytearray(data), memoryview(data)):
        new = cudnn.pygraph(handle=arch_handle)
        new.deserialize(form)
        assert new.get_chosen_plan_index() == 0


def test_deserialize_takes_json_text_and_refuses_other_types(arch_handle):
    # cuDNN's deserialize reads JSON text as the graph it describes, not yet built.
    g = cudnn.pygraph(handle=arch_handle, io_data_type=F)
    g.relu(g.tensor(name="x", dim=[4]), name="r").set_output(True)
    new = cudnn.pygraph(handle=arch_handle)
    new.deserialize(str(g))
    assert new.to_json() == g.to_json() and new.get_execution_plan_count() == 0
    assert new.tensor_by_name("x").get_dim() == [4]
    for bad in (12, 1.5, None, object()):
        with pytest.raises(TypeError, match="deserialize: data must be"):
            new.deserialize(bad)
    assert new.to_json() == g.to_json()


def test_deserialize_with_another_handle(blob):
    _, data = blob
    other = cudnn.create_handle(arch="sm_90a")
    new = cudnn.pygraph(handle=cudnn.create_handle(arch="sm_80"))
    new.deserialize(other, data)
    assert new._st.handle is other._state and new.get_chosen_plan_index() == 0
    with pytest.raises(TypeError, match="Handle"):
        new.deserialize("sm_90a", data)


def test_a_deserialized_graph_serializes_to_the_same_bytes(arch_handle, blob):
    _, data = blob
    new = cudnn.pygraph(handle=arch_handle)
    new.deserialize(data)
    assert new.serialize() == data


def test_damaged_blobs_are_parse_errors(arch_handle, blob):
    _, data = blob
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    for bad in (data[:len(data) // 2], bytes(flipped), b"not a dnnjit blob at all"):
        with pytest.raises(cudnn.ParseError) as info:
            cudnn.pygraph(handle=arch_handle).deserialize(bad)
        assert info.value.message.startswith("deserialize: ")


def test_another_architecture_is_not_supported(blob):
    _, data = blob
    with pytest.raises(cudnn.NotSupportedError) as info:
        cudnn.pygraph(handle=cudnn.create_handle(arch="sm_80")).deserialize(data)
    assert "sm_90a" in str(info.value) and "sm_80" in str(info.value)


def test_serialize_needs_a_built_plan(arch_handle, serialization):
    g = cudnn.pygraph(handle=arch_handle, io_data_type=F)
    g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    with pytest.raises(cudnn.BadStateError, match="has no built plan"):
        g.serialize()


def test_deserialize_replaces_the_graph(arch_handle, blob):
    _, data = blob
    g = cudnn.pygraph(handle=arch_handle, io_data_type=F)
    old = g.tensor(name="old", dim=[2])
    old_state = weakref.ref(g._st)
    g.deserialize(data)
    assert g.tensor_by_name("a").get_uid() == 0
    with pytest.raises(cudnn.BadParamError, match="another graph"):
        g.execute({old: 0})
    assert old.get_name() == "old"  # the old graph lives on for its tensor
    del old
    gc.collect()
    assert old_state() is None


def test_a_failed_deserialize_keeps_the_graph(arch_handle, serialization):
    g = cudnn.pygraph(handle=arch_handle, io_data_type=F)
    g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    with pytest.raises(cudnn.Error):
        g.deserialize(b"junk")
    assert g.tensor_by_name("x").get_dim() == [2]


def test_missing_library_functions_raise_not_supported(arch_handle, monkeypatch):
    monkeypatch.setattr(_graph._lib, "optional", lambda lib, name: None)
    g = cudnn.pygraph(handle=arch_handle)
    for call, name in ((g.serialize, "dnnjit_graph_serialize"), (lambda: g.deserialize(b"x"),
                       "dnnjit_graph_deserialize"), (lambda: g.autotune({}), "dnnjit_graph_autotune")):
        with pytest.raises(cudnn.NotSupportedError, match=name):
            call()


def test_autotune_needs_a_device(arch_handle, nvrtc):
    g, (a, b, d, c) = built_graph(arch_handle)
    with pytest.raises(cudnn.Error):
        g.autotune({a: 256, b: 512, d: 768, c: 1024})
