"""The built-in kinds: one strategy and Resource per kind, one module per kind (core) or group.

Adding a built-in resource is one module and its entry in ``BUILTIN``.
"""

from __future__ import annotations

from typing import Final

from kapi.apis import (admissionregistration, apiextensions, apiregistration, apps, authentication, authorization,
                       autoscaling, batch, certificates, coordination, events, flowcontrol, rbac)
from kapi.apis import discovery, networking, node, policy, scheduling, storage
from kapi.apis.core import (configmaps, endpoints, events as core_events, limitranges, namespaces, nodes,
    persistentvolumes, pods, replicationcontrollers, resourcequotas, secrets, serviceaccounts, services)
from kapi.registry.resources import Resource

__all__ = ["BUILTIN"]

# In the order discovery lists them within each group.
BUILTIN: Final[tuple[Resource, ...]] = (
    # core/v1
    namespaces.NAMESPACES,
    pods.PODS,
    nodes.NODES,
    configmaps.CONFIG_MAPS,
    secrets.SECRETS,
    services.SERVICES,
    serviceaccounts.SERVICE_ACCOUNTS,
    endpoints.ENDPOINTS,
    core_events.EVENTS,
    persistentvolumes.PERSISTENT_VOLUME_CLAIMS,
    persistentvolumes.PERSISTENT_VOLUMES,
    replicationcontrollers.REPLICATION_CONTROLLERS,
    limitranges.LIMIT_RANGES,
    resourcequotas.RESOURCE_QUOTAS,
    # apps/v1
    apps.DEPLOYMENTS,
    apps.REPLICA_SETS,
    apps.STATEFUL_SETS,
    apps.DAEMON_SETS,
    # autoscaling/v2 and v1: one stored object (v2), v1 converted
    autoscaling.HORIZONTAL_POD_AUTOSCALERS,
    autoscaling.HORIZONTAL_POD_AUTOSCALERS_V1,
    # batch/v1
    batch.JOBS,
    batch.CRON_JOBS,
    # certificates.k8s.io/v1
    certificates.CERTIFICATE_SIGNING_REQUESTS,
    # networking.k8s.io/v1
    networking.INGRESSES,
    networking.INGRESS_CLASSES,
    networking.NETWORK_POLICIES,
    # policy/v1
    policy.POD_DISRUPTION_BUDGETS,
    # storage.k8s.io/v1
    storage.STORAGE_CLASSES,
    storage.VOLUME_ATTACHMENTS,
    storage.CSI_DRIVERS,
    storage.CSI_NODES,
    storage.CSI_STORAGE_CAPACITIES,
    # scheduling.k8s.io/v1
    scheduling.PRIORITY_CLASSES,
    # coordination.k8s.io/v1
    coordination.LEASES,
    # node.k8s.io/v1
    node.RUNTIME_CLASSES,
    # discovery.k8s.io/v1
    discovery.ENDPOINT_SLICES,
    # events.k8s.io/v1: the same objects as core/v1 events, another shape
    events.EVENTS,
    # rbac.authorization.k8s.io/v1
    rbac.ROLES,
    rbac.ROLE_BINDINGS,
    rbac.CLUSTER_ROLES,
    rbac.CLUSTER_ROLE_BINDINGS,
    # authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews answered, never stored
    authorization.SELF_SUBJECT_ACCESS_REVIEWS,
    authorization.SUBJECT_ACCESS_REVIEWS,
    authorization.LOCAL_SUBJECT_ACCESS_REVIEWS,
    authorization.SELF_SUBJECT_RULES_REVIEWS,
    authorization.SELF_SUBJECT_REVIEWS,
    authentication.TOKEN_REVIEWS,
    authentication.SELF_SUBJECT_REVIEWS_V1BETA1,
    # admissionregistration.k8s.io/v1 (stored and validated; admission itself is not served yet)
    admissionregistration.MUTATING_WEBHOOK_CONFIGURATIONS,
    admissionregistration.VALIDATING_WEBHOOK_CONFIGURATIONS,
    admissionregistration.VALIDATING_ADMISSION_POLICIES,
    admissionregistration.VALIDATING_ADMISSION_POLICY_BINDINGS,
    # admissionregistration.k8s.io/v1beta1 and v1alpha1: MutatingAdmissionPolicies (one stored object, v1beta1)
    admissionregistration.MUTATING_ADMISSION_POLICIES,
    admissionregistration.MUTATING_ADMISSION_POLICY_BINDINGS,
    admissionregistration.MUTATING_ADMISSION_POLICIES_V1ALPHA1,
    admissionregistration.MUTATING_ADMISSION_POLICY_BINDINGS_V1ALPHA1,
    # apiregistration.k8s.io/v1: an APIService per served group/version (kapi.server.apiservices)
    apiregistration.API_SERVICES,
    # apiextensions.k8s.io/v1 (stored only, for now)
    apiextensions.CUSTOM_RESOURCE_DEFINITIONS,
    # flowcontrol.apiserver.k8s.io/v1 (stored only, for now)
    flowcontrol.FLOW_SCHEMAS,
    flowcontrol.PRIORITY_LEVEL_CONFIGURATIONS,
)
