"""MutatingAdmissionPolicy (kube's admission/plugin/policy/mutating): the policies of
admissionregistration.k8s.io/v1beta1 and their bindings, applied to CREATE, UPDATE and CONNECT
writes (DELETE has no object to mutate).

For each policy whose matchConstraints match the request (matchPolicy Equivalent: at the version
it names), each binding whose matchResources match, and each param its paramRef selects, the
policy's matchConditions are evaluated, then its mutations in order, each on the result of the
one before; the object is re-defaulted after each mutation, as kube's dispatcher does, and converted
back to the request's version. Errors (a mutation that fails, a match condition in error, a binding
whose params are missing) are the policy's failures: with failurePolicy Fail the write is refused
403 with kube's message "policy 'p' with binding 'b' denied request: ..." (reason Invalid for
evaluation errors), with Ignore they are dropped.

reinvocationPolicy IfNeeded (kube's policyReinvokeContext): a policy that changed the object asks
the chain for another round; in it, an IfNeeded policy is invoked again only if the object changed
after it was invoked (by another policy, or by plugins since the last policy invocation).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kapi import errors
from kapi.admission import cel
from kapi.admission.cel import RUNTIME_CEL_COST_BUDGET, Budget
from kapi.admission.matching import convert, kind_for, match_resources, versioned
from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.admission.policy.generic import (ConfigError, PolicySource, collect_params, is_policy_resource,
                                           param_resource)
from kapi.admission.policy.mutating import CompiledPolicy, PatchError, compile_policy, expression_errors
from kapi.object.managedfields.merge import structural_types
from kapi.object.schema import Schema
from kapi.object.structural import Structural
from kapi.object.validation.fields import field_invalid
from kapi.registry.admit import CONNECT, CREATE, UPDATE
from kapi.registry.resources import Resource

Obj = dict[str, Any]
PLUGIN_NAME = "MutatingAdmissionPolicy"
REASON_INVALID = "Invalid"


@dataclass(slots=True)
class _Failure:
    """kube's PolicyError."""

    policy: str
    binding: str | None
    message: str
    fail: bool
    reason: str = ""

    def text(self) -> str:
        if self.binding is not None:
            return f"policy '{self.policy}' with binding '{self.binding}' denied request: {self.message}"
        return f'policy "{self.policy}" denied request: {self.message}'


@dataclass(slots=True)
class _Invocation:
    policy: Obj
    compiled: CompiledPolicy
    binding: Obj
    matched: Resource
    param: Obj | None


@dataclass(slots=True)
class ReinvokeState:
    """kube's policyReinvokeContext: which invocations may run again in the reinvocation round."""

    last_output: Any = None
    previously_invoked: set[tuple[str, ...]] = field(default_factory=set)
    reinvoke: set[tuple[str, ...]] = field(default_factory=set)

    def require_reinvoking_previously_invoked(self) -> None:
        self.reinvoke |= self.previously_invoked
        self.previously_invoked = set()


def _name(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def _key(inv: _Invocation) -> tuple[str, ...]:
    pmd = (inv.param or {}).get("metadata") or {}
    return (_name(inv.policy), _name(inv.binding), str(pmd.get("namespace") or ""), str(pmd.get("name") or ""))


class MutatingAdmissionPolicy(Plugin):
    name = PLUGIN_NAME
    operations = frozenset((CREATE, UPDATE, CONNECT))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        self.source = PolicySource(deps.objects, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings")
        self._compiled: dict[tuple[str, str, Any], CompiledPolicy] = {}
        self._schemas: dict[int, tuple[Structural, Schema, Schema]] = {}
        deps.objects.watch("", "namespaces")

    def schema_for(self, res: Resource) -> Schema:
        """The schema a mutation of ``res`` merges with: the built-in types, and for a custom
        resource its CRD version's structural schema as types (made once per schema)."""
        base = self.deps.registry.schema
        structural = getattr(res.strategy, "schema", None)
        if not isinstance(structural, Structural) or base.type_for(res.group, res.version, res.kind) is not None:
            return base
        hit = self._schemas.get(id(structural))
        if hit is not None and hit[0] is structural and hit[1] is base:
            return hit[2]
        if len(self._schemas) > 256:
            self._schemas.clear()
        extended = base.extended(structural_types(res.group, res.version, res.kind, structural))
        self._schemas[id(structural)] = (structural, base, extended)
        return extended

    def compiled(self, policy: Obj) -> CompiledPolicy:
        """The policy compiled once per generation."""
        md = policy.get("metadata") or {}
        key = (str(md.get("name") or ""), str(md.get("uid") or ""), md.get("generation"))
        found = self._compiled.get(key)
        if found is None:
            if len(self._compiled) > 1000:
                self._compiled.clear()
            found = self._compiled[key] = compile_policy(policy)
        return found

    def changing(self) -> bool:
        return not self.source.idle

    async def validate(self, a: Attributes) -> None:
        """kube's validation of a policy's CEL on its writes: an expression that does not compile (or
        returns the wrong type) is refused, 422 with a field error per expression."""
        if a.plural != "mutatingadmissionpolicies" or a.group != "admissionregistration.k8s.io" or a.subresource \
                or not isinstance(a.obj, dict):
            return
        spec = a.obj.get("spec")
        problems = expression_errors(spec) if isinstance(spec, dict) else []
        if problems:
            raise errors.invalid("MutatingAdmissionPolicy", "admissionregistration.k8s.io", a.name or a.object_name(),
                                 [field_invalid(path, expr, detail) for path, expr, detail in problems])

    async def admit(self, a: Attributes) -> None:
        if is_policy_resource(a):
            return
        hooks = await self.source.hooks()
        if not hooks:
            return
        failures: list[_Failure] = []
        invocations = await self._invocations(a, hooks, failures)
        if invocations:
            await self._dispatch(a, invocations, failures)
        fatal = [f for f in failures if f.fail]
        if fatal:
            messages = [f.text() for f in fatal]
            name = a.object_name()
            raise errors.StatusError(messages[0], code=403, reason=fatal[0].reason or "Forbidden", name=name,
                                     group=a.group, kind=a.plural,
                                     causes=[errors.Cause(message=m) for m in messages])

    async def _invocations(self, a: Attributes, hooks: list[tuple[Obj, list[Obj]]],
                           failures: list[_Failure]) -> list[_Invocation]:
        """kube's policyDispatcher.Dispatch: the (policy, binding, param) invocations that match."""
        objects, table = self.deps.objects, self.deps.registry.table
        out: list[_Invocation] = []
        for policy, bindings in hooks:
            spec = policy.get("spec") or {}
            pname = _name(policy)
            fail = spec.get("failurePolicy", "Fail") != "Ignore"
            try:
                ok, matched = await match_resources(spec.get("matchConstraints") or {}, a, objects, table)
            except errors.StatusError as exc:
                failures.append(_Failure(pname, None, f"failed to configure policy: {exc.message}", fail))
                continue
            if not ok or matched is None:
                continue
            param_kind = spec.get("paramKind")
            param_res = None
            if param_kind is not None:
                try:
                    param_res = param_resource(table, param_kind)
                except ConfigError as exc:
                    failures.append(_Failure(pname, None, f"failed to configure policy: {exc.message}", fail))
                    continue
            compiled = self.compiled(policy)
            for binding in bindings:
                bspec = binding.get("spec") or {}
                bname = _name(binding)
                if bspec.get("matchResources"):
                    try:
                        ok, _ = await match_resources(bspec["matchResources"], a, objects, table)
                    except errors.StatusError as exc:
                        failures.append(_Failure(pname, bname, f"failed to configure binding: {exc.message}", fail))
                        continue
                    if not ok:
                        continue
                try:
                    params = await collect_params(objects, param_kind, param_res, bspec.get("paramRef"), a.namespace)
                except ConfigError as exc:
                    failures.append(_Failure(pname, bname, f"failed to configure binding: {exc.message}", fail))
                    continue
                out.extend(_Invocation(policy, compiled, binding, matched, p) for p in params)
        return out

    async def _namespace(self, a: Attributes) -> Obj | None:
        group, version, kind = a.gvk
        if not a.namespace or (group, version, kind) == ("", "v1", "Namespace"):
            return None
        ns = await self.deps.objects.get("", "namespaces", "", a.namespace)
        if ns is None:
            raise errors.NotFound(f'namespaces "{a.namespace}" not found', name=a.namespace, kind="namespaces")
        return ns

    async def _dispatch(self, a: Attributes, invocations: list[_Invocation], failures: list[_Failure]) -> None:
        """kube's mutating dispatcher: each invocation's matchConditions and mutations, in order."""
        state = a.plugin_state.get(PLUGIN_NAME)
        if not isinstance(state, ReinvokeState):
            state = a.plugin_state[PLUGIN_NAME] = ReinvokeState()
        if a.is_reinvoke and state.last_output != a.obj:
            # plugins reinvoked since the last policy invocation changed the object
            state.require_reinvoking_previously_invoked()
        try:
            namespace = await self._namespace(a)
            authz = cel.authorizer_value(self.deps.access, a.user, a)
            for inv in invocations:
                compiled, matched = inv.compiled, inv.matched
                pname, bname = _name(inv.policy), _name(inv.binding)
                obj, old = await versioned(a, matched)
                if not isinstance(obj, dict):
                    continue  # no object to patch
                kind = kind_for(matched, a)
                schema = self.schema_for(matched) if not a.request.kind[2] else self.deps.registry.schema

                def act_for(current: Obj) -> cel.Activation:
                    return cel.activation(a, params=inv.param, namespace_obj=namespace, authorizer=authz,
                                          variables=compiled.variables, matched=matched, matched_kind=kind,
                                          obj=current, old=old, versioned=True)

                if compiled.match_conditions:
                    error, matches = await compiled.match(act_for(obj))
                    if error is not None:
                        failures.append(_Failure(pname, bname, error, compiled.fail, REASON_INVALID))
                        continue
                    if not matches:
                        continue
                key = _key(inv)
                if a.is_reinvoke and key not in state.reinvoke:
                    continue
                before = obj
                for index in range(len(compiled.mutations)):
                    try:  # each mutation has kube's runtime budget of its own
                        new = await compiled.apply(index, act_for(obj), obj, schema, kind,
                                                   Budget(RUNTIME_CEL_COST_BUDGET))
                    except PatchError as exc:
                        failures.append(_Failure(pname, bname, exc.message, compiled.fail, REASON_INVALID))
                        continue
                    if new is not obj:
                        matched.strategy.default(new, old if isinstance(old, dict) else None)
                    obj = new
                if obj != before:
                    # the object changed: the policies invoked before may need to see it
                    state.require_reinvoking_previously_invoked()
                    a.reinvoke = True
                    # a subresource with a kind of its own (a Scale) is admitted as it is
                    a.obj = obj if a.request.kind[2] else await convert(matched, a.resource, obj)
                if compiled.reinvoke:
                    state.previously_invoked.add(key)
        finally:
            state.last_output = copy.deepcopy(a.obj)
