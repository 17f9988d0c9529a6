"""Protocol buffers wire format: a small message writer and a generic field reader.

Enough of the encoding (varint, length-delimited, fixed64) to emit messages whose
schema kapi knows by heart, and to read any message back field by field.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from kapi import _fast

# The varint codec and the field reader are the protobuf twin's (compiled when built).
encode_varint = _fast.protowire.encode_varint
iter_fields = _fast.protowire.iter_fields

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

# One decoded field: (field number, wire type, value). Varints come back as
# unsigned ints, fixed64/fixed32 as raw little-endian bytes, LEN as bytes.
Field = tuple[int, int, int | bytes]


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


def fields_by_number(data: bytes) -> dict[int, list[int | bytes]]:
    """The fields of one message grouped by number, repeated ones in order."""
    out: dict[int, list[int | bytes]] = {}
    for number, _wire_type, value in iter_fields(data):
        out.setdefault(number, []).append(value)
    return out
