"""The in-process API fixture of tests/api, for the patch tests."""

from tests.api.conftest import Api, api

__all__ = ["Api", "api"]
