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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test module's ``KNOWN_GAPS`` ({test name or parametrized id: why}) marks those tests strict
    xfail: a known difference from kube-apiserver stays visible, and a fix that makes one pass fails
    the run until the entry is removed."""
    for item in items:
        gaps = getattr(getattr(item, "module", None), "KNOWN_GAPS", None)
        if not gaps:
            continue
        reason = gaps.get(item.name) or gaps.get(getattr(item, "originalname", ""))
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
