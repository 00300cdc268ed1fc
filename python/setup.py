"""Builds libdnnjit.so with CMake from the repository this directory belongs to and puts
it inside the package, so that `pip install ./python` gives a self-contained install.
The package itself is pure Python (ctypes); the wheel is tagged py3-none-<platform>
because it carries the shared library.

DNNJIT_CMAKE_ARGS adds arguments to the CMake configure step (e.g. "-DCMAKE_C_COMPILER=clang").
"""
import os
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1 has it in the wheel package
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def build_library(build_dir):
    """Configures and builds the `dnnjit` target; returns the path of libdnnjit.so."""
    if not os.path.exists(os.path.join(SOURCE, "CMakeLists.txt")):
        raise RuntimeError(f"dnnjit: {SOURCE} has no CMakeLists.txt; install from a checkout of the repository "
                           "(pip install ./python)")
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("dnnjit: cmake is needed to build libdnnjit.so (see scripts/install-deps)")
    configure = [cmake, "-S", SOURCE, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DDNNJIT_BUILD_TESTS=OFF"]
    configure += shlex.split(os.environ.get("DNNJIT_CMAKE_ARGS", ""))
    subprocess.check_call(configure)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    subprocess.check_call([cmake, "--build", build_dir, "--target", "dnnjit", "-j", jobs])
    return os.path.join(build_dir, "libdnnjit.so")


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        build_temp = self.get_finalized_command("build").build_temp
        library = build_library(os.path.join(os.path.abspath(build_temp), "cmake"))
        target = os.path.join(self.build_lib, "dnnjit", "libdnnjit.so")
        # copyfile follows the libdnnjit.so -> .so.0 -> .so.0.1.0 links: one real file.
        shutil.copyfile(library, target)


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
