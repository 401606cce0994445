"""Shared fixtures: the binding from the tree (or, with MEMTOOL_PY_INSTALLED,
from wherever it is installed), libmemtool from MEMTOOL_LIBRARY (CMake gives
the build's), the memtool command from MEMTOOL_CLI."""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parents[2]
if not os.environ.get("MEMTOOL_PY_INSTALLED"):
    sys.path.insert(0, str(SOURCE / "bindings" / "python" / "src"))
sys.path.insert(0, str(SOURCE / "tests" / "agent"))


def pytest_configure(config):
    for name in ("MEMTOOL_LIBRARY", "MEMTOOL_CLI"):
        if not os.environ.get(name):
            raise pytest.UsageError("%s must name the build's file (ctest sets it)" % name)


@pytest.fixture(params=["file", "sqlite"])
def store(request, tmp_path):
    """A fresh store of each kind: a pathlib.Path for the file store, a URL
    for SQLite."""
    if request.param == "file":
        root = tmp_path / "memories"
        return root
    return "sqlite:%s" % (tmp_path / "memories.db")


@pytest.fixture
def cli():
    return os.environ["MEMTOOL_CLI"]


@pytest.fixture
def library():
    return os.environ["MEMTOOL_LIBRARY"]
