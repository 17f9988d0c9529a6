"""apiregistration.k8s.io/v1 APIServices (kube-aggregator's pkg/apis/apiregistration/validation)."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import Obj, _d, _i, _s, field_invalid, field_required, unique_causes
from kapi.object.validation.names import is_dns1035_label, is_dns1123_subdomain, is_valid_port_num


@unique_causes
def validate_api_service(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    group, version = _s(spec.get("group")), _s(spec.get("version"))
    errs: list[Cause] = []
    name = _s(_d(obj.get("metadata")).get("name"))
    required = f"{version}.{group}"
    if name and name != required:
        errs.append(field_invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: "{required}"'))
    if not group and version != "v1":
        errs.append(field_required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs += [field_invalid("spec.group", group, m) for m in is_dns1123_subdomain(group)]
    errs += [field_invalid("spec.version", version, m) for m in is_dns1035_label(version)]
    gpm, vp = _i(spec.get("groupPriorityMinimum")) or 0, _i(spec.get("versionPriority")) or 0
    if not 0 < gpm <= 20000:
        errs.append(field_invalid("spec.groupPriorityMinimum", gpm, "must be positive and less than 20000"))
    if not 0 < vp <= 1000:
        errs.append(field_invalid("spec.versionPriority", vp, "must be positive and less than 1000"))
    service = spec.get("service")
    ca_bundle = _s(spec.get("caBundle"))
    skip = spec.get("insecureSkipTLSVerify") is True
    if not isinstance(service, dict):
        if ca_bundle:
            errs.append(field_invalid("spec.caBundle", f"{len(ca_bundle) * 3 // 4} bytes",
                                      "local APIServices may not have a caBundle"))
        if skip:
            errs.append(field_invalid("spec.insecureSkipTLSVerify", True,
                                      "local APIServices may not have insecureSkipTLSVerify"))
        return errs
    if not _s(service.get("namespace")):
        errs.append(field_required("spec.service.namespace"))
    if not _s(service.get("name")):
        errs.append(field_required("spec.service.name"))
    port = _i(service.get("port"))
    if port is not None:
        errs += [field_invalid("spec.service.port", port, m) for m in is_valid_port_num(port)]
    if skip and ca_bundle:
        errs.append(field_invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


@unique_causes
def validate_api_service_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_api_service(new)


@unique_causes
def validate_api_service_status_update(new: Obj, old: Obj) -> list[Cause]:
    errs: list[Cause] = []
    for i, cond in enumerate((_d(new.get("status")).get("conditions") or [])):
        cond = _d(cond)
        if cond.get("status") not in ("True", "False", "Unknown"):
            errs.append(field_invalid(f"status.conditions[{i}].status", cond.get("status"),
                                      "must be True, False, or Unknown"))
    return errs
