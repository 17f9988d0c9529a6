"""Wire primitives of both twins: known bytes, errors, and twin-against-twin parity."""

from __future__ import annotations

import struct
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kapi import errors
from kapi.encoding.protowire import MessageWriter


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (-1, b"\xff" * 9 + b"\x01"),
        ((1 << 64) - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_varint_known_bytes(wire: ModuleType, value: int, encoded: bytes) -> None:
    assert wire.encode_varint(value) == encoded
    assert wire.decode_varint(b"\x00" + encoded, 1) == (value & ((1 << 64) - 1), len(encoded) + 1)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff" * 11])
def test_bad_varint_is_bad_request(wire: ModuleType, data: bytes) -> None:
    with pytest.raises(errors.BadRequest):
        wire.decode_varint(data)


def test_encode_message_matches_the_existing_writer(wire: ModuleType) -> None:
    expected = (
        MessageWriter().varint(1, 150).string(2, "héllo").double(3, 1.5).raw(4, b"\x00\x01").varint(5, -2).finish()
    )
    got = wire.encode_message([(1, 0, 150), (2, 2, "héllo"), (3, 1, 1.5), (4, 2, b"\x00\x01"), (5, 0, -2)])
    assert got == expected
    assert list(wire.iter_fields(got)) == [
        (1, 0, 150),
        (2, 2, "héllo".encode()),
        (3, 1, struct.pack("<d", 1.5)),
        (4, 2, b"\x00\x01"),
        (5, 0, (1 << 64) - 2),
    ]


@pytest.mark.parametrize(
    "data",
    [b"\x0a\x05abc", b"\x08", b"\x00\x01", b"\x0b", b"\x09\x00\x00", b"\x0d\x00"],
    ids=["short-len", "short-varint", "field-0", "group", "short-fixed64", "short-fixed32"],
)
def test_iter_fields_rejects_garbage(wire: ModuleType, data: bytes) -> None:
    with pytest.raises(errors.BadRequest):
        list(wire.iter_fields(data))


def test_watch_frame_layout(wire: ModuleType) -> None:
    frame = wire.frame_watch_event("ADDED", b"k8s\x00obj")
    event = b"\x0a\x05ADDED" + b"\x12\x09" + b"\x0a\x07k8s\x00obj"
    assert frame == len(event).to_bytes(4, "big") + event


def test_watch_frame_with_a_long_object(wire: ModuleType) -> None:
    obj = b"x" * 70000
    frame = wire.frame_watch_event("MODIFIED", obj)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    fields = list(wire.iter_fields(frame[4:]))
    assert fields[0] == (1, 2, b"MODIFIED")
    assert list(wire.iter_fields(fields[1][2])) == [(1, 2, obj)]


def test_list_chunks_join_to_the_list_message(wire: ModuleType) -> None:
    meta = b"\x12\x031000"
    items = [bytes([i]) * (i * 50) for i in range(40)]
    chunks = list(wire.encode_list(meta, items, b"HEAD", b"TAIL", 500))
    assert len(chunks) > 5
    body = b"".join(chunks)
    assert body.startswith(b"HEAD") and body.endswith(b"TAIL")
    inner = body[4:-4]
    assert len(inner) == wire.encoded_list_size(meta, items)
    fields = list(wire.iter_fields(inner))
    assert fields[0] == (1, 2, meta)
    assert [v for _n, _w, v in fields[1:]] == items


def test_empty_list(wire: ModuleType) -> None:
    body = b"".join(wire.encode_list(b"", [], b"", b""))
    assert body == b"\x0a\x00"
    assert wire.encoded_list_size(b"", []) == 2


# ------------------------------------------------------------------ parity


_field = st.one_of(
    st.tuples(st.integers(1, 1 << 20), st.just(0), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.tuples(st.integers(1, 1 << 20), st.just(2), st.binary(max_size=300)),
    st.tuples(st.integers(1, 1 << 20), st.just(2), st.text(max_size=40)),
    st.tuples(st.integers(1, 1 << 20), st.just(1), st.floats(allow_nan=False)),
    st.tuples(st.integers(1, 1 << 20), st.just(5), st.binary(min_size=4, max_size=4)),
)


@given(st.lists(_field, max_size=20))
def test_twins_agree_on_messages(twins: tuple[ModuleType, ModuleType], fields: list[tuple[int, int, object]]) -> None:
    py, c = twins
    data = py.encode_message(fields)
    assert c.encode_message(fields) == data
    assert list(c.iter_fields(data)) == list(py.iter_fields(data))


@given(st.integers(-(1 << 63), (1 << 64) - 1))
def test_twins_agree_on_varints(twins: tuple[ModuleType, ModuleType], value: int) -> None:
    py, c = twins
    assert c.encode_varint(value) == py.encode_varint(value)
    assert c.decode_varint(py.encode_varint(value)) == py.decode_varint(py.encode_varint(value))


def _outcome(fn: object, data: bytes) -> object:
    try:
        return list(fn(data))  # type: ignore[operator]
    except errors.BadRequest:
        return "BadRequest"


@given(st.binary(max_size=64))
def test_twins_agree_on_garbage(twins: tuple[ModuleType, ModuleType], data: bytes) -> None:
    py, c = twins
    assert _outcome(c.iter_fields, data) == _outcome(py.iter_fields, data)


@given(st.text(max_size=20), st.binary(max_size=400))
def test_twins_agree_on_watch_frames(twins: tuple[ModuleType, ModuleType], event_type: str, obj: bytes) -> None:
    py, c = twins
    assert c.frame_watch_event(event_type, obj) == py.frame_watch_event(event_type, obj)


@given(st.binary(max_size=50), st.lists(st.binary(max_size=300), max_size=30), st.integers(1, 2000))
def test_twins_agree_on_lists(twins: tuple[ModuleType, ModuleType], meta: bytes, items: list[bytes],
                              chunk: int) -> None:
    py, c = twins
    expected = b"".join(py.encode_list(meta, items, b"h", b"t", chunk))
    assert b"".join(c.encode_list(meta, items, b"h", b"t", chunk)) == expected
    assert c.encoded_list_size(meta, items) == py.encoded_list_size(meta, items) == len(expected) - 2
