"""The in-process API fixture of tests/api, for the handler-level decoding tests."""

from __future__ import annotations

from tests.api.conftest import Api, api  # noqa: F401  (the fixture is used by name)

__all__ = ["Api"]
