"""The storage protocol every backend implements, and its value types.

A store maps keys (``/registry/<prefix>/[<ns>/]<name>``) to opaque value bytes.
Every write gets the next value of one global, strictly increasing revision;
an object's resourceVersion is the revision of its last write. History is
kept until ``compact(rev)``: ``list(revision=R)`` and ``watch(from_rev=R)``
work for any ``R`` above the compacted revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncContextManager, Literal, Protocol, Sequence

import trio

EventType = Literal["ADDED", "MODIFIED", "DELETED", "PROGRESS"]


@dataclass(frozen=True, slots=True)
class KeyValue:
    """A key's value at one revision."""

    key: str
    value: bytes
    revision: int  # mod revision: the revision of the write that produced this value
    create_revision: int


@dataclass(frozen=True, slots=True)
class Event:
    """One committed change, or a progress marker.

    ``value`` is the new value (for DELETED: None). ``prev_value`` is the value
    before the change (None for ADDED). ``revision`` is the write's revision.
    A PROGRESS event (key "", no values) says every event up to ``revision``
    has been delivered (see ``Storage.request_progress``).
    """

    type: EventType
    key: str
    value: bytes | None
    prev_value: bytes | None
    revision: int
    create_revision: int = 0
    prev_revision: int = 0


@dataclass(frozen=True, slots=True)
class ListResult:
    """A page of a range read.

    ``revision`` is the store revision the read was taken at; ``more`` tells
    whether keys remain after the last one returned; ``remaining`` counts them
    (0 when ``more`` is false).
    """

    items: Sequence[KeyValue]
    revision: int
    more: bool = False
    remaining: int = 0


class Storage(Protocol):
    """The async key-value interface the cacher and registry build on.

    Errors: ``KeyNotFound``, ``KeyExists``, ``RevisionConflict``,
    ``RevisionCompacted``, ``StorageUnavailable`` from ``kapi.errors``.
    """

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the backend's tasks and threads until cancelled; ``started()`` once usable."""

    async def create(self, key: str, value: bytes) -> int:
        """Create ``key``; return the new revision. ``KeyExists`` if present."""

    async def get(self, key: str) -> KeyValue:
        """The latest value of ``key``. ``KeyNotFound`` if absent."""

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        """Replace ``key`` if its revision is ``expected_revision``; return the new revision.

        ``KeyNotFound`` if absent, ``RevisionConflict`` (carrying the current
        revision) if it changed.
        """

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, KeyValue]:
        """Delete ``key`` (only at ``expected_revision`` when given).

        Returns the deletion revision and the deleted value.
        """

    async def list(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        start: str | None = None,
        limit: int | None = None,
    ) -> ListResult:
        """Keys under ``prefix`` in key order, from ``start`` (inclusive) on.

        At the latest revision, or at ``revision`` (``RevisionCompacted`` if it
        is at or below the compacted revision; a revision above the current
        one reads the current state).
        """

    async def count(self, prefix: str) -> int:
        """How many keys live under ``prefix`` now."""

    def watch(self, prefix: str, from_revision: int) -> AsyncContextManager[trio.MemoryReceiveChannel[Event]]:
        """Events under ``prefix`` with revision > ``from_revision``, in order.

        Replays history first (``RevisionCompacted`` if ``from_revision`` is
        below the compacted revision), then follows live commits. The channel
        closes when the backend stops or the subscriber falls too far behind.
        """

    def request_progress(self) -> None:
        """Ask for a PROGRESS event at the current revision on every live watch (etcd's RequestProgress)."""

    def current_revision(self) -> int:
        """The latest committed revision (cheap, no I/O)."""

    def compacted_revision(self) -> int:
        """The highest revision compacted away (0 if none)."""

    async def compact(self, revision: int) -> None:
        """Forget history at and below ``revision`` (the latest state stays)."""
