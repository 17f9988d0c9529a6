"""Realistic objects of the served kinds, in the JSON form kube-apiserver writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def meta(name: str, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    """Object metadata with the fields every stored object has."""
    out: dict[str, Any] = {
        "name": name,
        "uid": "6a1e4d5c-0f2b-4b5e-9a77-5d1f0a9e1c11",
        "resourceVersion": "4711",
        "generation": 1,
        "creationTimestamp": "2024-05-14T10:00:03Z",
        "labels": {"app": name, "app.kubernetes.io/part-of": "shop"},
        "annotations": {"note": "", "deployment.kubernetes.io/revision": "3"},
    }
    if namespace:
        out["namespace"] = namespace
    out.update(extra)
    return out


def pod() -> dict[str, Any]:
    return json.loads((FIXTURES / "pod.json").read_text())


def _template() -> dict[str, Any]:
    spec = pod()["spec"]
    return {"metadata": {"labels": {"app": "web"}, "creationTimestamp": None}, "spec": spec}


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("web"),
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            "template": _template(),
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "paused": False,
        },
        "status": {
            "observedGeneration": 1,
            "replicas": 3,
            "conditions": [
                {"type": "Available", "status": "True", "lastUpdateTime": "2024-05-14T10:00:05Z",
                 "lastTransitionTime": "2024-05-14T10:00:05Z", "reason": "MinimumReplicasAvailable",
                 "message": "Deployment has minimum availability."},
            ],
        },
    }


def service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta("web"),
        "spec": {
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"name": "https", "protocol": "TCP", "port": 443, "targetPort": "https", "nodePort": 30443},
                {"name": "zero", "protocol": "UDP", "port": 53, "targetPort": 0},
            ],
            "selector": {"app": "web"},
            "clusterIP": "10.0.0.12",
            "clusterIPs": ["10.0.0.12", "fd00::12"],
            "type": "NodePort",
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
            "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "PreferDualStack",
            "internalTrafficPolicy": "Cluster",
            "externalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    }


def configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta("settings"),
        "data": {"a": "1", "empty": "", "ünïcode": "värde ✓", "z": "last\nline"},
        "binaryData": {"blob": "AAEC/w=="},
        "immutable": False,
    }


def secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta("creds"),
        "type": "kubernetes.io/basic-auth",
        "data": {"username": "YWRtaW4=", "password": "cyNjcmV0IQ==", "empty": ""},
    }


def namespace() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta("team-a", namespace="", labels={"kubernetes.io/metadata.name": "team-a"}),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def node() -> dict[str, Any]:
    quantities = {"cpu": "8", "memory": "32879320Ki", "pods": "110", "ephemeral-storage": "101430960Ki",
                  "hugepages-2Mi": "0", "nvidia.com/gpu": "1500m"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta("node-1", namespace=""),
        "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"],
                 "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
        "status": {
            "capacity": quantities,
            "allocatable": dict(quantities, cpu="7800m", memory="31.5Gi"),
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-05-14T10:00:03Z",
                            "lastTransitionTime": "2024-05-14T09:00:00Z", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
            "addresses": [{"type": "InternalIP", "address": "192.0.2.10"}, {"type": "Hostname", "address": "node-1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1.0",
                         "osImage": "Debian", "containerRuntimeVersion": "containerd://1.7.0",
                         "kubeletVersion": "v1.33.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64"},
            "images": [{"names": ["registry.example.com/app@sha256:abc", "registry.example.com/app:v1"],
                        "sizeBytes": 12345678901}],
        },
    }


def event() -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": meta("web.17c", labels={}),
        "eventTime": "2024-05-14T10:00:03.123456Z",
        "series": {"count": 2, "lastObservedTime": "2024-05-14T10:01:03.000001Z"},
        "reportingController": "kubelet",
        "reportingInstance": "kubelet-node-1",
        "action": "Pulling",
        "reason": "Pulling",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u", "apiVersion": "v1",
                      "resourceVersion": "1", "fieldPath": "spec.containers{web}"},
        "note": "Pulling image",
        "type": "Normal",
        "deprecatedFirstTimestamp": "2024-05-14T10:00:03Z",
        "deprecatedCount": 0,
    }


def core_event() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta("web.17d"),
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Started",
        "message": "Started container",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2024-05-14T10:00:03Z",
        "lastTimestamp": "2024-05-14T10:00:04Z",
        "count": 1,
        "type": "Normal",
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }


def lease() -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta("kube-scheduler", namespace="kube-system"),
        "spec": {"holderIdentity": "node-1_abc", "leaseDurationSeconds": 15,
                 "acquireTime": "2024-05-14T10:00:00.000000Z", "renewTime": "2024-05-14T10:00:42.999999Z",
                 "leaseTransitions": 0},
    }


def role() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta("reader"),
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]},
        ],
    }


def cluster_role_binding() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": meta("readers", namespace=""),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"},
                     {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}],
    }


def crd() -> dict[str, Any]:
    schema = {
        "type": "object",
        "description": "A widget",
        "required": ["spec"],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10.5,
                             "default": 3, "exclusiveMaximum": False},
                    "mode": {"type": "string", "enum": ["fast", "slow", None], "nullable": True,
                             "pattern": "^[a-z]+$", "maxLength": 10},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "pairs": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "closed": {"type": "object", "additionalProperties": False},
                    "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                             "example": {"any": ["json", 1, True, None]}},
                },
                "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
                "x-kubernetes-validations": [{"rule": "self.size < 100", "message": "too big"}],
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": meta("widgets.example.com", namespace=""),
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"]},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
                          "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                                                   "statusReplicasPath": ".status.size"}},
                          "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                        "jsonPath": ".spec.size", "priority": 0}]}],
            "conversion": {"strategy": "None"},
        },
        "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1"],
                   "conditions": [{"type": "Established", "status": "True",
                                   "lastTransitionTime": "2024-05-14T10:00:03Z", "reason": "InitialNamesAccepted",
                                   "message": "the initial names have been accepted"}]},
    }


def flowschema() -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": meta("system-leader-election", namespace=""),
        "spec": {
            "priorityLevelConfiguration": {"name": "leader-election"},
            "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "system:kube-scheduler"}}],
                       "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
                                          "resources": ["leases"], "namespaces": ["*"]}]}],
        },
    }


def job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("migrate"),
        "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "suspend": False, "manualSelector": False, "activeDeadlineSeconds": 3600,
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In",
                                                                                "values": [1, 2, -3]}}]},
            "template": dict(_template(), spec=dict(pod()["spec"], restartPolicy="Never")),
        },
        "status": {"startTime": "2024-05-14T10:00:03Z", "active": 1, "ready": 0, "terminating": 0,
                   "uncountedTerminatedPods": {}},
    }


def cronjob() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta("nightly"),
        "spec": {"schedule": "0 3 * * *", "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid",
                 "startingDeadlineSeconds": 200, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                 "jobTemplate": {"metadata": {"creationTimestamp": None}, "spec": job()["spec"]}},
        "status": {"lastScheduleTime": "2024-05-14T03:00:00Z"},
    }


def statefulset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta("db"),
        "spec": {
            "replicas": 3, "serviceName": "db", "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template(),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": "50%"}},
            # Embedded objects carry no apiVersion/kind in protobuf (Go's TypeMeta has no field number).
            "volumeClaimTemplates": [{k: v for k, v in pvc_body().items() if k not in ("apiVersion", "kind")}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"},
        },
        "status": {"replicas": 3, "readyReplicas": 3, "currentRevision": "db-1", "updateRevision": "db-1",
                   "collisionCount": 0, "availableReplicas": 3},
    }


def daemonset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta("agent", namespace="kube-system"),
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template(),
                 "updateStrategy": {"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
        "status": {"currentNumberScheduled": 2, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
                   "numberReady": 2},
    }


def pvc_body() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "creationTimestamp": None},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                 "storageClassName": "standard", "volumeMode": "Filesystem"},
        "status": {},
    }


def pvc() -> dict[str, Any]:
    out = pvc_body()
    out["metadata"] = meta("data")
    out["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}
    return out


def pv() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta("pv-1", namespace=""),
        "spec": {
            "capacity": {"storage": "10Gi"},
            "hostPath": {"path": "/data/pv-1", "type": ""},
            "accessModes": ["ReadWriteOnce"],
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data"},
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "standard",
            "volumeMode": "Filesystem",
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}},
        },
        "status": {"phase": "Bound", "lastPhaseTransitionTime": "2024-05-14T10:00:03Z"},
    }


def endpoints() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": meta("web"),
        "subsets": [{"addresses": [{"ip": "10.244.0.5", "nodeName": "node-1",
                                    "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "default"}}],
                     "notReadyAddresses": [{"ip": "10.244.0.6"}],
                     "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}],
    }


def serviceaccount() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": meta("builder"),
        "secrets": [{"name": "builder-token"}],
        "imagePullSecrets": [{"name": "registry"}],
        "automountServiceAccountToken": False,
    }


def status_object() -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Pod "web" is invalid: spec.containers[0].image: Required value',
        "reason": "Invalid",
        "details": {"name": "web", "kind": "Pod", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"}]},
        "code": 422,
    }


ALL = {
    "pod": pod, "deployment": deployment, "service": service, "configmap": configmap, "secret": secret,
    "namespace": namespace, "node": node, "event": event, "core_event": core_event, "lease": lease,
    "role": role, "clusterrolebinding": cluster_role_binding, "crd": crd, "flowschema": flowschema,
    "job": job, "cronjob": cronjob, "statefulset": statefulset, "daemonset": daemonset, "pv": pv,
    "pvc": pvc, "endpoints": endpoints, "serviceaccount": serviceaccount,
}
