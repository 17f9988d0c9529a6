"""Which webhooks a request goes to, and calling them: mutating ones in order (with reinvocation),
validating ones in parallel (kube's ``generic.Webhook.ShouldCallHook`` and the mutating and
validating dispatchers).

A webhook is called when its namespaceSelector and objectSelector match, one of its rules matches
(the request's resource, or under matchPolicy Equivalent the same objects at another version:
the webhook then sees them converted to it) and its matchConditions hold. A selector that cannot
be evaluated (a missing namespace: 404; a bad selector: 500) fails the request only when the
rules match. A matchCondition that fails to evaluate, with failurePolicy Fail, refuses the
request (403); with Ignore the webhook is skipped.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import trio

from kapi import errors
from kapi.admission import cel
from kapi.admission.matching import (convert, is_exempt, kind_for, namespace_matches, object_matches, versioned,
                                     webhook_rules_match)
from kapi.admission.plugin import Attributes, PluginDeps
from kapi.admission.webhook.call import (CallingError, Rejection, call, decode_patch, go_json, internal_error,
                                         to_status_error)
from kapi.admission.webhook.metrics import APISERVER_INTERNAL_ERROR, CALLING_WEBHOOK_ERROR, NO_ERROR, WebhookMetrics
from kapi.admission.webhook.source import Hook, HookSource
from kapi.object.patch import apply_json_patch
from kapi.registry.resources import Resource

Obj = dict[str, Any]
log = logging.getLogger(__name__)

MUTATION_PREFIX = "mutation.webhook.admission.k8s.io/"
PATCH_PREFIX = "patch.webhook.admission.k8s.io/"
MUTATION_FAILED_OPEN_PREFIX = "failed-open." + MUTATION_PREFIX
VALIDATING_FAILED_OPEN_PREFIX = "failed-open.validating.webhook.admission.k8s.io/"


@dataclass
class Invocation:
    """A webhook to call, and the resource and kind it matched (kube's WebhookInvocation)."""

    hook: Hook
    resource: Resource
    kind: tuple[str, str, str]


async def _conditions_hold(hook: Hook, a: Attributes, deps: PluginDeps, matched: Resource,
                           kind: tuple[str, str, str]) -> bool:
    """kube's matchconditions matcher: False as soon as one condition is false; errors (with none
    false) fail the request under failurePolicy Fail, skip the webhook under Ignore."""
    obj, old = await versioned(a, matched)
    act = cel.activation(a, matched=matched, matched_kind=kind, obj=obj, old=old, versioned=True,
                         authorizer=cel.authorizer_value(deps.access, a.user, a))
    budget = cel.Budget(cel.RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)
    failures: list[str] = []
    fail = hook.failure_policy != "Ignore"
    for _, compiled in hook.conditions:
        if not isinstance(compiled, cel.Compiled):
            failures.append(f"compilation error: {compiled.message}")
            continue
        try:
            value = await compiled.evaluate_async(act, budget)
        except cel.OutOfBudget as exc:
            if fail:
                raise _condition_error(a, exc.message) from None
            return False
        except cel.CelError as exc:
            failures.append(exc.message)
            continue
        if value is False:
            return False
    if failures:
        if fail:
            raise _condition_error(a, errors.aggregate_messages(failures))
        return False
    return True


def _condition_error(a: Attributes, text: str) -> errors.Forbidden:
    """kube's ``apierrors.NewForbidden(resource, name, err)`` for match conditions that failed (the
    request's name: none for a create with generateName)."""
    who = f"{a.resource.qualified} {_q(a.name)}" if a.name else a.resource.qualified
    return errors.Forbidden(f"{who} is forbidden: {text}", name=a.name, group=a.group, kind=a.plural)


async def should_call(hook: Hook, a: Attributes, deps: PluginDeps) -> Invocation | None:
    """kube's ShouldCallHook: the invocation of ``hook`` for ``a``, None when it does not apply."""
    ns_err = hook.ns_selector_error
    if ns_err is None:
        try:
            if not await namespace_matches(None, a, deps.objects, parsed=hook.ns_selector):
                return None
        except errors.StatusError as exc:
            ns_err = exc
    obj_err = hook.obj_selector_error
    if obj_err is None and not object_matches(None, a, parsed=hook.obj_selector):
        return None
    matched = webhook_rules_match(hook.rules, hook.match_policy, a, deps.registry.table)
    if matched is None:
        return None
    if ns_err is not None:
        raise ns_err
    if obj_err is not None:
        raise obj_err
    kind = a.gvk if matched is a.resource else kind_for(matched, a)
    if hook.conditions and not await _conditions_hold(hook, a, deps, matched, kind):
        return None
    return Invocation(hook, matched, kind)


# ----------------------------------------------------------------------------- mutating


@dataclass
class ReinvokeState:
    """kube's webhookReinvokeContext, kept in the request's plugin state between the two rounds."""

    last_output: Any = None
    previously_invoked: set[str] = field(default_factory=set)
    reinvoke: set[str] = field(default_factory=set)

    def require_reinvoking(self) -> None:
        if self.previously_invoked:
            self.reinvoke |= self.previously_invoked
            self.previously_invoked = set()


async def _call_mutating(source: HookSource, inv: Invocation, a: Attributes, round_: int, index: int) -> bool:
    """One mutating call; applies the webhook's patch to ``a.obj``. Whether the object changed."""
    hook = inv.hook
    changed = False
    try:
        obj, old = await versioned(a, inv.resource)
        answer = await call(source, hook, a, inv.resource, inv.kind, obj, old, mutating=True)
        if not answer.patch:
            return False
        ops = decode_patch(hook, answer)
        if not ops:
            return False
        if obj is None:
            raise internal_error(f"admission webhook {_q(hook.name)} attempted to modify the object, which is not "
                                 f"supported for this operation")
        if answer.patch_type != "JSONPatch":
            raise CallingError(hook.name, f"unsupported patch type {_q(answer.patch_type)}",
                               to_status_error(hook.name, answer.result))
        try:
            patched = apply_json_patch(obj, ops)
        except errors.StatusError as exc:
            raise internal_error(str(exc.__cause__) if exc.__cause__ is not None else exc.message) from None
        if not isinstance(patched, dict):
            raise internal_error("json: cannot unmarshal the patched object into an object")
        changed = patched != obj
        a.annotate(f"{PATCH_PREFIX}round_{round_}_index_{index}", go_json(
            {"configuration": hook.configuration, "webhook": hook.name,
             "patch": [{k: op[k] for k in sorted(op)} for op in ops], "patchType": "JSONPatch"}))
        if changed:
            a.obj = await convert(inv.resource, a.resource, patched) if inv.resource is not a.resource else patched
        return changed
    finally:
        a.annotate(f"{MUTATION_PREFIX}round_{round_}_index_{index}", go_json(
            {"configuration": hook.configuration, "webhook": hook.name, "mutated": changed}))


def _q(text: str) -> str:
    from kapi.object.validation.fields import go_quote
    return go_quote(text)


def _observe(metrics: WebhookMetrics | None, kind: str, hook: Hook, a: Attributes, started: float,
             failure: BaseException | None) -> None:
    """kube's ObserveWebhook / ObserveWebhookRejection / ObserveWebhookFailOpen for one call."""
    if metrics is None:
        return
    name, op, took = hook.name, a.operation, time.monotonic() - started
    ignore = hook.failure_policy == "Ignore"
    if failure is None:
        metrics.observe(name, kind, op, took, False, 200)
    elif isinstance(failure, CallingError):
        code = failure.status.code
        if not ignore:
            metrics.rejection(name, kind, op, CALLING_WEBHOOK_ERROR, code)
        else:
            metrics.fail_open(name, kind)
        metrics.observe(name, kind, op, took, not ignore, code)
    elif isinstance(failure, Rejection):
        metrics.rejection(name, kind, op, NO_ERROR, failure.status.code)
        metrics.observe(name, kind, op, took, True, failure.status.code)
    else:
        metrics.rejection(name, kind, op, APISERVER_INTERNAL_ERROR, 0)
        metrics.observe(name, kind, op, took, True, 0)


async def mutate(plugin_name: str, source: HookSource, a: Attributes, deps: PluginDeps,
                 metrics: WebhookMetrics | None = None) -> None:
    """kube's mutating dispatcher: each matching webhook in order; a webhook that changed the
    object makes the chain run again, and the IfNeeded webhooks called before it are called once
    more in that round (as is each one when an earlier plugin changed the object since)."""
    if is_exempt(a):
        return
    hooks = await source.hooks()
    if not hooks:
        return
    state = a.plugin_state.get(plugin_name)
    if not isinstance(state, ReinvokeState):
        state = a.plugin_state[plugin_name] = ReinvokeState()
    if a.is_reinvoke and state.last_output != a.obj:
        state.require_reinvoking()
    try:
        for index, hook in enumerate(hooks):
            inv = await should_call(hook, a, deps)
            if inv is None:
                continue
            if a.is_reinvoke and hook.uid not in state.reinvoke:
                continue
            round_ = 1 if a.is_reinvoke else 0
            failure: Exception | None = None
            changed = False
            started = time.monotonic()
            try:
                changed = await _call_mutating(source, inv, a, round_, index)
            except (CallingError, Rejection, errors.StatusError) as exc:
                failure = exc
            _observe(metrics, "admit", hook, a, started, failure)
            if changed:
                state.require_reinvoking()
                a.reinvoke = True
            if hook.reinvocation_policy == "IfNeeded":
                state.previously_invoked.add(hook.uid)
            if failure is None:
                continue
            if isinstance(failure, CallingError):
                if hook.failure_policy == "Ignore":
                    log.warning("Failed calling webhook, failing open %s: %s", hook.name, failure)
                    a.annotate(f"{MUTATION_FAILED_OPEN_PREFIX}round_{round_}_index_{index}", hook.name)
                    continue
                log.warning("Failed calling webhook, failing closed %s: %s", hook.name, failure)
                raise internal_error(str(failure))
            if isinstance(failure, Rejection):
                raise failure.status
            raise failure
    finally:
        state.last_output = copy.deepcopy(a.obj)


# ----------------------------------------------------------------------------- validating


async def validate(source: HookSource, a: Attributes, deps: PluginDeps, metrics: WebhookMetrics | None = None) -> None:
    """kube's validating dispatcher: the matching webhooks called at once, each bounded by its
    timeout; the first refusal (in the order they come back) refuses the request."""
    if is_exempt(a):
        return
    hooks = await source.hooks()
    if not hooks:
        return
    relevant: list[Invocation] = []
    for hook in hooks:
        inv = await should_call(hook, a, deps)
        if inv is not None:
            relevant.append(inv)
    if not relevant:
        return
    objects: dict[tuple[str, str, str], tuple[Obj | None, Obj | None]] = {}
    for inv in relevant:
        key = (inv.resource.group, inv.resource.version, inv.resource.resource)
        if key not in objects:
            try:
                objects[key] = await versioned(a, inv.resource)
            except errors.StatusError:
                raise
            except Exception as exc:
                raise internal_error(str(exc)) from exc
    failures: list[errors.StatusError] = []

    async def one(index: int, inv: Invocation) -> None:
        hook = inv.hook
        ignore = hook.failure_policy == "Ignore"
        obj, old = objects[(inv.resource.group, inv.resource.version, inv.resource.resource)]
        started = time.monotonic()
        try:
            await call(source, hook, a, inv.resource, inv.kind, obj, old, mutating=False)
        except CallingError as exc:
            _observe(metrics, "validating", hook, a, started, exc)
            if ignore:
                log.warning("Failed calling webhook, failing open %s: %s", hook.name, exc)
                a.annotate(f"{VALIDATING_FAILED_OPEN_PREFIX}round_0_index_{index}", hook.name)
                return
            log.warning("Failed calling webhook, failing closed %s: %s", hook.name, exc)
            failures.append(internal_error(str(exc)))
        except Rejection as exc:
            _observe(metrics, "validating", hook, a, started, exc)
            failures.append(exc.status)
        except errors.StatusError as exc:
            _observe(metrics, "validating", hook, a, started, exc)
            failures.append(exc)
        except Exception as exc:  # kube's recovered panic
            log.exception("calling webhook %s failed", hook.name)
            if ignore:
                a.annotate(f"{VALIDATING_FAILED_OPEN_PREFIX}round_0_index_{index}", hook.name)
                return
            failures.append(internal_error(f"ValidatingAdmissionWebhook/{hook.name} has panicked: {exc}"))
        else:
            _observe(metrics, "validating", hook, a, started, None)

    if len(relevant) == 1:
        await one(0, relevant[0])
    else:
        async with trio.open_nursery() as nursery:
            for index, inv in enumerate(relevant):
                nursery.start_soon(one, index, inv)
    if failures:
        raise failures[0]
