"""A LIST whose selector leaves pages short reads twice as many keys each time, up to kube's maxLimit
(etcd3 store.go GetList), on every backend (kapi.storage._paging serves them all)."""

from __future__ import annotations

from typing import Any

import pytest

from kapi.object.listopts import ListOptions
from kapi.storage import _paging
from kapi.storage.base import KeyValue, ListResult, Predicate, Storage

PREFIX = "/registry/configmaps/default/"


async def _fill(storage: Storage, count: int) -> None:
    for i in range(count):
        await storage.create(f"{PREFIX}cm-{i:03d}", b"%d" % i)


def _range_reads(storage: Storage) -> list[int | None]:
    """The ``limit`` of every range read ``storage`` serves from now on."""
    limits: list[int | None] = []
    list_ = storage.list

    async def counted(prefix: str, **kwargs: Any) -> ListResult[KeyValue]:
        limits.append(kwargs.get("limit"))
        return await list_(prefix, **kwargs)

    storage.list = counted  # type: ignore[method-assign]
    return limits


def _only(*values: int) -> Predicate[bytes]:
    wanted = {b"%d" % v for v in values}
    return Predicate(lambda kv: kv.value if kv.value in wanted else None)


def test_the_cap_is_kubes_max_limit() -> None:
    assert _paging.PAGE_CAP == 10_000


async def test_short_pages_double_the_next_read(storage: Storage) -> None:
    await _fill(storage, 40)
    reads = _range_reads(storage)
    result = await storage.get_list(PREFIX, ListOptions(limit=2), _only(39))
    assert list(result.items) == [b"39"] and not result.continue_token
    assert reads == [2, 4, 8, 16, 32]


async def test_full_pages_keep_the_limit(storage: Storage) -> None:
    await _fill(storage, 40)
    reads = _range_reads(storage)
    page = await storage.get_list(PREFIX, ListOptions(limit=2), _only(*range(40)))
    assert list(page.items) == [b"0", b"1"] and page.continue_token
    await storage.get_list(PREFIX, ListOptions(limit=2, continue_token=page.continue_token), _only(*range(40)))
    assert reads == [2, 2]


async def test_doubling_stops_at_the_cap_and_a_larger_limit_stays(storage: Storage,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_paging, "PAGE_CAP", 8)
    await _fill(storage, 40)
    reads = _range_reads(storage)
    result = await storage.get_list(PREFIX, ListOptions(limit=2), _only(0, 39))
    assert list(result.items) == [b"0", b"39"]
    assert reads == [2, 4, 8, 8, 8, 8, 8]
    reads.clear()
    await storage.get_list(PREFIX, ListOptions(limit=10), _only(39))
    assert reads == [10, 10, 10, 10]
