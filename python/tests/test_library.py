"""Finding and loading libdnnjit.so, versions, and the struct layouts ctypes assumes."""
import ctypes
import os
import shutil
import subprocess
import sys

import pytest

import dnnjit
from dnnjit import _lib

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)


def run_import(code, env_changes, path=PYTHON_DIR):
    """Runs `code` in a fresh interpreter importing dnnjit from `path`."""
    env = dict(os.environ, PYTHONPATH=path)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_loaded_library_exists_and_reports_its_version():
    assert os.path.exists(dnnjit.library_path())
    major, minor, patch = (int(p) for p in dnnjit.backend_version_string().split("."))
    assert dnnjit.backend_version() == major * 10000 + minor * 100 + patch


def test_a_missing_explicit_library_is_an_import_error_naming_it(tmp_path):
    missing = str(tmp_path / "nowhere" / "libdnnjit.so")
    out = run_import("import dnnjit", {"DNNJIT_LIBRARY": missing})
    assert out.returncode != 0
    assert "LibraryNotFoundError" in out.stderr
    assert missing in out.stderr and "$DNNJIT_LIBRARY" in out.stderr


def test_an_explicit_library_is_the_only_candidate(tmp_path):
    # A file that is not a shared library must fail loudly, not fall back to another copy.
    bogus = tmp_path / "libdnnjit.so"
    bogus.write_text("not an ELF file")
    out = run_import("import dnnjit", {"DNNJIT_LIBRARY": str(bogus)})
    assert out.returncode != 0
    assert str(bogus) in out.stderr
    assert "inside the package" not in out.stderr


def copy_package(dest):
    shutil.copytree(os.path.join(PYTHON_DIR, "dnnjit"), os.path.join(dest, "dnnjit"),
                    ignore=shutil.ignore_patterns("libdnnjit.so*", "__pycache__"))


def test_without_any_library_the_error_lists_every_place_tried(tmp_path):
    copy_package(str(tmp_path / "site"))
    out = run_import("import dnnjit", {"DNNJIT_LIBRARY": None, "LD_LIBRARY_PATH": ""}, str(tmp_path / "site"))
    if out.returncode == 0:
        pytest.skip("a libdnnjit.so is installed on this system, so the lookup cannot fail")
    for where in ("inside the package", "in the checkout's build directory", "on the loader's search path"):
        assert where in out.stderr
    assert str(tmp_path / "site" / "dnnjit" / "libdnnjit.so") in out.stderr


def test_the_copy_inside_the_package_is_found(tmp_path):
    copy_package(str(tmp_path / "site"))
    inside = tmp_path / "site" / "dnnjit" / "libdnnjit.so"
    shutil.copyfile(dnnjit.library_path(), inside)
    out = run_import("import dnnjit; print(dnnjit.library_path())", {"DNNJIT_LIBRARY": None}, str(tmp_path / "site"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == os.path.realpath(inside)


def test_package_version_matches_the_library_version():
    assert dnnjit.__version__ == dnnjit.backend_version_string()


# ---- the ctypes structs against the C compiler's layout ----------------------------

STRUCTS = {
    "dnnjit_graph_attr_t": _lib.GraphAttr, "dnnjit_tensor_desc_t": _lib.TensorDesc,
    "dnnjit_tensor_info_t": _lib.TensorInfo, "dnnjit_matmul_attr_t": _lib.MatmulAttr,
    "dnnjit_pointwise_attr_t": _lib.PointwiseAttr, "dnnjit_reduction_attr_t": _lib.ReductionAttr,
    "dnnjit_softmax_attr_t": _lib.SoftmaxAttr, "dnnjit_norm_attr_t": _lib.NormAttr,
    "dnnjit_sdpa_attr_t": _lib.SdpaAttr, "dnnjit_variant_t": _lib.Variant,
}


def test_struct_layouts_match_the_header(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    header = os.path.join(REPO, "include", "dnnjit.h")
    if not cc or not os.path.exists(header):
        pytest.skip("needs a C compiler and include/dnnjit.h")
    lines = ["#include <dnnjit.h>", "#include <stddef.h>", "#include <stdio.h>", "int main(void) {"]
    expected = []
    for cname, struct in STRUCTS.items():
        lines.append(f'    printf("%zu\\n", sizeof({cname}));')
        expected.append(ctypes.sizeof(struct))
        for field, _ in struct._fields_:
            lines.append(f'    printf("%zu\\n", offsetof({cname}, {field}));')
            expected.append(getattr(struct, field).offset)
    lines += ["    return 0;", "}"]
    (tmp_path / "abi.c").write_text("\n".join(lines))
    subprocess.run([cc, "-std=c11", "-I", os.path.dirname(header), "-o", str(tmp_path / "abi"),
                    str(tmp_path / "abi.c")], check=True)
    got = [int(v) for v in subprocess.run([str(tmp_path / "abi")], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert got == expected


def test_enums_mirror_the_header_values():
    # The hand-written enums have no name function in the C API; their values are
    # those of dnnjit.h, checked here against the header text.
    path = os.path.join(REPO, "include", "dnnjit.h")
    if not os.path.exists(path):
        pytest.skip("include/dnnjit.h not found")
    header = open(path).read()
    for text in ("DNNJIT_HEUR_MODE_A = 0", "DNNJIT_HEUR_MODE_B = 1", "DNNJIT_HEUR_MODE_FALLBACK = 2",
                 "DNNJIT_BUILD_PLAN_HEURISTICS_CHOICE = 0", "DNNJIT_BUILD_PLAN_ALL = 1",
                 "DNNJIT_NORM_PHASE_INFERENCE = 0", "DNNJIT_NORM_PHASE_TRAINING = 1",
                 "DNNJIT_SOFTMAX_STATS_LOG_SUM_EXP = 1", "DNNJIT_SOFTMAX_STATS_MAX_SUM_EXP = 2",
                 "DNNJIT_BEHAVIOR_NOTE_RUNTIME_COMPILATION (1u << 0)",
                 "DNNJIT_BEHAVIOR_NOTE_REDUCED_PRECISION (1u << 1)", "DNNJIT_BEHAVIOR_NOTE_NONDETERMINISTIC (1u << 2)"):
        assert text in header
    assert [m.value for m in dnnjit.heur_mode] == [0, 1, 2]
    assert [m.value for m in dnnjit.behavior_note] == [1, 2, 4]


def test_library_enums_come_from_the_library():
    assert dnnjit.data_type.HALF.name == "HALF"
    assert _lib.lib.dnnjit_data_type_size(dnnjit.data_type.HALF) == 2
    assert dnnjit.pointwise_mode.BINARY_SELECT.arity() == 3
    assert dnnjit.pointwise_mode.RELU_BWD.arity() == 2
    assert "NORM2" in dnnjit.reduction_mode.__members__
