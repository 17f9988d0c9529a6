"""Handlers end to end through the ASGI app, no sockets: verbs, object semantics, errors."""

from __future__ import annotations

from typing import Any

import trio

from .conftest import Api

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                                                       "env": [{"name": "A", "value": "1"}]}]}}},
    }


async def test_create_get_list(api: Api) -> None:
    r = await api.create("/api/v1/namespaces/default/configmaps", cm("a", x="1"))
    assert r.status == 201, r.body
    created = r.json()
    md = created["metadata"]
    assert md["namespace"] == "default" and md["uid"] and md["creationTimestamp"]
    assert int(md["resourceVersion"]) > 0
    assert "generation" not in md
    got = (await api.request("GET", "/api/v1/namespaces/default/configmaps/a")).json()
    assert got == created
    lst = (await api.request("GET", "/api/v1/namespaces/default/configmaps")).json()
    assert lst["kind"] == "ConfigMapList" and lst["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a"]
    assert "kind" not in lst["items"][0]
    assert int(lst["metadata"]["resourceVersion"]) >= int(md["resourceVersion"])


async def test_duplicate_create_is_409_already_exists(api: Api) -> None:
    await api.create("/api/v1/namespaces/default/configmaps", cm("dup"))
    r = await api.create("/api/v1/namespaces/default/configmaps", cm("dup"))
    assert r.status == 409
    body = r.json()
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "dup" already exists'
    assert body["details"] == {"name": "dup", "kind": "configmaps"}


async def test_not_found_status(api: Api) -> None:
    r = await api.request("GET", "/apis/apps/v1/namespaces/default/deployments/nope")
    assert r.status == 404
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": 'deployments.apps "nope" not found', "reason": "NotFound",
                        "details": {"name": "nope", "group": "apps", "kind": "deployments"}, "code": 404}


async def test_stale_update_is_409_conflict(api: Api) -> None:
    obj = (await api.create("/api/v1/namespaces/default/configmaps", cm("c", v="1"))).json()
    obj["data"]["v"] = "2"
    r1 = await api.request("PUT", "/api/v1/namespaces/default/configmaps/c", obj)
    assert r1.status == 200
    obj["data"]["v"] = "3"
    r2 = await api.request("PUT", "/api/v1/namespaces/default/configmaps/c", obj)
    assert r2.status == 409
    assert r2.json()["reason"] == "Conflict"
    assert r2.json()["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been '
                                    "modified; please apply your changes to the latest version and try again")


async def test_update_without_change_keeps_resource_version(api: Api) -> None:
    obj = (await api.create("/api/v1/namespaces/default/configmaps", cm("same", v="1"))).json()
    r = await api.request("PUT", "/api/v1/namespaces/default/configmaps/same", obj)
    assert r.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


async def test_generate_name(api: Api) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    name = (await api.create("/api/v1/namespaces/default/configmaps", body)).json()["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == 9


async def test_invalid_name_is_422_with_causes(api: Api) -> None:
    r = await api.create("/api/v1/namespaces/default/configmaps", cm("Bad_Name"))
    assert r.status == 422
    body = r.json()
    assert body["reason"] == "Invalid"
    assert body["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"')
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueInvalid"


async def test_create_in_missing_namespace_is_404(api: Api) -> None:
    r = await api.create("/api/v1/namespaces/nowhere/configmaps", cm("a"))
    assert r.status == 404
    assert r.json()["message"] == 'namespaces "nowhere" not found'


async def test_namespace_mismatch_is_400(api: Api) -> None:
    body = cm("a")
    body["metadata"]["namespace"] = "kube-system"
    r = await api.create("/api/v1/namespaces/default/configmaps", body)
    assert r.status == 400
    assert "does not match the namespace" in r.json()["message"]


async def test_resource_version_on_create_is_400(api: Api) -> None:
    body = cm("a")
    body["metadata"]["resourceVersion"] = "5"
    r = await api.create("/api/v1/namespaces/default/configmaps", body)
    assert r.status == 400


async def test_immutable_configmap(api: Api) -> None:
    body = cm("frozen", a="1")
    body["immutable"] = True
    obj = (await api.create("/api/v1/namespaces/default/configmaps", body)).json()
    obj["data"]["a"] = "2"
    r = await api.request("PUT", "/api/v1/namespaces/default/configmaps/frozen", obj)
    assert r.status == 422
    assert "immutable" in r.json()["message"]


async def test_patch_three_types(api: Api) -> None:
    await api.create("/apis/apps/v1/namespaces/default/deployments", deployment("web"))
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    r = await api.request("PATCH", path, [{"op": "replace", "path": "/spec/replicas", "value": 3}],
                          content_type=JSON_PATCH)
    assert r.status == 200, r.body
    assert r.json()["spec"]["replicas"] == 3
    r = await api.request("PATCH", path, {"metadata": {"labels": {"tier": "front"}}}, content_type=MERGE_PATCH)
    assert r.json()["metadata"]["labels"] == {"app": "web", "tier": "front"}
    # Strategic merge: the container is merged by name, env by name; a merge patch would replace the lists.
    smp = {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:1.27", "env": [{"name": "B", "value": "2"}]}]}}}}
    r = await api.request("PATCH", path, smp, content_type=SMP)
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1 and containers[0]["image"] == "nginx:1.27"
    assert [e["name"] for e in containers[0]["env"]] == ["B", "A"]


async def test_generation_moves_with_spec_not_status(api: Api) -> None:
    obj = (await api.create("/apis/apps/v1/namespaces/default/deployments", deployment("gen"))).json()
    assert obj["metadata"]["generation"] == 1
    path = "/apis/apps/v1/namespaces/default/deployments/gen"
    r = await api.request("PATCH", path, {"spec": {"replicas": 2}}, content_type=MERGE_PATCH)
    assert r.json()["metadata"]["generation"] == 2
    r = await api.request("PATCH", path + "/status", {"status": {"replicas": 2}}, content_type=MERGE_PATCH)
    assert r.status == 200, r.body
    assert r.json()["metadata"]["generation"] == 2
    assert r.json()["status"]["replicas"] == 2
    # A status write through the main resource is ignored.
    r = await api.request("PATCH", path, {"status": {"replicas": 7}}, content_type=MERGE_PATCH)
    assert r.json()["status"]["replicas"] == 2


async def test_status_writes_take_the_metadata_the_kinds_status_strategy_lets_through(api: Api) -> None:
    """As kube's status strategies: a pod's /status may change its labels but not its ownerReferences,
    a deployment's keeps its labels; neither changes the spec. The managers' entries follow (reset fields)."""
    pods = "/api/v1/namespaces/default/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert (await api.create(f"{pods}?fieldManager=creator", pod)).status == 201
    owner = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1"}]
    change = {"metadata": {"labels": {"a": "2"}, "ownerReferences": owner},
              "spec": {"activeDeadlineSeconds": 5}, "status": {"phase": "Running"}}
    r = await api.request("PATCH", f"{pods}/p/status?fieldManager=kubelet", change, content_type=MERGE_PATCH)
    assert r.status == 200, r.body
    got = r.json()
    assert got["metadata"]["labels"] == {"a": "2"} and "ownerReferences" not in got["metadata"]
    assert "activeDeadlineSeconds" not in got["spec"] and got["status"]["phase"] == "Running"
    kubelet = next(e for e in got["metadata"]["managedFields"] if e["manager"] == "kubelet")
    assert kubelet["subresource"] == "status"
    assert kubelet["fieldsV1"] == {"f:metadata": {"f:labels": {"f:a": {}}}, "f:status": {"f:phase": {}}}

    deploys = "/apis/apps/v1/namespaces/default/deployments"
    assert (await api.create(f"{deploys}?fieldManager=creator", deployment("d"))).status == 201
    r = await api.request("PATCH", f"{deploys}/d/status?fieldManager=ctl",
                          {"metadata": {"labels": {"x": "y"}, "annotations": {"n": "m"}}, "status": {"replicas": 1}},
                          content_type=MERGE_PATCH)
    assert r.status == 200, r.body
    md = r.json()["metadata"]
    assert "x" not in (md.get("labels") or {}) and md["annotations"]["n"] == "m"
    ctl = next(e for e in md["managedFields"] if e["manager"] == "ctl")
    assert ctl["fieldsV1"] == {"f:metadata": {"f:annotations": {".": {}, "f:n": {}}}, "f:status": {"f:replicas": {}}}


async def test_scale_subresource(api: Api) -> None:
    await api.create("/apis/apps/v1/namespaces/default/deployments", deployment("sc", 2))
    path = "/apis/apps/v1/namespaces/default/deployments/sc/scale"
    scale = (await api.request("GET", path)).json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 2 and scale["status"]["selector"] == "app=sc"
    scale["spec"]["replicas"] = 5
    r = await api.request("PUT", path, scale)
    assert r.status == 200, r.body
    assert r.json()["spec"]["replicas"] == 5
    r = await api.request("PATCH", path, {"spec": {"replicas": 4}}, content_type=MERGE_PATCH)
    assert r.json()["spec"]["replicas"] == 4
    dep = (await api.request("GET", "/apis/apps/v1/namespaces/default/deployments/sc")).json()
    assert dep["spec"]["replicas"] == 4


async def test_delete_preconditions_and_status(api: Api) -> None:
    obj = (await api.create("/api/v1/namespaces/default/configmaps", cm("d"))).json()
    path = "/api/v1/namespaces/default/configmaps/d"
    r = await api.request("DELETE", path, {"preconditions": {"uid": "wrong"}})
    assert r.status == 409
    assert "Precondition failed: UID in precondition: wrong" in r.json()["message"]
    r = await api.request("DELETE", path, {"preconditions": {"uid": obj["metadata"]["uid"]}})
    assert r.status == 200
    assert r.json()["status"] == "Success" and r.json()["details"]["name"] == "d"
    assert (await api.request("GET", path)).status == 404


async def test_finalizers_hold_the_object(api: Api) -> None:
    body = cm("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.create("/api/v1/namespaces/default/configmaps", body)
    path = "/api/v1/namespaces/default/configmaps/fin"
    r = await api.request("DELETE", path)
    assert r.status == 200
    assert r.json()["metadata"]["deletionTimestamp"]
    got = (await api.request("GET", path)).json()
    assert got["metadata"]["deletionTimestamp"]
    r = await api.request("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)
    assert r.status == 200
    assert (await api.request("GET", path)).status == 404


async def test_dry_run_writes_nothing(api: Api) -> None:
    r = await api.create("/api/v1/namespaces/default/configmaps?dryRun=All", cm("dry"))
    assert r.status == 201
    assert (await api.request("GET", "/api/v1/namespaces/default/configmaps/dry")).status == 404


async def test_field_validation(api: Api) -> None:
    body = cm("fv")
    body["bogus"] = 1
    r = await api.create("/api/v1/namespaces/default/configmaps?fieldValidation=Strict", body)
    assert r.status == 400
    assert r.json()["message"] == 'strict decoding error: unknown field "bogus"'
    r = await api.create("/api/v1/namespaces/default/configmaps?fieldValidation=Warn", body)
    assert r.status == 201
    assert r.header_values("warning") == ['299 - "unknown field \\"bogus\\""']
    assert "bogus" not in r.json()


async def test_namespace_lifecycle(api: Api) -> None:
    r = await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": "life"}})
    assert r.status == 201
    assert r.json()["status"]["phase"] == "Active"
    assert r.json()["spec"]["finalizers"] == ["kubernetes"]
    for _ in range(100):
        if (await api.request("GET", "/api/v1/namespaces/life/serviceaccounts/default")).status == 200:
            break
        await trio.sleep(0.01)
    else:
        raise AssertionError("no default ServiceAccount")
    await api.create("/api/v1/namespaces/life/configmaps", cm("x"))
    r = await api.request("DELETE", "/api/v1/namespaces/life")
    assert r.status == 200
    assert r.json()["status"]["phase"] == "Terminating"
    for _ in range(300):
        if (await api.request("GET", "/api/v1/namespaces/life")).status == 404:
            break
        await trio.sleep(0.01)
    else:
        raise AssertionError("namespace was not removed")
    assert (await api.request("GET", "/api/v1/namespaces/life/configmaps/x")).status == 404


async def test_protected_namespace(api: Api) -> None:
    r = await api.request("DELETE", "/api/v1/namespaces/default")
    assert r.status == 403


async def test_namespace_status_changes_through_status_and_finalizers_through_finalize(api: Api) -> None:
    path = "/api/v1/namespaces/split"
    await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "split"}})
    cond = {"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "reason": "Fine",
            "lastTransitionTime": "2026-01-02T03:04:05Z"}
    ns = (await api.request("GET", path)).json()
    ns["status"]["conditions"] = [cond]
    ns["spec"]["finalizers"] = ["kubernetes", "example.com/hold"]
    r = await api.request("PUT", path + "/status", ns)
    assert r.status == 200, r.body
    assert r.json()["status"]["conditions"] == [cond]
    assert r.json()["spec"]["finalizers"] == ["kubernetes"]  # the spec is not the status's
    r = await api.request("PATCH", path, {"status": {"conditions": []}, "spec": {"finalizers": []}},
                          content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    assert r.json()["status"]["conditions"] == [cond] and r.json()["spec"]["finalizers"] == ["kubernetes"]
    ns = r.json()
    ns["spec"]["finalizers"] = ["kubernetes", "example.com/hold"]
    ns["status"]["conditions"] = []
    ns["metadata"]["labels"]["team"] = "a"
    r = await api.request("PUT", path + "/finalize", ns)
    assert r.status == 200, r.body
    assert r.json()["spec"]["finalizers"] == ["kubernetes", "example.com/hold"]
    assert r.json()["metadata"]["labels"]["team"] == "a"  # /finalize takes the metadata too, as in kube
    assert r.json()["status"]["conditions"] == [cond]
    ns = r.json()
    ns["spec"]["finalizers"].append("hold")
    r = await api.request("PUT", path + "/finalize", ns)
    assert r.status == 422 and r.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.finalizers[2]",
        "message": 'Invalid value: "hold": name is neither a standard finalizer name nor is it fully qualified'}]
    r = await api.request("PATCH", path + "/status", {"status": {"phase": "Terminating"}},
                          content_type="application/merge-patch+json")
    assert r.status == 422
    assert r.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "status.Phase",
        "message": "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"}]
    r = await api.request("PATCH", path + "/status", {"status": {"phase": None}},
                          content_type="application/merge-patch+json")
    assert r.status == 200 and r.json()["status"]["phase"] == "Active"  # defaulted, as kube decodes it


async def test_errors_for_bad_requests(api: Api) -> None:
    r = await api.request("POST", "/api/v1/namespaces/default/configmaps", b"{not json")
    assert r.status == 400
    r = await api.request("POST", "/api/v1/namespaces/default/configmaps", b"\x0a\x0b",
                          content_type="application/vnd.kubernetes.protobuf")
    assert r.status == 400 and r.json()["reason"] == "BadRequest"  # not a k8s protobuf envelope
    r = await api.request("POST", "/api/v1/namespaces/default/configmaps", b"\xa1\x61\x61",
                          content_type="application/cbor")
    assert r.status == 415 and r.json()["reason"] == "UnsupportedMediaType"
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps",
                          headers={"Accept": "application/cbor"})
    assert r.status == 406
    r = await api.request("POST", "/api/v1/namespaces/default/configmaps", b"{" + b" " * (3 * 1024 * 1024) + b"}")
    assert r.status == 413
    r = await api.request("PUT", "/api/v1/namespaces/default/configmaps")
    assert r.status == 405
    r = await api.request("GET", "/api/v1/nothings")
    assert r.status == 404
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20")
    assert r.status == 400


async def test_unauthenticated_with_bad_token(api: Api) -> None:
    r = await api.request("GET", "/api/v1/namespaces", token="wrong")
    assert r.status == 401


async def test_discovery(api: Api) -> None:
    core = (await api.request("GET", "/api/v1")).json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"] and pods["categories"] == ["all"] and pods["kind"] == "Pod"
    assert any(r["name"] == "pods/status" for r in core["resources"])
    apps = (await api.request("GET", "/apis/apps/v1")).json()
    scale = next(r for r in apps["resources"] if r["name"] == "deployments/scale")
    assert scale["group"] == "autoscaling" and scale["kind"] == "Scale"
    groups = (await api.request("GET", "/apis")).json()
    assert "apps" in [g["name"] for g in groups["groups"]]
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    r = await api.request("GET", "/apis", headers={"Accept": accept})
    assert r.headers["content-type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    agg = r.json()
    assert agg["kind"] == "APIGroupDiscoveryList"
    apps_group = next(i for i in agg["items"] if i["metadata"].get("name") == "apps")
    deploy = next(r for r in apps_group["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["shortNames"] == ["deploy"] and deploy["scope"] == "Namespaced"
    assert {s["subresource"] for s in deploy["subresources"]} == {"scale", "status"}


async def test_version_and_health(api: Api) -> None:
    v = (await api.request("GET", "/version", token=None)).json()
    assert v["major"] == "1" and v["minor"] == "33" and v["gitVersion"].startswith("v1.33.")
    r = await api.request("GET", "/readyz?verbose", token=None)
    assert r.status == 200 and r.body.decode().endswith("readyz check passed\n")
    api.app.health.shutting_down = True
    r = await api.request("GET", "/readyz", token=None)
    assert r.status == 503 and b"[-]shutdown failed" in r.body
    assert (await api.request("GET", "/livez", token=None)).status == 200


async def test_table_output(api: Api) -> None:
    await api.create("/api/v1/namespaces/default/configmaps", cm("tab", a="1", b="2"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps", headers={"Accept": accept})
    table = r.json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    row = next(row for row in table["rows"] if row["cells"][0] == "tab")
    assert row["cells"][1] == 2
    assert row["object"]["kind"] == "PartialObjectMetadata"


async def test_table_rows_with_objects_carry_their_kind(api: Api) -> None:
    """includeObject=Object: each row's object has kind and apiVersion, from the watch cache or from
    storage (events are not cached), as kube's rows converted to the served version (issue 11)."""
    await api.create("/api/v1/namespaces/default/configmaps", cm("tabobj", a="1"))
    event = {"metadata": {"name": "ev1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "R", "message": "m", "type": "Normal"}
    await api.create("/api/v1/namespaces/default/events", event)
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    for path, api_version, kind, name in (
            ("/api/v1/namespaces/default/configmaps", "v1", "ConfigMap", "tabobj"),
            ("/api/v1/namespaces/default/events", "v1", "Event", "ev1"),
            ("/apis/events.k8s.io/v1/namespaces/default/events", "events.k8s.io/v1", "Event", "ev1")):
        rows = (await api.request("GET", path + "?includeObject=Object", headers={"Accept": accept})).json()["rows"]
        obj = next(row["object"] for row in rows if row["object"]["metadata"]["name"] == name)
        assert (obj["kind"], obj["apiVersion"]) == (kind, api_version), obj


async def test_label_selector_list(api: Api) -> None:
    for name, tier in (("l1", "a"), ("l2", "b"), ("l3", "a")):
        body = cm(name)
        body["metadata"]["labels"] = {"tier": tier}
        await api.create("/api/v1/namespaces/default/configmaps", body)
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps?labelSelector=tier%3Da")
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["l1", "l3"]
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps?labelSelector=tier+notin+(a)")
    assert "l2" in [i["metadata"]["name"] for i in r.json()["items"]]


async def test_pagination_with_continue(api: Api) -> None:
    for i in range(5):
        await api.create("/api/v1/namespaces/default/configmaps", cm(f"p{i}"))
    names: list[str] = []
    token = ""
    rvs = set()
    while True:
        r = (await api.request("GET", "/api/v1/namespaces/default/configmaps?limit=2"
                                      + (f"&continue={token}" if token else ""))).json()
        names += [i["metadata"]["name"] for i in r["items"]]
        rvs.add(r["metadata"]["resourceVersion"])
        token = r["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)]
    assert len(rvs) == 1
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps?limit=2&continue=garbage")
    assert r.status == 400


async def test_service_gets_cluster_ip(api: Api) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    r = await api.create("/api/v1/namespaces/default/services", svc)
    assert r.status == 201, r.body
    spec = r.json()["spec"]
    assert spec["clusterIP"].startswith("10.") and spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["type"] == "ClusterIP" and spec["ports"][0]["targetPort"] == 80


async def test_events_v1_is_a_view_of_core_events(api: Api) -> None:
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
          "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
          "reason": "Started", "message": "hello", "type": "Normal"}
    r = await api.create("/api/v1/namespaces/default/events", ev)
    assert r.status == 201, r.body
    r = await api.request("GET", "/apis/events.k8s.io/v1/namespaces/default/events/e1")
    assert r.status == 200
    body = r.json()
    assert body["apiVersion"] == "events.k8s.io/v1"
    assert body["note"] == "hello" and body["regarding"]["name"] == "p"


async def test_terminating_namespace_refuses_new_content(api: Api) -> None:
    await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "term"}})
    held = cm("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    assert (await api.create("/api/v1/namespaces/term/configmaps", held)).status == 201
    await api.request("DELETE", "/api/v1/namespaces/term")
    r = await api.create("/api/v1/namespaces/term/configmaps", cm("late"))
    assert r.status == 403
    body = r.json()
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('configmaps "late" is forbidden: unable to create new content in namespace term '
                               "because it is being terminated")
    assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    # The held object keeps the namespace until its finalizer goes.
    await trio.sleep(0.2)
    assert (await api.request("GET", "/api/v1/namespaces/term")).json()["status"]["phase"] == "Terminating"
    await api.request("PATCH", "/api/v1/namespaces/term/configmaps/held", {"metadata": {"finalizers": None}},
                      content_type=MERGE_PATCH)
    for _ in range(300):
        if (await api.request("GET", "/api/v1/namespaces/term")).status == 404:
            break
        await trio.sleep(0.02)
    else:
        raise AssertionError("namespace stayed after its last object went")


async def test_deletecollection_by_label(api: Api) -> None:
    for name, tier in (("dc1", "a"), ("dc2", "b"), ("dc3", "a")):
        body = cm(name)
        body["metadata"]["labels"] = {"dc": tier}
        await api.create("/api/v1/namespaces/default/configmaps", body)
    r = await api.request("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=dc%3Da")
    assert r.status == 200
    assert r.json()["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in r.json()["items"]) == ["dc1", "dc3"]
    left = (await api.request("GET", "/api/v1/namespaces/default/configmaps?labelSelector=dc")).json()
    assert [i["metadata"]["name"] for i in left["items"]] == ["dc2"]


async def test_graceful_pod_delete_on_a_node(api: Api, pod_json: dict) -> None:  # type: ignore[type-arg]
    pod = dict(pod_json)
    pod["metadata"] = {"name": "bound"}
    pod.pop("status", None)
    pod["spec"] = dict(pod["spec"], nodeName="node-1")
    assert (await api.create("/api/v1/namespaces/default/pods", pod)).status == 201, "create"
    r = await api.request("DELETE", "/api/v1/namespaces/default/pods/bound")
    assert r.status == 200
    md = r.json()["metadata"]
    assert md["deletionGracePeriodSeconds"] == pod["spec"].get("terminationGracePeriodSeconds", 30)
    assert md["deletionTimestamp"]
    # A later delete may shorten the grace period; 0 removes the pod.
    r = await api.request("DELETE", "/api/v1/namespaces/default/pods/bound?gracePeriodSeconds=0")
    assert r.status == 200
    assert (await api.request("GET", "/api/v1/namespaces/default/pods/bound")).status == 404


async def test_deletecollection_answers_in_yaml_and_protobuf(api: Api) -> None:
    from kapi.encoding import protobuf
    from kapi.object.schema import load_builtin

    for name in ("y1", "p1"):
        body = cm(name)
        body["metadata"]["labels"] = {"fmt": name}
        await api.create("/api/v1/namespaces/default/configmaps", body)
    r = await api.request("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=fmt%3Dy1",
                          headers={"Accept": "application/yaml"})
    assert r.status == 200 and b"kind: ConfigMapList" in r.body and b"name: y1" in r.body
    r = await api.request("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=fmt%3Dp1",
                          headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 200
    lst = protobuf.decode_object(load_builtin(), r.body)
    assert lst["kind"] == "ConfigMapList" and [i["metadata"]["name"] for i in lst["items"]] == ["p1"]


async def test_list_body_is_sent_with_its_content_length(api: Api) -> None:
    for i in range(30):
        r = await api.create("/api/v1/namespaces/default/configmaps",
                             {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v" * 500}})
        assert r.status == 201
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps")
    assert r.status == 200
    assert int(r.headers["content-length"]) == len(r.body)
    assert len(r.json()["items"]) >= 30
    r = await api.request("GET", "/api/v1/namespaces/default/configmaps",
                          headers={"accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 200 and r.headers["content-type"] == "application/vnd.kubernetes.protobuf"
    assert int(r.headers["content-length"]) == len(r.body) and r.body.startswith(b"k8s\x00")


async def test_a_whole_body_over_the_limit_is_not_waited_for(api: Api) -> None:
    """413 for a body that arrived whole: the answer ends without asking for more of it (issue 11: the
    refused body's discarding waited for a message that never comes, until the request's deadline)."""
    big = b"{" + b" " * (3 * 1024 * 1024) + b"}"
    calls: list[str] = []
    out: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        calls.append("receive")
        if len(calls) > 1:
            raise AssertionError("the app asked for more of a body that had ended")
        return {"type": "http.request", "body": big, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/v1/namespaces/default/configmaps", "query_string": b"",
             "headers": [(b"content-type", b"application/json"), (b"authorization", b"Bearer test-admin-token")],
             "http_version": "1.1", "scheme": "https"}
    await api.app(scope, receive, send)
    assert out[0]["status"] == 413 and calls == ["receive"]
    assert out[-1]["type"] == "http.response.body" and not out[-1].get("more_body")
