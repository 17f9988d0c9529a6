"""Issue 12: ``kapi serve`` is safe by default (``--authorization-mode Node,RBAC``, as k3s and kubeadm
clusters are): anonymous requests reach only what system:public-info-viewer allows, the admin
kubeconfig keeps working as system:masters, and a user minted with ``kapi kubeconfig`` may do what
RBAC bindings give it and nothing more."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from .conftest import Kubectl, Server, kubectl_binary, start_server, stop_server
from .test_kubeconfig_e2e import as_user, mint

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server started with no authorization flag at all."""
    srv = start_server(tmp_path_factory.mktemp("kapi-default"))
    yield srv
    stop_server(srv)


def _namespace(server: Server) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).encode()
    status, _, text = server.request("POST", "/api/v1/namespaces", body, {"Content-Type": "application/json"})
    assert status == 201, text
    return name


def test_anonymous_cannot_read_secrets(default_server: Server) -> None:
    ns = _namespace(default_server)
    secret = json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                         "stringData": {"password": "hunter2"}}).encode()
    status, _, text = default_server.request("POST", f"/api/v1/namespaces/{ns}/secrets", secret,
                                             {"Content-Type": "application/json"})
    assert status == 201, text
    for path, verb in ((f"/api/v1/namespaces/{ns}/secrets", "list"), (f"/api/v1/namespaces/{ns}/secrets/s", "get"),
                       ("/api/v1/secrets", "list")):
        status, _, body = default_server.request("GET", path, token="")
        assert status == 403, (path, body)
        answer = json.loads(body)
        assert answer["kind"] == "Status" and answer["reason"] == "Forbidden"
        assert f'User "system:anonymous" cannot {verb} resource "secrets"' in answer["message"]
        assert b"hunter2" not in body and b"aHVudGVyMg" not in body


def test_anonymous_may_write_nothing_and_see_no_api(default_server: Server) -> None:
    ns = _namespace(default_server)
    cm = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).encode()
    status, _, _ = default_server.request("POST", f"/api/v1/namespaces/{ns}/configmaps", cm,
                                          {"Content-Type": "application/json"}, token="")
    assert status == 403
    assert default_server.request("GET", f"/api/v1/namespaces/{ns}/configmaps/c")[0] == 404  # nothing was stored
    # Discovery is for authenticated users only (system:discovery is bound to system:authenticated).
    for path in ("/api/v1/namespaces", "/api", "/apis", "/openapi/v2"):
        assert default_server.request("GET", path, token="")[0] == 403, path


def test_anonymous_reaches_the_public_info(default_server: Server) -> None:
    for path in ("/version", "/version/", "/healthz", "/readyz", "/livez", "/readyz?verbose"):
        status, _, body = default_server.request("GET", path, token="")
        assert status == 200, (path, body)
    # system:public-info-viewer names those URLs exactly (no "/livez/*"): one check is the admin's.
    assert default_server.request("GET", "/livez/ping", token="")[0] == 403
    assert default_server.request("GET", "/livez/ping")[0] == 200
    status, _, body = default_server.request("GET", "/version", token="")
    assert json.loads(body)["major"] == "1"


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_admin_kubeconfig_works(default_server: Server, version: str) -> None:
    binary = kubectl_binary(version)
    admin = Kubectl(binary, default_server, version)
    ns = _namespace(default_server)
    admin.run("create", "secret", "generic", "s", "--from-literal=k=v", namespace=ns)
    out = json.loads(admin.run("get", "secret", "s", "-o", "json", namespace=ns).stdout)
    assert out["metadata"]["name"] == "s"
    assert "yes" in admin.run("auth", "can-i", "delete", "nodes").stdout


def _wait_allowed(kc: Kubectl, *args: str, namespace: str) -> str:
    """The binding reaches the authorizer through an informer: retry for a few seconds."""
    deadline = time.monotonic() + 20
    while True:
        proc = kc.run(*args, namespace=namespace, check=False)
        if proc.returncode == 0 or time.monotonic() > deadline:
            assert proc.returncode == 0, proc.stderr
            return proc.stdout
        time.sleep(0.2)


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_a_minted_user_is_forbidden_until_bound(default_server: Server, tmp_path: Path, version: str) -> None:
    admin_binary = kubectl_binary(version)
    admin = Kubectl(admin_binary, default_server, version)
    user = f"bob-{uuid.uuid4().hex[:6]}"
    bob = as_user(version, default_server, mint(default_server, tmp_path / "bob.kubeconfig", user, "dev"))
    ns, other = _namespace(default_server), _namespace(default_server)
    admin.run("create", "configmap", "settings", "--from-literal=mode=fast", namespace=ns)
    admin.run("create", "secret", "generic", "token", "--from-literal=k=v", namespace=ns)

    denied = bob.run("get", "configmaps", namespace=ns, check=False)
    assert denied.returncode != 0
    assert "Forbidden" in denied.stderr and f'User "{user}" cannot list resource "configmaps"' in denied.stderr

    admin.run("create", "rolebinding", "bob-view", "--clusterrole", "view", "--user", user, namespace=ns)
    assert "settings" in _wait_allowed(bob, "get", "configmaps", "-o", "name", namespace=ns)
    # view reads no Secrets, writes nothing, and the binding is for its namespace only.
    for args, namespace in ((("get", "secrets"), ns), (("create", "configmap", "x"), ns),
                            (("get", "configmaps"), other)):
        refused = bob.run(*args, namespace=namespace, check=False)
        assert refused.returncode != 0 and f'User "{user}" cannot' in refused.stderr, (args, refused.stderr)
