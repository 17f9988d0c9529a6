"""Protocol buffers wire format: a small message writer and a generic field reader.

Enough of the encoding (varint, length-delimited, fixed64) to emit messages whose
schema kapi knows by heart, and to read any message back field by field.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from kapi import errors

__all__ = [
    "FIXED32",
    "FIXED64",
    "LEN",
    "VARINT",
    "Field",
    "MessageWriter",
    "encode_varint",
    "fields_by_number",
    "iter_fields",
]

VARINT = 0
FIXED64 = 1
LEN = 2
FIXED32 = 5

_MASK64 = (1 << 64) - 1

# One decoded field: (field number, wire type, value). Varints come back as
# unsigned ints, fixed64/fixed32 as raw little-endian bytes, LEN as bytes.
Field = tuple[int, int, int | bytes]


def encode_varint(value: int) -> bytes:
    """Base-128 varint; negative numbers take ten bytes, as int64 does in protobuf."""
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return encode_varint((number << 3) | wire_type)


class MessageWriter:
    """Appends fields to one message; scalars at their proto3 default are skipped."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def finish(self) -> bytes:
        """The encoded message."""
        return bytes(self._buf)

    def varint(self, number: int, value: int, *, always: bool = False) -> MessageWriter:
        """An int32/int64/uint64/enum field."""
        if value or always:
            self._buf += _key(number, VARINT)
            self._buf += encode_varint(value)
        return self

    def boolean(self, number: int, value: bool, *, always: bool = False) -> MessageWriter:
        """A bool field; ``always`` writes ``false`` too, as a set oneof member needs."""
        return self.varint(number, 1 if value else 0, always=always)

    def double(self, number: int, value: float, *, always: bool = False) -> MessageWriter:
        """A double field (fixed64, little-endian)."""
        if value or always:
            self._buf += _key(number, FIXED64)
            self._buf += struct.pack("<d", value)
        return self

    def raw(self, number: int, value: bytes, *, always: bool = False) -> MessageWriter:
        """A length-delimited field holding raw bytes."""
        if value or always:
            self._buf += _key(number, LEN)
            self._buf += encode_varint(len(value))
            self._buf += value
        return self

    def string(self, number: int, value: str, *, always: bool = False) -> MessageWriter:
        """A string field (UTF-8)."""
        return self.raw(number, value.encode(), always=always)

    def message(self, number: int, encoded: bytes | None) -> MessageWriter:
        """An embedded message; an empty one is still written because presence matters."""
        if encoded is not None:
            self.raw(number, encoded, always=True)
        return self

    def strings(self, number: int, values: Iterable[str]) -> MessageWriter:
        """A repeated string field; every element is written, empty ones included."""
        for value in values:
            self.string(number, value, always=True)
        return self

    def messages(self, number: int, encoded: Iterable[bytes]) -> MessageWriter:
        """A repeated message field."""
        for item in encoded:
            self.raw(number, item, always=True)
        return self


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise errors.BadRequest("protobuf: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise errors.BadRequest("protobuf: varint longer than ten bytes")


def iter_fields(data: bytes) -> Iterator[Field]:
    """Every top-level field of one encoded message, in wire order.

    Raises:
        BadRequest: the bytes are not a well-formed message.
    """
    pos = 0
    end = len(data)
    while pos < end:
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise errors.BadRequest("protobuf: field number 0")
        value: int | bytes
        if wire_type == VARINT:
            value, pos = _read_varint(data, pos)
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if pos + size > end:
                raise errors.BadRequest("protobuf: truncated fixed-width field")
            value, pos = data[pos : pos + size], pos + size
        elif wire_type == LEN:
            size, pos = _read_varint(data, pos)
            if pos + size > end:
                raise errors.BadRequest("protobuf: truncated length-delimited field")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise errors.BadRequest(f"protobuf: unsupported wire type {wire_type}")
        yield number, wire_type, value


def fields_by_number(data: bytes) -> dict[int, list[int | bytes]]:
    """The fields of one message grouped by number, repeated ones in order."""
    out: dict[int, list[int | bytes]] = {}
    for number, _wire_type, value in iter_fields(data):
        out.setdefault(number, []).append(value)
    return out
