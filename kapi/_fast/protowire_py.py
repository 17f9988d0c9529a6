"""Protocol buffers wire primitives and the plan-driven message walk (pure-Python twin).

A ``MessagePlan`` is a precompiled field table of one message: for each field its
JSON key, number, label (``L_*``) and value kind (``K_*``). ``encode_plan`` walks a
JSON-form dict with it and ``decode_plan`` rebuilds the dict; ``kapi.protobuf``
builds the plans from the schema. Special JSON forms that have no fast path take
the field's ``enc``/``dec`` callables (JSON value -> message body, body -> value).
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from kapi import errors

__all__ = [
    "K_BOOL", "K_BYTES", "K_CUSTOM", "K_DOUBLE", "K_INT32", "K_INT64", "K_INTORSTR", "K_MESSAGE",
    "K_MICROTIME", "K_QUANTITY", "K_RAW", "K_STRING", "K_STRLIST", "K_TIME",
    "L_INLINE", "L_MAP", "L_REPEATED", "L_SINGLE",
    "MessagePlan", "decode_plan", "decode_varint", "encode_list", "encode_message", "encode_plan",
    "encode_varint", "encoded_list_size", "frame_watch_event", "iter_fields",
]

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

L_SINGLE, L_REPEATED, L_MAP, L_INLINE = 0, 1, 2, 3

K_STRING = 1
K_INT32 = 2
K_INT64 = 3
K_BOOL = 4
K_DOUBLE = 5
K_BYTES = 6  # JSON base64 string <-> raw bytes
K_MESSAGE = 7  # nested message with its own plan
K_QUANTITY = 8  # string <-> Quantity{string=1}
K_INTORSTR = 9  # int | string <-> IntOrString{type=1, intVal=2, strVal=3}
K_RAW = 10  # any JSON value <-> {raw=1: its JSON bytes}
K_TIME = 11  # RFC 3339 seconds <-> Timestamp{seconds=1, nanos=2}
K_MICROTIME = 12  # RFC 3339 with microseconds <-> Timestamp
K_STRLIST = 13  # list of strings <-> {items=1 repeated}
K_CUSTOM = 14  # the field's enc/dec callables do the work

_MASK64 = (1 << 64) - 1
_WIRE_OF = {K_DOUBLE: FIXED64, K_INT32: VARINT, K_INT64: VARINT, K_BOOL: VARINT}

# Field tuple as given to MessagePlan.set_fields.
FieldSpec = tuple[str, int, int, int, "MessagePlan | None", "Callable[[Any], bytes | None] | None",
                  "Callable[[bytes], Any] | None"]


def encode_varint(value: int) -> bytes:
    """Base-128 varint; negative numbers take ten bytes (two's complement), as Go writes int32/int64."""
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """``(value, next position)`` of the unsigned varint at ``pos``; raises BadRequest."""
    result = 0
    shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise errors.BadRequest("protobuf: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise errors.BadRequest("protobuf: varint longer than ten bytes")


def _tag(number: int, wire: int) -> bytes:
    return encode_varint((number << 3) | wire)


def encode_message(fields: Iterable[tuple[int, int, Any]]) -> bytes:
    """One message from ``(number, wire type, value)`` in the given order.

    VARINT takes an int (negative ones sign-extended), LEN bytes or str, FIXED64 a
    float or 8 bytes, FIXED32 a float or 4 bytes.
    """
    out = bytearray()
    for number, wire, value in fields:
        out += _tag(number, wire)
        if wire == VARINT:
            out += encode_varint(int(value))
        elif wire == LEN:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            out += encode_varint(len(raw))
            out += raw
        elif wire == FIXED64:
            out += struct.pack("<d", value) if isinstance(value, float) else _fixed(value, 8)
        elif wire == FIXED32:
            out += struct.pack("<f", value) if isinstance(value, float) else _fixed(value, 4)
        else:
            raise ValueError(f"protobuf: unsupported wire type {wire}")
    return bytes(out)


def _fixed(value: Any, size: int) -> bytes:
    raw = bytes(value)
    if len(raw) != size:
        raise ValueError(f"protobuf: fixed field needs {size} bytes")
    return raw


def iter_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Every top-level ``(number, wire type, value)`` of one message, in wire order.

    Varints come back unsigned, fixed64/fixed32 and LEN as bytes. Raises BadRequest.
    """
    pos = 0
    end = len(data)
    while pos < end:
        key, pos = decode_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise errors.BadRequest("protobuf: field number 0")
        value: int | bytes
        if wire == VARINT:
            value, pos = decode_varint(data, pos)
        elif wire == LEN:
            size, pos = decode_varint(data, pos)
            if size > end - pos:
                raise errors.BadRequest("protobuf: truncated length-delimited field")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if size > end - pos:
                raise errors.BadRequest("protobuf: truncated fixed-width field")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise errors.BadRequest(f"protobuf: unsupported wire type {wire}")
        yield number, wire, value


def frame_watch_event(type: str, object_bytes: bytes) -> bytes:  # noqa: A002 - the wire name
    """A 4-byte big-endian length, then WatchEvent{type=1, object=2 RawExtension{raw=1}}."""
    t = type.encode()
    raw_ext = b"\x0a" + encode_varint(len(object_bytes)) + object_bytes
    event = b"\x0a" + encode_varint(len(t)) + t + b"\x12" + encode_varint(len(raw_ext)) + raw_ext
    return len(event).to_bytes(4, "big") + event


def encoded_list_size(list_meta: bytes, items: Sequence[bytes]) -> int:
    """The size of the List message ``encode_list`` yields (metadata=1, items=2)."""
    size = 1 + len(encode_varint(len(list_meta))) + len(list_meta)
    for item in items:
        size += 1 + len(encode_varint(len(item))) + len(item)
    return size


def encode_list(
    list_meta: bytes, items: Sequence[bytes], head: bytes = b"", tail: bytes = b"", chunk_bytes: int = 1 << 16
) -> Iterator[bytes]:
    """``head`` + List{metadata=1, items=2...} + ``tail`` in chunks of about ``chunk_bytes``.

    Each item is an already-encoded message; the list is never joined whole.
    """
    parts = [head, b"\x0a", encode_varint(len(list_meta)), list_meta]
    size = len(head) + len(list_meta) + 2
    for item in items:
        parts.append(b"\x12")
        parts.append(encode_varint(len(item)))
        parts.append(item)
        size += len(item) + 2
        if size >= chunk_bytes:
            yield b"".join(parts)
            parts = []
            size = 0
    parts.append(tail)
    yield b"".join(parts)


# ------------------------------------------------------------------ plans


class _Field:
    """One compiled field of a MessagePlan."""

    __slots__ = ("dec", "enc", "key", "kind", "label", "number", "sub", "tag", "wire")

    def __init__(self, spec: FieldSpec) -> None:
        self.key, self.number, self.label, self.kind, self.sub, self.enc, self.dec = spec
        scalar_wire = _WIRE_OF.get(self.kind, LEN)
        self.wire = scalar_wire if self.label in (L_SINGLE, L_REPEATED) else LEN
        self.tag = _tag(self.number, self.wire)


class MessagePlan:
    """The compiled field table of one message; fields are set after creation (plans recurse)."""

    __slots__ = ("by_number", "fields", "name", "omit_empty_strings")

    def __init__(self, name: str, omit_empty_strings: bool = False) -> None:
        self.name = name
        # Decoding leaves out "" of single string fields, as Go's JSON omitempty does.
        self.omit_empty_strings = omit_empty_strings
        self.fields: tuple[_Field, ...] = ()
        self.by_number: dict[int, _Field] = {}

    def set_fields(self, specs: Iterable[FieldSpec]) -> None:
        """Install ``(key, number, label, kind, sub plan, enc, dec)`` tuples, ordered by number."""
        self.fields = tuple(sorted((_Field(s) for s in specs), key=lambda f: f.number))
        self.by_number = {f.number: f for f in self.fields}


def _len_field(tag: bytes, body: bytes) -> bytes:
    return tag + encode_varint(len(body)) + body


def encode_plan(plan: MessagePlan, obj: dict[str, Any]) -> bytes:
    """The message bytes of the JSON-form dict ``obj``; keys the plan lacks are dropped.

    Raises:
        TypeError, ValueError: a value does not fit its field.
    """
    if not isinstance(obj, dict):
        raise TypeError(f"protobuf: {plan.name} needs an object, not {type(obj).__name__}")
    out = bytearray()
    for f in plan.fields:
        label = f.label
        if label == L_INLINE:
            out += _len_field(f.tag, encode_plan(f.sub, obj))  # type: ignore[arg-type]
            continue
        value = obj.get(f.key)
        if value is None:
            if f.key in obj and label == L_SINGLE and f.kind in (K_TIME, K_MICROTIME):
                out += f.tag + b"\x00"  # a null non-pointer Time: Go writes the empty message
            continue
        if label == L_SINGLE:
            _encode_value(out, f, value)
        elif label == L_REPEATED:
            if not isinstance(value, list):
                raise TypeError(f"protobuf: {f.key} needs a list")
            for item in value:
                if item is None:
                    # A null element of a message list is Go's zero struct: the empty message.
                    if f.kind == K_MESSAGE or f.kind == K_RAW:
                        out += f.tag + b"\x00"
                    continue
                _encode_value(out, f, item)
        else:
            if not isinstance(value, dict):
                raise TypeError(f"protobuf: {f.key} needs an object")
            for k in sorted(value):
                entry = bytearray(_len_field(b"\x0a", _utf8(k)))
                v = value[k]
                if v is not None:
                    _encode_value(entry, f, v, b"\x12")
                out += _len_field(f.tag, bytes(entry))
    return bytes(out)


def _utf8(value: Any) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"protobuf: expected a string, not {type(value).__name__}")
    return value.encode()


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise TypeError(f"protobuf: expected an integer, not {type(value).__name__}")
    if not -(1 << 63) <= value < (1 << 63):
        raise OverflowError("protobuf: integer out of int64 range")
    return value


def _encode_value(out: bytearray, f: _Field, value: Any, tag: bytes | None = None) -> None:
    """Append one value of field ``f`` (a map value when ``tag`` is the entry's value tag)."""
    kind = f.kind
    if tag is None:
        tag = f.tag
    if kind == K_STRING:
        out += _len_field(tag, _utf8(value))
    elif kind == K_INT32 or kind == K_INT64:
        out += tag + encode_varint(_int(value))
    elif kind == K_BOOL:
        if not isinstance(value, bool):
            raise TypeError("protobuf: expected a boolean")
        out += tag + (b"\x01" if value else b"\x00")
    elif kind == K_DOUBLE:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("protobuf: expected a number")
        out += tag + struct.pack("<d", float(value))
    elif kind == K_BYTES:
        out += _len_field(tag, binascii.a2b_base64(_utf8(value), strict_mode=True) if value else b"")
    elif kind == K_MESSAGE:
        out += _len_field(tag, encode_plan(f.sub, value))  # type: ignore[arg-type]
    elif kind == K_QUANTITY:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        out += _len_field(tag, _len_field(b"\x0a", _utf8(value)))
    elif kind == K_INTORSTR:
        if isinstance(value, str):
            s = value.encode()
            body = b"\x08\x01\x10\x00" + _len_field(b"\x1a", s)
        else:
            body = b"\x08\x00\x10" + encode_varint(_int(value)) + b"\x1a\x00"
        out += _len_field(tag, body)
    elif kind == K_RAW:
        out += _len_field(tag, _len_field(b"\x0a", orjson.dumps(value)))
    elif kind == K_STRLIST:
        if not isinstance(value, list):
            raise TypeError("protobuf: expected a list of strings")
        out += _len_field(tag, b"".join(_len_field(b"\x0a", _utf8(s)) for s in value))
    else:  # K_TIME, K_MICROTIME, K_CUSTOM
        body = f.enc(value)  # type: ignore[misc]
        if body is not None:
            out += _len_field(tag, body)


def decode_plan(plan: MessagePlan, data: bytes, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-form dict of one message; unknown field numbers are skipped. Raises BadRequest."""
    out: dict[str, Any] = {} if into is None else into
    by_number = plan.by_number
    for number, wire, value in iter_fields(data):
        f = by_number.get(number)
        if f is None:
            continue
        label = f.label
        if label == L_INLINE:
            decode_plan(f.sub, _need_len(wire, value), out)  # type: ignore[arg-type]
        elif label == L_SINGLE:
            if f.kind == K_STRING and plan.omit_empty_strings and value == b"":
                out.pop(f.key, None)
                continue
            out[f.key] = _decode_value(f, wire, value)
        elif label == L_REPEATED:
            items = out.get(f.key)
            if items is None:
                items = out[f.key] = []
            if wire == LEN and f.wire != LEN:  # packed scalars, as proto3 writers send
                assert isinstance(value, bytes)
                pos = 0
                while pos < len(value):
                    if f.wire == VARINT:
                        raw, pos = decode_varint(value, pos)
                        items.append(_decode_value(f, VARINT, raw))
                    else:
                        items.append(_decode_value(f, FIXED64, value[pos : pos + 8]))
                        pos += 8
            else:
                items.append(_decode_value(f, wire, value))
        else:
            entries = out.get(f.key)
            if entries is None:
                entries = out[f.key] = {}
            key = ""
            found = False
            val: Any = None
            for n, w, v in iter_fields(_need_len(wire, value)):
                if n == 1:
                    key = _need_len(w, v).decode()
                elif n == 2:
                    val = _decode_value(f, w, v)
                    found = True
            if not found:
                val = _decode_value(f, LEN, b"") if f.kind not in _WIRE_OF else _zero(f.kind)
            entries[key] = val
    return out


def _zero(kind: int) -> Any:
    return {K_BOOL: False, K_DOUBLE: 0}.get(kind, 0)


def _need_len(wire: int, value: int | bytes) -> bytes:
    if wire != LEN:
        raise errors.BadRequest("protobuf: expected a length-delimited field")
    return value  # type: ignore[return-value]


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _decode_value(f: _Field, wire: int, value: int | bytes) -> Any:
    kind = f.kind
    if kind == K_INT32 or kind == K_INT64 or kind == K_BOOL:
        if wire != VARINT:
            raise errors.BadRequest(f"protobuf: field {f.key} expects a varint")
        assert isinstance(value, int)
        if kind == K_BOOL:
            return value != 0
        return _signed(value, 32 if kind == K_INT32 else 64)
    if kind == K_DOUBLE:
        if wire != FIXED64:
            raise errors.BadRequest(f"protobuf: field {f.key} expects a double")
        d = struct.unpack("<d", value)[0]
        # Go's JSON writes integral doubles without a fraction.
        return int(d) if d.is_integer() and abs(d) < 1e21 else d
    data = _need_len(wire, value)
    if kind == K_STRING:
        return _text(data)
    if kind == K_BYTES:
        return binascii.b2a_base64(data, newline=False).decode()
    if kind == K_MESSAGE:
        return decode_plan(f.sub, data)  # type: ignore[arg-type]
    if kind == K_QUANTITY:
        s = ""
        for n, w, v in iter_fields(data):
            if n == 1:
                s = _text(_need_len(w, v))
        return s
    if kind == K_INTORSTR:
        typ, ival, sval = 0, 0, ""
        for n, w, v in iter_fields(data):
            if n == 1 and w == VARINT:
                typ = v
            elif n == 2 and w == VARINT:
                ival = _signed(v, 32)  # type: ignore[arg-type]
            elif n == 3:
                sval = _text(_need_len(w, v))
        return sval if typ == 1 else ival
    if kind == K_RAW:
        raw = b""
        for n, w, v in iter_fields(data):
            if n == 1:
                raw = _need_len(w, v)
        if not raw:
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise errors.BadRequest(f"protobuf: field {f.key} holds no JSON") from None
    if kind == K_STRLIST:
        return [_text(_need_len(w, v)) for n, w, v in iter_fields(data) if n == 1]
    return f.dec(data)  # type: ignore[misc]


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise errors.BadRequest("protobuf: invalid UTF-8 in a string field") from None
