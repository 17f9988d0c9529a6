"""What the built-in controllers share."""

from __future__ import annotations

from typing import Any

import trio


class WorkQueue:
    """Keys waiting to be processed: each once however often it is added before its turn, first added first."""

    def __init__(self) -> None:
        self._keys: dict[str, None] = {}
        self._more = trio.Event()

    def add(self, key: str) -> None:
        self._keys[key] = None
        self._more.set()

    async def get(self) -> str:
        while not self._keys:
            self._more = trio.Event()
            await self._more.wait()
        key = next(iter(self._keys))
        del self._keys[key]
        return key


def name_of(obj: Any) -> str:
    """``namespace/name`` of an object for a log line, whatever shape it has."""
    md = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(md, dict):
        return "?"
    return f"{md.get('namespace') or ''}/{md.get('name')}".lstrip("/")
