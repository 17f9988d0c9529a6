"""The storage protocol every backend implements, and its value types.

A store maps keys (``/registry/<prefix>/[<ns>/]<name>``) to opaque value bytes.
Every write gets the next value of one global, strictly increasing revision;
an object's resourceVersion is the revision of its last write. History is
kept until ``compact(rev)``: ``list(revision=R)`` and ``watch(from_rev=R)``
work for any ``R`` above the compacted revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncContextManager, Callable, Generic, Literal, Protocol, Sequence, TypeVar

import trio

if TYPE_CHECKING:
    from kapi.object.listopts import ListOptions
    from kapi.object.selectors import FieldSelector, LabelSelector

T = TypeVar("T")
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
class ListResult(Generic[T]):
    """A page of a LIST: of a range read (``KeyValue`` items) or of objects (``get_list``), up to the handlers.

    ``revision`` is the store revision the read was taken at (a LIST's resourceVersion);
    ``more`` tells whether keys remain after the last one returned; ``remaining`` counts
    them (0 when ``more`` is false; None when a selector made them uncountable);
    ``continue_token`` asks for the next page. ``source`` (storage, cache or snapshot),
    ``scanned`` (objects read to answer) and ``index`` (the field index used) say what
    the LIST cost.
    """

    items: Sequence[T]
    revision: int
    more: bool = False
    remaining: int | None = 0
    continue_token: str = ""
    source: str = "storage"
    scanned: int = 0
    index: str = ""


@dataclass(frozen=True, slots=True)
class Predicate(Generic[T]):
    """What a LIST selects, and how a stored value becomes one of its items (kube's SelectionPredicate).

    ``decode`` gives the item of a stored value, or None when the selectors refuse it or it
    cannot be served (a corrupt value is left out of a LIST: whoever decodes logs it).
    A watch cache answers from its own entries with ``label`` and ``field`` alone.
    """

    decode: Callable[[KeyValue], T | None]
    label: LabelSelector | None = None
    field: FieldSelector | None = None

    @property
    def everything(self) -> bool:
        return self.label is None and self.field is None


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
    ) -> ListResult[KeyValue]:
        """Keys under ``prefix`` in key order, from ``start`` (inclusive) on.

        At the latest revision, or at ``revision`` (``RevisionCompacted`` if it
        is at or below the compacted revision; a revision above the current
        one reads the current state).
        """

    async def get_list(self, prefix: str, opts: ListOptions, pred: Predicate[T]) -> ListResult[T]:
        """A LIST under ``prefix`` by the API's rules (SEMANTICS §1.2, §1.3): resourceVersion and
        resourceVersionMatch, limit and continue, the items ``pred`` selects.

        Backends share one implementation (``kapi.storage._paging``); a watch cache serves it from
        memory where it may and falls back to the storage it wraps where it may not.
        Raises ``Gone`` (a compacted continue or Exact revision) and ``ServerTimeout`` (a future one).
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

    @property
    def consistent_reads_from_cache(self) -> bool:
        """Whether a watch cache may serve consistent reads over this backend (kube's ConsistentReadSupported).

        True when ``request_progress`` brings a watch cache to the current revision promptly and in
        order with events; etcd only from 3.4.31 / 3.5.13. When False a watch cache hands consistent
        LISTs to the backend (kube-apiserver's fallback).
        """

    async def current_revision(self) -> int:
        """The latest committed revision (etcd: a quorum read, so it is awaited)."""

    def compacted_revision(self) -> int:
        """The highest revision compacted away (0 if none)."""

    async def compact(self, revision: int) -> None:
        """Forget history at and below ``revision`` (the latest state stays)."""
