"""Issue 14, builtins A: storage.k8s.io/v1, discovery.k8s.io/v1 (EndpointSlice), scheduling.k8s.io/v1
(PriorityClass and the system classes made at bootstrap) and node.k8s.io/v1 (RuntimeClass) through the
ASGI app; and for all of builtins A: discovery documents, protobuf, the bootstrap RBAC roles."""

from __future__ import annotations

from typing import Any

from kapi.apis import rbacpolicy
from kapi.object.rbac.covers import covers
from tests.api.conftest import Api, api  # noqa: F401 (the in-process app fixture)
from tests.apis.test_builtin_groups_a_network import causes, table

ST = "/apis/storage.k8s.io/v1"
SC = f"{ST}/storageclasses"
CSID = f"{ST}/csidrivers"
CSIN = f"{ST}/csinodes"
VA = f"{ST}/volumeattachments"
CAP = f"{ST}/namespaces/default/csistoragecapacities"
EPS = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
PC = "/apis/scheduling.k8s.io/v1/priorityclasses"
RC = "/apis/node.k8s.io/v1/runtimeclasses"


def obj(api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


# -------------------------------------------------------------------------- StorageClass


def sc(name: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("provisioner", "ebs.csi.aws.com")
    return obj("storage.k8s.io/v1", "StorageClass", name, **fields)


async def test_storage_class_defaults_table_and_immutables(api: Api) -> None:
    created = await api.create(SC, sc("standard", parameters={"type": "gp3"},
                                      metadata={"name": "standard", "annotations": {
                                          "storageclass.kubernetes.io/is-default-class": "true"}}))
    assert created.status == 201, created.body
    body = created.json()
    assert body["reclaimPolicy"] == "Delete" and body["volumeBindingMode"] == "Immediate"
    assert "namespace" not in body["metadata"] and "generation" not in body["metadata"]
    assert (await api.create(SC, sc("slow", reclaimPolicy="Retain", volumeBindingMode="WaitForFirstConsumer",
                                    allowVolumeExpansion=True))).status == 201
    names, rows = await table(api, SC)
    assert names == ["Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"]
    assert [r[:5] for r in rows] == [["slow", "ebs.csi.aws.com", "Retain", "WaitForFirstConsumer", True],
                                     ["standard (default)", "ebs.csi.aws.com", "Delete", "Immediate", False]]
    body["parameters"] = {"type": "io2"}
    body["provisioner"] = "other.example.com"
    body["reclaimPolicy"] = "Retain"
    body["volumeBindingMode"] = "WaitForFirstConsumer"
    assert causes(await api.request("PUT", f"{SC}/standard", body)) == [
        ("FieldValueForbidden", "parameters", "Forbidden: updates to parameters are forbidden."),
        ("FieldValueForbidden", "provisioner", "Forbidden: updates to provisioner are forbidden."),
        ("FieldValueForbidden", "reclaimPolicy", "Forbidden: updates to reclaimPolicy are forbidden."),
        ("FieldValueInvalid", "volumeBindingMode", 'Invalid value: "WaitForFirstConsumer": field is immutable'),
    ]
    # what may change does (allowVolumeExpansion, labels)
    ok = (await api.request("GET", f"{SC}/standard")).json()
    ok["allowVolumeExpansion"] = True
    assert (await api.request("PUT", f"{SC}/standard", ok)).status == 200


async def test_storage_class_validation(api: Api) -> None:
    assert causes(await api.create(SC, sc("x", provisioner=""))) == [
        ("FieldValueRequired", "provisioner", "Required value")]
    assert causes(await api.create(SC, sc("x", reclaimPolicy="Recycle"))) == [
        ("FieldValueNotSupported", "reclaimPolicy",
         'Unsupported value: "Recycle": supported values: "Delete", "Retain"')]
    assert causes(await api.create(SC, sc("x", volumeBindingMode="Later"))) == [
        ("FieldValueNotSupported", "volumeBindingMode",
         'Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"')]
    reply = await api.create(SC, sc("x", provisioner="bad provisioner!"))
    assert [(r, f) for r, f, _ in causes(reply)] == [("FieldValueInvalid", "provisioner")]


# ------------------------------------------------------------- CSIDriver, CSINode, VA


async def test_csi_driver_defaults_table_and_immutables(api: Api) -> None:
    created = await api.create(CSID, obj("storage.k8s.io/v1", "CSIDriver", "ebs.csi.aws.com", spec={}))
    assert created.status == 201, created.body
    assert created.json()["spec"] == {
        "attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False, "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"]}
    names, rows = await table(api, CSID)
    assert names == ["Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests",
                     "RequiresRepublish", "Modes", "Age"]
    assert rows[0][:7] == ["ebs.csi.aws.com", True, False, False, "<unset>", False, "Persistent"]
    body = created.json()
    body["spec"]["attachRequired"] = False
    assert causes(await api.request("PUT", f"{CSID}/ebs.csi.aws.com", body)) == [
        ("FieldValueInvalid", "spec.attachedRequired", "Invalid value: false: field is immutable")]
    reply = await api.create(CSID, obj("storage.k8s.io/v1", "CSIDriver", "x.example.com", spec={
        "fsGroupPolicy": "Sometimes", "volumeLifecycleModes": ["Forever"],
        "tokenRequests": [{"audience": "a", "expirationSeconds": 60}]}))
    assert causes(reply) == [
        ("FieldValueNotSupported", "spec.fsGroupPolicy",
         'Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"'),
        ("FieldValueInvalid", "spec.tokenRequests[0].expirationSeconds",
         "Invalid value: 60: may not specify a duration less than 10 minutes"),
        ("FieldValueNotSupported", "spec.volumeLifecycleModes",
         'Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"')]


async def test_csi_node_table_and_validation(api: Api) -> None:
    node = obj("storage.k8s.io/v1", "CSINode", "node-1", spec={"drivers": [
        {"name": "ebs.csi.aws.com", "nodeID": "i-123", "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]})
    assert (await api.create(CSIN, node)).status == 201
    names, rows = await table(api, CSIN)
    assert names == ["Name", "Drivers", "Age"] and rows[0][:2] == ["node-1", 1]
    bad = obj("storage.k8s.io/v1", "CSINode", "node-2", spec={"drivers": [
        {"name": "a.example.com", "nodeID": ""}, {"name": "a.example.com", "nodeID": "n"}]})
    assert causes(await api.create(CSIN, bad)) == [
        ("FieldValueRequired", "spec.drivers[0].nodeID", "Required value: nodeID cannot be empty"),
        ("FieldValueDuplicate", "spec.drivers[1].name", 'Duplicate value: "a.example.com"')]


async def test_volume_attachment_status_table_and_immutable_spec(api: Api) -> None:
    va = obj("storage.k8s.io/v1", "VolumeAttachment", "va-1", spec={
        "attacher": "ebs.csi.aws.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}},
        status={"attached": True})
    created = await api.create(VA, va)
    assert created.status == 201, created.body
    # reset on create (the attacher reports it); a Go value struct, so written with its zero value
    assert created.json()["status"] == {"attached": False}
    body = created.json()
    body["status"] = {"attached": True, "attachmentMetadata": {"devicePath": "/dev/xvdba"}}
    st = await api.request("PUT", f"{VA}/va-1/status", body)
    assert st.status == 200, st.body and st.json()["status"]["attached"] is True
    names, rows = await table(api, VA)
    assert names == ["Name", "Attacher", "PV", "Node", "Attached", "Age"]
    assert rows[0][:5] == ["va-1", "ebs.csi.aws.com", "pv-1", "node-1", True]
    moved = st.json()
    moved["spec"]["nodeName"] = "node-2"
    reply = await api.request("PUT", f"{VA}/va-1", moved)
    assert [(r, f) for r, f, _ in causes(reply)] == [("FieldValueInvalid", "spec")]
    assert causes(reply)[0][2].endswith("field is immutable")
    none = obj("storage.k8s.io/v1", "VolumeAttachment", "va-2", spec={"attacher": "", "nodeName": "n", "source": {}})
    assert causes(await api.create(VA, none)) == [
        ("FieldValueRequired", "spec.attacher", "Required value"),
        ("FieldValueRequired", "spec.source",
         "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName")]


async def test_csi_storage_capacity_is_namespaced_with_table(api: Api) -> None:
    cap = obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap-1", storageClassName="standard", capacity="100Gi",
              nodeTopology={"matchLabels": {"topology.ebs.csi.aws.com/zone": "a"}})
    created = await api.create(CAP, cap)
    assert created.status == 201, created.body
    assert created.json()["metadata"]["namespace"] == "default"
    names, rows = await table(api, CAP)
    assert names == ["Name", "StorageClassName", "Capacity"] and rows == [["cap-1", "standard", "100Gi"]]
    body = created.json()
    body["storageClassName"] = "other"
    assert causes(await api.request("PUT", f"{CAP}/cap-1", body)) == [
        ("FieldValueInvalid", "storageClassName", 'Invalid value: "other": field is immutable')]
    neg = obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap-2", storageClassName="standard", capacity="-1Gi")
    assert causes(await api.create(CAP, neg)) == [
        ("FieldValueInvalid", "capacity", 'Invalid value: "-1Gi": must be greater than or equal to 0')]


# ------------------------------------------------------------------------- EndpointSlice


def eps(name: str, **fields: Any) -> dict[str, Any]:
    return obj("discovery.k8s.io/v1", "EndpointSlice", name, **fields)


async def test_endpoint_slice_defaults_and_table(api: Api) -> None:
    created = await api.create(EPS, eps("web-abc", addressType="IPv4",
                                        ports=[{"port": 80}, {"name": "https", "port": 443}],
                                        endpoints=[{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)]))
    assert created.status == 201, created.body
    body = created.json()
    assert body["ports"] == [{"name": "", "port": 80, "protocol": "TCP"},
                             {"name": "https", "port": 443, "protocol": "TCP"}]
    assert body["metadata"]["generation"] == 1
    assert (await api.create(EPS, eps("empty", addressType="IPv6"))).status == 201
    names, rows = await table(api, EPS)
    assert names == ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    assert [r[:4] for r in rows] == [["empty", "IPv6", "<unset>", "<unset>"],
                                     ["web-abc", "IPv4", "80,443", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."]]
    body["addressType"] = "IPv6"
    body["endpoints"] = []
    assert causes(await api.request("PUT", f"{EPS}/web-abc", body)) == [
        ("FieldValueInvalid", "addressType", 'Invalid value: "IPv6": field is immutable')]


async def test_endpoint_slice_validation(api: Api) -> None:
    assert causes(await api.create(EPS, eps("x"))) == [("FieldValueRequired", "addressType", "Required value")]
    assert causes(await api.create(EPS, eps("x", addressType="IPX"))) == [
        ("FieldValueNotSupported", "addressType", 'Unsupported value: "IPX": supported values: "FQDN", "IPv4", "IPv6"')]
    reply = await api.create(EPS, eps("x", addressType="IPv4", endpoints=[
        {"addresses": []}, {"addresses": ["fe80::1", "127.0.0.1"]}],
        ports=[{"name": "http", "port": 80, "protocol": "ICMP"}, {"name": "http", "port": 81}]))
    assert causes(reply) == [
        ("FieldValueRequired", "endpoints[0].addresses", "Required value: must contain at least 1 address"),
        ("FieldValueInvalid", "endpoints[1].addresses[0]", 'Invalid value: "fe80::1": must be a valid IPv4 address'),
        ("FieldValueInvalid", "endpoints[1].addresses[1]",
         'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'),
        ("FieldValueNotSupported", "ports[0].protocol",
         'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'),
        ("FieldValueDuplicate", "ports[1].name", 'Duplicate value: "http"')]


# ------------------------------------------------------------------------- PriorityClass


async def test_system_priority_classes_exist_at_bootstrap(api: Api) -> None:
    got = {i["metadata"]["name"]: i for i in (await api.request("GET", PC)).json()["items"]}
    assert {n: (o["value"], o.get("globalDefault", False), o["preemptionPolicy"]) for n, o in got.items()} == {
        "system-cluster-critical": (2000000000, False, "PreemptLowerPriority"),
        "system-node-critical": (2000001000, False, "PreemptLowerPriority")}
    assert got["system-node-critical"]["description"] == (
        "Used for system critical pods that must not be moved from their current node.")
    names, rows = await table(api, PC)
    assert names == ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
    assert [[r[0], r[1], r[2], r[4]] for r in rows] == [
        ["system-cluster-critical", 2000000000, False, "PreemptLowerPriority"],
        ["system-node-critical", 2000001000, False, "PreemptLowerPriority"]]


async def test_priority_class_defaults_and_validation(api: Api) -> None:
    created = await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "high", value=1000))
    assert created.status == 201, created.body
    assert created.json()["preemptionPolicy"] == "PreemptLowerPriority"
    assert causes(await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "system-mine", value=5))) == [
        ("FieldValueForbidden", "metadata.name", "Forbidden: priority class names with 'system-' prefix are reserved "
         "for system use only. error: system-mine is not a known system priority class")]
    assert causes(await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "huge", value=1000000001))) == [
        ("FieldValueForbidden", "value", "Forbidden: maximum allowed value of a user defined priority is 1000000000")]
    assert causes(await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "p", value=1,
                                           preemptionPolicy="Always"))) == [
        ("FieldValueNotSupported", "preemptionPolicy",
         'Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"')]
    body = created.json()
    body["value"] = 2000
    body["preemptionPolicy"] = "Never"
    assert causes(await api.request("PUT", f"{PC}/high", body)) == [
        ("FieldValueForbidden", "value", "Forbidden: may not be changed in an update."),
        ("FieldValueInvalid", "preemptionPolicy", 'Invalid value: "Never": field is immutable')]
    # a deleted system class comes back at the next bootstrap; a changed value of one is refused
    sys_class = (await api.request("GET", f"{PC}/system-node-critical")).json()
    sys_class["value"] = 7
    assert causes(await api.request("PUT", f"{PC}/system-node-critical", sys_class))[0][:2] == (
        "FieldValueForbidden", "metadata.name")


async def test_system_priority_classes_cannot_be_deleted_and_bootstrap_keeps_them(api: Api) -> None:
    from kapi.server.bootstrap import ensure_system_priority_classes

    reply = await api.request("DELETE", f"{PC}/system-cluster-critical")
    assert reply.status == 403, reply.body
    assert reply.json()["message"] == ('priorityclasses.scheduling.k8s.io "system-cluster-critical" is forbidden: '
                                       "this is a system priority class and cannot be deleted")
    assert reply.json()["details"] == {"name": "system-cluster-critical", "group": "scheduling.k8s.io",
                                       "kind": "priorityclasses"}
    # other classes delete as usual
    await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "low", value=1))
    assert (await api.request("DELETE", f"{PC}/low")).status == 200
    # a bootstrap on a store that has them already changes nothing
    before = (await api.request("GET", f"{PC}/system-node-critical")).json()
    await ensure_system_priority_classes(api.registry)
    assert (await api.request("GET", f"{PC}/system-node-critical")).json() == before


async def test_only_one_global_default_priority_class_on_create(api: Api) -> None:
    first = await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "default", value=10, globalDefault=True))
    assert first.status == 201, first.body
    reply = await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "second", value=20, globalDefault=True))
    assert reply.status == 403, reply.body
    assert reply.json()["message"] == ('priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass '
                                       "default is already marked as default. Only one default can exist")
    assert (await api.create(PC, obj("scheduling.k8s.io/v1", "PriorityClass", "third", value=20))).status == 201


# -------------------------------------------------------------------------- RuntimeClass


async def test_runtime_class(api: Api) -> None:
    created = await api.create(RC, obj("node.k8s.io/v1", "RuntimeClass", "gvisor", handler="runsc"))
    assert created.status == 201, created.body
    names, rows = await table(api, RC)
    assert names == ["Name", "Handler", "Age"] and rows[0][:2] == ["gvisor", "runsc"]
    assert causes(await api.create(RC, obj("node.k8s.io/v1", "RuntimeClass", "x", handler="Run_SC"))) == [
        ("FieldValueInvalid", "handler", "Invalid value: \"Run_SC\": a lowercase RFC 1123 label must consist of lower "
         "case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
         "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]
    missing = causes(await api.create(RC, obj("node.k8s.io/v1", "RuntimeClass", "y")))
    assert [(r, f) for r, f, _ in missing] == [("FieldValueInvalid", "handler")]
    body = created.json()
    body["handler"] = "kata"
    assert causes(await api.request("PUT", f"{RC}/gvisor", body)) == [
        ("FieldValueInvalid", "handler", 'Invalid value: "kata": field is immutable')]


# ------------------------------------------------- discovery, protobuf, RBAC for all of A

A_RESOURCES = {
    "networking.k8s.io/v1": {"ingresses": True, "ingresses/status": True, "ingressclasses": False,
                             "networkpolicies": True},
    "policy/v1": {"poddisruptionbudgets": True, "poddisruptionbudgets/status": True},
    "storage.k8s.io/v1": {"storageclasses": False, "csidrivers": False, "csinodes": False,
                          "volumeattachments": False, "volumeattachments/status": False,
                          "csistoragecapacities": True},
    "discovery.k8s.io/v1": {"endpointslices": True},
    "scheduling.k8s.io/v1": {"priorityclasses": False},
    "node.k8s.io/v1": {"runtimeclasses": False},
}


async def test_discovery_lists_the_groups_and_their_resources(api: Api) -> None:
    listed_groups = (await api.request("GET", "/apis")).json()["groups"]
    groups = {g["name"]: [v["version"] for v in g["versions"]] for g in listed_groups}
    for gv in A_RESOURCES:
        group, version = gv.split("/")
        assert version in groups[group], gv
        listed = (await api.request("GET", f"/apis/{gv}")).json()
        assert {r["name"]: r["namespaced"] for r in listed["resources"]} == A_RESOURCES[gv], gv
    short = {r["name"]: r.get("shortNames") for gv in ("networking.k8s.io/v1", "policy/v1", "storage.k8s.io/v1",
                                                         "scheduling.k8s.io/v1")
             for r in (await api.request("GET", f"/apis/{gv}")).json()["resources"]}
    assert short["ingresses"] == ["ing"] and short["networkpolicies"] == ["netpol"]
    assert short["poddisruptionbudgets"] == ["pdb"] and short["storageclasses"] == ["sc"]
    assert short["priorityclasses"] == ["pc"]


async def test_protobuf_round_trip_of_an_ingress(api: Api) -> None:
    from kapi.encoding import protobuf
    from kapi.object.schema import load_builtin

    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "pb"},
           "spec": {"ingressClassName": "nginx",
                    "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}
    schema = load_builtin()
    reply = await api.request("POST", "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
                              protobuf.encode_object(schema, ing),
                              content_type="application/vnd.kubernetes.protobuf",
                              headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert reply.status == 201, reply.body
    assert reply.headers["content-type"] == "application/vnd.kubernetes.protobuf"
    back = protobuf.decode_object(schema, reply.body)
    assert back["kind"] == "Ingress" and back["spec"]["defaultBackend"]["service"]["port"]["number"] == 80
    assert back["spec"]["ingressClassName"] == "nginx"


def test_bootstrap_roles_grant_the_namespaced_kinds_as_kube_does() -> None:
    roles = {r["metadata"]["name"]: r.get("rules", []) for r in rbacpolicy.cluster_roles()}

    def rule(verbs: list[str], group: str, resources: list[str]) -> dict[str, Any]:
        return {"verbs": verbs, "apiGroups": [group], "resources": resources}

    view = roles["system:aggregate-to-view"]
    edit = roles["system:aggregate-to-edit"]
    read, write = ["get", "list", "watch"], ["create", "delete", "deletecollection", "patch", "update"]
    for wanted in (rule(read, "networking.k8s.io", ["ingresses", "ingresses/status", "networkpolicies"]),
                   rule(read, "policy", ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
                   rule(read, "discovery.k8s.io", ["endpointslices"])):
        assert covers(view, [wanted])[0], wanted
    for wanted in (rule(write, "networking.k8s.io", ["ingresses", "networkpolicies"]),
                   rule(write, "policy", ["poddisruptionbudgets"])):
        assert covers(edit, [wanted])[0], wanted
    # kube's view role does not read cluster-scoped storage or scheduling objects
    assert not covers(view, [rule(["get"], "storage.k8s.io", ["storageclasses"])])[0]


async def test_openapi_v3_publishes_the_group_versions(api: Api) -> None:
    paths = (await api.request("GET", "/openapi/v3")).json()["paths"]
    for gv in A_RESOURCES:
        assert f"apis/{gv}" in paths, gv
    doc = (await api.request("GET", "/openapi/v3/apis/networking.k8s.io/v1")).json()
    schemas = doc["components"]["schemas"]
    assert "io.k8s.api.networking.v1.Ingress" in schemas
    assert "/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/{name}/status" in doc["paths"]


async def test_unknown_fields_are_refused_with_strict_validation(api: Api) -> None:
    body = obj("scheduling.k8s.io/v1", "PriorityClass", "strict", value=1, valeu=2)
    reply = await api.request("POST", f"{PC}?fieldValidation=Strict", body)
    assert reply.status == 400, reply.body
    assert 'unknown field "valeu"' in reply.json()["message"]
