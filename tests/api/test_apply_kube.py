"""kube-apiserver's server-side apply integration tests (test/integration/apiserver/apply/apply_test.go),
ported to the ASGI app: raw apply PATCHes, then status codes, objects and managedFields as kube answers."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from .apply_kube_support import JSON_PATCH, SMP, apply, entries, get, ok, patch, put
from .conftest import Api


# Known differences from kube-apiserver and structured-merge-diff (strict xfail, see tests/conftest.py)
KNOWN_GAPS: dict[str, str] = {}

PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"


def pod(name: str, **extra: Any) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "test-container-a", "image": "test-image-one"}]}}
    body.update(extra)
    return body


def nginx(name: str = "deployment", replicas: int | None = 3, **container: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {"metadata": {"labels": {"app": "nginx"}},
                     "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", **container}]}}}
    if replicas is not None:
        spec = {"replicas": replicas, **spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": "nginx"}}, "spec": spec}


def cm_body(**labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "test-cm", "namespace": "default", "labels": labels or {"test-label": "test"}},
            "data": {"key": "value"}}


# kube's TestApplyAlsoCreates
async def test_apply_also_creates(api: Api) -> None:
    cases = [("pods", "test-pod", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod"},
                                  "spec": {"containers": [{"name": "test-container", "image": "test-image"}]}}),
             ("services", "test-svc", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "test-svc"},
                                      "spec": {"ports": [{"port": 8080, "protocol": "UDP"}]}})]
    for resource, name, body in cases:
        path = f"/api/v1/namespaces/default/{resource}/{name}"
        assert (await apply(api, path, body)).status == 201
        await get(api, path)
        # a second manager re-applying the same intent shares the fields, no conflict
        ok(await apply(api, path, body, "apply_test_2"), 200)


# kube's TestNoOpUpdateSameResourceVersion
async def test_noop_update_same_resource_version(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "no-op", "labels": {"a": "one", "c": "two", "b": "three"}},
            "spec": {"containers": [{"name": "test-container-a", "image": "test-image-one"},
                                    {"name": "test-container-c", "image": "test-image-two"},
                                    {"name": "test-container-b", "image": "test-image-three"}]}}
    ok(await apply(api, f"{PODS}/no-op", body))
    created = await get(api, f"{PODS}/no-op")
    ok(await put(api, f"{PODS}/no-op", created))
    updated = await get(api, f"{PODS}/no-op")
    assert updated["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


# kube's TestNoOpApplyWithEmptyMap
async def test_noop_apply_with_empty_map(api: Api) -> None:
    body = nginx("no-op", 1, ports=[{"containerPort": 80}])
    body["spec"]["template"]["metadata"]["annotations"] = {}
    ok(await apply(api, f"{DEPLOYS}/no-op", body))
    created = await get(api, f"{DEPLOYS}/no-op")
    ok(await apply(api, f"{DEPLOYS}/no-op", body))
    updated = await get(api, f"{DEPLOYS}/no-op")
    assert updated["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


# kube's TestApplyEmptyMarkerStructDifferentFromNil
async def test_apply_empty_marker_struct_different_from_nil(api: Api) -> None:
    def body(volume: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-with-empty-dir"},
                "spec": {"containers": [{"name": "test-container-a", "image": "test-image-one",
                                         "volumeMounts": [{"mountPath": "/cache", "name": "cache-volume"}]}],
                         "volumes": [volume]}}
    path = f"{PODS}/pod-with-empty-dir"
    ok(await apply(api, path, body({"name": "cache-volume", "emptyDir": {}})))
    created = await get(api, path)
    ok(await apply(api, path, body({"name": "cache-volume"})))
    updated = await get(api, path)
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]


# kube's TestNoopChangeCreationTime
async def test_noop_change_creation_time(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "myconfig", "creationTimestamp": None, "resourceVersion": None},
            "data": {"key": "value"}}
    first = ok(await apply(api, f"{CMS}/myconfig", body))
    again = ok(await apply(api, f"{CMS}/myconfig", body))
    assert again == first


# kube's TestNoSemanticUpdateApplySameResourceVersion
STATEFULSET = {
    "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
    "spec": {"serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
             "template": {"metadata": {"labels": {"app": "nginx"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                                   "resources": {"limits": {"memory": "2048Mi"}}}]}},
             "volumeClaimTemplates": [{"metadata": {"name": "nginx"},
                                       "spec": {"accessModes": ["ReadWriteOnce"],
                                                "resources": {"requests": {"storage": "1Gi"}}}}]}}


async def test_no_semantic_update_apply_same_resource_version(api: Api) -> None:
    path = "/apis/apps/v1/namespaces/default/statefulsets/nginx"
    rv = ok(await apply(api, path, STATEFULSET))["metadata"]["resourceVersion"]
    assert ok(await apply(api, path, STATEFULSET))["metadata"]["resourceVersion"] == rv


# kube's TestCreateOnApplyFailsWithUID
async def test_create_on_apply_fails_with_uid(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "test-pod-uid", "uid": "88e00824-7f0e-11e8-94a1-c8d3ffb15800"},
            "spec": {"containers": [{"name": "test-container", "image": "test-image"}]}}
    r = await apply(api, f"{PODS}/test-pod-uid", body)
    assert r.status == 409, r.body
    assert r.json()["reason"] == "Conflict"


# kube's TestApplyUpdateApplyConflictForced
async def test_apply_update_apply_conflict_forced(api: Api) -> None:
    path = f"{DEPLOYS}/deployment"
    ok(await apply(api, path, nginx()))
    ok(await patch(api, path, {"spec": {"replicas": 5}}))
    r = await apply(api, path, nginx())
    assert r.status == 409, r.body
    status = r.json()
    assert status["reason"] == "Conflict"
    assert len(status["details"]["causes"]) >= 1
    assert status["message"].startswith("Apply failed with 1 conflict: conflict with ")
    assert status["message"].endswith(" using apps/v1: .spec.replicas")
    assert status["details"]["causes"][0]["field"] == ".spec.replicas"
    assert status["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    forced = ok(await apply(api, path, nginx(), force=True))
    assert forced["spec"]["replicas"] == 3


# kube's TestApplyGroupsManySeparateUpdates
async def test_apply_groups_many_separate_updates(api: Api) -> None:
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/webhook"
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "webhook", "labels": {"applier": "true"}}}
    obj = ok(await apply(api, path, body))
    for i in range(20):
        unique = f"updater{i}"
        obj = ok(await patch(api, path, {"metadata": {"labels": {unique: "new"}}}, manager=unique))
    managed = obj["metadata"]["managedFields"]
    # the cap for update entries is 10, plus the one apply entry
    assert len(managed) == 11, managed
    assert managed[0]["manager"] == "apply_test"
    assert managed[1]["manager"] == "ancient-changes"


# kube's TestCreateVeryLargeObject, TestUpdateVeryLargeObject, TestPatchVeryLargeObject: an object near the
# size limit can be written, but an apply that adds its managedFields entry pushes it past and fails
def large_data() -> dict[str, str]:
    return {f"this-key-is-very-long-so-as-to-create-a-very-large-serialized-fieldset-{i}": "A" for i in range(9999)}


async def too_large_to_apply(api: Api, name: str) -> None:
    """The write was stored without its managedFields (with them it passes the object size limit), and
    an apply, whose managedFields would cover every key, is 413 and writes nothing."""
    stored = await get(api, f"{CMS}/{name}")
    assert len(stored["data"]) >= 9999 and "managedFields" not in stored["metadata"]
    r = await apply(api, f"{CMS}/{name}", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name, "namespace": "default"}})
    assert r.status == 413, r.status
    assert "the limit is 1572864" in r.json()["message"]
    after = await get(api, f"{CMS}/{name}")
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


async def test_object_size_limit_without_managed_fields(api: Api) -> None:
    """An object too large even without its managedFields is 413 on create and update; nothing is written."""
    api.registry.max_object_bytes = 4000
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"},
          "data": {"k": "v" * 5000}}
    r = await api.create(CMS, cm)
    assert r.status == 413 and r.json()["reason"] == "RequestEntityTooLarge", r.body
    assert (await api.request("GET", f"{CMS}/big")).status == 404
    cm["data"]["k"] = "v"
    created = ok(await api.create(f"{CMS}?fieldManager=creator", cm), 201)
    assert created["metadata"]["managedFields"]
    created["data"]["k"] = "v" * 5000
    assert (await put(api, f"{CMS}/big", created)).status == 413
    assert (await get(api, f"{CMS}/big"))["data"]["k"] == "v"
    # dry run never reaches storage, as kube's
    assert (await api.request("PUT", f"{CMS}/big?dryRun=All", orjson.dumps(created))).status == 200


async def test_create_very_large_object(api: Api) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "large-create-test-cm", "namespace": "default"}, "data": large_data()}
    ok(await api.create(CMS, cm), 201)
    await too_large_to_apply(api, "large-create-test-cm")


async def test_update_very_large_object(api: Api) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "large-update-test-cm", "namespace": "default"}, "data": {"k": "v"}}
    created = ok(await api.create(CMS, cm), 201)
    created["data"].update(large_data())
    ok(await put(api, f"{CMS}/large-update-test-cm", created))
    await too_large_to_apply(api, "large-update-test-cm")


async def test_patch_very_large_object(api: Api) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "large-patch-test-cm", "namespace": "default"}, "data": {"k": "v"}}
    ok(await api.create(CMS, cm), 201)
    ok(await patch(api, f"{CMS}/large-patch-test-cm", {"data": {"k": "v", **large_data()}}))
    await too_large_to_apply(api, "large-patch-test-cm")


# kube's TestApplyManagedFields
async def test_apply_managed_fields(api: Api) -> None:
    ok(await apply(api, f"{CMS}/test-cm", cm_body()))
    ok(await patch(api, f"{CMS}/test-cm", {"data": {"new-key": "value"}}, manager="updater"))
    ok(await patch(api, f"{CMS}/test-cm", {"data": {"key": "new value"}}, manager="updater"))
    obj = await get(api, f"{CMS}/test-cm")
    md = obj["metadata"]
    assert obj["data"] == {"key": "new value", "new-key": "value"}
    assert md["labels"] == {"test-label": "test"}
    assert entries(obj) == [
        {"manager": "apply_test", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}}},
        {"manager": "updater", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:key": {}, "f:new-key": {}}}},
    ]
    # kube's field order in each entry
    assert list(md["managedFields"][0]) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]


# kube's TestApplyRemovesEmptyManagedFields
async def test_apply_removes_empty_managed_fields(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test-cm", "namespace": "default"}}
    ok(await apply(api, f"{CMS}/test-cm", body))
    ok(await apply(api, f"{CMS}/test-cm", body))
    obj = await get(api, f"{CMS}/test-cm")
    assert "managedFields" not in obj["metadata"]


# kube's TestApplyRequiresFieldManager
async def test_apply_requires_field_manager(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test-cm", "namespace": "default"}}
    r = await apply(api, f"{CMS}/test-cm", body, None)
    assert r.status == 422, r.body
    assert "fieldManager: Required value: is required for apply patch" in r.json()["message"]
    ok(await apply(api, f"{CMS}/test-cm", body))


# kube's TestApplyRemoveContainerPort
async def test_apply_remove_container_port(api: Api) -> None:
    path = f"{DEPLOYS}/deployment"
    ok(await apply(api, path, nginx(ports=[{"containerPort": 80, "protocol": "TCP"}])))
    ok(await apply(api, path, nginx()))
    got = await get(api, path)
    assert not got["spec"]["template"]["spec"]["containers"][0].get("ports")


# kube's TestApplyFailsWithVersionMismatch
async def test_apply_fails_with_version_mismatch(api: Api) -> None:
    path = f"{DEPLOYS}/deployment"
    ok(await apply(api, path, nginx()))
    wrong = nginx(replicas=100)
    wrong["apiVersion"] = "extensions/v1beta"
    r = await apply(api, path, wrong)
    assert r.status == 400, r.body


# kube's TestApplyConvertsManagedFieldsVersion: an entry recorded as extensions/v1beta1 (a version kapi does
# not serve, nor kube today) is read as the object's version once the manager applies again
async def test_apply_converts_managed_fields_version(api: Api) -> None:
    body = nginx(replicas=None)
    body["metadata"]["managedFields"] = [{
        "manager": "sidecar_controller", "operation": "Apply", "apiVersion": "extensions/v1beta1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:sidecar_version": {}}},
                     "f:spec": {"f:template": {"f: spec": {"f:containers": {
                         'k:{"name":"sidecar"}': {".": {}, "f:image": {}}}}}}}}]
    ok(await api.create(DEPLOYS, body), 201)
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "deployment", "labels": {"sidecar_version": "release"}},
               "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "sidecar:latest"}]}}}}
    ok(await apply(api, f"{DEPLOYS}/deployment", sidecar, "sidecar_controller"))
    managed = (await get(api, f"{DEPLOYS}/deployment"))["metadata"]["managedFields"]
    assert len(managed) == 2, managed
    mine = [e for e in managed if e["manager"] == "sidecar_controller" and e["apiVersion"] == "apps/v1"]
    assert mine, managed
    entry = {k: v for k, v in mine[0].items() if k != "time"}
    assert entry == {"manager": "sidecar_controller", "operation": "Apply", "apiVersion": "apps/v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {
                         "f:metadata": {"f:labels": {"f:sidecar_version": {}}},
                         "f:spec": {"f:template": {"f:spec": {"f:containers": {
                             'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}}
    assert orjson.dumps(entry["fieldsV1"]) == (b'{"f:metadata":{"f:labels":{"f:sidecar_version":{}}},"f:spec":'
                                               b'{"f:template":{"f:spec":{"f:containers":{"k:{\\"name\\":'
                                               b'\\"sidecar\\"}":{".":{},"f:image":{},"f:name":{}}}}}}}')


# kube's TestClearManagedFieldsWith{MergePatch,StrategicMergePatch,JSONPatch,Update,UpdateEmptyList}
async def _applied_cm(api: Api) -> None:
    ok(await apply(api, f"{CMS}/test-cm", cm_body()))


async def _cleared(api: Api) -> dict[str, Any]:
    obj = await get(api, f"{CMS}/test-cm")
    assert not obj["metadata"].get("managedFields"), obj["metadata"].get("managedFields")
    assert obj["metadata"].get("labels"), "other fields stay untouched"
    return obj


async def test_clear_managed_fields_with_merge_patch(api: Api) -> None:
    await _applied_cm(api)
    ok(await patch(api, f"{CMS}/test-cm", {"metadata": {"managedFields": [{}]}}))
    await _cleared(api)


async def test_clear_managed_fields_with_strategic_merge_patch(api: Api) -> None:
    await _applied_cm(api)
    ok(await patch(api, f"{CMS}/test-cm", {"metadata": {"managedFields": [{}]}}, SMP))
    await _cleared(api)


async def test_clear_managed_fields_with_json_patch(api: Api) -> None:
    await _applied_cm(api)
    ok(await patch(api, f"{CMS}/test-cm", [{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}],
                   JSON_PATCH))
    await _cleared(api)


async def test_clear_managed_fields_with_update(api: Api) -> None:
    await _applied_cm(api)
    body = cm_body()
    body["metadata"]["managedFields"] = [{}]
    ok(await put(api, f"{CMS}/test-cm", body))
    await _cleared(api)


async def test_clear_managed_fields_with_update_empty_list(api: Api) -> None:
    await _applied_cm(api)
    body = cm_body()
    body["metadata"]["managedFields"] = []
    ok(await put(api, f"{CMS}/test-cm", body))
    ok(await patch(api, f"{CMS}/test-cm", {"metadata": {"labels": {"test-label": "v1"}}}))
    await _cleared(api)


# kube's TestErrorsDontFail, TestErrorsDontFailUpdate, TestErrorsDontFailPatch: a managedFields entry with an
# empty fieldsType is dropped (the tracking resets), never a failed write
BAD_ENTRY = {"manager": "apply_test", "operation": "Apply", "apiVersion": "v1", "time": "2019-07-08T09:31:18Z",
             "fieldsType": "", "fieldsV1": {}}


async def test_errors_dont_fail(api: Api) -> None:
    body = cm_body()
    body["metadata"]["managedFields"] = [BAD_ENTRY]
    ok(await api.create(CMS + "?fieldManager=apply_test", body), 201)


async def test_errors_dont_fail_update(api: Api) -> None:
    ok(await api.create(CMS + "?fieldManager=apply_test", cm_body()), 201)
    body = cm_body()
    body["metadata"]["managedFields"] = [BAD_ENTRY]
    ok(await put(api, f"{CMS}/test-cm", body, "apply_test"))


async def test_errors_dont_fail_patch(api: Api) -> None:
    ok(await api.create(CMS + "?fieldManager=apply_test", cm_body()), 201)
    ok(await patch(api, f"{CMS}/test-cm", [{"op": "replace", "path": "/metadata/managedFields",
                                           "value": [BAD_ENTRY]}], JSON_PATCH, "apply_test"))


# kube's TestApplyDoesNotChangeManagedFieldsViaSubresources
async def test_apply_does_not_change_managed_fields_via_subresources(api: Api) -> None:
    live = ok(await apply(api, f"{PODS}/just-a-pod", pod("just-a-pod")))
    update = {"metadata": {"managedFields": [{
        "manager": "testing", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"testing"}': {".": {}, "f:image": {}, "f:name": {}}}}}}]},
        "status": {"conditions": [{"type": "MyStatus", "status": "true"}]}}
    new = ok(await patch(api, f"{PODS}/just-a-pod/status", update, manager="update_managedfields_test"))
    assert len(live["metadata"]["managedFields"]) == 1
    assert len(new["metadata"]["managedFields"]) == 2, new["metadata"]["managedFields"]
    assert new["metadata"]["managedFields"][0] == live["metadata"]["managedFields"][0]
    assert new["metadata"]["managedFields"][1]["manager"] == "update_managedfields_test"


# kube's TestApplyUnsetExclusivelyOwnedFields
async def test_apply_unset_exclusively_owned_fields(api: Api) -> None:
    path = f"{DEPLOYS}/deployment-exclusive-unset"
    first = nginx("deployment-exclusive-unset")
    first["spec"]["template"]["spec"]["hostname"] = "test-hostname"
    ok(await apply(api, path, first))
    got = ok(await apply(api, path, nginx("deployment-exclusive-unset", replicas=None)))
    assert got["spec"]["replicas"] == 1  # back to the default
    assert not got["spec"]["template"]["spec"].get("hostname")


# kube's TestApplyUnsetSharedFields
async def test_apply_unset_shared_fields(api: Api) -> None:
    path = f"{DEPLOYS}/deployment-shared-unset"
    first = nginx("deployment-shared-unset")
    first["spec"]["template"]["spec"]["hostname"] = "test-hostname"
    for manager in ("shared_owner_1", "shared_owner_2"):
        ok(await apply(api, path, first, manager))
    got = ok(await apply(api, path, nginx("deployment-shared-unset", replicas=None), "shared_owner_1"))
    assert got["spec"]["replicas"] == 3
    assert got["spec"]["template"]["spec"]["hostname"] == "test-hostname"


# kube's TestApplyCanTransferFieldOwnershipToController
async def test_apply_can_transfer_field_ownership_to_controller(api: Api) -> None:
    path = f"{DEPLOYS}/deployment-shared-map-item-removal"
    applied = ok(await apply(api, path, nginx("deployment-shared-map-item-removal"), "test_applier"))
    applied["spec"]["replicas"] = 4
    ok(await put(api, path, applied, "test_updater"))
    got = ok(await apply(api, path, nginx("deployment-shared-map-item-removal", replicas=None), "test_applier"))
    assert got["spec"]["replicas"] == 4


# kube's TestApplyCanRemoveMapItemsContributedToByControllers
async def test_apply_can_remove_map_items_contributed_to_by_controllers(api: Api) -> None:
    path = f"{DEPLOYS}/deployment-shared-map-item-removal"
    applied = ok(await apply(api, path, nginx("deployment-shared-map-item-removal", replicas=None), "test_applier"))
    applied["spec"]["template"]["spec"]["containers"][0]["workingDir"] = "/home/replacement"
    ok(await put(api, path, applied, "test_updater"))
    second = nginx("deployment-shared-map-item-removal")
    second["spec"]["template"]["spec"]["hostname"] = "test-hostname"
    second["spec"]["template"]["spec"]["containers"][0]["name"] = "other-container"
    got = ok(await apply(api, path, second, "test_applier"))
    containers = got["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["other-container"]


# kube's TestDefaultMissingKeys: a port's protocol defaults to TCP for its key, so a second applier naming
# TCP addresses the same item and conflicts on its name
async def test_default_missing_keys(api: Api) -> None:
    path = f"{DEPLOYS}/deployment-shared-map-item-removal"
    ok(await apply(api, path, nginx("deployment-shared-map-item-removal", replicas=None,
                                    ports=[{"name": "foo", "containerPort": 80}]), "test_applier"))
    r = await apply(api, path, nginx("deployment-shared-map-item-removal", replicas=None,
                                     ports=[{"name": "bar", "containerPort": 80, "protocol": "TCP"}]),
                    "test_applier_conflict")
    assert r.status == 409, r.body
    causes = r.json()["details"]["causes"]
    assert len(causes) == 1, causes
    assert causes[0]["field"] == ('.spec.template.spec.containers[name="nginx"].ports'
                                  '[containerPort=80,protocol="TCP"].name')


# kube's TestUpgradeClientSideToServerSideApply
async def test_upgrade_client_side_to_server_side_apply(api: Api) -> None:
    last = ('{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"my-deployment","labels":{"app":'
            '"my-app"}},"spec":{"replicas": 3,"template":{"metadata":{"labels":{"app":"my-app"}},"spec":'
            '{"containers":[{"name":"my-c","image":"my-image"}]}}}}\n')
    created = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "my-deployment", "labels": {"app": "my-app"},
                            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last}},
               "spec": {"replicas": 100000, "selector": {"matchLabels": {"app": "my-app"}},
                        "template": {"metadata": {"labels": {"app": "my-app"}},
                                     "spec": {"containers": [{"name": "my-c", "image": "my-image"}]}}}}
    ok(await api.create(DEPLOYS, created), 201)
    path = f"{DEPLOYS}/my-deployment"
    conflicting = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-deployment
  labels:
    app: my-new-label
spec:
  replicas: 3 # expect conflict
  template:
    metadata:
      labels:
        app: my-app
    spec:
      containers:
      - name: my-c
        image: my-image
"""
    r = await apply(api, path, conflicting, "kubectl")
    assert r.status == 409, r.body
    fine = conflicting.replace("  replicas: 3 # expect conflict\n", "").replace("image: my-image", "image: my-image-new")
    ok(await apply(api, path, fine, "kubectl"))
    got = await get(api, path)
    assert got["spec"]["replicas"] == 100000
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "my-image-new"


# kube's TestRenamingAppliedFieldManagers
async def test_renaming_applied_field_managers(api: Api) -> None:
    path = f"{PODS}/just-a-pod"
    body = pod("just-a-pod")
    body["metadata"]["labels"] = {"a": "one"}
    ok(await apply(api, path, body, "multi_manager_one"))
    ok(await apply(api, path, {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"b": "two"}}},
                   "multi_manager_two"))
    got = await get(api, path)
    assert got["metadata"]["labels"] == {"a": "one", "b": "two"}
    for e in got["metadata"]["managedFields"]:
        e["manager"] = "multi_manager"
    obj = ok(await put(api, path, got))
    managed = obj["metadata"]["managedFields"]
    assert len(managed) == 1, managed
    assert managed[0]["manager"] == "multi_manager" and managed[0]["operation"] == "Apply"
    assert orjson.dumps(managed[0]["fieldsV1"]) == b'{"f:metadata":{"f:labels":{"f:b":{}}}}'


# kube's TestRenamingUpdatedFieldManagers
async def test_renaming_updated_field_managers(api: Api) -> None:
    path = f"{PODS}/just-a-pod"
    ok(await apply(api, path, pod("just-a-pod"), "first"))
    ok(await patch(api, path, {"metadata": {"labels": {"a": "one"}}}, manager="multi_manager_one"))
    ok(await patch(api, path, {"metadata": {"labels": {"b": "two"}}}, manager="multi_manager_two"))
    got = await get(api, path)
    assert got["metadata"]["labels"] == {"a": "one", "b": "two"}
    for e in got["metadata"]["managedFields"]:
        e["manager"] = "multi_manager"
    obj = ok(await put(api, path, got))
    managed = obj["metadata"]["managedFields"]
    assert len(managed) == 2, managed
    assert managed[1]["manager"] == "multi_manager" and managed[1]["operation"] == "Update"
    assert orjson.dumps(managed[1]["fieldsV1"]) == b'{"f:metadata":{"f:labels":{"f:b":{}}}}'


# kube's TestDroppingSubresourceField
async def test_dropping_subresource_field(api: Api) -> None:
    path = f"{PODS}/just-a-pod"
    ok(await apply(api, path, pod("just-a-pod"), "first"))
    ok(await apply(api, path, {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "one"}}},
                   "label_manager"))
    ok(await apply(api, f"{path}/status", {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"b": "two"}}},
                   "label_manager"))
    got = await get(api, path)
    assert got["metadata"]["labels"] == {"a": "one", "b": "two"}
    managed = got["metadata"]["managedFields"]
    assert len(managed) == 3, managed
    assert (managed[1]["manager"], managed[1]["operation"], managed[1].get("subresource", "")) == (
        "label_manager", "Apply", "")
    assert (managed[2]["manager"], managed[2]["operation"], managed[2].get("subresource")) == (
        "label_manager", "Apply", "status")
    for e in managed:
        e.pop("subresource", None)
    obj = ok(await put(api, path, got))
    managed = obj["metadata"]["managedFields"]
    assert len(managed) == 2, managed
    assert managed[1]["manager"] == "label_manager" and managed[1]["operation"] == "Apply"
    assert orjson.dumps(managed[1]["fieldsV1"]) == b'{"f:metadata":{"f:labels":{"f:b":{}}}}'


# kube's TestDroppingSubresourceFromSpecField
async def test_dropping_subresource_from_spec_field(api: Api) -> None:
    path = f"{PODS}/just-a-pod"
    ok(await apply(api, path, pod("just-a-pod"), "first"))
    ok(await patch(api, path, {"metadata": {"labels": {"a": "two"}}}, manager="manager"))
    ok(await patch(api, f"{path}/status", {"status": {"phase": "Running"}}, manager="manager"))
    got = await get(api, path)
    assert got["metadata"]["labels"] == {"a": "two"}
    assert got["status"]["phase"] == "Running"
    managed = got["metadata"]["managedFields"]
    assert len(managed) == 3, managed
    assert (managed[1]["manager"], managed[1]["operation"], managed[1].get("subresource", "")) == (
        "manager", "Update", "")
    assert (managed[2]["manager"], managed[2]["operation"], managed[2].get("subresource")) == (
        "manager", "Update", "status")
    for e in managed:
        e.pop("subresource", None)
    obj = ok(await put(api, path, got))
    managed = obj["metadata"]["managedFields"]
    assert len(managed) == 2, managed
    assert managed[1]["manager"] == "manager" and managed[1]["operation"] == "Update"
    assert orjson.dumps(managed[1]["fieldsV1"]) == b'{"f:status":{"f:phase":{}}}'


# kube's TestSubresourceField
async def test_subresource_field(api: Api) -> None:
    path = f"{DEPLOYS}/deployment"
    ok(await apply(api, path, nginx(), "manager"))
    ok(await patch(api, f"{path}/scale", {"spec": {"replicas": 32}}, manager="manager"))
    managed = (await get(api, path))["metadata"]["managedFields"]
    assert len(managed) == 2, managed
    assert (managed[0]["manager"], managed[0]["operation"], managed[0].get("subresource", "")) == (
        "manager", "Apply", "")
    assert (managed[1]["manager"], managed[1]["operation"], managed[1].get("subresource")) == (
        "manager", "Update", "scale")
    assert orjson.dumps(managed[1]["fieldsV1"]) == b'{"f:spec":{"f:replicas":{}}}'


# kube's TestApplyFormerlyAtomicFields
async def test_apply_formerly_atomic_fields(api: Api) -> None:
    old_pv = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"finalizers": ["kubernetes.io/pv-protection"], "labels": {"type": "local"},
                           "name": "pv-storage"},
              "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "16Mi"},
                       "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "pvc-storage",
                                    "namespace": "default", "resourceVersion": "15499",
                                    "uid": "2018e302-7b12-406c-9fa2-e52535d29e48"},
                       "hostPath": {"path": "/tmp/mydata", "type": ""},
                       "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
              "status": {"phase": "Bound"}}
    managed = [
        {"apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:type": {}}},
                      "f:spec": {"f:accessModes": {}, "f:capacity": {"f:storage": {}}, "f:hostPath": {"f:path": {}},
                                 "f:storageClassName": {}}},
         "manager": "apply_test", "operation": "Apply", "time": "2022-06-08T23:46:32Z"},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}},
         "manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
         "time": "2022-06-08T23:46:32Z"},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:claimRef": {}}},
         "manager": "kube-controller-manager", "operation": "Update", "time": "2022-06-08T23:46:37Z"}]
    original_pv = {"kind": "PersistentVolume", "apiVersion": "v1",
                   "metadata": {"labels": {"type": "local"}, "name": "pv-storage"},
                   "spec": {"storageClassName": "", "capacity": {"storage": "16Mi"}, "accessModes": ["ReadWriteOnce"],
                            "hostPath": {"path": "/tmp/mydata"},
                            "claimRef": {"name": "pvc-storage", "namespace": "default"}}}
    path = "/api/v1/persistentvolumes/pv-storage"
    original = ok(await api.create("/api/v1/persistentvolumes?fieldManager=apply_test", old_pv), 201)
    ok(await patch(api, path, {"apiVersion": "v1", "kind": "PersistentVolume",
                               "metadata": {"name": "pv-storage", "managedFields": managed}}, SMP, "apply_test"))
    new = ok(await apply(api, path, original_pv))
    assert new["spec"]["claimRef"] == original["spec"]["claimRef"]
    expected = copy.deepcopy(managed)
    expected[0]["fieldsV1"]["f:spec"]["f:claimRef"] = {"f:name": {}, "f:namespace": {}}
    expected[0]["fieldsV1"]["f:spec"] = dict(sorted(expected[0]["fieldsV1"]["f:spec"].items()))
    got = [{k: v for k, v in e.items() if k != "time"} for e in new["metadata"]["managedFields"]]
    assert got == [{k: v for k, v in e.items() if k != "time"} for e in expected]


# kube's TestDuplicatesInAssociativeLists, the first two steps: a create keeps duplicate keys, and an
# apply of unrelated items is strictly additive
async def test_duplicates_in_associative_lists(api: Api) -> None:
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "example-daemonset", "labels": {"app": "example"}},
          "spec": {"selector": {"matchLabels": {"app": "example"}},
                   "template": {"metadata": {"labels": {"app": "example"}},
                                "spec": {"containers": [{
                                    "name": "nginx", "image": "nginx",
                                    "ports": [{"name": "port0", "containerPort": 1},
                                              {"name": "port1", "containerPort": 80},
                                              {"name": "port2", "containerPort": 80}],
                                    "env": [{"name": "ENV0", "value": "/env0value"},
                                            {"name": "PATH", "value": "/bin"},
                                            {"name": "PATH", "value": "$PATH:/usr/bin"}]}]}}}}
    created = ok(await api.create("/apis/apps/v1/namespaces/default/daemonsets?fieldManager=create", ds), 201)
    c = created["spec"]["template"]["spec"]["containers"][0]
    assert len(c["env"]) == 3 and len(c["ports"]) == 3
    containers = created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"]['k:{"name":"nginx"}']
    assert containers["f:env"] == {".": {}, 'k:{"name":"ENV0"}': {".": {}, "f:name": {}, "f:value": {}},
                                   'k:{"name":"PATH"}': {}}
    assert containers["f:ports"] == {
        ".": {}, 'k:{"containerPort":1,"protocol":"TCP"}': {".": {}, "f:containerPort": {}, "f:name": {},
                                                           "f:protocol": {}},
        'k:{"containerPort":80,"protocol":"TCP"}': {}}
    more = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: example-daemonset
  labels:
    app: example
spec:
  selector:
    matchLabels:
      app: example
  template:
    spec:
      containers:
        - name: nginx
          image: nginx
          ports:
            - name: port3
              containerPort: 443
          env:
            - name: HOME
              value: "/usr/home"
"""
    obj = ok(await apply(api, "/apis/apps/v1/namespaces/default/daemonsets/example-daemonset", more, "apply"))
    c = obj["spec"]["template"]["spec"]["containers"][0]
    assert len(c["env"]) == 4 and len(c["ports"]) == 4
    first = entries(obj)[0]
    assert first == {"manager": "apply", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {
                         "f:selector": {}, "f:template": {"f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                             ".": {}, "f:env": {'k:{"name":"HOME"}': {".": {}, "f:name": {}, "f:value": {}}},
                             "f:image": {}, "f:name": {},
                             "f:ports": {'k:{"containerPort":443,"protocol":"TCP"}': {
                                 ".": {}, "f:containerPort": {}, "f:name": {}}}}}}}}}}
    # an apply naming the repeated key conflicts with the creator, who owns the repeated items as a whole;
    # forced, its one item replaces them all and the creator's marker goes
    path_env = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "example-daemonset"},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "nginx", "env": [{"name": "PATH", "value": "/usr/bin"}]}]}}}}
    url = "/apis/apps/v1/namespaces/default/daemonsets/example-daemonset"
    r = await apply(api, url, path_env, "fixer")
    assert r.status == 409, r.body
    assert '.spec.template.spec.containers[name="nginx"].env[name="PATH"]' in r.json()["message"]
    obj = ok(await apply(api, url, path_env, "fixer", force=True))
    env = obj["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["ENV0", "PATH", "HOME"] and env[1]["value"] == "/usr/bin"
    creator = next(e for e in entries(obj) if e["manager"] == "create")
    c_env = creator["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']["f:env"]
    assert 'k:{"name":"PATH"}' not in c_env and 'k:{"name":"ENV0"}' in c_env
