"""NodeRestriction under ``kapi serve`` (--enable-admission-plugins NodeRestriction, the default
--authorization-mode Node,RBAC): a kubelet registers its own Node (tainted not-ready by
TaintNodesByCondition), renews its own Lease, and is refused another's Node, a restricted label and a
pod that is not a mirror pod, with kube's messages."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from tests.e2e.conftest import Server, start_server, stop_server

pytestmark = pytest.mark.e2e
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def kubelet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("kapi-node")
    tokens = data / "tokens.csv"
    tokens.write_text('n1-token,system:node:n1,,"system:nodes"\n')
    srv = start_server(data, "--token-auth-file", str(tokens), "--enable-admission-plugins", "NodeRestriction")
    yield srv
    stop_server(srv)


def send(srv: Server, method: str, path: str, body: Any = None, *, patch: bool = False) -> tuple[int, Any]:
    headers = {"Content-Type": "application/merge-patch+json"} if patch else JSON
    status, _, raw = srv.request(method, path, json.dumps(body).encode() if body is not None else None, headers,
                                 token="n1-token")
    return status, json.loads(raw) if raw else None


def test_a_kubelet_under_kapi_serve(kubelet_server: Server) -> None:
    srv = kubelet_server
    status, node = send(srv, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n1", "labels": {"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux"}}})
    assert status == 201, node
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in node["spec"]["taints"]
    status, out = send(srv, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    assert status == 403 and out["message"] == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    status, out = send(srv, "PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {
        "node-restriction.kubernetes.io/trusted": "yes"}}}, patch=True)
    assert status == 403
    assert out["message"] == ('nodes "n1" is forbidden: is not allowed to modify labels: '
                              "node-restriction.kubernetes.io/trusted")
    status, out = send(srv, "PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {"kubernetes.io/os": "windows"}}},
                       patch=True)
    assert status == 200, out
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n1"},
             "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}
    status, out = send(srv, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease)
    assert status == 201, out
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}
    status, out = send(srv, "POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 403, out
    assert out["message"] == ('pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, '
                              'node "n1" can only create mirror pods')
