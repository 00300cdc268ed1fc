"""print(graph) gives the graph's JSON; from_json reads it back."""
import json
import os

import pytest

import dnnjit as cudnn

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "data")


def seed000(handle):
    """Seed 000's graph, built as its cell 2 builds it."""
    g = cudnn.pygraph(handle=handle, name="jit_matmul_graph", io_data_type=cudnn.data_type.HALF,
                      compute_data_type=cudnn.data_type.FLOAT)
    a = g.tensor(name="A", dim=[4, 64, 128], stride=[64 * 128, 128, 1], data_type=cudnn.data_type.HALF)
    b = g.tensor(name="B", dim=[4, 128, 64], stride=[128 * 64, 64, 1], data_type=cudnn.data_type.HALF)
    c = g.matmul(a, b, compute_data_type=cudnn.data_type.FLOAT)
    c.set_output(True)
    return g, (a, b, c)


def test_print_gives_the_json(arch_handle, capsys):
    g, _ = seed000(arch_handle)
    print(g)
    assert capsys.readouterr().out == g.to_json() + "\n"


def test_json_describes_the_graph(arch_handle):
    g, (a, b, c) = seed000(arch_handle)
    doc = json.loads(str(g))
    assert doc["context"] == {"name": "jit_matmul_graph", "io_data_type": "HALF", "intermediate_data_type": "NOT_SET",
                              "compute_data_type": "FLOAT"}
    (node,) = doc["nodes"]
    assert (node["tag"], node["inputs"], node["outputs"]) == ("MATMUL", {"A": "A", "B": "B"}, {"C": "0::C"})
    out = doc["tensors"]["0::C"]
    assert (out["dim"], out["stride"], out["resolved_data_type"]) == ([4, 64, 64], [4096, 64, 1], "HALF")
    # Printing validated the graph, which assigned the uids the tensors now report.
    assert {doc["tensors"][n]["uid"] for n in ("A", "B", "0::C")} == {a.get_uid(), b.get_uid(), c.get_uid()}


def test_json_round_trips(arch_handle):
    g, _ = seed000(arch_handle)
    again = cudnn.pygraph.from_json(g.to_json(), handle=arch_handle)
    assert again.to_json() == g.to_json()
    assert again.name == "jit_matmul_graph" and again.tensor_by_name("0::C").get_dim() == [4, 64, 64]


def test_the_repository_seed000_json_matches_the_python_graph(arch_handle):
    path = os.path.join(DATA, "seed000.json")
    if not os.path.exists(path):
        pytest.skip("tests/data/seed000.json not found")
    loaded = cudnn.pygraph.from_json(open(path).read(), handle=arch_handle)
    built, _ = seed000(arch_handle)
    # The hand-written file leaves the graph's name out; everything else is the same graph.
    expected = json.loads(built.to_json())
    expected["context"]["name"] = loaded.name
    assert json.loads(loaded.to_json()) == expected


def test_a_graph_being_built_prints_its_tensors_and_why_it_is_not_valid(arch_handle):
    # cuDNN prints a graph at any time; its JSON here needs a valid graph.
    g = cudnn.pygraph(handle=arch_handle)
    assert "0 tensors" in str(g) and "no nodes" in str(g)
    a, b = g.tensor(name="a", dim=[2, 4, 4]), g.tensor(name="b", dim=[2, 4, 4])
    g.matmul(a, b, name="mm")
    text = str(g)
    assert "not valid yet" in text and '"mm::C" is virtual but no node reads it' in text
    assert all(f"'{name}'" in text for name in ("a", "b", "mm::C"))
    with pytest.raises(cudnn.InvalidGraphError, match="no node reads it"):
        g.to_json()
