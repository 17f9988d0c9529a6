"""Two ``kapi serve --storage-backend etcd3 --token T`` replicas on one etcd: one CA and admin
credential for both, a write through one seen by a watch and a consistent LIST on the other, both in
the ``kubernetes`` Endpoints, one ``kube-controller-manager`` Lease holder whose death hands the
controllers to the other; a replica with a wrong token does not start."""

from __future__ import annotations

import json
import queue
import signal
import ssl
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.e2e.conftest import Server, start_server, stop_server
from tests.storage.etcd_support import etcd_cluster

pytestmark = pytest.mark.e2e

WAIT_S = 60.0  # the longest a test waits for the cluster to settle (a lease duration and a reconcile)


def _flags(endpoints: list[str], advertise: str, token: str = "T") -> tuple[str, ...]:
    return ("--storage-backend", "etcd3", "--etcd-servers", ",".join(f"http://{e}" for e in endpoints),
            "--token", token, "--advertise-address", advertise)


def _json(server: Server, method: str, path: str, body: dict[str, Any] | None = None,
          via: Server | None = None) -> tuple[int, dict[str, Any]]:
    """A request to ``server`` with the credentials and CA of ``via`` (default: its own)."""
    creds = via or server
    status, _, text = Server.request(
        _at(creds, server.url), method, path, json.dumps(body).encode() if body is not None else None,
        {"Content-Type": "application/json"})
    return status, json.loads(text) if text else {}


def _at(creds: Server, url: str) -> Server:
    return Server(creds.proc, creds.data_dir, creds.kubeconfig, url, creds.token, creds.ca_file, creds.log)


def _wait(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S:.0f}s: {what}")
        time.sleep(0.2)


def _watch(server: Server, path: str) -> queue.Queue[dict[str, Any]]:
    """A watch on ``server`` read in a thread; each event in the queue (the thread ends with the test)."""
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    req = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer {server.token}"})
    resp = urllib.request.urlopen(req, context=ctx, timeout=WAIT_S)

    def read() -> None:
        with resp:
            for line in resp:
                events.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    return events


def _holds_leader_lease(server: Server) -> bool:
    return "holds the kube-controller-manager lease" in server.log.read_text()


def _endpoints(server: Server) -> set[tuple[str, int]]:
    status, ep = _json(server, "GET", "/api/v1/namespaces/default/endpoints/kubernetes")
    assert status == 200, ep
    return {(a["ip"], p["port"]) for s in ep.get("subsets", []) for a in s["addresses"] for p in s["ports"]}


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


async def test_two_replicas_serve_one_cluster_and_hand_over_the_controllers(tmp_path: Path) -> None:
    async with etcd_cluster(tmp_path) as etcd:
        a = start_server(tmp_path / "a", *_flags(etcd.endpoints, "192.0.2.10"))
        b = None
        try:
            b = start_server(tmp_path / "b", *_flags(etcd.endpoints, "192.0.2.11"))
            # One CA and one admin credential: a's kubeconfig works against b.
            assert b.ca_file.read_bytes() == a.ca_file.read_bytes() and b.token == a.token
            status, _ = _json(b, "GET", "/api/v1/namespaces/default", via=a)
            assert status == 200

            # A write through a: seen by a watch on b, and by a consistent LIST on b at once.
            status, cms = _json(b, "GET", "/api/v1/namespaces/default/configmaps")
            events = _watch(b, "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion="
                            + cms["metadata"]["resourceVersion"])
            status, made = _json(a, "POST", "/api/v1/namespaces/default/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "through-a"}})
            assert status == 201, made
            status, listed = _json(b, "GET", "/api/v1/namespaces/default/configmaps")
            assert "through-a" in [i["metadata"]["name"] for i in listed["items"]]
            event = events.get(timeout=WAIT_S)
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "through-a")

            # Both replicas in the kubernetes Endpoints; an identity Lease each.
            both = {("192.0.2.10", _port(a)), ("192.0.2.11", _port(b))}
            _wait("both replicas in the Endpoints", lambda: _endpoints(b) == both)
            status, leases = _json(b, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
                                             "?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver")
            assert len(leases["items"]) == 2

            # One holder of the kube-controller-manager Lease: a, the first to start.
            assert _holds_leader_lease(a) and not _holds_leader_lease(b)
            status, lease = _json(b, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                                            "kube-controller-manager")
            held_by_a = lease["spec"]["holderIdentity"]

            # a is killed: b takes the Lease, its controllers work (a namespace goes away), a ages out.
            stop_server(a, signal.SIGKILL)
            _wait("b holds the kube-controller-manager lease", lambda: _holds_leader_lease(b))
            status, lease = _json(b, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                                            "kube-controller-manager")
            assert lease["spec"]["holderIdentity"] != held_by_a
            status, _ = _json(b, "POST", "/api/v1/namespaces",
                              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
            assert status == 201
            _json(b, "POST", "/api/v1/namespaces/doomed/configmaps",
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inside"}})
            status, _ = _json(b, "DELETE", "/api/v1/namespaces/doomed")
            assert status == 200
            _wait("the deleted namespace is gone", lambda: _json(b, "GET", "/api/v1/namespaces/doomed")[0] == 404)
            _wait("a ages out of the Endpoints", lambda: _endpoints(b) == {("192.0.2.11", _port(b))})
        finally:
            stop_server(a, signal.SIGKILL)
            if b is not None:
                assert stop_server(b) == 0


async def test_a_replica_with_another_token_does_not_start(tmp_path: Path) -> None:
    async with etcd_cluster(tmp_path) as etcd:
        a = start_server(tmp_path / "a", *_flags(etcd.endpoints, "192.0.2.10"))
        try:
            with pytest.raises(RuntimeError, match="token does not match") as failed:
                start_server(tmp_path / "b", *_flags(etcd.endpoints, "192.0.2.11", token="wrong"))
            assert "exited with 1" in str(failed.value)
            assert not (tmp_path / "b" / "pki" / "ca.key").exists()
        finally:
            assert stop_server(a) == 0
