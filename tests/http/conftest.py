"""HTTP-layer fixtures: the in-process ASGI app (as tests/api has it) and ASGI drivers for streams."""

from __future__ import annotations

from tests.api.conftest import TOKEN, Api, Reply, api  # noqa: F401  (the fixture, shared)
