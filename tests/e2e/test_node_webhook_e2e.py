"""The Node and Webhook authorizers and webhook token authentication in a real ``kapi serve``, with kubectl 1.33 (issue 12)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.chain.test_webhooks import Webhook, make_pki, review, write_kubeconfig

from .conftest import Kubectl, Server, start_server, stop_server
from .test_kubeconfig_e2e import as_user, mint

pytestmark = pytest.mark.e2e

JSON = {"Content-Type": "application/json"}


def _create(server: Server, path: str, obj: dict[str, Any]) -> None:
    status, _, body = server.request("POST", path, json.dumps(obj).encode(), JSON)
    assert status == 201, body


def _eventually(kc: Kubectl, *args: str) -> str:
    """kubectl ``args`` until it succeeds (the informers feeding the authorizer follow writes within moments)."""
    deadline = time.monotonic() + 20
    while True:
        proc = kc.run(*args, check=False)
        if proc.returncode == 0 or time.monotonic() > deadline:
            assert proc.returncode == 0, proc.stderr
            return proc.stdout
        time.sleep(0.1)


@pytest.fixture(scope="module")
def node_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kapi-node"), "--authorization-mode", "Node,RBAC")
    yield srv
    stop_server(srv)


def test_a_kubelet_reads_what_its_pods_reference(node_server: Server, tmp_path: Path) -> None:
    """Issue 12: a kubelet's certificate (system:node:n1 in system:nodes) reads the secret its pod mounts, its
    own Node, its pods by field selector; not another secret, not all pods."""
    srv = node_server
    for name in ("app-secret", "someone-elses"):
        _create(srv, "/api/v1/namespaces/default/secrets",
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"k": "v"}})
    _create(srv, "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox",
                                                   "envFrom": [{"secretRef": {"name": "app-secret"}}]}]}})
    kc = as_user("1.33", srv, mint(srv, tmp_path / "n1.kubeconfig", "system:node:n1", "system:nodes"))
    out = _eventually(kc, "get", "secret", "app-secret", "-n", "default", "-o", "json")
    assert json.loads(out)["data"] == {"k": "dg=="}
    denied = kc.run("get", "secret", "someone-elses", "-n", "default", check=False)
    assert denied.returncode != 0
    assert ('secrets "someone-elses" is forbidden: User "system:node:n1" cannot get resource "secrets" in API '
            'group "" in the namespace "default": no relationship found between node \'n1\' and this object'
            ) in denied.stderr
    assert kc.run("auth", "can-i", "get", "secret/app-secret", "-n", "default").stdout.strip() == "yes"
    assert kc.run("auth", "can-i", "get", "secret/someone-elses", "-n", "default", check=False
                  ).stdout.strip() == "no - no relationship found between node 'n1' and this object"
    pods = json.loads(kc.run("get", "pods", "-A", "--field-selector", "spec.nodeName=n1", "-o", "json").stdout)
    assert [p["metadata"]["name"] for p in pods["items"]] == ["app"]
    assert "can only list/watch pods with spec.nodeName field selector" in kc.run(
        "get", "pods", "-A", check=False).stderr
    assert "NotFound" in kc.run("get", "node", "n1", check=False).stderr  # its own Node: allowed, not there yet
    assert "node 'n1' cannot read 'n2', only its own Node object" in kc.run("get", "node", "n2", check=False).stderr


def token_kubeconfig(server: Server, path: Path, token: str) -> Path:
    """A kubeconfig for ``server`` whose user is only a bearer token."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "kapi", "cluster": {"server": server.url, "certificate-authority": str(server.ca_file)}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "kapi", "user": "u"}}]}))
    return path


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[Webhook]:
    hook = Webhook(make_pki(tmp_path / "pki"), answer=review)
    hook.start()
    yield hook
    hook.stop()


def test_webhook_authorizer_and_token_webhook(webhook: Webhook, tmp_path: Path) -> None:
    """Issue 12: --authentication-token-webhook-config-file makes kubectl's token a user, and the Webhook mode
    (after RBAC, which has no opinion) decides what it may do."""
    kubeconfig = write_kubeconfig(tmp_path / "pki" / "webhook.kubeconfig", webhook.url, webhook.pki)
    srv = start_server(tmp_path / "kapi", "--authorization-mode", "RBAC,Webhook",
                       "--authorization-webhook-config-file", str(kubeconfig),
                       "--authentication-token-webhook-config-file", str(kubeconfig))
    try:
        jane = as_user("1.33", srv, token_kubeconfig(srv, tmp_path / "jane.kubeconfig", "good"))
        whoami = json.loads(jane.run("auth", "whoami", "-o", "json").stdout)
        assert whoami["status"]["userInfo"] == {"username": "jane", "uid": "j-1",
                                                "groups": ["ops", "system:authenticated"], "extra": {"team": ["blue"]}}
        assert jane.run("get", "pods", "-n", "default").returncode == 0
        denied = jane.run("get", "secrets", "-n", "default", check=False)
        assert 'User "jane" cannot list resource "secrets"' in denied.stderr and "ask the ops team" in denied.stderr
        bad = as_user("1.33", srv, token_kubeconfig(srv, tmp_path / "bad.kubeconfig", "bad"))
        assert "Unauthorized" in bad.run("get", "pods", check=False).stderr
        reviews = [s.body for s in webhook.seen]
        assert {"TokenReview", "SubjectAccessReview"} <= {r["kind"] for r in reviews}
        sar = next(r for r in reviews if r["kind"] == "SubjectAccessReview")
        assert sar["apiVersion"] == "authorization.k8s.io/v1beta1" and sar["spec"]["user"] == "jane"
    finally:
        stop_server(srv)
