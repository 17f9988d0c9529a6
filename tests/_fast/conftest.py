"""The twin fixture: every twin test runs against the compiled and the pure module."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from tests._needs import compiled_twin


def _load(name: str, impl: str) -> ModuleType:
    if impl == "c":
        return compiled_twin(name)
    return importlib.import_module(f"kapi._fast.{name}_py")


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def listenc(request: pytest.FixtureRequest) -> ModuleType:
    return _load("listenc", request.param)


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def ring(request: pytest.FixtureRequest) -> ModuleType:
    return _load("ring", request.param)


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_twin), "py"])
def match(request: pytest.FixtureRequest) -> ModuleType:
    return _load("match", request.param)
