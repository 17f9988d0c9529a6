"""WATCH from the watch cache: start rv, initial events, transitions, triggers, slow watchers, bookmarks."""

from __future__ import annotations

import math
from typing import Any, AsyncIterator

import pytest
import trio

from kapi import errors
from kapi._fast import EventRing
from kapi.cacher.cache import WatchStart
from kapi.cacher.store import CacheEvent
from kapi.cacher.watcher import Bookmark, Filter
from kapi.encoding.watchlines import WatchLines
from kapi.object.schema import load_builtin
from kapi.object.listopts import ListOptions
from kapi.object.selectors import parse_field_selector, parse_label_selector
from kapi.storage.memory import MemoryStorage

from .conftest import Env, MakeEnv, line_objects

LABELS = {"group": "", "resource": "pods"}
Event = dict[str, Any]


class Stream:
    """Reads a watch_lines stream one event at a time."""

    def __init__(self, lines: AsyncIterator[bytes]) -> None:
        self.lines = lines
        self.pending: list[Event] = []

    async def next(self) -> Event:
        with trio.fail_after(30):  # a guard against hanging, not a timing assertion
            while not self.pending:
                self.pending += line_objects(await self.lines.__anext__())
        return self.pending.pop(0)

    async def take(self, n: int) -> list[Event]:
        return [await self.next() for _ in range(n)]

    async def ended(self) -> bool:
        """True when the stream is over (every queued event must have been read)."""
        if self.pending:
            return False
        try:
            with trio.fail_after(30):
                self.pending += line_objects(await self.lines.__anext__())
        except StopAsyncIteration:
            return True
        return False


class Opener:
    """Opens watch streams through Registry.watch_lines and closes them when the test ends."""

    def __init__(self) -> None:
        self.streams: list[Stream] = []

    async def __call__(self, env: Env, namespace: str = "", **opts: Any) -> Stream:
        lines = await env.registry.watch_lines(env.res, namespace, ListOptions(watch=True, **opts),
                                               trio.current_time() + 1800)
        stream = Stream(lines)
        self.streams.append(stream)
        return stream

    async def close(self) -> None:
        for stream in self.streams:
            await stream.lines.aclose()  # type: ignore[attr-defined]


@pytest.fixture
async def open_stream() -> AsyncIterator[Opener]:
    opener = Opener()
    try:
        yield opener
    finally:
        await opener.close()


def summary(events: list[Event]) -> list[tuple[str, str, int]]:
    """(type, name, rv) of each event."""
    out = []
    for ev in events:
        md = ev["object"]["metadata"]
        out.append((ev["type"], md.get("name", ""), int(md["resourceVersion"])))
    return out


def select(env: Env, namespace: str = "", label: str = "", field: str = "") -> Filter:
    fields = env.registry.selectable_fields(env.res)
    return Filter(env.registry.prefix(env.res, namespace),
                  parse_label_selector(label) if label else None,
                  parse_field_selector(field, fields, labels=env.res.strategy.field_labels) if field else None)


_POD_LINES: list[WatchLines] = []  # made once: loading the schema is slow


def pod_lines() -> WatchLines:
    if not _POD_LINES:
        _POD_LINES.append(WatchLines("Pod", "v1", load_builtin()))
    return _POD_LINES[0]


def queued(start: WatchStart) -> list[Event]:
    """Events already in a watcher's channel (as the watch would send them), without waiting."""
    out: list[Event] = []
    while True:
        try:
            item = start.watcher.receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return out
        if isinstance(item, Bookmark):
            out += line_objects(pod_lines().bookmark(item.revision, item.initial_events_end))
        else:
            out += line_objects(pod_lines().event(*item))


def closed(start: WatchStart) -> bool:
    """Whether the channel has ended (after draining it)."""
    queued(start)
    try:
        start.watcher.receive.receive_nowait()
    except trio.EndOfChannel:
        return True
    except trio.WouldBlock:
        return False
    return False


# -------------------------------------------------------------- start rv


@pytest.mark.parametrize("rv", ["0", ""])
async def test_watch_rv0_sends_state_then_changes(env: Env, rv: str, open_stream: Opener) -> None:
    r1 = await env.put("a", "p1")
    r2 = await env.put("a", "p2")
    r3 = await env.put("b", "p3")
    s = await open_stream(env, resource_version=rv)
    initial = await s.take(3)
    assert summary(initial) == [("ADDED", "p1", r1), ("ADDED", "p2", r2), ("ADDED", "p3", r3)]
    assert {(e["object"]["kind"], e["object"]["apiVersion"]) for e in initial} == {("Pod", "v1")}
    r4 = await env.put("a", "p4")
    r5 = await env.put("a", "p1", labels={"x": "y"})
    r6 = await env.delete("a", "p2")
    live = await s.take(3)
    assert summary(live) == [("ADDED", "p4", r4), ("MODIFIED", "p1", r5), ("DELETED", "p2", r6)]
    assert live[1]["object"]["metadata"]["labels"] == {"x": "y"}
    assert env.sample("apiserver_registered_watchers", group="", version="", kind="Pod") == 1
    await s.lines.aclose()  # type: ignore[attr-defined]
    assert env.cacher._watchers == set()
    assert env.sample("apiserver_registered_watchers", group="", version="", kind="Pod") == 0


async def test_watch_from_rv_n_replays_only_later_events(env: Env, open_stream: Opener) -> None:
    await env.put("a", "p1")
    r2 = await env.put("a", "p2")
    r3 = await env.put("a", "p1", labels={"v": "2"})
    r4 = await env.delete("a", "p2")
    r5 = await env.put("a", "p3")
    await env.synced()
    s = await open_stream(env, resource_version=str(r2))
    assert summary(await s.take(3)) == [("MODIFIED", "p1", r3), ("DELETED", "p2", r4), ("ADDED", "p3", r5)]
    r6 = await env.put("a", "p4")
    assert summary(await s.take(1)) == [("ADDED", "p4", r6)]


async def test_watch_from_current_rv_gets_only_new_events(env: Env, open_stream: Opener) -> None:
    await env.put("a", "p1")
    now = await env.synced()
    s = await open_stream(env, resource_version=str(now))
    r = await env.put("a", "p2")
    assert summary(await s.take(1)) == [("ADDED", "p2", r)]


async def test_watch_from_future_rv_waits_without_error(env: Env, open_stream: Opener) -> None:
    now = await env.synced()
    s = await open_stream(env, resource_version=str(now + 2))
    await env.put("a", "p1")  # now + 1
    await env.put("a", "p2")  # now + 2: not after the asked rv either
    r = await env.put("a", "p3")
    assert summary(await s.take(1)) == [("ADDED", "p3", r)]


async def test_watch_namespace_sees_only_its_pods(env: Env, open_stream: Opener) -> None:
    s = await open_stream(env, "b", resource_version="0")
    await env.put("a", "p1")
    r = await env.put("b", "p2")
    assert summary(await s.take(1)) == [("ADDED", "p2", r)]


async def test_send_initial_events_false_rv_unset_starts_now(env: Env, open_stream: Opener) -> None:
    await env.put("a", "p1")
    s = await open_stream(env, send_initial_events=False)
    r = await env.put("a", "p2")
    assert summary(await s.take(1)) == [("ADDED", "p2", r)]


# ------------------------------------------------------------ too old rv


async def test_watch_from_too_old_rv_is_gone(make_env: MakeEnv, nursery: trio.Nursery,
                                             open_stream: Opener) -> None:
    env = await make_env(start=False)
    revs = [await env.put("a", f"p{i}") for i in range(4)]
    old = str(revs[1])
    await nursery.start(env.cacher.run)  # relists at revs[3]
    with pytest.raises(errors.Gone) as info:
        await env.cacher.open_watch(ListOptions(watch=True, resource_version=old), select(env),
                               trio.current_time() + 60)
    assert info.value.code == 410
    assert info.value.message.startswith(f"too old resource version: {old} (")
    assert env.cacher._watchers == set()
    s = await open_stream(env, resource_version=old)
    events = await s.take(1)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {old} (")
    assert await s.ended()
    assert env.cacher._watchers == set()
    # The relist rv itself is fine.
    s = await open_stream(env, resource_version=str(revs[3]))
    r = await env.put("a", "p9")
    assert summary(await s.take(1)) == [("ADDED", "p9", r)]


# ---------------------------------------------------- sendInitialEvents


async def test_watch_list_sends_state_then_end_bookmark(env: Env, open_stream: Opener) -> None:
    r1 = await env.put("a", "p1")
    r2 = await env.put("a", "p2")  # not awaited by the cache: the watch-list start is a consistent read
    s = await open_stream(env, send_initial_events=True, resource_version_match="NotOlderThan",
                          allow_watch_bookmarks=True)
    events = await s.take(3)
    assert summary(events[:2]) == [("ADDED", "p1", r1), ("ADDED", "p2", r2)]
    bookmark = events[2]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "Pod" and bookmark["object"]["apiVersion"] == "v1"
    assert bookmark["object"]["metadata"] == {"resourceVersion": str(r2),
                                              "annotations": {"k8s.io/initial-events-end": "true"}}
    r3 = await env.put("a", "p3")
    assert summary(await s.take(1)) == [("ADDED", "p3", r3)]


async def test_watch_list_with_selector_and_rv(env: Env, open_stream: Opener) -> None:
    await env.put("a", "p1", labels={"app": "web"})
    await env.put("a", "p2", labels={"app": "db"})
    r3 = await env.put("a", "p3", labels={"app": "web"})
    await env.synced()  # rv=N only waits for N: let the cache see everything first
    s = await open_stream(env, send_initial_events=True, resource_version="1",
                          resource_version_match="NotOlderThan", allow_watch_bookmarks=True,
                          label_selector="app=web")
    events = await s.take(3)
    assert [e["object"]["metadata"].get("name") for e in events[:2]] == ["p1", "p3"]
    assert events[2]["type"] == "BOOKMARK"
    assert events[2]["object"]["metadata"]["resourceVersion"] == str(r3)


async def test_watch_list_without_bookmarks_has_no_end_marker(env: Env, open_stream: Opener) -> None:
    await env.put("a", "p1")
    s = await open_stream(env, send_initial_events=True, resource_version_match="NotOlderThan")
    assert [e["type"] for e in await s.take(1)] == ["ADDED"]
    r = await env.put("a", "p2")
    assert summary(await s.take(1)) == [("ADDED", "p2", r)]


async def test_watch_list_from_future_rv_ends_with_504(env: Env, autojump_clock: trio.abc.Clock,
                                                       open_stream: Opener) -> None:
    now = await env.synced()
    s = await open_stream(env, send_initial_events=True, resource_version=str(now + 10),
                          resource_version_match="NotOlderThan", allow_watch_bookmarks=True)
    events = await s.take(1)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 504 and status["reason"] == "Timeout"
    assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}]
    assert await s.ended()


# --------------------------------------------------- selector transitions


async def test_label_selector_transitions(env: Env, open_stream: Opener) -> None:
    await env.put("a", "seed")  # so that the start rv is not "0" (which would mean "any")
    before = await env.synced()
    s = await open_stream(env, resource_version=str(before), label_selector="app=web")
    await env.put("a", "x", labels={"app": "db"})  # never matched: nothing
    r2 = await env.put("a", "x", labels={"app": "web"})  # starts matching: ADDED
    r3 = await env.put("a", "x", labels={"app": "web", "tier": "1"})  # still matching: MODIFIED
    r4 = await env.put("a", "x", labels={"app": "db"})  # stops matching: DELETED, previous state
    await env.delete("a", "x")  # deleting a non-matching object: nothing
    r6 = await env.put("a", "y", labels={"app": "web"})
    r7 = await env.delete("a", "y")  # a real delete: DELETED at the deletion rv
    r8 = await env.put("a", "marker", labels={"app": "web"})
    live = await s.take(6)
    want = [("ADDED", "x", r2), ("MODIFIED", "x", r3), ("DELETED", "x", r4), ("ADDED", "y", r6),
            ("DELETED", "y", r7), ("ADDED", "marker", r8)]
    assert summary(live) == want
    assert live[2]["object"]["metadata"]["labels"] == {"app": "web", "tier": "1"}  # the previous state
    assert live[4]["object"]["metadata"]["labels"] == {"app": "web"}
    # Replayed from the window, the same events come out the same way.
    replay = await open_stream(env, resource_version=str(before), label_selector="app=web")
    replayed = await replay.take(6)
    assert replayed == live


async def test_field_selector_transitions_on_node_moves(env: Env, open_stream: Opener) -> None:
    await env.put("b", "seed")
    s = await open_stream(env, resource_version=str(await env.synced()), field_selector="spec.nodeName=node-1")
    r1 = await env.put("a", "x", node="node-1")
    r2 = await env.put("a", "x", node="node-2")
    await env.put("a", "x", node="node-3")
    r4 = await env.put("a", "x", node="node-1")
    r5 = await env.delete("a", "x")
    events = await s.take(4)
    assert summary(events) == [("ADDED", "x", r1), ("DELETED", "x", r2), ("ADDED", "x", r4), ("DELETED", "x", r5)]
    assert events[1]["object"]["spec"]["nodeName"] == "node-1"


# ----------------------------------------------------------- trigger index


async def test_node_scoped_watcher_is_not_offered_other_nodes_events(env: Env) -> None:
    deadline = trio.current_time() + 60
    on_node1 = await env.cacher.open_watch(ListOptions(watch=True, resource_version="0", send_initial_events=False),
                                      select(env, field="spec.nodeName=node-1"), deadline)
    everyone = await env.cacher.open_watch(ListOptions(watch=True, resource_version="0", send_initial_events=False),
                                      select(env), deadline)
    unindexed = await env.cacher.open_watch(ListOptions(watch=True, resource_version="0", send_initial_events=False),
                                       select(env, field="status.phase=Pending"), deadline)
    assert on_node1.watcher.trigger == ("spec.nodeName", "node-1")
    assert everyone.watcher.trigger is None and unindexed.watcher.trigger is None
    start = env.cacher.rv
    await env.put("a", "n2", node="node-2")
    await env.put("a", "n1", node="node-1")
    await env.put("a", "n1", node="node-2")  # moves away: node-1's watcher must hear of it
    await env.put("a", "n2", node="node-2", labels={"v": "2"})
    await env.delete("a", "n1")
    await env.synced()
    offered: list[set[int]] = []
    ids = {id(on_node1.watcher): 1, id(everyone.watcher): 2, id(unindexed.watcher): 3}
    for ev in env.cacher.ring.events_after(start):
        offered.append({ids[id(w)] for w in env.cacher._interested(ev)})
    assert offered == [{2, 3}, {1, 2, 3}, {1, 2, 3}, {2, 3}, {2, 3}]
    assert [e["type"] for e in queued(on_node1)] == ["ADDED", "DELETED"]
    assert len(queued(everyone)) == 5


async def test_node_scoped_watcher_with_namespace(env: Env, open_stream: Opener) -> None:
    s = await open_stream(env, "a", resource_version="0", field_selector="spec.nodeName=node-1")
    await env.put("b", "p1", node="node-1")
    await env.put("a", "p2", node="node-2")
    r = await env.put("a", "p3", node="node-1")
    assert summary(await s.take(1)) == [("ADDED", "p3", r)]


# ----------------------------------------------------------- slow watchers


async def test_slow_watcher_is_terminated_others_keep_receiving(env: Env, nursery: trio.Nursery,
                                                                autojump_clock: trio.abc.Clock,
                                                                open_stream: Opener) -> None:
    deadline = trio.current_time() + 1800
    opts = ListOptions(watch=True, resource_version="0", send_initial_events=False)
    slow = await env.cacher.open_watch(opts, select(env, field="spec.nodeName=node-1"), deadline)
    capacity = slow.watcher.capacity
    fast = await open_stream(env, resource_version="0", send_initial_events=False)
    got: list[Event] = []

    async def reader() -> None:
        while True:
            got.append(await fast.next())

    nursery.start_soon(reader)
    for i in range(capacity + 3):
        await env.put("a", f"p{i:03}", node="node-1")
    await env.synced()
    with trio.fail_after(30):
        while len(got) < capacity + 3:
            await trio.sleep(0.01)
    assert [e["object"]["metadata"]["name"] for e in got] == [f"p{i:03}" for i in range(capacity + 3)]
    assert slow.watcher not in env.cacher._watchers
    assert len(queued(slow)) == capacity  # what it had queued is still readable, then the stream ends
    assert closed(slow)
    assert env.sample("apiserver_terminated_watchers_total", **LABELS) == 1
    # The fast one stays registered and keeps receiving.
    r = await env.put("a", "later", node="node-2")
    with trio.fail_after(30):
        while len(got) < capacity + 4:
            await trio.sleep(0.01)
    assert got[-1]["object"]["metadata"]["resourceVersion"] == str(r)


async def test_blocked_watcher_that_catches_up_within_budget_survives(env: Env, nursery: trio.Nursery,
                                                                      autojump_clock: trio.abc.Clock) -> None:
    deadline = trio.current_time() + 1800
    opts = ListOptions(watch=True, resource_version="0", send_initial_events=False)
    start = await env.cacher.open_watch(opts, select(env, field="spec.nodeName=node-1"), deadline)
    capacity = start.watcher.capacity
    for i in range(capacity):
        await env.put("a", f"p{i:03}", node="node-1")
    await env.synced()
    received: list[object] = []

    async def late_reader() -> None:
        await trio.sleep(0.03)  # within the 100 ms budget
        received.append(await start.watcher.receive.receive())

    nursery.start_soon(late_reader)
    await env.put("a", "one-more", node="node-1")
    await env.put("a", "elsewhere", node="node-2")
    await env.synced()  # the cacher moved on to the next event: the blocked dispatch is over
    assert start.watcher in env.cacher._watchers
    assert len(received) == 1
    assert len(queued(start)) == capacity
    assert env.sample("apiserver_terminated_watchers_total", **LABELS) == 0


# ---------------------------------------------------------------- bookmarks


async def test_periodic_bookmarks_every_minute(env: Env, autojump_clock: trio.abc.Clock) -> None:
    r = await env.put("a", "p1")
    await env.synced()
    created = trio.current_time()
    start = await env.cacher.open_watch(ListOptions(watch=True, resource_version=str(r), allow_watch_bookmarks=True),
                                   select(env), created + 1000)
    await trio.sleep_until(created + 58)
    assert queued(start) == []
    await trio.sleep_until(created + 62)
    marks = queued(start)
    assert [m["type"] for m in marks] == ["BOOKMARK"]
    assert marks[0]["object"] == {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": str(r)}}
    await trio.sleep_until(created + 118)  # the next one is due 60 s after the first
    assert queued(start) == []
    r2 = await env.put("a", "p2")
    await env.synced()
    await trio.sleep_until(created + 125)
    events = queued(start)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["resourceVersion"] == str(r2)


async def test_bookmark_due_two_seconds_before_deadline(env: Env, autojump_clock: trio.abc.Clock) -> None:
    await env.synced()
    created = trio.current_time()
    start = await env.cacher.open_watch(ListOptions(watch=True, resource_version="0", allow_watch_bookmarks=True),
                                   select(env), created + 10)
    await trio.sleep_until(created + 7.5)
    assert queued(start) == []
    await trio.sleep_until(created + 9.5)
    assert [e["type"] for e in queued(start)] == ["BOOKMARK"]
    assert start.watcher.next_bookmark == math.inf
    await trio.sleep_until(created + 100)
    assert queued(start) == []


async def test_no_bookmarks_unless_allowed(env: Env, autojump_clock: trio.abc.Clock) -> None:
    await env.synced()
    start = await env.cacher.open_watch(ListOptions(watch=True, resource_version="0"), select(env),
                                   trio.current_time() + 1000)
    await trio.sleep(300)
    assert queued(start) == []


async def test_bookmark_not_before_a_future_start_rv(env: Env, autojump_clock: trio.abc.Clock) -> None:
    now = await env.synced()
    opts = ListOptions(watch=True, resource_version=str(now + 5), allow_watch_bookmarks=True)
    start = await env.cacher.open_watch(opts, select(env), trio.current_time() + 1000)
    await trio.sleep(65)
    assert queued(start) == []  # the cache has not reached the rv the client asked for


# ----------------------------------------------------------- re-initialising


async def _run_storage(storage: MemoryStorage, scope: trio.CancelScope,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    with scope:
        await storage.run(task_status=task_status)


async def test_reinitialisation_closes_watchers(make_env: MakeEnv, nursery: trio.Nursery,
                                                autojump_clock: trio.abc.Clock, open_stream: Opener) -> None:
    storage = MemoryStorage()
    scope = trio.CancelScope()
    await nursery.start(_run_storage, storage, scope)
    env = await make_env(storage=storage)
    r1 = await env.put("a", "p1")
    await env.synced()
    start = await env.cacher.open_watch(ListOptions(watch=True, resource_version=str(r1)), select(env),
                                   trio.current_time() + 1000)
    s = await open_stream(env, resource_version="0")
    await s.take(1)
    scope.cancel()  # the storage goes away: the cacher's watch breaks
    with trio.fail_after(30):
        while env.cacher.ready:
            await trio.sleep(0.01)
    assert closed(start)
    assert await s.ended()
    assert env.cacher._watchers == set()
    with pytest.raises(errors.TooManyRequests):
        await env.cacher.open_watch(ListOptions(watch=True), select(env), trio.current_time() + 10)
    with pytest.raises(errors.TooManyRequests):
        await env.registry.watch_lines(env.res, "", ListOptions(watch=True), trio.current_time() + 10)
    # Back again: the cache relists and serves; a client resumes from its last rv.
    await nursery.start(_run_storage, storage, trio.CancelScope())
    with trio.fail_after(30):
        while not env.cacher.ready:
            await trio.sleep(0.01)
    assert env.sample("apiserver_watch_cache_initializations_total", **LABELS) == 2
    resumed = await open_stream(env, resource_version=str(r1))
    r2 = await env.put("a", "p2")
    assert summary(await resumed.take(1)) == [("ADDED", "p2", r2)]


async def test_cache_event_lines_are_encoded_once(env: Env, open_stream: Opener) -> None:
    a = await open_stream(env, resource_version="0")
    b = await open_stream(env, resource_version="0")
    r = await env.put("a", "p1")
    ea, eb = await a.take(1), await b.take(1)
    assert ea == eb
    ev: CacheEvent = env.cacher.ring.events_after(r - 1)[0]
    assert list(ev.memo) == [("ADDED", False, False)]  # (type, previous state, protobuf): made once


async def test_watch_from_an_evicted_rv_is_gone(make_env: MakeEnv, nursery: trio.Nursery,
                                               open_stream: Opener) -> None:
    env = await make_env(start=False)
    env.cacher.ring = EventRing(3, min_capacity=3, max_capacity=3)  # a window that never grows
    await nursery.start(env.cacher.run)
    revs = [await env.put("a", f"p{i}") for i in range(6)]
    await env.synced()
    oldest = env.cacher.ring.oldest_known
    assert oldest == revs[2]
    s = await open_stream(env, resource_version=str(oldest - 1))
    events = await s.take(1)
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    assert await s.ended()
    s = await open_stream(env, resource_version=str(oldest))
    assert summary(await s.take(3)) == [("ADDED", f"p{i}", revs[i]) for i in (3, 4, 5)]


async def test_closing_an_unread_watch_stream_unregisters_its_watcher(env: Env) -> None:
    """The HTTP layer may close a stream it never started reading (the client left before the body)."""
    lines = await env.registry.watch_lines(env.res, "", ListOptions(watch=True), trio.current_time() + 60)
    assert len(env.cacher._watchers) == 1
    await lines.aclose()  # type: ignore[attr-defined]
    assert env.cacher._watchers == set()
    assert env.sample("apiserver_registered_watchers", group="", version="", kind="Pod") == 0
