"""The Node authorizer (issue 12): kube's node graph and decisions, fed by the shared informers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.chain.authz.node import Graph, NodeAuthorizer
from kapi.object.nodes import node_identity, pod_secret_names
from kapi.object.access import ALLOW, NO_OPINION, Attributes, UserInfo
from tests.api.conftest import Api, serve_with_informers

Obj = dict[str, Any]
N1 = UserInfo("system:node:n1", "", ("system:nodes", "system:authenticated"))
N2 = UserInfo("system:node:n2", "", ("system:nodes", "system:authenticated"))
NO_NODE_RELATION = "no relationship found between node 'n1' and this object"


def pod(name: str, node: str = "n1", ns: str = "default", uid: str = "", **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "uid": uid or f"uid-{name}"}
    if "annotations" in spec:
        meta["annotations"] = spec.pop("annotations")
    body: Obj = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def res(verb: str, resource: str, name: str = "", *, ns: str = "default", sub: str = "", group: str = "",
        user: UserInfo = N1, fields: str = "") -> Attributes:
    return Attributes(user, verb, True, group, "v1", resource, sub, ns, name, field_selector=fields)


RICH_SPEC: Obj = {
    "serviceAccountName": "runner",
    "imagePullSecrets": [{"name": "pull"}],
    "containers": [{"name": "c", "image": "x",
                    "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
                            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}],
                    "envFrom": [{"secretRef": {"name": "envfrom-secret"}}, {"configMapRef": {"name": "envfrom-cm"}}]}],
    "initContainers": [{"name": "i", "image": "x",
                        "env": [{"name": "C", "valueFrom": {"secretKeyRef": {"name": "init-secret", "key": "k"}}}]}],
    "volumes": [
        {"name": "s", "secret": {"secretName": "vol-secret"}},
        {"name": "c", "configMap": {"name": "vol-cm"}},
        {"name": "p", "projected": {"sources": [{"secret": {"name": "proj-secret"}},
                                                {"configMap": {"name": "proj-cm"}},
                                                {"serviceAccountToken": {"path": "token"}}]}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret"}}},
    ],
}


def authorizer() -> NodeAuthorizer:
    node = NodeAuthorizer()
    node.put_pod(pod("web", **RICH_SPEC))
    node.put_pod(pod("other", node="n2", volumes=[{"name": "s", "secret": {"secretName": "n2-secret"}}]))
    node.graph.add_pv({"metadata": {"name": "pv-data"},
                       "spec": {"claimRef": {"namespace": "default", "name": "data"},
                                "csi": {"driver": "d", "nodePublishSecretRef": {"name": "pv-secret",
                                                                               "namespace": "storage"},
                                        "controllerPublishSecretRef": {"name": "ctrl", "namespace": "storage"}}}})
    return node


@pytest.mark.parametrize("name", ["pull", "env-secret", "envfrom-secret", "init-secret", "vol-secret", "proj-secret",
                                  "csi-secret"])
def test_a_node_reads_the_secrets_of_its_pods(name: str) -> None:
    """Issue 12: every way a pod names a secret (kube's VisitPodSecretNames) lets its node read it."""
    node = authorizer()
    for verb in ("get", "list", "watch"):
        assert node.decide(res(verb, "secrets", name)).decision == ALLOW, verb


@pytest.mark.parametrize("name", ["env-cm", "envfrom-cm", "vol-cm", "proj-cm"])
def test_a_node_reads_the_configmaps_of_its_pods(name: str) -> None:
    assert authorizer().decide(res("get", "configmaps", name)).decision == ALLOW


def test_what_a_node_may_not_read() -> None:
    """Issue 12: secrets of other nodes' pods, unknown ones, writes, lists of all: NoOpinion with kube's reasons."""
    node = authorizer()
    d = node.decide(res("get", "secrets", "n2-secret"))
    assert (d.decision, d.reason) == (NO_OPINION, NO_NODE_RELATION)
    assert node.decide(res("get", "secrets", "n2-secret", user=N2)).decision == ALLOW
    d = node.decide(res("get", "secrets", "nobody-uses-this"))
    assert (d.decision, d.reason) == (NO_OPINION, NO_NODE_RELATION)
    assert node.decide(res("get", "secrets", "pull", ns="kube-system")).decision == NO_OPINION  # namespaced
    d = node.decide(res("update", "secrets", "pull"))
    assert (d.decision, d.reason) == (NO_OPINION, "can only read resources of this type")
    d = node.decide(res("list", "secrets"))
    assert (d.decision, d.reason) == (NO_OPINION, "No Object name found")
    d = node.decide(res("get", "secrets", "pull", ns=""))
    assert d.reason == "can only read namespaced object of this type"
    d = node.decide(res("get", "configmaps", "vol-cm", sub="status"))
    assert d.reason == "cannot read subresource"
    # an unknown node has no vertex at all: the same answer
    d = node.decide(res("get", "secrets", "pull", user=UserInfo("system:node:n9", "", ("system:nodes",))))
    assert d.reason == "no relationship found between node 'n9' and this object"


def test_claims_volumes_and_their_secrets() -> None:
    """pod -> pvc (incl. an ephemeral volume's <pod>-<volume>), pvc <- pv, pv <- its kubelet-visible secrets."""
    node = authorizer()
    assert node.decide(res("get", "persistentvolumeclaims", "data")).decision == ALLOW
    assert node.decide(res("get", "persistentvolumeclaims", "web-scratch")).decision == ALLOW
    assert node.decide(res("get", "persistentvolumes", "pv-data", ns="")).decision == ALLOW
    assert node.decide(res("get", "secrets", "pv-secret", ns="storage")).decision == ALLOW
    assert node.decide(res("get", "secrets", "ctrl", ns="storage")).decision == NO_OPINION  # a controller's
    assert node.decide(res("list", "persistentvolumeclaims")).reason == "can only get individual resources of this type"
    assert node.decide(res("patch", "persistentvolumeclaims", "data", sub="status")).decision == ALLOW
    assert node.decide(res("get", "persistentvolumeclaims", "data", sub="status")).reason == (
        "can only get/update/patch this type")
    assert node.decide(res("get", "persistentvolumes", "pv-data", ns="", user=N2)).decision == NO_OPINION


def test_service_account_tokens_of_its_pods() -> None:
    node = authorizer()
    assert node.decide(res("create", "serviceaccounts", "runner", sub="token")).decision == ALLOW
    assert node.decide(res("create", "serviceaccounts", "default", sub="token")).reason == NO_NODE_RELATION
    assert node.decide(res("get", "serviceaccounts", "runner")).reason == (
        "can only create tokens for individual service accounts")
    assert node.decide(res("create", "serviceaccounts", "runner", user=N2, sub="token")).decision == NO_OPINION


def test_nodes_pods_and_leases() -> None:
    """AuthorizeNodeWithSelectors (kube 1.33): its own Node by name, pods bound to it by field selector."""
    node = authorizer()
    assert node.decide(res("get", "nodes", "n1", ns="")).decision == ALLOW
    assert node.decide(res("watch", "nodes", "n1", ns="")).decision == ALLOW  # metadata.name=n1 names it
    assert node.decide(res("get", "nodes", "n2", ns="")).reason == "node 'n1' cannot read 'n2', only its own Node object"
    assert node.decide(res("list", "nodes", ns="")).reason == "node 'n1' cannot read all nodes, only its own Node object"
    assert node.decide(res("create", "nodes", ns="")).decision == ALLOW
    assert node.decide(res("patch", "nodes", "n1", ns="", sub="status")).decision == ALLOW
    assert node.decide(res("delete", "nodes", "n1", ns="")).decision == NO_OPINION
    assert node.decide(res("get", "pods", "web")).decision == ALLOW
    assert node.decide(res("get", "pods", "other")).reason == NO_NODE_RELATION
    assert node.decide(res("list", "pods", ns="", fields="spec.nodeName=n1")).decision == ALLOW
    assert node.decide(res("watch", "pods", ns="", fields="spec.nodeName==n1")).decision == ALLOW
    assert node.decide(res("list", "pods", ns="", fields="spec.nodeName=n2")).reason == (
        "can only list/watch pods with spec.nodeName field selector")
    assert node.decide(res("list", "pods", ns="", fields="spec.nodeName!=n2")).decision == NO_OPINION
    assert node.decide(res("list", "pods", ns="")).decision == NO_OPINION
    assert node.decide(res("patch", "pods", "web", sub="status")).decision == ALLOW
    assert node.decide(res("create", "pods", "web", sub="eviction")).decision == ALLOW
    assert node.decide(res("get", "pods", "web", sub="log")).decision == NO_OPINION
    lease = dict(group="coordination.k8s.io", ns="kube-node-lease")
    assert node.decide(res("update", "leases", "n1", **lease)).decision == ALLOW
    assert node.decide(res("create", "leases", **lease)).decision == ALLOW
    assert node.decide(res("update", "leases", "n2", **lease)).reason == (
        "can only access node lease with the same name as the requesting node")
    assert node.decide(res("get", "leases", "n1", group="coordination.k8s.io")).reason == (
        'can only access leases in the "kube-node-lease" system namespace')
    assert node.decide(res("list", "leases", **lease)).decision == NO_OPINION


def test_static_node_rules_and_who_is_a_node() -> None:
    node = authorizer()
    assert node.decide(res("list", "services", ns="")).decision == ALLOW  # system:node's static rules
    assert node.decide(res("create", "events")).decision == ALLOW
    assert node.decide(res("create", "tokenreviews", ns="", group="authentication.k8s.io")).decision == ALLOW
    assert node.decide(res("list", "deployments", ns="", group="apps")).decision == NO_OPINION
    # not a node: no opinion, whatever the name says
    assert node_identity(UserInfo("system:node:n1", "", ("system:authenticated",))) == ("", False)
    assert node.decide(res("get", "secrets", "pull", user=UserInfo("alice"))) .decision == NO_OPINION
    d = node.decide(res("get", "secrets", "pull", user=UserInfo("system:node:", "", ("system:nodes",))))
    assert (d.decision, d.reason) == (NO_OPINION, 'unknown node for user "system:node:"')
    assert node.rules_for(N1, "default").incomplete
    assert not node.rules_for(UserInfo("alice"), "default").incomplete
    assert any(r.get("resources") == ["serviceaccounts/token"] for r in node.node_rules)


def test_mirror_pods_grant_nothing_beyond_themselves() -> None:
    node = NodeAuthorizer()
    node.put_pod(pod("static", annotations={"kubernetes.io/config.mirror": "x"},
                     volumes=[{"name": "s", "secret": {"secretName": "grab"}}]))
    assert node.decide(res("get", "pods", "static")).decision == ALLOW
    assert node.decide(res("get", "secrets", "grab")).decision == NO_OPINION


def test_graph_changes() -> None:
    """Deleting a pod takes its edges and orphaned vertices; a rebinding (new uid) replaces its edges."""
    node = NodeAuthorizer()
    node.put_pod(pod("a", volumes=[{"name": "s", "secret": {"secretName": "shared"}}]))
    node.put_pod(pod("b", volumes=[{"name": "s", "secret": {"secretName": "shared"}}]))
    node.put_pod(pod("pending", node=""))  # not bound: not in the graph
    assert ("pod", "default", "pending") not in node.graph.out
    assert node.decide(res("get", "secrets", "shared")).decision == ALLOW
    node.remove_pod("default", "a")
    assert node.decide(res("get", "secrets", "shared")).decision == ALLOW  # b still uses it
    node.remove_pod("default", "b")
    assert node.decide(res("get", "secrets", "shared")).decision == NO_OPINION
    assert node.graph.out == {} and node.graph.into == {} and node.graph.dest_count == {}
    node.put_pod(pod("c", volumes=[{"name": "s", "secret": {"secretName": "first"}}]))
    # the same pod (name and uid) updated: its references are immutable once bound, nothing is redone
    node.put_pod(pod("c", volumes=[{"name": "s", "secret": {"secretName": "second"}}]))
    assert node.decide(res("get", "secrets", "second")).decision == NO_OPINION
    # recreated (a new uid) on another node
    node.put_pod(pod("c", node="n2", uid="uid-2", volumes=[{"name": "s", "secret": {"secretName": "second"}}]))
    assert node.decide(res("get", "secrets", "first")).decision == NO_OPINION
    assert node.decide(res("get", "secrets", "second", user=N2)).decision == ALLOW
    assert node.decide(res("get", "pods", "c")).decision == NO_OPINION


def test_a_pv_rebound_moves_its_secret() -> None:
    g = Graph()
    node = NodeAuthorizer(graph=g)
    node.put_pod(pod("db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "db"}}]))
    pv = {"metadata": {"name": "pv1"}, "spec": {"claimRef": {"namespace": "default", "name": "db"},
                                                "rbd": {"secretRef": {"name": "ceph"}}}}
    g.add_pv(pv)
    assert node.decide(res("get", "secrets", "ceph")).decision == ALLOW  # the claim's namespace by default
    g.add_pv({"metadata": {"name": "pv1"}, "spec": {"rbd": {"secretRef": {"name": "ceph"}}}})  # released
    assert node.decide(res("get", "secrets", "ceph")).decision == NO_OPINION
    assert node.decide(res("get", "persistentvolumes", "pv1", ns="")).decision == NO_OPINION


def test_pod_secret_names_skip_empty_names() -> None:
    assert pod_secret_names({"imagePullSecrets": [{"name": ""}, {}], "volumes": [{"name": "x", "secret": {}}]}) == []


# ------------------------------------------------------------------ fed by the shared informers, over the API


@pytest.fixture
async def node_api(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Api]:
    """A server with --authorization-mode Node,RBAC whose token file has kubelets n1 and n2."""
    yield await serve_with_informers(nursery, tmp_path, ("Node", "RBAC"), 'n1-token,system:node:n1,,"system:nodes"\n'
                                     'n2-token,system:node:n2,,"system:nodes"\n', admin_token="admin-token")


async def _status(api: Api, path: str, token: str) -> int:
    return (await api.request("GET", path, token=token)).status


async def _until(api: Api, path: str, token: str, status: int) -> None:
    with trio.fail_after(10):
        while await _status(api, path, token) != status:
            await trio.sleep(0.01)


async def test_the_informers_feed_the_node_graph(node_api: Api) -> None:
    """Issue 12: a kubelet reads what its pods reference once they are bound, and nothing else of those kinds."""
    api, admin = node_api, "admin-token"
    for name in ("app-secret", "unused"):
        r = await api.create("/api/v1/namespaces/default/secrets", {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {}}, token=admin)
        assert r.status == 201, r.json()
    secret = "/api/v1/namespaces/default/secrets/app-secret"
    r = await api.request("GET", secret, token="n1-token")
    assert r.status == 403
    assert r.json()["message"] == (
        'secrets "app-secret" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" '
        f'in the namespace "default": {NO_NODE_RELATION}')
    r = await api.create("/api/v1/namespaces/default/pods", pod(
        "app", volumes=[{"name": "s", "secret": {"secretName": "app-secret"}}]), token=admin)
    assert r.status == 201, r.json()
    await _until(api, secret, "n1-token", 200)
    # updates of the bound pod (its labels, its status) leave its edges as they are
    r = await api.request("PATCH", "/api/v1/namespaces/default/pods/app", {"metadata": {"labels": {"a": "b"}}},
                          token=admin, content_type="application/merge-patch+json")
    assert r.status == 200, r.json()
    assert await _status(api, secret, "n1-token") == 200
    assert await _status(api, secret, "n2-token") == 403
    assert await _status(api, "/api/v1/namespaces/default/secrets/unused", "n1-token") == 403
    assert await _status(api, "/api/v1/namespaces/default/secrets", "n1-token") == 403  # no list of all
    # its own Node (by name, before it exists: 404 not 403), pods by field selector, not all pods
    assert await _status(api, "/api/v1/nodes/n1", "n1-token") == 404
    assert await _status(api, "/api/v1/nodes/n2", "n1-token") == 403
    assert await _status(api, "/api/v1/nodes?fieldSelector=metadata.name%3Dn1", "n1-token") == 200
    assert await _status(api, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", "n1-token") == 200
    assert await _status(api, "/api/v1/pods", "n1-token") == 403
    assert await _status(api, "/api/v1/namespaces/default/pods/app", "n1-token") == 200
    assert await _status(api, "/api/v1/namespaces/default/pods/app", "n2-token") == 403
    r = await api.request("DELETE", "/api/v1/namespaces/default/pods/app?gracePeriodSeconds=0", token=admin)
    assert r.status == 200, r.json()
    await _until(api, secret, "n1-token", 403)


class _Item:
    """An informer Item stand-in that counts decodes."""

    def __init__(self, obj: Obj) -> None:
        self.obj, self.namespace, self.name, self.decoded = obj, obj["metadata"]["namespace"], obj["metadata"]["name"], 0

    def metadata(self) -> Obj:
        return self.obj["metadata"]

    def object(self) -> Obj:
        self.decoded += 1
        return self.obj


def test_updates_of_a_bound_pod_are_not_decoded() -> None:
    """A status update of a bound pod (same uid) is not decoded again; a pod bound by the update is."""
    node = NodeAuthorizer()
    pending = _Item(pod("p", node=""))
    node._pod_updated(pending)
    assert pending.decoded == 1 and node.decide(res("get", "pods", "p")).decision == NO_OPINION
    bound = _Item(pod("p"))
    node._pod_updated(bound)
    assert bound.decoded == 1 and node.decide(res("get", "pods", "p")).decision == ALLOW
    again = _Item(pod("p"))
    node._pod_updated(again)
    assert again.decoded == 0
    recreated = _Item(pod("p", node="n2", uid="other"))
    node._pod_updated(recreated)
    assert recreated.decoded == 1 and node.decide(res("get", "pods", "p", user=N2)).decision == ALLOW
