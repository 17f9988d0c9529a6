"""NodeRestriction (kube's plugin/pkg/admission/noderestriction, 1.33): what a kubelet may write, with
kube's messages; the plugin called directly over a registry, then once through the served API with
--authorization-mode Node,RBAC and --enable-admission-plugins NodeRestriction."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kapi import errors
from kapi.admission.plugin import Attributes, Objects, PluginDeps
from kapi.admission.plugins.noderestriction import NodeRestriction, forbidden_labels, is_kubelet_label
from kapi.apis import BUILTIN
from kapi.object.access import ALLOW, NO_OPINION, Attributes as AccessAttributes, Decision, UserInfo
from kapi.registry.admit import CREATE, DELETE, UPDATE, AdmissionRequest
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]
N1 = UserInfo("system:node:n1", "", ("system:nodes", "system:authenticated"))
ADMIN = UserInfo("admin", "", ("system:masters",))


class Access:
    """An authorizer allowing what ``allowed`` lists as (verb, resource, name)."""

    def __init__(self) -> None:
        self.allowed: set[tuple[str, str, str]] = set()
        self.asked: list[AccessAttributes] = []

    async def authorize(self, attrs: AccessAttributes) -> Decision:
        self.asked.append(attrs)
        return Decision(ALLOW if (attrs.verb, attrs.resource, attrs.name) in self.allowed else NO_OPINION)


class Env:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.access = Access()
        self.plugin = NodeRestriction(PluginDeps(registry, Objects(registry, None), access=self.access))  # type: ignore[arg-type]

    def res(self, group: str, resource: str) -> Any:
        found = next(r for r in self.registry.table.resources if r.group == group and r.resource == resource)
        return found

    async def put(self, group: str, resource: str, namespace: str, obj: Obj) -> Obj:
        return await self.registry.create(self.res(group, resource), namespace, obj, WriteOptions())

    async def admit(self, op: str, resource: str, obj: Obj | None, old: Obj | None = None, *, group: str = "",
                    sub: str = "", ns: str = "default", name: str = "", user: UserInfo = N1,
                    kind: tuple[str, str, str] = ("", "", "")) -> None:
        if not name:
            name = str(((obj or old or {}).get("metadata") or {}).get("name") or "")
        req = AdmissionRequest(op, self.res(group, resource), sub, ns, name, obj, old, False, kind)
        a = Attributes(req, user, {}, [])
        await self.plugin.admit(a)
        await self.plugin.validate(a)

    async def refused(self, message: str, *args: Any, **kw: Any) -> errors.StatusError:
        with pytest.raises(errors.StatusError) as info:
            await self.admit(*args, **kw)
        assert info.value.code == 403, info.value
        assert str(info.value).endswith(f"is forbidden: {message}"), str(info.value)
        return info.value


@pytest.fixture
async def env(nursery: trio.Nursery) -> Env:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    e = Env(registry)
    for ns in ("default", "kube-node-lease"):
        await e.put("", "namespaces", "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return e


def pod(name: str, node: str = "n1", **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": "default"}
    for key in ("annotations", "ownerReferences", "labels"):
        if key in spec:
            meta[key] = spec.pop(key)
    body: Obj = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def node(name: str, **spec: Any) -> Obj:
    labels = spec.pop("labels", None)
    out: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec}
    if labels is not None:
        out["metadata"]["labels"] = labels
    return out


async def test_other_users_and_nameless_nodes(env: Env) -> None:
    await env.admit(DELETE, "nodes", None, name="n2", user=ADMIN)  # not a node: not its business
    await env.admit(DELETE, "nodes", None, name="n2", user=UserInfo("system:node:n1"))  # not in system:nodes
    await env.refused('could not determine node from user "system:node:"', CREATE, "configmaps",
                      {"metadata": {"name": "x"}}, user=UserInfo("system:node:", groups=("system:nodes",)))


async def test_mirror_pods(env: Env) -> None:
    n1 = await env.put("", "nodes", "", node("n1"))
    uid = n1["metadata"]["uid"]
    owner = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid, "controller": True}
    mirror = {"kubernetes.io/config.mirror": "hash"}
    await env.admit(CREATE, "pods", pod("ok", annotations=mirror, ownerReferences=[owner]))
    await env.refused('pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror '
                      "pods", CREATE, "pods", pod("p", ownerReferences=[owner]))
    await env.refused('node "n1" can only create pods with spec.nodeName set to itself', CREATE, "pods",
                      pod("p", node="n2", annotations=mirror, ownerReferences=[owner]))
    await env.refused('node "n1" can only create pods with an owner reference set to itself', CREATE, "pods",
                      pod("p", annotations=mirror))
    await env.refused('node "n1" can only create pods with a single owner reference set to itself', CREATE, "pods",
                      pod("p", annotations=mirror, ownerReferences=[owner, owner]))
    await env.refused('node "n1" can only create pods with an owner reference set to itself', CREATE, "pods",
                      pod("p", annotations=mirror, ownerReferences=[{**owner, "name": "n2"}]))
    await env.refused('node "n1" can only create pods with a controller owner reference set to itself', CREATE,
                      "pods", pod("p", annotations=mirror, ownerReferences=[{**owner, "controller": False}]))
    await env.refused('node "n1" must not set blockOwnerDeletion on an owner reference', CREATE, "pods",
                      pod("p", annotations=mirror, ownerReferences=[{**owner, "blockOwnerDeletion": True}]))
    await env.refused(f"node n1 UID mismatch: expected other got {uid}", CREATE, "pods",
                      pod("p", annotations=mirror, ownerReferences=[{**owner, "uid": "other"}]))
    for spec, what in (({"serviceAccountName": "sa"}, "a service account"),
                       ({"imagePullSecrets": [{"name": "s"}]}, "secrets"),
                       ({"volumes": [{"name": "v", "configMap": {"name": "c"}}]}, "configmaps"),
                       ({"volumes": [{"name": "v", "projected": {"sources": [
                           {"clusterTrustBundle": {"name": "b", "path": "p"}}]}}]}, "clustertrustbundles"),
                       ({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]},
                        "persistentvolumeclaims")):
        await env.refused(f'node "n1" can not create pods that reference {what}', CREATE, "pods",
                          pod("p", annotations=mirror, ownerReferences=[owner], **spec))


async def test_mirror_pod_of_a_missing_node_is_404(env: Env) -> None:
    owner = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u", "controller": True}
    with pytest.raises(errors.NotFound):
        await env.admit(CREATE, "pods", pod("p", annotations={"kubernetes.io/config.mirror": "h"},
                                            ownerReferences=[owner]))


async def test_pod_delete_status_eviction(env: Env) -> None:
    mine = await env.put("", "pods", "default", pod("mine"))
    theirs = await env.put("", "pods", "default", pod("theirs", node="n2"))
    await env.admit(DELETE, "pods", None, name="mine")
    await env.refused('node "n1" can only delete pods with spec.nodeName set to itself', DELETE, "pods", None,
                      name="theirs")
    with pytest.raises(errors.NotFound):
        await env.admit(DELETE, "pods", None, name="gone")
    await env.refused('unexpected operation "UPDATE", node "n1" can only create and delete mirror pods', UPDATE,
                      "pods", mine, mine)
    # status
    changed = {**mine, "status": {"phase": "Running"}}
    await env.admit(UPDATE, "pods", changed, mine, sub="status")
    await env.refused('node "n1" can only update pod status for pods with spec.nodeName set to itself', UPDATE,
                      "pods", theirs, theirs, sub="status")
    relabeled = {**mine, "metadata": {**mine["metadata"], "labels": {"a": "b"}}}
    await env.refused('node "n1" cannot update labels through pod status', UPDATE, "pods", relabeled, mine,
                      sub="status")
    claimed = {**mine, "status": {"resourceClaimStatuses": [{"name": "c", "resourceClaimName": "x"}]}}
    await env.refused('node "n1" cannot update resource claim statues', UPDATE, "pods", claimed, mine, sub="status")
    # eviction
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "mine"}}
    await env.admit(CREATE, "pods", eviction, sub="eviction", name="mine", kind=("policy", "v1", "Eviction"))
    await env.refused("node n1 can only evict pods with spec.nodeName set to itself", CREATE, "pods",
                      {**eviction, "metadata": {"name": "theirs"}}, sub="eviction", name="theirs")
    await env.refused("unexpected pod subresource \"binding\", only 'status' and 'eviction' are allowed", CREATE,
                      "pods", {"metadata": {"name": "mine"}}, sub="binding", name="mine")


async def test_own_node_labels_taints_config_source(env: Env) -> None:
    await env.admit(CREATE, "nodes", node("n1", labels={"kubernetes.io/hostname": "n1", "example.com/x": "y",
                                                         "node.kubernetes.io/pool": "a",
                                                         "foo.kubelet.kubernetes.io/z": "1"}))
    await env.refused('node "n1" is not allowed to modify node "n2"', CREATE, "nodes", node("n2"))
    await env.refused('node "n1" is not allowed to modify node "n2"', DELETE, "nodes", None, name="n2")
    await env.refused('node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/a, '
                      "node-role.kubernetes.io/master", CREATE, "nodes",
                      node("n1", labels={"node-restriction.kubernetes.io/a": "", "node-role.kubernetes.io/master": ""}))
    await env.refused('node "n1" is not allowed to create pods with a non-nil configSource', CREATE, "nodes",
                      node("n1", configSource={"configMap": {}}))
    old = node("n1", taints=[{"key": "k", "effect": "NoSchedule"}], labels={"kubernetes.io/os": "linux"})
    await env.admit(UPDATE, "nodes", node("n1", taints=[{"key": "k", "effect": "NoSchedule"}],
                                          labels={"kubernetes.io/os": "windows", "team": "a"}), old)
    await env.refused('node "n1" is not allowed to modify taints', UPDATE, "nodes",
                      node("n1", labels={"kubernetes.io/os": "linux"}), old, sub="status")
    await env.refused("is not allowed to modify labels: k8s.io/a", UPDATE, "nodes",
                      node("n1", taints=[{"key": "k", "effect": "NoSchedule"}],
                           labels={"kubernetes.io/os": "linux", "k8s.io/a": "b"}), old)
    await env.refused('node "n1" is not allowed to update configSource to a new non-nil configSource', UPDATE,
                      "nodes", node("n1", configSource={"configMap": {}}), node("n1"))
    # an old kubelet dropping the field is fine
    await env.admit(UPDATE, "nodes", node("n1"), node("n1", configSource={"configMap": {}}))


def test_label_rules() -> None:
    assert is_kubelet_label("kubernetes.io/arch") and is_kubelet_label("x.node.kubernetes.io/y")
    assert not is_kubelet_label("node-role.kubernetes.io/worker")
    assert forbidden_labels({"a.k8s.io/b", "example.com/c", "kubernetes.io/hostname", "x.node-restriction."
                             "kubernetes.io/y"}) == ["a.k8s.io/b", "x.node-restriction.kubernetes.io/y"]


async def test_pvc_status(env: Env) -> None:
    old = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "c", "namespace": "default", "resourceVersion": "5"},
           "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound"}}
    new = {**old, "metadata": {"name": "c", "namespace": "default"},
           "status": {"phase": "Bound", "capacity": {"storage": "2Gi"}, "conditions": [{"type": "Resizing",
                                                                                         "status": "True"}],
                      "allocatedResources": {"storage": "2Gi"}}}
    await env.admit(UPDATE, "persistentvolumeclaims", new, old, sub="status")
    with pytest.raises(errors.StatusError) as info:
        await env.admit(UPDATE, "persistentvolumeclaims", {**new, "status": {"phase": "Lost"}}, old, sub="status")
    assert 'node "n1" is not allowed to update fields other than status.quantity and status.conditions: ' \
        '.status.phase: "Bound" -> "Lost"' in str(info.value)
    await env.refused("may only update PVC status", UPDATE, "persistentvolumeclaims", new, old)


def token_request(pod_name: str, uid: str, *audiences: str) -> Obj:
    spec: Obj = {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid}}
    if audiences:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


async def test_service_account_tokens(env: Env) -> None:
    volumes = [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "audience": "vault"}},
                                                       {"serviceAccountToken": {"path": "k"}}]}},
               {"name": "c", "csi": {"driver": "secrets.csi.io"}}]
    mine = await env.put("", "pods", "default", pod("mine", serviceAccountName="sa", volumes=volumes))
    theirs = await env.put("", "pods", "default", pod("theirs", node="n2"))
    await env.put("storage.k8s.io", "csidrivers", "", {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "secrets.csi.io"},
        "spec": {"tokenRequests": [{"audience": "csi-aud"}]}})
    uid = mine["metadata"]["uid"]

    async def token(body: Obj) -> None:
        await env.admit(CREATE, "serviceaccounts", body, sub="token", name="sa",
                        kind=("authentication.k8s.io", "v1", "TokenRequest"))

    async def refused(message: str, body: Obj) -> None:
        await env.refused(message, CREATE, "serviceaccounts", body, sub="token", name="sa",
                          kind=("authentication.k8s.io", "v1", "TokenRequest"))

    for audiences in ((), ("vault",), ("csi-aud",)):
        await token(token_request("mine", uid, *audiences))
    await refused("node requested token not bound to a pod",
                  {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "s"}}})
    await refused("node requested token not bound to a pod", {"spec": {}})
    await refused("node requested token with a pod binding without a uid", token_request("mine", ""))
    await refused("the UID in the bound object reference (stale) does not match the UID in record. The object might "
                  "have been deleted and then recreated", token_request("mine", "stale"))
    await refused("node requested token bound to a pod scheduled on a different node",
                  token_request("theirs", theirs["metadata"]["uid"]))
    await refused("node may only request 0 or 1 audiences", token_request("mine", uid, "vault", "csi-aud"))
    await refused('audience "elsewhere" not found in pod spec volume, system:node:n1 is not authorized to request '
                  "tokens for this audience", token_request("mine", uid, "elsewhere"))
    with pytest.raises(errors.NotFound):
        await token(token_request("gone", "u"))
    # an audience the authorizer grants the node (RBAC's request-serviceaccounts-token-audience verb)
    env.access.allowed.add(("request-serviceaccounts-token-audience", "elsewhere", "sa"))
    await token(token_request("mine", uid, "elsewhere"))
    asked = [x for x in env.access.asked if x.verb == "request-serviceaccounts-token-audience"][-1]
    assert (asked.group, asked.namespace, asked.user) == ("", "default", N1)
    # other service account writes are the authorizer's business
    await env.admit(UPDATE, "serviceaccounts", {"metadata": {"name": "sa"}}, {"metadata": {"name": "sa"}})


async def test_audience_through_a_claims_volume(env: Env) -> None:
    await env.put("", "persistentvolumes", "", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "csi": {"driver": "d.csi.io", "volumeHandle": "h"}}})
    await env.put("", "persistentvolumeclaims", "default", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "mine-scratch"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pv1"}})
    await env.put("storage.k8s.io", "csidrivers", "", {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.csi.io"},
        "spec": {"tokenRequests": [{"audience": "through-claim"}]}})
    mine = await env.put("", "pods", "default", pod("mine", volumes=[
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]))
    await env.admit(CREATE, "serviceaccounts", token_request("mine", mine["metadata"]["uid"], "through-claim"),
                    sub="token", name="default", kind=("authentication.k8s.io", "v1", "TokenRequest"))


async def test_leases_and_csinodes(env: Env) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n1"}}
    await env.admit(CREATE, "leases", lease, group="coordination.k8s.io", ns="kube-node-lease")
    await env.admit(UPDATE, "leases", lease, lease, group="coordination.k8s.io", ns="kube-node-lease")
    await env.refused('can only access leases in the "kube-node-lease" system namespace', CREATE, "leases", lease,
                      group="coordination.k8s.io")
    await env.refused("can only access node lease with the same name as the requesting node", DELETE, "leases",
                      None, group="coordination.k8s.io", ns="kube-node-lease", name="n2")
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n2"}}
    await env.refused("can only access CSINode with the same name as the requesting node", CREATE, "csinodes",
                      csinode, group="storage.k8s.io", ns="")
    await env.admit(CREATE, "csinodes", {**csinode, "metadata": {"name": "n1"}}, group="storage.k8s.io", ns="")


def csr_request(cn: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    req = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                                    x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
           .sign(key, hashes.SHA256()))
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


async def test_kubelet_csrs(env: Env) -> None:
    def csr(signer: str, cn: str) -> Obj:
        return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": "c"}, "spec": {"signerName": signer, "request": csr_request(cn)}}

    for signer in ("kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client-kubelet"):
        await env.admit(CREATE, "certificatesigningrequests", csr(signer, "system:node:n1"),
                        group="certificates.k8s.io", ns="")
        await env.refused("can only create a node CSR with CN=system:node:n1", CREATE, "certificatesigningrequests",
                          csr(signer, "system:node:n2"), group="certificates.k8s.io", ns="")
    await env.admit(CREATE, "certificatesigningrequests", csr("example.com/x", "anything"),
                    group="certificates.k8s.io", ns="")


# ----------------------------------------------------------- through the API


@pytest.fixture
async def node_api(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Any]:
    from kapi.api.app import Health
    from kapi.config import Config
    from kapi.controllers.namespace import NamespaceController
    from kapi.registry.informer import Informers
    from kapi.server.bootstrap import bootstrap
    from kapi.server.rbacbootstrap import reconcile_bootstrap_policy
    from kapi.server.serve import build_app
    from tests.api.conftest import Api

    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('n1-token,system:node:n1,,"system:nodes"\n')
    informers = Informers(registry)
    config = Config(storage_backend="memory", authorization_mode=("Node", "RBAC"), token_auth_file=str(tokens),
                    enable_admission_plugins=("NodeRestriction",))
    app = build_app(config, registry, "admin-token", Health(ready=True), informers)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await reconcile_bootstrap_policy(registry)
    await nursery.start(namespaces.run)
    await nursery.start(informers.run)
    assert app.handlers.admission is not None
    await nursery.start(app.handlers.admission.run)
    yield Api(app, registry)


async def test_a_kubelet_through_the_api(node_api: Any) -> None:
    api = node_api
    r = await api.create("/api/v1/nodes", node("n1", labels={"kubernetes.io/hostname": "n1"}), token="n1-token")
    assert r.status == 201, r.json()
    # TaintNodesByCondition (on by default) tainted it at creation
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in r.json()["spec"]["taints"]
    r = await api.create("/api/v1/nodes", node("n2"), token="n1-token")
    assert r.status == 403
    assert r.json()["message"] == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"'
    assert r.json()["reason"] == "Forbidden"
    obj = (await api.request("GET", "/api/v1/nodes/n1", token="n1-token")).json()
    obj["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    r = await api.request("PUT", "/api/v1/nodes/n1", obj, token="n1-token")
    assert r.status == 403
    assert r.json()["message"] == ('nodes "n1" is forbidden: is not allowed to modify labels: '
                                   "node-role.kubernetes.io/control-plane")
    r = await api.request("PATCH", "/api/v1/nodes/n1/status", {"spec": {"taints": []}}, token="n1-token",
                          content_type="application/merge-patch+json")
    assert r.status == 403 and r.json()["message"].endswith('node "n1" is not allowed to modify taints'), r.json()
    r = await api.request("PATCH", "/api/v1/nodes/n1/status", {"status": {"phase": "Running"}}, token="n1-token",
                          content_type="application/merge-patch+json")
    assert r.status == 200, r.json()
    # the admin is not a node: its relabelling passes
    obj["metadata"]["resourceVersion"] = r.json()["metadata"]["resourceVersion"]
    r = await api.request("PUT", "/api/v1/nodes/n1", obj, token="admin-token")
    assert r.status == 200, r.json()
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n2"}}
    r = await api.create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease, token="n1-token")
    assert r.status == 403
    assert r.json()["message"] == ('leases.coordination.k8s.io "n2" is forbidden: can only access node lease with '
                                   "the same name as the requesting node")
