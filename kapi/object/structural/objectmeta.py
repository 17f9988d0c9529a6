"""Embedded resources' ``apiVersion``, ``kind`` and ``metadata`` (apiextensions ``schema/objectmeta``):
their validation (``Validate``) and the coercion of ``metadata`` into an ObjectMeta (``Coerce``: fields
ObjectMeta does not have are dropped and reported as unknown, malformed ones are errors or dropped).
"""

from __future__ import annotations

from typing import Any

from kapi.errors import Cause
from kapi.object.structural import Structural
from kapi.object.structural._gofmt import go_body_value
from kapi.object.validation.meta import validate_object_meta
from kapi.object.validation.names import RULE_PATH_SEGMENT, is_dns1035_label

__all__ = ["OBJECT_META_FIELDS", "embedded_resource_causes", "object_meta_error", "coerce"]

# metav1.ObjectMeta's JSON fields and their Go types (for json.Unmarshal's messages)
OBJECT_META_FIELDS: dict[str, str] = {
    "name": "string", "generateName": "string", "namespace": "string", "selfLink": "string",
    "uid": "types.UID", "resourceVersion": "string", "generation": "int64",
    "creationTimestamp": "v1.Time", "deletionTimestamp": "v1.Time", "deletionGracePeriodSeconds": "int64",
    "labels": "map[string]string", "annotations": "map[string]string",
    "ownerReferences": "[]v1.OwnerReference", "finalizers": "[]string", "managedFields": "[]v1.ManagedFieldsEntry",
}


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _field_error(name: str, v: Any) -> str:
    """The json.Unmarshal error of one ObjectMeta field's value, "" if it decodes."""
    if v is None:
        return ""
    go = OBJECT_META_FIELDS.get(name)
    if go is None:
        return ""
    t = _json_type(v)

    def bad(go_type: str, jt: str = t) -> str:
        return f"json: cannot unmarshal {jt} into Go struct field ObjectMeta.{name} of type {go_type}"

    if go in ("string", "types.UID"):
        return "" if t == "string" else bad(go)
    if go == "int64":
        if t != "number":
            return bad(go)
        if isinstance(v, float) and not v.is_integer():
            return bad(go, "number " + repr(v))
        return ""
    if go == "v1.Time":
        return "" if t == "string" else bad("v1.Time")
    if go == "map[string]string":
        if t != "object":
            return bad(go)
        for x in v.values():
            if x is not None and not isinstance(x, str):
                return bad("string", _json_type(x))
        return ""
    if t != "array":
        return bad(go)
    if go == "[]string":
        for x in v:
            if x is not None and not isinstance(x, str):
                return bad("string", _json_type(x))
    else:
        for x in v:
            if x is not None and not isinstance(x, dict):
                return bad(go[2:], _json_type(x))
    return ""


def object_meta_error(md: Any) -> str:
    """The error of decoding ``md`` as an ObjectMeta ("" if it decodes)."""
    if md is None:
        return ""
    if not isinstance(md, dict):
        return f"json: cannot unmarshal {_json_type(md)} into Go value of type v1.ObjectMeta"
    for k, v in md.items():
        msg = _field_error(k, v)
        if msg:
            return msg
    return ""


def _child(pth: str, name: str) -> str:
    return f"{pth}.{name}" if pth else name


def embedded_resource_causes(x: dict[str, Any], pth: str) -> list[Cause]:
    """``validateEmbeddedResource`` of one object at field path ``pth``."""
    errs: list[Cause] = []
    if "apiVersion" not in x:
        errs.append(Cause("FieldValueRequired", "Required value", _child(pth, "apiVersion")))
    if "kind" not in x:
        errs.append(Cause("FieldValueRequired", "Required value", _child(pth, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            f = _child(pth, "apiVersion")
            if not isinstance(v, str):
                errs.append(Cause("FieldValueInvalid", f"Invalid value: {go_body_value(v)}: must be a string", f))
            elif not v:
                errs.append(Cause("FieldValueInvalid", 'Invalid value: "": must not be empty', f))
            elif v != "/" and v.count("/") > 1:
                errs.append(Cause("FieldValueInvalid",
                                  f"Invalid value: {go_body_value(v)}: unexpected GroupVersion string: {v}", f))
        elif k == "kind":
            f = _child(pth, "kind")
            if not isinstance(v, str):
                errs.append(Cause("FieldValueInvalid", f"Invalid value: {go_body_value(v)}: must be a string", f))
            elif not v:
                errs.append(Cause("FieldValueInvalid", 'Invalid value: "": must not be empty', f))
            else:
                msgs = is_dns1035_label(v.lower())
                if msgs:
                    errs.append(Cause("FieldValueInvalid", f"Invalid value: {go_body_value(v)}: may have mixed case, "
                                      "but should otherwise match: " + ",".join(msgs), f))
        elif k == "metadata":
            f = _child(pth, "metadata")
            msg = object_meta_error(v)
            if msg:
                errs.append(Cause("FieldValueInvalid", f"Invalid value: {go_body_value(v)}: {msg}", f))
                continue
            md = dict(v or {})
            if not md.get("name"):
                md["name"] = "fakename"  # as kube: something to avoid an error
            ns = md.get("namespace")
            causes = validate_object_meta({"metadata": md}, namespaced=bool(ns), name_rule=RULE_PATH_SEGMENT)
            for c in causes:
                field = c.field
                if field == "metadata" or field.startswith("metadata.") or field.startswith("metadata["):
                    field = f + field[len("metadata"):]
                errs.append(Cause(c.reason, c.message, field))
    return errs


def coerce(obj: Any, s: Structural | None, *, root: bool = True, drop_invalid: bool = False,
           path: str = "") -> tuple[Cause | None, list[str]]:
    """``objectmeta.CoerceWithOptions`` in place: each embedded resource's (and with ``root`` the object's
    own) ``metadata`` keeps only ObjectMeta's fields (the others are returned as unknown field paths,
    sorted), an empty ``creationTimestamp`` is removed, and a malformed ``apiVersion``/``kind``/``metadata`` is
    the error returned (or dropped with ``drop_invalid``: what kube does when reading from storage)."""
    unknown: list[str] = []
    err = _coerce(obj, s, root, drop_invalid, path, unknown)
    unknown.sort()
    return err, unknown


def _omitted(k: str, v: Any) -> bool:
    # ObjectMeta's omitempty fields as SetObjectMeta writes them back (deletionGracePeriodSeconds is a
    # pointer: its 0 stays)
    if v is None or v == "" and isinstance(v, str) or (isinstance(v, (dict, list)) and not v):
        return True
    return k == "generation" and v == 0 and not isinstance(v, bool)


def _coerce(x: Any, s: Structural | None, embedded: bool, drop: bool, pth: str, unknown: list[str]) -> Cause | None:
    if s is None and not embedded:
        return None
    if isinstance(x, dict):
        if embedded or (s is not None and s.embedded_resource):
            for k in ("apiVersion", "kind"):
                if k in x and not isinstance(x[k], str):
                    if drop:
                        del x[k]
                    else:
                        return Cause("FieldValueInvalid", f"Invalid value: {go_body_value(x[k])}: must be a string",
                                     _child(pth, k))
            if "metadata" in x:
                md = x["metadata"]
                msg = object_meta_error(md)
                if msg and not drop:
                    return Cause("FieldValueInvalid", f"Invalid value: {go_body_value(md)}: {msg}",
                                 _child(pth, "metadata"))
                if isinstance(md, dict):
                    prefix = _child(pth, "metadata")
                    for k in list(md):
                        if k not in OBJECT_META_FIELDS:
                            unknown.append(f"{prefix}.{k}")
                            del md[k]
                        elif drop and _field_error(k, md[k]):
                            del md[k]
                        elif _omitted(k, md[k]):  # SetObjectMeta writes ObjectMeta back: omitempty
                            del md[k]
                elif md is None:
                    del x["metadata"]
                elif drop:
                    del x["metadata"]
        if s is None:
            return None
        for k, v in x.items():
            p = s.properties.get(k)
            if p is not None:
                e = _coerce(v, p, False, drop, _child(pth, k), unknown)
            elif isinstance(s.additional_properties, Structural):
                e = _coerce(v, s.additional_properties, False, drop, f"{pth}[{k}]", unknown)
            else:
                continue
            if e is not None:
                return e
    elif isinstance(x, list) and s is not None:
        for i, v in enumerate(x):
            e = _coerce(v, s.items, False, drop, f"{pth}[{i}]", unknown)
            if e is not None:
                return e
    return None
