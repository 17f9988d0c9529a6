"""kapi.testing.Server against real ``kapi serve`` processes: start and stop, flags, users, clients,
a server that cannot start, and no process left behind, whichever way a test ends."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
import tempfile
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kapi.client import NAMESPACES, Client
from kapi.testing import Server, ServerError

from .conftest import gone

pytestmark = pytest.mark.e2e

REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One server (memory, no flags) for this module's tests that only use it."""
    with Server() as srv:
        yield srv


def anonymous_status(url: str, path: str) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url + path, context=ctx, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        with err:
            return err.code


def test_ready_on_start(server: Server) -> None:
    assert server.running
    assert server.url.startswith("https://127.0.0.1:") and not server.url.endswith(":0")
    doc = yaml.safe_load(server.kubeconfig.read_text())
    assert doc["clusters"][0]["cluster"]["server"] == server.url
    assert server.request("GET", "/readyz") == (200, "ok")
    assert anonymous_status(server.url, "/readyz") == 200  # the default --anonymous-auth=true
    with pytest.raises(ServerError, match="started already"):
        server.start()


def test_user_is_minted_by_the_servers_ca(server: Server) -> None:
    path = server.user("alice", ["devs", "qa"], namespace="team")
    doc = yaml.safe_load(path.read_text())
    assert doc["clusters"][0]["cluster"]["server"] == server.url
    assert doc["contexts"][0]["context"]["namespace"] == "team"
    assert path.parent.is_relative_to(server.log.parent)  # removed with the server's folder

    kubernetes = pytest.importorskip("kubernetes")
    with kubernetes.client.ApiClient(server.kubernetes_configuration(path)) as api:
        review = kubernetes.client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert review.status.user_info.username == "alice"
        assert {"devs", "qa"} <= set(review.status.user_info.groups)
        with pytest.raises(kubernetes.client.ApiException) as denied:
            kubernetes.client.CoreV1Api(api).list_namespace()
        assert denied.value.status == 403  # RBAC: alice may do nothing yet


def test_user_failure_says_why(server: Server) -> None:
    with pytest.raises(ServerError, match="kapi kubeconfig --user  failed"):
        server.user("")


def test_kubernetes_configuration_is_admin(server: Server) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    configuration = server.kubernetes_configuration()
    assert configuration.host == server.url
    with kubernetes.client.ApiClient(configuration) as api:
        names = {ns.metadata.name for ns in kubernetes.client.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system"} <= names


async def test_client_under_trio(server: Server) -> None:
    async with server.client() as client:
        assert isinstance(client, Client)
        assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"


def test_client_under_asyncio_as_a_user(server: Server) -> None:
    async def whoami() -> str:
        async with server.client(server.user("bob")) as client:
            review = await client.request("POST", REVIEW, body={
                "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        return str(review["status"]["userInfo"]["username"])

    assert asyncio.run(whoami()) == "bob"


def test_flags_storage_restart_and_stop(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    srv = Server("--anonymous-auth=false", data_dir=data_dir, storage="sqlite")
    with pytest.raises(ServerError, match="start"):
        srv.url  # noqa: B018 (a property that raises before start())
    srv.start()
    try:
        assert anonymous_status(srv.url, "/readyz") == 401  # the flag reached kapi serve
        assert (data_dir / "kapi.db").exists()  # storage= is --storage-backend
        status, body = srv.request("POST", "/api/v1/namespaces/default/configmaps",
                                   {"metadata": {"name": "kept"}, "data": {"a": "1"}})
        assert status == 201, body
        pid, folder, first_url = srv.pid, srv.log.parent, srv.url
    finally:
        srv.stop()
    assert not srv.running and gone(pid)
    assert not folder.exists()  # its temporary folder (log, users)
    assert (data_dir / "kapi.db").exists()  # a given data dir is kept
    srv.stop()  # stopping again does nothing

    with srv:  # started again: the same data, another port
        assert srv.request("GET", "/api/v1/namespaces/default/configmaps/kept")[1]["data"] == {"a": "1"}
        assert srv.url != first_url or srv.pid != pid
        pid = srv.pid
    assert gone(pid)


def test_a_server_that_exits_raises_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where Server makes its folder
    srv = Server("--storage-backend=nonsense")
    with pytest.raises(ServerError) as failed:
        srv.start()
    message = str(failed.value)
    assert "exited with code 2 before it was ready" in message
    assert "invalid choice: 'nonsense'" in message  # the log's last lines
    assert not srv.running
    assert not list(tmp_path.iterdir())  # its folder is removed


def test_a_server_not_ready_in_time_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def recording(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", recording)
    srv = Server(start_timeout_s=0.0)
    with pytest.raises(ServerError, match="not ready within 0 s"):
        srv.start()
    assert not srv.running
    assert len(started) == 1 and started[0].returncode is not None  # stopped and reaped
    assert not list(tmp_path.iterdir())


def test_a_server_nobody_stops_is_stopped_at_exit(tmp_path: Path) -> None:
    script = tmp_path / "leak.py"
    script.write_text(textwrap.dedent("""
        from kapi.testing import Server

        server = Server()
        server.start()
        print(server.pid, server.log.parent, flush=True)
        # no stop(): the interpreter exits with the server running
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    pid, folder = proc.stdout.split()
    assert gone(int(pid), timeout_s=1.0), "the server outlived the interpreter that started it"
    assert not Path(folder).exists()
