"""DefaultStorageClass, StorageObjectInUseProtection and PersistentVolumeClaimResize (all on by default)
through the API: the default class given to a claim without one (the newest of several defaults; none
without a default; an explicit "" kept), the protection finalizers on every claim and volume, and
growth allowed only for bound claims of an expandable class, with kube's messages."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi import errors
from kapi.admission.plugin import Attributes, Objects, PluginDeps
from kapi.admission.plugins.defaultstorageclass import DefaultStorageClass, newest
from kapi.admission.plugins.pvcresize import PersistentVolumeClaimResize
from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.object.access import UserInfo
from kapi.registry.admit import UPDATE, AdmissionRequest
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


@pytest.fixture
async def api(nursery: trio.Nursery) -> Api:
    """The served API over memory storage with kube 1.33's default admission plugins."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    return Api(app, registry)


def storage_class(name: str, *, default: str | None = None, beta: bool = False, expand: bool | None = None) -> Obj:
    md: Obj = {"name": name}
    if default is not None:
        key = "storageclass.beta.kubernetes.io/is-default-class" if beta else \
            "storageclass.kubernetes.io/is-default-class"
        md["annotations"] = {key: default}
    out: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": md, "provisioner": "x.io/p"}
    if expand is not None:
        out["allowVolumeExpansion"] = expand
    return out


def claim(name: str, size: str = "1Gi", **spec: Any) -> Obj:
    annotations = spec.pop("annotations", None)
    md: Obj = {"name": name}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": md,
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


async def created(api: Api, path: str, obj: Obj) -> Obj:
    r = await api.create(path, obj)
    assert r.status == 201, r.json()
    out: Obj = r.json()
    return out


async def test_no_default_class_leaves_the_claim_alone(api: Api) -> None:
    await created(api, CLASSES, storage_class("plain"))
    await created(api, CLASSES, storage_class("not-default", default="false"))
    pvc = await created(api, PVCS, claim("c"))
    assert "storageClassName" not in pvc["spec"]
    assert pvc["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]


async def test_the_default_class_is_given(api: Api) -> None:
    await created(api, CLASSES, storage_class("fast", default="true"))
    assert (await created(api, PVCS, claim("c")))["spec"]["storageClassName"] == "fast"
    # an explicit class, even "", and the beta annotation are kept
    assert (await created(api, PVCS, claim("d", storageClassName="")))["spec"]["storageClassName"] == ""
    assert (await created(api, PVCS, claim("e", storageClassName="slow")))["spec"]["storageClassName"] == "slow"
    beta = await created(api, PVCS, claim("f", annotations={"volume.beta.kubernetes.io/storage-class": "old"}))
    assert "storageClassName" not in beta["spec"]
    # dry run too
    r = await api.create(f"{PVCS}?dryRun=All", claim("g"))
    assert r.status == 201 and r.json()["spec"]["storageClassName"] == "fast"


async def test_two_defaults_the_newest_wins(api: Api) -> None:
    await created(api, CLASSES, storage_class("older", default="true", beta=True))
    await trio.sleep(1.1)  # creationTimestamp has whole seconds
    await created(api, CLASSES, storage_class("newer", default="true"))
    assert (await created(api, PVCS, claim("c")))["spec"]["storageClassName"] == "newer"


def test_newest_breaks_ties_by_name() -> None:
    at = "2024-01-01T00:00:00Z"
    classes = [{"metadata": {"name": n, "creationTimestamp": at}} for n in ("b", "a", "c")]
    assert (newest(classes) or {})["metadata"]["name"] == "a"
    classes.append({"metadata": {"name": "z", "creationTimestamp": "2024-01-02T00:00:00Z"}})
    assert (newest(classes) or {})["metadata"]["name"] == "z"
    assert newest([]) is None


async def test_plugin_reads_classes_through_objects(api: Api) -> None:
    await created(api, CLASSES, storage_class("fast", default="true"))
    plugin = DefaultStorageClass(PluginDeps(api.registry, Objects(api.registry, None)))
    found = await plugin.default_class()
    assert found is not None and found["metadata"]["name"] == "fast"


async def test_volumes_get_the_pv_protection_finalizer(api: Api) -> None:
    pv = await created(api, "/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1", "finalizers": ["x.io/keep"]},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}})
    assert pv["metadata"]["finalizers"] == ["x.io/keep", "kubernetes.io/pv-protection"]
    pvc = await created(api, PVCS, {**claim("c"), "metadata": {"name": "c",
                                                               "finalizers": ["kubernetes.io/pvc-protection"]}})
    assert pvc["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]  # not twice
    # only creates: an update may drop it (the protection controller does)
    pvc["metadata"]["finalizers"] = []
    r = await api.request("PUT", f"{PVCS}/c", pvc)
    assert r.status == 200 and not r.json()["metadata"].get("finalizers"), r.json()


async def _bound(api: Api, name: str, cls: str | None) -> Obj:
    spec = {"storageClassName": cls} if cls is not None else {}
    pvc = await created(api, PVCS, claim(name, "1Gi", **spec))
    pvc["status"] = {"phase": "Bound"}
    r = await api.request("PUT", f"{PVCS}/{name}/status", pvc)
    assert r.status == 200, r.json()
    out: Obj = r.json()
    return out


async def _grow(api: Api, pvc: Obj, size: str) -> Any:
    pvc["spec"]["resources"]["requests"]["storage"] = size
    return await api.request("PUT", f"{PVCS}/{pvc['metadata']['name']}", pvc)


async def test_resize(api: Api) -> None:
    await created(api, CLASSES, storage_class("grows", expand=True))
    await created(api, CLASSES, storage_class("fixed", expand=False))
    await created(api, CLASSES, storage_class("unset"))
    ok = await _bound(api, "ok", "grows")
    r = await _grow(api, ok, "2Gi")
    assert r.status == 200, r.json()
    assert r.json()["spec"]["resources"]["requests"]["storage"] == "2Gi"
    for name, cls in (("fixed", "fixed"), ("unset", "unset"), ("missing", "nowhere"), ("none", None)):
        r = await _grow(api, await _bound(api, name, cls), "2Gi")
        assert r.status == 403, (name, r.json())
        assert r.json()["message"] == (f'persistentvolumeclaims "{name}" is forbidden: only dynamically provisioned '
                                       "pvc can be resized and the storageclass that provisions the pvc must support "
                                       "resize")
    # an unbound claim's spec is immutable: validation refuses its growth before this plugin would
    pending = await created(api, PVCS, claim("pending", storageClassName="grows"))
    r = await _grow(api, pending, "2Gi")
    assert r.status == 422, r.json()
    # the same size in another spelling is not growth
    same = await _bound(api, "same", "fixed")
    r = await _grow(api, same, "1024Mi")
    assert r.status != 403, r.json()


async def test_resize_of_an_unbound_claim(api: Api) -> None:
    await created(api, CLASSES, storage_class("grows", expand=True))
    plugin = PersistentVolumeClaimResize(PluginDeps(api.registry, Objects(api.registry, None)))
    res = api.registry.table.get("", "v1", "persistentvolumeclaims")
    assert res is not None
    old = claim("p", storageClassName="grows")
    new = claim("p", "2Gi", storageClassName="grows")
    a = Attributes(AdmissionRequest(UPDATE, res, "", "default", "p", new, old), UserInfo("u"), {}, [])
    with pytest.raises(errors.Forbidden) as info:
        await plugin.validate(a)
    assert str(info.value) == 'persistentvolumeclaims "p" is forbidden: Only bound persistent volume claims can be ' \
        "expanded"
    old["status"] = {"phase": "Bound"}
    await plugin.validate(a)
    a.request.subresource = "status"  # status writes are not its business
    old["status"] = {}
    await plugin.validate(a)


# ------------------------------------------------- the protection controllers


@pytest.fixture
async def protected(nursery: trio.Nursery) -> Api:
    """The served API with the shared informers and the pvc/pv protection controller running, as serve() has."""
    from kapi.controllers.storageprotection import StorageProtectionController
    from kapi.registry.informer import Informers

    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True), informers)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    controller = StorageProtectionController(registry, informers.informer("", "persistentvolumeclaims"),
                                             informers.informer("", "persistentvolumes"), informers.informer("", "pods"))
    await nursery.start(namespaces.run)
    await nursery.start(informers.run)
    await nursery.start(controller.run)
    return Api(app, registry)


async def gone(api: Api, path: str) -> None:
    with trio.fail_after(10):
        while (await api.request("GET", path)).status != 404:
            await trio.sleep(0.01)


def using_pod(name: str, claim: str, node: str = "n1") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def test_an_unused_claim_goes_at_once(protected: Api) -> None:
    api = protected
    await created(api, PVCS, claim("c"))
    # a pod not scheduled yet does not hold it (the kubelet will not start it with a claim being deleted)
    await created(api, "/api/v1/namespaces/default/pods", using_pod("pending", "c", node=""))
    r = await api.request("DELETE", f"{PVCS}/c")
    assert r.status == 200 and r.json()["metadata"]["deletionTimestamp"], r.json()
    await gone(api, f"{PVCS}/c")


async def test_a_claim_in_use_waits_for_its_pod(protected: Api) -> None:
    api, pods = protected, "/api/v1/namespaces/default/pods"
    await created(api, PVCS, claim("c"))
    await created(api, pods, using_pod("user", "c"))
    r = await api.request("DELETE", f"{PVCS}/c")
    assert r.status == 200
    # a finished pod still holds it (its kubelet may have it mounted), as kube's controller judges
    pod = (await api.request("GET", f"{pods}/user")).json()
    pod["status"] = {"phase": "Succeeded"}
    r = await api.request("PUT", f"{pods}/user/status", pod)
    assert r.status == 200, r.json()
    await trio.sleep(0.3)
    held = await api.request("GET", f"{PVCS}/c")
    assert held.status == 200 and held.json()["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    r = await api.request("DELETE", f"{pods}/user?gracePeriodSeconds=0")
    assert r.status == 200, r.json()
    await gone(api, f"{PVCS}/c")


async def test_the_finalizers_are_kept(protected: Api) -> None:
    """A claim or volume without its finalizer (stored past admission, or the finalizer taken off) gets it back."""
    api = protected
    pvc = await created(api, PVCS, claim("c"))
    pvc["metadata"]["finalizers"] = []
    assert (await api.request("PUT", f"{PVCS}/c", pvc)).status == 200
    pvs = api.registry.table.get("", "v1", "persistentvolumes")
    assert pvs is not None
    await api.registry.create(pvs, "", {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"},
                                        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                                 "hostPath": {"path": "/d"}}}, WriteOptions())
    with trio.fail_after(10):
        while (await api.request("GET", f"{PVCS}/c")).json()["metadata"].get("finalizers") != [
                "kubernetes.io/pvc-protection"] or (await api.request("GET", "/api/v1/persistentvolumes/v")).json()[
                "metadata"].get("finalizers") != ["kubernetes.io/pv-protection"]:
            await trio.sleep(0.01)


async def test_a_bound_volume_waits_until_released(protected: Api) -> None:
    api, pvs = protected, "/api/v1/persistentvolumes"
    await created(api, pvs, {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"},
                             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                      "hostPath": {"path": "/d"}}})
    pv = (await api.request("GET", f"{pvs}/v")).json()
    pv["status"] = {"phase": "Bound"}
    assert (await api.request("PUT", f"{pvs}/v/status", pv)).status == 200
    assert (await api.request("DELETE", f"{pvs}/v")).status == 200
    await trio.sleep(0.3)
    pv = (await api.request("GET", f"{pvs}/v")).json()
    assert pv["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    pv["status"] = {"phase": "Released"}
    assert (await api.request("PUT", f"{pvs}/v/status", pv)).status == 200
    await gone(api, f"{pvs}/v")


def test_pod_uses_claim() -> None:
    from kapi.controllers.storageprotection import pod_is_shut_down, pod_uses_claim

    pod = using_pod("p", "c")
    pod["metadata"]["uid"] = "pod-uid"
    pod["spec"]["volumes"].append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    mine = {"metadata": {"name": "p-scratch", "ownerReferences": [{"controller": True, "uid": "pod-uid"}]}}
    assert pod_uses_claim(pod, {"metadata": {"name": "c"}}) and pod_uses_claim(pod, mine)
    # an ephemeral volume's claim is the pod's only if the pod controls it
    assert not pod_uses_claim(pod, {"metadata": {"name": "p-scratch"}})
    assert not pod_uses_claim(pod, {"metadata": {"name": "other"}})
    assert not pod_uses_claim(using_pod("p", "c", node=""), {"metadata": {"name": "c"}})
    assert pod_uses_claim({**pod, "status": {"phase": "Failed"}}, {"metadata": {"name": "c"}})
    shut = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z",
                                "deletionGracePeriodSeconds": 0}}
    assert pod_is_shut_down(shut) and not pod_is_shut_down(pod)
    assert not pod_uses_claim(shut, mine) and pod_uses_claim(shut, {"metadata": {"name": "c"}})
