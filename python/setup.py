"""Builds idgen's Python package: the extension idgen._idgen is the CMake
target idgen_python of the idgen tree this folder sits in (python/ of it),
or of the tree IDGEN_SOURCE_DIR names, built from the tree's own source
lists and static libraries as the Node.js addon is.  Nothing is fetched:
with Debian's setuptools, install with

    pip install --no-build-isolation ./python

(without --no-build-isolation pip would fetch setuptools from PyPI).  Needs
cmake, a C compiler, python3-dev and the library's build dependencies
(scripts/install-deps.sh).  IDGEN_BUILD_DIR reuses a build directory
(`make build`'s, say) instead of a fresh one under build/.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def source_dir() -> str:
    d = os.environ.get("IDGEN_SOURCE_DIR") or os.path.dirname(HERE)
    if not os.path.isfile(os.path.join(d, "include", "idgen.h")):
        sys.exit("idgen: the idgen source tree was not found at %s: install from python/ inside "
                 "the tree, or set IDGEN_SOURCE_DIR to the tree" % d)
    return d


def version() -> str:
    """The library's version (the project's, in the top CMakeLists.txt)."""
    try:
        with open(os.path.join(source_dir(), "CMakeLists.txt")) as f:
            m = re.search(r"project\(idgen VERSION ([0-9.]+)", f.read())
        return m.group(1) if m else "0.0.0"
    except OSError:
        return "0.0.0"


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        src = source_dir()
        build = os.environ.get("IDGEN_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp),
                                                                  "cmake")
        os.makedirs(build, exist_ok=True)
        jobs = os.environ.get("IDGEN_JOBS", str(min(os.cpu_count() or 1, 4)))
        subprocess.check_call(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                               "-DBUILD_TESTING=OFF", "-DPython3_EXECUTABLE=" + sys.executable])
        subprocess.check_call(["cmake", "--build", build, "--target", "idgen_python", "-j", jobs])
        built = os.path.join(build, "python", "idgen")
        names = [n for n in os.listdir(built) if n.startswith("_idgen") and n.endswith(".so")]
        if not names:
            sys.exit("idgen: the build made no _idgen*.so in " + built)
        out = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copyfile(os.path.join(built, names[0]), out)


setup(
    name="idgen",
    version=version(),
    description="Unique IDs: Snowflake with leased worker IDs, ULID, UUIDv7 (the idgen C library)",
    long_description=open(os.path.join(HERE, "README.md")).read(),
    long_description_content_type="text/markdown",
    license="MIT",
    packages=["idgen"],
    package_data={"idgen": ["py.typed", "__init__.pyi"]},
    ext_modules=[Extension("idgen._idgen", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # f-strings and `from __future__ import annotations` (3.7); the C
    # extension uses the C API of 3.7 on (PyUnicode_AsUTF8AndSize's const).
    python_requires=">=3.7",
    zip_safe=False,
)
