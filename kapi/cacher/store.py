"""The watch cache's state: flat entries in key order, field indexes, and snapshots by rewinding.

An entry holds what a LIST needs and nothing more: key, namespace, name, rv,
labels, the selectable field values, and the object in its served form (made by
whoever makes entries; opaque here). No dict tree is kept per object.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from sortedcontainers import SortedDict

from kapi._fast import MatchTable
from kapi.object.selectors import LabelSelector


@dataclass(slots=True, eq=False)
class Entry:
    """One object as the cache keeps it."""

    key: str
    namespace: str
    name: str
    rv: int
    labels: Mapping[str, str]
    fields: Mapping[str, str]
    data: bytes  # the object's served form (kapi.encoding.listitems), metadata.resourceVersion set
    # Forms made from ``data`` by the encoding layer, each once per object version; never read here.
    memo: dict[str, bytes] | None = None


@dataclass(slots=True, eq=False)
class CacheEvent:
    """One change as the cache records it: ``entry`` is the new state, ``prev`` the old one."""

    type: str  # ADDED, MODIFIED, DELETED
    key: str
    revision: int
    entry: Entry | None  # for DELETED: the last state with rv = the deletion revision
    prev: Entry | None  # the state before (None for ADDED)
    # What the encoding layer made of this event (watch lines), made once and shared by every watcher.
    memo: dict[tuple[str, bool, bool], bytes] = field(default_factory=dict)


class CacheStore:
    """Current entries ordered by key, with exact-value indexes on chosen fields.

    Every entry's labels also sit in a ``MatchTable`` row (interned, compact), so a
    label selector is answered by one compiled scan instead of a dict walk per entry.
    """

    def __init__(self, indexed_fields: Sequence[str] = ()) -> None:
        self._entries: SortedDict = SortedDict()
        self._indexes: dict[str, dict[str, set[str]]] = {f: {} for f in indexed_fields}
        self._labels = MatchTable()
        self._slots: dict[str, int] = {}  # key -> its row in _labels
        self._slot_keys: list[str] = []  # row -> key (stale for a freed row)
        self._bytes = 0  # the sum of every entry's ``data`` size, kept as entries are put and deleted

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def total_bytes(self) -> int:
        """The size of every entry's served form together (APF's size-based LIST estimate reads it)."""
        return self._bytes

    @property
    def indexed_fields(self) -> tuple[str, ...]:
        return tuple(self._indexes)

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)  # type: ignore[no-any-return]

    def replace_all(self, entries: Sequence[Entry]) -> None:
        """Load a full list (start-up or relist)."""
        self._entries = SortedDict((e.key, e) for e in entries)
        self._labels = MatchTable()
        self._slots = {}
        self._slot_keys = []
        self._bytes = 0
        for e in self._entries.values():
            self._add_row(e)
            self._bytes += len(e.data)
        for f, index in self._indexes.items():
            index.clear()
            for e in entries:
                value = e.fields.get(f)
                if value is not None:
                    index.setdefault(value, set()).add(e.key)

    def put(self, entry: Entry) -> Entry | None:
        """Insert or replace; returns the previous entry."""
        prev = self._entries.get(entry.key)
        self._entries[entry.key] = entry
        self._reindex(entry.key, prev, entry)
        if prev is None:
            self._add_row(entry)
            self._bytes += len(entry.data)
        else:
            self._bytes += len(entry.data) - len(prev.data)
            if prev.labels != entry.labels:
                self._labels.update(self._slots[entry.key], entry.labels)
        return prev  # type: ignore[no-any-return]

    def delete(self, key: str) -> Entry | None:
        prev = self._entries.pop(key, None)
        if prev is not None:
            self._reindex(key, prev, None)
            self._labels.remove(self._slots.pop(key))
            self._bytes -= len(prev.data)
        return prev  # type: ignore[no-any-return]

    def _add_row(self, entry: Entry) -> None:
        slot = self._labels.add(entry.labels)
        self._slots[entry.key] = slot
        if slot == len(self._slot_keys):
            self._slot_keys.append(entry.key)
        else:
            self._slot_keys[slot] = entry.key

    def _reindex(self, key: str, prev: Entry | None, new: Entry | None) -> None:
        for f, index in self._indexes.items():
            old_v = prev.fields.get(f) if prev is not None else None
            new_v = new.fields.get(f) if new is not None else None
            if old_v == new_v:
                continue
            if old_v is not None:
                keys = index.get(old_v)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[old_v]
            if new_v is not None:
                index.setdefault(new_v, set()).add(key)

    # ------------------------------------------------------------- reads

    def keys_from(self, low: str, high: str | None) -> Iterator[str]:
        """Keys in ``[low, high)`` in order (``high`` None: to the end)."""
        return self._entries.irange(low, high, inclusive=(True, False))  # type: ignore[no-any-return]

    def count_range(self, low: str, high: str | None) -> int:
        entries = self._entries
        lo = entries.bisect_left(low)
        hi = entries.bisect_left(high) if high is not None else len(entries)
        return max(0, hi - lo)

    def label_keys(self, selector: LabelSelector, low: str, high: str | None,
                   at_most: int | None = None) -> list[str] | None:
        """Keys in ``[low, high)`` whose labels ``selector`` matches, in key order.

        None when more than ``at_most`` entries match anywhere: sorting them all would
        cost more than walking the key range until a page is full.
        """
        slots = self._labels.select(selector)
        if at_most is not None and len(slots) > at_most:
            return None
        slot_keys = self._slot_keys
        return sorted(k for k in (slot_keys[s] for s in slots) if low <= k and (high is None or k < high))

    def versions(self) -> list[tuple[str, int]]:
        """(key, rv) of every entry, in key order."""
        return [(key, entry.rv) for key, entry in self._entries.items()]

    def entries_of(self, keys: Sequence[str]) -> list[Entry]:
        """The entries at ``keys`` (every key present), in that order."""
        get = self._entries.__getitem__
        return list(map(get, keys))

    def indexed_keys(self, field_name: str, value: str) -> list[str] | None:
        """Keys whose indexed field equals ``value``, in key order; None if the field has no index."""
        index = self._indexes.get(field_name)
        if index is None:
            return None
        return sorted(index.get(value, ()))


@dataclass(slots=True)
class Snapshot:
    """The cache's state at an older revision: the current store with the newer events undone."""

    store: CacheStore
    overlay: dict[str, Entry | None]  # key -> state at the snapshot rv (None: absent)
    _overlay_keys: list[str] = field(default_factory=list)

    @classmethod
    def rewind(cls, store: CacheStore, newer_events: Sequence[CacheEvent]) -> Snapshot:
        overlay: dict[str, Entry | None] = {}
        for ev in reversed(newer_events):  # newest first: the oldest undo wins
            overlay[ev.key] = ev.prev
        return cls(store, overlay, sorted(overlay))

    def get(self, key: str) -> Entry | None:
        if key in self.overlay:
            return self.overlay[key]
        return self.store.get(key)

    def keys_from(self, low: str, high: str | None) -> Iterator[str]:
        """Keys present at the snapshot rv in ``[low, high)``, in order."""
        ov = self._overlay_keys
        i = bisect.bisect_left(ov, low)
        pending = ov[i:]
        j = 0
        for key in self.store.keys_from(low, high):
            while j < len(pending) and pending[j] < key and (high is None or pending[j] < high):
                k = pending[j]
                j += 1
                if self.overlay[k] is not None:
                    yield k
            if key in self.overlay:
                if j < len(pending) and pending[j] == key:
                    j += 1
                if self.overlay[key] is None:
                    continue
            yield key
        while j < len(pending) and (high is None or pending[j] < high):
            k = pending[j]
            j += 1
            if self.overlay[k] is not None:
                yield k
