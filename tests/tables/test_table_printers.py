"""Table columns and cells of the built-in printers, and the Table envelope."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from kapi.apis import BUILTIN
from kapi.encoding.tables import DEFAULT_PRINTER, Printer, build_object_table, build_table
from kapi.errors import BadRequest

POD = json.loads((Path(__file__).parent.parent / "fixtures" / "pod.json").read_text())
CREATED = "2024-05-14T10:00:03Z"
T0 = datetime(2024, 5, 14, 10, 0, 3, tzinfo=timezone.utc).timestamp()
NOW = T0 + 5 * 3600  # five hours after creation


def printer(resource: str, group: str) -> Printer:
    """The printer the strategy of a served resource names (the default one for anything else)."""
    found = [r.strategy.printer for r in BUILTIN if (r.resource, r.group) == (resource, group)]
    return found[0] if found else DEFAULT_PRINTER


def table_columns(resource: str, group: str) -> list[dict[str, Any]]:
    return printer(resource, group).column_definitions()


def table_row(resource: str, group: str, obj: dict[str, Any], now: float) -> list[Any]:
    return printer(resource, group).cells(obj, now)


def names(resource: str, group: str = "") -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table_columns(resource, group)]


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "ns", "creationTimestamp": CREATED, "resourceVersion": "7", **extra}


# ------------------------------------------------------------------------ pods


def test_pod_columns() -> None:
    assert names("pods") == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
        ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1),
    ]
    first = table_columns("pods", "")[0]
    assert first["type"] == "string" and first["format"] == "name"
    assert first["description"].startswith("Name must be unique within a namespace.")


def test_pod_fixture_row() -> None:
    assert table_row("pods", "", POD, NOW) == [
        "cache-0-ad76507bdc-43f83", "2/2", "Running", "0", "5h",
        "10.0.0.3", "node-3", "<none>", "<none>",
    ]


def pod(status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": meta("p"), "spec": {"containers": [{"name": "a"}], **spec}, "status": status}


def test_pod_restarts_with_last_restart_age() -> None:
    finished = "2024-05-14T14:55:03Z"  # five minutes before NOW
    p = pod({"phase": "Running", "containerStatuses": [{
        "name": "a", "ready": True, "restartCount": 3, "state": {"running": {}},
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": finished}}}]})
    assert table_row("pods", "", p, NOW)[1:4] == ["1/1", "Running", "3 (5m ago)"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"phase": "Pending", "containerStatuses": [
            {"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}, "ImagePullBackOff"),
        ({"phase": "Running", "containerStatuses": [
            {"name": "a", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}, "CrashLoopBackOff"),
        ({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}, "Completed"),
        ({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}, "Signal:9"),
        ({"phase": "Failed", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 2}}}]}, "ExitCode:2"),
        ({"phase": "Failed", "reason": "Evicted"}, "Evicted"),
        ({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}, "SchedulingGated"),
        ({"phase": "Pending"}, "Pending"),
    ],
)
def test_pod_status_reason(status: dict[str, Any], expected: str) -> None:
    assert table_row("pods", "", pod(status), NOW)[2] == expected


def test_pod_completed_with_running_sibling() -> None:
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
              "containerStatuses": [
                  {"name": "a", "ready": True, "state": {"running": {}}},
                  {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
    p = pod(status)
    p["spec"]["containers"].append({"name": "b"})
    assert table_row("pods", "", p, NOW)[1:3] == ["1/2", "NotReady"]
    status["conditions"] = [{"type": "Ready", "status": "True"}]
    assert table_row("pods", "", p, NOW)[2] == "Running"


def test_pod_init_containers() -> None:
    init = [{"name": "i1"}, {"name": "i2"}]
    waiting = pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
        {"name": "i2", "state": {"waiting": {"reason": "PodInitializing"}}}]}, initContainers=init)
    assert table_row("pods", "", waiting, NOW)[2] == "Init:1/2"
    crashing = pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "i1", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
        initContainers=init)
    assert table_row("pods", "", crashing, NOW)[2:4] == ["Init:CrashLoopBackOff", "4"]
    failed = pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "i1", "state": {"terminated": {"exitCode": 3}}}]}, initContainers=init)
    assert table_row("pods", "", failed, NOW)[2] == "Init:ExitCode:3"


def test_pod_sidecar_counts_toward_ready() -> None:
    p = pod({"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
             "initContainerStatuses": [{"name": "side", "started": True, "ready": True,
                                        "state": {"running": {}}}],
             "containerStatuses": [{"name": "a", "ready": True, "state": {"running": {}}}]},
            initContainers=[{"name": "side", "restartPolicy": "Always"}])
    assert table_row("pods", "", p, NOW)[1:3] == ["2/2", "Running"]


def test_pod_terminating_and_wide_cells() -> None:
    p = copy.deepcopy(POD)
    p["metadata"]["deletionTimestamp"] = "2024-05-14T15:00:00Z"
    p["spec"]["readinessGates"] = [{"conditionType": "example.com/gate"}, {"conditionType": "Ready"}]
    p["status"]["nominatedNodeName"] = "node-9"
    row = table_row("pods", "", p, NOW)
    assert row[2] == "Terminating"
    assert row[7:] == ["node-9", "1/2"]
    p["status"]["reason"] = "NodeLost"
    assert table_row("pods", "", p, NOW)[2] == "Unknown"


# -------------------------------------------------------------- other printers


def test_namespace() -> None:
    assert names("namespaces") == [("Name", 0), ("Status", 0), ("Age", 0)]
    ns = {"metadata": {"name": "ns-3", "creationTimestamp": CREATED}, "status": {"phase": "Active"}}
    assert table_row("namespaces", "", ns, NOW) == ["ns-3", "Active", "5h"]


def test_node() -> None:
    assert names("nodes") == [
        ("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0), ("Internal-IP", 1),
        ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1), ("Container-Runtime", 1)]
    node = {
        "metadata": {"name": "n1", "creationTimestamp": CREATED,
                     "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "infra"}},
        "spec": {"unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}],
                   "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian"}},
    }
    assert table_row("nodes", "", node, NOW) == [
        "n1", "Ready,SchedulingDisabled", "control-plane,infra", "5h", "v1.33.1",
        "10.1.0.1", "<none>", "Debian", "<unknown>", "<unknown>"]
    node["status"]["conditions"] = []
    node["spec"] = {}
    node["metadata"]["labels"] = {}
    assert table_row("nodes", "", node, NOW)[1:3] == ["Unknown", "<none>"]


def test_deployment_and_replicaset() -> None:
    assert names("deployments", "apps") == [
        ("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0),
        ("Containers", 1), ("Images", 1), ("Selector", 1)]
    template = {"spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}}
    selector = {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}
    dep = {"metadata": meta("web"), "spec": {"replicas": 3, "selector": selector, "template": template},
           "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert table_row("deployments", "apps", dep, NOW) == [
        "web", "2/3", 3, 2, "5h", "web,log", "nginx:1,busybox", "app=web,env in (dev,prod)"]
    assert names("replicasets", "apps") == [
        ("Name", 0), ("Desired", 0), ("Current", 0), ("Ready", 0), ("Age", 0),
        ("Containers", 1), ("Images", 1), ("Selector", 1)]
    rs = {"metadata": meta("web-1"), "spec": {"replicas": 3, "selector": {}, "template": template},
          "status": {"replicas": 3, "readyReplicas": 1}}
    assert table_row("replicasets", "apps", rs, NOW) == [
        "web-1", 3, 3, 1, "5h", "web,log", "nginx:1,busybox", "<none>"]


def test_configmap_secret_serviceaccount_lease() -> None:
    cm = {"metadata": meta("c"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert table_row("configmaps", "", cm, NOW) == ["c", 3, "5h"]
    assert names("secrets") == [("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]
    secret = {"metadata": meta("s"), "type": "Opaque", "data": {"k": "dg=="}}
    assert table_row("secrets", "", secret, NOW) == ["s", "Opaque", 1, "5h"]
    sa = {"metadata": meta("default"), "secrets": [{"name": "x"}]}
    assert table_row("serviceaccounts", "", sa, NOW) == ["default", 1, "5h"]
    lease = {"metadata": meta("l"), "spec": {"holderIdentity": "kapi-1"}}
    assert names("leases", "coordination.k8s.io") == [("Name", 0), ("Holder", 0), ("Age", 0)]
    assert table_row("leases", "coordination.k8s.io", lease, NOW) == ["l", "kapi-1", "5h"]


def test_services() -> None:
    svc = {"metadata": meta("web"), "spec": {
        "type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
        "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}],
        "selector": {"b": "2", "a": "1"}}}
    assert table_row("services", "", svc, NOW) == [
        "web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "5h", "a=1,b=2"]
    lb = {"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.11"]},
          "status": {"loadBalancer": {}}}
    assert table_row("services", "", lb, NOW)[2:5] == ["10.96.0.11", "<pending>", "<none>"]
    lb["status"]["loadBalancer"] = {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "a.example.com"}]}
    assert table_row("services", "", lb, NOW)[3] == "203.0.113.9,a.example.com"
    ext = {"metadata": meta("x"), "spec": {"type": "ExternalName", "externalName": "db.example.com"}}
    assert table_row("services", "", ext, NOW)[2:4] == ["<none>", "db.example.com"]


def test_events() -> None:
    assert names("events") == [
        ("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1), ("Source", 1),
        ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]
    event = {"metadata": meta("p.17a"), "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
             "reason": "Pulled", "message": " pulled image \n", "type": "Normal",
             "source": {"component": "kubelet", "host": "n1"},
             "firstTimestamp": "2024-05-14T14:00:03Z", "lastTimestamp": "2024-05-14T14:58:03Z", "count": 4}
    assert table_row("events", "", event, NOW) == [
        "2m", "Normal", "Pulled", "pod/p", "spec.containers{a}", "kubelet, n1",
        "pulled image", "60m", 4, "p.17a"]
    new_style = {"metadata": meta("e2"), "involvedObject": {"kind": "Node"}, "type": "Warning",
                 "reason": "X", "eventTime": "2024-05-14T14:59:03.000000Z",
                 "reportingComponent": "ctrl", "reportingInstance": "ctrl-1"}
    assert table_row("events", "", new_style, NOW) == [
        "60s", "Warning", "X", "node", "", "ctrl, ctrl-1", "", "60s", 1, "e2"]
    series = dict(new_style, series={"count": 7, "lastObservedTime": "2024-05-14T14:59:53.000000Z"})
    assert table_row("events", "", series, NOW)[0] == "10s"
    assert table_row("events", "", series, NOW)[8] == 7


def test_events_k8s_io_uses_core_printer() -> None:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("e"),
             "regarding": {"kind": "Pod", "name": "p"}, "note": "hello", "reason": "R",
             "type": "Normal", "eventTime": "2024-05-14T14:59:03.000000Z",
             "reportingController": "c", "reportingInstance": "i"}
    assert table_columns("events", "events.k8s.io") == table_columns("events", "")
    assert table_row("events", "events.k8s.io", event, NOW) == [
        "60s", "Normal", "R", "pod/p", "", "c, i", "hello", "60s", 1, "e"]


def test_default_table_for_resources_without_printer() -> None:
    cols = table_columns("roles", "rbac.authorization.k8s.io")
    assert [(c["name"], c["type"], c["format"]) for c in cols] == [("Name", "string", "name"), ("Age", "string", "")]
    role = {"metadata": meta("r")}
    assert table_row("roles", "rbac.authorization.k8s.io", role, NOW)[0] == "r"
    assert table_row("roles", "rbac.authorization.k8s.io", role, NOW)[1] == table_row(
        "configmaps", "", {"metadata": meta("r")}, NOW)[-1]
    assert table_row("widgets", "example.com", {"metadata": {"name": "w"}}, NOW) == ["w", "<unknown>"]



def test_age_unknown_without_timestamp() -> None:
    assert table_row("configmaps", "", {"metadata": {"name": "c"}}, NOW) == ["c", 0, "<unknown>"]


# ---------------------------------------------------------------------- tables


def test_build_table_metadata_include_object() -> None:
    table = build_table(printer("pods", ""), [POD], NOW, list_meta={"resourceVersion": "42", "continue": "tok"})
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42", "continue": "tok"}
    assert table["columnDefinitions"] == table_columns("pods", "")
    (row,) = table["rows"]
    assert row["cells"][0] == "cache-0-ad76507bdc-43f83"
    assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": POD["metadata"]}
    assert "conditions" not in row
    assert list(row) == ["cells", "object"]


def test_build_table_object_and_none() -> None:
    obj = build_table(printer("pods", ""), [POD], NOW, include_object="Object", list_meta={})
    assert obj["rows"][0]["object"] == POD
    assert obj["metadata"] == {}
    none = build_table(printer("pods", ""), [POD], NOW, include_object="None", list_meta={"remainingItemCount": 3})
    assert none["rows"][0]["object"] is None
    assert none["metadata"] == {"remainingItemCount": 3}
    with pytest.raises(BadRequest, match='unrecognized includeObject value: "All"'):
        build_table(printer("pods", ""), [POD], NOW, include_object="All", list_meta={})


def test_build_table_completed_pod_conditions_and_headers() -> None:
    done = copy.deepcopy(POD)
    done["status"]["phase"] = "Succeeded"
    table = build_table(printer("pods", ""), [done], NOW, list_meta={}, no_headers=True)
    assert table["columnDefinitions"] is None
    row = table["rows"][0]
    assert list(row) == ["cells", "conditions", "object"]
    assert row["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                  "message": "The pod has completed successfully."}]


def test_build_table_empty_lists() -> None:
    assert build_table(printer("pods", ""), [], NOW, list_meta={"resourceVersion": "1"})["rows"] == []
    # The default convertor never allocates its rows, so an empty list encodes rows as null.
    assert build_table(printer("roles", "rbac.authorization.k8s.io"), [], NOW, list_meta={})["rows"] is None


def test_build_object_table() -> None:
    table = build_object_table(printer("pods", ""), POD, NOW, table_version="v1beta1")
    assert table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert table["metadata"] == {"resourceVersion": "1000003"}
    assert len(table["rows"]) == 1
    assert table["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
