"""Reflector and informer logic against a scripted fake client (time is trio's autojump clock)."""

from __future__ import annotations

import gc
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio

from kapi.client.api import CONFIGMAPS, ApiError, Resource, WatchEvent
from kapi.client.informer import Informer, SharedInformerFactory
from kapi.client.reflector import INITIAL_EVENTS_END

Obj = dict[str, Any]


def cm(name: str, rv: int) -> Obj:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)}}


def ev(kind: str, name: str, rv: int) -> WatchEvent:
    return WatchEvent(kind, cm(name, rv))


def end_bookmark(rv: int) -> WatchEvent:
    return WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": str(rv),
                                                "annotations": {INITIAL_EVENTS_END: "true"}}})


def gone() -> ApiError:
    return ApiError(410, {"reason": "Expired", "message": "too old resource version"})


class FakeClient:
    """Answers watch/list calls from a script, in order; an empty script blocks forever."""

    def __init__(self, *script: Any, answer: Any = None) -> None:
        self.script = list(script)
        self.answer = answer  # answers (verb, options) when the script is used up; None blocks
        self.calls: list[tuple[str, float, dict[str, Any]]] = []

    async def _next(self, verb: str, options: dict[str, Any]) -> Any:
        self.calls.append((verb, trio.current_time(), options))
        if not self.script:
            step = self.answer(verb, options) if self.answer else None
            if step is None:
                await trio.sleep_forever()
            return step
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step

    @asynccontextmanager
    async def watch(self, res: Resource, namespace: str | None = None, **options: Any) -> AsyncIterator[Any]:
        step = await self._next("watch", options)

        async def events() -> AsyncIterator[WatchEvent]:
            for item in step:
                if isinstance(item, BaseException):
                    raise item
                yield item
        yield events()

    async def list(self, res: Resource, namespace: str | None = None, **options: Any) -> Obj:
        return await self._next("list", options)  # type: ignore[no-any-return]

    async def list_pages(self, res: Resource, namespace: str | None = None, *, limit: int = 500,
                         **options: Any) -> AsyncIterator[Obj]:
        for page in await self._next("list_pages", dict(options, limit=limit)):
            yield page


def page(rv: int, *items: Obj, cont: str = "") -> Obj:
    md: Obj = {"resourceVersion": str(rv)}
    if cont:
        md["continue"] = cont
    return {"metadata": md, "items": list(items)}


class Recorder:
    """Handler calls as (kind, name, rv) tuples."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def add(self, o: Obj) -> None:
        self.calls.append(("add", o["metadata"]["name"], o["metadata"]["resourceVersion"]))

    def update(self, old: Obj, new: Obj) -> None:
        self.calls.append(("update", new["metadata"]["name"], new["metadata"]["resourceVersion"]))

    async def delete(self, o: Obj) -> None:  # a coroutine handler is awaited
        await trio.sleep(0)
        self.calls.append(("delete", o["metadata"]["name"], o["metadata"]["resourceVersion"]))


async def run_until(informer: Informer, client: FakeClient, calls: int, *, settle: float = 1.0) -> None:
    """Run the informer until the client has seen ``calls`` calls, then let handlers drain."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        while len(client.calls) < calls:
            await trio.sleep(0.01)
        await trio.sleep(settle)
        nursery.cancel_scope.cancel()


def informer_for(client: FakeClient, **kw: Any) -> tuple[Informer, Recorder]:
    inf = Informer(client, CONFIGMAPS, **kw)  # type: ignore[arg-type]
    rec = Recorder()
    inf.add_handler(rec.add, rec.update, rec.delete)
    return inf, rec


async def test_watch_list_syncs_at_the_end_bookmark_then_goes_live(autojump_clock: trio.abc.Clock) -> None:
    client = FakeClient([ev("ADDED", "a", 5), ev("ADDED", "b", 6), end_bookmark(8), ev("MODIFIED", "a", 9),
                         WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "12"}})])
    inf, rec = informer_for(client)
    await run_until(inf, client, 2)
    first = client.calls[0][2]
    assert first["send_initial_events"] is True and first["resource_version_match"] == "NotOlderThan"
    assert "resource_version" not in first
    # The stream ended: the next watch resumes from the bookmark's rv, without initial events.
    verb, _, second = client.calls[1]
    assert verb == "watch" and second["resource_version"] == "12" and "send_initial_events" not in second
    assert rec.calls == [("add", "a", "5"), ("add", "b", "6"), ("update", "a", "9")]
    assert inf.has_synced and inf.store.get("default/a") == cm("a", 9)
    assert inf.reflector.stats.watch_lists == 1


async def test_a_server_refusing_watch_list_gets_list_then_watch(autojump_clock: trio.abc.Clock) -> None:
    refused = ApiError(400, {"reason": "BadRequest", "message": "resourceVersionMatch is forbidden for watch"})
    client = FakeClient(refused, [page(20, cm("a", 3), cont="t"), page(20, cm("b", 4))], [ev("DELETED", "a", 21)])
    inf, rec = informer_for(client)
    await run_until(inf, client, 4)
    assert [c[0] for c in client.calls] == ["watch", "list_pages", "watch", "watch"]
    assert client.calls[1][2]["resource_version"] == "0" and client.calls[1][2]["limit"] == 500
    assert client.calls[2][2]["resource_version"] == "20"
    assert inf.reflector.stats.fell_back and not inf.reflector.watch_list
    assert rec.calls == [("add", "a", "3"), ("add", "b", "4"), ("delete", "a", "21")]
    assert inf.store.keys() == ["default/b"]


async def test_410_relists_and_reports_what_was_deleted_meanwhile(autojump_clock: trio.abc.Clock) -> None:
    client = FakeClient([ev("ADDED", "a", 5), ev("ADDED", "b", 6), end_bookmark(6)],
                        [gone()],
                        [ev("ADDED", "a", 30), end_bookmark(31)])
    inf, rec = informer_for(client)
    await run_until(inf, client, 4)
    verbs = [(c[0], "send_initial_events" in c[2]) for c in client.calls]
    assert verbs == [("watch", True), ("watch", False), ("watch", True), ("watch", False)]
    # The relist happens at once (no backoff for 410).
    assert client.calls[2][1] - client.calls[1][1] < 0.01
    assert inf.reflector.stats.gone == 1
    assert ("delete", "b", "6") in rec.calls and ("update", "a", "30") in rec.calls
    assert inf.store.keys() == ["default/a"]


async def test_list_mode_relists_consistently_after_410(autojump_clock: trio.abc.Clock) -> None:
    client = FakeClient([page(10, cm("a", 1))], [gone()], [page(50, cm("a", 40))])
    inf, rec = informer_for(client, watch_list=False, page_size=100)
    await run_until(inf, client, 4)
    assert [c[0] for c in client.calls] == ["list_pages", "watch", "list_pages", "watch"]
    assert client.calls[0][2]["resource_version"] == "0"
    assert client.calls[2][2]["resource_version"] == ""  # client-go: the latest state after Expired
    assert client.calls[3][2]["resource_version"] == "50"
    assert rec.calls == [("add", "a", "1"), ("update", "a", "40")]


async def test_429_waits_retry_after(autojump_clock: trio.abc.Clock) -> None:
    busy = ApiError(429, {"reason": "TooManyRequests", "message": "try later"}, retry_after_s=7)
    client = FakeClient(busy, page(3))
    inf, _ = informer_for(client, watch_list=False, page_size=0)
    await run_until(inf, client, 3)
    waited = client.calls[1][1] - client.calls[0][1]
    assert 7.0 <= waited <= 7.7 + 1e-9
    assert client.calls[1][0] == "list" and inf.reflector.stats.throttled == 1


async def test_connection_errors_back_off_exponentially_with_jitter(autojump_clock: trio.abc.Clock) -> None:
    down = [httpx.ConnectError("refused") for _ in range(4)]
    client = FakeClient(*down, [end_bookmark(1)])
    inf, _ = informer_for(client)
    await run_until(inf, client, 6)
    times = [c[1] for c in client.calls]
    gaps = [b - a for a, b in zip(times, times[1:])][:4]
    for gap, base in zip(gaps, [0.8, 1.6, 3.2, 6.4]):
        assert base <= gap <= 2 * base + 1e-9
    assert inf.reflector.stats.errors == 4 and inf.has_synced


async def test_a_herd_of_200_informers_spreads_its_retries(autojump_clock: trio.abc.Clock) -> None:
    """200 informers lose their server at the same moment: the backoff's jitter spreads their first retries
    over [0.8 s, 1.6 s) instead of bringing them back together (what the herd end-to-end test once
    measured on the wall clock, here on trio's; the global generator seeded, so the draw is fixed)."""
    state = random.getstate()
    random.seed(30)
    try:
        clients = [FakeClient(*[httpx.ConnectError("refused") for _ in range(3)]) for _ in range(200)]
        informers = [informer_for(c)[0] for c in clients]
        async with trio.open_nursery() as nursery:
            for inf in informers:
                nursery.start_soon(inf.run)
            await trio.sleep(60)  # three refusals each, then a watch that never answers
            nursery.cancel_scope.cancel()
    finally:
        random.setstate(state)
    assert all(len(c.calls) == 4 and inf.reflector.stats.errors == 3 for c, inf in zip(clients, informers))
    firsts = [c.calls[1][1] - c.calls[0][1] for c in clients]
    assert all(0.8 <= d <= 1.6 for d in firsts)
    busiest = max(sum(1 for d in firsts if lo <= d < lo + 0.1) for lo in firsts)
    assert busiest < 0.4 * len(firsts), f"{busiest} of {len(firsts)} first retries within 100 ms"
    assert len({round(c.calls[3][1], 6) for c in clients}) == len(clients)  # and no two meet later on


async def test_a_short_empty_watch_counts_as_a_failure(autojump_clock: trio.abc.Clock) -> None:
    client = FakeClient([end_bookmark(1)], [], [])
    inf, _ = informer_for(client)
    await run_until(inf, client, 4)
    gap = client.calls[2][1] - client.calls[1][1]
    assert gap >= 0.8  # not a hot loop against a server that closes watches at once


async def test_events_for_unknown_or_known_objects_stay_consistent(autojump_clock: trio.abc.Clock) -> None:
    client = FakeClient([end_bookmark(1), ev("DELETED", "ghost", 2), ev("MODIFIED", "new", 3),
                         ev("ADDED", "new", 4), ev("DELETED", "new", 5)])
    inf, rec = informer_for(client)
    await run_until(inf, client, 2)
    assert rec.calls == [("add", "new", "3"), ("update", "new", "4"), ("delete", "new", "5")]


async def test_late_handlers_get_the_current_state_and_resync_repeats_it(autojump_clock: trio.abc.Clock) -> None:
    client = FakeClient([ev("ADDED", "a", 1), end_bookmark(1)])
    inf = Informer(client, CONFIGMAPS)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inf.run)
        await inf.wait_for_sync()
        late = Recorder()
        reg = inf.add_handler(late.add, late.update, late.delete, resync_s=10)
        await reg.wait_for_sync()
        assert late.calls == [("add", "a", "1")]
        await trio.sleep(25)
        assert late.calls[1:] == [("update", "a", "1"), ("update", "a", "1")]
        nursery.cancel_scope.cancel()


async def test_factory_shares_informers_and_starts_late_ones(autojump_clock: trio.abc.Clock) -> None:
    def answer(verb: str, options: dict[str, Any]) -> Any:
        return [end_bookmark(1)] if options.get("send_initial_events") else None  # live watches block

    client = FakeClient(answer=answer)
    factory = SharedInformerFactory(client)  # type: ignore[arg-type]
    first = factory.informer(CONFIGMAPS)
    assert factory.informer(CONFIGMAPS) is first
    assert factory.informer(CONFIGMAPS, label_selector="a=b") is not first
    async with trio.open_nursery() as nursery:
        factory.start(nursery)
        late = factory.informer(CONFIGMAPS, namespace="other")
        await factory.wait_for_sync()
        assert late.has_synced and all(inf.has_synced for inf in factory.informers)
        nursery.cancel_scope.cancel()
    assert len(factory.informers) == 3


@pytest.mark.parametrize("selector", [None, "tier=gold"])
async def test_selectors_go_to_every_request(autojump_clock: trio.abc.Clock, selector: str | None) -> None:
    client = FakeClient([end_bookmark(1)])
    inf = Informer(client, CONFIGMAPS, label_selector=selector, field_selector="metadata.name=x")  # type: ignore[arg-type]
    await run_until(inf, client, 2)
    for _, _, options in client.calls:
        assert options["label_selector"] == selector and options["field_selector"] == "metadata.name=x"


async def test_the_collector_is_paused_during_a_sync_and_only_then(autojump_clock: trio.abc.Clock) -> None:
    seen: list[bool] = []

    class Watching(FakeClient):
        @asynccontextmanager
        async def watch(self, res: Resource, namespace: str | None = None, **options: Any) -> AsyncIterator[Any]:
            async with super().watch(res, namespace, **options) as events:
                async def recorded() -> AsyncIterator[WatchEvent]:
                    async for ev in events:
                        seen.append(gc.isenabled())
                        yield ev
                yield recorded()

    assert gc.isenabled()
    client = Watching([ev("ADDED", "a", 1), httpx.ReadError("reset")],
                      [ev("ADDED", "a", 1), ev("ADDED", "b", 2), end_bookmark(2), ev("MODIFIED", "a", 3)])
    inf, _ = informer_for(client)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inf.run)
        await trio.sleep(0.5)
        # The first sync broke off; while the reflector waits its backoff, the collector runs again.
        assert len(client.calls) == 1 and gc.isenabled()
        await inf.wait_for_sync()
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    # Off while initial events came (both syncs), on again for the live one.
    assert seen == [False, False, False, False, True]
    assert gc.isenabled()


def test_factory_consumers_add_their_indexes_to_the_shared_store() -> None:
    factory = SharedInformerFactory(FakeClient())  # type: ignore[arg-type]
    first = factory.informer(CONFIGMAPS, indexers={"by-a": lambda o: ["a"]})
    second = factory.informer(CONFIGMAPS, indexers={"by-a": lambda o: ["other"], "by-b": lambda o: ["b"]})
    assert first is second
    first.store.upsert(cm("x", 1))
    assert first.store.index_keys("by-a", "a") == ["default/x"]  # the first definition stays
    assert first.store.index_keys("by-b", "b") == ["default/x"]
