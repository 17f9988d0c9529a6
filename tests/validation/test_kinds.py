"""Per-kind validation on create and update, on objects defaulted as the registry does."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kapi.errors import Cause
from kapi.object import validation
from kapi.object.defaults.batch import generate_job_selector
from kapi.object.defaults import (default_cluster_role_binding, default_cron_job,
    default_custom_resource_definition, default_daemon_set, default_deployment, default_job,
    default_namespace, default_node, default_persistent_volume, default_persistent_volume_claim, default_pod,
    default_pod_template, default_replica_set, default_replication_controller, default_role_binding,
    default_secret, default_service, default_stateful_set)
from kapi.object.validation import (field_required, unique_causes, validate_cluster_role_binding,
    validate_config_map, validate_config_map_update, validate_controller_revision, validate_cron_job,
    validate_custom_resource_definition, validate_daemon_set, validate_daemon_set_update, validate_deployment,
    validate_deployment_update, validate_event, validate_job, validate_job_update, validate_lease,
    validate_namespace, validate_node, validate_node_update, validate_persistent_volume,
    validate_persistent_volume_claim, validate_pod, validate_pod_template, validate_pod_update,
    validate_replica_set, validate_replication_controller, validate_replication_controller_update,
    validate_role, validate_role_binding, validate_role_binding_update, validate_secret,
    validate_secret_update, validate_service, validate_service_update, validate_stateful_set,
    validate_stateful_set_update)
from kapi.registry.strategy import Strategy

Obj = dict[str, Any]
Defaulter = Callable[[Obj, "Obj | None"], None]
Create = Callable[[Obj], list[Cause]]
Update = Callable[[Obj, Obj], list[Cause]]


def _create(default: Defaulter | None, check: Create, obj: Obj) -> list[Cause]:
    if default is not None:
        default(obj, None)
    return check(obj)


def _update(default: Defaulter | None, check: Update, new: Obj, old: Obj) -> list[Cause]:
    if default is not None:
        default(new, old)
    return check(new, old)


def create_job(obj: Obj, old: Obj | None) -> None:
    """A Job's create as its strategy makes it: the generated selector (PrepareForCreate), then the defaults."""
    if old is None:
        generate_job_selector(obj)
    default_job(obj, old)


def _pairs(causes: list[Cause]) -> list[tuple[str, str]]:
    return [(c.field, c.message) for c in causes]


def _pod(**spec: Any) -> Obj:
    base: Obj = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    base.update(spec)
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": base}


def _template(labels: dict[str, str] | None, **spec: Any) -> Obj:
    tpl = _pod(**spec)
    tpl["metadata"] = {"labels": labels} if labels is not None else {}
    return tpl


def _deployment(selector: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"template": _template({"app": "web"} if labels is None else labels)}
    spec["selector"] = {"matchLabels": {"app": "web"}} if selector is None else selector
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


# ------------------------------------------------------------- pods


def test_valid_pod(pod_json: Obj) -> None:
    pod_json["metadata"].pop("resourceVersion")
    pod_json.pop("status")
    assert _create(default_pod, validate_pod, pod_json) == []


def test_pod_needs_a_container() -> None:
    assert _pairs(_create(default_pod, validate_pod, _pod(containers=[]))) == [("spec.containers", "Required value")]


def test_pod_container_rules() -> None:
    pod = _pod(containers=[
        {"name": "App", "image": "a"},
        {"name": "side", "image": ""},
        {"name": "side", "image": "b", "ports": [{"containerPort": 70000}, {"containerPort": 80, "protocol": "HTTP"}]},
    ])
    causes = _pairs(_create(default_pod, validate_pod, pod))
    assert ("spec.containers[0].name",
            'Invalid value: "App": a lowercase RFC 1123 label must consist of lower case alphanumeric characters '
            "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
            "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')") in causes
    assert ("spec.containers[1].image", "Required value") in causes
    assert ("spec.containers[2].ports[0].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive") in causes
    assert ("spec.containers[2].ports[1].protocol",
            'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"') in causes
    assert ("spec.containers[2].name", 'Duplicate value: "side"') in causes
    assert {c.reason for c in _create(default_pod, validate_pod, copy.deepcopy(pod))} == {
        "FieldValueInvalid", "FieldValueRequired", "FieldValueNotSupported", "FieldValueDuplicate"}


def test_pod_enums() -> None:
    causes = _pairs(_create(default_pod, validate_pod, _pod(restartPolicy="Sometimes", dnsPolicy="Weird")))
    assert causes == [
        ("spec.restartPolicy", 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
        ("spec.dnsPolicy", 'Unsupported value: "Weird": supported values: "ClusterFirstWithHostNet", '
                           '"ClusterFirst", "Default", "None"'),
    ]


def test_pod_volume_mount_not_found_and_volume_name() -> None:
    pod = _pod(volumes=[{"name": "Data", "emptyDir": {}}],
               containers=[{"name": "app", "image": "a", "volumeMounts": [{"name": "cfg", "mountPath": "/c"}]}])
    causes = _create(default_pod, validate_pod, pod)
    assert causes[0].field == "spec.volumes[0].name"
    assert Cause("FieldValueNotFound", 'Not found: "cfg"', "spec.containers[0].volumeMounts[0].name") in causes


def test_pod_update_only_image_is_mutable() -> None:
    old = _pod()
    default_pod(old, None)
    old["metadata"]["resourceVersion"] = "5"
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "nginx:1.28"
    new["spec"]["activeDeadlineSeconds"] = 30
    assert _update(default_pod, validate_pod_update, new, old) == []
    new["spec"]["restartPolicy"] = "Never"
    (cause,) = _update(default_pod, validate_pod_update, new, old)
    assert cause.reason == "FieldValueForbidden" and cause.field == "spec"
    assert cause.message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
        "previously negative)\n")
    assert 'restartPolicy: "Never"' in cause.message


def test_pod_update_containers_and_tolerations() -> None:
    old = _pod()
    default_pod(old, None)
    # DefaultTolerationSeconds admission's two tolerations, as a created pod has them
    old["spec"]["tolerations"] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    new = copy.deepcopy(old)
    new["spec"]["containers"].append({"name": "b", "image": "b"})
    assert _pairs(_update(default_pod, validate_pod_update, new, old)) == [
        ("spec.containers", "Forbidden: pod updates may not add or remove containers")]
    new = copy.deepcopy(old)
    new["spec"]["tolerations"] = new["spec"]["tolerations"][:1]
    assert ("spec.tolerations", "Forbidden: existing toleration can not be modified except its tolerationSeconds") \
        in _pairs(validate_pod_update(new, old))
    new = copy.deepcopy(old)
    new["spec"]["tolerations"].append({"key": "x", "operator": "Exists"})
    assert validate_pod_update(new, old) == []


def test_replication_controller_pod_template_controller_revision() -> None:
    """issue 11: kinds not served yet keep public validators (no strategy calls them, so the tests do)."""
    rc = {"metadata": {"name": "rc", "namespace": "d"},
          "spec": {"selector": {"app": "other"}, "template": _template({"app": "web"})}}
    assert _pairs(_create(default_replication_controller, validate_replication_controller, rc)) == [
        ("spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`')]
    rc["spec"]["selector"] = {"app": "web"}
    assert validate_replication_controller_update(rc, copy.deepcopy(rc)) == []
    template = {"metadata": {"name": "t", "namespace": "d"}, "template": _template({"app": "web"}, containers=[])}
    assert _pairs(_create(default_pod_template, validate_pod_template, template)) == [
        ("template.spec.containers", "Required value")]
    revision = {"metadata": {"name": "r", "namespace": "d"}, "revision": -1}
    assert _pairs(validate_controller_revision(revision)) == [
        ("data", "Required value: data is mandatory"),
        ("revision", "Invalid value: -1: must be greater than or equal to 0")]


# ------------------------------------------------------------- apps


def test_deployment_valid_and_selector_mismatch() -> None:
    assert _create(default_deployment, validate_deployment, _deployment()) == []
    causes = _pairs(_create(default_deployment, validate_deployment, _deployment(labels={"app": "other"})))
    assert causes == [("spec.template.metadata.labels",
                       'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`')]


def test_deployment_selector_required_and_replicas() -> None:
    dep = _deployment()
    del dep["spec"]["selector"]
    dep["spec"]["replicas"] = -1
    causes = _pairs(_create(default_deployment, validate_deployment, dep))
    assert causes[:3] == [
        ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.selector", "Required value"),
        ("spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`'),
    ]


def test_deployment_template_restart_policy_and_strategy() -> None:
    dep = _deployment()
    dep["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    dep["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}
    causes = _pairs(_create(default_deployment, validate_deployment, dep))
    assert ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"') in causes
    assert ("spec.strategy.rollingUpdate.maxUnavailable", "Invalid value: 0: may not be 0 when `maxSurge` is 0") in causes


def test_deployment_selector_immutable() -> None:
    old = _deployment()
    default_deployment(old, None)
    new = _deployment(selector={"matchLabels": {"app": "web", "tier": "a"}}, labels={"app": "web", "tier": "a"})
    assert _pairs(_update(default_deployment, validate_deployment_update, new, old)) == [(
        "spec.selector",
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"a"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable")]


def test_replicaset_and_daemonset() -> None:
    rs = _deployment()
    assert _create(default_replica_set, validate_replica_set, rs) == []
    ds = _deployment(selector={})
    causes = _pairs(_create(default_daemon_set, validate_daemon_set, ds))
    assert causes == [("spec.selector", "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
                                        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is "
                                        "invalid for daemonset")]
    old = _deployment()
    default_daemon_set(old, None)
    new = _deployment(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})
    (cause,) = _update(default_daemon_set, validate_daemon_set_update, new, old)
    assert cause.message == (
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:'
        '[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"app", Operator:"In", '
        'Values:[]string{"web"}}}}: field is immutable')


def test_statefulset_rules() -> None:
    sts = _deployment()
    assert _create(default_stateful_set, validate_stateful_set, sts) == []
    old = copy.deepcopy(sts)
    new = copy.deepcopy(sts)
    new["spec"]["replicas"] = 5
    assert _update(default_stateful_set, validate_stateful_set_update, new, old) == []
    new["spec"]["serviceName"] = "other"
    assert _pairs(_update(default_stateful_set, validate_stateful_set_update, new, old)) == [(
        "spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]


# ------------------------------------------------------------- batch


def _job(restart: str | None = "Never") -> Obj:
    tpl = _template(None, **({"restartPolicy": restart} if restart else {}))
    return {"metadata": {"name": "pi", "namespace": "default", "uid": "1234"}, "spec": {"template": tpl}}


def test_job_valid_and_restart_policy() -> None:
    assert _create(create_job, validate_job, _job()) == []
    assert _pairs(_create(create_job, validate_job, _job(restart=None))) == [
        ("spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"')]


def test_job_template_and_selector_immutable() -> None:
    old = _job()
    create_job(old, None)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    new["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": "1234", "x": "y"}}
    fields = [c.field for c in _update(default_job, validate_job_update, new, old)]
    assert "spec.selector" in fields and "spec.template" in fields
    template_cause = next(c for c in validate_job_update(new, old) if c.field == "spec.template")
    assert template_cause.message.endswith(": field is immutable")


def test_job_manual_selector_must_match() -> None:
    job = _job()
    job["spec"]["manualSelector"] = True
    job["spec"]["selector"] = {"matchLabels": {"a": "b"}}
    assert _pairs(_create(create_job, validate_job, job)) == [
        ("spec.template.metadata.labels",
         "Invalid value: map[string]string(nil): `selector` does not match template `labels`")]


def _cronjob(schedule: str) -> Obj:
    return {"metadata": {"name": "nightly", "namespace": "default"},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": _template(None, restartPolicy="OnFailure")}}}}


def test_cronjob_schedule() -> None:
    assert _create(default_cron_job, validate_cron_job, _cronjob("*/5 * * * *")) == []
    assert _create(default_cron_job, validate_cron_job, _cronjob("@hourly")) == []
    assert _pairs(_create(default_cron_job, validate_cron_job, _cronjob(""))) == [("spec.schedule", "Required value")]
    assert _pairs(_create(default_cron_job, validate_cron_job, _cronjob("every minute"))) == [
        ("spec.schedule", 'Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]')]
    assert _pairs(_create(default_cron_job, validate_cron_job, _cronjob("61 * * * *"))) == [
        ("spec.schedule", 'Invalid value: "61 * * * *": end of range (61) above maximum (59): 61')]
    assert _pairs(_create(default_cron_job, validate_cron_job, _cronjob("x * * * *"))) == [
        ("spec.schedule", 'Invalid value: "x * * * *": failed to parse int from x: strconv.Atoi: parsing "x": '
                          "invalid syntax")]
    assert _pairs(_create(default_cron_job, validate_cron_job, _cronjob("CRON_TZ=UTC 0 * * * *"))) == [
        ("spec.schedule", 'Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use '
                          "timeZone field instead")]


def test_cronjob_name_length_and_policy() -> None:
    cj = _cronjob("0 0 * * *")
    cj["metadata"]["name"] = "n" * 53
    cj["spec"]["concurrencyPolicy"] = "Sometimes"
    assert _pairs(_create(default_cron_job, validate_cron_job, cj)) == [
        ("spec.concurrencyPolicy", 'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'),
        ("metadata.name", f'Invalid value: "{"n" * 53}": must be no more than 52 characters'),
    ]


# ------------------------------------------------------------- services


def _service(**spec: Any) -> Obj:
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


def test_service_ports() -> None:
    assert _create(default_service, validate_service, _service(ports=[{"port": 80}], selector={"app": "web"})) == []
    assert _pairs(_create(default_service, validate_service, _service())) == [("spec.ports", "Required value")]
    assert _create(default_service, validate_service, _service(clusterIP="None")) == []
    assert _create(default_service, validate_service, _service(type="ExternalName", externalName="example.com")) == []
    causes = _pairs(_create(default_service, validate_service, _service(ports=[{"port": 0, "protocol": "ICMP"}, {"port": 80}])))
    assert causes == [
        ("spec.ports[0].name", "Required value"),
        ("spec.ports[0].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        ("spec.ports[0].protocol", 'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'),
        ("spec.ports[0].targetPort", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        ("spec.ports[1].name", "Required value"),
    ]


def test_service_type_enum_and_duplicate_port() -> None:
    causes = _pairs(_create(default_service, validate_service, _service(type="Magic", ports=[{"port": 80}])))
    assert ("spec.type", 'Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", '
                         '"LoadBalancer", "NodePort"') in causes
    dup = _create(default_service, validate_service, _service(ports=[{"name": "a", "port": 80}, {"name": "b", "port": 80}]))
    assert [(c.reason, c.field) for c in dup] == [("FieldValueDuplicate", "spec.ports[1]")]


def test_service_cluster_ip_immutable() -> None:
    old = _service(ports=[{"port": 80}], clusterIP="10.0.0.10")
    default_service(old, None)
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.0.0.11"
    new["spec"]["clusterIPs"] = ["10.0.0.11"]
    assert _pairs(_update(default_service, validate_service_update, new, old)) == [
        ("spec.clusterIPs[0]", 'Invalid value: []string{"10.0.0.11"}: may not change once set')]
    # leaving the allocated address out keeps it
    replaced = _service(ports=[{"port": 80}])
    assert _update(default_service, validate_service_update, replaced, old) == []
    assert replaced["spec"]["clusterIP"] == "10.0.0.10"


# ------------------------------------------------------------- config, namespaces, nodes


def test_configmap_keys_and_immutable() -> None:
    cm = {"metadata": {"name": "c", "namespace": "d"}, "data": {"good.key": "1", "bad key": "2"}}
    assert _pairs(_create(None, validate_config_map, cm)) == [(
        "data[bad key]", 'Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '
                         "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                         "validation is '[-._a-zA-Z0-9]+')")]
    old = {"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "1"}, "immutable": True}
    new = {"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "2"}}
    assert _pairs(_update(None, validate_config_map_update, new, old)) == [
        ("immutable", "Forbidden: field is immutable when `immutable` is set"),
        ("data", "Forbidden: field is immutable when `immutable` is set"),
    ]


def test_secret_rules() -> None:
    secret = {"metadata": {"name": "s", "namespace": "d"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "YQ=="}}
    assert _pairs(_create(default_secret, validate_secret, secret)) == [("data[tls.key]", "Required value")]
    old = {"metadata": {"name": "s", "namespace": "d"}, "data": {"a": "YQ=="}, "immutable": True}
    default_secret(old, None)
    new = copy.deepcopy(old)
    new["type"] = "kubernetes.io/basic-auth"
    causes = _pairs(_update(default_secret, validate_secret_update, new, old))
    assert causes[0] == ("type", 'Invalid value: "kubernetes.io/basic-auth": field is immutable')


def test_namespace_finalizers() -> None:
    ns = {"metadata": {"name": "team-a"}, "spec": {"finalizers": ["custom"]}}
    assert _pairs(_create(default_namespace, validate_namespace, ns)) == [
        ("spec.finalizers", 'Invalid value: "custom": name is neither a standard finalizer name nor is it fully '
                            "qualified")]


def test_node_taints_and_provider_id() -> None:
    node = {"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}}
    assert _pairs(_create(default_node, validate_node, node)) == [
        ("metadata.taints[0].effect",
         'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')]
    old = {"metadata": {"name": "n1"}, "spec": {"providerID": "aws://1"}}
    new = {"metadata": {"name": "n1"}, "spec": {"providerID": "aws://2"}}
    assert [c.field for c in _update(default_node, validate_node_update, new, old)] == ["spec.providerID"]


# ------------------------------------------------------------- rbac, leases, events, storage, CRDs


def _binding(kind: str = "Role") -> Obj:
    return {"metadata": {"name": "rb", "namespace": "d"}, "roleRef": {"kind": kind, "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default"}]}


def test_rolebinding_roleref() -> None:
    assert _create(default_role_binding, validate_role_binding, _binding()) == []
    old = _binding()
    default_role_binding(old, None)
    new = _binding("ClusterRole")
    assert _pairs(_update(default_role_binding, validate_role_binding_update, new, old)) == [(
        "roleRef", 'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", '
                   'Name:"view"}: cannot change roleRef')]
    bad = {"metadata": {"name": "rb", "namespace": "d"}, "roleRef": {"kind": "Role"}, "subjects": []}
    assert _pairs(_create(default_role_binding, validate_role_binding, bad)) == [("roleRef.name", "Required value")]
    crb = _binding("Role")
    crb["metadata"].pop("namespace")
    causes = _pairs(_create(default_cluster_role_binding, validate_cluster_role_binding, crb))
    assert causes == [("roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"'),
                      ("subjects[1].namespace", "Required value")]


def test_role_rules() -> None:
    role = {"metadata": {"name": "r", "namespace": "d"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]}
    assert _pairs(_create(None, validate_role, role)) == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value")]


def test_lease_and_events() -> None:
    lease = {"metadata": {"name": "l", "namespace": "d"}, "spec": {"leaseDurationSeconds": 0}}
    assert _pairs(_create(None, validate_lease, lease)) == [
        ("spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0")]
    event = {"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"kind": "Pod", "namespace": "b"}}
    assert _pairs(_create(None, validate_event, event)) == [
        ("involvedObject.namespace", 'Invalid value: "b": does not match event.namespace')]
    event["involvedObject"]["namespace"] = "a"
    assert _create(None, validate_event, event) == []


def test_pvc_and_pv() -> None:
    pvc = {"metadata": {"name": "data", "namespace": "d"}, "spec": {}}
    assert _pairs(_create(default_persistent_volume_claim, validate_persistent_volume_claim, pvc)) == [
        ("spec.accessModes", "Required value: at least 1 access mode is required"),
        ("spec.resources[storage]", "Required value"),
    ]
    pv = {"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                                "hostPath": {"path": "/data"}}}
    assert _create(default_persistent_volume, validate_persistent_volume, pv) == []
    assert _pairs(_create(default_persistent_volume, validate_persistent_volume, {"metadata": {"name": "pv2"}, "spec": {}})) == [
        ("spec.accessModes", "Required value"),
        ("spec.capacity", "Required value"),
        ("spec.capacity", "Unsupported value: {}: supported values: \"storage\""),
        ("spec", "Required value: must specify a volume type"),
    ]


def _crd() -> Obj:
    return {"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


def test_crd_minimal() -> None:
    assert _create(default_custom_resource_definition, validate_custom_resource_definition, _crd()) == []
    crd = _crd()
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["scope"] = "Global"
    crd["spec"]["group"] = "example"
    crd["spec"]["versions"][0]["storage"] = False
    assert _pairs(_create(default_custom_resource_definition, validate_custom_resource_definition, crd)) == [
        ("metadata.name", 'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group'),
        ("spec.group", 'Invalid value: "example": should be a domain with at least one dot'),
        ("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"'),
        ("spec.versions", 'Invalid value: ["v1"]: must have exactly one version marked as storage version'),
    ]


def test_unknown_kind_has_no_rules() -> None:
    assert Strategy().validate({"metadata": {"name": "Bad"}, "spec": {"x": 1}}) == []


def test_deployment_bad_selector_skips_template() -> None:
    dep = _deployment(selector={"matchExpressions": [{"key": "app", "operator": "Near"}]})
    dep["spec"]["template"]["spec"]["containers"] = []
    causes = _pairs(_create(default_deployment, validate_deployment, dep))
    assert causes == [
        ("spec.selector.matchExpressions[0].operator", 'Invalid value: "Near": not a valid selector operator'),
        ("spec.selector", 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), '
                          'MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"app", '
                          'Operator:"Near", Values:[]string(nil)}}}: invalid label selector'),
    ]
    dep["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    assert _pairs(_create(default_deployment, validate_deployment, dep)) == [("spec.template.spec.containers", "Required value")]


def test_per_kind_validators_report_each_cause_once() -> None:
    """issue 11: the de-duplication validate() did now belongs to every validate_<kind> function."""
    @unique_causes
    def twice(obj: Obj) -> list[Cause]:
        return [field_required("spec.x"), field_required("spec.y"), field_required("spec.x")]

    assert twice({}) == [field_required("spec.x"), field_required("spec.y")]
    shared = {"validate_name", "validate_labels", "validate_annotations", "validate_object_meta",
              "validate_update_meta"}
    per_kind = [name for name in validation.__all__ if name.startswith("validate_") and name not in shared]
    assert "validate_pod_update" in per_kind and "validate_custom_resource_definition" in per_kind
    assert [name for name in per_kind if not hasattr(getattr(validation, name), "__wrapped__")] == []
