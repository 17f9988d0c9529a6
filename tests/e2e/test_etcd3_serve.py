"""``kapi serve --storage-backend etcd3`` against a real etcd: kubectl, restarts, prefixes, overrides, outages."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import trio

from kapi.storage.etcd3.client import EtcdClient, prefix_end
from tests.storage.etcd_support import etcd_cluster, free_port, make_tls

from .conftest import Kubectl, Server, start_server, stop_server

pytestmark = pytest.mark.e2e

DEADLINE_S = 60.0  # how long a test waits for the server to come back, at most


def kubectl(server: Server) -> Kubectl:
    """The real kubectl on PATH (it picks the versioned binary matching the server)."""
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not on PATH")
    return Kubectl(found, server, "")


def configmap(name: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"k": name}}).encode()


def create(server: Server, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    return server.request("POST", path, body, {"Content-Type": "application/json"})


async def keys(endpoints: list[str], prefix: str) -> list[str]:
    async with EtcdClient(endpoints) as client:
        resp = await client.range(prefix.encode(), prefix_end(prefix.encode()), keys_only=True)
    return [kv.key.decode() for kv in resp.kvs]


def etcd_flags(endpoints: list[str], *extra: str) -> tuple[str, ...]:
    return ("--storage-backend", "etcd3", "--etcd-servers", ",".join(f"http://{e}" for e in endpoints), *extra)


@contextmanager
def streaming(kc: Kubectl, *args: str) -> Iterator[queue.Queue[str]]:
    """``kubectl *args`` (a watch) in the background; its output lines arrive in the queue."""
    proc = subprocess.Popen([kc.binary, "--kubeconfig", str(kc.server.kubeconfig), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line.strip()) for line in proc.stdout or ()], daemon=True)
    reader.start()
    try:
        yield lines
    finally:
        proc.kill()
        proc.wait()
        reader.join()
        proc.stdout.close()


def wait_for_line(lines: queue.Queue[str], text: str) -> None:
    seen = []
    while True:
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            raise AssertionError(f"no line with {text!r}; saw {seen}") from None
        seen.append(line)
        if text in line:
            return


async def test_kubectl_restart_and_prefixes_on_one_etcd(tmp_path: Path) -> None:
    async with etcd_cluster(tmp_path) as etcd:
        a = start_server(tmp_path / "a", *etcd_flags(etcd.endpoints))
        try:
            kc = kubectl(a)
            kc.run("create", "configmap", "first", "--from-literal=k=v")
            assert kc.run("get", "configmap", "first", "-o", "jsonpath={.data.k}").stdout == "v"
            with streaming(kc, "get", "--watch", "configmaps", "-o", "name") as lines:
                wait_for_line(lines, "configmap/first")
                kc.run("create", "configmap", "second")
                wait_for_line(lines, "configmap/second")
            listed = kc.run("get", "configmaps", "-o", "name").stdout.split()
            assert {"configmap/first", "configmap/second"} <= set(listed)
        finally:
            assert stop_server(a) == 0

        # Another server on the same etcd under --etcd-prefix /other sees none of them.
        b = start_server(tmp_path / "b", *etcd_flags(etcd.endpoints, "--etcd-prefix", "/other"))
        try:
            kb = kubectl(b)
            assert "configmap/first" not in kb.run("get", "configmaps", "-o", "name").stdout
            kb.run("create", "configmap", "only-b")
        finally:
            assert stop_server(b) == 0
        assert "/registry/configmaps/default/first" in await keys(etcd.endpoints, "/registry/")
        other = await keys(etcd.endpoints, "/other/")
        assert "/other/configmaps/default/only-b" in other
        assert "/other/configmaps/default/first" not in other

        # The first server again, on the same etcd: its objects are there.
        a = start_server(tmp_path / "a", *etcd_flags(etcd.endpoints))
        try:
            kc = kubectl(a)
            names = kc.run("get", "configmaps", "-o", "name").stdout.split()
            assert {"configmap/first", "configmap/second"} <= set(names)
            assert "configmap/only-b" not in names
        finally:
            assert stop_server(a) == 0


async def test_overrides_keep_events_and_configmaps_in_the_second_etcd(tmp_path: Path) -> None:
    (tmp_path / "main").mkdir()
    (tmp_path / "second").mkdir()
    async with etcd_cluster(tmp_path / "main") as main, etcd_cluster(tmp_path / "second") as second:
        servers = ";".join(f"http://{e}" for e in second.endpoints)
        srv = start_server(tmp_path / "d", *etcd_flags(main.endpoints, "--etcd-servers-overrides",
                                                       f"/events#{servers},/configmaps#{servers}"))
        try:
            event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
                     "involvedObject": {"kind": "ConfigMap", "name": "c1", "namespace": "default"},
                     "reason": "Tested", "message": "stored apart", "type": "Normal"}
            status, _, body = create(srv, "/api/v1/namespaces/default/events", json.dumps(event).encode())
            assert status == 201, body
            status, _, body = create(srv, "/api/v1/namespaces/default/configmaps", configmap("c1"))
            assert status == 201, body
            status, _, body = create(srv, "/api/v1/namespaces/default/secrets",
                                     json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}}).encode())
            assert status == 201, body
            kc = kubectl(srv)
            assert "event/e1" in kc.run("get", "events", "-o", "name").stdout.split()
            # events.k8s.io's events are the same objects, in the same etcd
            assert "e1" in kc.run("get", "events.v1.events.k8s.io", "-o", "name").stdout
            # A LIST of configmaps (from their watch cache) and a GET at the resourceVersion it gave: the
            # second etcd's revisions
            listed = json.loads(kc.run("get", "configmaps", "-o", "json").stdout)
            assert "c1" in {i["metadata"]["name"] for i in listed["items"]}
            rv = listed["metadata"]["resourceVersion"]
            status, _, body = srv.request("GET", f"/api/v1/namespaces/default/configmaps/c1?resourceVersion={rv}")
            assert status == 200, body
            # A watch of events from now (no resourceVersion, no initial events) starts at the second etcd's
            # current revision, not the main one's (far ahead): the events created after it opens arrive.
            with streaming(kc, "get", "--raw", "/api/v1/namespaces/default/events?watch=1&sendInitialEvents=false"
                                               "&resourceVersionMatch=NotOlderThan") as lines:
                arrived = ""
                for i in range(60):  # it opens at some point: from then on each new event arrives
                    event["metadata"] = {"name": f"later-{i}"}
                    assert create(srv, "/api/v1/namespaces/default/events", json.dumps(event).encode())[0] == 201
                    try:
                        arrived = lines.get(timeout=0.5)
                        break
                    except queue.Empty:
                        continue
                assert '"later-' in arrived and '"ADDED"' in arrived, arrived
        finally:
            assert stop_server(srv) == 0
        assert "/registry/events/default/e1" in await keys(second.endpoints, "/registry/events/")
        assert "/registry/configmaps/default/c1" in await keys(second.endpoints, "/registry/configmaps/")
        assert await keys(second.endpoints, "/registry/secrets/") == []
        assert await keys(main.endpoints, "/registry/events/") == []
        assert await keys(main.endpoints, "/registry/configmaps/") == []
        assert await keys(main.endpoints, "/registry/secrets/") == ["/registry/secrets/default/s1"]


async def test_etcd_outage_answers_503_and_unready_then_recovers(tmp_path: Path) -> None:
    async with etcd_cluster(tmp_path) as etcd:
        srv = start_server(tmp_path / "d", *etcd_flags(etcd.endpoints), "--request-timeout", "10s")
        try:
            status, _, _ = create(srv, "/api/v1/namespaces/default/configmaps", configmap("before"))
            assert status == 201
            [member] = etcd.members
            member.stop()

            status, headers, body = create(srv, "/api/v1/namespaces/default/configmaps", configmap("during"))
            assert status in (503, 504), body
            answer = json.loads(body)
            assert answer["reason"] == ("ServiceUnavailable" if status == 503 else "Timeout")
            assert answer["details"]["retryAfterSeconds"] >= 1
            assert int({k.lower(): v for k, v in headers.items()}["retry-after"]) >= 1
            # Reads from the watch cache go on while etcd is away.
            status, _, body = srv.request("GET", "/api/v1/namespaces/default/configmaps?resourceVersion=0")
            assert status == 200 and '"before"' in body.decode(), body

            deadline = time.monotonic() + DEADLINE_S
            while True:  # the check's answer is kept a moment: it fails soon after
                status, _, body = srv.request("GET", "/readyz?verbose")
                if status != 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert status == 503
            assert "[-]etcd failed" in body.decode()
            status, _, body = srv.request("GET", "/livez")
            assert (status, body) == (200, b"ok")

            member.start()
            await trio.to_thread.run_sync(etcd.wait_ready)
            deadline = time.monotonic() + DEADLINE_S
            while True:
                status, _, body = create(srv, "/api/v1/namespaces/default/configmaps", configmap("after"))
                if status == 201 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert status == 201, body
            while True:
                status, _, body = srv.request("GET", "/readyz")
                if status == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert (status, body) == (200, b"ok")
            names = kubectl(srv).run("get", "configmaps", "-o", "name").stdout.split()
            assert {"configmap/before", "configmap/after"} <= set(names)
        finally:
            assert stop_server(srv) == 0


def test_unreachable_etcd_exits_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kapi", "serve", "--data-dir", str(tmp_path / "d"), "--secure-port", "0",
         "--storage-backend", "etcd3", "--etcd-servers", f"http://127.0.0.1:{free_port()}",
         "--storage-initialization-timeout", "2s"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if "kapi cannot serve" in ln]
    assert "storage did not answer within 2s" in line and "--storage-initialization-timeout" in line
    assert not (tmp_path / "d" / "admin.kubeconfig").exists()


async def test_tls_to_etcd_and_a_ca_that_does_not_match(tmp_path: Path) -> None:
    tls = make_tls(tmp_path)
    async with etcd_cluster(tmp_path, tls=tls) as etcd:
        [endpoint] = etcd.endpoints
        assert endpoint.startswith("https://")
        flags = ("--storage-backend", "etcd3", "--etcd-servers", endpoint, "--etcd-certfile", tls.certfile,
                 "--etcd-keyfile", tls.keyfile)
        srv = start_server(tmp_path / "d", *flags, "--etcd-cafile", tls.cafile)
        try:
            status, _, body = create(srv, "/api/v1/namespaces/default/configmaps", configmap("over-tls"))
            assert status == 201, body
        finally:
            assert stop_server(srv) == 0

        other = make_tls(tmp_path, name="other")  # a CA etcd's certificate is not from
        proc = subprocess.run(
            [sys.executable, "-m", "kapi", "serve", "--data-dir", str(tmp_path / "d2"), "--secure-port", "0", *flags,
             "--etcd-cafile", other.cafile, "--storage-initialization-timeout", "2s"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert proc.returncode == 1
        assert "Traceback" not in proc.stderr
        [line] = [ln for ln in proc.stderr.splitlines() if "kapi cannot serve" in ln]
        assert "storage did not answer within 2s" in line and "handshake" in line.lower(), line
