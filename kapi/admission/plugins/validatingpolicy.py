"""ValidatingAdmissionPolicy (kube's admission/plugin/policy/validating): CEL policies bound to
requests by ValidatingAdmissionPolicyBindings.

For every policy with bindings (from the shared informers; the registry without them) whose
``matchConstraints`` match the request (``kapi.admission.matching``), each binding whose own
``matchResources`` match evaluates the policy once per param its ``paramRef`` selects (none: with
``params`` null; none found: not at all, or a configuration error under parameterNotFoundAction
Deny). A failing validation (or an evaluation error under failurePolicy Fail) goes where the
binding's ``validationActions`` say: Deny refuses the request — 422 (or the code of the validation's
``reason``) ``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied
request: <message>`` — Warn answers with a warning, Audit records the
``validation.policy.admission.k8s.io/validation_failure`` audit annotation. ``auditAnnotations``
become ``<policy>/<key>`` audit annotations. Policies are compiled once per generation; writes of
the policies and bindings themselves are never judged by them, but a policy whose expressions do not
compile is refused as kube's validation refuses it (422, a field error per expression).
"""

from __future__ import annotations

import json
from typing import Any

from kapi import errors
from kapi.admission import cel, matching
from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.admission.policy.generic import ConfigError, PolicySource, collect_params, is_policy_resource, param_resource
from kapi.admission.policy.validating import (DENY, ERROR, EVAL_ERROR, MAX_AUDIT_ANNOTATION_VALUE_LENGTH, PUBLISH,
                                              CompiledPolicy, Decision, compile_errors, compile_policy)
from kapi.object.validation.fields import field_invalid
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]
VALIDATION_FAILURE_KEY = "validation.policy.admission.k8s.io/validation_failure"
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
_STATE = "ValidatingAdmissionPolicy.annotations"


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _go_json(value: Any) -> str:
    """encoding/json's output: compact, with <, > and & escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _rules_outcome(constraints: Obj, a: Attributes, table: Any) -> str:
    """Whether a policy's resourceRules match ``a``'s resource: "direct" (a rule names it, no rule has
    resourceNames and nothing is excluded), "none" (no rule names it or an equivalent one), or "full"
    (decide per request)."""
    rules = constraints.get("resourceRules") or []
    if not rules or constraints.get("excludeResourceRules") or any(r.get("resourceNames") for r in rules):
        return "full"
    if any(matching.rule_matches(r, a) for r in rules):
        return "direct"
    if constraints.get("matchPolicy") == "Exact":
        return "none"
    for res in matching.equivalents(a, table)[1:]:
        if any(matching.rule_matches(r, a, res) for r in rules):
            return "full"
    return "none"


class _Denied:
    __slots__ = ("policy", "binding", "decision")

    def __init__(self, policy: str, binding: str | None, decision: Decision) -> None:
        self.policy = policy
        self.binding = binding
        self.decision = decision


class ValidatingAdmissionPolicy(Plugin):
    name = "ValidatingAdmissionPolicy"

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        self.source = PolicySource(deps.objects, "validatingadmissionpolicies", "validatingadmissionpolicybindings")
        deps.objects.watch("", "namespaces")
        self._compiled: dict[str, tuple[tuple[str, Any], CompiledPolicy]] = {}
        self._namespaces: dict[str, tuple[int, Obj]] = {}

    def compiled(self, policy: Obj) -> CompiledPolicy:
        """The policy compiled, once per generation."""
        md = policy.get("metadata") or {}
        key = (str(md.get("uid") or ""), md.get("generation"), md.get("resourceVersion") if not md.get("generation")
               else None)
        name = _name(policy)
        hit = self._compiled.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
        cp = compile_policy(policy)
        self._compiled[name] = (key, cp)
        if len(self._compiled) > 4 * 1024:
            self._compiled.clear()
        return cp

    async def validate(self, a: Attributes) -> None:
        if is_policy_resource(a):
            if a.plural == "validatingadmissionpolicies" and not a.subresource and isinstance(a.obj, dict) \
                    and a.operation in (CREATE, UPDATE):
                self._check_expressions(a.obj)
            return
        hooks = await self.source.hooks()
        if not hooks:
            return
        table = self.deps.registry.table
        denied: list[_Denied] = []
        decisions_cache: dict[Any, Any] = {}  # kube's caching authorizer: one answer per check per request
        namespace_obj: Obj | None = None
        namespace_read = False

        def config_error(cp: CompiledPolicy, message: str, binding: str | None) -> None:
            if cp.failure_policy == "Ignore":
                return
            prefix = "failed to configure binding: " if binding is not None else "failed to configure policy: "
            if cp.failure_policy != "Fail":
                unknown = f"unrecognized failure policy: '{cp.failure_policy}'"
                denied.append(_Denied(cp.name, binding, Decision(DENY, EVAL_ERROR, unknown)))
                return
            denied.append(_Denied(cp.name, binding, Decision(DENY, EVAL_ERROR, prefix + message)))

        for policy, bindings in hooks:
            cp = self.compiled(policy)
            spec = policy.get("spec") or {}
            constraints = spec.get("matchConstraints")
            if constraints is None:
                continue  # "policy contained no match constraints, a required field": kube skips it
            rules = self._rules(cp, constraints, a, table)
            if rules is None:
                continue
            try:
                matches, matched = await matching.match_resources(rules, a, self.deps.objects, table)
            except errors.StatusError:
                continue  # kube's validating dispatcher drops the definition's match error
            if not matches or matched is None:
                continue
            try:
                obj, old = await matching.versioned(a, matched)
            except errors.StatusError as exc:
                config_error(cp, f"failed to convert object version: {exc.message}", None)
                continue
            pres = None
            if cp.param_kind is not None:
                try:
                    pres = param_resource(table, cp.param_kind)
                except ConfigError as exc:
                    config_error(cp, exc.message, None)
                    continue
            kind = matching.kind_for(matched, a)
            collected: dict[str, list[str]] = {}
            for binding in bindings:
                bname = _name(binding)
                bspec = binding.get("spec") or {}
                mr = bspec.get("matchResources")
                if mr is not None:
                    try:
                        bmatches, _ = await matching.match_resources(mr, a, self.deps.objects, table)
                    except errors.StatusError as exc:
                        config_error(cp, exc.message, bname)
                        continue
                    if not bmatches:
                        continue
                try:
                    params = await collect_params(self.deps.objects, cp.param_kind, pres, bspec.get("paramRef"),
                                                  a.namespace)
                except ConfigError as exc:
                    config_error(cp, exc.message, bname)
                    continue
                if not params:
                    continue
                if not namespace_read:
                    namespace_read = True
                    ns_name = a.namespace
                    if a.gvk == ("", "v1", "Namespace"):
                        ns_name = ""  # kube: a Namespace request carries its own name as namespace
                    if ns_name:
                        namespace_obj = await self._namespace(ns_name)
                actions = [str(x) for x in bspec.get("validationActions") or ()]
                for param in params:
                    authz = cel.authorizer_value(self.deps.access, a.user, a)
                    act = cel.activation(a, params=param, namespace_obj=namespace_obj, authorizer=authz,
                                         variables=cp.variables, matched=matched, matched_kind=kind, obj=obj,
                                         old=old, versioned=True)
                    act.decisions = decisions_cache
                    def plain(param: Any = param) -> cel.Activation:
                        return cel.activation(a, params=param, namespace_obj=namespace_obj, variables=cp.variables,
                                              matched=matched, matched_kind=kind, obj=obj, old=old, versioned=True)
                    result = await cp.validate(act, plain)
                    for i, d in enumerate(result.decisions):
                        if d.action != DENY:
                            continue
                        for action in actions:
                            if action == "Deny":
                                denied.append(_Denied(cp.name, bname, d))
                            elif action == "Audit":
                                self._audit_failure(a, binding, i, d, actions)
                            elif action == "Warn":
                                a.warn(f"Validation failed for ValidatingAdmissionPolicy '{cp.name}' with binding "
                                       f"'{bname}': {d.message}")
                    for ann in result.audit_annotations:
                        if ann.action == PUBLISH:
                            value = ann.value[:MAX_AUDIT_ANNOTATION_VALUE_LENGTH]
                            values = collected.setdefault(ann.key, [])
                            if value not in values:
                                values.append(value)
                        elif ann.action == ERROR:
                            denied.append(_Denied(cp.name, bname, Decision(DENY, EVAL_ERROR, ann.error)))
            for key, values in collected.items():
                self._annotate(a, f"{cp.name}/{key}", values[0] if len(values) == 1 else ", ".join(values))
        if denied:
            raise self._error(a, denied[0])

    def _rules(self, cp: CompiledPolicy, constraints: Obj, a: Attributes, table: Any) -> Obj | None:
        """The constraints to match ``a`` with, None when their resource rules cannot match it (known
        per request resource, so most requests skip the selectors and equivalents). A request its own
        resource matches directly, with no exclusions, needs no equivalents: matchPolicy Exact gives the same."""
        key = (a.operation, a.group, a.version, a.plural, a.subresource)
        hit = cp.rule_cache.get(key)
        if hit is None:
            hit = _rules_outcome(constraints, a, table)
            if len(cp.rule_cache) > 1024:
                cp.rule_cache.clear()
            cp.rule_cache[key] = hit
        if hit == "none":
            return None
        if hit == "direct":
            return {**constraints, "matchPolicy": "Exact"}
        return constraints

    async def _namespace(self, name: str) -> Obj:
        """The request's namespace, decoded once per resourceVersion; NotFound when it does not exist."""
        inf = self.deps.objects.watch("", "namespaces")
        item = inf.item("", name) if inf is not None and inf.has_synced else None
        if item is not None:
            hit = self._namespaces.get(name)
            if hit is not None and hit[0] == item.resource_version:
                return hit[1]
            obj = item.object()
            if len(self._namespaces) > 4096:
                self._namespaces.clear()
            self._namespaces[name] = (item.resource_version, obj)
            return obj
        found = await self.deps.objects.get("", "namespaces", "", name)
        if found is None:
            raise errors.not_found("namespaces", "", name)
        return found

    @staticmethod
    def _check_expressions(policy: Obj) -> None:
        """kube's validation of a policy's CEL: an expression that does not compile (or returns the wrong
        type) is refused, 422 ``spec.validations[0].expression: Invalid value: "...": compilation failed: ...``."""
        problems = compile_errors(policy)
        if problems:
            raise errors.invalid("ValidatingAdmissionPolicy", "admissionregistration.k8s.io", _name(policy),
                                 [field_invalid(path, expr, detail) for path, expr, detail in problems])

    def _annotate(self, a: Attributes, key: str, value: str) -> None:
        """kube's AddAnnotation: a key once set keeps its first value."""
        seen = a.plugin_state.setdefault(_STATE, {})
        if key in seen:
            return
        seen[key] = value
        a.annotate(key, value)

    def _audit_failure(self, a: Attributes, binding: Obj, index: int, d: Decision, actions: list[str]) -> None:
        bspec = binding.get("spec") or {}
        value = _go_json([{"message": d.message, "policy": str(bspec.get("policyName") or ""),
                           "binding": _name(binding), "expressionIndex": index, "validationActions": actions}])
        self._annotate(a, VALIDATION_FAILURE_KEY, value)

    @staticmethod
    def _error(a: Attributes, d: _Denied) -> errors.StatusError:
        if d.binding is not None:
            message = (f"ValidatingAdmissionPolicy '{d.policy}' with binding '{d.binding}' denied request: "
                       f"{d.decision.message}")
        else:
            message = f"ValidatingAdmissionPolicy '{d.policy}' denied request: {d.decision.message}"
        err = forbidden(a, message, causes=[errors.Cause(message=message)])
        reason = d.decision.reason or "Invalid"
        err.reason = reason
        err.code = _CODES.get(reason, 422)
        return err

