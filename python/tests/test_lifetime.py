"""Handles, graphs and tensors may be dropped or destroyed in any order: nothing crashes,
nothing is used after it is freed, and everything is freed once unreachable."""
import gc
import os
import subprocess
import sys
import weakref

import pytest

import dnnjit as cudnn
from dnnjit._graph import _GraphState
from dnnjit._handle import _HandleState

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_graph(handle):
    g = cudnn.pygraph(handle=handle, io_data_type=cudnn.data_type.FLOAT)
    x = g.tensor(name="x", dim=[4])
    y = g.relu(x).set_output(True)
    return g, x, y


def live(cls):
    gc.collect()
    return sum(isinstance(o, cls) for o in gc.get_objects())


def test_graph_then_handle():
    h = cudnn.create_handle(arch="sm_80")
    g, x, y = small_graph(h)
    graph_state, handle_state = weakref.ref(g._st), weakref.ref(h._state)
    del g, x, y
    gc.collect()
    assert graph_state() is None and handle_state() is not None
    del h
    gc.collect()
    assert handle_state() is None


def test_handle_then_graph():
    h = cudnn.create_handle(arch="sm_80")
    g, x, y = small_graph(h)
    handle_state = weakref.ref(h._state)
    del h
    gc.collect()
    assert handle_state() is not None  # the graph still needs it
    g.validate()
    del g, x, y
    gc.collect()
    assert handle_state() is None


def test_destroy_handle_leaves_its_graphs_working():
    h = cudnn.create_handle(arch="sm_80")
    g, x, y = small_graph(h)
    cudnn.destroy_handle(h)
    with pytest.raises(cudnn.BadStateError, match="destroyed"):
        h.arch
    with pytest.raises(cudnn.BadStateError, match="destroyed"):
        cudnn.pygraph(handle=h)
    with pytest.raises(cudnn.BadStateError, match="destroyed"):
        g.execute({x: 16, y: 32}, None, handle=h)
    assert "destroyed" in repr(h)
    g.create_execution_plans()
    assert g.get_execution_plan_count() > 0
    handle_state = weakref.ref(g._st.handle)
    del g, x, y
    gc.collect()
    assert handle_state() is None


def test_destroying_a_handle_twice_is_harmless():
    h = cudnn.create_handle(arch="sm_80")
    cudnn.destroy_handle(h)
    cudnn.destroy_handle(h)


def test_tensors_keep_their_graph_alive():
    g, x, y = small_graph(cudnn.create_handle(arch="sm_80"))
    pygraph_ref, state_ref = weakref.ref(g), weakref.ref(g._st)
    del g
    gc.collect()
    assert pygraph_ref() is None and state_ref() is not None
    assert y.set_output(True).get_dim() == [4] and x.get_name() == "x"
    del x, y
    gc.collect()
    assert state_ref() is None


def test_nothing_accumulates_over_many_graphs():
    before_graphs, before_handles = live(_GraphState), live(_HandleState)
    for i in range(300):
        h = cudnn.create_handle(arch="sm_80")
        g, x, y = small_graph(h)
        if i % 2:
            cudnn.destroy_handle(h)
        g.validate()
    del h, g, x, y
    assert live(_GraphState) == before_graphs and live(_HandleState) == before_handles


ORDERS = {
    "handle, graph, tensors left to exit": "h = cudnn.create_handle(arch='sm_80'); g, x, y = small(h)",
    "handle destroyed first": "h = cudnn.create_handle(arch='sm_80'); g, x, y = small(h); cudnn.destroy_handle(h)",
    "graph dropped, tensors kept": "h = cudnn.create_handle(arch='sm_80'); g, x, y = small(h); del g",
    "handle and graph dropped, tensor kept": "g, x, y = small(cudnn.create_handle(arch='sm_80')); del g, x",
    "default handle": "g, x, y = small(None)",
    "two graphs, first handle dropped early": ("h1 = cudnn.create_handle(arch='sm_80'); g1, *_ = small(h1); "
                                               "h2 = cudnn.create_handle(arch='sm_90a'); g2, *_ = small(h2); del h1"),
}


@pytest.mark.parametrize("order", list(ORDERS), ids=list(ORDERS))
def test_interpreter_exit_in_any_order(order):
    code = ("import dnnjit as cudnn\n"
            "def small(h):\n"
            "    g = cudnn.pygraph(handle=h, io_data_type=cudnn.data_type.FLOAT)\n"
            "    x = g.tensor(name='x', dim=[4])\n"
            "    y = g.relu(x).set_output(True)\n"
            "    g.validate()\n"
            "    return g, x, y\n" + ORDERS[order] + "\n")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stderr) == (0, "")
