"""Properties of the watch cache over random histories: snapshots and watches agree with the final state."""

from __future__ import annotations

import tempfile
from contextlib import aclosing
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

import orjson
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from kapi import errors
from kapi.cacher.store import Entry
from kapi.cacher.watcher import Filter
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.metrics import Metrics
from kapi.registry import listing
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, Selection
from kapi.object.selectors import parse_label_selector
from kapi.storage.base import Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage

from .conftest import Env, NewerEtcdStorage, emptied, line_objects

NAMES = [("a", "p"), ("a", "q"), ("b", "p"), ("b", "r")]
LABELS = [{}, {"app": "web"}, {"app": "db"}, {"app": "web", "tier": "1"}]
SELECTOR = "app=web"
MARKER_NS = "m"

State = dict[str, tuple[int, dict[str, str]]]  # "ns/name" -> (rv, labels)

ops = st.lists(st.tuples(st.sampled_from(["put", "put", "delete"]), st.integers(0, len(NAMES) - 1),
                         st.integers(0, len(LABELS) - 1)), min_size=1, max_size=30)


def from_items(items: Sequence[Entry]) -> State:
    out: State = {}
    for entry in items:
        md = orjson.loads(entry.data)["metadata"]
        out[f"{md['namespace']}/{md['name']}"] = (int(md["resourceVersion"]), md.get("labels") or {})
    return out


def web(state: State) -> State:
    return {k: v for k, v in state.items() if v[1].get("app") == "web"}


def apply_events(state: State, events: list[dict[str, Any]]) -> State:
    out = dict(state)
    for ev in events:
        md = ev["object"]["metadata"]
        key = f"{md['namespace']}/{md['name']}"
        if ev["type"] == "DELETED":
            assert key in out, ev
            del out[key]
        else:
            assert ev["type"] in ("ADDED", "MODIFIED"), ev
            assert (key in out) == (ev["type"] == "MODIFIED"), (ev, out)
            out[key] = (int(md["resourceVersion"]), md.get("labels") or {})
    return out


async def scenario(make: Callable[[], Awaitable[Storage]], operations: list[tuple[str, int, int]],
                   start_after: int) -> None:
    async with trio.open_nursery() as nursery:
        storage = await make()
        await nursery.start(storage.run)
        registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
        res = registry.table.get("", "v1", "pods")
        assert res is not None
        cacher = registry.make_cacher(res, capacity=100, indexed_fields=("spec.nodeName",))
        env = Env(storage, registry, res, cacher)
        history: dict[int, State] = {0: {}}
        state: State = {}
        relist_rv = -1
        for i, (op, which, label) in enumerate(operations):
            if i == start_after:
                relist_rv = await storage.current_revision()
                await nursery.start(cacher.run)
            ns, name = NAMES[which]
            key = f"{ns}/{name}"
            if op == "delete":
                if key not in state:
                    continue
                rev = await env.delete(ns, name)
                del state[key]
            else:
                rev = await env.put(ns, name, labels=LABELS[label])
                state[key] = (rev, LABELS[label])
            history[rev] = dict(state)
        if relist_rv < 0:
            relist_rv = await storage.current_revision()
            await nursery.start(cacher.run)
        final = await env.synced()
        prefix = registry.prefix(res, "")
        everything = Filter(prefix)
        every_pod = listing.predicate(registry, res, Selection(None, None))
        selected = listing.predicate(registry, res, Selection(parse_label_selector(SELECTOR), None))
        current = await cacher.get_list(prefix, ListOptions(), every_pod)
        assert from_items(current.items) == state

        for rv, at in history.items():
            if rv == 0:
                continue  # rv "0" means "any", not a revision
            exact = ListOptions(resource_version=str(rv), resource_version_match="Exact")
            if rv < relist_rv:
                if (await cacher.get_list(prefix, exact, every_pod)).source != "storage":
                    raise AssertionError(f"rv {rv} predates the relist at {relist_rv}: must delegate")
                try:
                    await cacher.open_watch(ListOptions(watch=True, resource_version=str(rv)), everything,
                                       trio.current_time() + 60)
                except errors.Gone:
                    pass
                else:
                    raise AssertionError(f"watch from {rv} (relist {relist_rv}) must be 410")
                continue
            # A list at rv is the state at rv; with the window's later events it is the final state.
            listed = await cacher.get_list(prefix, exact, every_pod)
            assert listed.revision == rv
            assert from_items(listed.items) == at
            later = cacher.ring.events_after(rv)
            assert all(ev.revision > rv for ev in later)
            replayed = dict(at)
            for ev in later:
                key = ev.key.split("/registry/pods/", 1)[1]
                if ev.type == "DELETED":
                    del replayed[key]
                else:
                    assert ev.entry is not None
                    replayed[key] = (ev.revision, dict(ev.entry.labels))
            assert replayed == state
            # The same through the registry, against a historical read of storage.
            page = await registry.list(res, "", exact)
            stored = await storage.get_list(prefix, exact, listing.predicate(registry, res, registry.selection(res, exact)))
            assert page.source != "storage"
            assert [o["metadata"] for o in listitems.objects(page.items)] == \
                [o["metadata"] for o in listitems.objects(stored.items)]
        for rv, at in history.items():
            if rv < max(1, relist_rv):
                continue
            # A selected list at rv plus a selected watch from rv gives the selected state now.
            exact = ListOptions(resource_version=str(rv), resource_version_match="Exact")
            listed_web = await cacher.get_list(prefix, exact, selected)
            assert from_items(listed_web.items) == web(at)
            events = await catch_up_lines(env, rv)
            assert [int(e["object"]["metadata"]["resourceVersion"]) for e in events] == sorted(
                int(e["object"]["metadata"]["resourceVersion"]) for e in events)
            assert all(int(e["object"]["metadata"]["resourceVersion"]) > rv for e in events)
            assert apply_events(web(at), events) == web(state)
        assert cacher.rv >= final
        nursery.cancel_scope.cancel()


async def catch_up_lines(env: Env, rv: int) -> list[dict[str, Any]]:
    """What a selected watch from ``rv`` sends for the recorded history.

    A marker pod (namespace ``m``) written after the watch opens ends the catch-up;
    the marker events themselves are left out.
    """
    lines = await env.registry.watch_lines(env.res, "", ListOptions(watch=True, resource_version=str(rv),
                                                                    label_selector=SELECTOR),
                                           trio.current_time() + 60)
    marker = f"marker-{rv}"
    await env.put(MARKER_NS, marker, labels={"app": "web"})
    events: list[dict[str, Any]] = []
    async with aclosing(lines):  # type: ignore[type-var]
        with trio.fail_after(30):  # a guard against hanging, not a timing assertion
            async for chunk in lines:
                events += line_objects(chunk)
                if any(e["object"]["metadata"].get("name") == marker for e in events):
                    break
    return [e for e in events if e["object"]["metadata"]["namespace"] != MARKER_NS]


async def memory() -> Storage:
    return MemoryStorage()


@settings(max_examples=50, deadline=None)
@given(ops, st.integers(0, 30))
def test_list_at_rv_plus_watch_from_rv_is_the_final_state(operations: list[tuple[str, int, int]],
                                                          start_after: int) -> None:
    trio.run(scenario, memory, operations, start_after)


@settings(max_examples=10, deadline=None)
@given(ops, st.integers(0, 30))
def test_the_same_on_sqlite(operations: list[tuple[str, int, int]], start_after: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        async def sqlite() -> Storage:
            return SqliteStorage(str(Path(directory) / "kapi.db"))

        trio.run(scenario, sqlite, operations, start_after)


@pytest.mark.e2e
@settings(max_examples=20, deadline=None)
@given(operations=ops, start_after=st.integers(0, 30))
def test_the_same_on_etcd3(shared_etcd: list[str], operations: list[tuple[str, int, int]], start_after: int) -> None:
    async def etcd() -> Storage:
        return NewerEtcdStorage(await emptied(shared_etcd))

    trio.run(scenario, etcd, operations, start_after)
