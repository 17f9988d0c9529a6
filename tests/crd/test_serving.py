"""Serving custom objects (issue 14 item 2): every verb in both scopes, watch with resourceVersion from
the resource's own watch cache, label/field selectors incl. selectableFields, Table output with the
printer columns, strategic merge patch 415, protobuf not offered, a deprecated version's Warning."""

from __future__ import annotations

from typing import Any

import orjson
import trio

from kapi.apis.customresources import custom_resources
from kapi.encoding import codec
from kapi.object.listopts import parse_list_options
from tests.crd.serving_support import GROUP, cr_api, serve_crds, widget_crd  # noqa: F401 (fixture)

NS = f"/apis/{GROUP}/v1/namespaces/default/widgets"
CLUSTER = f"/apis/{GROUP}/v1/gadgets"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def widget(name: str, color: str = "red", kind: str = "Widget", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name, "labels": {"app": color}},
            "spec": {"color": color, **spec}}


def test_resources_of_a_crd() -> None:
    crd = widget_crd(extra_versions=[{"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                                      "schema": {"openAPIV3Schema": {"type": "object"}}},
                                     {"name": "v1alpha1", "served": False, "storage": False}])
    v1, beta = custom_resources(crd)
    assert (v1.group, v1.version, v1.resource, v1.kind, v1.namespaced) == (GROUP, "v1", "widgets", "Widget", True)
    assert v1.short_names == ("wi",) and v1.categories == ("all",) and v1.singular == "widget"
    assert v1.subresources == ("status", "scale") and beta.subresources == ()
    assert v1.prefix == f"{GROUP}/widgets" == beta.prefix
    assert v1.storage_version == "" and beta.storage_version == "v1"
    assert v1.warning == "" and beta.warning == f"{GROUP}/v1beta1 Widget is deprecated"
    crd["spec"]["versions"][1]["deprecationWarning"] = "use v1"
    assert custom_resources(crd)[1].warning == "use v1"
    (gadgets,) = custom_resources(widget_crd(scope="Cluster"))
    assert not gadgets.namespaced and gadgets.resource == "gadgets"


async def _verbs(api: Any, base: str, kind: str) -> None:
    r = await api.create(base, widget("a", kind=kind))
    assert r.status == 201, r.body
    created = r.json()
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]
    assert ("namespace" in created["metadata"]) == ("namespaces" in base)
    assert (await api.create(base, widget("a", kind=kind))).status == 409
    assert (await api.create(base, widget("b", "blue", kind=kind))).status == 201
    got = (await api.request("GET", f"{base}/a")).json()
    assert got["spec"]["color"] == "red" and got["kind"] == kind
    listed = (await api.request("GET", base)).json()
    assert listed["kind"] == f"{kind}List" and sorted(i["metadata"]["name"] for i in listed["items"]) == ["a", "b"]
    got["spec"]["color"] = "green"
    r = await api.request("PUT", f"{base}/a", got)
    assert r.status == 200 and r.json()["metadata"]["generation"] == 2
    r = await api.request("PUT", f"{base}/a", got)  # stale resourceVersion
    assert r.status == 409
    r = await api.request("PATCH", f"{base}/a", [{"op": "replace", "path": "/spec/color", "value": "blue"}],
                          content_type="application/json-patch+json")
    assert r.status == 200 and r.json()["spec"]["color"] == "blue"
    r = await api.request("PATCH", f"{base}/a", {"metadata": {"labels": {"x": "y"}}},
                          content_type="application/merge-patch+json")
    assert r.status == 200 and r.json()["metadata"]["labels"]["x"] == "y"
    assert r.json()["metadata"]["generation"] == 3  # a metadata change leaves the generation
    r = await api.request("DELETE", f"{base}/a")
    assert r.status == 200 and r.json()["status"] == "Success"
    assert (await api.request("GET", f"{base}/a")).status == 404
    r = await api.request("DELETE", base)
    assert r.status == 200 and [i["metadata"]["name"] for i in r.json()["items"]] == ["b"]
    assert (await api.request("GET", base)).json()["items"] == []


async def test_every_verb_namespaced(cr_api: Any) -> None:
    await _verbs(cr_api, NS, "Widget")


async def test_every_verb_cluster_scoped(cr_api: Any) -> None:
    await _verbs(cr_api, CLUSTER, "Gadget")
    assert (await cr_api.request("GET", f"/apis/{GROUP}/v1/namespaces/default/gadgets")).status == 404


async def test_stored_under_group_and_plural(cr_api: Any) -> None:
    await cr_api.create(NS, widget("a"))
    await cr_api.create(CLUSTER, widget("g", kind="Gadget"))
    kv = await cr_api.registry.storage.get(f"/registry/{GROUP}/widgets/default/a")
    assert codec.decode_object(kv.value)["spec"]["color"] == "red"
    await cr_api.registry.storage.get(f"/registry/{GROUP}/gadgets/g")


async def test_kind_and_api_version_checked(cr_api: Any) -> None:
    r = await cr_api.create(NS, {**widget("a"), "kind": "Other"})
    assert r.status == 400 and "does not match the expected kind (Widget)" in r.json()["message"]


async def test_name_must_be_a_dns_subdomain(cr_api: Any) -> None:
    r = await cr_api.create(NS, widget("Not_Valid"))
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "metadata.name"


async def test_any_qualified_finalizer(cr_api: Any) -> None:
    body = widget("a")
    body["metadata"]["finalizers"] = ["example.com/cleanup"]
    assert (await cr_api.create(NS, body)).status == 201
    r = await cr_api.request("DELETE", f"{NS}/a")
    assert r.status == 200 and r.json()["metadata"]["deletionTimestamp"]
    r = await cr_api.request("PATCH", f"{NS}/a", {"metadata": {"finalizers": None}},
                             content_type="application/merge-patch+json")
    assert r.status == 200
    assert (await cr_api.request("GET", f"{NS}/a")).status == 404


async def _events(api: Any, res: Any, query: dict[str, str], count: int) -> list[tuple[str, dict[str, Any]]]:
    opts = parse_list_options({**query, "watch": "true"})
    lines = await api.registry.watch_lines(res, "default", opts, trio.current_time() + 3600)
    out: list[tuple[str, dict[str, Any]]] = []
    async for chunk in lines:
        for line in chunk.splitlines():
            event = orjson.loads(line)
            out.append((event["type"], event["object"]))
        if len(out) >= count:
            break
    await lines.aclose()
    return out


async def test_watch_from_a_resource_version(cr_api: Any) -> None:
    res = cr_api.registry.table.get(GROUP, "v1", "widgets")
    first = (await cr_api.create(NS, widget("a"))).json()
    rv = first["metadata"]["resourceVersion"]
    await cr_api.create(NS, widget("b", "blue"))
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"color": "green"}},
                             content_type="application/merge-patch+json")
    assert r.status == 200
    await cr_api.request("DELETE", f"{NS}/b")
    events = await _events(cr_api, res, {"resourceVersion": rv}, 3)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert events[1][1]["spec"]["color"] == "green" and events[1][1]["kind"] == "Widget"
    # resourceVersion unset: the current objects first
    events = await _events(cr_api, res, {}, 1)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "a")]
    assert cr_api.registry.cachers[res.cache_key].ready  # served by its own watch cache


async def test_watch_with_a_selectable_field(cr_api: Any) -> None:
    res = cr_api.registry.table.get(GROUP, "v1", "widgets")
    rv = (await cr_api.create(NS, widget("a"))).json()["metadata"]["resourceVersion"]
    await cr_api.create(NS, widget("b", "blue"))
    await cr_api.request("PATCH", f"{NS}/a", {"spec": {"color": "blue"}}, content_type="application/merge-patch+json")
    events = await _events(cr_api, res, {"resourceVersion": rv, "fieldSelector": "spec.color=blue"}, 2)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "b"), ("ADDED", "a")]


async def test_list_resource_version_semantics(cr_api: Any) -> None:
    rv = (await cr_api.create(NS, widget("a"))).json()["metadata"]["resourceVersion"]
    r = await cr_api.request("GET", f"{NS}?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert r.status == 200 and [i["metadata"]["name"] for i in r.json()["items"]] == ["a"]
    r = await cr_api.request("GET", f"{NS}?resourceVersion=0")
    assert r.status == 200
    r = await cr_api.request("GET", f"{NS}?resourceVersion=999999&resourceVersionMatch=NotOlderThan")
    assert r.status == 504  # newer than storage: kube's "Too large resource version"
    assert r.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


async def test_list_items_carry_api_version_and_kind(cr_api: Any) -> None:
    """kube's lists of custom resources are unstructured: each item keeps its apiVersion and kind
    (its typed lists of built-in kinds drop them), from the cache, from storage, in JSON and YAML."""
    assert (await cr_api.create(NS, widget("a"))).status == 201
    for query in ("", "?resourceVersion=0", "?limit=1"):
        items = (await cr_api.request("GET", NS + query)).json()["items"]
        assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in items] == [(f"{GROUP}/v1", "Widget", "a")]
    r = await cr_api.request("GET", NS, headers={"accept": "application/yaml"})
    assert r.status == 200 and b"  kind: Widget" in r.body and b"- apiVersion: " + GROUP.encode() + b"/v1" in r.body
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert (await cr_api.request("POST", "/api/v1/namespaces/default/configmaps", cm)).status == 201
    configmaps = (await cr_api.request("GET", "/api/v1/namespaces/default/configmaps")).json()["items"]
    assert configmaps and all("kind" not in i and "apiVersion" not in i for i in configmaps)


async def test_label_and_field_selectors(cr_api: Any) -> None:
    for name, color in (("a", "red"), ("b", "blue"), ("c", "red")):
        assert (await cr_api.create(NS, widget(name, color))).status == 201

    async def names(query: str) -> list[str]:
        r = await cr_api.request("GET", f"{NS}?{query}")
        assert r.status == 200, r.body
        return sorted(i["metadata"]["name"] for i in r.json()["items"])

    assert await names("labelSelector=app%3Dred") == ["a", "c"]
    assert await names("labelSelector=app+notin+(red)") == ["b"]
    assert await names("fieldSelector=metadata.name%3Db") == ["b"]
    assert await names("fieldSelector=metadata.namespace%3Ddefault") == ["a", "b", "c"]
    assert await names("fieldSelector=spec.color%3Dred") == ["a", "c"]
    assert await names("fieldSelector=spec.color!%3Dred") == ["b"]
    r = await cr_api.request("GET", f"{NS}?fieldSelector=spec.size%3D3")
    assert r.status == 400
    assert r.json()["message"] == "field label not supported: spec.size"  # kube's crConverter
    # the cluster-scoped kind: no metadata.namespace; spec.color is selectable there too
    await cr_api.create(CLUSTER, widget("g", "blue", kind="Gadget"))
    r = await cr_api.request("GET", f"{CLUSTER}?fieldSelector=spec.color%3Dblue")
    assert [i["metadata"]["name"] for i in r.json()["items"]] == ["g"]
    r = await cr_api.request("GET", f"{CLUSTER}?fieldSelector=metadata.namespace%3Ddefault")
    assert r.status == 400 and r.json()["message"] == "field label not supported: metadata.namespace"


async def test_table_with_printer_columns(cr_api: Any) -> None:
    body = widget("a", size=5)
    assert (await cr_api.create(NS, body)).status == 201
    await cr_api.request("PATCH", f"{NS}/a/status", {"status": {"conditions": [
        {"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}},
        content_type="application/merge-patch+json")
    r = await cr_api.request("GET", NS, headers={"accept": TABLE})
    assert r.status == 200
    table = r.json()
    cols = table["columnDefinitions"]
    assert [(c["name"], c["type"], c["priority"]) for c in cols] == [
        ("Name", "string", 0), ("Color", "string", 0), ("Size", "integer", 1), ("Ready", "string", 0),
        ("Age", "date", 0)]
    assert cols[0]["format"] == "name"
    assert cols[1]["description"] == "Custom resource definition column (in JSONPath format): .spec.color"
    (row,) = table["rows"]
    name, color, size, ready, age = row["cells"]
    assert (name, color, ready) == ("a", "red", "True")
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert age.endswith("s") or age.endswith("m")
    assert size == 5
    one = (await cr_api.request("GET", f"{NS}/a", headers={"accept": TABLE})).json()
    assert one["rows"][0]["cells"][:2] == ["a", "red"]


async def test_table_default_columns(nursery: trio.Nursery) -> None:
    api = await serve_crds(nursery, widget_crd(columns=None))
    await api.create(NS, widget("a"))
    table = (await api.request("GET", NS, headers={"accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "a"
    empty = (await api.request("GET", f"/apis/{GROUP}/v1/namespaces/other/widgets", headers={"accept": TABLE})).json()
    assert empty["rows"] == []


async def test_strategic_merge_patch_is_415(cr_api: Any) -> None:
    await cr_api.create(NS, widget("a"))
    r = await cr_api.request("PATCH", f"{NS}/a", {"spec": {"color": "blue"}},
                             content_type="application/strategic-merge-patch+json")
    assert r.status == 415
    assert r.json()["message"] == ("the body of the request was in an unknown format - accepted media types "
                                   "include: application/json-patch+json, application/merge-patch+json, "
                                   "application/apply-patch+yaml")
    # a built-in kind still takes it
    r = await cr_api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}})
    r = await cr_api.request("PATCH", "/api/v1/namespaces/default/configmaps/c", {"data": {"a": "b"}},
                             content_type="application/strategic-merge-patch+json")
    assert r.status == 200


async def test_protobuf_not_offered(cr_api: Any) -> None:
    await cr_api.create(NS, widget("a"))
    r = await cr_api.request("GET", f"{NS}/a", headers={
        "accept": "application/vnd.kubernetes.protobuf,application/json"})
    assert r.status == 200 and r.headers["content-type"].startswith("application/json")
    r = await cr_api.request("GET", f"{NS}/a", headers={"accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 406
    r = await cr_api.request("POST", NS, b"k8s\x00\x0a\x00", content_type="application/vnd.kubernetes.protobuf")
    assert r.status == 415


async def test_deprecated_version_warning(nursery: trio.Nursery) -> None:
    crd = widget_crd(extra_versions=[{"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                                      "schema": {"openAPIV3Schema": {"type": "object",
                                                                     "x-kubernetes-preserve-unknown-fields": True}}}])
    api = await serve_crds(nursery, crd)
    beta = f"/apis/{GROUP}/v1beta1/namespaces/default/widgets"
    r = await api.create(beta, {**widget("a"), "apiVersion": f"{GROUP}/v1beta1"})
    assert r.status == 201, r.body
    assert r.header_values("warning") == [f'299 - "{GROUP}/v1beta1 Widget is deprecated"']
    assert r.json()["apiVersion"] == f"{GROUP}/v1beta1"
    r = await api.request("GET", beta)
    assert r.header_values("warning") == [f'299 - "{GROUP}/v1beta1 Widget is deprecated"']
    # the same object through the storage version, stored as v1
    r = await api.request("GET", f"{NS}/a")
    assert r.status == 200 and r.json()["apiVersion"] == f"{GROUP}/v1" and not r.header_values("warning")
    kv = await api.registry.storage.get(f"/registry/{GROUP}/widgets/default/a")
    assert codec.decode_object(kv.value)["apiVersion"] == f"{GROUP}/v1"


async def test_apply_on_a_custom_resources_scale(cr_api: Any) -> None:
    apply_type = "application/apply-patch+yaml"
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "sc"},
            "spec": {"color": "red", "replicas": 1}}
    r = await cr_api.request("PATCH", f"{NS}/sc?fieldManager=author", body, content_type=apply_type)
    assert r.status == 201, r.json()
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "sc"}, "spec": {"replicas": 4}}
    r = await cr_api.request("PATCH", f"{NS}/sc/scale?fieldManager=hpa&force=true", scale, content_type=apply_type)
    assert r.status == 200 and r.json()["spec"]["replicas"] == 4, r.json()
    obj = (await cr_api.request("GET", f"{NS}/sc")).json()
    assert obj["spec"] == {"color": "red", "replicas": 4, "size": 3}
    entries = {(e["manager"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}
    assert entries[("hpa", "scale")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert entries[("hpa", "scale")]["apiVersion"] == f"{GROUP}/v1"
    assert entries[("author", "")]["fieldsV1"]["f:spec"] == {"f:color": {}}


async def test_apply_fills_list_map_keys_with_their_schema_defaults(nursery: trio.Nursery) -> None:
    crd = widget_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["ports"] = {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
        "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "protocol": {"type": "string", "default": "UDP"},
            "port": {"type": "integer"}}}}
    api = await serve_crds(nursery, crd)
    apply_type = "application/apply-patch+yaml"

    async def apply(manager: str, ports: list[dict[str, Any]]) -> Any:
        body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "p"}, "spec": {"ports": ports}}
        return await api.request("PATCH", f"{NS}/p?fieldManager={manager}", body, content_type=apply_type)

    assert (await apply("a", [{"name": "dns", "port": 53}])).status == 201
    # b names the same item with its defaulted key spelled out, and adds a field of its own to it
    r = await apply("b", [{"name": "dns", "protocol": "UDP", "port": 53}, {"name": "web", "protocol": "TCP"}])
    assert r.status == 200, r.json()
    obj = r.json()
    assert obj["spec"]["ports"] == [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "web", "protocol": "TCP"}]
    entries = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}
    assert set(entries["a"]["f:spec"]["f:ports"]) == {'k:{"name":"dns","protocol":"UDP"}'}
    assert set(entries["b"]["f:spec"]["f:ports"]) == {'k:{"name":"dns","protocol":"UDP"}',
                                                     'k:{"name":"web","protocol":"TCP"}'}
    # a changes the shared port: a conflict with b, named by the defaulted key
    c = await apply("a", [{"name": "dns", "port": 5353}])
    assert c.status == 409
    assert c.json()["message"] == ('Apply failed with 1 conflict: conflict with "b": '
                                   '.spec.ports[name="dns",protocol="UDP"].port')
