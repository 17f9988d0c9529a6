"""Validation by (group, resource): the dispatch the registry used before per-kind strategies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from kapi.errors import Cause
from kapi.object.validation.apiextensions import (validate_custom_resource_definition,
    validate_custom_resource_definition_update)
from kapi.object.validation.apps import (validate_controller_revision, validate_controller_revision_update,
    validate_daemon_set, validate_daemon_set_update, validate_deployment, validate_deployment_update,
    validate_replica_set, validate_replica_set_update, validate_stateful_set, validate_stateful_set_update)
from kapi.object.validation.batch import (validate_cron_job, validate_cron_job_update, validate_job,
    validate_job_update)
from kapi.object.validation.coordination import validate_lease, validate_lease_update
from kapi.object.validation.core import (validate_config_map, validate_config_map_update, validate_endpoints,
    validate_endpoints_update, validate_namespace, validate_namespace_update, validate_node,
    validate_node_update, validate_persistent_volume, validate_persistent_volume_claim,
    validate_persistent_volume_claim_update, validate_persistent_volume_update, validate_secret,
    validate_secret_update, validate_service, validate_service_update)
from kapi.object.validation.events import (validate_event, validate_event_update, validate_events_v1_event,
    validate_events_v1_event_update)
from kapi.object.validation.fields import Obj
from kapi.object.validation.pods import (validate_pod, validate_pod_template, validate_pod_template_update,
    validate_pod_update, validate_replication_controller, validate_replication_controller_update)
from kapi.object.validation.rbac import (RBAC_GROUP, validate_cluster_role, validate_cluster_role_binding,
    validate_cluster_role_binding_update, validate_cluster_role_update, validate_role, validate_role_binding,
    validate_role_binding_update, validate_role_update)


_Create = Callable[[Obj], list[Cause]]
_Update = Callable[[Obj, Obj], list[Cause]]

_STRATEGIES: Mapping[tuple[str, str], tuple[_Create, _Update]] = MappingProxyType({
    ("", "pods"): (validate_pod, validate_pod_update),
    ("", "podtemplates"): (validate_pod_template, validate_pod_template_update),
    ("", "replicationcontrollers"): (validate_replication_controller, validate_replication_controller_update),
    ("", "services"): (validate_service, validate_service_update),
    ("", "endpoints"): (validate_endpoints, validate_endpoints_update),
    ("", "configmaps"): (validate_config_map, validate_config_map_update),
    ("", "secrets"): (validate_secret, validate_secret_update),
    ("", "namespaces"): (validate_namespace, validate_namespace_update),
    ("", "nodes"): (validate_node, validate_node_update),
    ("", "persistentvolumeclaims"): (validate_persistent_volume_claim, validate_persistent_volume_claim_update),
    ("", "persistentvolumes"): (validate_persistent_volume, validate_persistent_volume_update),
    ("", "events"): (validate_event, validate_event_update),
    ("events.k8s.io", "events"): (validate_events_v1_event, validate_events_v1_event_update),
    ("apps", "deployments"): (validate_deployment, validate_deployment_update),
    ("apps", "replicasets"): (validate_replica_set, validate_replica_set_update),
    ("apps", "daemonsets"): (validate_daemon_set, validate_daemon_set_update),
    ("apps", "statefulsets"): (validate_stateful_set, validate_stateful_set_update),
    ("apps", "controllerrevisions"): (validate_controller_revision, validate_controller_revision_update),
    ("batch", "jobs"): (validate_job, validate_job_update),
    ("batch", "cronjobs"): (validate_cron_job, validate_cron_job_update),
    ("coordination.k8s.io", "leases"): (validate_lease, validate_lease_update),
    (RBAC_GROUP, "roles"): (validate_role, validate_role_update),
    (RBAC_GROUP, "clusterroles"): (validate_cluster_role, validate_cluster_role_update),
    (RBAC_GROUP, "rolebindings"): (validate_role_binding, validate_role_binding_update),
    (RBAC_GROUP, "clusterrolebindings"): (validate_cluster_role_binding, validate_cluster_role_binding_update),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (validate_custom_resource_definition, validate_custom_resource_definition_update),
})


def validate(resource: str, group: str, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """The kind-specific checks of a create (``old`` is None) or an update.

    ``metadata`` rules shared by all kinds are ``validate_object_meta`` and
    ``validate_update_meta``; call those too. Kinds without rules of their own
    return no causes. Identical causes are reported once.
    """
    strategy = _STRATEGIES.get((group, resource))
    if strategy is None:
        return []
    return strategy[0](obj) if old is None else strategy[1](obj, old)
