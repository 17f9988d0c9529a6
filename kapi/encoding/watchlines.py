"""Watch event bytes of one resource: JSON lines, protobuf frames, bookmarks and errors.

JSON events are newline-delimited ``{"type":T,"object":OBJ}``; protobuf events are
length-prefixed WatchEvent frames around the enveloped object. An event the watch cache
hands out is encoded once per (type, previous state, format) and shared by every watcher
(kept on the event's ``memo``); an object's protobuf message comes from ``listitems``.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

import orjson

from kapi._fast import bookmark_line, watch_line
from kapi.encoding import listitems, protobuf
from kapi.encoding.listitems import Item
from kapi.object.schema import Schema

Obj = dict[str, Any]


class Change(Protocol):
    """A change as the watch cache records it (the cacher's ``CacheEvent`` is one)."""

    revision: int

    @property
    def entry(self) -> Item | None: ...

    @property
    def prev(self) -> Item | None: ...

    @property
    def memo(self) -> dict[tuple[str, bool, bool], bytes]: ...


class _Version:
    """An item at another revision than the one it was cached at (not cached itself)."""

    __slots__ = ("data", "memo")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.memo: dict[str, bytes] | None = None


class WatchLines:
    """The watch event bytes of one resource (its kind, apiVersion and schema)."""

    def __init__(self, kind: str, api_version: str, schema: Schema) -> None:
        self.kind = kind
        self.api_version = api_version
        self.schema = schema
        group, _, version = api_version.rpartition("/")
        self.gvk = (group, version, kind)
        self._kind, self._api_version = kind.encode(), api_version.encode()
        self._type_prefix = listitems.type_prefix(kind, api_version)

    def typed(self, data: bytes) -> bytes:
        """A list item's JSON with its kind and apiVersion put back."""
        return listitems.typed(self._type_prefix, data)

    def item_event(self, kind: str, item: Item, proto: bool) -> bytes:
        """``item`` as an event of type ``kind`` (a watch's initial ADDED events)."""
        if not proto:
            return watch_line(kind.encode(), self._type_prefix, item.data)
        return protobuf.watch_frame(kind, protobuf.wrap(self.api_version, self.kind,
                                                        listitems.message(self.schema, self.gvk, item)))

    def event(self, change: Change, kind: str, use_prev: bool, proto: bool = False) -> bytes:
        """The bytes of ``change`` seen as ``kind``; ``use_prev``: its previous state, at its revision."""
        memo_key = (kind, use_prev, proto)
        line = change.memo.get(memo_key)
        if line is None:
            item: Item
            if use_prev:
                assert change.prev is not None
                item = _Version(listitems.at_revision(change.prev.data, change.revision))
            else:
                assert change.entry is not None
                item = change.entry
            line = self.item_event(kind, item, proto)
            change.memo[memo_key] = line
        return line

    def queued(self, items: Iterable[object], proto: bool = False) -> bytes:
        """The bytes of what a watcher was handed, in one piece: (change, type, previous state)
        triples and bookmarks (anything else with ``revision`` and ``initial_events_end``)."""
        out = []
        for item in items:
            if type(item) is tuple:
                change, kind, use_prev = item
                line = change.memo.get((kind, use_prev, proto))  # made once, by the first watcher to send it
                out.append(line if line is not None else self.event(change, kind, use_prev, proto))
            else:
                out.append(self.bookmark(item.revision, item.initial_events_end, proto))  # type: ignore[attr-defined]
        return b"".join(out)

    def bookmark(self, rv: int, initial_events_end: bool = False, proto: bool = False) -> bytes:
        """A BOOKMARK event at ``rv`` (with the initial-events-end annotation if asked)."""
        if not proto:
            return bookmark_line(self._kind, self._api_version, rv, initial_events_end)
        md: dict[str, object] = {"resourceVersion": str(rv)}
        if initial_events_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.kind, "apiVersion": self.api_version, "metadata": md}
        return protobuf.watch_frame("BOOKMARK", protobuf.encode_object(self.schema, obj))

    def error(self, status: dict[str, object], proto: bool = False) -> bytes:
        """An ERROR event carrying ``status`` (a metav1.Status)."""
        return error_event(status, self.schema if proto else None)


def object_event(kind: str, obj: Obj, proto_schema: Schema | None) -> bytes:
    """A decoded object's event (a watch on storage): a JSON line, or with a schema a protobuf frame."""
    if proto_schema is not None:
        return protobuf.encode_watch_event(proto_schema, kind, obj)
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def error_event(status: dict[str, object], proto_schema: Schema | None) -> bytes:
    """An ERROR event: a JSON line, or (with a schema) a protobuf frame."""
    if proto_schema is not None:
        return protobuf.watch_frame("ERROR", protobuf.encode_status(status))
    return b'{"type":"ERROR","object":%s}\n' % orjson.dumps(status)
