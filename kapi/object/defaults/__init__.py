"""Defaulting of API objects as kube-apiserver v1.33 does it on every write.

The values a client sees after a create: the ``SetDefaults_*`` functions of
``pkg/apis/*/v1/defaults.go``, plus the strategy and admission steps that fill
fields on create (pod status and QoS class, the default service account,
priority, the not-ready/unreachable tolerations, generated Job selectors). Objects
are plain JSON dicts and are changed in place. (A namespace's ``kubernetes``
finalizer and a created service's IP families are not defaults: their strategies
add them after the create's managedFields are recorded, as kube's namespace
PrepareForCreate and service REST do; ``fill_service_ip_families``.)

Per kind, as kube groups them: ``default_<kind>(obj, old)``, ``old`` being None on
a create (see ``fields.defaulter``). The modules: ``fields``, ``pods``, ``core``,
``apps``, ``batch``, ``rbac``, ``apiextensions``, ``flowcontrol``.
"""

from __future__ import annotations

from kapi.object.defaults.apiextensions import default_custom_resource_definition
from kapi.object.defaults.apps import (default_daemon_set, default_deployment, default_replica_set,
    default_stateful_set)
from kapi.object.defaults.batch import default_cron_job, default_job
from kapi.object.defaults.core import (default_endpoints, default_namespace, default_node,
    default_persistent_volume, default_persistent_volume_claim, default_secret, default_service,
    fill_service_ip_families)
from kapi.object.defaults.fields import defaulter
from kapi.object.defaults.pods import (default_pod, default_pod_template, default_replication_controller,
    image_pull_policy, pod_qos_class)
from kapi.object.defaults.rbac import default_cluster_role_binding, default_role_binding

__all__ = [
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
    "fill_service_ip_families",
    "image_pull_policy",
    "pod_qos_class",
]
