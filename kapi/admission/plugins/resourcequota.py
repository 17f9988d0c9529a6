"""ResourceQuota (kube's apiserver/pkg/admission/plugin/resourcequota): writes within the namespace's quotas.

A create (and for services and persistentvolumeclaims an update, for pods a resize) is measured by
its resource's evaluator (``kapi.admission.quota``) and checked against every quota of the
namespace it falls in (the quota limits something the evaluator measures, and the object is in
all its scopes): a pod without the cpu or memory a quota limits is refused ("failed quota: q: must
specify ..."), a quota whose status does not yet say what is used refuses ("status unknown for
quota"), and a write that would take usage past ``status.hard`` is refused with kube's "exceeded
quota: q, requested: ..., used: ..., limited: ..."; all 403. An admitted write is charged at once:
the quota's ``status.used`` is written with its resourceVersion (optimistic concurrency; on a
conflict the quota is read again and the request checked again, three times, as kube). Dry-run
requests are checked but not charged. The ResourceQuota controller (kapi.controllers.resourcequota)
recalculates usage from the objects themselves: what admission charged for a write that then
failed is given back there.

A namespace's requests are checked in batches, one batch at a time, as kube's evaluator works
them: each request against the quotas as those before it in the batch left them, then each changed
quota written once for the whole batch; so two creates cannot both take the last unit, and
concurrent creates cost one quota write per batch, not one each. A request waits at most 10 s for
its batch (500 "resource quota evaluation timed out" after). The quotas come from the shared informer;
the status this plugin wrote last is used when the informer has not caught up with it yet (kube's
updatedQuotas cache). The configuration (``ResourceQuotaConfiguration``, apiserver.config.k8s.io/v1,
from --admission-control-config-file) may name ``limitedResources``: resources whose consumption
needs a covering quota ("insufficient quota to consume: ...", "insufficient quota to match these
scopes: ...").
"""

from __future__ import annotations

from typing import Any

import trio

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.admission.quota.evaluators import Evaluator, Evaluators, scope_selectors
from kapi.admission.quota.resources import (ResourceList, add, equals, less_than_or_equal, mask, negative,
                                            parse_list, pretty_print, pretty_print_names, remove_zeros, render,
                                            subtract_non_negative)
from kapi.registry.admit import CREATE, UPDATE
from kapi.registry.store import WriteOptions

Obj = dict[str, Any]
RETRIES = 3  # quota status writes tried again after a conflict (kube's checkQuotas)
BATCH_TIMEOUT_S = 10.0  # a request waits this long for its quota check (kube's evaluation timeout)


class QuotaRefused(Exception):
    """A request a quota refuses (carries the error to answer with)."""

    def __init__(self, error: errors.StatusError) -> None:
        super().__init__(error.message)
        self.error = error


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _status_lists(quota: Obj) -> tuple[ResourceList, ResourceList]:
    status = quota.get("status") or {}
    return parse_list(status.get("hard")), parse_list(status.get("used"))


def _go_requirement(req: Obj) -> str:
    """A ScopedResourceSelectorRequirement as Go's %v prints it."""
    return f"{{{req.get('scopeName', '')} {req.get('operator', '')} [{' '.join(req.get('values') or [])}]}}"


def check_request(quotas: list[Obj], a: Attributes, evaluator: Evaluator,
                  limited: list[Obj] | None = None) -> list[Obj]:
    """kube's CheckRequest: the quotas as they would be with this request charged (copies; the ones
    unchanged are the same objects). Raises ``QuotaRefused``."""
    if not evaluator.handles(a.operation, a.subresource):
        return quotas
    obj = a.obj or {}
    limited = limited or []
    mine = [lr for lr in limited if (lr.get("apiGroup") or "") == a.group and lr.get("resource") == a.plural]
    limited_scopes = [sel for lr in limited for sel in (lr.get("matchScopes") or ())
                      if isinstance(sel, dict) and evaluator.matches_scope(sel, obj)]
    limited_names: set[str] = set()
    if mine:
        usage = evaluator.usage(obj)
        for lr in mine:
            for key, value in usage.items():
                if value.value > 0 and any(c in key for c in lr.get("matchContains") or ()):
                    limited_names.add(key)

    interesting: list[int] = []
    restricted_names: set[str] = set()
    restricted_scopes: list[Obj] = []
    for i, q in enumerate(quotas):
        selectors = scope_selectors(q)
        restricted_scopes += [sel for sel in selectors if evaluator.matches_scope(sel, obj)]
        if not evaluator.matches(q, obj):
            continue
        hard, used = _status_lists(q)
        restricted = evaluator.matching_resources(hard)
        name = q["metadata"]["name"]
        problem = evaluator.constraints(restricted, obj)
        if problem:
            raise QuotaRefused(forbidden(a, f"failed quota: {name}: {problem}"))
        if any(r not in used for r in restricted if r in hard):
            raise QuotaRefused(forbidden(a, f"status unknown for quota: {name}, resources: "
                                            f"{pretty_print_names(restricted)}"))
        interesting.append(i)
        restricted_names.update(restricted)

    input_usage = evaluator.usage(obj)
    bad = negative(input_usage)
    if bad:
        raise QuotaRefused(forbidden(a, f"quota usage is negative for resource(s): {pretty_print_names(bad)}"))
    deltas: dict[int, ResourceList] = {i: input_usage for i in interesting}
    delta_no_quota: ResourceList = input_usage if a.operation == CREATE and not interesting else {}
    if a.operation == UPDATE:
        old = a.old
        if old is None:
            raise QuotaRefused(forbidden(a, "unable to get previous usage since prior version of object was not found"))
        if (old.get("metadata") or {}).get("resourceVersion"):
            delta = subtract_non_negative(input_usage, evaluator.usage(old))
            if not interesting:
                delta_no_quota = delta
            for i in interesting:
                if evaluator.matches(quotas[i], old):
                    deltas[i] = delta
        elif not interesting:
            delta_no_quota = input_usage
    deltas = {i: d for i, d in ((i, remove_zeros(d)) for i, d in deltas.items()) if d}
    if interesting:
        if not deltas:
            return quotas
    elif not remove_zeros(delta_no_quota):
        return quotas

    uncovered = sorted(limited_names - restricted_names)
    if uncovered:
        raise QuotaRefused(forbidden(a, f"insufficient quota to consume: {','.join(uncovered)}"))
    covered = {sel.get("scopeName") for sel in restricted_scopes}
    scopes_uncovered = [sel for sel in limited_scopes if sel.get("scopeName") not in covered]
    if scopes_uncovered:
        raise QuotaRefused(errors.StatusError("insufficient quota to match these scopes: "
                                              f"[{' '.join(_go_requirement(s) for s in scopes_uncovered)}]",
                                              reason=""))
    if not interesting:
        return quotas

    out = list(quotas)
    for i in interesting:
        delta = deltas.get(i)
        if delta is None:
            continue
        q = quotas[i]
        hard, used = _status_lists(q)
        requested = mask(delta, hard)
        new_used = add(used, requested)
        if a.subresource != "status":
            allowed, exceeded = less_than_or_equal(mask(new_used, requested), hard)
            if not allowed:
                raise QuotaRefused(forbidden(
                    a, f"exceeded quota: {q['metadata']['name']}, "
                       f"requested: {pretty_print(mask(requested, exceeded))}, "
                       f"used: {pretty_print(mask(used, exceeded))}, limited: {pretty_print(mask(hard, exceeded))}"))
        copy = {**q, "metadata": dict(q["metadata"]), "status": {**(q.get("status") or {}), "used": render(new_used)}}
        out[i] = copy
    return out


_CONFIG_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1",
                    "resourcequota.admission.k8s.io/v1beta1", "resourcequota.admission.k8s.io/v1alpha1")


def _limited_resources(config: Obj) -> list[Obj]:
    """The ``limitedResources`` of a ResourceQuotaConfiguration, checked as kube's ValidateConfiguration
    (a wrong one stops the server: ``AdmissionConfigError``)."""
    from kapi.admission.chain import AdmissionConfigError

    if not config:
        return []
    if config.get("kind") != "ResourceQuotaConfiguration" or config.get("apiVersion") not in _CONFIG_VERSIONS:
        raise AdmissionConfigError(f"ResourceQuota: unexpected configuration {config.get('apiVersion')!r}, "
                                   f"kind {config.get('kind')!r} (want ResourceQuotaConfiguration, "
                                   "apiserver.config.k8s.io/v1)")
    entries = config.get("limitedResources") or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise AdmissionConfigError("ResourceQuota: limitedResources: must be a list of objects")
    problems = [f"limitedResources[{i}].resource: Required value" for i, e in enumerate(entries)
                if not e.get("resource")]
    if problems:
        raise AdmissionConfigError(", ".join(problems) if len(problems) == 1 else f"[{', '.join(problems)}]")
    return entries


class _Waiter:
    """One request waiting for its namespace's batch (kube's admissionWaiter); ``result`` None: admitted."""

    __slots__ = ("a", "evaluator", "done", "result")

    def __init__(self, a: Attributes, evaluator: Evaluator) -> None:
        self.a = a
        self.evaluator = evaluator
        self.done = trio.Event()
        self.result: errors.StatusError | None | object = _UNDECIDED


_UNDECIDED = object()  # kube's defaultDeny: not yet decided (a batch cut short leaves it so)


def _used(quota: Obj) -> ResourceList:
    return parse_list((quota.get("status") or {}).get("used"))


class ResourceQuota(Plugin):
    name = "ResourceQuota"
    operations = frozenset((CREATE, UPDATE))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch("", "resourcequotas")
        self.evaluators = Evaluators()
        self.limited = _limited_resources(deps.configuration.get(self.name) or {})
        # Each namespace's requests waiting for a batch, and the namespaces a batch is being worked in
        # (its event set when it is done)
        self._work: dict[str, list[_Waiter]] = {}
        self._busy: dict[str, trio.Event] = {}
        # The quotas this plugin wrote last, by (namespace, name): newer than the informer's for a moment.
        self._written: dict[tuple[str, str], Obj] = {}

    def interested(self, operation: str, group: str, resource: str) -> bool:
        if operation not in self.operations:
            return False
        evaluator = self.evaluators.get(group, resource)
        return evaluator is not None and (evaluator.handles(operation, "") or
                                          evaluator.handles(operation, "resize"))

    async def validate(self, a: Attributes) -> None:
        if a.subresource and not (a.group == "" and a.plural == "pods" and a.subresource == "resize"):
            return
        if not a.namespace:
            return
        evaluator = self.evaluators.get(a.group, a.plural)
        if evaluator is None or not evaluator.handles(a.operation, a.subresource):
            return
        if not self.limited and not await self._quotas(a.namespace):
            return
        if a.obj is not None and not (a.obj.get("metadata") or {}).get("namespace"):
            a.obj.setdefault("metadata", {})["namespace"] = a.namespace
        waiter = _Waiter(a, evaluator)
        await self._evaluate(a.namespace, waiter)
        if waiter.result is _UNDECIDED:
            raise errors.InternalError("Internal error occurred: resource quota evaluation timed out",
                                       causes=[errors.Cause(message="resource quota evaluation timed out")])
        if isinstance(waiter.result, errors.StatusError):
            raise waiter.result

    async def _evaluate(self, namespace: str, waiter: _Waiter) -> None:
        """kube's quota evaluator: a namespace's requests are checked in batches, one batch at a time;
        the requests that came while one was worked make the next, worked by the first of them to
        run. A batch runs to its end (at most ``BATCH_TIMEOUT_S``) even if its worker's request is
        cancelled: the others wait for it."""
        queue = self._work.setdefault(namespace, [])
        queue.append(waiter)
        try:
            while not waiter.done.is_set():
                busy = self._busy.get(namespace)
                if busy is not None:
                    await busy.wait()
                    continue
                busy = self._busy[namespace] = trio.Event()
                batch = self._work.pop(namespace, [])
                try:
                    with trio.CancelScope(shield=True) as scope:
                        scope.deadline = trio.current_time() + BATCH_TIMEOUT_S
                        try:
                            await self._check_batch(namespace, batch)
                        except errors.KapiError as exc:  # reading or writing quotas failed: so do they all
                            failure = exc if isinstance(exc, errors.StatusError) else \
                                errors.InternalError(f"Internal error occurred: {exc}")
                            for w in batch:
                                if w.result is _UNDECIDED:
                                    w.result = failure
                finally:
                    for w in batch:
                        w.done.set()
                    del self._busy[namespace]
                    busy.set()
        finally:
            if not waiter.done.is_set():  # cancelled while waiting: it must not be charged later
                pending = self._work.get(namespace)
                if pending is not None and waiter in pending:
                    pending.remove(waiter)
                    if not pending:
                        del self._work[namespace]

    async def _quotas(self, namespace: str) -> list[Obj]:
        quotas = await self.deps.objects.list("", "resourcequotas", namespace)
        out = []
        for q in quotas:
            written = self._written.get((namespace, q["metadata"]["name"]))
            if written is not None:
                if _rv(written) > _rv(q) and written["metadata"].get("uid") == q["metadata"].get("uid"):
                    q = written
                else:
                    self._written.pop((namespace, q["metadata"]["name"]), None)
            out.append(q)
        return out

    async def _check_batch(self, namespace: str, batch: list[_Waiter]) -> None:
        """kube's checkAttributes."""
        quotas = await self._quotas(namespace)
        if not quotas and not self.limited:
            for w in batch:
                w.result = None
            return
        await self._check_quotas(namespace, quotas, batch, RETRIES)

    async def _check_quotas(self, namespace: str, quotas: list[Obj], batch: list[_Waiter], retries: int) -> None:
        """kube's checkQuotas: each request checked against the running quotas (what those before it in
        the batch took counted), then each changed quota written once; the quotas whose write
        conflicted are read again and the batch checked against them again."""
        originals = quotas
        changed = False
        for w in batch:
            try:
                updated = check_request(quotas, w.a, w.evaluator, self.limited)
            except QuotaRefused as refused:
                w.result = refused.error
                continue
            if w.a.dry_run:  # checked, never charged
                w.result = None
                continue
            if all(equals(_used(before), _used(after)) for before, after in zip(quotas, updated)):
                w.result = None
            else:
                changed = True
            quotas = updated
        if not changed:
            return
        res = self.deps.objects.resource("", "resourcequotas")
        assert res is not None
        failed: list[str] = []
        last: errors.StatusError | None = None
        for before, after in zip(originals, quotas):
            if equals(_used(before), _used(after)):
                continue
            md = after["metadata"]
            try:
                written, _ = await self.deps.registry.update(res, namespace, md["name"], after, WriteOptions(),
                                                             subresource="status")
            except (errors.Conflict, errors.Invalid) as exc:
                failed.append(md["name"])
                last = exc
                continue
            except errors.NotFound:
                continue  # gone meanwhile: it limits nothing any more
            self._written[(namespace, md["name"])] = written
        if not failed:
            for w in batch:
                if w.result is _UNDECIDED:
                    w.result = None
            return
        if retries <= 0:
            for w in batch:
                if w.result is _UNDECIDED:
                    w.result = last
            return
        fresh = []  # the quotas whose write failed, read again from storage
        for name in failed:
            try:
                fresh.append(await self.deps.registry.get(res, namespace, name))
            except errors.NotFound:
                pass
        # Only the requests still waiting for a write are checked again (kube checks the whole batch
        # again, which could admit one refused by a quota whose write did not conflict).
        await self._check_quotas(namespace, fresh, [w for w in batch if w.result is _UNDECIDED], retries - 1)


__all__ = ["QuotaRefused", "ResourceQuota", "check_request"]
