"""The structural-schema rules a CRD's ``openAPIV3Schema`` must pass (placeholder; filled below)."""

from __future__ import annotations

from typing import Any

from kapi.errors import Cause

__all__ = ["validate_schema"]


def validate_schema(props: Any, path: str) -> list[Cause]:
    return []
