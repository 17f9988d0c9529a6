"""Pods, pod templates and replication controllers (core/v1 ``SetDefaults_*``), plus the create-time
step of the pod strategy (status and QoS class). Also the image pull policy rule.
"""

from __future__ import annotations

import re
from fractions import Fraction

from kapi.object.defaults.core import _default_pvc_spec
from kapi.object.defaults.fields import Obj, _dicts, _obj, _unset, defaulter
from kapi.object.validation import parse_quantity


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
    # Create only: the pod strategy's PrepareForCreate (the service account, priority and default
    # tolerations are admission's: kapi.admission.plugins).
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
