"""``as=Table`` output (meta.k8s.io Table) with kube-apiserver's built-in printers.

Columns and cells follow ``pkg/printers/internalversion/printers.go``; the
server always prints wide, so priority-1 columns and cells are included.
Built-in resources without a printer of their own here get Name and Age.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from kapi.errors import BadRequest
from kapi.object.selectors import label_selector_from_spec

__all__ = [
    "build_object_table",
    "build_table",
    "human_duration",
    "table_columns",
    "table_row",
]

Obj = Mapping[str, Any]

# ------------------------------------------------------------------- durations


def human_duration(seconds: float) -> str:
    """duration.HumanDuration: ~2-3 significant figures of a duration."""
    d = int(round(seconds * 1e9))  # nanoseconds, as time.Duration
    secs = int(d / 1e9)  # Go: int(d.Seconds()) truncates toward zero
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = d // 60_000_000_000
    if minutes < 10:
        s = (d // 1_000_000_000) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = d // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp, None when unset or bad."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _since(value: Any, now: float) -> str:
    """translateTimestampSince."""
    t = _parse_time(value)
    return "<unknown>" if t is None else human_duration(now - t)


# --------------------------------------------------------------------- columns

_NAME_DOC: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATED_DOC: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is "
    "in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_CONTAINERS_DOC: Final = "Names of each container in the template."
_IMAGES_DOC: Final = "Images referenced by each container in the template."


def _col(name: str, type_: str, description: str, *, fmt: str = "", priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


_NAME: Final = _col("Name", "string", _NAME_DOC, fmt="name")
_AGE: Final = _col("Age", "string", _CREATED_DOC)

_COLUMNS: Final[Mapping[tuple[str, str], tuple[dict[str, Any], ...]]] = {
    ("pods", ""): (
        _NAME,
        _col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        _col("Status", "string", "The aggregate status of the containers in this pod."),
        _col("Restarts", "string", "The number of times the containers in this pod have been "
             "restarted and when the last container in this pod has restarted."),
        _AGE,
        _col("IP", "string", "podIP address allocated to the pod. Routable at least within the "
             "cluster. Empty if not yet allocated.", priority=1),
        _col("Node", "string", "NodeName indicates in which node this pod is scheduled. If empty, "
             "this pod is a candidate for scheduling by the scheduler defined in schedulerName. "
             "Once this field is set, the kubelet for this node becomes responsible for the "
             "lifecycle of this pod. This field should not be used to express a desire for the pod "
             "to be scheduled on a specific node. "
             "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
             priority=1),
        _col("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts "
             "other pods on the node, but it cannot be scheduled right away as preemption victims "
             "receive their graceful termination periods. This field does not guarantee that the "
             "pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere "
             "if other nodes become available sooner. Scheduler may also decide to give the "
             "resources on this node to a higher priority pod that is created after preemption. "
             "As a result, this field may be different than PodSpec.nodeName when the pod is "
             "scheduled.", priority=1),
        _col("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for "
             "pod readiness. A pod is ready when all its containers are ready AND all conditions "
             "specified in the readiness gates have status equal to \"True\" More info: "
             "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
             priority=1),
    ),
    ("namespaces", ""): (_NAME, _col("Status", "string", "The status of the namespace"), _AGE),
    ("nodes", ""): (
        _NAME,
        _col("Status", "string", "The status of the node"),
        _col("Roles", "string", "The roles of the node"),
        _AGE,
        _col("Version", "string", "Kubelet Version reported by the node."),
        *(
            _col(n, "string", "List of addresses reachable to the node. Queried from cloud "
                 "provider, if available. More info: "
                 "https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This "
                 "field is declared as mergeable, but the merge key is not sufficiently unique, "
                 "which can cause data corruption when it is merged. Callers should instead use a "
                 "full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers "
                 "should assume that addresses can change during the lifetime of a Node. However, "
                 "there are some exceptions where this may not be possible, such as Pods that "
                 "inherit a Node's address in its own status or consumers of the downward API "
                 "(status.hostIP).", priority=1)
            for n in ("Internal-IP", "External-IP")
        ),
        _col("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. "
             "Debian GNU/Linux 7 (wheezy)).", priority=1),
        _col("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' "
             "(e.g. 3.16.0-0.bpo.4-amd64).", priority=1),
        _col("Container-Runtime", "string", "ContainerRuntime Version reported by the node "
             "through runtime remote API (e.g. containerd://1.4.2).", priority=1),
    ),
    ("deployments", "apps"): (
        _NAME,
        _col("Ready", "string", "Number of the pod with ready state"),
        _col("Up-to-date", "string", "Total number of non-terminated pods targeted by this "
             "deployment that have the desired template spec."),
        _col("Available", "string", "Total number of available pods (ready for at least "
             "minReadySeconds) targeted by this deployment."),
        _AGE,
        _col("Containers", "string", _CONTAINERS_DOC, priority=1),
        _col("Images", "string", _IMAGES_DOC, priority=1),
        _col("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are "
             "selected by this will be the ones affected by this deployment.", priority=1),
    ),
    ("replicasets", "apps"): (
        _NAME,
        _col("Desired", "integer", "Replicas is the number of desired replicas. This is a pointer "
             "to distinguish between explicit zero and unspecified. Defaults to 1. More info: "
             "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
             "#what-is-a-replicationcontroller"),
        _col("Current", "integer", "Replicas is the most recently observed number of replicas. "
             "More info: https://kubernetes.io/docs/concepts/workloads/controllers/"
             "replicationcontroller/#what-is-a-replicationcontroller"),
        _col("Ready", "integer", "The number of ready replicas for this replica set."),
        _AGE,
        _col("Containers", "string", _CONTAINERS_DOC, priority=1),
        _col("Images", "string", _IMAGES_DOC, priority=1),
        _col("Selector", "string", "Selector is a label query over pods that should match the "
             "replica count. If the selector is empty, it is defaulted to the labels present on "
             "the Pod template. Label keys and values that must match in order to be controlled "
             "by this replica set. More info: https://kubernetes.io/docs/concepts/overview/"
             "working-with-objects/labels/#label-selectors", priority=1),
    ),
    ("configmaps", ""): (
        _NAME,
        _col("Data", "string", "Data contains the configuration data. Each key must consist of "
             "alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must "
             "use the BinaryData field. The keys stored in Data must not overlap with the keys in "
             "the BinaryData field, this is enforced during validation process."),
        _AGE,
    ),
    ("secrets", ""): (
        _NAME,
        _col("Type", "string", "Used to facilitate programmatic handling of secret data. More "
             "info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
        _col("Data", "string", "Data contains the secret data. Each key must consist of "
             "alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is "
             "a base64 encoded string, representing the arbitrary (possibly non-string) data "
             "value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
        _AGE,
    ),
    ("services", ""): (
        _NAME,
        _col("Type", "string", "type determines how the Service is exposed. Defaults to "
             "ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. "
             "\"ClusterIP\" allocates a cluster-internal IP address for load-balancing to "
             "endpoints. Endpoints are determined by the selector or if that is not specified, by "
             "manual construction of an Endpoints object or EndpointSlice objects. If clusterIP "
             "is \"None\", no virtual IP is allocated and the endpoints are published as a set of "
             "endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates "
             "a port on every node which routes to the same endpoints as the clusterIP. "
             "\"LoadBalancer\" builds on NodePort and creates an external load-balancer (if "
             "supported in the current cloud) which routes to the same endpoints as the "
             "clusterIP. \"ExternalName\" aliases this service to the specified externalName. "
             "Several other fields do not apply to ExternalName services. More info: "
             "https://kubernetes.io/docs/concepts/services-networking/service/"
             "#publishing-services-service-types"),
        _col("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually "
             "assigned randomly. If an address is specified manually, is in-range (as per system "
             "configuration), and is not in use, it will be allocated to the service; otherwise "
             "creation of the service will fail. This field may not be changed through updates "
             "unless the type field is also being changed to ExternalName (which requires this "
             "field to be blank) or the type field is being changed from ExternalName (in which "
             "case this field may optionally be specified, as describe above).  Valid values are "
             "\"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" "
             "makes a \"headless service\" (no virtual IP), which is useful when direct endpoint "
             "connections are preferred and proxying is not required.  Only applies to types "
             "ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a "
             "Service of type ExternalName, creation will fail. This field will be wiped when "
             "updating a Service to type ExternalName. More info: https://kubernetes.io/docs/"
             "concepts/services-networking/service/#virtual-ips-and-service-proxies"),
        _col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in "
             "the cluster will also accept traffic for this service.  These IPs are not managed "
             "by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node "
             "with this IP.  A common example is external load-balancers that are not part of "
             "the Kubernetes system."),
        _col("Port(s)", "string", "The list of ports that are exposed by this service. More "
             "info: https://kubernetes.io/docs/concepts/services-networking/service/"
             "#virtual-ips-and-service-proxies"),
        _AGE,
        _col("Selector", "string", "Route service traffic to pods with label keys and values "
             "matching this selector. If empty or not present, the service is assumed to have an "
             "external process managing its endpoints, which Kubernetes will not modify. Only "
             "applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is "
             "ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/"
             "service/", priority=1),
    ),
    ("events", ""): (
        _col("Last Seen", "string", "The time at which the most recent occurrence of this event "
             "was recorded."),
        _col("Type", "string", "Type of this event (Normal, Warning), new types could be added "
             "in the future"),
        _col("Reason", "string", "This should be a short, machine understandable string that "
             "gives the reason for the transition into the object's current status."),
        _col("Object", "string", "The object that this event is about."),
        _col("Subobject", "string", "If referring to a piece of an object instead of an entire "
             "object, this string should contain a valid JSON/Go field access statement, such as "
             "desiredState.manifest.containers[2]. For example, if the object reference is to a "
             "container within a pod, this would take on a value like: \"spec.containers{name}\" "
             "(where \"name\" refers to the name of the container that triggered the event) or if "
             "no container name is specified \"spec.containers[2]\" (container with index 2 in "
             "this pod). This syntax is chosen only to have some well-defined way of referencing "
             "a part of an object.", priority=1),
        _col("Source", "string", "The component reporting this event. Should be a short machine "
             "understandable string.", priority=1),
        _col("Message", "string", "A human-readable description of the status of this "
             "operation."),
        _col("First Seen", "string", "The time at which the event was first recorded. (Time of "
             "server receipt is in TypeMeta.)", priority=1),
        _col("Count", "string", "The number of times this event has occurred.", priority=1),
        _col("Name", "string", _NAME_DOC, fmt="name", priority=1),
    ),
    ("serviceaccounts", ""): (
        _NAME,
        _col("Secrets", "string", "Secrets is a list of the secrets in the same namespace that "
             "pods running using this ServiceAccount are allowed to use. Pods are only limited to "
             "this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" "
             "annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" "
             "annotation is deprecated since v1.32. Prefer separate namespaces to isolate access "
             "to mounted secrets. This field should not be used to find auto-generated service "
             "account token secrets for use outside of pods. Instead, tokens can be requested "
             "directly using the TokenRequest API, or service account token secrets can be "
             "manually created. More info: https://kubernetes.io/docs/concepts/configuration/"
             "secret"),
        _AGE,
    ),
    ("leases", "coordination.k8s.io"): (
        _NAME,
        _col("Holder", "string", "holderIdentity contains the identity of the holder of a "
             "current lease. If Coordinated Leader Election is used, the holder identity must be "
             "equal to the elected LeaseCandidate.metadata.name field."),
        _AGE,
    ),
}
# events.k8s.io Events share the core Event storage and so its table convertor.
_ALIASES: Final = {("events", "events.k8s.io"): ("events", "")}

# Resources without a printer of their own: Name and Age.
_DEFAULT_COLUMNS: Final = (_NAME, _AGE)


def _key(resource: str, group: str) -> tuple[str, str]:
    return _ALIASES.get((resource, group), (resource, group))


def table_columns(resource: str, group: str) -> list[dict[str, Any]]:
    """Column definitions kube-apiserver sends for ``resource`` in ``group`` (wide included)."""
    cols = _COLUMNS.get(_key(resource, group), _DEFAULT_COLUMNS)
    return [dict(c) for c in cols]


# ----------------------------------------------------------------------- cells


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _n(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _format_labels(labels: Any) -> str:
    """labels.FormatLabels: sorted ``k=v`` pairs, ``<none>`` when empty."""
    items = sorted(_d(labels).items())
    return ",".join(f"{k}={v}" for k, v in items) if items else "<none>"


def _selector_string(spec: Any) -> str:
    """LabelSelectorAsSelector(...).String(); ``<invalid>`` (Go: error) as the deployment printer."""
    try:
        sel = label_selector_from_spec(spec if isinstance(spec, Mapping) else None)
    except BadRequest:
        return "<invalid>"
    return "" if sel is None else str(sel)


def _format_label_selector(spec: Any) -> str:
    """metav1.FormatLabelSelector."""
    try:
        sel = label_selector_from_spec(spec if isinstance(spec, Mapping) else None)
    except BadRequest:
        return "<error>"
    text = "" if sel is None else str(sel)
    return text or "<none>"


def _container_cells(pod_spec: Any) -> tuple[str, str]:
    """layoutContainerCells: names and images joined by commas."""
    containers = [_d(c) for c in _l(_d(pod_spec).get("containers"))]
    return (",".join(_str(c.get("name")) for c in containers),
            ",".join(_str(c.get("image")) for c in containers))


def _has_condition(status: Mapping[str, Any], type_: str) -> bool:
    for cond in _l(status.get("conditions")):
        if _d(cond).get("type") == type_:
            return _d(cond).get("status") == "True"
    return False


def _pod_row(pod: Obj, now: float) -> list[Any]:
    meta, spec, status = _d(pod.get("metadata")), _d(pod.get("spec")), _d(pod.get("status"))
    restarts = 0
    sidecar_restarts = 0
    total = len(_l(spec.get("containers")))
    ready = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None

    phase = _str(status.get("phase"))
    reason = _str(status.get("reason")) or phase
    for cond in _l(status.get("conditions")):
        if _d(cond).get("type") == "PodScheduled" and _d(cond).get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = [_d(c) for c in _l(spec.get("initContainers"))]
    init_by_name = {_str(c.get("name")): c for c in init_specs}

    def sidecar(name: str) -> bool:
        return _d(init_by_name.get(name)).get("restartPolicy") == "Always"

    total += sum(1 for c in init_specs if c.get("restartPolicy") == "Always")

    def later(current: float | None, cs: Mapping[str, Any]) -> float | None:
        finished = _parse_time(_d(_d(cs.get("lastState")).get("terminated")).get("finishedAt"))
        if _d(cs.get("lastState")).get("terminated") is None or finished is None:
            return current
        return finished if current is None or finished > current else current

    initializing = False
    for i, raw in enumerate(_l(status.get("initContainerStatuses"))):
        cs = _d(raw)
        count = _n(cs.get("restartCount"))
        restarts += count
        last_restart = later(last_restart, cs)
        name = _str(cs.get("name"))
        if sidecar(name):
            sidecar_restarts += count
            last_sidecar_restart = later(last_sidecar_restart, cs)
        state = _d(cs.get("state"))
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if terminated is not None and _n(_d(terminated).get("exitCode")) == 0:
            continue
        if sidecar(name) and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if terminated is not None:
            t = _d(terminated)
            if not _str(t.get("reason")):
                if _n(t.get("signal")) != 0:
                    reason = f"Init:Signal:{_n(t.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{_n(t.get('exitCode'))}"
            else:
                reason = "Init:" + _str(t.get("reason"))
        elif waiting is not None and _str(_d(waiting).get("reason")) not in ("", "PodInitializing"):
            reason = "Init:" + _str(_d(waiting).get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _has_condition(status, "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        error_reason = ""
        for raw in reversed(_l(status.get("containerStatuses"))):
            cs = _d(raw)
            restarts += _n(cs.get("restartCount"))
            last_restart = later(last_restart, cs)
            state = _d(cs.get("state"))
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting is not None and _str(_d(waiting).get("reason")):
                reason = _str(_d(waiting).get("reason"))
            elif terminated is not None:
                t = _d(terminated)
                if _str(t.get("reason")):
                    reason = _str(t.get("reason"))
                elif _n(t.get("signal")) != 0:
                    reason = f"Signal:{_n(t.get('signal'))}"
                else:
                    reason = f"ExitCode:{_n(t.get('exitCode'))}"
                if _n(t.get("exitCode")) != 0:
                    error_reason = reason
            elif cs.get("ready") is True and state.get("running") is not None:
                has_running = True
                ready += 1
        # A pod whose last container completed but another still runs is not "Completed".
        if reason == "Completed":
            if has_running and _has_condition(status, "Ready"):
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"

    deleting = meta.get("deletionTimestamp") is not None
    if deleting and _str(status.get("reason")) == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart)} ago)"

    pod_ips = _l(status.get("podIPs"))
    pod_ip = _str(_d(pod_ips[0]).get("ip")) if pod_ips else ""
    gates = _l(spec.get("readinessGates"))
    readiness = "<none>"
    if gates:
        true_count = 0
        for gate in gates:
            for cond in _l(status.get("conditions")):
                if _d(cond).get("type") == _d(gate).get("conditionType"):
                    true_count += _d(cond).get("status") == "True"
                    break
        readiness = f"{true_count}/{len(gates)}"
    return [
        _str(meta.get("name")), f"{ready}/{total}", reason, restarts_cell,
        _since(meta.get("creationTimestamp"), now),
        pod_ip or "<none>", _str(spec.get("nodeName")) or "<none>",
        _str(status.get("nominatedNodeName")) or "<none>", readiness,
    ]


def _namespace_row(obj: Obj, now: float) -> list[Any]:
    meta = _d(obj.get("metadata"))
    return [_str(meta.get("name")), _str(_d(obj.get("status")).get("phase")),
            _since(meta.get("creationTimestamp"), now)]


def _node_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _d(obj.get("metadata")), _d(obj.get("spec")), _d(obj.get("status"))
    conditions = {_d(c).get("type"): _d(c) for c in _l(status.get("conditions"))}
    states = []
    if "Ready" in conditions:
        states.append("Ready" if conditions["Ready"].get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable") is True:
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in _d(meta.get("labels")).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = _d(status.get("nodeInfo"))

    def address(kind: str) -> str:
        for a in _l(status.get("addresses")):
            if _d(a).get("type") == kind:
                return _str(_d(a).get("address"))
        return "<none>"

    return [
        _str(meta.get("name")), ",".join(states), ",".join(sorted(roles)) or "<none>",
        _since(meta.get("creationTimestamp"), now), _str(info.get("kubeletVersion")),
        address("InternalIP"), address("ExternalIP"),
        _str(info.get("osImage")) or "<unknown>", _str(info.get("kernelVersion")) or "<unknown>",
        _str(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


def _deployment_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _d(obj.get("metadata")), _d(obj.get("spec")), _d(obj.get("status"))
    # Stored objects are defaulted, so a missing spec.replicas means the default of 1.
    names, images = _container_cells(_d(spec.get("template")).get("spec"))
    return [
        _str(meta.get("name")),
        f"{_n(status.get('readyReplicas'))}/{_n(spec.get('replicas'), 1)}",
        _n(status.get("updatedReplicas")), _n(status.get("availableReplicas")),
        _since(meta.get("creationTimestamp"), now),
        names, images, _selector_string(spec.get("selector")),
    ]


def _replicaset_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _d(obj.get("metadata")), _d(obj.get("spec")), _d(obj.get("status"))
    names, images = _container_cells(_d(spec.get("template")).get("spec"))
    return [
        _str(meta.get("name")), _n(spec.get("replicas"), 1), _n(status.get("replicas")),
        _n(status.get("readyReplicas")), _since(meta.get("creationTimestamp"), now),
        names, images, _format_label_selector(spec.get("selector")),
    ]


def _configmap_row(obj: Obj, now: float) -> list[Any]:
    meta = _d(obj.get("metadata"))
    return [_str(meta.get("name")), len(_d(obj.get("data"))) + len(_d(obj.get("binaryData"))),
            _since(meta.get("creationTimestamp"), now)]


def _secret_row(obj: Obj, now: float) -> list[Any]:
    meta = _d(obj.get("metadata"))
    # stringData is merged into data on write, so only data is counted.
    return [_str(meta.get("name")), _str(obj.get("type")), len(_d(obj.get("data"))),
            _since(meta.get("creationTimestamp"), now)]


def _service_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _d(obj.get("metadata")), _d(obj.get("spec")), _d(obj.get("status"))
    svc_type = _str(spec.get("type"))
    cluster_ips = _l(spec.get("clusterIPs"))
    internal_ip = _str(cluster_ips[0]) if cluster_ips else (_str(spec.get("clusterIP")) or "<none>")
    external_ips = [_str(ip) for ip in _l(spec.get("externalIPs"))]
    if svc_type in ("ClusterIP", "NodePort"):
        external = ",".join(external_ips) or "<none>"
    elif svc_type == "LoadBalancer":
        seen = set()
        for ing in _l(_d(status.get("loadBalancer")).get("ingress")):
            addr = _str(_d(ing).get("ip")) or _str(_d(ing).get("hostname"))
            if addr:
                seen.add(addr)
        lb = sorted(seen)  # wide: never clipped
        if external_ips:
            external = ",".join(lb + external_ips)
        else:
            external = ",".join(lb) or "<pending>"
    elif svc_type == "ExternalName":
        external = _str(spec.get("externalName"))
    else:
        external = "<unknown>"
    ports = []
    for raw in _l(spec.get("ports")):
        p = _d(raw)
        protocol = _str(p.get("protocol"))
        node_port = _n(p.get("nodePort"))
        if node_port > 0:
            ports.append(f"{_n(p.get('port'))}:{node_port}/{protocol}")
        else:
            ports.append(f"{_n(p.get('port'))}/{protocol}")
    return [
        _str(meta.get("name")), svc_type, internal_ip, external, ",".join(ports) or "<none>",
        _since(meta.get("creationTimestamp"), now), _format_labels(spec.get("selector")),
    ]


def _core_event(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in core/v1 field names (the two share one storage)."""
    if not str(obj.get("apiVersion", "")).startswith("events.k8s.io/"):
        return obj
    series = obj.get("series")
    return {
        "metadata": obj.get("metadata"),
        "involvedObject": obj.get("regarding"),
        "reason": obj.get("reason"),
        "message": obj.get("note"),
        "source": obj.get("deprecatedSource"),
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount"),
        "type": obj.get("type"),
        "eventTime": obj.get("eventTime"),
        "series": None if series is None else {"count": _d(series).get("count"),
                                               "lastObservedTime": _d(series).get("lastObservedTime")},
        "reportingComponent": obj.get("reportingController"),
        "reportingInstance": obj.get("reportingInstance"),
    }


def _event_row(raw: Obj, now: float) -> list[Any]:
    obj = _core_event(raw)
    meta, inv, source = _d(obj.get("metadata")), _d(obj.get("involvedObject")), _d(obj.get("source"))
    first = (_since(obj.get("firstTimestamp"), now) if _parse_time(obj.get("firstTimestamp")) is not None
             else _since(obj.get("eventTime"), now))
    last = _since(obj.get("lastTimestamp"), now) if _parse_time(obj.get("lastTimestamp")) is not None else first
    count = _n(obj.get("count"))
    series = obj.get("series")
    if series is not None:
        last = _since(_d(series).get("lastObservedTime"), now)
        count = _n(_d(series).get("count"))
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    kind = _str(inv.get("kind")).lower()
    target = f"{kind}/{_str(inv.get('name'))}" if _str(inv.get("name")) else kind
    component = _str(source.get("component")) or _str(obj.get("reportingComponent"))
    host = _str(source.get("host")) or _str(obj.get("reportingInstance"))
    return [
        last, _str(obj.get("type")), _str(obj.get("reason")), target, _str(inv.get("fieldPath")),
        f"{component}, {host}" if host else component,
        _str(obj.get("message")).strip(), first, count, _str(meta.get("name")),
    ]


def _serviceaccount_row(obj: Obj, now: float) -> list[Any]:
    meta = _d(obj.get("metadata"))
    return [_str(meta.get("name")), len(_l(obj.get("secrets"))), _since(meta.get("creationTimestamp"), now)]


def _lease_row(obj: Obj, now: float) -> list[Any]:
    meta = _d(obj.get("metadata"))
    return [_str(meta.get("name")), _str(_d(obj.get("spec")).get("holderIdentity")),
            _since(meta.get("creationTimestamp"), now)]


def _default_row(obj: Obj, now: float) -> list[Any]:
    meta = _d(obj.get("metadata"))
    return [_str(meta.get("name")), _since(meta.get("creationTimestamp"), now)]


_PRINTERS: Final[Mapping[tuple[str, str], Callable[[Obj, float], list[Any]]]] = {
    ("pods", ""): _pod_row,
    ("namespaces", ""): _namespace_row,
    ("nodes", ""): _node_row,
    ("deployments", "apps"): _deployment_row,
    ("replicasets", "apps"): _replicaset_row,
    ("configmaps", ""): _configmap_row,
    ("secrets", ""): _secret_row,
    ("services", ""): _service_row,
    ("events", ""): _event_row,
    ("serviceaccounts", ""): _serviceaccount_row,
    ("leases", "coordination.k8s.io"): _lease_row,
}


def table_row(resource: str, group: str, obj: Obj, now: float) -> list[Any]:
    """The cells of one object's row; ``now`` is seconds since the epoch."""
    return _PRINTERS.get(_key(resource, group), _default_row)(obj, now)


# ---------------------------------------------------------------------- tables

_POD_CONDITIONS: Final = {
    "Succeeded": [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}],
    "Failed": [{"type": "Completed", "status": "True", "reason": "Failed",
                "message": "The pod failed."}],
}


def _row(resource: str, group: str, obj: Obj, now: float, include_object: str,
         table_version: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": table_row(resource, group, obj, now)}
    if _key(resource, group) == ("pods", ""):
        conditions = _POD_CONDITIONS.get(_str(_d(obj.get("status")).get("phase")))
        if conditions:
            row["conditions"] = [dict(c) for c in conditions]
    if include_object == "Object":
        row["object"] = obj
    elif include_object == "None":
        row["object"] = None
    else:
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"meta.k8s.io/{table_version}",
            "metadata": obj.get("metadata") or {},
        }
    return row


def _check_include_object(include_object: str) -> str:
    if include_object == "":
        return "Metadata"
    if include_object not in ("None", "Metadata", "Object"):
        raise BadRequest(f'unrecognized includeObject value: "{include_object}"')
    return include_object


def build_table(
    resource: str,
    group: str,
    objs: Iterable[Obj],
    now: float,
    *,
    include_object: str = "Metadata",
    list_meta: Mapping[str, Any],
    no_headers: bool = False,
    table_version: str = "v1",
) -> dict[str, Any]:
    """A meta.k8s.io Table for a LIST answer.

    ``list_meta`` is the list's ``metadata`` (resourceVersion, continue,
    remainingItemCount); empty values are left out as kube-apiserver does.

    Raises:
        BadRequest: unknown ``includeObject``.
    """
    include = _check_include_object(include_object)
    rows: list[dict[str, Any]] | None = [
        _row(resource, group, obj, now, include, table_version) for obj in objs
    ]
    if not rows and _key(resource, group) not in _PRINTERS:
        rows = None  # the default convertor appends to a nil slice, which encodes as null
    meta = {k: list_meta[k] for k in ("resourceVersion", "continue", "remainingItemCount")
            if list_meta.get(k) not in (None, "")}
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{table_version}",
        "metadata": meta,
        "columnDefinitions": None if no_headers else table_columns(resource, group),
        "rows": rows,
    }


def build_object_table(
    resource: str,
    group: str,
    obj: Obj,
    now: float,
    *,
    include_object: str = "Metadata",
    no_headers: bool = False,
    table_version: str = "v1",
) -> dict[str, Any]:
    """A Table with one row, as GET answers with ``as=Table``."""
    rv = _d(obj.get("metadata")).get("resourceVersion")
    return build_table(resource, group, [obj], now, include_object=include_object,
                       list_meta={"resourceVersion": rv}, no_headers=no_headers,
                       table_version=table_version)
