"""Object validation as kube-apiserver v1.33 does it: names, metadata and per-kind rules.

Every check returns ``kapi.errors.Cause`` entries whose ``reason``, ``message`` and
``field`` read as kube-apiserver's ``field.ErrorList`` does once it becomes
``details.causes`` (see ``fields``). The objects are plain dicts decoded from JSON, with
defaults already applied (``kapi.object.defaults``); a field of the wrong JSON type is
treated as absent.

Per kind, as kube names them: ``validate_<kind>(obj)`` on create and
``validate_<kind>_update(new, old)`` on update give the kind's own rules, each identical
cause once; ``validate_object_meta`` / ``validate_update_meta`` are the ``metadata`` rules
shared by all kinds. The modules follow kube's groups: ``fields``, ``names``, ``meta``,
``quantity``, ``containers``, ``pods``, ``core``, ``events``, ``apps``, ``batch``, ``rbac``,
``coordination``, ``apiextensions``, ``flowcontrol``.
"""

from __future__ import annotations

from kapi.object.validation.apiextensions import (validate_custom_resource_definition,
    validate_custom_resource_definition_update)
from kapi.object.validation.apps import (validate_controller_revision, validate_controller_revision_update,
    validate_daemon_set, validate_daemon_set_update, validate_deployment, validate_deployment_update,
    validate_replica_set, validate_replica_set_update, validate_stateful_set, validate_stateful_set_update)
from kapi.object.validation.batch import (validate_cron_job, validate_cron_job_update, validate_job,
    validate_job_update)
from kapi.object.validation.coordination import validate_lease, validate_lease_update
from kapi.object.validation.core import (validate_config_map, validate_config_map_update, validate_endpoints,
    validate_endpoints_update, validate_namespace, validate_namespace_status_update,
    validate_namespace_update, validate_node,
    validate_node_update, validate_persistent_volume, validate_persistent_volume_claim,
    validate_persistent_volume_claim_update, validate_persistent_volume_update, validate_secret,
    validate_secret_update, validate_service, validate_service_update)
from kapi.object.validation.events import (validate_event, validate_event_update, validate_events_v1_event,
    validate_events_v1_event_update)
from kapi.object.validation.fields import (REASON_DUPLICATE, REASON_FORBIDDEN, REASON_INVALID,
    REASON_NOT_FOUND, REASON_NOT_SUPPORTED, REASON_REQUIRED, REASON_TOO_LONG, REASON_TOO_MANY,
    field_duplicate, field_forbidden, field_invalid, field_not_found, field_not_supported, field_required,
    field_too_long, go_quote, go_quote_list, unique_causes)
from kapi.object.validation.meta import (validate_annotations, validate_labels, validate_object_meta,
    validate_update_meta)
from kapi.object.validation.names import (RULE_DNS1035_LABEL, RULE_DNS1123_LABEL, RULE_DNS1123_SUBDOMAIN,
    RULE_PATH_SEGMENT, is_config_map_key, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain,
    is_qualified_name, is_valid_label_value, is_valid_path_segment_name, is_valid_port_name, is_valid_port_num,
    validate_name)
from kapi.object.validation.pods import (validate_pod, validate_pod_template, validate_pod_template_update,
    validate_pod_update, validate_replication_controller, validate_replication_controller_update)
from kapi.object.validation.quantity import parse_quantity
from kapi.object.validation.rbac import (validate_cluster_role, validate_cluster_role_binding,
    validate_cluster_role_binding_update, validate_cluster_role_update, validate_role, validate_role_binding,
    validate_role_binding_update, validate_role_update)

__all__ = [
    "REASON_DUPLICATE",
    "REASON_FORBIDDEN",
    "REASON_INVALID",
    "REASON_NOT_FOUND",
    "REASON_NOT_SUPPORTED",
    "REASON_REQUIRED",
    "REASON_TOO_LONG",
    "REASON_TOO_MANY",
    "RULE_DNS1035_LABEL",
    "RULE_DNS1123_LABEL",
    "RULE_DNS1123_SUBDOMAIN",
    "RULE_PATH_SEGMENT",
    "field_duplicate",
    "field_forbidden",
    "field_invalid",
    "field_not_found",
    "field_not_supported",
    "field_required",
    "field_too_long",
    "go_quote",
    "go_quote_list",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "is_valid_path_segment_name",
    "is_valid_port_name",
    "is_valid_port_num",
    "parse_quantity",
    "unique_causes",
    "validate_annotations",
    "validate_cluster_role",
    "validate_cluster_role_binding",
    "validate_cluster_role_binding_update",
    "validate_cluster_role_update",
    "validate_config_map",
    "validate_config_map_update",
    "validate_controller_revision",
    "validate_controller_revision_update",
    "validate_cron_job",
    "validate_cron_job_update",
    "validate_custom_resource_definition",
    "validate_custom_resource_definition_update",
    "validate_daemon_set",
    "validate_daemon_set_update",
    "validate_deployment",
    "validate_deployment_update",
    "validate_endpoints",
    "validate_endpoints_update",
    "validate_event",
    "validate_event_update",
    "validate_events_v1_event",
    "validate_events_v1_event_update",
    "validate_job",
    "validate_job_update",
    "validate_labels",
    "validate_lease",
    "validate_lease_update",
    "validate_name",
    "validate_namespace",
    "validate_namespace_status_update",
    "validate_namespace_update",
    "validate_node",
    "validate_node_update",
    "validate_object_meta",
    "validate_persistent_volume",
    "validate_persistent_volume_claim",
    "validate_persistent_volume_claim_update",
    "validate_persistent_volume_update",
    "validate_pod",
    "validate_pod_template",
    "validate_pod_template_update",
    "validate_pod_update",
    "validate_replica_set",
    "validate_replica_set_update",
    "validate_replication_controller",
    "validate_replication_controller_update",
    "validate_role",
    "validate_role_binding",
    "validate_role_binding_update",
    "validate_role_update",
    "validate_secret",
    "validate_secret_update",
    "validate_service",
    "validate_service_update",
    "validate_stateful_set",
    "validate_stateful_set_update",
    "validate_update_meta",
]
