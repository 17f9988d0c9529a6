"""Events: core/v1 (legacy, lenient) and events.k8s.io/v1 (strict), as ``pkg/apis/core/validation/events.go``."""

from __future__ import annotations

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _i, _immutable, _s, field_invalid, field_required,
    unique_causes)
from kapi.object.validation.names import is_dns1123_subdomain, is_qualified_name


@unique_causes
def validate_events_v1_event(obj: Obj) -> list[Cause]:
    """events.k8s.io Events: strict rules on top of the legacy ones (field names are core's)."""
    md = _d(obj.get("metadata"))
    namespace = _s(md.get("namespace"))
    regarding = _d(obj.get("regarding"))
    errs = _event_legacy(obj, namespace, regarding, controller_field="reportingController",
                         message_key="note", event_time=obj.get("eventTime"))
    if not obj.get("eventTime"):
        errs.append(field_required("eventTime"))
    if obj.get("type") not in ("Normal", "Warning"):
        errs.append(field_invalid("type", "", f"has invalid value: {_s(obj.get('type'))}"))
    if obj.get("deprecatedFirstTimestamp"):
        errs.append(field_invalid("firstTimestamp", "", "needs to be unset"))
    if obj.get("deprecatedLastTimestamp"):
        errs.append(field_invalid("lastTimestamp", "", "needs to be unset"))
    if _i(obj.get("deprecatedCount")):
        errs.append(field_invalid("count", "", "needs to be unset"))
    if obj.get("deprecatedSource"):
        errs.append(field_invalid("source", "", "needs to be unset"))
    return errs


def _event_legacy(obj: Obj, namespace: str, involved: Obj, *, controller_field: str, message_key: str,
                  event_time: object) -> list[Cause]:
    errs: list[Cause] = []
    involved_ns = _s(involved.get("namespace"))
    if not event_time:
        if not involved_ns:
            # event.namespace must also be empty, or "default" for old clients
            if namespace not in ("", "default"):
                errs.append(field_invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            errs.append(field_invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(field_invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        controller = _s(obj.get(controller_field))
        if not controller:
            errs.append(field_required(controller_field))
        errs.extend(field_invalid(controller_field, controller, m) for m in is_qualified_name(controller))
        instance = _s(obj.get("reportingInstance"))
        if not instance:
            errs.append(field_required("reportingInstance"))
        if len(instance) > 128:
            errs.append(field_invalid("reportingInstance", "", "can have at most 128 characters"))
        action = _s(obj.get("action"))
        if not action:
            errs.append(field_required("action"))
        if len(action) > 128:
            errs.append(field_invalid("action", "", "can have at most 128 characters"))
        reason = _s(obj.get("reason"))
        if not reason:
            errs.append(field_required("reason"))
        if len(reason) > 128:
            errs.append(field_invalid("reason", "", "can have at most 128 characters"))
        if len(_s(obj.get(message_key))) > 1024:
            errs.append(field_invalid("message", "", "can have at most 1024 characters"))
    errs.extend(field_invalid("namespace", namespace, m) for m in is_dns1123_subdomain(namespace))
    return errs


@unique_causes
def validate_event(obj: Obj) -> list[Cause]:
    namespace = _s(_d(obj.get("metadata")).get("namespace"))
    return _event_legacy(obj, namespace, _d(obj.get("involvedObject")), controller_field="reportingComponent",
                         message_key="message", event_time=obj.get("eventTime"))


@unique_causes
def validate_event_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_event(new)


@unique_causes
def validate_events_v1_event_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_events_v1_event(new)
    for key, path in (("regarding", "involvedObject"), ("reason", "reason"), ("action", "action"),
                      ("reportingController", "reportingController"), ("reportingInstance", "reportingInstance"),
                      ("eventTime", "eventTime"), ("type", "type")):
        errs.extend(_immutable(path, new.get(key), old.get(key)))
    return errs
