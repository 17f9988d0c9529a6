"""Issue 12: kubectl 1.33 and 1.27 ``auth can-i [--list] --as=...`` against ``--authorization-mode Node,RBAC``.

The admin (system:masters) impersonates the user asked about; the SelfSubjectAccessReview and
SelfSubjectRulesReview kubectl sends are answered by RBAC from bindings this test makes, so the
answers are RBAC's own (the bootstrap policy is not relied on: the test binds the reviews and
discovery itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from .conftest import Kubectl, Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SA = "system:serviceaccount:team:builder"
MODES = "Node,RBAC"


def _post(server: Server, path: str, obj: dict[str, object]) -> None:
    status, _, text = server.request("POST", path, json.dumps(obj).encode(), {"Content-Type": "application/json"})
    assert status in (201, 409), text


def _cluster_role(name: str, rules: list[dict[str, object]]) -> dict[str, object]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": rules}


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, str]],
             namespace: str = "") -> dict[str, object]:
    md = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": md,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects}


@pytest.fixture(scope="module")
def rbac_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kapi-rbac"), "--authorization-mode", MODES)
    try:
        for ns in ("team", "other"):
            _post(srv, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # What every authenticated user needs to ask kubectl's questions: the reviews and discovery.
        _post(srv, f"{RBAC}/clusterroles", _cluster_role("test:reviews", [
            {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
            {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/version"]}]))
        _post(srv, f"{RBAC}/clusterrolebindings", _binding(
            "ClusterRoleBinding", "test:reviews", "ClusterRole", "test:reviews",
            [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}]))
        _post(srv, "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "pod-reader", "namespace": "team"},
            "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]},
                      {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": ["settings"]}]})
        _post(srv, f"{RBAC}/namespaces/team/rolebindings", _binding(
            "RoleBinding", "readers", "Role", "pod-reader",
            [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
             {"kind": "ServiceAccount", "name": "builder"}], "team"))
        yield srv
    finally:
        stop_server(srv)


@pytest.fixture(params=["1.33", "1.27"])
def kubectl(request: pytest.FixtureRequest, rbac_server: Server, tmp_path: Path) -> Kubectl:
    path = kubectl_binary(request.param)
    return Kubectl(path, rbac_server, request.param)


def can_i(kubectl: Kubectl, tmp_path: Path, *args: str) -> tuple[int, str]:
    proc = kubectl.run("auth", "can-i", *args, "--cache-dir", str(tmp_path / "cache"), check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, proc.stdout.strip()


CASES = [
    # (arguments, the answer)
    (("list", "pods", "-n", "team", "--as", "alice"), "yes"),
    (("get", "pods", "--subresource", "log", "-n", "team", "--as", "alice"), "yes"),
    (("delete", "pods", "-n", "team", "--as", "alice"), "no"),
    (("list", "secrets", "-n", "team", "--as", "alice"), "no"),
    (("list", "pods", "-n", "other", "--as", "alice"), "no"),  # a namespace binding stays in its namespace
    (("list", "pods", "--all-namespaces", "--as", "alice"), "no"),
    (("get", "configmaps/settings", "-n", "team", "--as", "alice"), "yes"),  # resourceNames
    (("get", "configmaps/other", "-n", "team", "--as", "alice"), "no"),
    (("watch", "pods", "-n", "team", "--as", SA), "yes"),  # the ServiceAccount subject, its namespace the binding's
    (("list", "pods", "-n", "other", "--as", SA), "no"),
    (("list", "pods", "-n", "team", "--as", "bob"), "no"),
    (("get", "/version", "--as", "bob"), "yes"),  # a non-resource URL through the group binding
    (("get", "/metrics", "--as", "bob"), "no"),
    (("create", "deployments.apps", "-n", "team"), "yes"),  # the admin itself
]


@pytest.mark.parametrize(("args", "answer"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_can_i(kubectl: Kubectl, tmp_path: Path, args: tuple[str, ...], answer: str) -> None:
    code, out = can_i(kubectl, tmp_path, *args)
    assert out.split()[0] == answer, out
    assert code == (0 if answer == "yes" else 1)


def test_can_i_list(kubectl: Kubectl, tmp_path: Path) -> None:
    """``--list`` prints the rules RBAC holds for the user in the namespace (a SelfSubjectRulesReview)."""
    code, out = can_i(kubectl, tmp_path, "--list", "-n", "team", "--as", "alice")
    assert code == 0, out
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert rows[0].startswith("Resources Non-Resource URLs Resource Names Verbs"), out
    assert "pods [] [] [get list watch]" in rows, out
    assert "pods/log [] [] [get list watch]" in rows, out
    assert "configmaps [] [settings] [get]" in rows, out
    assert "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]" in rows, out
    assert "[/version] [] [get]" in rows, out  # no resource: the first column is blank
    # In another namespace only the cluster-wide binding's rules are left.
    code, out = can_i(kubectl, tmp_path, "--list", "-n", "other", "--as", "alice")
    assert code == 0 and "pods" not in out and "selfsubjectrulesreviews.authorization.k8s.io" in out, out
    # The service account's view of its own namespace.
    code, out = can_i(kubectl, tmp_path, "--list", "-n", "team", "--as", SA)
    assert code == 0 and any(" ".join(line.split()) == "pods [] [] [get list watch]"
                             for line in out.splitlines()), out
