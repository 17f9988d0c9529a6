"""Issue 12: a real ``kapi serve --authorization-mode Node,RBAC`` reconciles the bootstrap policy at
every start (recreating what was deleted, leaving ``autoupdate: "false"`` objects alone), aggregates
admin/edit/view, and kubectl 1.33 sees kube's escalation refusals."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e

GROUP = "rbac.authorization.k8s.io"
CR = f"/apis/{GROUP}/v1/clusterroles"
JSON = {"Content-Type": "application/json"}


def _get(server: Server, path: str) -> Any:
    status, _, body = server.request("GET", path)
    assert status == 200, body
    return json.loads(body)


def _until_rules(server: Server, name: str) -> list[Any]:
    deadline = time.monotonic() + 30
    while True:
        rules = _get(server, f"{CR}/{name}").get("rules") or []
        if rules or time.monotonic() > deadline:
            return rules
        time.sleep(0.05)


def test_the_policy_survives_restarts_as_kube_reconciles_it(tmp_path: Path) -> None:
    data = tmp_path / "kapi"
    srv = start_server(data, "--authorization-mode", "Node,RBAC")
    try:
        names = {r["metadata"]["name"] for r in _get(srv, CR)["items"]}
        assert {"cluster-admin", "admin", "edit", "view", "system:public-info-viewer",
                "system:controller:generic-garbage-collector"} <= names
        assert _until_rules(srv, "view"), "view was never aggregated"
        # opt one role out of reconciliation and change it; delete another
        mine = _get(srv, f"{CR}/system:heapster")
        mine["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = "false"
        mine["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
        status, _, body = srv.request("PUT", f"{CR}/system:heapster", json.dumps(mine).encode(), JSON)
        assert status == 200, body
        status, _, body = srv.request("DELETE", f"{CR}/system:basic-user")
        assert status == 200, body
        # anonymous may check health, not list the API
        assert srv.request("GET", "/healthz", token="")[0] == 200
        assert srv.request("GET", "/api", token="")[0] == 403
    finally:
        stop_server(srv)
    srv = start_server(data, "--authorization-mode", "Node,RBAC")
    try:
        assert _get(srv, f"{CR}/system:heapster")["rules"] == [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
        basic = _get(srv, f"{CR}/system:basic-user")
        assert basic["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
        assert {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
                "verbs": ["create"]} in basic["rules"]
    finally:
        stop_server(srv)


def test_kubectl_sees_kubes_escalation_refusal(tmp_path: Path) -> None:
    binary = kubectl_binary("1.33")
    import subprocess

    srv = start_server(tmp_path / "kapi", "--authorization-mode", "Node,RBAC")

    def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([binary, "--kubeconfig", str(srv.kubeconfig), *args], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    try:
        kubectl("create", "namespace", "demo")
        kubectl("-n", "demo", "create", "rolebinding", "alice-admin", "--clusterrole", "admin", "--user", "alice")
        deadline = time.monotonic() + 30
        while kubectl("-n", "demo", "auth", "can-i", "create", "rolebindings", "--as", "alice",
                      check=False).stdout.strip() != "yes":
            assert time.monotonic() < deadline, "the binding never took effect"
            time.sleep(0.05)
        kubectl("-n", "demo", "create", "rolebinding", "carol-view", "--clusterrole", "view", "--user", "carol",
                "--as", "alice")
        refused = kubectl("-n", "demo", "create", "rolebinding", "carol-root", "--clusterrole", "cluster-admin",
                          "--user", "carol", "--as", "alice", check=False)
        assert refused.returncode != 0
        assert ('rolebindings.rbac.authorization.k8s.io "carol-root" is forbidden: user "alice" '
                '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
                '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}') \
            in refused.stderr
        refused = kubectl("-n", "demo", "create", "role", "node-reader", "--verb", "get", "--resource", "nodes",
                          "--as", "alice", check=False)
        assert refused.returncode != 0
        assert ('roles.rbac.authorization.k8s.io "node-reader" is forbidden: user "alice" '
                '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
                '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}') in refused.stderr
    finally:
        stop_server(srv)
