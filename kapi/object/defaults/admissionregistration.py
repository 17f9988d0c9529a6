"""admissionregistration.k8s.io/v1 defaults (kube's pkg/apis/admissionregistration/v1/defaults.go)."""

from __future__ import annotations

from typing import Any

from kapi.object.defaults.fields import Obj, defaulter


def _rules(rules: Any) -> None:
    for rule in rules if isinstance(rules, list) else []:
        if isinstance(rule, dict) and rule.get("scope") is None:
            rule["scope"] = "*"


def _match_resources(match: Any) -> None:
    """SetDefaults_MatchResources: Equivalent, empty selectors, rule scopes."""
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    _rules(match.get("resourceRules"))
    _rules(match.get("excludeResourceRules"))


def _webhook(hook: Obj, mutating: bool) -> None:
    if hook.get("failurePolicy") is None:
        hook["failurePolicy"] = "Fail"
    if hook.get("matchPolicy") is None:
        hook["matchPolicy"] = "Equivalent"
    if hook.get("namespaceSelector") is None:
        hook["namespaceSelector"] = {}
    if hook.get("objectSelector") is None:
        hook["objectSelector"] = {}
    if hook.get("timeoutSeconds") is None:
        hook["timeoutSeconds"] = 10
    if mutating and hook.get("reinvocationPolicy") is None:
        hook["reinvocationPolicy"] = "Never"
    _rules(hook.get("rules"))
    service = (hook.get("clientConfig") or {}).get("service") if isinstance(hook.get("clientConfig"), dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


@defaulter
def default_validating_webhook_configuration(obj: Obj, old: Obj | None) -> None:
    for hook in obj.get("webhooks") or []:
        if isinstance(hook, dict):
            _webhook(hook, mutating=False)


@defaulter
def default_mutating_webhook_configuration(obj: Obj, old: Obj | None) -> None:
    for hook in obj.get("webhooks") or []:
        if isinstance(hook, dict):
            _webhook(hook, mutating=True)


@defaulter
def default_validating_admission_policy(obj: Obj, old: Obj | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("failurePolicy") is None:
        spec["failurePolicy"] = "Fail"
    _match_resources(spec.get("matchConstraints"))


@defaulter
def default_validating_admission_policy_binding(obj: Obj, old: Obj | None) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    _match_resources(spec.get("matchResources"))
    param_ref = spec.get("paramRef")
    if isinstance(param_ref, dict) and param_ref.get("parameterNotFoundAction") is None:
        param_ref["parameterNotFoundAction"] = "Deny"


# ------------------------------------------------ MutatingAdmissionPolicy (v1beta1 and v1alpha1)


# kube's SetDefaults_MutatingAdmissionPolicySpec and ..._BindingSpec are ValidatingAdmissionPolicy's:
# failurePolicy Fail, the MatchResources defaults, paramRef's parameterNotFoundAction Deny.
default_mutating_admission_policy = default_validating_admission_policy
default_mutating_admission_policy_binding = default_validating_admission_policy_binding
