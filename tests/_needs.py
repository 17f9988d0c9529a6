"""What a test needs from outside its own code, and the one rule for when it is absent.

Elsewhere a test whose tool is missing skips, saying what is missing. Under CI (``CI=true``) it
fails instead: CI installs everything the suite needs from the project's own files (the ``test``
extra) and has the kubectl binaries, so there a missing tool is a broken run, and a skip would
let the tests that need it drop out unnoticed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
from types import ModuleType

import pytest


def in_ci() -> bool:
    """True where CI runs the suite (``CI`` set to anything but empty, 0 or false, as CI services do)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(condition: object, what: str) -> None:
    """Go on when ``condition`` holds; otherwise fail under CI, skip elsewhere, with ``what`` as the reason.

    At a module's top level it skips (or fails) the whole module.
    """
    if condition:
        return
    if in_ci():
        pytest.fail(f"{what} (under CI=true this fails instead of skipping)", pytrace=False)
    pytest.skip(what, allow_module_level=True)


def require_module(name: str) -> None:
    """A module the ``test`` extra installs (``require`` on whether it is importable)."""
    require(importlib.util.find_spec(name), f"{name} is not installed (the test extra: pip install -e '.[test]')")


def protoc() -> list[str]:
    """The command line of protoc: grpcio-tools' (the ``test`` extra), else a ``protoc`` on PATH."""
    if importlib.util.find_spec("grpc_tools") is not None:
        return [sys.executable, "-m", "grpc_tools.protoc"]
    found = shutil.which("protoc")
    require(found, "protoc is not installed (pip install -e '.[test]' brings it, from grpcio-tools)")
    assert found is not None
    return [found]


def compiled_twin(name: str) -> ModuleType:
    """The compiled twin ``kapi._fast.<name>_c``.

    Skips when ``KAPI_NO_EXTENSIONS=1`` forces the pure twins (the pure pass: a parity test there
    would compare the pure twin with itself). A twin that is not built fails when
    ``KAPI_REQUIRE_EXTENSIONS=1`` (or under CI) and skips otherwise.
    """
    if os.environ.get("KAPI_NO_EXTENSIONS") == "1":
        pytest.skip("KAPI_NO_EXTENSIONS=1: compiled twins not in use")
    try:
        return importlib.import_module(f"kapi._fast.{name}_c")
    except ImportError as err:
        if os.environ.get("KAPI_REQUIRE_EXTENSIONS") == "1":
            pytest.fail(f"KAPI_REQUIRE_EXTENSIONS=1 but kapi._fast.{name}_c is not built ({err})", pytrace=False)
        require(False, f"compiled twin kapi._fast.{name}_c is not built")
        raise  # not reached: require() has skipped or failed
