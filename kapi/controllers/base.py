"""What the built-in controllers share."""

from __future__ import annotations

from typing import Any


def name_of(obj: Any) -> str:
    """``namespace/name`` of an object for a log line, whatever shape it has."""
    md = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(md, dict):
        return "?"
    return f"{md.get('namespace') or ''}/{md.get('name')}".lstrip("/")
