"""Object validation as kube-apiserver v1.33 does it: names, metadata and per-kind rules.

Every check returns ``kapi.errors.Cause`` entries whose ``reason``, ``message`` and
``field`` read as kube-apiserver's ``field.ErrorList`` does once it becomes
``details.causes``: the message is ``ErrorBody()`` (``Invalid value: "Foo": ...``),
the field is the path (``spec.containers[0].name``), the reason the error type.

The objects are plain dicts decoded from JSON, with defaults already applied
(``kapi.defaults``); a field of the wrong JSON type is treated as absent.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import math
import re
import zoneinfo
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any, ParamSpec

from kapi.errors import Cause
from kapi.object.meta import parse_time_or_none

Obj = dict[str, Any]
_P = ParamSpec("_P")

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
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_namespaced",
    "is_qualified_name",
    "is_valid_label_value",
    "is_valid_path_segment_name",
    "is_valid_port_name",
    "is_valid_port_num",
    "name_rule",
    "parse_quantity",
    "unique_causes",
    "validate",
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

# ------------------------------------------------------------- field errors

REASON_REQUIRED = "FieldValueRequired"
REASON_INVALID = "FieldValueInvalid"
REASON_FORBIDDEN = "FieldValueForbidden"
REASON_DUPLICATE = "FieldValueDuplicate"
REASON_NOT_SUPPORTED = "FieldValueNotSupported"
REASON_NOT_FOUND = "FieldValueNotFound"
REASON_TOO_LONG = "FieldValueTooLong"
REASON_TOO_MANY = "FieldValueTooMany"

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(value: str) -> str:
    """``value`` quoted as Go's ``strconv.Quote`` (``%q``) does."""
    out = ['"']
    for ch in value:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            cp = ord(ch)
            out.append(f"\\x{cp:02x}" if cp < 0x20 or cp == 0x7F else
                       f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}")
    out.append('"')
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A value already printed the way Go's ``%#v`` or ``String()`` prints it."""

    text: str


def _go_float(value: float) -> str:
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    # Go writes exponents with a sign and at least two digits (1e+21, 1e-07).
    return re.sub(r"e([+-]?)(\d+)$", lambda m: f"e{m.group(1) or '+'}{int(m.group(2)):02d}", text)


def _render(value: object) -> str:
    if isinstance(value, _Rendered):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    # Go prints structs with %#v; JSON is the readable stand-in for composite values.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _cause(reason: str, path: str, body: str, detail: str) -> Cause:
    return Cause(reason=reason, message=f"{body}: {detail}" if detail else body, field=path)


def field_required(path: str, detail: str = "") -> Cause:
    """``Required value``."""
    return _cause(REASON_REQUIRED, path, "Required value", detail)


def field_invalid(path: str, value: object, detail: str = "") -> Cause:
    """``Invalid value: <value>``."""
    return _cause(REASON_INVALID, path, f"Invalid value: {_render(value)}", detail)


def field_not_supported(path: str, value: object, valid: Iterable[str]) -> Cause:
    """``Unsupported value: <value>: supported values: "A", "B"``."""
    quoted = [go_quote(v) for v in valid]
    detail = "supported values: " + ", ".join(quoted) if quoted else ""
    return _cause(REASON_NOT_SUPPORTED, path, f"Unsupported value: {_render(value)}", detail)


def field_forbidden(path: str, detail: str = "") -> Cause:
    """``Forbidden``."""
    return _cause(REASON_FORBIDDEN, path, "Forbidden", detail)


def field_duplicate(path: str, value: object) -> Cause:
    """``Duplicate value: <value>``."""
    return _cause(REASON_DUPLICATE, path, f"Duplicate value: {_render(value)}", "")


def field_not_found(path: str, value: object) -> Cause:
    """``Not found: <value>``."""
    return _cause(REASON_NOT_FOUND, path, f"Not found: {_render(value)}", "")


def field_too_long(path: str, max_bytes: int) -> Cause:
    """``Too long: may not be more than N bytes`` (the value is never printed)."""
    unit = "byte" if max_bytes == 1 else "bytes"
    return _cause(REASON_TOO_LONG, path, "Too long", f"may not be more than {max_bytes} {unit}")


def _immutable(path: str, new: object, old: object, rendered: object | None = None) -> list[Cause]:
    if _semantic_equal(new, old):
        return []
    return [field_invalid(path, new if rendered is None else rendered, FIELD_IMMUTABLE)]


def _nonnegative(path: str, value: object) -> list[Cause]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [field_invalid(path, value, IS_NEGATIVE)]
    return []


# ------------------------------------------------------------- safe access


def unique_causes(check: Callable[_P, list[Cause]]) -> Callable[_P, list[Cause]]:
    """``check`` reporting each identical cause once, in first-seen order.

    Every public per-kind validator (``validate_<kind>``, ``validate_<kind>_update``)
    wears this, so callers get the causes as a Status reports them.
    """
    @functools.wraps(check)
    def once(*args: _P.args, **kwargs: _P.kwargs) -> list[Cause]:
        return list(dict.fromkeys(check(*args, **kwargs)))
    return once


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _s(value: object) -> str:
    return value if isinstance(value, str) else ""


def _i(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _str_map(value: object) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): v if isinstance(v, str) else _render(v) for k, v in value.items()}


def _prune(value: object) -> object:
    """``value`` without Go zero values, so that absent, null, "" and [] compare equal."""
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", 0, False, [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _semantic_equal(a: object, b: object) -> bool:
    # apiequality.Semantic treats nil and empty slices/maps alike; JSON adds absent == zero.
    return _prune(a) == _prune(b)


# ------------------------------------------------------------- name rules


def _blen(value: str) -> int:
    return len(value.encode("utf-8"))


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = [f"'{e}', " for e in examples]
    return f"{msg} (e.g. " + " or ".join(parts) + f"regex used for validation is '{fmt}')"


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                      "or '-', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                      "start with an alphabetic character, and end with an alphanumeric character")
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character")
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character")
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"

_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_QNAME_RE = re.compile(_QNAME_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)


def is_dns1123_label(value: str) -> list[str]:
    """Messages for ``value`` as an RFC 1123 label (namespaces, container names)."""
    errs = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            # a valid subdomain that is not a label: the length was checked, so it has dots
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """Messages for ``value`` as an RFC 1123 subdomain (most object names)."""
    errs = []
    if _blen(value) > 253:
        errs.append(_max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """Messages for ``value`` as an RFC 1035 label (service names)."""
    errs = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Messages for ``value`` as a qualified name (label and annotation keys)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif _blen(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if not _QNAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Messages for ``value`` as a label value."""
    errs = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _has_chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value: str) -> list[str]:
    """Messages for ``value`` as a ConfigMap or Secret data key."""
    errs = []
    if _blen(value) > 253:
        errs.append(_max_len_error(253))
    if not _CONFIG_KEY_RE.fullmatch(value):
        errs.append(_regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    errs.extend(_has_chdir_prefix(value))
    return errs


def is_valid_path_segment_name(value: str, prefix: bool = False) -> list[str]:
    """Messages for ``value`` as a path segment (RBAC names): not '.' or '..', no '/' or '%'."""
    if not prefix:
        for bad in (".", ".."):
            if value == bad:
                return [f"may not be '{bad}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


_PORT_NAME_CHARSET_RE = re.compile("[-a-z0-9]+")


def is_valid_port_num(port: int) -> list[str]:
    """Messages for ``port`` as a TCP/UDP port number."""
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(port: str) -> list[str]:
    """Messages for ``port`` as an IANA service name (named ports)."""
    errs = []
    if len(port) > 15:
        errs.append(_max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _inclusive_range(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


RULE_DNS1123_SUBDOMAIN = "dns1123-subdomain"
RULE_DNS1123_LABEL = "dns1123-label"
RULE_DNS1035_LABEL = "dns1035-label"
RULE_PATH_SEGMENT = "path-segment"


def _mask_trailing_dash(name: str) -> str:
    # apimachinery's own quirk: it drops two characters and appends one.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_name(rule: str, name: str, prefix: bool = False) -> list[str]:
    """Messages for ``name`` under ``rule``; ``prefix`` for a generateName."""
    if rule == RULE_PATH_SEGMENT:
        return is_valid_path_segment_name(name, prefix)
    if prefix:
        name = _mask_trailing_dash(name)
    if rule == RULE_DNS1123_LABEL:
        return is_dns1123_label(name)
    if rule == RULE_DNS1035_LABEL:
        return is_dns1035_label(name)
    return is_dns1123_subdomain(name)


@dataclass(frozen=True, slots=True)
class _Kind:
    rule: str
    namespaced: bool
    core: bool = True  # kube's core ValidateObjectMeta: unqualified finalizers must be standard


_SUB, _LABEL, _1035, _PATH = RULE_DNS1123_SUBDOMAIN, RULE_DNS1123_LABEL, RULE_DNS1035_LABEL, RULE_PATH_SEGMENT

_KINDS: Mapping[tuple[str, str], _Kind] = MappingProxyType({
    ("", "pods"): _Kind(_SUB, True),
    ("", "podtemplates"): _Kind(_SUB, True),
    ("", "replicationcontrollers"): _Kind(_SUB, True),
    ("", "services"): _Kind(_1035, True),
    ("", "endpoints"): _Kind(_SUB, True),
    ("", "configmaps"): _Kind(_SUB, True),
    ("", "secrets"): _Kind(_SUB, True),
    ("", "serviceaccounts"): _Kind(_SUB, True),
    ("", "limitranges"): _Kind(_SUB, True),
    ("", "resourcequotas"): _Kind(_SUB, True),
    ("", "persistentvolumeclaims"): _Kind(_SUB, True),
    # Legacy events get no name rule of their own, only the generic path-segment check.
    ("", "events"): _Kind(_PATH, True, core=False),
    ("", "namespaces"): _Kind(_LABEL, False),
    ("", "nodes"): _Kind(_SUB, False),
    ("", "persistentvolumes"): _Kind(_SUB, False),
    ("apps", "deployments"): _Kind(_SUB, True),
    ("apps", "replicasets"): _Kind(_SUB, True),
    ("apps", "daemonsets"): _Kind(_SUB, True),
    ("apps", "controllerrevisions"): _Kind(_SUB, True),
    # StatefulSet pods are named <set>-<ordinal> and must be DNS labels.
    ("apps", "statefulsets"): _Kind(_LABEL, True),
    ("batch", "jobs"): _Kind(_SUB, True),
    ("batch", "cronjobs"): _Kind(_SUB, True),
    ("autoscaling", "horizontalpodautoscalers"): _Kind(_SUB, True),
    ("policy", "poddisruptionbudgets"): _Kind(_SUB, True),
    ("coordination.k8s.io", "leases"): _Kind(_SUB, True),
    ("events.k8s.io", "events"): _Kind(_SUB, True),
    ("discovery.k8s.io", "endpointslices"): _Kind(_SUB, True),
    ("networking.k8s.io", "ingresses"): _Kind(_SUB, True),
    ("networking.k8s.io", "networkpolicies"): _Kind(_SUB, True),
    ("networking.k8s.io", "ingressclasses"): _Kind(_SUB, False),
    ("rbac.authorization.k8s.io", "roles"): _Kind(_PATH, True),
    ("rbac.authorization.k8s.io", "rolebindings"): _Kind(_PATH, True),
    ("rbac.authorization.k8s.io", "clusterroles"): _Kind(_PATH, False),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _Kind(_PATH, False),
    ("storage.k8s.io", "storageclasses"): _Kind(_SUB, False),
    ("storage.k8s.io", "csidrivers"): _Kind(_SUB, False),
    ("storage.k8s.io", "csinodes"): _Kind(_SUB, False),
    ("storage.k8s.io", "volumeattachments"): _Kind(_SUB, False),
    ("scheduling.k8s.io", "priorityclasses"): _Kind(_SUB, False),
    ("certificates.k8s.io", "certificatesigningrequests"): _Kind(_PATH, False),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): _Kind(_PATH, False),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): _Kind(_PATH, False),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _Kind(_SUB, False),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _Kind(_SUB, False),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _Kind(_SUB, False, core=False),
    ("apiregistration.k8s.io", "apiservices"): _Kind(_SUB, False, core=False),
})


def name_rule(resource: str, group: str) -> str:
    """The name rule kube-apiserver applies to ``metadata.name`` of a resource.

    Custom resources and anything unknown use the DNS subdomain rule.
    """
    kind = _KINDS.get((group, resource))
    return kind.rule if kind else RULE_DNS1123_SUBDOMAIN


def is_namespaced(resource: str, group: str) -> bool | None:
    """Whether a built-in resource is namespaced; ``None`` when not known here."""
    kind = _KINDS.get((group, resource))
    return kind.namespaced if kind else None


# ------------------------------------------------------------- metadata

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_labels(labels: object, path: str) -> list[Cause]:
    """Label keys must be qualified names, values valid label values."""
    errs: list[Cause] = []
    for key, value in _d(labels).items():
        errs.extend(field_invalid(path, key, m) for m in is_qualified_name(str(key)))
        text = value if isinstance(value, str) else ""
        errs.extend(field_invalid(path, text, m) for m in is_valid_label_value(text))
    return errs


def validate_annotations(annotations: object, path: str) -> list[Cause]:
    """Annotation keys are qualified names in any case; all together at most 256 KiB."""
    errs: list[Cause] = []
    total = 0
    for key, value in _d(annotations).items():
        errs.extend(field_invalid(path, key, m) for m in is_qualified_name(str(key).lower()))
        total += _blen(str(key)) + _blen(value if isinstance(value, str) else "")
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field_too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _validate_owner_references(refs: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    first_controller = ""
    for ref in _l(refs):
        ref = _d(ref)
        api_version, kind = _s(ref.get("apiVersion")), _s(ref.get("kind"))
        version = api_version.rsplit("/", 1)[-1] if api_version.count("/") <= 1 else ""
        if not version:
            errs.append(field_invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            errs.append(field_invalid(f"{path}.kind", kind, "kind must not be empty"))
        if not _s(ref.get("name")):
            errs.append(field_invalid(f"{path}.name", _s(ref.get("name")), "name must not be empty"))
        if not _s(ref.get("uid")):
            errs.append(field_invalid(f"{path}.uid", _s(ref.get("uid")), "uid must not be empty"))
        if ref.get("controller") is True:
            current = f"{kind}/{_s(ref.get('name'))}"
            if first_controller:
                errs.append(field_invalid(
                    path, refs, "Only one reference can have Controller set to true. Found \"true\" in "
                    f"references for {first_controller} and {current}"))
            else:
                first_controller = current
    return errs


def _validate_managed_fields(entries: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, entry in enumerate(_l(entries)):
        entry = _d(entry)
        p = f"{path}[{i}]"
        if entry.get("operation") not in ("Apply", "Update"):
            errs.append(field_invalid(f"{p}.operation", _s(entry.get("operation")),
                                      "must be `Apply` or `Update`"))
        if entry.get("fieldsType") not in (None, "", "FieldsV1"):
            errs.append(field_invalid(f"{p}.fieldsType", entry.get("fieldsType"), "must be `FieldsV1`"))
    return errs


def _validate_kube_finalizer(value: str, path: str) -> list[Cause]:
    if "/" not in value and value not in _STANDARD_FINALIZERS:
        return [field_invalid(path, value, "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def _validate_finalizers(finalizers: object, path: str, *, kube: bool) -> list[Cause]:
    errs: list[Cause] = []
    names = [f if isinstance(f, str) else "" for f in _l(finalizers)]
    for name in names:
        errs.extend(field_invalid(path, name, m) for m in is_qualified_name(name))
    if "orphan" in names and "foregroundDeletion" in names:
        errs.append(field_invalid(path, _Rendered(_go_strings(names)),
                                  "finalizer orphan and foregroundDeletion cannot be both set"))
    if kube:
        for i, name in enumerate(names):
            errs.extend(_validate_kube_finalizer(name, f"{path}[{i}]"))
    return errs


def validate_object_meta(obj: Obj, *, namespaced: bool, name_rule: str | None = None,
                         core_finalizers: bool | None = None,
                         resource: str = "", group: str = "") -> list[Cause]:
    """``metadata`` of an object on create, as ``ValidateObjectMeta``.

    ``name_rule`` (a ``RULE_*``) is how ``metadata.name`` is checked; ``core_finalizers``
    is kube's core rule that unqualified finalizers must be standard ones. Both
    default to what ``resource``/``group`` has (see ``name_rule()``).
    """
    kind = _KINDS.get((group, resource))
    rule = name_rule or (kind.rule if kind else RULE_DNS1123_SUBDOMAIN)
    if core_finalizers is None:
        core_finalizers = bool(kind and kind.core)
    md = _d(obj.get("metadata"))
    errs: list[Cause] = []
    generate_name = _s(md.get("generateName"))
    if generate_name:
        errs.extend(field_invalid("metadata.generateName", generate_name, m)
                    for m in validate_name(rule, generate_name, prefix=True))
    name = _s(md.get("name"))
    if not name:
        errs.append(field_required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(field_invalid("metadata.name", name, m) for m in validate_name(rule, name))
    namespace = _s(md.get("namespace"))
    if namespaced:
        if not namespace:
            errs.append(field_required("metadata.namespace"))
        else:
            errs.extend(field_invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace))
    elif namespace:
        errs.append(field_forbidden("metadata.namespace", "not allowed on this type"))
    errs.extend(_nonnegative("metadata.generation", md.get("generation")))
    errs.extend(validate_labels(md.get("labels"), "metadata.labels"))
    errs.extend(validate_annotations(md.get("annotations"), "metadata.annotations"))
    errs.extend(_validate_owner_references(md.get("ownerReferences"), "metadata.ownerReferences"))
    errs.extend(_validate_finalizers(md.get("finalizers"), "metadata.finalizers", kube=core_finalizers))
    errs.extend(_validate_managed_fields(md.get("managedFields"), "metadata.managedFields"))
    return errs


_GO_TIME_RE = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def _go_time(value: object) -> _Rendered:
    """An RFC 3339 timestamp as Go's ``time.Time.String()`` prints it."""
    text = _s(value)
    m = _GO_TIME_RE.fullmatch(text)
    if not m:
        return _Rendered("0001-01-01 00:00:00 +0000 UTC")
    date, clock, frac, zone = m.groups()
    frac = (frac or "").rstrip("0").rstrip(".")
    tz = "+0000 UTC" if zone == "Z" else zone.replace(":", "") + " " + zone.replace(":", "")
    return _Rendered(f"{date} {clock}{frac} {tz}")


def _same_time(a: object, b: object) -> bool:
    """Two metav1.Time values compared as times, whatever their offsets (Semantic.DeepEqual's rule)."""
    if a == b:
        return True
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    ta, tb = parse_time_or_none(a), parse_time_or_none(b)
    return ta is not None and ta == tb


def validate_update_meta(new: Obj, old: Obj) -> list[Cause]:
    """``metadata`` of an update, as ``ValidateObjectMetaAccessorUpdate``.

    name, namespace, uid and creationTimestamp are immutable (an absent uid or
    creationTimestamp in ``new`` means "keep the old one"); labels, annotations,
    owner references and managed fields are validated again. deletionTimestamp,
    finalizers and resourceVersion are the registry's.
    """
    md, old_md = _d(new.get("metadata")), _d(old.get("metadata"))
    errs: list[Cause] = []
    errs.extend(_nonnegative("metadata.generation", md.get("generation")))
    for key in ("name", "namespace", "uid"):
        value, before = _s(md.get(key)), _s(old_md.get(key))
        if key == "uid" and not value:
            continue
        if value != before:
            errs.append(field_invalid(f"metadata.{key}", value, FIELD_IMMUTABLE))
    created, before = md.get("creationTimestamp"), old_md.get("creationTimestamp")
    if created and not _same_time(created, before):
        errs.append(field_invalid("metadata.creationTimestamp", _go_time(created), FIELD_IMMUTABLE))
    errs.extend(validate_labels(md.get("labels"), "metadata.labels"))
    errs.extend(validate_annotations(md.get("annotations"), "metadata.annotations"))
    errs.extend(_validate_owner_references(md.get("ownerReferences"), "metadata.ownerReferences"))
    errs.extend(_validate_managed_fields(md.get("managedFields"), "metadata.managedFields"))
    return errs


# ------------------------------------------------------------- Go renderings


def _go_strings(values: object) -> str:
    if not isinstance(values, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(_s(v)) for v in values) + "}"


def _go_map(value: object) -> str:
    if not isinstance(value, dict):
        return "map[string]string(nil)"
    items = sorted((str(k), _s(v)) for k, v in value.items())
    return "map[string]string{" + ", ".join(f"{go_quote(k)}:{go_quote(v)}" for k, v in items) + "}"


def _go_selector(selector: object) -> _Rendered:
    """A LabelSelector as ``%#v`` prints ``v1.LabelSelector``."""
    if not isinstance(selector, dict):
        return _Rendered("null")
    exprs = selector.get("matchExpressions")
    if isinstance(exprs, list):
        items = [f"v1.LabelSelectorRequirement{{Key:{go_quote(_s(_d(e).get('key')))}, "
                 f"Operator:{go_quote(_s(_d(e).get('operator')))}, Values:{_go_strings(_d(e).get('values'))}}}"
                 for e in exprs]
        rendered = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    else:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    return _Rendered(f"v1.LabelSelector{{MatchLabels:{_go_map(selector.get('matchLabels'))}, "
                     f"MatchExpressions:{rendered}}}")


def _int_or_string(value: object) -> _Rendered:
    # intstr.IntOrString has String(), which prints the bare int or string.
    return _Rendered(str(value) if not isinstance(value, bool) else "0")


# ------------------------------------------------------------- quantities and selectors

_QUANTITY_RE = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_QUANTITY_SUFFIX: Mapping[str, Fraction] = MappingProxyType({
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
    "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
})
QUANTITY_FORMAT_ERROR = ("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def parse_quantity(value: object) -> Fraction | None:
    """A resource quantity (``"500m"``, ``"1Gi"``, ``2``) as an exact number; None if malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    m = _QUANTITY_RE.fullmatch(value)
    if not m:
        return None
    number, suffix = m.groups()
    sign = -1 if number.startswith("-") else 1
    digits = number.lstrip("+-")
    if digits.count(".") > 1 or not digits.replace(".", ""):
        return None
    try:
        amount = Fraction(digits) * sign
    except ValueError:
        return None
    if suffix in _QUANTITY_SUFFIX:
        return amount * _QUANTITY_SUFFIX[suffix]
    exp = re.fullmatch(r"[eE]([-+]?[0-9]+)", suffix)
    if exp:
        return amount * Fraction(10) ** int(exp.group(1))
    return None


def _quantity_text(value: object) -> str:
    return value if isinstance(value, str) else _render(value)


_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def _validate_label_selector(selector: object, path: str, *, strict_values: bool = True) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    errs = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(_l(selector.get("matchExpressions"))):
        expr = _d(expr)
        p = f"{path}.matchExpressions[{i}]"
        op, values = _s(expr.get("operator")), _l(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(field_required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(field_forbidden(
                    f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(field_invalid(f"{p}.operator", op, "not a valid selector operator"))
        key = _s(expr.get("key"))
        errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        if strict_values:
            for j, value in enumerate(values):
                errs.extend(field_invalid(f"{p}.values[{j}]", _s(value), m) for m in is_valid_label_value(_s(value)))
    return errs


def _selector_parses(selector: object) -> bool:
    """Whether ``LabelSelectorAsSelector`` accepts the selector."""
    if selector is None:
        return True
    if not isinstance(selector, dict):
        return False
    for key, value in _d(selector.get("matchLabels")).items():
        if is_qualified_name(str(key)) or is_valid_label_value(_s(value)):
            return False
    for expr in _l(selector.get("matchExpressions")):
        expr = _d(expr)
        op, values = _s(expr.get("operator")), _l(expr.get("values"))
        if op not in _SELECTOR_OPS or is_qualified_name(_s(expr.get("key"))):
            return False
        if (op in ("In", "NotIn")) != bool(values):
            return False
        if any(is_valid_label_value(_s(v)) for v in values):
            return False
    return True


def _selector_is_empty(selector: object) -> bool:
    """``labels.Selector.Empty()``: an empty selector (matches all), not a nil one."""
    sel = _d(selector)
    return isinstance(selector, dict) and not sel.get("matchLabels") and not sel.get("matchExpressions")


def _selector_matches(selector: object, labels: object) -> bool:
    """Whether a LabelSelector selects ``labels``; a nil selector selects nothing."""
    if not isinstance(selector, dict):
        return False
    have = _d(labels)
    for key, value in _d(selector.get("matchLabels")).items():
        if have.get(key) != value:
            return False
    for expr in _l(selector.get("matchExpressions")):
        expr = _d(expr)
        key, op, values = _s(expr.get("key")), expr.get("operator"), _l(expr.get("values"))
        present = key in have
        if op == "In" and not (present and have[key] in values):
            return False
        if op == "NotIn" and present and have[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _is_valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        # Go's legacy parser accepts IPv4 with leading zeros ("010.0.0.1").
        return bool(re.fullmatch(r"(\d{1,3})(\.\d{1,3}){3}", value)) and all(
            int(p) < 256 for p in value.split("."))
    return True


def _ip_errors(path: str, value: str) -> list[Cause]:
    if _is_valid_ip(value):
        return []
    return [field_invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


def _is_ipv6(value: str) -> bool:
    return ":" in value and _is_valid_ip(value)


# ------------------------------------------------------------- pod spec

_PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
_VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs",
    "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte",
    "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk",
    "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)
# kube-apiserver reports a few sources under odd names; keep them for identical paths.
_VOLUME_SOURCE_PATHS = MappingProxyType({"downwardAPI": "downwarAPI", "cephfs": "cephFS"})
_ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                    "status.podIPs")
_DOWNWARD_CONVERTIBLE = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"})
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "storage", "requests.cpu", "requests.memory",
    "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
    "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _validate_volumes(volumes: list[Any], path: str) -> tuple[dict[str, Obj], list[Cause]]:
    errs: list[Cause] = []
    known: dict[str, Obj] = {}
    for i, vol in enumerate(volumes):
        vol = _d(vol)
        p = f"{path}[{i}]"
        name = _s(vol.get("name"))
        el = _validate_volume_source(vol, p)
        if not name:
            el.append(field_required(f"{p}.name"))
        else:
            el.extend(field_invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
        if name in known:
            el.append(field_duplicate(f"{p}.name", name))
        if el:
            errs.extend(el)
        else:
            known[name] = vol
    return known, errs


def _validate_volume_source(vol: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    count = 0
    for key in _VOLUME_SOURCES:
        source = vol.get(key)
        if source is None:
            continue
        if count:
            errs.append(field_forbidden(f"{path}.{_VOLUME_SOURCE_PATHS.get(key, key)}",
                                        "may not specify more than 1 volume type"))
            continue
        count += 1
        src, p = _d(source), f"{path}.{key}"
        if key == "hostPath":
            host_path = _s(src.get("path"))
            if not host_path:
                errs.append(field_required(f"{p}.path"))
            else:
                errs.extend(_no_backsteps(host_path, f"{p}.path"))
        elif key == "secret":
            if not _s(src.get("secretName")):
                errs.append(field_required(f"{p}.secretName"))
        elif key == "configMap":
            if not _s(src.get("name")):
                errs.append(field_required(f"{p}.name"))
        elif key == "persistentVolumeClaim":
            if not _s(src.get("claimName")):
                errs.append(field_required(f"{p}.claimName"))
        elif key == "nfs":
            if not _s(src.get("server")):
                errs.append(field_required(f"{p}.server"))
            if not _s(src.get("path")):
                errs.append(field_required(f"{p}.path"))
            elif not _s(src.get("path")).startswith("/"):
                errs.append(field_invalid(f"{p}.path", _s(src.get("path")), "must be an absolute path"))
        elif key == "csi":
            if not _s(src.get("driver")):
                errs.append(field_required(f"{p}.driver"))
    if count == 0:
        errs.append(field_required(path, "must specify a volume type"))
    return errs


def _no_backsteps(target: str, path: str) -> list[Cause]:
    if ".." in target.replace("\\", "/").split("/"):
        return [field_invalid(path, target, "must not contain '..'")]
    return []


def _local_descending_path(target: str, path: str) -> list[Cause]:
    errs = []
    if target.startswith("/"):
        errs.append(field_invalid(path, target, "must be a relative path"))
    return errs + _no_backsteps(target, path)


def _validate_port_num_or_name(value: object, path: str) -> list[Cause]:
    if isinstance(value, str):
        return [field_invalid(path, value, m) for m in is_valid_port_name(value)]
    port = _i(value)
    if port is None:
        return [field_invalid(path, value, "must be an integer or a port name")]
    return [field_invalid(path, port, m) for m in is_valid_port_num(port)]


def _validate_container_ports(ports: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = _d(port)
        p = f"{path}[{i}]"
        name = _s(port.get("name"))
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs.extend(field_invalid(f"{p}.name", name, m) for m in msgs)
            elif name in names:
                errs.append(field_duplicate(f"{p}.name", name))
            else:
                names.add(name)
        container_port = _i(port.get("containerPort")) or 0
        if container_port == 0:
            errs.append(field_required(f"{p}.containerPort"))
        else:
            errs.extend(field_invalid(f"{p}.containerPort", container_port, m)
                        for m in is_valid_port_num(container_port))
        host_port = _i(port.get("hostPort")) or 0
        if host_port:
            errs.extend(field_invalid(f"{p}.hostPort", host_port, m) for m in is_valid_port_num(host_port))
        errs.extend(_validate_protocol(port.get("protocol"), f"{p}.protocol"))
    return errs


def _validate_protocol(protocol: object, path: str) -> list[Cause]:
    proto = _s(protocol)
    if not proto:
        return [field_required(path)]
    if proto not in _PORT_PROTOCOLS:
        return [field_not_supported(path, proto, _PORT_PROTOCOLS)]
    return []


def _validate_env(env: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, var in enumerate(env):
        var = _d(var)
        p = f"{path}[{i}]"
        name = _s(var.get("name"))
        if not name:
            errs.append(field_required(f"{p}.name"))
        elif any(not (0x20 <= ord(c) < 0x7F) or c == "=" for c in name):
            errs.append(field_invalid(f"{p}.name", name, "a valid environment variable name must consist "
                                                          "only of printable ASCII characters other than '='"))
        errs.extend(_validate_env_value_from(var, f"{p}.valueFrom"))
    return errs


def _validate_env_value_from(var: Obj, path: str) -> list[Cause]:
    source = var.get("valueFrom")
    if not isinstance(source, dict):
        return []
    errs: list[Cause] = []
    count = 0
    if isinstance(source.get("fieldRef"), dict):
        count += 1
        errs.extend(_validate_field_ref(source["fieldRef"], f"{path}.fieldRef"))
    if isinstance(source.get("resourceFieldRef"), dict):
        count += 1
        if not _s(source["resourceFieldRef"].get("resource")):
            errs.append(field_required(f"{path}.resourceFieldRef.resource"))
    for key in ("configMapKeyRef", "secretKeyRef"):
        ref = source.get(key)
        if isinstance(ref, dict):
            count += 1
            name = _s(ref.get("name"))
            errs.extend(field_invalid(f"{path}.{key}.name", name, m) for m in is_dns1123_subdomain(name))
            ref_key = _s(ref.get("key"))
            if not ref_key:
                errs.append(field_required(f"{path}.{key}.key"))
            else:
                errs.extend(field_invalid(f"{path}.{key}.key", ref_key, m) for m in is_config_map_key(ref_key))
    if count == 0:
        errs.append(field_invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                            "`configMapKeyRef` or `secretKeyRef`"))
    elif _s(var.get("value")):
        errs.append(field_invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(field_invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_field_ref(ref: Obj, path: str) -> list[Cause]:
    if not _s(ref.get("apiVersion")):
        return [field_required(f"{path}.apiVersion")]
    field_path = _s(ref.get("fieldPath"))
    if not field_path:
        return [field_required(f"{path}.fieldPath")]
    m = re.fullmatch(r"(.+)\['(.*)'\]", field_path)
    base, subscript = (m.group(1), m.group(2)) if m else (field_path, None)
    if base not in _DOWNWARD_CONVERTIBLE:
        return [field_invalid(f"{path}.fieldPath", field_path,
                              f"error converting fieldPath: field label not supported: {base}")]
    if subscript is not None:
        if base == "metadata.annotations":
            return [field_invalid(path, subscript.lower(), e) for e in is_qualified_name(subscript.lower())]
        if base == "metadata.labels":
            return [field_invalid(path, subscript, e) for e in is_qualified_name(subscript)]
        return [field_invalid(path, base, "does not support subscript")]
    if base not in _ENV_FIELD_PATHS:
        return [field_not_supported(f"{path}.fieldPath", base, sorted(_ENV_FIELD_PATHS))]
    return []


def _validate_env_from(sources: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, source in enumerate(sources):
        source = _d(source)
        p = f"{path}[{i}]"
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if isinstance(ref, dict):
                count += 1
                name = _s(ref.get("name"))
                if not name:
                    errs.append(field_required(f"{p}.{key}.name"))
                else:
                    errs.extend(field_invalid(f"{p}.{key}.name", name, m)
                                for m in validate_name(RULE_DNS1123_SUBDOMAIN, name, prefix=True))
        if count == 0:
            errs.append(field_invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(field_invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_volume_mounts(mounts: list[Any], volumes: Mapping[str, Obj], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, mount in enumerate(mounts):
        mount = _d(mount)
        p = f"{path}[{i}]"
        name, mount_path = _s(mount.get("name")), _s(mount.get("mountPath"))
        if not name:
            errs.append(field_required(f"{p}.name"))
        if name not in volumes:
            errs.append(field_not_found(f"{p}.name", name))
        if not mount_path:
            errs.append(field_required(f"{p}.mountPath"))
        if mount_path in seen:
            errs.append(field_invalid(f"{p}.mountPath", mount_path, "must be unique"))
        seen.add(mount_path)
        sub_path, sub_expr = _s(mount.get("subPath")), _s(mount.get("subPathExpr"))
        # kube-apiserver reports these two without the mount's index.
        if sub_path:
            errs.extend(_local_descending_path(sub_path, f"{path}.subPath"))
        if sub_expr:
            if sub_path:
                errs.append(field_invalid(f"{p}.subPathExpr", sub_expr,
                        "subPathExpr and subPath are mutually exclusive"))
            errs.extend(_local_descending_path(sub_expr, f"{path}.subPathExpr"))
    return errs


def _validate_pull_policy(policy: object, path: str) -> list[Cause]:
    value = _s(policy)
    if value in ("Always", "IfNotPresent", "Never"):
        return []
    if not value:
        return [field_required(path)]
    return [field_not_supported(path, value, ("Always", "IfNotPresent", "Never"))]


def _validate_resource_name(name: str, path: str) -> list[Cause]:
    errs = [field_invalid(path, name, m) for m in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not _is_hugepages(name):
            errs.append(field_invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(field_invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and (name.startswith("requests.") or is_qualified_name("requests." + name)):
        errs.append(field_invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_resources(resources: object, path: str) -> list[Cause]:
    res = _d(resources)
    limits, requests = _d(res.get("limits")), _d(res.get("requests"))
    errs: list[Cause] = []
    for prefix, items in (("limits", limits), ("requests", requests)):
        for name, value in items.items():
            p = f"{path}.{prefix}[{name}]"
            errs.extend(_validate_resource_name(str(name), p))
            qty = parse_quantity(value)
            if qty is None:
                errs.append(field_invalid(p, _quantity_text(value), QUANTITY_FORMAT_ERROR))
                continue
            if qty < 0:
                errs.append(field_invalid(p, _quantity_text(value), IS_NEGATIVE))
            if prefix == "requests":
                overcommit = _is_native_resource(str(name)) and not _is_hugepages(str(name))
                limit = parse_quantity(limits.get(name)) if name in limits else None
                if name in limits and limit is not None:
                    if qty != limit and not overcommit:
                        errs.append(field_invalid(f"{path}.requests", _quantity_text(value),
                                                  f"must be equal to {name} limit of {_quantity_text(limits[name])}"))
                    elif qty > limit:
                        errs.append(field_invalid(
                            f"{path}.requests", _quantity_text(value),
                            f"must be less than or equal to {name} limit of {_quantity_text(limits[name])}"))
                elif name not in limits and not overcommit:
                    errs.append(field_required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    return errs


_HANDLER_KEYS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")


def _validate_handler(handler: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    count = 0
    for key in _HANDLER_KEYS:
        action = handler.get(key)
        if not isinstance(action, dict):
            continue
        if count:
            errs.append(field_forbidden(f"{path}.{key}", "may not specify more than 1 handler type"))
            continue
        count += 1
        if key == "exec" and not _l(action.get("command")):
            errs.append(field_required(f"{path}.exec.command"))
        elif key in ("httpGet", "tcpSocket"):
            if "port" not in action or action.get("port") in (None, "", 0):
                errs.append(field_required(f"{path}.{key}.port"))
            else:
                errs.extend(_validate_port_num_or_name(action.get("port"), f"{path}.{key}.port"))
            if key == "httpGet":
                scheme = _s(action.get("scheme"))
                if scheme not in ("HTTP", "HTTPS"):
                    errs.append(field_not_supported(f"{path}.httpGet.scheme", scheme, ("HTTP", "HTTPS")))
        elif key == "grpc":
            port = _i(action.get("port")) or 0
            errs.extend(field_invalid(f"{path}.grpc.port", port, m) for m in is_valid_port_num(port))
    if count == 0:
        errs.append(field_required(path, "must specify a handler type"))
    return errs


def _validate_probe(probe: object, path: str, *, single_success: bool) -> list[Cause]:
    if not isinstance(probe, dict):
        return []
    errs = _validate_handler(probe, path)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs.extend(_nonnegative(f"{path}.{key}", probe.get(key)))
    grace = _i(probe.get("terminationGracePeriodSeconds"))
    if grace is not None and grace <= 0:
        errs.append(field_invalid(f"{path}.terminationGracePeriodSeconds", grace, "must be greater than 0"))
    success = _i(probe.get("successThreshold"))
    if single_success and success != 1:
        errs.append(field_invalid(f"{path}.successThreshold", success if success is not None else 0, "must be 1"))
    return errs


def _validate_lifecycle(lifecycle: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in ("postStart", "preStop"):
        handler = _d(lifecycle).get(key)
        if isinstance(handler, dict):
            errs.extend(_validate_handler(handler, f"{path}.{key}"))
    return errs


def _validate_security_context(sc: object, path: str) -> list[Cause]:
    ctx = _d(sc)
    errs: list[Cause] = []
    for key in ("runAsUser", "runAsGroup"):
        value = _i(ctx.get(key))
        if value is not None and not 0 <= value <= 0xFFFFFFFF:
            errs.append(field_invalid(f"{path}.{key}", value, _inclusive_range(0, 0xFFFFFFFF)))
    if ctx.get("allowPrivilegeEscalation") is False and ctx.get("privileged") is True:
        errs.append(field_invalid(path, ctx, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
    return errs


def _validate_container_common(ctr: Obj, volumes: Mapping[str, Obj], path: str) -> list[Cause]:
    errs: list[Cause] = []
    name = _s(ctr.get("name"))
    if not name:
        errs.append(field_required(f"{path}.name"))
    else:
        errs.extend(field_invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
    if not _s(ctr.get("image")):
        errs.append(field_required(f"{path}.image"))
    policy = _s(ctr.get("terminationMessagePolicy"))
    if not policy:
        errs.append(field_required(f"{path}.terminationMessagePolicy"))
    elif policy not in ("File", "FallbackToLogsOnError"):
        errs.append(field_not_supported(f"{path}.terminationMessagePolicy", policy, ("File", "FallbackToLogsOnError")))
    errs.extend(_validate_container_ports(_l(ctr.get("ports")), f"{path}.ports"))
    errs.extend(_validate_env(_l(ctr.get("env")), f"{path}.env"))
    errs.extend(_validate_env_from(_l(ctr.get("envFrom")), f"{path}.envFrom"))
    errs.extend(_validate_volume_mounts(_l(ctr.get("volumeMounts")), volumes, f"{path}.volumeMounts"))
    errs.extend(_validate_pull_policy(ctr.get("imagePullPolicy"), f"{path}.imagePullPolicy"))
    errs.extend(_validate_resources(ctr.get("resources"), f"{path}.resources"))
    errs.extend(_validate_security_context(ctr.get("securityContext"), f"{path}.securityContext"))
    return errs


def _host_port_conflicts(containers: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for ci, ctr in enumerate(containers):
        for pi, port in enumerate(_l(_d(ctr).get("ports"))):
            port = _d(port)
            host_port = _i(port.get("hostPort")) or 0
            if not host_port:
                continue
            key = f"{_s(port.get('hostIP'))}/{_s(port.get('protocol'))}/{host_port}"
            if key in seen:
                errs.append(field_duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return errs


def _validate_containers(containers: list[Any], volumes: Mapping[str, Obj], path: str) -> list[Cause]:
    if not containers:
        return [field_required(path)]
    errs: list[Cause] = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        ctr = _d(ctr)
        p = f"{path}[{i}]"
        errs.extend(_validate_container_common(ctr, volumes, p))
        name = _s(ctr.get("name"))
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        else:
            names.add(name)
        if isinstance(ctr.get("lifecycle"), dict):
            errs.extend(_validate_lifecycle(ctr["lifecycle"], f"{p}.lifecycle"))
        errs.extend(_validate_probe(ctr.get("livenessProbe"), f"{p}.livenessProbe", single_success=True))
        errs.extend(_validate_probe(ctr.get("readinessProbe"), f"{p}.readinessProbe", single_success=False))
        errs.extend(_validate_probe(ctr.get("startupProbe"), f"{p}.startupProbe", single_success=True))
        if ctr.get("restartPolicy") is not None:
            errs.append(field_forbidden(f"{p}.restartPolicy", "may not be set for non-init containers"))
    errs.extend(_host_port_conflicts(containers, path))
    return errs


def _validate_init_containers(inits: list[Any], regular: list[Any], volumes: Mapping[str, Obj],
                              path: str) -> list[Cause]:
    errs: list[Cause] = []
    names = {_s(_d(c).get("name")) for c in regular}
    for i, ctr in enumerate(inits):
        ctr = _d(ctr)
        p = f"{path}[{i}]"
        errs.extend(_validate_container_common(ctr, volumes, p))
        restart = ctr.get("restartPolicy")
        if restart is not None and restart != "Always":
            errs.append(field_not_supported(f"{p}.restartPolicy", restart, ("Always",)))
        name = _s(ctr.get("name"))
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        elif name:
            names.add(name)
        errs.extend(_host_port_conflicts([ctr], path))
        if restart == "Always":
            if isinstance(ctr.get("lifecycle"), dict):
                errs.extend(_validate_lifecycle(ctr["lifecycle"], f"{p}.lifecycle"))
            errs.extend(_validate_probe(ctr.get("livenessProbe"), f"{p}.livenessProbe", single_success=True))
            errs.extend(_validate_probe(ctr.get("readinessProbe"), f"{p}.readinessProbe", single_success=False))
            errs.extend(_validate_probe(ctr.get("startupProbe"), f"{p}.startupProbe", single_success=True))
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(key) is not None:
                    errs.append(field_forbidden(f"{p}.{key}", "may not be set for init containers without "
                                                              "restartPolicy=Always"))
    return errs


def _validate_tolerations(tolerations: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, tol in enumerate(tolerations):
        tol = _d(tol)
        p = f"{path}[{i}]"
        key, operator, value, effect = (_s(tol.get("key")), _s(tol.get("operator")), _s(tol.get("value")),
                                        _s(tol.get("effect")))
        if key:
            errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        if not key and operator != "Exists":
            errs.append(field_invalid(f"{p}.operator", operator,
                                      "operator must be Exists when `key` is empty, which means \"match all "
                                      "values and all keys\""))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(field_invalid(f"{p}.effect", effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(field_invalid(f"{p}.operator", value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(field_invalid(f"{p}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(field_not_supported(f"{p}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(field_not_supported(f"{p}.effect", effect, ("NoSchedule", "PreferNoSchedule", "NoExecute")))
    return errs


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


# ------------------------------------------------------------- pods

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


# ------------------------------------------------------------- apps


def _validate_selector_for_template(spec: Obj, path: str, *, what: str) -> list[Cause]:
    """The selector and template rules shared by Deployments and ReplicaSets."""
    errs: list[Cause] = []
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field_required(f"{path}.selector"))
    else:
        errs.extend(_validate_label_selector(selector, f"{path}.selector"))
        if not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
            errs.append(field_invalid(f"{path}.selector", _go_selector(selector),
                    f"empty selector is invalid for {what}"))
    if not _selector_parses(selector):
        # kube-apiserver does not look at the template when the selector does not parse
        errs.append(field_invalid(f"{path}.selector", _go_selector(selector), "invalid label selector"))
        return errs
    labels = _d(_d(spec.get("template")).get("metadata")).get("labels")
    if not _selector_is_empty(selector) and not _selector_matches(selector, labels):
        errs.append(field_invalid(f"{path}.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    return errs + _validate_replica_template(spec, path, "ReplicaSet")


def _validate_replica_template(spec: Obj, path: str, kind: str) -> list[Cause]:
    tpath = f"{path}.template"
    errs = _validate_pod_template_spec(spec.get("template"), tpath)
    pod_spec = _d(_d(spec.get("template")).get("spec"))
    restart = _s(pod_spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(field_not_supported(f"{tpath}.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden(f"{tpath}.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


def _validate_int_or_percent(value: object, path: str) -> list[Cause]:
    if isinstance(value, str):
        if not re.fullmatch("[0-9]+%", value):
            return [field_invalid(path, _int_or_string(value),
                                  _regex_error("a valid percent string must be a numeric string followed by an "
                                               "ending '%'", "[0-9]+%", "1%", "93%"))]
        return []
    number = _i(value)
    if number is None:
        return [field_invalid(path, _int_or_string(value), "must be an integer or percentage (e.g '5%%')")]
    return _nonnegative(path, number)


def _int_or_percent_value(value: object) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if re.fullmatch("[0-9]+%", value) else 0
    return _i(value) or 0


def _not_more_than_100_percent(value: object, path: str) -> list[Cause]:
    if isinstance(value, str) and re.fullmatch("[0-9]+%", value) and int(value[:-1]) > 100:
        return [field_invalid(path, _int_or_string(value), "must not be greater than 100%")]
    return []


def _deployment_spec(spec: Obj) -> list[Cause]:
    errs = _nonnegative("spec.replicas", spec.get("replicas"))
    errs.extend(_validate_selector_for_template(spec, "spec", what="deployment"))
    strategy = _d(spec.get("strategy"))
    stype = _s(strategy.get("type"))
    if stype == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            errs.append(field_forbidden("spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'"))
    elif stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            errs.append(field_required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil"))
        else:
            p = "spec.strategy.rollingUpdate"
            errs.extend(_validate_int_or_percent(rolling.get("maxUnavailable"), f"{p}.maxUnavailable"))
            errs.extend(_validate_int_or_percent(rolling.get("maxSurge"), f"{p}.maxSurge"))
            unavailable = _int_or_percent_value(rolling.get("maxUnavailable"))
            if unavailable == 0 and _int_or_percent_value(rolling.get("maxSurge")) == 0:
                errs.append(field_invalid(f"{p}.maxUnavailable", _int_or_string(rolling.get("maxUnavailable")),
                                          "may not be 0 when `maxSurge` is 0"))
            errs.extend(_not_more_than_100_percent(rolling.get("maxUnavailable"), f"{p}.maxUnavailable"))
    else:
        errs.append(field_not_supported("spec.strategy", strategy, ("Recreate", "RollingUpdate")))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    errs.extend(_nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    deadline = _i(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        errs.extend(_nonnegative("spec.progressDeadlineSeconds", deadline))
        if deadline <= (_i(spec.get("minReadySeconds")) or 0):
            errs.append(field_invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


def _selector_immutable(new: Obj, old: Obj) -> list[Cause]:
    selector, before = _d(new.get("spec")).get("selector"), _d(old.get("spec")).get("selector")
    return _immutable("spec.selector", selector, before, _go_selector(selector))


@unique_causes
def validate_deployment(obj: Obj) -> list[Cause]:
    return _deployment_spec(_d(obj.get("spec")))


@unique_causes
def validate_deployment_update(new: Obj, old: Obj) -> list[Cause]:
    return _deployment_spec(_d(new.get("spec"))) + _selector_immutable(new, old)


def _replicaset_spec(spec: Obj) -> list[Cause]:
    errs = _nonnegative("spec.replicas", spec.get("replicas"))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    errs.extend(_validate_selector_for_template(spec, "spec", what="deployment"))
    return errs


@unique_causes
def validate_replica_set(obj: Obj) -> list[Cause]:
    return _replicaset_spec(_d(obj.get("spec")))


@unique_causes
def validate_replica_set_update(new: Obj, old: Obj) -> list[Cause]:
    return _replicaset_spec(_d(new.get("spec"))) + _selector_immutable(new, old)


def _daemonset_spec(spec: Obj) -> list[Cause]:
    selector = spec.get("selector")
    errs = _validate_label_selector(selector, "spec.selector")
    labels = _d(_d(spec.get("template")).get("metadata")).get("labels")
    if _selector_parses(selector) and not (_selector_is_empty(selector) or _selector_matches(selector, labels)):
        errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    if isinstance(selector, dict) and not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
        errs.append(field_invalid("spec.selector", _go_selector(selector), "empty selector is invalid for daemonset"))
    errs.extend(_validate_replica_template(spec, "spec", "DaemonSet"))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    strategy = _d(spec.get("updateStrategy"))
    stype = _s(strategy.get("type"))
    if stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        p = "spec.updateStrategy.rollingUpdate"
        if not isinstance(rolling, dict):
            errs.append(field_required(p))
        else:
            for key in ("maxUnavailable", "maxSurge"):
                errs.extend(_validate_int_or_percent(rolling.get(key), f"{p}.{key}"))
            for key in ("maxUnavailable", "maxSurge"):
                errs.extend(_not_more_than_100_percent(rolling.get(key), f"{p}.{key}"))
            unavailable = _int_or_percent_value(rolling.get("maxUnavailable")) != 0
            surge = _int_or_percent_value(rolling.get("maxSurge")) != 0
            if unavailable and surge:
                errs.append(field_invalid(f"{p}.maxSurge", _int_or_string(rolling.get("maxSurge")),
                                          "may not be set when maxUnavailable is non-zero"))
            elif not unavailable and not surge:
                errs.append(field_required(f"{p}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    elif stype != "OnDelete":
        errs.append(field_not_supported("spec.updateStrategy", strategy, ("RollingUpdate", "OnDelete")))
    errs.extend(_nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    return errs


@unique_causes
def validate_daemon_set(obj: Obj) -> list[Cause]:
    return _daemonset_spec(_d(obj.get("spec")))


@unique_causes
def validate_daemon_set_update(new: Obj, old: Obj) -> list[Cause]:
    return _daemonset_spec(_d(new.get("spec"))) + _selector_immutable(new, old)


def _statefulset_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    policy = _s(spec.get("podManagementPolicy"))
    if not policy:
        errs.append(field_required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(field_invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = _d(spec.get("updateStrategy"))
    stype = _s(strategy.get("type"))
    if not stype:
        errs.append(field_required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(field_invalid("spec.updateStrategy.rollingUpdate", strategy["rollingUpdate"],
                                      "only allowed for updateStrategy 'RollingUpdate'"))
    elif stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if isinstance(rolling, dict):
            p = "spec.updateStrategy.rollingUpdate"
            errs.extend(_nonnegative(f"{p}.partition", rolling.get("partition")))
            if rolling.get("maxUnavailable") is not None:
                errs.extend(_validate_int_or_percent(rolling["maxUnavailable"], f"{p}.maxUnavailable"))
                if _int_or_percent_value(rolling["maxUnavailable"]) == 0:
                    errs.append(field_invalid(f"{p}.maxUnavailable", _int_or_string(rolling["maxUnavailable"]),
                            "cannot be 0"))
                errs.extend(_not_more_than_100_percent(rolling["maxUnavailable"], f"{p}.maxUnavailable"))
    else:
        errs.append(field_invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            value = _s(retention.get(key))
            if value not in ("Retain", "Delete"):
                errs.append(field_not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{key}", value,
                        ("Retain", "Delete")))
    errs.extend(_nonnegative("spec.replicas", spec.get("replicas")))
    errs.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    if isinstance(spec.get("ordinals"), dict):
        errs.extend(_nonnegative("spec.ordinals.start", spec["ordinals"].get("start")))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field_required("spec.selector"))
    else:
        errs.extend(_validate_label_selector(selector, "spec.selector"))
        if not _d(selector.get("matchLabels")) and not _l(selector.get("matchExpressions")):
            errs.append(field_invalid("spec.selector", _go_selector(selector),
                    "empty selector is invalid for statefulset"))
    template = _d(spec.get("template"))
    md = _d(template.get("metadata"))
    if not _selector_parses(selector):
        errs.append(field_invalid("spec.selector", _go_selector(selector), ""))
    else:
        if not _selector_is_empty(selector) and not _selector_matches(selector, md.get("labels")):
            errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(md.get("labels"))),
                                      "`selector` does not match template `labels`"))
        # kube-apiserver checks only the template's metadata here, not its pod spec.
        errs.extend(validate_labels(md.get("labels"), "spec.template.labels"))
        errs.extend(validate_annotations(md.get("annotations"), "spec.template.annotations"))
    pod_spec = _d(template.get("spec"))
    restart = _s(pod_spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(field_not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(field_forbidden("spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported"))
    return errs


@unique_causes
def validate_stateful_set(obj: Obj) -> list[Cause]:
    return _statefulset_spec(_d(obj.get("spec")))


_STATEFULSET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy",
                        "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


@unique_causes
def validate_stateful_set_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs = _statefulset_spec(spec)
    if not _semantic_equal({k: v for k, v in spec.items() if k not in _STATEFULSET_MUTABLE},
                           {k: v for k, v in old_spec.items() if k not in _STATEFULSET_MUTABLE}):
        errs.append(field_forbidden("spec", "updates to statefulset spec for fields other than 'replicas', "
                                            "'ordinals', 'template', 'updateStrategy', "
                                            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                                            "forbidden"))
    return errs


@unique_causes
def validate_controller_revision(obj: Obj) -> list[Cause]:
    errs = [] if obj.get("data") is not None else [field_required("data", "data is mandatory")]
    return errs + _nonnegative("revision", obj.get("revision"))


@unique_causes
def validate_controller_revision_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_controller_revision(new) + _immutable("data", new.get("data"), old.get("data"))


# ------------------------------------------------------------- core controllers, services


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


def _normalized_service_spec(obj: Obj) -> Obj:
    spec = dict(_d(obj.get("spec")))
    cluster_ip, cluster_ips = _s(spec.get("clusterIP")), _l(spec.get("clusterIPs"))
    # The strategy keeps clusterIP and clusterIPs in step before validation.
    if cluster_ip and not cluster_ips:
        spec["clusterIPs"] = [cluster_ip]
    elif cluster_ips and not cluster_ip and isinstance(cluster_ips[0], str):
        spec["clusterIP"] = cluster_ips[0]
    return spec


def _is_headless(spec: Obj) -> bool:
    ips = _l(spec.get("clusterIPs"))
    return len(ips) == 1 and ips[0] == "None"


def _externally_accessible(spec: Obj) -> bool:
    stype = spec.get("type")
    return stype in ("LoadBalancer", "NodePort") or stype == "ClusterIP" and bool(_l(spec.get("externalIPs")))


def _go_service_port_key(port: Obj) -> _Rendered:
    return _Rendered(f'core.ServicePort{{Name:"", Protocol:{go_quote(_s(port.get("protocol")))}, '
                     f'AppProtocol:(*string)(nil), Port:{_i(port.get("port")) or 0}, '
                     f'TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, NodePort:0}}')


def _service_cluster_ips(spec: Obj) -> list[Cause]:
    if spec.get("type") == "ExternalName":
        return []
    errs: list[Cause] = []
    cluster_ip, ips = _s(spec.get("clusterIP")), [_s(ip) for ip in _l(spec.get("clusterIPs"))]
    rendered_ips = _Rendered(_go_strings(ips))
    if cluster_ip:
        if not ips:
            errs.append(field_required("spec.clusterIPs"))
        elif ips[0] != cluster_ip:
            errs.append(field_invalid("spec.clusterIPs", rendered_ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(field_invalid("spec.clusterIPs", rendered_ips, "must be empty when `clusterIP` is not specified"))
    families = [_s(f) for f in _l(spec.get("ipFamilies"))]
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            errs.append(field_not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
        if family in seen:
            errs.append(field_duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        errs.append(field_not_supported("spec.ipFamilyPolicy", policy, ("PreferDualStack", "RequireDualStack",
                "SingleStack")))
    bad = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad = True
                errs.append(field_invalid("spec.clusterIPs", rendered_ips, "'None' must be the first and only value"))
            continue
        found = _ip_errors(f"spec.clusterIPs[{i}]", ip)
        bad = bad or bool(found)
        errs.extend(found)
    if len(ips) > 2:
        errs.append(field_invalid("spec.clusterIPs", rendered_ips, "may only hold up to 2 values"))
    if bad:
        return errs
    if len(ips) > 1 and _is_ipv6(ips[0]) == _is_ipv6(ips[1]):
        errs.append(field_invalid("spec.clusterIPs", rendered_ips,
                "may specify no more than one IP for each IP family"))
    if not _is_headless(spec):
        for i, ip in enumerate(ips[:len(families)]):
            if families[i] == "IPv4" and _is_ipv6(ip):
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", ip,
                        f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if families[i] == "IPv6" and not _is_ipv6(ip):
                errs.append(field_invalid(f"spec.clusterIPs[{i}]", ip,
                        f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _service_spec(obj: Obj) -> list[Cause]:
    spec = _normalized_service_spec(obj)
    errs: list[Cause] = []
    stype = _s(spec.get("type"))
    ports = [_d(p) for p in _l(spec.get("ports"))]
    headless = _is_headless(spec)
    if not ports and not headless and stype != "ExternalName":
        errs.append(field_required("spec.ports"))
    if stype in ("LoadBalancer", "NodePort") and headless:
        errs.append(field_invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {stype} services"))
    elif stype == "ExternalName":
        if _l(spec.get("clusterIPs")):
            errs.append(field_forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if _l(spec.get("ipFamilies")):
            errs.append(field_forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(field_forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = _s(spec.get("externalName")).removesuffix(".")
        if cname:
            errs.extend(field_invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname))
        else:
            errs.append(field_required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"spec.ports[{i}]"
        name = _s(port.get("name"))
        if len(ports) > 1 and not name:
            errs.append(field_required(f"{p}.name"))
        elif name:
            errs.extend(field_invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
            if name in names:
                errs.append(field_duplicate(f"{p}.name", name))
            names.add(name)
        number = _i(port.get("port")) or 0
        errs.extend(field_invalid(f"{p}.port", number, m) for m in is_valid_port_num(number))
        errs.extend(_validate_protocol(port.get("protocol"), f"{p}.protocol"))
        errs.extend(_validate_port_num_or_name(port.get("targetPort", 0), f"{p}.targetPort"))
        if isinstance(port.get("appProtocol"), str):
            errs.extend(field_invalid(f"{p}.appProtocol", port["appProtocol"],
                    m) for m in is_qualified_name(port["appProtocol"]))
    if spec.get("selector") is not None:
        errs.extend(validate_labels(spec.get("selector"), "spec.selector"))
    affinity = _s(spec.get("sessionAffinity"))
    if not affinity:
        errs.append(field_required("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        errs.append(field_not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    if affinity == "ClientIP":
        timeout = _i(_d(_d(spec.get("sessionAffinityConfig")).get("clientIP")).get("timeoutSeconds"))
        if timeout is None or not 0 < timeout <= 86400:
            errs.append(field_invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout or 0,
                                      "must be greater than 0 and less than 86400"))
    elif affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(field_forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    errs.extend(_service_cluster_ips(spec))
    for i, ip in enumerate(_l(spec.get("externalIPs"))):
        errs.extend(_ip_errors(f"spec.externalIPs[{i}]", _s(ip)))
    if not stype:
        errs.append(field_required("spec.type"))
    elif stype not in _SERVICE_TYPES:
        errs.append(field_not_supported("spec.type", stype, _SERVICE_TYPES))
    if stype == "ClusterIP":
        for i, port in enumerate(ports):
            if _i(port.get("nodePort")):
                errs.append(field_forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        node_port = _i(port.get("nodePort")) or 0
        if not node_port:
            continue
        key = (_s(port.get("protocol")), node_port)
        if key in node_ports:
            errs.append(field_duplicate(f"spec.ports[{i}].nodePort", node_port))
        node_ports.add(key)
    seen_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (_s(port.get("protocol")), _i(port.get("port")) or 0)
        if key in seen_ports:
            errs.append(field_duplicate(f"spec.ports[{i}]", _go_service_port_key(port)))
        seen_ports.add(key)
    if spec.get("allocateLoadBalancerNodePorts") is not None and stype != "LoadBalancer":
        errs.append(field_forbidden("spec.allocateLoadBalancerNodePorts",
                "may only be used when `type` is 'LoadBalancer'"))
    if stype == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        # kube-apiserver reports this one without the spec. prefix
        errs.append(field_required("allocateLoadBalancerNodePorts"))
    etp = _s(spec.get("externalTrafficPolicy"))
    if not _externally_accessible(spec):
        if etp:
            errs.append(field_invalid("spec.externalTrafficPolicy", etp,
                    "may only be set for externally-accessible services"))
    elif not etp:
        errs.append(field_required("spec.externalTrafficPolicy"))
    elif etp not in ("Cluster", "Local"):
        errs.append(field_not_supported("spec.externalTrafficPolicy", etp, ("Cluster", "Local")))
    itp = spec.get("internalTrafficPolicy")
    if itp is None and stype in ("ClusterIP", "NodePort", "LoadBalancer"):
        errs.append(field_required("spec.internalTrafficPolicy"))
    elif itp is not None and itp not in ("Cluster", "Local"):
        errs.append(field_not_supported("spec.internalTrafficPolicy", itp, ("Cluster", "Local")))
    return errs


@unique_causes
def validate_service(obj: Obj) -> list[Cause]:
    return _service_spec(obj)


@unique_causes
def validate_service_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _normalized_service_spec(new), _normalized_service_spec(old)
    errs: list[Cause] = []
    external = "ExternalName" in (spec.get("type"), old_spec.get("type"))
    ips, old_ips = [_s(x) for x in _l(spec.get("clusterIPs"))], [_s(x) for x in _l(old_spec.get("clusterIPs"))]
    rendered = _Rendered(_go_strings(ips))
    if not external and not (_is_headless(spec) and _is_headless(old_spec)):
        if len(ips) == len(old_ips):
            errs.extend(field_invalid(f"spec.clusterIPs[{i}]", rendered, "may not change once set")
                        for i, ip in enumerate(old_ips) if ip != ips[i])
        elif len(old_ips) > len(ips):
            if not ips:
                errs.append(field_invalid("spec.clusterIPs[0]", rendered, "primary clusterIP can not be unset"))
            elif ips[0] != old_ips[0]:
                errs.append(field_invalid("spec.clusterIPs[0]", rendered, "may not change once set"))
            if len(ips) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
                errs.append(field_invalid("spec.clusterIPs[0]", rendered,
                                          "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the "
                                          "secondary clusterIP"))
        elif old_ips and ips[0] != old_ips[0]:
            errs.append(field_invalid("spec.clusterIPs[0]", rendered, "may not change once set"))
        families, old_families = _l(spec.get("ipFamilies")), _l(old_spec.get("ipFamilies"))
        if families and old_families and families[0] != old_families[0]:
            errs.append(field_invalid("spec.ipFamilies[0]", _Rendered(_go_strings(families)),
                    "may not change once set"))
    needs_health_check = [sp.get("type") == "LoadBalancer" and sp.get("externalTrafficPolicy") == "Local"
                          for sp in (spec, old_spec)]
    if all(needs_health_check) and spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(field_forbidden("spec.healthCheckNodePort", FIELD_IMMUTABLE))
    return errs + _service_spec(new)


@unique_causes
def validate_endpoints(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    for i, subset in enumerate(_l(obj.get("subsets"))):
        subset = _d(subset)
        p = f"subsets[{i}]"
        if not _l(subset.get("addresses")) and not _l(subset.get("notReadyAddresses")):
            errs.append(field_required(p, "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(_l(subset.get(key))):
                errs.extend(_ip_errors(f"{p}.{key}[{j}].ip", _s(_d(addr).get("ip"))))
        ports = _l(subset.get("ports"))
        for j, port in enumerate(ports):
            port = _d(port)
            pp = f"{p}.ports[{j}]"
            if len(ports) > 1 and not _s(port.get("name")):
                errs.append(field_required(f"{pp}.name"))
            elif _s(port.get("name")):
                errs.extend(field_invalid(f"{pp}.name", port["name"], m) for m in is_dns1123_label(port["name"]))
            number = _i(port.get("port")) or 0
            errs.extend(field_invalid(f"{pp}.port", number, m) for m in is_valid_port_num(number))
            errs.extend(_validate_protocol(port.get("protocol"), f"{pp}.protocol"))
    return errs


@unique_causes
def validate_endpoints_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_endpoints(new)


# ------------------------------------------------------------- config


MAX_SECRET_SIZE = 1024 * 1024


def _b64_len(value: object) -> int:
    text = _s(value)
    return len(text) * 3 // 4 - text.count("=") if text else 0


@unique_causes
def validate_config_map(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    data, binary = _d(obj.get("data")), _d(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        errs.extend(field_invalid(f"data[{key}]", key, m) for m in is_config_map_key(str(key)))
        if key in binary:
            errs.append(field_invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        total += _blen(_s(value))
    for key, value in binary.items():
        errs.extend(field_invalid(f"binaryData[{key}]", key, m) for m in is_config_map_key(str(key)))
        total += _b64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(field_too_long("", MAX_SECRET_SIZE))
    return errs


def _immutable_data(new: Obj, old: Obj, keys: Sequence[str]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    msg = "field is immutable when `immutable` is set"
    errs = [] if new.get("immutable") is True else [field_forbidden("immutable", msg)]
    errs.extend(field_forbidden(key, msg) for key in keys if _d(new.get(key)) != _d(old.get(key)))
    return errs


@unique_causes
def validate_config_map_update(new: Obj, old: Obj) -> list[Cause]:
    return _immutable_data(new, old, ("data", "binaryData")) + validate_config_map(new)


@unique_causes
def validate_secret(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    data = _d(obj.get("data"))
    total = 0
    for key, value in data.items():
        errs.extend(field_invalid(f"data[{key}]", key, m) for m in is_config_map_key(str(key)))
        total += _b64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(field_too_long("data", MAX_SECRET_SIZE))
    stype = _s(obj.get("type"))
    annotations = _d(_d(obj.get("metadata")).get("annotations"))
    if stype == "kubernetes.io/service-account-token":
        if not _s(annotations.get("kubernetes.io/service-account.name")):
            errs.append(field_required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif stype in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if stype == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(field_required(f"data[{key}]"))
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.extend((field_required("data[username]"), field_required("data[password]")))
    elif stype == "kubernetes.io/ssh-auth":
        if not _s(data.get("ssh-privatekey")):
            errs.append(field_required("data[ssh-privatekey]"))
    elif stype == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(field_required(f"data[{key}]"))
    return errs


@unique_causes
def validate_secret_update(new: Obj, old: Obj) -> list[Cause]:
    errs = _immutable("type", _s(new.get("type")), _s(old.get("type")))
    return errs + _immutable_data(new, old, ("data",)) + validate_secret(new)


# ------------------------------------------------------------- namespaces, nodes


@unique_causes
def validate_namespace(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    for name in _l(_d(obj.get("spec")).get("finalizers")):
        name = _s(name)
        errs.extend(field_invalid("spec.finalizers", name, m) for m in is_qualified_name(name))
        errs.extend(_validate_kube_finalizer(name, "spec.finalizers"))
    return errs


@unique_causes
def validate_namespace_update(new: Obj, old: Obj) -> list[Cause]:
    return []


def _node_taints(taints: list[Any]) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        taint = _d(taint)
        # kube-apiserver reports node taints under metadata.taints
        p = f"metadata.taints[{i}]"
        key, value, effect = _s(taint.get("key")), _s(taint.get("value")), _s(taint.get("effect"))
        errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(field_invalid(f"{p}.value", value, ";".join(msgs)))
        if not effect:
            errs.append(field_required(f"{p}.effect"))
        elif effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(field_not_supported(f"{p}.effect", effect, ("NoSchedule", "PreferNoSchedule", "NoExecute")))
        if (effect, key) in seen:
            errs.append(Cause(REASON_DUPLICATE, f"Duplicate value: {_render(taint)}: taints must be unique by key "
                                                f"and effect pair", p))
            continue
        seen.add((effect, key))
    return errs


@unique_causes
def validate_node(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs = _node_taints(_l(spec.get("taints")))
    cidrs = [_s(c) for c in _l(spec.get("podCIDRs"))]
    for i, cidr in enumerate(cidrs):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            errs.append(field_invalid(f"spec.podCIDRs[{i}]", cidr,
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
    return errs


@unique_causes
def validate_node_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs: list[Cause] = []
    old_cidrs = _l(old_spec.get("podCIDRs"))
    if old_cidrs and old_cidrs != _l(spec.get("podCIDRs")):
        errs.append(field_forbidden("spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"))
    old_provider = _s(old_spec.get("providerID"))
    if old_provider and old_provider != _s(spec.get("providerID")):
        errs.append(field_forbidden("spec.providerID",
                "node updates may not change providerID except from \"\" to valid"))
    errs.extend(_node_taints(_l(spec.get("taints"))))
    if _s(spec.get("externalID")) != _s(old_spec.get("externalID")):
        errs.append(field_forbidden("spec.externalID", "may not be updated"))
    return errs


# ------------------------------------------------------------- storage

_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_PV_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "quobyte",
               "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
               "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi",
               "flocker")


def _pvc_spec(spec: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    modes = _l(spec.get("accessModes"))
    if not modes:
        errs.append(field_required(f"{path}.accessModes", "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        errs.extend(_validate_label_selector(spec.get("selector"), f"{path}.selector"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            errs.append(field_not_supported(f"{path}.accessModes", mode, _ACCESS_MODES))
    if "ReadWriteOncePod" in modes and any(m != "ReadWriteOncePod" and m in _ACCESS_MODES for m in modes):
        errs.append(field_forbidden(f"{path}.accessModes", "may not use ReadWriteOncePod with other access modes"))
    requests = _d(_d(spec.get("resources")).get("requests"))
    storage_path = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(field_required(storage_path))
    else:
        qty = parse_quantity(requests["storage"])
        if qty is None:
            errs.append(field_invalid(storage_path, _quantity_text(requests["storage"]), QUANTITY_FORMAT_ERROR))
        elif qty <= 0:
            errs.append(field_invalid(storage_path, _quantity_text(requests["storage"]), "must be greater than zero"))
    class_name = _s(spec.get("storageClassName"))
    if class_name:
        errs.extend(field_invalid(f"{path}.storageClassName", class_name, m) for m in is_dns1123_subdomain(class_name))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in ("Block", "Filesystem"):
        errs.append(field_not_supported(f"{path}.volumeMode", mode, ("Block", "Filesystem")))
    return errs


@unique_causes
def validate_persistent_volume_claim(obj: Obj) -> list[Cause]:
    return _pvc_spec(_d(obj.get("spec")), "spec")


@unique_causes
def validate_persistent_volume_claim_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_persistent_volume_claim(new)
    spec, old_spec = dict(_d(new.get("spec"))), dict(_d(old.get("spec")))
    if not _s(old_spec.get("volumeName")):
        old_spec["volumeName"] = spec.get("volumeName")
    if _d(new.get("status")).get("phase") == "Bound" and isinstance(_d(spec.get("resources")).get("requests"), dict):
        resources = dict(_d(spec.get("resources")))
        requests = dict(_d(resources.get("requests")))
        requests["storage"] = _d(_d(old_spec.get("resources")).get("requests")).get("storage")
        resources["requests"] = requests
        spec["resources"] = resources
        spec["volumeAttributesClassName"] = old_spec.get("volumeAttributesClassName")
    if not _semantic_equal(spec, old_spec):
        errs.append(field_forbidden("spec", "spec is immutable after creation except resources.requests and "
                                            "volumeAttributesClassName for bound claims\n"
                                            + _spec_diff(old_spec, spec, "core.PersistentVolumeClaimSpec")))
    new_size = parse_quantity(_d(_d(_d(new.get("spec")).get("resources")).get("requests")).get("storage"))
    old_size = parse_quantity(_d(_d(_d(old.get("spec")).get("resources")).get("requests")).get("storage"))
    if new_size is not None and old_size is not None and new_size < old_size:
        capacity = parse_quantity(_d(_d(old.get("status")).get("capacity")).get("storage"))
        if capacity is not None and new_size <= capacity:
            errs.append(field_forbidden("spec.resources.requests.storage",
                    "field can not be less than status.capacity"))
    errs.extend(_immutable("volumeMode", _d(new.get("spec")).get("volumeMode"), _d(old.get("spec")).get("volumeMode")))
    return errs


@unique_causes
def validate_persistent_volume(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs: list[Cause] = []
    modes = _l(spec.get("accessModes"))
    if not modes:
        errs.append(field_required("spec.accessModes"))
    errs.extend(field_not_supported("spec.accessModes", m, _ACCESS_MODES) for m in modes if m not in _ACCESS_MODES)
    capacity = _d(spec.get("capacity"))
    if not capacity:
        errs.append(field_required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(field_not_supported("spec.capacity", capacity, ("storage",)))
    for name, value in capacity.items():
        qty = parse_quantity(value)
        if qty is None:
            errs.append(field_invalid(f"spec.capacity[{name}]", _quantity_text(value), QUANTITY_FORMAT_ERROR))
        elif qty <= 0:
            errs.append(field_invalid(f"spec.capacity[{name}]", _quantity_text(value), "must be greater than zero"))
    policy = _s(spec.get("persistentVolumeReclaimPolicy"))
    if policy and policy not in ("Delete", "Recycle", "Retain"):
        errs.append(field_not_supported("spec.persistentVolumeReclaimPolicy", policy, ("Delete", "Recycle", "Retain")))
    count = 0
    for key in _PV_SOURCES:
        if spec.get(key) is None:
            continue
        if count:
            errs.append(field_forbidden(f"spec.{key}", "may not specify more than 1 volume type"))
        count += 1
    if count == 0:
        errs.append(field_required("spec", "must specify a volume type"))
    if isinstance(spec.get("local"), dict) and spec.get("nodeAffinity") is None:
        errs.append(field_required("spec.nodeAffinity", "Local volume requires node affinity"))
    class_name = _s(spec.get("storageClassName"))
    if class_name:
        errs.extend(field_invalid("spec.storageClassName", class_name, m) for m in is_dns1123_subdomain(class_name))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in ("Block", "Filesystem"):
        errs.append(field_not_supported("spec.volumeMode", mode, ("Block", "Filesystem")))
    return errs


@unique_causes
def validate_persistent_volume_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_persistent_volume(new)
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    source = {k: spec.get(k) for k in _PV_SOURCES}
    old_source = {k: old_spec.get(k) for k in _PV_SOURCES}
    if isinstance(source.get("csi"), dict) and isinstance(old_source.get("csi"), dict) \
            and old_source["csi"].get("controllerExpandSecretRef") is None:
        source["csi"] = {k: v for k, v in source["csi"].items() if k != "controllerExpandSecretRef"}
    if not _semantic_equal(source, old_source):
        errs.append(field_forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after "
                                    "creation\n" + _spec_diff(old_source, source, "core.PersistentVolumeSource")))
    errs.extend(_immutable("volumeMode", spec.get("volumeMode"), old_spec.get("volumeMode")))
    return errs


# ------------------------------------------------------------- batch

_JOB_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")


def _job_spec_common(spec: Obj, path: str) -> list[Cause]:
    """``validateJobSpec``: what Jobs and CronJob job templates share."""
    errs: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        errs.extend(_nonnegative(f"{path}.{key}", spec.get(key)))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(field_not_supported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed")))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(field_required(f"{path}.completions", "when completion mode is Indexed"))
            parallelism = _i(spec.get("parallelism"))
            if parallelism is not None and parallelism > 100000:
                errs.append(field_invalid(f"{path}.parallelism", parallelism,
                                          "must be less than or equal to 100000 when completion mode is Indexed"))
    policy = spec.get("podReplacementPolicy")
    if policy is not None:
        allowed = ("Failed",) if spec.get("podFailurePolicy") is not None else ("Failed", "TerminatingOrFailed")
        if policy not in allowed:
            errs.append(field_not_supported(f"{path}.podReplacementPolicy", policy, allowed))
    errs.extend(_validate_pod_template_spec(spec.get("template"), f"{path}.template"))
    restart = _s(_d(_d(spec.get("template")).get("spec")).get("restartPolicy"))
    rpath = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", ""):
        errs.append(field_required(rpath, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(field_not_supported(rpath, restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(field_invalid(rpath, restart, 'only "Never" is supported when podFailurePolicy is specified'))
    return errs


def _job_spec(spec: Obj) -> list[Cause]:
    """``ValidateJobSpec``: the common part plus the selector."""
    errs = _job_spec_common(spec, "spec")
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field_required("spec.selector"))
    else:
        errs.extend(_validate_label_selector(selector, "spec.selector"))
    labels = _d(_d(spec.get("template")).get("metadata")).get("labels")
    if _selector_parses(selector) and not _selector_is_empty(selector) and not _selector_matches(selector, labels):
        errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    return errs


def _has_label(template_md: Obj, key: str, expected: str) -> list[Cause]:
    labels = _d(template_md.get("labels"))
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [field_required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [field_invalid(path, _Rendered(_go_map(labels)), f"must be '{expected}'")]
    return []


@unique_causes
def validate_job(obj: Obj) -> list[Cause]:
    spec, md = _d(obj.get("spec")), _d(obj.get("metadata"))
    errs: list[Cause] = []
    if spec.get("manualSelector") is not True:
        template_md = _d(_d(spec.get("template")).get("metadata"))
        if template_md.get("labels") is None:
            errs.append(field_required("spec.template.metadata.labels"))
        uid, name = _s(md.get("uid")), _s(md.get("name"))
        if not uid:
            errs.append(field_required("metadata.uid"))
        for key, expected in zip(_JOB_LABELS, (uid, name, uid, name)):
            errs.extend(_has_label(template_md, key, expected))
        expected_labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name}
        selector = spec.get("selector")
        if _selector_parses(selector) and not _selector_matches(selector, expected_labels) \
                and not _selector_is_empty(selector):
            errs.append(field_invalid("spec.selector", _go_selector(selector), "`selector` not auto-generated"))
    errs.extend(_job_spec(spec))
    completions = _i(spec.get("completions"))
    if spec.get("completionMode") == "Indexed" and completions and completions > 0:
        hostname = f"{_s(md.get('name'))}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(field_invalid("metadata.name", _s(md.get("name")),
                                      f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


@unique_causes
def validate_job_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs = _job_spec(spec)
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is not None:
        if not _semantic_equal(spec.get("completions"), old_spec.get("completions")) \
                and spec.get("completions") != spec.get("parallelism"):
            errs.append(field_invalid("spec.completions", spec.get("completions"),
                                      "can only be modified in tandem with spec.parallelism"))
    else:
        errs.extend(_immutable("spec.completions", spec.get("completions"), old_spec.get("completions")))
    errs.extend(_immutable("spec.selector", spec.get("selector"), old_spec.get("selector"),
            _go_selector(spec.get("selector"))))
    template, old_template = _d(spec.get("template")), _d(old_spec.get("template"))
    if old_spec.get("suspend") is True and not _d(old.get("status")).get("startTime"):
        # A suspended Job that never started may change its scheduling directives.
        template = dict(template)
        tspec, old_tspec = dict(_d(template.get("spec"))), dict(_d(old_template.get("spec")))
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            tspec.pop(key, None)
            old_tspec.pop(key, None)
        for tspec_ in (tspec, old_tspec):
            affinity = dict(_d(tspec_.get("affinity")))
            affinity.pop("nodeAffinity", None)
            tspec_["affinity"] = affinity
        template["spec"], template["metadata"] = tspec, {}
        old_template = dict(old_template, spec=old_tspec, metadata={})
    if not _semantic_equal(template, old_template):
        errs.append(field_invalid("spec.template", _d(spec.get("template")), FIELD_IMMUTABLE))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs.extend(_immutable(f"spec.{key}", spec.get(key), old_spec.get(key)))
    return errs


_CRON_BOUNDS = MappingProxyType({
    "minute": (0, 59, {}), "hour": (0, 23, {}), "dom": (1, 31, {}),
    "month": (1, 12, {m: i + 1 for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}),
    "dow": (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
})
_CRON_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


def _cron_int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise ValueError(f'failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: invalid syntax')
    number = int(expr)
    if number < 0:
        raise ValueError(f"negative number ({number}) not allowed: {expr}")
    return number


def _cron_range(expr: str, lo: int, hi: int, names: Mapping[str, int]) -> None:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = lo, hi
    else:
        start = names.get(low_high[0].lower()) if low_high[0].lower() in names else _cron_int(low_high[0])
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = names[low_high[1].lower()] if low_high[1].lower() in names else _cron_int(low_high[1])
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if len(low_high) == 1:
            end = hi
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < lo:
        raise ValueError(f"beginning of range ({start}) below minimum ({lo}): {expr}")
    if end > hi:
        raise ValueError(f"end of range ({end}) above maximum ({hi}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def _cron_parse_error(schedule: str) -> str:
    """robfig/cron's standard parser error for ``schedule``, or "" when it parses."""
    spec = schedule
    if not spec:
        return "empty spec string"
    try:
        if spec.startswith(("TZ=", "CRON_TZ=")):
            space = spec.find(" ")
            zone = spec[spec.find("=") + 1:space if space >= 0 else len(spec)]
            try:
                zoneinfo.ZoneInfo(zone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                return f"provided bad location {zone}: unknown time zone {zone}"
            spec = spec[space:].strip() if space >= 0 else ""
        if spec.startswith("@"):
            if spec in _CRON_DESCRIPTORS:
                return ""
            if spec.startswith("@every "):
                duration = spec[len("@every "):]
                if not re.fullmatch(r"([0-9]*(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+", duration):
                    return f"failed to parse duration {spec}: time: invalid duration {go_quote(duration)}"
                return ""
            return f"unrecognized descriptor: {spec}"
        fields = spec.split()
        if len(fields) != 5:
            return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
        for value, (lo, hi, names) in zip(fields, _CRON_BOUNDS.values()):
            for expr in [e for e in value.split(",") if e]:
                _cron_range(expr, lo, hi, names)
    except ValueError as exc:
        return str(exc)
    return ""


def _cronjob_spec(spec: Obj, old_spec: Obj | None) -> list[Cause]:
    errs: list[Cause] = []
    schedule = _s(spec.get("schedule"))
    if not schedule:
        errs.append(field_required("spec.schedule"))
    else:
        message = _cron_parse_error(schedule)
        if message:
            errs.append(field_invalid("spec.schedule", schedule, message))
        allow_tz = old_spec is not None and "TZ" in _s(old_spec.get("schedule"))
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            errs.append(field_invalid("spec.schedule", schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
        elif not allow_tz and "TZ" in schedule:
            errs.append(field_invalid("spec.schedule", schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    errs.extend(_nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds")))
    zone = spec.get("timeZone")
    if zone is not None and (old_spec is None or old_spec.get("timeZone") != zone):
        if not _s(zone):
            errs.append(field_invalid("spec.timeZone", _s(zone), "timeZone must be nil or non-empty string"))
        elif _s(zone).lower() == "local":
            errs.append(field_invalid("spec.timeZone", zone, "timeZone must be an explicit time zone as defined in "
                                                              "https://www.iana.org/time-zones"))
        else:
            try:
                zoneinfo.ZoneInfo(_s(zone))
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                errs.append(field_invalid("spec.timeZone", zone, f"unknown time zone {zone}"))
    policy = _s(spec.get("concurrencyPolicy"))
    if not policy:
        errs.append(field_required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(field_not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    job_spec = _d(_d(spec.get("jobTemplate")).get("spec"))
    errs.extend(_job_spec_common(job_spec, "spec.jobTemplate.spec"))
    if job_spec.get("selector") is not None:
        errs.append(field_invalid("spec.jobTemplate.spec.selector", _go_selector(job_spec.get("selector")),
                                  "`selector` will be auto-generated"))
    if job_spec.get("manualSelector") is True:
        errs.append(field_not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false")))
    errs.extend(_nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit")))
    errs.extend(_nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit")))
    return errs


@unique_causes
def validate_cron_job(obj: Obj) -> list[Cause]:
    errs = _cronjob_spec(_d(obj.get("spec")), None)
    name = _s(_d(obj.get("metadata")).get("name"))
    # The controller appends an 11-character suffix and Job names are labels (63).
    if len(name) > 52:
        errs.append(field_invalid("metadata.name", name, "must be no more than 52 characters"))
    return errs


@unique_causes
def validate_cron_job_update(new: Obj, old: Obj) -> list[Cause]:
    return _cronjob_spec(_d(new.get("spec")), _d(old.get("spec")))


# ------------------------------------------------------------- rbac

RBAC_GROUP = "rbac.authorization.k8s.io"


def _policy_rules(rules: list[Any], path: str, *, namespaced: bool) -> list[Cause]:
    errs: list[Cause] = []
    for i, rule in enumerate(rules):
        rule = _d(rule)
        p = f"{path}[{i}]"
        if not _l(rule.get("verbs")):
            errs.append(field_required(f"{p}.verbs", "verbs must contain at least one value"))
        urls = _l(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                errs.append(field_invalid(f"{p}.nonResourceURLs", _Rendered(_go_strings(urls)),
                                          "namespaced rules cannot apply to non-resource URLs"))
            if _l(rule.get("apiGroups")) or _l(rule.get("resources")) or _l(rule.get("resourceNames")):
                errs.append(field_invalid(f"{p}.nonResourceURLs", _Rendered(_go_strings(urls)),
                                          "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not _l(rule.get("apiGroups")):
            errs.append(field_required(f"{p}.apiGroups", "resource rules must supply at least one api group"))
        if not _l(rule.get("resources")):
            errs.append(field_required(f"{p}.resources", "resource rules must supply at least one resource"))
    return errs


@unique_causes
def validate_role(obj: Obj) -> list[Cause]:
    return _policy_rules(_l(obj.get("rules")), "rules", namespaced=True)


@unique_causes
def validate_role_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_role(new)


@unique_causes
def validate_cluster_role(obj: Obj) -> list[Cause]:
    errs = _policy_rules(_l(obj.get("rules")), "rules", namespaced=False)
    aggregation = obj.get("aggregationRule")
    if isinstance(aggregation, dict):
        selectors = _l(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            errs.append(field_required("aggregationRule.clusterRoleSelectors",
                                       "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            errs.extend(_validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]"))
    return errs


@unique_causes
def validate_cluster_role_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_cluster_role(new)


def _go_role_ref(ref: Obj) -> _Rendered:
    return _Rendered(f"rbac.RoleRef{{APIGroup:{go_quote(_s(ref.get('apiGroup')))}, "
                     f"Kind:{go_quote(_s(ref.get('kind')))}, Name:{go_quote(_s(ref.get('name')))}}}")


def _binding(obj: Obj, *, namespaced: bool) -> list[Cause]:
    errs: list[Cause] = []
    ref = _d(obj.get("roleRef"))
    if _s(ref.get("apiGroup")) != RBAC_GROUP:
        errs.append(field_not_supported("roleRef.apiGroup", _s(ref.get("apiGroup")), (RBAC_GROUP,)))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if _s(ref.get("kind")) not in kinds:
        errs.append(field_not_supported("roleRef.kind", _s(ref.get("kind")), kinds))
    name = _s(ref.get("name"))
    if not name:
        errs.append(field_required("roleRef.name"))
    else:
        errs.extend(field_invalid("roleRef.name", name, m) for m in is_valid_path_segment_name(name))
    for i, subject in enumerate(_l(obj.get("subjects"))):
        subject = _d(subject)
        p = f"subjects[{i}]"
        sname, kind, group = _s(subject.get("name")), _s(subject.get("kind")), _s(subject.get("apiGroup"))
        if not sname:
            errs.append(field_required(f"{p}.name"))
        if kind == "ServiceAccount":
            if sname:
                errs.extend(field_invalid(f"{p}.name", sname, m) for m in is_dns1123_subdomain(sname))
            if group:
                errs.append(field_not_supported(f"{p}.apiGroup", group, ("",)))
            if not namespaced and not _s(subject.get("namespace")):
                errs.append(field_required(f"{p}.namespace"))
        elif kind in ("User", "Group"):
            if group != RBAC_GROUP:
                errs.append(field_not_supported(f"{p}.apiGroup", group, (RBAC_GROUP,)))
        else:
            errs.append(field_not_supported(f"{p}.kind", kind, ("ServiceAccount", "User", "Group")))
    return errs


def _binding_update(new: Obj, old: Obj, *, namespaced: bool) -> list[Cause]:
    errs = _binding(new, namespaced=namespaced)
    ref, old_ref = _d(new.get("roleRef")), _d(old.get("roleRef"))
    if any(_s(ref.get(k)) != _s(old_ref.get(k)) for k in ("apiGroup", "kind", "name")):
        errs.append(field_invalid("roleRef", _go_role_ref(ref), "cannot change roleRef"))
    return errs


@unique_causes
def validate_role_binding(obj: Obj) -> list[Cause]:
    return _binding(obj, namespaced=True)


@unique_causes
def validate_role_binding_update(new: Obj, old: Obj) -> list[Cause]:
    return _binding_update(new, old, namespaced=True)


@unique_causes
def validate_cluster_role_binding(obj: Obj) -> list[Cause]:
    return _binding(obj, namespaced=False)


@unique_causes
def validate_cluster_role_binding_update(new: Obj, old: Obj) -> list[Cause]:
    return _binding_update(new, old, namespaced=False)


# ------------------------------------------------------------- events, leases, CRDs


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


@unique_causes
def validate_lease(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    errs: list[Cause] = []
    duration = _i(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(field_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = _i(spec.get("leaseTransitions"))
    if transitions is not None and transitions < 0:
        errs.append(field_invalid("spec.leaseTransitions", transitions, IS_NEGATIVE))
    return errs


@unique_causes
def validate_lease_update(new: Obj, old: Obj) -> list[Cause]:
    return validate_lease(new)


@unique_causes
def validate_custom_resource_definition(obj: Obj) -> list[Cause]:
    spec = _d(obj.get("spec"))
    names = _d(spec.get("names"))
    errs: list[Cause] = []
    name = _s(_d(obj.get("metadata")).get("name"))
    if name and name != f"{_s(names.get('plural'))}.{_s(spec.get('group'))}":
        errs.append(field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    group = _s(spec.get("group"))
    if not group:
        errs.append(field_required("spec.group"))
    elif is_dns1123_subdomain(group):
        errs.append(field_invalid("spec.group", group, ",".join(is_dns1123_subdomain(group))))
    elif "." not in group:
        errs.append(field_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = _s(spec.get("scope"))
    if not scope:
        errs.append(field_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(field_not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    versions = [_d(v) for v in _l(spec.get("versions"))]
    storage = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        vname = _s(version.get("name"))
        storage += version.get("storage") is True
        if vname in seen:
            unique = False
        seen.add(vname)
        msgs = is_dns1035_label(vname)
        if msgs:
            errs.append(field_invalid(f"spec.versions[{i}].name", vname, ",".join(msgs)))
        schema = _d(version.get("schema")).get("openAPIV3Schema")
        spath = f"spec.versions[{i}].schema.openAPIV3Schema"
        if not isinstance(schema, dict):
            errs.append(field_required(spath, "schemas are required"))
        elif not _s(schema.get("type")):
            errs.append(field_required(f"{spath}.type", "must not be empty at the root"))
    rendered = [v.get("name") for v in versions]
    if not versions:
        errs.append(field_required("spec.versions", "must have at least one version"))
    else:
        if not unique:
            errs.append(field_invalid("spec.versions", rendered, "must contain unique version names"))
        if storage != 1:
            errs.append(field_invalid("spec.versions", rendered,
                    "must have exactly one version marked as storage version"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not _s(names.get(key)):
            errs.append(field_required(f"spec.names.{key}"))
    for key in ("plural", "singular"):
        value = _s(names.get(key))
        if value and is_dns1035_label(value):
            errs.append(field_invalid(f"spec.names.{key}", value, ",".join(is_dns1035_label(value))))
    for key in ("kind", "listKind"):
        value = _s(names.get(key))
        if value and is_dns1035_label(value.lower()):
            errs.append(field_invalid(f"spec.names.{key}", value, "may have mixed case, but should otherwise match: "
                                      + ",".join(is_dns1035_label(value.lower()))))
    for key in ("shortNames", "categories"):
        for i, value in enumerate(_l(names.get(key))):
            if is_dns1035_label(_s(value)):
                errs.append(field_invalid(f"spec.names.{key}[{i}]", _s(value), ",".join(is_dns1035_label(_s(value)))))
    if _s(names.get("kind")) and names.get("kind") == names.get("listKind"):
        errs.append(field_invalid("spec.names.listKind", names["listKind"], "kind and listKind may not be the same"))
    return errs


@unique_causes
def validate_custom_resource_definition_update(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_custom_resource_definition(new)
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs.extend(_immutable("spec.group", _s(spec.get("group")), _s(old_spec.get("group"))))
    errs.extend(_immutable("spec.names.plural", _s(_d(spec.get("names")).get("plural")),
                           _s(_d(old_spec.get("names")).get("plural"))))
    return errs


# ------------------------------------------------------------- dispatch

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
