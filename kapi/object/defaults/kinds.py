"""Defaulting by (group, resource): the dispatch the registry used before per-kind strategies."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from kapi.object.defaults.apiextensions import default_custom_resource_definition
from kapi.object.defaults.apps import (default_daemon_set, default_deployment, default_replica_set,
    default_stateful_set)
from kapi.object.defaults.batch import default_cron_job, default_job
from kapi.object.defaults.core import (default_endpoints, default_namespace, default_node,
    default_persistent_volume, default_persistent_volume_claim, default_secret, default_service)
from kapi.object.defaults.fields import Obj, _Defaulter
from kapi.object.defaults.pods import default_pod, default_pod_template, default_replication_controller
from kapi.object.defaults.rbac import _RBAC_GROUP, default_cluster_role_binding, default_role_binding


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
