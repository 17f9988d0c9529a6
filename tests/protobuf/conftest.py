"""Twin fixtures: every wire test runs against the compiled and the pure module."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

from kapi.encoding.protobuf import Codec
from kapi.object.schema import Schema, load_builtin


def load_twin(impl: str) -> ModuleType:
    """The compiled (``c``) or pure (``py``) wire twin; skips when the compiled one is off or missing."""
    if impl == "c":
        if os.environ.get("KAPI_NO_EXTENSIONS") == "1":
            pytest.skip("KAPI_NO_EXTENSIONS=1: compiled twins not in use")
        try:
            return importlib.import_module("kapi._fast.protowire_c")
        except ImportError:
            if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
                raise
            pytest.skip("compiled twin kapi._fast.protowire_c is not built")
    return importlib.import_module("kapi._fast.protowire_py")


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def wire(request: pytest.FixtureRequest) -> ModuleType:
    return load_twin(request.param)


@pytest.fixture
def codec(wire: ModuleType) -> Codec:
    return Codec(wire)


@pytest.fixture(scope="session")
def schema() -> Schema:
    return load_builtin()
