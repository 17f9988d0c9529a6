"""List body assembly: both twins produce the joined body, in bounded chunks."""

from __future__ import annotations

import importlib
from types import ModuleType

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st



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
    try:
        c = importlib.import_module("kapi._fast.listenc_c")
    except ImportError:
        pytest.skip("compiled twin not built")
    assert list(c.encode_list_chunks(b"{", items, b"}", chunk)) == list(
        py.encode_list_chunks(b"{", items, b"}", chunk))
