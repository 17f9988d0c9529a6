"""Informers against a real ``kapi serve``: random writes, restarts, a forced 410, a herd reconnecting."""

from __future__ import annotations

import dataclasses
import random
import signal
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from kapi.client.api import CONFIGMAPS, NAMESPACES, ApiError, Client
from kapi.client.config import ClientConfig, load_kubeconfig
from kapi.client.informer import Informer
from kapi.client.objects import key
from tests.e2e.conftest import Server, start_server, stop_server

from .proxy import Proxy, host_port

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
NS = "load"


def via(cfg: ClientConfig, proxy: Proxy) -> ClientConfig:
    return dataclasses.replace(cfg, server=proxy.url)


def rv(obj: Obj) -> str:
    return str(obj["metadata"]["resourceVersion"])


class Model:
    """What an informer's handlers told: the objects they know, and any call that contradicts them."""

    def __init__(self) -> None:
        self.objs: dict[str, str] = {}
        self.errors: list[str] = []
        self.calls = 0

    def add(self, obj: Obj) -> None:
        self.calls += 1
        k = key(obj)
        if k in self.objs:
            self.errors.append(f"add for {k}, already known at {self.objs[k]}")
        self.objs[k] = rv(obj)

    def update(self, old: Obj, new: Obj) -> None:
        self.calls += 1
        k = key(new)
        if k not in self.objs:
            self.errors.append(f"update for unseen {k}")
        elif self.objs[k] != rv(old):
            self.errors.append(f"update of {k}: old rv {rv(old)}, last told {self.objs[k]}")
        self.objs[k] = rv(new)

    def delete(self, obj: Obj) -> None:
        self.calls += 1
        k = key(obj)
        if self.objs.pop(k, None) is None:
            self.errors.append(f"delete for unseen {k}")


async def fresh_list(client: Client, namespace: str = NS) -> dict[str, str]:
    page = await client.list(CONFIGMAPS, namespace)
    return {key(o): rv(o) for o in page["items"]}


async def wait_until_equal(informers: list[Informer], client: Client, timeout_s: float = 60.0,
                           models: Sequence[Model] = (), namespace: str = NS) -> dict[str, str]:
    """The server's state once every informer's store holds exactly it and every model's handlers have
    caught up with it (fails with a diff after ``timeout_s``). Handlers run in their own tasks, after
    the store changed, so a store can equal the server a moment before its handlers have heard of it."""
    with trio.move_on_after(timeout_s):
        while True:
            truth = await fresh_list(client, namespace)
            stores = [{key(o): rv(o) for o in inf.store.list()} for inf in informers]
            if all(s == truth for s in stores) and all(m.objs == truth for m in models):
                return truth
            await trio.sleep(0.2)
    truth = await fresh_list(client, namespace)
    for i, inf in enumerate(informers):
        store = {key(o): rv(o) for o in inf.store.list()}
        missing = set(truth) - set(store)
        extra = set(store) - set(truth)
        stale = {k for k in set(truth) & set(store) if truth[k] != store[k]}
        assert store == truth, f"informer {i}: missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}, " \
                               f"stale {sorted(stale)[:5]} ({inf.reflector.stats})"
    return truth


class Writers:
    """Random creates/updates/deletes of ConfigMaps from several tasks, riding out server restarts."""

    def __init__(self, client: Client, total: int, tasks: int, names_per_task: int) -> None:
        self.client = client
        self.total = total
        self.tasks = tasks
        self.names_per_task = names_per_task
        self.done = 0
        self.retries = 0
        self.milestones: dict[int, trio.Event] = {}

    def at(self, count: int) -> trio.Event:
        """An event set once ``count`` operations have been done."""
        return self.milestones.setdefault(count, trio.Event())

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for t in range(self.tasks):
                nursery.start_soon(self._task, t)

    async def _task(self, t: int) -> None:
        rng = random.Random(t)
        present: set[str] = set()
        while self.done < self.total:
            name = f"cm-{t}-{rng.randrange(self.names_per_task)}"
            try:
                await self._one(rng, name, present)
            except (httpx.TransportError, ApiError) as exc:
                if isinstance(exc, ApiError) and exc.code not in (404, 409, 429, 500, 503):
                    raise
                self.retries += 1
                await trio.sleep(0.1)
                continue
            self.done += 1
            for count, event in self.milestones.items():
                if self.done >= count:
                    event.set()

    async def _one(self, rng: random.Random, name: str, present: set[str]) -> None:
        if name not in present:
            try:
                await self.client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": name, "namespace": NS},
                                                      "data": {"v": str(rng.random())}})
            except ApiError as exc:
                if exc.code != 409:
                    raise
            present.add(name)
        elif rng.random() < 0.6:
            try:
                await self.client.patch(CONFIGMAPS, name, {"data": {"v": str(rng.random())}}, NS)
            except ApiError as exc:
                if exc.code != 404:
                    raise
                present.discard(name)
        else:
            try:
                await self.client.delete(CONFIGMAPS, name, NS)
            except ApiError as exc:
                if exc.code != 404:
                    raise
            present.discard(name)


class Cluster:
    """One kapi serve behind two proxies: informers' (can be frozen) and writers' (always flowing)."""

    def __init__(self, data_dir: Path, *flags: str) -> None:
        self.data_dir = data_dir
        self.flags = flags
        self.srv: Server | None = None
        self.informer_proxy: Proxy | None = None
        self.writer_proxy: Proxy | None = None

    async def start(self, nursery: trio.Nursery) -> ClientConfig:
        self.srv = await trio.to_thread.run_sync(start_server, self.data_dir, *self.flags)
        self.informer_proxy, self.writer_proxy = Proxy(host_port(self.srv.url)), Proxy(host_port(self.srv.url))
        await nursery.start(self.informer_proxy.run)
        await nursery.start(self.writer_proxy.run)
        return load_kubeconfig(self.srv.kubeconfig)

    async def restart(self, sig: int = signal.SIGTERM,
                      while_down: Callable[[], Awaitable[None]] | None = None) -> None:
        """Stop the server with ``sig``, await ``while_down`` if given, start it again on the same data."""
        assert self.srv is not None and self.informer_proxy and self.writer_proxy
        await trio.to_thread.run_sync(stop_server, self.srv, sig)
        if while_down is not None:
            await while_down()
        self.srv = await trio.to_thread.run_sync(start_server, self.data_dir, *self.flags)
        self.informer_proxy.upstream = self.writer_proxy.upstream = host_port(self.srv.url)

    def stop(self) -> None:
        if self.srv is not None:
            stop_server(self.srv)


async def soak_ten_informers(tmp_path: Path, watch_list: bool) -> None:
    """Ten informers follow 6,000 random writes from four tasks, a restart they ride out, and a forced
    410 (frozen while 1,000 writes go by, then a restart): each ends equal to the server, its handlers
    too. The two cases (``watch_list``) run from two modules, so that two workers run them at once."""
    cluster = Cluster(tmp_path / "kapi")
    try:
        async with trio.open_nursery() as nursery:
            cfg = await cluster.start(nursery)
            assert cluster.writer_proxy and cluster.informer_proxy
            async with Client(via(cfg, cluster.writer_proxy)) as admin, AsyncExitStack() as stack:
                await admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
                clients = [await stack.enter_async_context(
                    Client(via(cfg, cluster.informer_proxy), http2=i % 2 == 0, protobuf=i % 3 == 0))
                    for i in range(10)]
                informers, models = [], []
                for c in clients:
                    inf = Informer(c, CONFIGMAPS, namespace=NS, watch_list=watch_list, page_size=50)
                    model = Model()
                    inf.add_handler(model.add, model.update, model.delete)
                    informers.append(inf)
                    models.append(model)
                    nursery.start_soon(inf.run)
                for inf in informers:
                    await inf.wait_for_sync()

                writers = Writers(admin, total=6_000, tasks=4, names_per_task=60)
                plain_restart, freeze, forced_410 = writers.at(2000), writers.at(4000), writers.at(5000)
                async with trio.open_nursery() as load:
                    load.start_soon(writers.run)
                    # A restart the informers ride out (resuming, or relisting if they lagged).
                    await plain_restart.wait()
                    await cluster.restart()
                    # A forced 410: the informers hear nothing while 1,000 writes go by, then the
                    # server restarts, so its history starts after every informer's resourceVersion.
                    await freeze.wait()
                    cluster.informer_proxy.freeze()
                    await forced_410.wait()
                    await cluster.restart()
                    cluster.informer_proxy.drop()
                    cluster.informer_proxy.thaw()
                assert writers.done >= 6_000

                truth = await wait_until_equal(informers, admin, models=models)
                assert len(truth) > 50  # the writes left a real state behind
                for i, (inf, model) in enumerate(zip(informers, models)):
                    assert model.errors == [], f"informer {i}: {model.errors[:5]}"
                    assert model.objs == truth, f"informer {i}'s handlers disagree with the server"
                    stats = inf.reflector.stats
                    assert stats.gone >= 1, f"informer {i} never saw a 410: {stats}"
                    syncs = stats.watch_lists if watch_list else stats.lists
                    assert syncs >= 2, f"informer {i} did not relist: {stats}"
                    assert not stats.fell_back
                nursery.cancel_scope.cancel()
    finally:
        cluster.stop()


async def test_a_herd_of_200_informers_rides_out_a_kill_9(tmp_path: Path) -> None:
    """200 informers sharing a connection pool keep retrying while their server is killed and down, and all
    come back to it. The jitter that spreads their retries is test_informer_unit.py's, on trio's clock."""
    cluster = Cluster(tmp_path / "kapi")
    try:
        async with trio.open_nursery() as nursery:
            cfg = await cluster.start(nursery)
            assert cluster.writer_proxy and cluster.informer_proxy
            async with Client(via(cfg, cluster.writer_proxy)) as admin, \
                    Client(via(cfg, cluster.informer_proxy), http2=False, max_connections=250) as shared:
                await admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
                for i in range(5):
                    await admin.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": f"cm-{i}", "namespace": NS}})
                informers = [Informer(shared, CONFIGMAPS, namespace=NS) for _ in range(200)]
                for inf in informers:
                    nursery.start_soon(inf.run)
                for inf in informers:
                    await inf.wait_for_sync()
                before = [inf.reflector.stats.watches + inf.reflector.stats.watch_lists for inf in informers]
                errors_before = [inf.reflector.stats.errors for inf in informers]

                async def every_informer_failed_a_retry() -> None:
                    # Two failures each since the kill: at most one is the broken watch, so at least one
                    # is a retry that found the server down. Waited for, not guessed in seconds.
                    with trio.fail_after(120):  # only informers that stopped retrying wait this long
                        while any(inf.reflector.stats.errors < e + 2 for inf, e in zip(informers, errors_before)):
                            await trio.sleep(0.05)

                await cluster.restart(signal.SIGKILL, while_down=every_informer_failed_a_retry)
                await admin.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "after", "namespace": NS}})
                truth = await wait_until_equal(informers, admin)
                assert "load/after" in truth
                for inf, b in zip(informers, before):
                    assert inf.reflector.stats.watches + inf.reflector.stats.watch_lists > b
                    assert not inf.reflector.stats.fell_back
            nursery.cancel_scope.cancel()
    finally:
        cluster.stop()


async def test_shutdown_does_not_wait_on_informers_reconnecting(tmp_path: Path) -> None:
    """Watches end at SIGTERM and WatchList informers re-ask at once on their kept-alive connections;
    the server must still close those connections and exit without running out its grace period."""
    # A server that waits on them runs out its 10 s (its log says so) before stop_server's 15 s SIGKILL;
    # one that does not exits long before, however loaded the machine.
    cluster = Cluster(tmp_path / "kapi", "--shutdown-delay-duration", "0", "--shutdown-timeout", "10")
    try:
        async with trio.open_nursery() as nursery:
            cfg = await cluster.start(nursery)
            assert cluster.informer_proxy
            async with Client(via(cfg, cluster.informer_proxy), http2=False, max_connections=60) as client:
                informers = [Informer(client, CONFIGMAPS, namespace="default") for _ in range(40)]
                for inf in informers:
                    nursery.start_soon(inf.run)
                for _ in range(3):  # the race needs a few tries to show
                    for inf in informers:
                        await inf.wait_for_sync()
                    await trio.sleep(0.5)
                    log = cluster.srv.log if cluster.srv else None
                    await cluster.restart()
                    assert log is not None
                    text = log.read_text()
                    assert "shutting down" in text and "shutdown timeout ran out" not in text, text[-2000:]
            nursery.cancel_scope.cancel()
    finally:
        cluster.stop()
