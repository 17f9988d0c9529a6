"""admissionregistration.k8s.io (kube's pkg/apis/admissionregistration/validation): webhook
configurations, ValidatingAdmissionPolicies, MutatingAdmissionPolicies (v1beta1, v1alpha1) and their
bindings. CEL expressions are not compiled here (the object layer has no admission environment: a
policy's expressions are compiled by its plugin, and a bad one fails as its failurePolicy says);
their presence and the surrounding rules are checked."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _i, _l, _s, field_duplicate, field_forbidden, field_invalid,
    field_not_supported, field_required, unique_causes)
from kapi.object.validation.meta import _validate_label_selector
from kapi.object.validation.names import is_dns1035_label, is_dns1123_subdomain, is_qualified_name

_FAILURE = ("Fail", "Ignore")
_MATCH = ("Equivalent", "Exact")
_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_REINVOCATION = ("IfNeeded", "Never")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_ACTIONS = ("Audit", "Deny", "Warn")
_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")


def _fully_qualified(name: str, path: str) -> list[Cause]:
    """IsFullyQualifiedName: a DNS subdomain of at least three segments."""
    if not name:
        return [field_required(path)]
    problems = is_dns1123_subdomain(name)
    if problems:
        return [field_invalid(path, name, problems[0])]
    if len(name.split(".")) < 3:
        return [field_invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _rule(rule: Obj, path: str, *, operations: bool = True) -> list[Cause]:
    errs: list[Cause] = []
    if operations:
        ops = _l(rule.get("operations"))
        if not ops:
            errs.append(field_required(f"{path}.operations"))
        if len(ops) > 1 and "*" in ops:
            errs.append(field_invalid(f"{path}.operations", ops,
                                      "if '*' is present, must not specify other operations"))
        for i, op in enumerate(ops):
            if op not in _OPERATIONS:
                errs.append(field_not_supported(f"{path}.operations[{i}]", op, _OPERATIONS))
    for field in ("apiGroups", "apiVersions", "resources"):
        values = _l(rule.get(field))
        if not values:
            errs.append(field_required(f"{path}.{field}"))
        elif len(values) > 1 and "*" in values:
            errs.append(field_invalid(f"{path}.{field}", values, "if '*' is present, must not specify other "
                                      + {"apiGroups": "API groups", "apiVersions": "API versions"}.get(field, field)))
    for i, version in enumerate(_l(rule.get("apiVersions"))):
        if version == "":
            errs.append(field_required(f"{path}.apiVersions[{i}]"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(field_not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _client_config(cc: object, path: str) -> list[Cause]:
    cc = _d(cc)
    url, service = cc.get("url"), cc.get("service")
    if (url is None) == (service is None):
        return [field_required(path, "exactly one of url or service is required")]
    errs: list[Cause] = []
    if url is not None:
        parts = urlsplit(_s(url))
        if parts.scheme != "https":
            errs.append(field_invalid(f"{path}.url", url, "'https' is the only allowed URL scheme"))
        if not parts.hostname:
            errs.append(field_invalid(f"{path}.url", url, "host must be specified"))
        if parts.fragment:
            errs.append(field_invalid(f"{path}.url", url, "fragments are not permitted"))
        if parts.query:
            errs.append(field_invalid(f"{path}.url", url, "query parameters are not permitted"))
    else:
        svc = _d(service)
        if not _s(svc.get("name")):
            errs.append(field_required(f"{path}.service.name", "service name is required"))
        if not _s(svc.get("namespace")):
            errs.append(field_required(f"{path}.service.namespace", "service namespace is required"))
        port = _i(svc.get("port"))
        if port is not None and not 1 <= port <= 65535:
            errs.append(field_invalid(f"{path}.service.port", port, "port is not valid: must be between 1 and 65535, "
                                      "inclusive"))
        svc_path = svc.get("path")
        if svc_path is not None and not _s(svc_path).startswith("/"):
            errs.append(field_invalid(f"{path}.service.path", svc_path, "must start with a '/'"))
    return errs


def _webhook(hook: Obj, path: str, mutating: bool) -> list[Cause]:
    errs = _fully_qualified(_s(hook.get("name")), f"{path}.name")
    for j, rule in enumerate(_l(hook.get("rules"))):
        errs += _rule(_d(rule), f"{path}.rules[{j}]")
    for field, allowed in (("failurePolicy", _FAILURE), ("matchPolicy", _MATCH)):
        if hook.get(field) is not None and hook[field] not in allowed:
            errs.append(field_not_supported(f"{path}.{field}", hook[field], allowed))
    if mutating and hook.get("reinvocationPolicy") is not None and hook["reinvocationPolicy"] not in _REINVOCATION:
        errs.append(field_not_supported(f"{path}.reinvocationPolicy", hook["reinvocationPolicy"], _REINVOCATION))
    side = hook.get("sideEffects")
    if side is None or side == "":
        errs.append(field_required(f"{path}.sideEffects", f"must specify one of {', '.join(_SIDE_EFFECTS)}"))
    elif side not in _SIDE_EFFECTS:
        errs.append(field_not_supported(f"{path}.sideEffects", side, _SIDE_EFFECTS))
    versions = _l(hook.get("admissionReviewVersions"))
    if not versions:
        errs.append(field_required(f"{path}.admissionReviewVersions",
                                   f"must specify one of {', '.join(_REVIEW_VERSIONS)}"))
    else:
        seen: set[str] = set()
        for i, v in enumerate(versions):
            if v in seen:
                errs.append(field_duplicate(f"{path}.admissionReviewVersions[{i}]", v))
            seen.add(_s(v))
        if not seen & set(_REVIEW_VERSIONS):
            errs.append(field_invalid(f"{path}.admissionReviewVersions", versions,
                                      f"must include at least one of {', '.join(_REVIEW_VERSIONS)}"))
    timeout = _i(hook.get("timeoutSeconds"))
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(field_invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 "
                                  "seconds"))
    for sel in ("namespaceSelector", "objectSelector"):
        if hook.get(sel) is not None:
            errs += _validate_label_selector(hook[sel], f"{path}.{sel}")
    errs += _client_config(hook.get("clientConfig"), f"{path}.clientConfig")
    errs += _match_conditions(hook.get("matchConditions"), f"{path}.matchConditions")
    return errs


def _match_conditions(conditions: object, path: str) -> list[Cause]:
    """matchConditions of a webhook or policy: a unique name and an expression each."""
    errs: list[Cause] = []
    names: set[str] = set()
    for i, mc in enumerate(_l(conditions)):
        mc, p = _d(mc), f"{path}[{i}]"
        name = _s(mc.get("name"))
        if not name:
            errs.append(field_required(f"{p}.name"))
        elif name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        names.add(name)
        if not _s(mc.get("expression")):
            errs.append(field_required(f"{p}.expression"))
    return errs


def _webhook_configuration(obj: Obj, mutating: bool) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, hook in enumerate(_l(obj.get("webhooks"))):
        hook = _d(hook)
        errs += _webhook(hook, f"webhooks[{i}]", mutating)
        name = _s(hook.get("name"))
        if name and name in seen:
            errs.append(field_duplicate(f"webhooks[{i}].name", name))
        seen.add(name)
    return errs


@unique_causes
def validate_validating_webhook_configuration(obj: Obj) -> list[Cause]:
    return _webhook_configuration(obj, mutating=False)


@unique_causes
def validate_validating_webhook_configuration_update(new: Obj, old: Obj) -> list[Cause]:
    return _webhook_configuration(new, mutating=False)


@unique_causes
def validate_mutating_webhook_configuration(obj: Obj) -> list[Cause]:
    return _webhook_configuration(obj, mutating=True)


@unique_causes
def validate_mutating_webhook_configuration_update(new: Obj, old: Obj) -> list[Cause]:
    return _webhook_configuration(new, mutating=True)


def _match_resources(match: Obj, path: str, *, required_rules: bool) -> list[Cause]:
    errs: list[Cause] = []
    rules = _l(match.get("resourceRules"))
    if required_rules and not rules:
        errs.append(field_required(f"{path}.resourceRules"))
    for field in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(_l(match.get(field))):
            errs += _rule(_d(rule), f"{path}.{field}[{i}]")
    if match.get("matchPolicy") is not None and match["matchPolicy"] not in _MATCH:
        errs.append(field_not_supported(f"{path}.matchPolicy", match["matchPolicy"], _MATCH))
    for sel in ("namespaceSelector", "objectSelector"):
        if match.get(sel) is not None:
            errs += _validate_label_selector(match[sel], f"{path}.{sel}")
    return errs


def _policy_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    if spec.get("failurePolicy") is not None and spec["failurePolicy"] not in _FAILURE:
        errs.append(field_not_supported("spec.failurePolicy", spec["failurePolicy"], _FAILURE))
    param_kind = spec.get("paramKind")
    if param_kind is not None:
        pk = _d(param_kind)
        if not _s(pk.get("apiVersion")):
            errs.append(field_required("spec.paramKind.apiVersion"))
        if not _s(pk.get("kind")):
            errs.append(field_required("spec.paramKind.kind"))
    match = spec.get("matchConstraints")
    if not isinstance(match, dict):
        errs.append(field_required("spec.matchConstraints", ""))
    else:
        errs += _match_resources(match, "spec.matchConstraints", required_rules=True)
    validations, audits = _l(spec.get("validations")), _l(spec.get("auditAnnotations"))
    if not validations and not audits:
        errs.append(field_required("spec.validations", "validations or auditAnnotations must contain at least one "
                                   "item"))
    for i, v in enumerate(validations):
        v, p = _d(v), f"spec.validations[{i}]"
        if not _s(v.get("expression")).strip():
            errs.append(field_required(f"{p}.expression"))
        if _s(v.get("message")) and not _s(v.get("message")).strip():
            errs.append(field_invalid(f"{p}.message", v.get("message"), "message must be non-empty if specified"))
        if "\n" in _s(v.get("message")):
            errs.append(field_invalid(f"{p}.message", v.get("message"), "message must not contain line breaks"))
        if v.get("reason") is not None and v["reason"] not in _REASONS:
            errs.append(field_not_supported(f"{p}.reason", v["reason"], _REASONS))
    keys: set[str] = set()
    for i, a in enumerate(audits):
        a, p = _d(a), f"spec.auditAnnotations[{i}]"
        key = _s(a.get("key"))
        if not key:
            errs.append(field_required(f"{p}.key"))
        elif key in keys:
            errs.append(field_duplicate(f"{p}.key", key))
        keys.add(key)
        if not _s(a.get("valueExpression")).strip():
            errs.append(field_required(f"{p}.valueExpression"))
    errs += _match_conditions(spec.get("matchConditions"), "spec.matchConditions")
    for i, var in enumerate(_l(spec.get("variables"))):
        var, p = _d(var), f"spec.variables[{i}]"
        if not _s(var.get("name")):
            errs.append(field_required(f"{p}.name"))
        if not _s(var.get("expression")):
            errs.append(field_required(f"{p}.expression"))
    return errs


@unique_causes
def validate_validating_admission_policy(obj: Obj) -> list[Cause]:
    return _policy_spec(_d(obj.get("spec")))


@unique_causes
def validate_validating_admission_policy_update(new: Obj, old: Obj) -> list[Cause]:
    return _policy_spec(_d(new.get("spec")))


@unique_causes
def validate_validating_admission_policy_status_update(new: Obj, old: Obj) -> list[Cause]:
    errs: list[Cause] = []
    for i, cond in enumerate(_l(_d(new.get("status")).get("conditions"))):
        cond, p = _d(cond), f"status.conditions[{i}]"
        if not _s(cond.get("type")):
            errs.append(field_required(f"{p}.type"))
        if cond.get("status") not in ("True", "False", "Unknown"):
            errs.append(field_not_supported(f"{p}.status", cond.get("status"), ("False", "True", "Unknown")))
    return errs


def _binding_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    if not _s(spec.get("policyName")):
        errs.append(field_required("spec.policyName"))
    actions = _l(spec.get("validationActions"))
    if not actions:
        errs.append(field_required("spec.validationActions", "at least one validation action is required"))
    seen: set[str] = set()
    for i, a in enumerate(actions):
        if a not in _ACTIONS:
            errs.append(field_not_supported(f"spec.validationActions[{i}]", a, _ACTIONS))
        if a in seen:
            errs.append(field_duplicate(f"spec.validationActions[{i}]", a))
        seen.add(_s(a))
    if {"Deny", "Warn"} <= seen:
        errs.append(field_invalid("spec.validationActions", actions, "must not contain both Deny and Warn "
                                  "(repeating the same validation failure information in the API response and "
                                  "headers serves no purpose)"))
    param_ref = spec.get("paramRef")
    if isinstance(param_ref, dict):
        if param_ref.get("name") and param_ref.get("selector") is not None:
            errs.append(field_invalid("spec.paramRef.name", param_ref["name"], "name and selector are mutually "
                                      "exclusive"))
        if not param_ref.get("name") and param_ref.get("selector") is None:
            errs.append(field_required("spec.paramRef", "one of name or selector must be specified"))
        action = param_ref.get("parameterNotFoundAction")
        if action is not None and action not in ("Allow", "Deny"):
            errs.append(field_not_supported("spec.paramRef.parameterNotFoundAction", action, ("Allow", "Deny")))
    match = spec.get("matchResources")
    if isinstance(match, dict):
        errs += _match_resources(match, "spec.matchResources", required_rules=False)
    return errs


@unique_causes
def validate_validating_admission_policy_binding(obj: Obj) -> list[Cause]:
    return _binding_spec(_d(obj.get("spec")))


@unique_causes
def validate_validating_admission_policy_binding_update(new: Obj, old: Obj) -> list[Cause]:
    return _binding_spec(_d(new.get("spec")))


# ------------------------------------------------ MutatingAdmissionPolicy (v1beta1 and v1alpha1)

_PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
# A mutating policy acts on writes with a body: DELETE may not be matched.
_MUTATING_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"))



def field_too_many(path: str, actual: int, limit: int) -> Cause:
    """field.TooMany: ``Too many: <n>: must have at most <limit> items``."""
    return Cause(reason="FieldValueTooMany", message=f"Too many: {actual}: must have at most {limit} items", field=path)


def _mutating_operations(rules: object, path: str) -> list[Cause]:
    """validateOperations: every operation of the rules is one a mutating policy may match."""
    return [field_not_supported(path, op, _MUTATING_OPERATIONS)
            for rule in _l(rules) for op in _l(_d(rule).get("operations")) if op not in _MUTATING_OPERATIONS]


def _mutating_match_resources(match: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    if match.get("matchPolicy") is None:
        errs.append(field_required(f"{path}.matchPolicy"))
    elif match["matchPolicy"] not in _MATCH:
        errs.append(field_not_supported(f"{path}.matchPolicy", match["matchPolicy"], _MATCH))
    for sel in ("namespaceSelector", "objectSelector"):
        if match.get(sel) is not None:
            errs += _validate_label_selector(match[sel], f"{path}.{sel}")
    for field in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(_l(match.get(field))):
            errs += _rule(_d(rule), f"{path}.{field}[{i}]")
    return errs


def _param_kind(param_kind: object, path: str) -> list[Cause]:
    pk = _d(param_kind)
    errs: list[Cause] = []
    version = _s(pk.get("apiVersion"))
    if not version:
        errs.append(field_required(f"{path}.apiVersion"))
    elif version.count("/") > 1:
        errs.append(field_invalid(f"{path}.apiVersion", version, f"unexpected GroupVersion string: {version}"))
    elif version != "/":
        group, _, ver = version.rpartition("/")
        if group:
            problems = is_dns1123_subdomain(group)
            if problems:
                errs.append(field_invalid(f"{path}.apiVersion", group, ",".join(problems)))
        if not ver:
            errs.append(field_invalid(f"{path}.apiVersion", version, "version must be specified"))
        elif is_dns1035_label(ver):
            errs.append(field_invalid(f"{path}.apiVersion", ver, ",".join(is_dns1035_label(ver))))
    kind = _s(pk.get("kind"))
    if not kind:
        errs.append(field_required(f"{path}.kind"))
    elif is_dns1035_label(kind.lower()):
        errs.append(field_invalid(f"{path}.kind", kind, "may have mixed case, but should otherwise match: "
                                  + ",".join(is_dns1035_label(kind.lower()))))
    return errs


def _mutation(m: Obj, path: str) -> list[Cause]:
    patch_type = m.get("patchType")
    if not patch_type:
        return [field_required(f"{path}.patchType")]
    errs: list[Cause] = []
    if patch_type not in _PATCH_TYPES:
        return [field_not_supported(f"{path}.patchType", patch_type, _PATCH_TYPES)]
    field, other = ("jsonPatch", "applyConfiguration") if patch_type == "JSONPatch" else \
        ("applyConfiguration", "jsonPatch")
    if m.get(field) is None:
        errs.append(field_required(f"{path}.{field}", f"must be specified when patchType is {patch_type}"))
    elif not _s(_d(m[field]).get("expression")).strip():
        errs.append(field_required(f"{path}.{field}.expression"))
    if m.get(other) is not None:
        errs.append(field_invalid(f"{path}.{other}", "{" + other + "}",
                                  f"must not be specified when patchType is {patch_type}"))
    return errs


def _mutating_policy_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(field_required("spec.failurePolicy"))
    elif failure not in _FAILURE:
        errs.append(field_not_supported("spec.failurePolicy", failure, _FAILURE))
    if spec.get("paramKind") is not None:
        errs += _param_kind(spec["paramKind"], "spec.paramKind")
    match = spec.get("matchConstraints")
    if not isinstance(match, dict):
        errs.append(field_required("spec.matchConstraints"))
    else:
        errs += _mutating_match_resources(match, "spec.matchConstraints")
        if not _l(match.get("resourceRules")):
            errs.append(field_required("spec.matchConstraints.resourceRules"))
        errs += _mutating_operations(match.get("resourceRules"), "spec.matchConstraints.resourceRules.operations")
    conditions = _l(spec.get("matchConditions"))
    if len(conditions) > 64:
        errs.append(field_too_many("spec.matchConditions", len(conditions), 64))
    names: set[str] = set()
    for i, mc in enumerate(conditions):
        mc, p = _d(mc), f"spec.matchConditions[{i}]"
        if not _s(mc.get("expression")).strip():
            errs.append(field_required(f"{p}.expression"))
        name = _s(mc.get("name"))
        if not name:
            errs.append(field_required(f"{p}.name"))
            continue
        errs += [field_invalid(f"{p}.name", name, msg) for msg in is_qualified_name(name)]
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        names.add(name)
    for i, var in enumerate(_l(spec.get("variables"))):
        var, p = _d(var), f"spec.variables[{i}]"
        name = _s(var.get("name"))
        if not name.strip():
            errs.append(field_required(f"{p}.name", "name is not specified"))
        elif not _CEL_IDENT.match(name) or name in _CEL_RESERVED:
            errs.append(field_invalid(f"{p}.name", name, "must be a valid CEL identifier"))
        if not _s(var.get("expression")).strip():
            errs.append(field_required(f"{p}.expression", "expression is not specified"))
    mutations = _l(spec.get("mutations"))
    if not mutations:
        errs.append(field_required("spec.mutations", "mutations must contain at least one item"))
    for i, m in enumerate(mutations):
        errs += _mutation(_d(m), f"spec.mutations[{i}]")
    reinvocation = spec.get("reinvocationPolicy")
    if not reinvocation:
        errs.append(field_required("spec.reinvocationPolicy"))
    elif reinvocation not in _REINVOCATION:
        errs.append(field_not_supported("spec.reinvocationPolicy", reinvocation, _REINVOCATION))
    return errs


@unique_causes
def validate_mutating_admission_policy(obj: Obj) -> list[Cause]:
    return _mutating_policy_spec(_d(obj.get("spec")))


@unique_causes
def validate_mutating_admission_policy_update(new: Obj, old: Obj) -> list[Cause]:
    return _mutating_policy_spec(_d(new.get("spec")))


def _param_ref(param_ref: object, path: str) -> list[Cause]:
    pr = _d(param_ref)
    errs: list[Cause] = []
    name, selector = _s(pr.get("name")), pr.get("selector")
    if name:
        errs += [field_invalid(f"{path}.name", name, msg) for msg in _path_segment_name(name)]
        if selector is not None:
            errs.append(field_forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs += _validate_label_selector(selector, f"{path}.selector")
        if name:
            errs.append(field_forbidden(f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(field_required(path, "one of name or selector must be specified"))
    action = pr.get("parameterNotFoundAction")
    if not action:
        errs.append(field_required(f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        errs.append(field_not_supported(f"{path}.parameterNotFoundAction", action, ("Deny", "Allow")))
    return errs


def _path_segment_name(name: str) -> list[str]:
    """IsPathSegmentName."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _mutating_binding_spec(spec: Obj) -> list[Cause]:
    errs: list[Cause] = []
    policy_name = _s(spec.get("policyName"))
    if not policy_name:
        errs.append(field_required("spec.policyName"))
    else:
        errs += [field_invalid("spec.policyName", policy_name, msg) for msg in is_dns1123_subdomain(policy_name)]
    if isinstance(spec.get("paramRef"), dict):
        errs += _param_ref(spec["paramRef"], "spec.paramRef")
    match = spec.get("matchResources")
    if isinstance(match, dict):
        errs += _mutating_match_resources(match, "spec.matchResources")
        errs += _mutating_operations(match.get("resourceRules"), "spec.matchResources.resourceRules.operations")
    return errs


@unique_causes
def validate_mutating_admission_policy_binding(obj: Obj) -> list[Cause]:
    return _mutating_binding_spec(_d(obj.get("spec")))


@unique_causes
def validate_mutating_admission_policy_binding_update(new: Obj, old: Obj) -> list[Cause]:
    return _mutating_binding_spec(_d(new.get("spec")))
