"""Object encodings: msgpack for storage values, JSON (orjson) for the wire."""

from __future__ import annotations

import ctypes
import gc
from contextlib import contextmanager
from typing import Any, Iterator

import msgpack
import orjson

from kapi import errors
from kapi.object.typed import json_kind


def encode_value(obj: dict[str, Any]) -> bytes:
    """An object as stored: msgpack, without its resourceVersion (the revision holds it)."""
    return msgpack.packb(obj, use_bin_type=True)


CorruptObject = errors.CorruptObject  # raised by the decoders below

def decode_value(data: bytes) -> dict[str, Any]:
    """A stored value as a dict; ``CorruptObject`` if it is not msgpack or not a map."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises ValueError, TypeError and its own errors for bad bytes
        raise CorruptObject(f"not a msgpack value: {exc}") from None
    if not isinstance(obj, dict):
        raise CorruptObject(f"not an object: a msgpack {type(obj).__name__}")
    return obj  # type: ignore[no-any-return]


def decode_object(data: bytes) -> dict[str, Any]:
    """A stored object whose ``metadata`` has the types Go's ObjectMeta decodes; ``CorruptObject`` otherwise."""
    obj = decode_value(data)
    for name in ("kind", "apiVersion"):
        if name in obj and not isinstance(obj[name], str):
            raise CorruptObject(f"{name}: want a string, got {json_kind(obj[name])}")
    md = obj.get("metadata")
    if md is not None:
        check_metadata(md)
    return obj


def check_json(obj: dict[str, Any]) -> None:
    """``CorruptObject`` unless ``obj`` encodes as JSON (msgpack can hold bytes, extension types, int keys)."""
    try:
        orjson.dumps(obj)
    except orjson.JSONEncodeError as exc:
        raise CorruptObject(f"not JSON-compatible: {exc}") from None


# ObjectMeta's fields by JSON type (as k8s.io/apimachinery's types.go declares them); None (JSON null)
# decodes to the zero value in Go, so it passes too.
_STRING_FIELDS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                  "creationTimestamp", "deletionTimestamp")
_INT_FIELDS = ("generation", "deletionGracePeriodSeconds")
_REF_STRINGS = ("apiVersion", "kind", "name", "uid")
_REF_BOOLS = ("controller", "blockOwnerDeletion")


def check_metadata(md: Any) -> None:
    """Raise ``CorruptObject`` unless ``md`` decodes as a Go ``ObjectMeta`` (unknown fields are ignored, as Go does)."""
    if not isinstance(md, dict):
        raise CorruptObject(f"metadata: want an object, got {json_kind(md)}")
    for name in _STRING_FIELDS:
        v = md.get(name)
        if v is not None and not isinstance(v, str):
            raise CorruptObject(f"metadata.{name}: want a string, got {json_kind(v)}")
    for name in _INT_FIELDS:
        v = md.get(name)
        if v is not None and (type(v) is not int):
            raise CorruptObject(f"metadata.{name}: want an integer, got {json_kind(v)}")
    for name in ("labels", "annotations"):
        v = md.get(name)
        if v is None:
            continue
        if not isinstance(v, dict):
            raise CorruptObject(f"metadata.{name}: want a map of strings, got {json_kind(v)}")
        for k, val in v.items():
            if not isinstance(k, str) or not isinstance(val, str):
                raise CorruptObject(f"metadata.{name}: want a map of strings, got {json_kind(k)} key "
                                    f"with {json_kind(val)} value")
    finalizers = md.get("finalizers")
    if finalizers is not None and (not isinstance(finalizers, list)
                                   or not all(isinstance(f, str) for f in finalizers)):
        raise CorruptObject(f"metadata.finalizers: want a list of strings, got {json_kind(finalizers)}")
    refs = md.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            raise CorruptObject(f"metadata.ownerReferences: want a list, got {json_kind(refs)}")
        for i, ref in enumerate(refs):
            if not isinstance(ref, dict):
                raise CorruptObject(f"metadata.ownerReferences[{i}]: want an object, got {json_kind(ref)}")
            for name in _REF_STRINGS:
                v = ref.get(name)
                if v is not None and not isinstance(v, str):
                    raise CorruptObject(f"metadata.ownerReferences[{i}].{name}: want a string, "
                                        f"got {json_kind(v)}")
            for name in _REF_BOOLS:
                v = ref.get(name)
                if v is not None and not isinstance(v, bool):
                    raise CorruptObject(f"metadata.ownerReferences[{i}].{name}: want a boolean, "
                                        f"got {json_kind(v)}")
    managed = md.get("managedFields")
    if managed is not None and (not isinstance(managed, list) or not all(isinstance(m, dict) for m in managed)):
        raise CorruptObject(f"metadata.managedFields: want a list of objects, got {json_kind(managed)}")


def decode_metadata(data: bytes) -> dict[str, Any]:
    """Only the stored object's ``metadata`` (without ``managedFields``): ``{"metadata": {...}}``.

    Everything else is skipped by msgpack in C, without building it: for a controller
    that reads owner references and finalizers, a tenth of the cost of a full decode.
    """
    try:
        return _decode_metadata(data)
    except CorruptObject:
        raise
    except Exception as exc:  # msgpack's errors for a value that is not a map (of maps)
        raise CorruptObject(f"not an object with metadata: {exc}") from None


def _decode_metadata(data: bytes) -> dict[str, Any]:
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(data)
    for _ in range(unpacker.read_map_header()):
        if unpacker.unpack() != "metadata":
            unpacker.skip()
            continue
        md: dict[str, Any] = {}
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key == "managedFields":
                unpacker.skip()
            else:
                md[key] = unpacker.unpack()
        return {"metadata": md}
    return {"metadata": {}}


def to_json(obj: Any) -> bytes:
    return orjson.dumps(obj)


def from_json(data: bytes) -> Any:
    """Decode a request body; 400 BadRequest on anything that is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise errors.BadRequest(f"error decoding body as JSON: {exc}") from None


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk decode (no await inside).

    Decoding thousands of objects allocates millions of containers; with the
    collector running, its full passes make that about five times slower.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def release_free_memory() -> None:
    """Hand memory freed by a bulk load back to the OS (glibc's malloc_trim; elsewhere nothing).

    A relist decodes every object once and drops the decoded trees; the heap keeps
    their pages unless told otherwise, and the process looks twice its size.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)
