"""The served forms of one object version, each made once: its JSON list item and its protobuf message.

An item is what the watch cache (or a LIST from storage) hands out: ``data``, the object's
JSON without kind/apiVersion (a list's items carry neither), and ``memo``, where this module
alone keeps what it made from ``data`` (the protobuf message), so each form is made once per
object version and shared by every LIST and WATCH that sends it.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import orjson

from kapi.encoding import codec, protobuf
from kapi.object.schema import Schema

Obj = dict[str, Any]
GVK = tuple[str, str, str]
_PROTOBUF = "protobuf"  # the memo key of an item's protobuf message


class Item(Protocol):
    """An object version as served (the cacher's ``Entry`` is one)."""

    data: bytes
    memo: dict[str, bytes] | None


def list_item(obj: Obj) -> bytes:
    """The JSON list item of a decoded object: the object without kind/apiVersion."""
    # orjson's buffer is larger than its output: keep an exact copy, a cache holds it long.
    return bytes(memoryview(orjson.dumps({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})))


def at_revision(data: bytes, revision: int) -> bytes:
    """A list item as it reads with ``metadata.resourceVersion`` set to ``revision`` (an object gone then)."""
    obj = orjson.loads(data)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return orjson.dumps(obj)


def type_prefix(kind: str, api_version: str) -> bytes:
    """``{"kind":K,"apiVersion":V,``: put in place of a list item's opening brace, it is the whole object."""
    return b'{"kind":"%s","apiVersion":"%s",' % (kind.encode(), api_version.encode())


def typed(prefix: bytes, data: bytes) -> bytes:
    """A list item with its kind and apiVersion put back (``prefix`` from ``type_prefix``)."""
    return prefix + data[1:]


def objects(items: Sequence[Item]) -> list[Obj]:
    """The items as dicts (decoded only when a caller needs dicts: tables, YAML, metadata)."""
    with codec.paused_gc():
        return [orjson.loads(item.data) for item in items]


def message(schema: Schema, gvk: GVK, item: Item) -> bytes:
    """The item's protobuf message, made once per object version."""
    memo = item.memo
    if memo is None:
        memo = item.memo = {}
    found = memo.get(_PROTOBUF)
    if found is None:
        found = memo[_PROTOBUF] = protobuf.encode(schema, gvk, orjson.loads(item.data))
    return found


def messages(schema: Schema, gvk: GVK, items: Sequence[Item]) -> list[bytes]:
    """Each item's protobuf message (a list's items)."""
    return [message(schema, gvk, item) for item in items]
