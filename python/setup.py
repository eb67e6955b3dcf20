"""Builds and installs the Python package xsect: the package, and the shared
library libxsect.so built from the Go module beside it (cabi/) with the local
Go toolchain (go build -buildmode=c-shared; cgo, so gcc too). Offline:

    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation ./python

The environment variable GO names the go command if it is not on PATH.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithGo(build_py):
    """build_py, then go build -buildmode=c-shared into the package."""

    def run(self):
        super().run()
        go = os.environ.get("GO") or shutil.which("go")
        if not go:
            raise SystemExit("xsect: the go command is needed to build libxsect.so: put it on PATH or set GO")
        out = os.path.join(os.path.abspath(self.build_lib), "xsect", "libxsect.so")
        env = dict(os.environ, CGO_ENABLED="1")
        subprocess.check_call([go, "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./cabi"],
                              cwd=HERE, env=env)
        header = os.path.splitext(out)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)


class BinaryDistribution(Distribution):
    """A distribution with a platform-specific library."""

    def has_ext_modules(self):
        return True


setup(
    name="xsect",
    version="0.1.0",
    description="Exact, multi-core and GPU set intersection, all-pairs, similarity joins and frequent pairs, numpy in and out",
    packages=["xsect"],
    python_requires=">=3.9",
    install_requires=["numpy"],
    cmdclass={"build_py": BuildWithGo},
    distclass=BinaryDistribution,
    zip_safe=False,
)
