"""List body assembly: both twins produce the joined body, in bounded chunks."""

from __future__ import annotations

import importlib
from types import ModuleType

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._needs import compiled_twin


def test_joins_items(listenc: ModuleType) -> None:
    items = [orjson.dumps({"i": i}) for i in range(5)]
    body = b"".join(listenc.encode_list_chunks(b'{"items":[', items, b"]}", 1 << 20))
    assert orjson.loads(body) == {"items": [{"i": i} for i in range(5)]}


def test_empty_list(listenc: ModuleType) -> None:
    assert b"".join(listenc.encode_list_chunks(b"[", [], b"]", 10)) == b"[]"


def test_chunks_stay_near_the_chunk_size(listenc: ModuleType) -> None:
    items = [b"x" * 100] * 1000
    chunks = list(listenc.encode_list_chunks(b"[", items, b"]", 1000))
    assert len(chunks) > 50
    assert max(len(c) for c in chunks) <= 1000 + 101
    assert b"".join(chunks) == b"[" + b",".join(items) + b"]"


@given(st.lists(st.binary(max_size=40), max_size=60), st.integers(min_value=1, max_value=200))
def test_twins_agree(items: list[bytes], chunk: int) -> None:
    py = importlib.import_module("kapi._fast.listenc_py")
    c = compiled_twin("listenc")
    assert list(c.encode_list_chunks(b"{", items, b"}", chunk)) == list(
        py.encode_list_chunks(b"{", items, b"}", chunk))


def test_list_body_length_matches_its_chunks(listenc: ModuleType) -> None:
    items = [orjson.dumps({"n": "x" * i}) for i in range(300)]
    length, chunks = listenc.list_body(b'{"items":[', items, b"]}", 500)
    got = list(chunks)
    assert len(got) > 10
    assert length == sum(len(c) for c in got)
    assert orjson.loads(b"".join(got)) == {"items": [{"n": "x" * i} for i in range(300)]}


def test_list_body_empty(listenc: ModuleType) -> None:
    length, chunks = listenc.list_body(b"[", [], b"]", 10)
    assert (length, b"".join(chunks)) == (3, b"[]\n")


def test_list_body_ends_with_a_newline(listenc: ModuleType) -> None:
    """Issue 10: a JSON list body ends with a newline, as Go's json.Encoder writes kube's bodies."""
    items = [orjson.dumps({"n": "x" * i}) for i in range(50)]
    length, chunks = listenc.list_body(b'{"items":[', items, b"]}", 100)
    body = b"".join(chunks)
    assert body == b'{"items":[' + b",".join(items) + b"]}\n" and length == len(body)
    assert b"".join(listenc.encode_list_chunks(b"[", items, b"]", 100)).endswith(b"]")


def test_list_body_refuses_non_bytes(listenc: ModuleType) -> None:
    with pytest.raises(TypeError):
        length, chunks = listenc.list_body(b"[", [b"1", "2"], b"]", 10)
        list(chunks)


def test_watch_line_puts_kind_back(listenc: ModuleType) -> None:
    line = listenc.watch_line(b"MODIFIED", b'{"kind":"Pod","apiVersion":"v1",', b'{"metadata":{"name":"a"}}')
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == {"type": "MODIFIED",
                                  "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a"}}}


def test_watch_line_refuses_a_non_object(listenc: ModuleType) -> None:
    with pytest.raises(ValueError):
        listenc.watch_line(b"ADDED", b'{"kind":"Pod",', b"[1]")
    with pytest.raises(ValueError):
        listenc.watch_line(b"ADDED", b'{"kind":"Pod",', b"")


@pytest.mark.parametrize("end", [False, True])
@pytest.mark.parametrize("rv", [0, 7, 1234567890123])
def test_bookmark_line(listenc: ModuleType, rv: int, end: bool) -> None:
    event = orjson.loads(listenc.bookmark_line(b"Lease", b"coordination.k8s.io/v1", rv, end))
    md: dict[str, object] = {"resourceVersion": str(rv)}
    if end:
        md["annotations"] = {"k8s.io/initial-events-end": "true"}
    assert event == {"type": "BOOKMARK",
                     "object": {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": md}}


def _twins() -> tuple[ModuleType, ModuleType]:
    py = importlib.import_module("kapi._fast.listenc_py")
    c = compiled_twin("listenc")
    return c, py


@given(st.lists(st.binary(max_size=40), max_size=60), st.integers(min_value=1, max_value=200))
def test_twins_agree_on_list_body(items: list[bytes], chunk: int) -> None:
    c, py = _twins()
    c_len, c_chunks = c.list_body(b"{", items, b"}", chunk)
    py_len, py_chunks = py.list_body(b"{", items, b"}", chunk)
    assert (c_len, list(c_chunks)) == (py_len, list(py_chunks))


@given(st.sampled_from([b"ADDED", b"MODIFIED", b"DELETED"]), st.binary(max_size=30),
       st.binary(max_size=60), st.integers(min_value=0, max_value=2**62), st.booleans())
def test_twins_agree_on_event_lines(kind: bytes, prefix: bytes, rest: bytes, rv: int, end: bool) -> None:
    c, py = _twins()
    assert c.watch_line(kind, prefix, b"{" + rest) == py.watch_line(kind, prefix, b"{" + rest)
    assert c.bookmark_line(kind, prefix, rv, end) == py.bookmark_line(kind, prefix, rv, end)
