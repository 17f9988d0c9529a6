"""Shared fixtures: the path of the realistic pod fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def pod_json() -> dict[str, Any]:
    """A realistic pod (~5.9 KB of JSON)."""
    return json.loads((FIXTURES / "pod.json").read_text())
