"""Twin fixtures: every wire test runs against the compiled and the pure module."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from kapi.encoding.protobuf import Codec
from kapi.object.schema import Schema, load_builtin
from tests._needs import compiled_twin


def load_twin(impl: str) -> ModuleType:
    """The compiled (``c``) or pure (``py``) wire twin; the compiled one as ``tests._needs.compiled_twin`` has it."""
    if impl == "c":
        return compiled_twin("protowire")
    return importlib.import_module("kapi._fast.protowire_py")


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def wire(request: pytest.FixtureRequest) -> ModuleType:
    return load_twin(request.param)


@pytest.fixture(scope="module")
def twins() -> tuple[ModuleType, ModuleType]:
    """(pure, compiled) for the parity tests: skipped in the pure pass, where both would be the pure twin."""
    return load_twin("py"), load_twin("c")


@pytest.fixture
def codec(wire: ModuleType) -> Codec:
    return Codec(wire)


@pytest.fixture(scope="session")
def schema() -> Schema:
    return load_builtin()
