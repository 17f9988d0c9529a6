"""The twin fixture: every twin test runs against the compiled and the pure module."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def _load(name: str, impl: str) -> ModuleType:
    if impl == "c":
        if os.environ.get("KAPI_NO_EXTENSIONS") == "1":
            pytest.skip("KAPI_NO_EXTENSIONS=1: compiled twins not in use")
        try:
            return importlib.import_module(f"kapi._fast.{name}_c")
        except ImportError:
            pytest.skip(f"compiled twin kapi._fast.{name}_c is not built")
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
