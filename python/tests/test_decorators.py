"""The graph() context manager and the @jit and @graph_cache decorators."""
import json
import threading

import pytest

import dnnjit as cudnn
from helpers import FakeDeviceArray


def test_graph_context_yields_a_graph_and_a_list_with_cudnn_defaults(arch_handle):
    with cudnn.graph(arch_handle) as (g, extra):
        g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    assert isinstance(g, cudnn.pygraph) and extra == []
    assert json.loads(g.to_json())["context"] == {"name": "", "io_data_type": "HALF", "intermediate_data_type": "FLOAT",
                                                  "compute_data_type": "FLOAT"}


def test_graph_context_passes_its_arguments(arch_handle):
    with cudnn.graph(handle=arch_handle, name="n", io_data_type=cudnn.data_type.BFLOAT16,
                     compute_data_type=cudnn.data_type.DOUBLE) as (g, _):
        g.relu(g.tensor(name="x", dim=[2])).set_output(True)
    context = json.loads(g.to_json())["context"]
    assert (context["name"], context["io_data_type"], context["compute_data_type"]) == ("n", "BFLOAT16", "DOUBLE")


def shape_key(handle, a):
    return tuple(a.__cuda_array_interface__["shape"])


def test_graph_cache_returns_the_cached_result_for_the_same_key(arch_handle):
    calls = []

    @cudnn.graph_cache(key_fn=shape_key)
    def make(handle, a):
        calls.append(a)
        with cudnn.graph(handle) as (g, _):
            t = g.tensor_like(a)
            out = g.relu(t).set_output(True)
        return g, [t, out]

    first = make(arch_handle, FakeDeviceArray((4, 8)))
    again = make(arch_handle, FakeDeviceArray((4, 8), ptr=0x7F0000009000))
    other = make(arch_handle, FakeDeviceArray((8, 8)))
    assert again is first and other is not first and len(calls) == 2
    assert make.cache_info() == {"hits": 1, "misses": 2, "size": 2, "maxsize": 256}
    make.cache_clear()
    assert make.cache_info()["size"] == 0 and make(arch_handle, FakeDeviceArray((4, 8))) is not first


def test_graph_cache_evicts_the_least_recently_used():
    made = []

    @cudnn.graph_cache(key_fn=lambda k: k, maxsize=2)
    def make(k):
        made.append(k)
        return object()

    a = make("a")
    make("b")
    assert make("a") is a          # a is now the most recent
    make("c")                      # evicts b
    assert make("a") is a and made == ["a", "b", "c"]
    make("b")
    assert made == ["a", "b", "c", "b"] and make.cache_info()["size"] == 2


def test_graph_cache_key_function_sees_keyword_arguments():
    keys = []

    @cudnn.graph_cache(key_fn=lambda x, scale=1: keys.append((x, scale)) or (x, scale))
    def make(x, scale=1):
        return object()

    assert make(1, scale=2) is make(1, scale=2) and make(1) is not make(1, scale=2)
    assert keys[0] == (1, 2)


def test_graph_cache_rejects_a_zero_size():
    with pytest.raises(ValueError):
        cudnn.graph_cache(key_fn=lambda: 0, maxsize=0)


def test_graph_cache_is_safe_across_threads():
    @cudnn.graph_cache(key_fn=lambda k: k % 7, maxsize=4)
    def make(k):
        return k % 7

    results = []
    workers = [threading.Thread(target=lambda i=i: results.append(make(i) == i % 7)) for i in range(64)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert all(results) and len(results) == 64 and make.cache_info()["size"] <= 4


def test_jit_builds_and_returns_uids(arch_handle, nvrtc):
    @cudnn.jit(heur_modes=[cudnn.heur_mode.A])
    def make():
        with cudnn.graph(handle=arch_handle, io_data_type=cudnn.data_type.HALF) as (g, _):
            a = g.tensor(name="A", dim=[4, 16, 32])
            b = g.tensor(name="B", dim=[4, 32, 8])
            c = g.matmul(a, b)
            c.set_output(True)
            return g, [a, b, c]

    g, uids = make()
    assert g.get_chosen_plan_index() >= 0
    assert all(type(u) is int for u in uids)
    assert uids == [g.tensor_by_name(n).get_uid() for n in ("A", "B", "0::C")]


def test_jit_over_graph_cache_builds_once(arch_handle, nvrtc):
    built = []

    @cudnn.jit(heur_modes=cudnn.heur_mode.FALLBACK)
    @cudnn.graph_cache(key_fn=shape_key)
    def make(handle, a):
        built.append(1)
        with cudnn.graph(handle) as (g, _):
            t = g.tensor_like(a)
            out = g.sigmoid(t).set_output(True)
        return g, [t, out]

    g1, uids1 = make(arch_handle, FakeDeviceArray((64,)))
    g2, uids2 = make(arch_handle, FakeDeviceArray((64,)))
    assert g1 is g2 and uids1 == uids2 and len(built) == 1
    assert all(name.startswith("fallback") for name in
               (g1.get_plan_name_at_index(i) for i in range(g1.get_execution_plan_count())))


def test_bare_jit_uses_mode_a(arch_handle, nvrtc):
    @cudnn.jit
    def make():
        g = cudnn.pygraph(handle=arch_handle, io_data_type=cudnn.data_type.FLOAT)
        x = g.tensor(name="x", dim=[8])
        return g, [x, g.relu(x).set_output(True), 7]

    g, uids = make()
    assert g.get_chosen_plan_index() >= 0 and uids[2] == 7 and uids[0] == g.tensor_by_name("x").get_uid()


def test_jit_reports_build_errors(arch_handle):
    @cudnn.jit(heur_modes=[cudnn.heur_mode.A])
    def make():
        g = cudnn.pygraph(handle=arch_handle, io_data_type=cudnn.data_type.FLOAT)
        g.tensor(name="x", dim=[8])
        return g, []

    with pytest.raises(cudnn.InvalidGraphError, match="no nodes"):
        make()
