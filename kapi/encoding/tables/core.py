"""Table printers of the core group (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kapi.encoding.tables.base import (AGE, NAME, NAME_DOC, Obj, Printer, as_int, as_list, as_map, as_str, column,
    format_labels, has_condition, human_duration, parse_time, since)

_POD_COLUMNS: Final = (
    NAME,
    column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    column("Status", "string", "The aggregate status of the containers in this pod."),
    column("Restarts", "string", "The number of times the containers in this pod have been "
           "restarted and when the last container in this pod has restarted."),
    AGE,
    column("IP", "string", "podIP address allocated to the pod. Routable at least within the "
           "cluster. Empty if not yet allocated.", priority=1),
    column("Node", "string", "NodeName indicates in which node this pod is scheduled. If empty, "
           "this pod is a candidate for scheduling by the scheduler defined in schedulerName. "
           "Once this field is set, the kubelet for this node becomes responsible for the "
           "lifecycle of this pod. This field should not be used to express a desire for the pod "
           "to be scheduled on a specific node. "
           "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
           priority=1),
    column("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts "
           "other pods on the node, but it cannot be scheduled right away as preemption victims "
           "receive their graceful termination periods. This field does not guarantee that the "
           "pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere "
           "if other nodes become available sooner. Scheduler may also decide to give the "
           "resources on this node to a higher priority pod that is created after preemption. "
           "As a result, this field may be different than PodSpec.nodeName when the pod is "
           "scheduled.", priority=1),
    column("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for "
           "pod readiness. A pod is ready when all its containers are ready AND all conditions "
           "specified in the readiness gates have status equal to \"True\" More info: "
           "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
           priority=1),
)

_NODE_COLUMNS: Final = (
    NAME,
    column("Status", "string", "The status of the node"),
    column("Roles", "string", "The roles of the node"),
    AGE,
    column("Version", "string", "Kubelet Version reported by the node."),
    *(
        column(n, "string", "List of addresses reachable to the node. Queried from cloud "
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
    column("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. "
           "Debian GNU/Linux 7 (wheezy)).", priority=1),
    column("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' "
           "(e.g. 3.16.0-0.bpo.4-amd64).", priority=1),
    column("Container-Runtime", "string", "ContainerRuntime Version reported by the node "
           "through runtime remote API (e.g. containerd://1.4.2).", priority=1),
)

_CONFIG_MAP_COLUMNS: Final = (
    NAME,
    column("Data", "string", "Data contains the configuration data. Each key must consist of "
           "alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must "
           "use the BinaryData field. The keys stored in Data must not overlap with the keys in "
           "the BinaryData field, this is enforced during validation process."),
    AGE,
)

_SECRET_COLUMNS: Final = (
    NAME,
    column("Type", "string", "Used to facilitate programmatic handling of secret data. More "
           "info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    column("Data", "string", "Data contains the secret data. Each key must consist of "
           "alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is "
           "a base64 encoded string, representing the arbitrary (possibly non-string) data "
           "value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
    AGE,
)

_SERVICE_COLUMNS: Final = (
    NAME,
    column("Type", "string", "type determines how the Service is exposed. Defaults to "
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
    column("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually "
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
    column("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in "
           "the cluster will also accept traffic for this service.  These IPs are not managed "
           "by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node "
           "with this IP.  A common example is external load-balancers that are not part of "
           "the Kubernetes system."),
    column("Port(s)", "string", "The list of ports that are exposed by this service. More "
           "info: https://kubernetes.io/docs/concepts/services-networking/service/"
           "#virtual-ips-and-service-proxies"),
    AGE,
    column("Selector", "string", "Route service traffic to pods with label keys and values "
           "matching this selector. If empty or not present, the service is assumed to have an "
           "external process managing its endpoints, which Kubernetes will not modify. Only "
           "applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is "
           "ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/"
           "service/", priority=1),
)

_EVENT_COLUMNS: Final = (
    column("Last Seen", "string", "The time at which the most recent occurrence of this event "
           "was recorded."),
    column("Type", "string", "Type of this event (Normal, Warning), new types could be added "
           "in the future"),
    column("Reason", "string", "This should be a short, machine understandable string that "
           "gives the reason for the transition into the object's current status."),
    column("Object", "string", "The object that this event is about."),
    column("Subobject", "string", "If referring to a piece of an object instead of an entire "
           "object, this string should contain a valid JSON/Go field access statement, such as "
           "desiredState.manifest.containers[2]. For example, if the object reference is to a "
           "container within a pod, this would take on a value like: \"spec.containers{name}\" "
           "(where \"name\" refers to the name of the container that triggered the event) or if "
           "no container name is specified \"spec.containers[2]\" (container with index 2 in "
           "this pod). This syntax is chosen only to have some well-defined way of referencing "
           "a part of an object.", priority=1),
    column("Source", "string", "The component reporting this event. Should be a short machine "
           "understandable string.", priority=1),
    column("Message", "string", "A human-readable description of the status of this "
           "operation."),
    column("First Seen", "string", "The time at which the event was first recorded. (Time of "
           "server receipt is in TypeMeta.)", priority=1),
    column("Count", "string", "The number of times this event has occurred.", priority=1),
    column("Name", "string", NAME_DOC, fmt="name", priority=1),
)

_SERVICE_ACCOUNT_COLUMNS: Final = (
    NAME,
    column("Secrets", "string", "Secrets is a list of the secrets in the same namespace that "
           "pods running using this ServiceAccount are allowed to use. Pods are only limited to "
           "this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" "
           "annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" "
           "annotation is deprecated since v1.32. Prefer separate namespaces to isolate access "
           "to mounted secrets. This field should not be used to find auto-generated service "
           "account token secrets for use outside of pods. Instead, tokens can be requested "
           "directly using the TokenRequest API, or service account token secrets can be "
           "manually created. More info: https://kubernetes.io/docs/concepts/configuration/"
           "secret"),
    AGE,
)


def _pod_row(pod: Obj, now: float) -> list[Any]:
    meta, spec, status = as_map(pod.get("metadata")), as_map(pod.get("spec")), as_map(pod.get("status"))
    restarts = 0
    sidecar_restarts = 0
    total = len(as_list(spec.get("containers")))
    ready = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None

    phase = as_str(status.get("phase"))
    reason = as_str(status.get("reason")) or phase
    for cond in as_list(status.get("conditions")):
        if as_map(cond).get("type") == "PodScheduled" and as_map(cond).get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = [as_map(c) for c in as_list(spec.get("initContainers"))]
    init_by_name = {as_str(c.get("name")): c for c in init_specs}

    def sidecar(name: str) -> bool:
        return as_map(init_by_name.get(name)).get("restartPolicy") == "Always"

    total += sum(1 for c in init_specs if c.get("restartPolicy") == "Always")

    def later(current: float | None, cs: Mapping[str, Any]) -> float | None:
        finished = parse_time(as_map(as_map(cs.get("lastState")).get("terminated")).get("finishedAt"))
        if as_map(cs.get("lastState")).get("terminated") is None or finished is None:
            return current
        return finished if current is None or finished > current else current

    initializing = False
    for i, raw in enumerate(as_list(status.get("initContainerStatuses"))):
        cs = as_map(raw)
        count = as_int(cs.get("restartCount"))
        restarts += count
        last_restart = later(last_restart, cs)
        name = as_str(cs.get("name"))
        if sidecar(name):
            sidecar_restarts += count
            last_sidecar_restart = later(last_sidecar_restart, cs)
        state = as_map(cs.get("state"))
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if terminated is not None and as_int(as_map(terminated).get("exitCode")) == 0:
            continue
        if sidecar(name) and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if terminated is not None:
            t = as_map(terminated)
            if not as_str(t.get("reason")):
                if as_int(t.get("signal")) != 0:
                    reason = f"Init:Signal:{as_int(t.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{as_int(t.get('exitCode'))}"
            else:
                reason = "Init:" + as_str(t.get("reason"))
        elif waiting is not None and as_str(as_map(waiting).get("reason")) not in ("", "PodInitializing"):
            reason = "Init:" + as_str(as_map(waiting).get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or has_condition(status, "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        error_reason = ""
        for raw in reversed(as_list(status.get("containerStatuses"))):
            cs = as_map(raw)
            restarts += as_int(cs.get("restartCount"))
            last_restart = later(last_restart, cs)
            state = as_map(cs.get("state"))
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting is not None and as_str(as_map(waiting).get("reason")):
                reason = as_str(as_map(waiting).get("reason"))
            elif terminated is not None:
                t = as_map(terminated)
                if as_str(t.get("reason")):
                    reason = as_str(t.get("reason"))
                elif as_int(t.get("signal")) != 0:
                    reason = f"Signal:{as_int(t.get('signal'))}"
                else:
                    reason = f"ExitCode:{as_int(t.get('exitCode'))}"
                if as_int(t.get("exitCode")) != 0:
                    error_reason = reason
            elif cs.get("ready") is True and state.get("running") is not None:
                has_running = True
                ready += 1
        # A pod whose last container completed but another still runs is not "Completed".
        if reason == "Completed":
            if has_running and has_condition(status, "Ready"):
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"

    deleting = meta.get("deletionTimestamp") is not None
    if deleting and as_str(status.get("reason")) == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart)} ago)"

    pod_ips = as_list(status.get("podIPs"))
    pod_ip = as_str(as_map(pod_ips[0]).get("ip")) if pod_ips else ""
    gates = as_list(spec.get("readinessGates"))
    readiness = "<none>"
    if gates:
        true_count = 0
        for gate in gates:
            for cond in as_list(status.get("conditions")):
                if as_map(cond).get("type") == as_map(gate).get("conditionType"):
                    true_count += as_map(cond).get("status") == "True"
                    break
        readiness = f"{true_count}/{len(gates)}"
    return [
        as_str(meta.get("name")), f"{ready}/{total}", reason, restarts_cell,
        since(meta.get("creationTimestamp"), now),
        pod_ip or "<none>", as_str(spec.get("nodeName")) or "<none>",
        as_str(status.get("nominatedNodeName")) or "<none>", readiness,
    ]


def _namespace_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), as_str(as_map(obj.get("status")).get("phase")),
            since(meta.get("creationTimestamp"), now)]


def _node_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = as_map(obj.get("metadata")), as_map(obj.get("spec")), as_map(obj.get("status"))
    conditions = {as_map(c).get("type"): as_map(c) for c in as_list(status.get("conditions"))}
    states = []
    if "Ready" in conditions:
        states.append("Ready" if conditions["Ready"].get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable") is True:
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in as_map(meta.get("labels")).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = as_map(status.get("nodeInfo"))

    def address(kind: str) -> str:
        for a in as_list(status.get("addresses")):
            if as_map(a).get("type") == kind:
                return as_str(as_map(a).get("address"))
        return "<none>"

    return [
        as_str(meta.get("name")), ",".join(states), ",".join(sorted(roles)) or "<none>",
        since(meta.get("creationTimestamp"), now), as_str(info.get("kubeletVersion")),
        address("InternalIP"), address("ExternalIP"),
        as_str(info.get("osImage")) or "<unknown>", as_str(info.get("kernelVersion")) or "<unknown>",
        as_str(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


def _configmap_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), len(as_map(obj.get("data"))) + len(as_map(obj.get("binaryData"))),
            since(meta.get("creationTimestamp"), now)]


def _secret_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    # stringData is merged into data on write, so only data is counted.
    return [as_str(meta.get("name")), as_str(obj.get("type")), len(as_map(obj.get("data"))),
            since(meta.get("creationTimestamp"), now)]


def _service_row(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = as_map(obj.get("metadata")), as_map(obj.get("spec")), as_map(obj.get("status"))
    svc_type = as_str(spec.get("type"))
    cluster_ips = as_list(spec.get("clusterIPs"))
    internal_ip = as_str(cluster_ips[0]) if cluster_ips else (as_str(spec.get("clusterIP")) or "<none>")
    external_ips = [as_str(ip) for ip in as_list(spec.get("externalIPs"))]
    if svc_type in ("ClusterIP", "NodePort"):
        external = ",".join(external_ips) or "<none>"
    elif svc_type == "LoadBalancer":
        seen = set()
        for ing in as_list(as_map(status.get("loadBalancer")).get("ingress")):
            addr = as_str(as_map(ing).get("ip")) or as_str(as_map(ing).get("hostname"))
            if addr:
                seen.add(addr)
        lb = sorted(seen)  # wide: never clipped
        if external_ips:
            external = ",".join(lb + external_ips)
        else:
            external = ",".join(lb) or "<pending>"
    elif svc_type == "ExternalName":
        external = as_str(spec.get("externalName"))
    else:
        external = "<unknown>"
    ports = []
    for raw in as_list(spec.get("ports")):
        p = as_map(raw)
        protocol = as_str(p.get("protocol"))
        node_port = as_int(p.get("nodePort"))
        if node_port > 0:
            ports.append(f"{as_int(p.get('port'))}:{node_port}/{protocol}")
        else:
            ports.append(f"{as_int(p.get('port'))}/{protocol}")
    return [
        as_str(meta.get("name")), svc_type, internal_ip, external, ",".join(ports) or "<none>",
        since(meta.get("creationTimestamp"), now), format_labels(spec.get("selector")),
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
        "series": None if series is None else {"count": as_map(series).get("count"),
                                               "lastObservedTime": as_map(series).get("lastObservedTime")},
        "reportingComponent": obj.get("reportingController"),
        "reportingInstance": obj.get("reportingInstance"),
    }


def _event_row(raw: Obj, now: float) -> list[Any]:
    obj = _core_event(raw)
    meta, inv, source = as_map(obj.get("metadata")), as_map(obj.get("involvedObject")), as_map(obj.get("source"))
    first = (since(obj.get("firstTimestamp"), now) if parse_time(obj.get("firstTimestamp")) is not None
             else since(obj.get("eventTime"), now))
    last = since(obj.get("lastTimestamp"), now) if parse_time(obj.get("lastTimestamp")) is not None else first
    count = as_int(obj.get("count"))
    series = obj.get("series")
    if series is not None:
        last = since(as_map(series).get("lastObservedTime"), now)
        count = as_int(as_map(series).get("count"))
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    kind = as_str(inv.get("kind")).lower()
    target = f"{kind}/{as_str(inv.get('name'))}" if as_str(inv.get("name")) else kind
    component = as_str(source.get("component")) or as_str(obj.get("reportingComponent"))
    host = as_str(source.get("host")) or as_str(obj.get("reportingInstance"))
    return [
        last, as_str(obj.get("type")), as_str(obj.get("reason")), target, as_str(inv.get("fieldPath")),
        f"{component}, {host}" if host else component,
        as_str(obj.get("message")).strip(), first, count, as_str(meta.get("name")),
    ]


def _serviceaccount_row(obj: Obj, now: float) -> list[Any]:
    meta = as_map(obj.get("metadata"))
    return [as_str(meta.get("name")), len(as_list(obj.get("secrets"))), since(meta.get("creationTimestamp"), now)]


_POD_CONDITIONS: Final = {
    "Succeeded": [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}],
    "Failed": [{"type": "Completed", "status": "True", "reason": "Failed",
                "message": "The pod failed."}],
}


def _pod_conditions(pod: Obj) -> list[dict[str, Any]] | None:
    """A finished pod's row carries a Completed condition."""
    conditions = _POD_CONDITIONS.get(as_str(as_map(pod.get("status")).get("phase")))
    return [dict(c) for c in conditions] if conditions else None


POD: Final = Printer(_POD_COLUMNS, _pod_row, _pod_conditions)
NAMESPACE: Final = Printer((NAME, column("Status", "string", "The status of the namespace"), AGE), _namespace_row)
NODE: Final = Printer(_NODE_COLUMNS, _node_row)
CONFIG_MAP: Final = Printer(_CONFIG_MAP_COLUMNS, _configmap_row)
SECRET: Final = Printer(_SECRET_COLUMNS, _secret_row)
SERVICE: Final = Printer(_SERVICE_COLUMNS, _service_row)
# events.k8s.io Events share the core Event storage and so its table convertor.
EVENT: Final = Printer(_EVENT_COLUMNS, _event_row)
SERVICE_ACCOUNT: Final = Printer(_SERVICE_ACCOUNT_COLUMNS, _serviceaccount_row)
