"""Storage: the protocol and its backends (public names only)."""

from __future__ import annotations

from kapi.storage.base import Event, EventType, KeyValue, ListResult, Predicate, Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStatistics, SqliteStorage

__all__ = [
    "Event",
    "EventType",
    "KeyValue",
    "ListResult",
    "MemoryStorage",
    "Predicate",
    "SqliteStatistics",
    "SqliteStorage",
    "Storage",
]
