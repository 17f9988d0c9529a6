"""TaintNodesByCondition, DefaultIngressClass, DenyServiceExternalIPs, OwnerReferencesPermissionEnforcement,
AlwaysAdmit and AlwaysDeny through the served API (the off-by-default ones enabled with
--enable-admission-plugins), with kube's messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
import trio

from kapi.admission.chain import enabled_plugins
from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.server.bootstrap import bootstrap
from kapi.server.rbacbootstrap import reconcile_bootstrap_policy
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import Api

Obj = dict[str, Any]
ADMIN = "admin-token"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
CMS = "/api/v1/namespaces/default/configmaps"
Serve = Callable[..., Awaitable[Api]]


@pytest.fixture
def serve(nursery: trio.Nursery, tmp_path: Path) -> Serve:
    """An API with the given admission flags (and RBAC with the token file's users when ``tokens``)."""

    async def start(*, enable: tuple[str, ...] = (), disable: tuple[str, ...] = (), tokens: str = "") -> Api:
        storage = MemoryStorage()
        await nursery.start(storage.run)
        registry = Registry(storage, ResourceTable(BUILTIN))
        informers = Informers(registry)
        extra: dict[str, Any] = {"authorization_mode": ("AlwaysAllow",)}
        if tokens:
            (tmp_path / "tokens.csv").write_text(tokens)
            extra = {"authorization_mode": ("RBAC",), "token_auth_file": str(tmp_path / "tokens.csv")}
        config = Config(storage_backend="memory", enable_admission_plugins=enable, disable_admission_plugins=disable,
                        **extra)
        app = build_app(config, registry, ADMIN, Health(ready=True), informers)
        namespaces = NamespaceController(registry)
        await bootstrap(registry, namespaces)
        if tokens:
            await reconcile_bootstrap_policy(registry)
        await nursery.start(namespaces.run)
        await nursery.start(informers.run)
        return Api(app, registry)

    return start


async def ok(api: Api, method: str, path: str, body: Obj | None = None, token: str = ADMIN) -> Obj:
    r = await api.request(method, path, body, token=token)
    assert r.status in (200, 201), r.json()
    out: Obj = r.json()
    return out


async def refused(api: Api, method: str, path: str, body: Obj | None, message: str, token: str = ADMIN) -> None:
    r = await api.request(method, path, body, token=token)
    assert r.status == 403, r.json()
    assert r.json()["message"] == message
    assert r.json()["reason"] == "Forbidden"


# ------------------------------------------------------------ nodes


async def test_nodes_are_created_not_ready(serve: Serve) -> None:
    api = await serve()
    node = await ok(api, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}})
    assert node["spec"]["taints"] == [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    # one of the same key and effect is kept as it is (the value does not matter); others stay
    node = await ok(api, "POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"},
        "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoSchedule"}]}})
    assert node["spec"]["taints"] == [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoSchedule"}]
    node = await ok(api, "POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "c"},
        "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}})
    assert [t["effect"] for t in node["spec"]["taints"]] == ["NoExecute", "NoSchedule"]
    # only at creation: the taint may be taken off
    node["spec"]["taints"] = []
    assert not (await ok(api, "PUT", "/api/v1/nodes/c", node))["spec"].get("taints")
    api = await serve(disable=("TaintNodesByCondition",))
    node = await ok(api, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}})
    assert not node["spec"].get("taints")


# ------------------------------------------------------------ ingresses


def ingress_class(name: str, default: str | None = None) -> Obj:
    md: Obj = {"name": name}
    if default is not None:
        md["annotations"] = {"ingressclass.kubernetes.io/is-default-class": default}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": md,
            "spec": {"controller": "example.com/ingress"}}


def ingress(name: str, **spec: Any) -> Obj:
    annotations = spec.pop("annotations", None)
    md: Obj = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md,
            "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}, **spec}}


async def class_seen(api: Api, ings: str, name: str) -> None:
    """The plugin reads classes from the shared informer, as kube's from its lister: wait until it has it."""
    with trio.fail_after(10):
        while (await ok(api, "POST", f"{ings}?dryRun=All", ingress("probe")))["spec"].get("ingressClassName") != name:
            await trio.sleep(0.01)


async def test_default_ingress_class(serve: Serve) -> None:
    api = await serve()
    classes, ings = "/apis/networking.k8s.io/v1/ingressclasses", "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
    await ok(api, "POST", classes, ingress_class("plain"))
    assert "ingressClassName" not in (await ok(api, "POST", ings, ingress("a")))["spec"]
    await ok(api, "POST", classes, ingress_class("old", "true"))
    await class_seen(api, ings, "old")
    assert (await ok(api, "POST", ings, ingress("b")))["spec"]["ingressClassName"] == "old"
    await trio.sleep(1.1)  # whole-second creationTimestamps
    await ok(api, "POST", classes, ingress_class("new", "true"))
    await class_seen(api, ings, "new")
    assert (await ok(api, "POST", ings, ingress("c")))["spec"]["ingressClassName"] == "new"
    assert (await ok(api, "POST", ings, ingress("d", ingressClassName="plain")))["spec"]["ingressClassName"] == "plain"
    legacy = await ok(api, "POST", ings, ingress("e", annotations={"kubernetes.io/ingress.class": "nginx"}))
    assert "ingressClassName" not in legacy["spec"]


# ------------------------------------------------------------ services


async def test_deny_service_external_ips(serve: Serve) -> None:
    svcs = "/api/v1/namespaces/default/services"

    def svc(name: str, *ips: str) -> Obj:
        spec: Obj = {"ports": [{"port": 80}]}
        if ips:
            spec["externalIPs"] = list(ips)
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}

    api = await serve()  # off by default
    await ok(api, "POST", svcs, svc("kept", "192.0.2.1", "192.0.2.2"))
    api_on = await serve(enable=("DenyServiceExternalIPs",))
    await refused(api_on, "POST", svcs, svc("x", "192.0.2.1"),
                  'services "x" is forbidden: Use of external IPs is denied by admission control')
    plain = await ok(api_on, "POST", svcs, svc("plain"))
    plain["spec"]["externalIPs"] = ["192.0.2.9"]
    await refused(api_on, "PUT", f"{svcs}/plain", plain,
                  'services "plain" is forbidden: Use of external IPs is denied by admission control')
    # an update may keep or drop the addresses it had (stored here by the server itself, past admission)
    services = api_on.registry.table.get("", "v1", "services")
    assert services is not None
    await api_on.registry.create(services, "default", svc("kept", "192.0.2.1", "192.0.2.2"), WriteOptions())
    stored = await ok(api_on, "GET", f"{svcs}/kept")
    stored["spec"]["externalIPs"] = ["192.0.2.2"]
    await ok(api_on, "PUT", f"{svcs}/kept", stored)
    stored = await ok(api_on, "GET", f"{svcs}/kept")
    stored["spec"]["externalIPs"] = ["192.0.2.2", "192.0.2.3"]
    await refused(api_on, "PUT", f"{svcs}/kept", stored,
                  'services "kept" is forbidden: Use of external IPs is denied by admission control')


# ------------------------------------------------------------ always


async def test_always_deny_and_admit(serve: Serve) -> None:
    assert enabled_plugins(("AlwaysAdmit", "AlwaysDeny"))[0] == "AlwaysAdmit"
    assert enabled_plugins(("AlwaysDeny",))[-1] == "AlwaysDeny"
    api = await serve(enable=("AlwaysDeny",))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    await refused(api, "POST", CMS, cm, 'configmaps "x" is forbidden: admission control is denying all modifications')
    await refused(api, "DELETE", f"{CMS}/x", None,
                  'configmaps "x" is forbidden: admission control is denying all modifications')
    r = await api.request("GET", CMS, token=ADMIN)
    assert r.status == 200  # reads are not admitted
    api = await serve(enable=("AlwaysAdmit",))
    await ok(api, "POST", CMS, cm)


# ------------------------------------------------------------ owner references

TOKENS = 'editor-token,editor,,""\ndeleter-token,deleter,,""\nfinalizer-token,finalizer,,""\n'


async def grant(api: Api, user: str, rules: list[Obj]) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
            "rules": rules}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    await ok(api, "POST", f"{RBAC}/clusterroles", role)
    await ok(api, "POST", f"{RBAC}/clusterrolebindings", binding)


async def until_allowed(api: Api, token: str) -> None:
    with trio.fail_after(10):
        while (await api.request("GET", CMS, token=token)).status == 403:
            await trio.sleep(0.01)


async def test_owner_references_permission_enforcement(serve: Serve) -> None:
    api = await serve(enable=("OwnerReferencesPermissionEnforcement",), tokens=TOKENS)
    cms_rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "update"]}
    await grant(api, "editor", [cms_rule])
    await grant(api, "deleter", [{**cms_rule, "verbs": [*cms_rule["verbs"], "delete"]}])
    await grant(api, "finalizer", [{**cms_rule, "verbs": [*cms_rule["verbs"], "delete"]},
                                   {"apiGroups": ["apps"], "resources": ["deployments/finalizers"],
                                    "verbs": ["update"], "resourceNames": ["web"]}])
    for user in ("editor", "deleter", "finalizer"):
        await until_allowed(api, f"{user}-token")
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-1"}

    def cm(name: str, *refs: Obj) -> Obj:
        md: Obj = {"name": name}
        if refs:
            md["ownerReferences"] = list(refs)
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}

    # a create may set owner references (its creator could have not created it) ...
    await ok(api, "POST", CMS, cm("a", owner), token="editor-token")
    # ... but not blockOwnerDeletion without the owner's finalizers
    r = await api.request("POST", CMS, cm("b", {**owner, "blockOwnerDeletion": True}), token="deleter-token")
    assert r.status == 403, r.json()
    assert r.json()["message"].startswith(
        'configmaps "b" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you '
        "can't set finalizers on: "), r.json()
    assert r.json()["message"].endswith(", <nil>"), r.json()["message"]
    await ok(api, "POST", CMS, cm("b", {**owner, "blockOwnerDeletion": True}), token="finalizer-token")
    r = await api.request("POST", CMS, cm("c", {**owner, "name": "other", "blockOwnerDeletion": True}),
                          token="finalizer-token")
    assert r.status == 403
    r = await api.request("POST", CMS, cm("c", {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w",
                                                "uid": "u-2", "blockOwnerDeletion": True}), token="deleter-token")
    assert r.status == 403
    assert r.json()["message"] == (
        'configmaps "c" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping '
        'for APIVersion example.com/v1 Kind Widget: no matches for kind "Widget" in version "example.com/v1"')
    # an update changing owner references needs delete on the object
    plain = await ok(api, "POST", CMS, cm("plain"), token="editor-token")
    plain["metadata"]["ownerReferences"] = [owner]
    r = await api.request("PUT", f"{CMS}/plain", plain, token="editor-token")
    assert r.status == 403
    assert r.json()["message"].startswith(
        'configmaps "plain" is forbidden: cannot set an ownerRef on a resource you can\'t delete: '), r.json()
    await ok(api, "PUT", f"{CMS}/plain", plain, token="deleter-token")
    # an update leaving them as they are is anyone's
    a = await ok(api, "GET", f"{CMS}/a", token="editor-token")
    a["data"] = {"k": "v"}
    await ok(api, "PUT", f"{CMS}/a", a, token="editor-token")
    # the admin may do all of it
    await ok(api, "POST", CMS, cm("z", {**owner, "blockOwnerDeletion": True}))
