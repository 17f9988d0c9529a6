"""The admission.k8s.io/v1 AdmissionRequest of a write: what webhooks are sent in an AdmissionReview
and what policies' CEL sees as ``request`` (kube's ``webhookrequest.CreateAdmissionObjects`` and
the CEL ``request`` variable)."""

from __future__ import annotations

from typing import Any

from kapi.admission.plugin import Attributes
from kapi.object.access import user_info_object
from kapi.registry.resources import Resource

Obj = dict[str, Any]


def admission_request(a: Attributes, uid: str, *, matched: Resource | None = None,
                      matched_kind: tuple[str, str, str] | None = None, objects: bool = True) -> Obj:
    """The AdmissionRequest of ``a``; ``matched``/``matched_kind``: the equivalent resource and kind a
    rule matched (matchPolicy Equivalent; the request's own are then requestResource/requestKind).
    ``objects`` False leaves out object and oldObject (the CEL ``request`` has them as variables)."""
    res = a.resource
    group, version, kind = a.gvk
    request_resource = {"group": res.group, "version": res.version, "resource": res.resource}
    request_kind = {"group": group, "version": version, "kind": kind}
    resource, kind_obj = request_resource, request_kind
    if matched is not None:
        resource = {"group": matched.group, "version": matched.version, "resource": matched.resource}
        mk = matched_kind or (matched.group, matched.version, matched.kind)
        kind_obj = {"group": mk[0], "version": mk[1], "kind": mk[2]}
    out: Obj = {
        "uid": uid,
        "kind": kind_obj,
        "resource": resource,
        "requestKind": request_kind,
        "requestResource": request_resource,
        "operation": a.operation,
        "userInfo": user_info_object(a.user),
        "dryRun": a.dry_run,
        "options": a.options,
    }
    if a.name:  # omitempty, as kube's (a generateName create has none yet)
        out["name"] = a.name
    if a.subresource:
        out["subResource"] = a.subresource
        out["requestSubResource"] = a.subresource
    if a.namespace:
        out["namespace"] = a.namespace
    if objects:
        out["object"] = a.obj
        out["oldObject"] = a.old
    return out
