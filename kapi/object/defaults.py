"""Defaulting of API objects as kube-apiserver v1.33 does it on every write.

The values a client sees after a create: the ``SetDefaults_*`` functions of
``pkg/apis/*/v1/defaults.go``, plus the strategy and admission steps that fill
fields on create (pod status and QoS class, the default service account,
priority, the not-ready/unreachable tolerations, generated Job selectors,
the namespace ``kubernetes`` finalizer). Objects are plain JSON dicts and are
changed in place.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from kapi.object.validation import parse_quantity

Obj = dict[str, Any]
_Defaulter = Callable[[Obj, "Obj | None"], None]

__all__ = [
    "apply_defaults",
    "default_cluster_role_binding",
    "default_cron_job",
    "default_custom_resource_definition",
    "default_daemon_set",
    "default_deployment",
    "default_endpoints",
    "default_job",
    "default_namespace",
    "default_node",
    "default_persistent_volume",
    "default_persistent_volume_claim",
    "default_pod",
    "default_pod_template",
    "default_replica_set",
    "default_replication_controller",
    "default_role_binding",
    "default_secret",
    "default_service",
    "default_stateful_set",
    "defaulter",
    "image_pull_policy",
    "pod_qos_class",
]


def defaulter(fill: _Defaulter) -> _Defaulter:
    """A per-kind defaulter (``default_<kind>(obj, old)``) with the rules they all share.

    ``old`` is the stored object on an update; without it the write is taken as
    a create, which also runs the create-only steps (pod status, service account,
    priority and tolerations; Job selector generation; the namespace finalizer).
    An object that was stored already (it has a resourceVersion) is an update
    whose caller gave no old object: it does not get the create-only steps again.
    Anything but a JSON object is left alone. A Job's generated selector uses
    ``metadata.uid``, so set it first.
    """
    @functools.wraps(fill)
    def default(obj: Obj, old: Obj | None = None) -> None:
        if not isinstance(obj, dict):
            return
        if old is None and isinstance(obj.get("metadata"), dict) and obj["metadata"].get("resourceVersion"):
            old = obj
        fill(obj, old)
    return default


def _obj(parent: Obj, key: str) -> Obj:
    """``parent[key]`` as a dict, created when absent or null."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _dicts(value: object) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _unset(obj: Obj, key: str) -> bool:
    return obj.get(key) in (None, "")


# ------------------------------------------------------------- images

_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_HOST_PART}(?:\.{_HOST_PART})*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REFERENCE_RE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}))?")


def image_pull_policy(image: str) -> str:
    """The default ``imagePullPolicy``: ``Always`` for ``:latest`` or no tag, else ``IfNotPresent``."""
    m = _REFERENCE_RE.fullmatch(image)
    if not m or len(m.group("name")) > 255:
        # kube-apiserver ignores the parse error and finds no tag
        return "IfNotPresent"
    tag = m.group("tag") or ("" if m.group("digest") else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


# ------------------------------------------------------------- pods

_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"


def _default_http_get(action: object) -> None:
    if isinstance(action, dict):
        if _unset(action, "path"):
            action["path"] = "/"
        if _unset(action, "scheme"):
            action["scheme"] = "HTTP"


def _default_probe(probe: object) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _default_http_get(probe.get("httpGet"))
    grpc = probe.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _default_field_ref(holder: object) -> None:
    ref = holder.get("fieldRef") if isinstance(holder, dict) else None
    if isinstance(ref, dict) and _unset(ref, "apiVersion"):
        ref["apiVersion"] = "v1"


def _default_container(ctr: Obj) -> None:
    if _unset(ctr, "imagePullPolicy"):
        ctr["imagePullPolicy"] = image_pull_policy(ctr.get("image") if isinstance(ctr.get("image"), str) else "")
    if _unset(ctr, "terminationMessagePath"):
        ctr["terminationMessagePath"] = "/dev/termination-log"
    if _unset(ctr, "terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    # ResourceRequirements is not a pointer in Go, so it is always written out.
    if not isinstance(ctr.get("resources"), dict):
        ctr["resources"] = {}
    for port in _dicts(ctr.get("ports")):
        if _unset(port, "protocol"):
            port["protocol"] = "TCP"
    for env in _dicts(ctr.get("env")):
        _default_field_ref(env.get("valueFrom"))
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(ctr.get(key))
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            handler = lifecycle.get(key)
            if isinstance(handler, dict):
                _default_http_get(handler.get("httpGet"))


_VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs",
    "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte",
    "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk",
    "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)
_DEFAULT_MODE = 0o644


def _default_volume(vol: Obj) -> None:
    if all(vol.get(key) is None for key in _VOLUME_SOURCES):
        vol["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = vol.get(key)
        if isinstance(source, dict) and source.get("defaultMode") is None:
            source["defaultMode"] = _DEFAULT_MODE
    downward = vol.get("downwardAPI")
    if isinstance(downward, dict):
        for item in _dicts(downward.get("items")):
            _default_field_ref(item)
    projected = vol.get("projected")
    if isinstance(projected, dict):
        for source in _dicts(projected.get("sources")):
            token = source.get("serviceAccountToken")
            if isinstance(token, dict) and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
            downward = source.get("downwardAPI")
            if isinstance(downward, dict):
                for item in _dicts(downward.get("items")):
                    _default_field_ref(item)
    host_path = vol.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    ephemeral = vol.get("ephemeral")
    if isinstance(ephemeral, dict) and isinstance(ephemeral.get("volumeClaimTemplate"), dict):
        _default_pvc_spec(_obj(ephemeral["volumeClaimTemplate"], "spec"))


def _default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and everything nested in it (pods and pod templates alike)."""
    if _unset(spec, "dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if _unset(spec, "restartPolicy"):
        spec["restartPolicy"] = "Always"
    if not isinstance(spec.get("securityContext"), dict):
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if _unset(spec, "schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for ctr in _dicts(spec.get(key)):
            _default_container(ctr)
    for vol in _dicts(spec.get("volumes")):
        _default_volume(vol)
    # v1 keeps the deprecated serviceAccount field in step with serviceAccountName.
    if _unset(spec, "serviceAccountName") and isinstance(spec.get("serviceAccount"), str) and spec["serviceAccount"]:
        spec["serviceAccountName"] = spec["serviceAccount"]
    if isinstance(spec.get("serviceAccountName"), str) and spec["serviceAccountName"]:
        spec["serviceAccount"] = spec["serviceAccountName"]


def _default_template(holder: Obj) -> None:
    template = holder.get("template")
    if isinstance(template, dict):
        _default_pod_spec(_obj(template, "spec"))


def pod_qos_class(pod: Obj) -> str:
    """``Guaranteed``, ``Burstable`` or ``BestEffort``, as ``qos.ComputePodQOS`` decides."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for ctr in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
        resources = ctr.get("resources") if isinstance(ctr.get("resources"), dict) else {}
        for target, key in ((requests, "requests"), (limits, "limits")):
            found = set()
            values = resources.get(key) if isinstance(resources.get(key), dict) else {}
            for name, raw in values.items():
                qty = parse_quantity(raw)
                if name not in ("cpu", "memory") or qty is None or qty <= 0:
                    continue
                found.add(name)
                target[name] = target.get(name, Fraction(0)) + qty
            if key == "limits" and not {"cpu", "memory"} <= found:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(name in limits and limits[name] == value for name, value in requests.items()) \
            and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _tolerates(tolerations: list[Obj], key: str) -> bool:
    return any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None) for t in tolerations)


@defaulter
def default_pod(pod: Obj, old: Obj | None) -> None:
    spec = _obj(pod, "spec")
    _default_pod_spec(spec)
    for key in ("containers", "initContainers"):
        for ctr in _dicts(spec.get(key)):
            # SetDefaults_Pod: requests default to limits, on pods only (not templates)
            resources = _obj(ctr, "resources")
            limits = resources.get("limits")
            if isinstance(limits, dict) and limits:
                requests = _obj(resources, "requests")
                for name, value in limits.items():
                    requests.setdefault(name, value)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for ctr in _dicts(spec.get(key)):
                for port in _dicts(ctr.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    if old is not None:
        return
    # Create only: the ServiceAccount, Priority and DefaultTolerationSeconds admission
    # plugins and the pod strategy's PrepareForCreate.
    if _unset(spec, "serviceAccountName"):
        spec["serviceAccountName"] = "default"
        spec["serviceAccount"] = "default"
    if spec.get("priority") is None and _unset(spec, "priorityClassName"):
        spec["priority"] = 0
    if spec.get("preemptionPolicy") is None:
        spec["preemptionPolicy"] = "PreemptLowerPriority"
    tolerations = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []
    present = _dicts(tolerations)
    added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
             for key in (_NOT_READY, _UNREACHABLE) if not _tolerates(present, key)]
    if added:
        spec["tolerations"] = tolerations + added
    status = _obj(pod, "status")
    if _unset(status, "phase"):
        status["phase"] = "Pending"
    if _unset(status, "qosClass"):
        status["qosClass"] = pod_qos_class(pod)


@defaulter
def default_pod_template(obj: Obj, old: Obj | None) -> None:
    _default_template(obj)


@defaulter
def default_replication_controller(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    template = spec.get("template")
    labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) and isinstance(
        template.get("metadata"), dict) else None
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        md = _obj(obj, "metadata")
        if not md.get("labels"):
            md["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _default_template(spec)


# ------------------------------------------------------------- apps


@defaulter
def default_deployment(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _obj(spec, "strategy")
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _obj(strategy, "rollingUpdate")
        for key in ("maxUnavailable", "maxSurge"):
            if rolling.get(key) is None:
                rolling[key] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _default_template(spec)


@defaulter
def default_replica_set(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _default_template(spec)


@defaulter
def default_daemon_set(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    strategy = _obj(spec, "updateStrategy")
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _obj(strategy, "rollingUpdate")
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _default_template(spec)


@defaulter
def default_stateful_set(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if _unset(spec, "podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = _obj(spec, "updateStrategy")
    if _unset(strategy, "type"):
        strategy["type"] = "RollingUpdate"
        _obj(strategy, "rollingUpdate")
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict) and rolling.get("partition") is None:
        rolling["partition"] = 0
    retention = _obj(spec, "persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        if _unset(retention, key):
            retention[key] = "Retain"
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _default_template(spec)
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        # embedded claims are full PersistentVolumeClaims, type meta and status included
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        default_persistent_volume_claim(claim, None)


# ------------------------------------------------------------- batch


@defaulter
def default_job(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    template = _obj(spec, "template")
    md = _obj(obj, "metadata")
    template_md = template.get("metadata") if isinstance(template.get("metadata"), dict) else None
    template_labels = template_md.get("labels") if template_md is not None else None
    # Go shares the map: a Job without labels ends up with its template's, generated ones included.
    share_labels = isinstance(template_labels, dict) and not md.get("labels")
    if _unset(spec, "completionMode"):
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    failure_policy = spec.get("podFailurePolicy")
    if isinstance(failure_policy, dict):
        for rule in _dicts(failure_policy.get("rules")):
            for pattern in _dicts(rule.get("onPodConditions")):
                if _unset(pattern, "status"):
                    pattern["status"] = "True"
    if _unset(spec, "podReplacementPolicy"):
        spec["podReplacementPolicy"] = "Failed" if failure_policy is not None else "TerminatingOrFailed"
    _default_template(spec)
    if old is None and spec.get("manualSelector") is not True:
        _generate_job_selector(obj, spec, template)
    if share_labels:
        md["labels"] = dict(_obj(_obj(template, "metadata"), "labels"))


def _generate_job_selector(obj: Obj, spec: Obj, template: Obj) -> None:
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name, uid = str(md.get("name", "")), str(md.get("uid", ""))
    labels = _obj(_obj(template, "metadata"), "labels")
    for key, value in (("batch.kubernetes.io/controller-uid", uid), ("batch.kubernetes.io/job-name", name),
                       ("controller-uid", uid), ("job-name", name)):
        # a conflicting label set by the user is left for validation to reject
        labels.setdefault(key, value)
    match_labels = _obj(_obj(spec, "selector"), "matchLabels")
    match_labels.setdefault("batch.kubernetes.io/controller-uid", uid)


@defaulter
def default_cron_job(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if _unset(spec, "concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        _default_template(_obj(job_template, "spec"))


# ------------------------------------------------------------- services


def _needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def _patch_allocated_values(spec: Obj, old_spec: Obj) -> None:
    """An update that leaves out allocated values keeps the old ones (the service REST does this)."""
    if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
        if _unset(spec, "clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
        if not spec.get("ipFamilies") and old_spec.get("ipFamilies"):
            spec["ipFamilies"] = list(old_spec["ipFamilies"])
        if spec.get("ipFamilyPolicy") is None and old_spec.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
    if spec.get("type") in ("NodePort", "LoadBalancer") and old_spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = _dicts(old_spec.get("ports"))
        new_ports = _dicts(spec.get("ports"))
        used = {p.get("nodePort") for p in old_ports} & {p.get("nodePort") for p in new_ports}
        by_name = {p.get("name", ""): p.get("nodePort") for p in old_ports}
        for port in new_ports:
            if not port.get("nodePort"):
                previous = by_name.get(port.get("name", ""))
                if previous and previous not in used:
                    port["nodePort"] = previous
    if spec.get("healthCheckNodePort") in (None, 0) and old_spec.get("healthCheckNodePort"):
        if spec.get("type") == old_spec.get("type") == "LoadBalancer" and \
                spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy") == "Local":
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


@defaulter
def default_service(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if old is not None and isinstance(old.get("spec"), dict):
        _patch_allocated_values(spec, old["spec"])
    if _unset(spec, "sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = spec.get("sessionAffinityConfig", {}).get("clientIP") if isinstance(
            spec.get("sessionAffinityConfig"), dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if _unset(spec, "type"):
        spec["type"] = "ClusterIP"
    for port in _dicts(spec.get("ports")):
        if _unset(port, "protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    stype = spec["type"]
    accessible = stype in ("LoadBalancer", "NodePort") or stype == "ClusterIP" and bool(spec.get("externalIPs"))
    if accessible and _unset(spec, "externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and stype in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec["internalTrafficPolicy"] = "Cluster"
    if stype == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if stype == "LoadBalancer":
        for ingress in _dicts(_obj(_obj(obj, "status"), "loadBalancer").get("ingress")):
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"
    if _needs_cluster_ip(spec):
        _default_service_ips(spec)
    status = _obj(obj, "status")
    if not isinstance(status.get("loadBalancer"), dict):
        status["loadBalancer"] = {}


def _default_service_ips(spec: Obj) -> None:
    cluster_ip, cluster_ips = spec.get("clusterIP"), spec.get("clusterIPs")
    if isinstance(cluster_ip, str) and cluster_ip and not cluster_ips:
        spec["clusterIPs"] = [cluster_ip]
    elif isinstance(cluster_ips, list) and cluster_ips and _unset(spec, "clusterIP"):
        spec["clusterIP"] = cluster_ips[0]
    headless = spec.get("clusterIP") == "None"
    if spec.get("ipFamilyPolicy") is None:
        # headless without a selector gets all of the cluster's families
        spec["ipFamilyPolicy"] = "RequireDualStack" if headless and not spec.get("selector") else "SingleStack"
    if not spec.get("ipFamilies"):
        ips = [ip for ip in spec.get("clusterIPs") or () if isinstance(ip, str) and ip != "None"]
        spec["ipFamilies"] = ["IPv6" if ":" in ip else "IPv4" for ip in ips] or ["IPv4"]


# ------------------------------------------------------------- other core kinds


@defaulter
def default_secret(obj: Obj, old: Obj | None) -> None:
    if _unset(obj, "type"):
        obj["type"] = "Opaque"


@defaulter
def default_namespace(obj: Obj, old: Obj | None) -> None:
    md = _obj(obj, "metadata")
    name = md.get("name")
    if isinstance(name, str) and name:
        _obj(md, "labels")["kubernetes.io/metadata.name"] = name
    status = _obj(obj, "status")
    if _unset(status, "phase"):
        status["phase"] = "Active"
    if old is None:
        # on create only: the finalizer may be removed during the namespace's life
        spec = _obj(obj, "spec")
        finalizers = spec.get("finalizers") if isinstance(spec.get("finalizers"), list) else []
        if "kubernetes" not in finalizers:
            spec["finalizers"] = finalizers + ["kubernetes"]


@defaulter
def default_node(obj: Obj, old: Obj | None) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and isinstance(status.get("capacity"), dict) and status.get("allocatable") is None:
        status["allocatable"] = dict(status["capacity"])


def _default_pvc_spec(spec: Obj) -> None:
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"


@defaulter
def default_persistent_volume_claim(obj: Obj, old: Obj | None) -> None:
    _default_pvc_spec(_obj(obj, "spec"))
    status = _obj(obj, "status")
    if _unset(status, "phase"):
        status["phase"] = "Pending"


@defaulter
def default_persistent_volume(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if _unset(spec, "persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    status = _obj(obj, "status")
    if _unset(status, "phase"):
        status["phase"] = "Pending"


@defaulter
def default_endpoints(obj: Obj, old: Obj | None) -> None:
    for subset in _dicts(obj.get("subsets")):
        for port in _dicts(subset.get("ports")):
            if _unset(port, "protocol"):
                port["protocol"] = "TCP"


# ------------------------------------------------------------- rbac, apiextensions

_RBAC_GROUP = "rbac.authorization.k8s.io"


def _default_binding(obj: Obj) -> None:
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and _unset(ref, "apiGroup"):
        ref["apiGroup"] = _RBAC_GROUP
    for subject in _dicts(obj.get("subjects")):
        if _unset(subject, "apiGroup"):
            subject["apiGroup"] = _RBAC_GROUP if subject.get("kind") in ("User", "Group") else ""
        if subject.get("apiGroup") == "":
            del subject["apiGroup"]


@defaulter
def default_role_binding(obj: Obj, old: Obj | None) -> None:
    _default_binding(obj)


@defaulter
def default_cluster_role_binding(obj: Obj, old: Obj | None) -> None:
    _default_binding(obj)


@defaulter
def default_custom_resource_definition(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    names = _obj(spec, "names")
    kind = names.get("kind")
    if _unset(names, "singular") and isinstance(kind, str) and kind:
        names["singular"] = kind.lower()
    if _unset(names, "listKind") and isinstance(kind, str) and kind:
        names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
    elif _unset(conversion, "strategy"):
        conversion["strategy"] = "None"


_DEFAULTERS: Mapping[tuple[str, str], _Defaulter] = MappingProxyType({
    ("", "pods"): default_pod,
    ("", "podtemplates"): default_pod_template,
    ("", "replicationcontrollers"): default_replication_controller,
    ("", "services"): default_service,
    ("", "secrets"): default_secret,
    ("", "namespaces"): default_namespace,
    ("", "nodes"): default_node,
    ("", "persistentvolumeclaims"): default_persistent_volume_claim,
    ("", "persistentvolumes"): default_persistent_volume,
    ("", "endpoints"): default_endpoints,
    ("apps", "deployments"): default_deployment,
    ("apps", "replicasets"): default_replica_set,
    ("apps", "daemonsets"): default_daemon_set,
    ("apps", "statefulsets"): default_stateful_set,
    ("batch", "jobs"): default_job,
    ("batch", "cronjobs"): default_cron_job,
    (_RBAC_GROUP, "rolebindings"): default_role_binding,
    (_RBAC_GROUP, "clusterrolebindings"): default_cluster_role_binding,
    ("apiextensions.k8s.io", "customresourcedefinitions"): default_custom_resource_definition,
})


def apply_defaults(resource: str, group: str, obj: Obj, *, old: Obj | None = None) -> None:
    """Fill kube-apiserver's defaults into ``obj`` in place.

    ``old`` is the stored object on an update; without it the write is taken as
    a create, which also runs the create-only steps (pod status, service account,
    priority and tolerations; Job selector generation; the namespace finalizer).
    A Job's generated selector uses ``metadata.uid``, so set it first.
    """
    default = _DEFAULTERS.get((group, resource))
    if default is not None:
        default(obj, old)
