"""Pods, pod templates and replication controllers: the pod spec, ``ValidatePod`` / ``ValidatePodUpdate``,
``ValidatePodTemplate``, ``ValidateReplicationController``.
"""

from __future__ import annotations

from typing import Any

from kapi.errors import Cause
from kapi.object.validation.containers import (_validate_containers, _validate_init_containers,
    _validate_tolerations, _validate_volumes)
from kapi.object.validation.fields import (Obj, _Rendered, _d, _go_map, _i, _l, _nonnegative, _prune, _render,
    _s, _semantic_equal, field_duplicate, field_forbidden, field_invalid, field_not_supported, field_required,
    unique_causes)
from kapi.object.validation.meta import validate_annotations, validate_labels
from kapi.object.validation.names import (RULE_DNS1123_SUBDOMAIN, _inclusive_range, _ip_errors,
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, validate_name)


def _validate_pod_spec(spec: Obj, path: str, *, is_pod: bool) -> list[Cause]:
    errs: list[Cause] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(field_required(f"{path}.terminationGracePeriodSeconds"))
    volumes, vol_errs = _validate_volumes(_l(spec.get("volumes")), f"{path}.volumes")
    errs.extend(vol_errs)
    containers = _l(spec.get("containers"))
    errs.extend(_validate_containers(containers, volumes, f"{path}.containers"))
    errs.extend(_validate_init_containers(_l(spec.get("initContainers")), containers, volumes,
                                          f"{path}.initContainers"))
    if spec.get("hostNetwork") is True:
        for ci, ctr in enumerate(containers):
            for pi, port in enumerate(_l(_d(ctr).get("ports"))):
                host, cport = _i(_d(port).get("hostPort")) or 0, _i(_d(port).get("containerPort")) or 0
                if (is_pod or host != 0) and host != cport:
                    errs.append(field_invalid(f"{path}.containers[{ci}].ports[{pi}].hostPort", host,
                                              "must match `containerPort` when `hostNetwork` is true"))
    restart = _s(spec.get("restartPolicy"))
    if not restart:
        errs.append(field_required(f"{path}.restartPolicy"))
    elif restart not in ("Always", "OnFailure", "Never"):
        errs.append(field_not_supported(f"{path}.restartPolicy", restart, ("Always", "OnFailure", "Never")))
    dns = _s(spec.get("dnsPolicy"))
    dns_values = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
    if not dns:
        errs.append(field_required(f"{path}.dnsPolicy"))
    elif dns not in dns_values:
        errs.append(field_not_supported(f"{path}.dnsPolicy", dns, dns_values))
    errs.extend(validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector"))
    psc = _d(spec.get("securityContext"))
    for key in ("fsGroup", "runAsUser", "runAsGroup"):
        value = _i(psc.get(key))
        if value is not None and not 0 <= value <= 0xFFFFFFFF:
            errs.append(field_invalid(f"{path}.securityContext.{key}", value, _inclusive_range(0, 0xFFFFFFFF)))
    for i, secret in enumerate(_l(spec.get("imagePullSecrets"))):
        if isinstance(secret, dict) and set(secret) - {"name"}:
            errs.append(field_invalid(f"{path}.imagePullSecrets[{i}]", secret, "only name may be set"))
    if dns == "None":
        config = spec.get("dnsConfig")
        if not isinstance(config, dict):
            errs.append(field_required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"))
        elif not _l(config.get("nameservers")):
            errs.append(field_required(f"{path}.dnsConfig.nameservers",
                                       "must provide at least one DNS nameserver when `dnsPolicy` is None"))
    seen_gates: set[str] = set()
    for i, gate in enumerate(_l(spec.get("schedulingGates"))):
        gate_name = _s(_d(gate).get("name"))
        errs.extend(field_invalid(f"{path}.schedulingGates[{i}]", gate_name, m) for m in is_qualified_name(gate_name))
        if gate_name in seen_gates:
            errs.append(field_duplicate(f"{path}.schedulingGates[{i}]", gate_name))
        seen_gates.add(gate_name)
    for key, rule in (("serviceAccountName", RULE_DNS1123_SUBDOMAIN), ("nodeName", RULE_DNS1123_SUBDOMAIN)):
        value = _s(spec.get(key))
        if value:
            errs.extend(field_invalid(f"{path}.{key}", value, m) for m in validate_name(rule, value))
    deadline = _i(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= 2**31 - 1:
        errs.append(field_invalid(f"{path}.activeDeadlineSeconds", deadline, _inclusive_range(1, 2**31 - 1)))
    for key in ("hostname", "subdomain"):
        value = _s(spec.get(key))
        if value:
            errs.extend(field_invalid(f"{path}.{key}", value, m) for m in is_dns1123_label(value))
    errs.extend(_validate_tolerations(_l(spec.get("tolerations")), f"{path}.tolerations"))
    for i, alias in enumerate(_l(spec.get("hostAliases"))):
        alias = _d(alias)
        errs.extend(_ip_errors(f"{path}.hostAliases[{i}].ip", _s(alias.get("ip"))))
        for j, host in enumerate(_l(alias.get("hostnames"))):
            errs.extend(field_invalid(f"{path}.hostAliases[{i}].hostnames[{j}]", _s(host), m)
                        for m in is_dns1123_subdomain(_s(host)))
    priority_class = _s(spec.get("priorityClassName"))
    if priority_class:
        errs.extend(field_invalid(f"{path}.priorityClassName", priority_class, m)
                    for m in is_dns1123_subdomain(priority_class))
    preemption = spec.get("preemptionPolicy")
    if preemption is not None:
        if not _s(preemption):
            errs.append(field_required(f"{path}.preemptionPolicy"))
        elif preemption not in ("PreemptLowerPriority", "Never"):
            errs.append(field_not_supported(f"{path}.preemptionPolicy", preemption, ("PreemptLowerPriority", "Never")))
    os_name = _d(spec.get("os")).get("name")
    if isinstance(spec.get("os"), dict) and os_name not in ("linux", "windows"):
        errs.append(field_not_supported(f"{path}.os.name", _s(os_name), ("linux", "windows")))
    return errs


def _validate_pod_template_spec(template: object, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpec``: labels and annotations are reported under ``<path>.labels``."""
    tpl = _d(template)
    md = _d(tpl.get("metadata"))
    errs = validate_labels(md.get("labels"), f"{path}.labels")
    errs.extend(validate_annotations(md.get("annotations"), f"{path}.annotations"))
    spec = _d(tpl.get("spec"))
    errs.extend(_validate_pod_spec(spec, f"{path}.spec", is_pod=False))
    if _l(spec.get("ephemeralContainers")):
        errs.append(field_forbidden(f"{path}.spec.ephemeralContainers",
                "ephemeral containers not allowed in pod template"))
    return errs


def _template_labels(obj: Obj) -> object:
    return _d(_d(_d(obj.get("spec")).get("template")).get("metadata")).get("labels")


_UPDATABLE_POD_FIELDS = ",".join((
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
))


def _pod_metadata_and_spec(pod: Obj) -> list[Cause]:
    spec = _d(pod.get("spec"))
    errs = _validate_pod_spec(spec, "spec", is_pod=True)
    if not _s(spec.get("serviceAccountName")):
        for vi, vol in enumerate(_l(spec.get("volumes"))):
            for si, source in enumerate(_l(_d(_d(vol).get("projected")).get("sources"))):
                if _d(source).get("serviceAccountToken") is not None:
                    errs.append(field_forbidden(f"spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken",
                                                "must not be specified when serviceAccountName is not set"))
    for key in ("containers", "initContainers"):
        for i, ctr in enumerate(_l(spec.get(key))):
            image = _s(_d(ctr).get("image"))
            if image != image.strip():
                errs.append(field_invalid(f"spec.{key}[{i}].image", image,
                        "must not have leading or trailing whitespace"))
    return errs


@unique_causes
def validate_pod(pod: Obj) -> list[Cause]:
    errs = _pod_metadata_and_spec(pod)
    spec = _d(pod.get("spec"))
    if _l(spec.get("ephemeralContainers")):
        errs.append(field_forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if _s(spec.get("nodeName")) and _l(spec.get("schedulingGates")):
        errs.append(field_forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs


def _spec_diff(old: Obj, new: Obj, type_name: str) -> str:
    """A small stand-in for go-cmp's diff: the top-level fields that differ."""
    lines = [f"  {type_name}{{"]
    for key in sorted(set(old) | set(new)):
        if _semantic_equal(old.get(key), new.get(key)):
            continue
        if key in old:
            lines.append(f"- \t{key}: {_render(old[key])},")
        if key in new:
            lines.append(f"+ \t{key}: {_render(new[key])},")
    lines.append("  }")
    return "\n".join(lines)


def _container_updates(new: list[Any], old: list[Any], path: str) -> tuple[list[Cause], bool]:
    if len(new) != len(old):
        return [field_forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[Cause] = []
    for i, ctr in enumerate(new):
        image = _s(_d(ctr).get("image"))
        if not image:
            errs.append(field_required(f"{path}[{i}].image"))
        if image != image.strip():
            errs.append(field_invalid(f"{path}[{i}].image", image, "must not have leading or trailing whitespace"))
    return errs, False


def _toleration_key(tol: object) -> object:
    return _prune({k: v for k, v in _d(tol).items() if k != "tolerationSeconds"})


@unique_causes
def validate_pod_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _pod_metadata_and_spec(new)
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    for key in ("containers", "initContainers"):
        found, stop = _container_updates(_l(spec.get(key)), _l(old_spec.get(key)), f"spec.{key}")
        errs.extend(found)
        if stop:
            return errs
    deadline, old_deadline = _i(spec.get("activeDeadlineSeconds")), _i(old_spec.get("activeDeadlineSeconds"))
    if deadline is not None:
        if not 0 <= deadline <= 2**31 - 1:
            return errs + [field_invalid("spec.activeDeadlineSeconds", deadline, _inclusive_range(0, 2**31 - 1))]
        if old_deadline is not None and old_deadline < deadline:
            return errs + [field_invalid("spec.activeDeadlineSeconds", deadline,
                                         "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errs.append(field_invalid("spec.activeDeadlineSeconds", None,
                "must not update from a positive integer to nil value"))
    new_tols = [_toleration_key(t) for t in _l(spec.get("tolerations"))]
    for tol in _l(old_spec.get("tolerations")):
        if _toleration_key(tol) not in new_tols:
            errs.append(field_forbidden("spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds"))
            break
    old_gates = {_s(_d(g).get("name")) for g in _l(old_spec.get("schedulingGates"))}
    for i, gate in enumerate(_l(spec.get("schedulingGates"))):
        gate_name = _s(_d(gate).get("name"))
        if gate_name not in old_gates:
            errs.append(field_forbidden(f"spec.schedulingGates[{i}].name",
                                        f"only deletion is allowed, but found new scheduling gate '{gate_name}'"))
    munged = dict(spec)
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            olds = _l(old_spec.get(key))
            munged[key] = [dict(_d(c), image=_d(olds[i]).get("image")) for i, c in enumerate(spec[key])]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(key, None)
        if key in old_spec:
            munged[key] = old_spec[key]
    old_grace = _i(old_spec.get("terminationGracePeriodSeconds"))
    if old_grace is not None and old_grace < 0 and _i(munged.get("terminationGracePeriodSeconds")) == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if not _semantic_equal(munged, old_spec):
        errs.append(field_forbidden("spec", f"pod updates may not change fields other than {_UPDATABLE_POD_FIELDS}\n"
                                            + _spec_diff(old_spec, munged, "core.PodSpec")))
    return errs


@unique_causes
def validate_pod_template(obj: Obj) -> list[Cause]:
    return _validate_pod_template_spec(obj.get("template"), "template")


@unique_causes
def validate_pod_template_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_pod_template(new)


def _replication_controller_spec(spec: Obj) -> list[Cause]:
    errs = _nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = _d(spec.get("selector"))
    if not selector:
        errs.append(field_required("spec.selector"))
    errs.extend(_nonnegative("spec.replicas", spec.get("replicas")))
    template = spec.get("template")
    if not isinstance(template, dict):
        errs.append(field_required("spec.template"))
        return errs
    labels = _d(template.get("metadata")).get("labels")
    if selector and any(_d(labels).get(k) != v for k, v in selector.items()):
        errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    errs.extend(_validate_pod_template_spec(template, "spec.template"))
    pod_spec = _d(template.get("spec"))
    if _s(pod_spec.get("restartPolicy")) != "Always":
        errs.append(field_not_supported("spec.template.spec.restartPolicy", _s(pod_spec.get("restartPolicy")),
                ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                                    "activeDeadlineSeconds in ReplicationController is not Supported"))
    return errs


@unique_causes
def validate_replication_controller(obj: Obj) -> list[Cause]:
    return _replication_controller_spec(_d(obj.get("spec")))


@unique_causes
def validate_replication_controller_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_replication_controller(new)
