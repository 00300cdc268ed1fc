"""Shared setup of the Python tests.

The tests import the package from this checkout (python/), so they test these sources
whatever is installed; the library comes from $DNNJIT_LIBRARY (ctest sets it to the
build's), else from where the package looks. Kernels compiled by the tests go to a
temporary cache unless $DNNJIT_CACHE_DIR is set.

Tests marked `gpu` execute on a CUDA GPU through torch; they are skipped, with the
reason, where torch, a GPU or a device-capable dnnjit handle is missing.
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

if "DNNJIT_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="dnnjit-pytest-cache-")
    os.environ["DNNJIT_CACHE_DIR"] = _cache
else:
    _cache = None

import pytest  # noqa: E402

import dnnjit  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: executes on a CUDA GPU with torch (skipped without one)")


def pytest_unconfigure(config):
    if _cache:
        shutil.rmtree(_cache, ignore_errors=True)


_gpu_reason = []


def gpu_unavailable_reason():
    """Why GPU tests cannot run here, or None when they can."""
    if not _gpu_reason:
        try:
            import torch
        except ImportError:
            reason = "torch is not installed"
        else:
            if not torch.cuda.is_available():
                reason = "torch sees no CUDA device"
            elif torch.cuda.get_device_capability()[0] < 8:
                reason = "the GPU is older than sm_80"
            elif not dnnjit.create_handle().has_device:
                reason = "dnnjit found no device (driver not loadable?)"
            else:
                reason = None
        _gpu_reason.append(reason)
    return _gpu_reason[0]


@pytest.fixture(autouse=True)
def _skip_gpu_tests_without_a_gpu(request):
    """Checked when a `gpu` test is about to run (not at collection), so that a run that
    deselects them never imports torch."""
    if request.node.get_closest_marker("gpu"):
        reason = gpu_unavailable_reason()
        if reason:
            pytest.skip(f"GPU test: {reason}")


@pytest.fixture
def arch_handle():
    """A deviceless handle: plans and compiles for sm_90a without a GPU."""
    return dnnjit.create_handle(arch="sm_90a")


_nvrtc = []


def nvrtc_unavailable_reason():
    """None when NVRTC compiles here, else the library's reason."""
    if not _nvrtc:
        g = dnnjit.pygraph(handle=dnnjit.create_handle(arch="sm_80"), io_data_type=dnnjit.data_type.FLOAT)
        x = g.tensor(name="x", dim=[4])
        g.relu(x).set_output(True)
        try:
            g.build([dnnjit.heur_mode.FALLBACK])
            _nvrtc.append(None)
        except dnnjit.NotSupportedError as e:
            _nvrtc.append(str(e))
    return _nvrtc[0]


@pytest.fixture
def nvrtc():
    """Skips the test where NVRTC is missing (deviceless compilation needs it)."""
    reason = nvrtc_unavailable_reason()
    if reason:
        pytest.skip(f"NVRTC is not available: {reason}")


def has_library_function(name):
    return getattr(dnnjit._clib, name, None) is not None


@pytest.fixture
def serialization():
    """Skips the test where the library predates dnnjit_graph_serialize."""
    if not has_library_function("dnnjit_graph_serialize"):
        pytest.skip(f"{dnnjit.library_path()} has no dnnjit_graph_serialize")
