"""The bootstrap RBAC policy reconciled at start-up, as kube-apiserver's rbac/bootstrap-roles hook.

kube's reconciliation (component-helpers auth/rbac/reconciliation) per object of the policy: a
missing one is created; an existing one gets the policy's labels and annotations merged under its
own (its values win), the rules (roles) or subjects (bindings) it lacks appended, and an aggregated
role the selectors it lacks; nothing is ever removed. A binding whose roleRef differs is deleted
and made anew. An object annotated ``rbac.authorization.kubernetes.io/autoupdate: "false"`` is
left alone. Before that, kube's two migrations: the rules of an old unaggregated admin/edit/view
move to its ``system:aggregate-to-*`` part, and the subjects of the old system:discovery binding
to the new system:public-info-viewer one. Its writes are the apiserver's (``kapi.controllers.writes``):
admitted and audited, as kube's hook writes through the loopback client.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable

from kapi import errors
from kapi.apis import rbacpolicy
from kapi.controllers.writes import Writer, Writes
from kapi.object.rbac.covers import covers
from kapi.registry.deletion import DeleteOptions
from kapi.registry.resources import Resource
from kapi.registry.store import Registry, WriteOptions

__all__ = ["reconcile_bootstrap_policy", "reconcile_role", "reconcile_binding"]

log = logging.getLogger("kapi")
Obj = dict[str, Any]
GROUP = rbacpolicy.RBAC_GROUP
_ATTEMPTS = 3


def _merge(expected: dict[str, str] | None, existing: dict[str, str] | None) -> dict[str, str] | None:
    """kube's merge(expected, existing): the later map's values win; None when both are absent."""
    if expected is None and existing is None:
        return None
    return {**(expected or {}), **(existing or {})}


def _protected(existing: Obj) -> bool:
    return ((existing.get("metadata") or {}).get("annotations") or {}).get(rbacpolicy.AUTOUPDATE) == "false"


def _merge_meta(result: Obj, expected: Obj, existing: Obj) -> bool:
    """Labels and annotations merged into ``result``; whether that changed anything."""
    changed = False
    md, exp_md, old_md = result["metadata"], expected.get("metadata") or {}, existing.get("metadata") or {}
    for key in ("annotations", "labels"):
        merged = _merge(exp_md.get(key), old_md.get(key))
        if (merged or None) != (old_md.get(key) or None):
            changed = True
        if merged is not None:
            md[key] = merged
    return changed


def reconciled_role(existing: Obj, expected: Obj) -> Obj | None:
    """kube's computeReconciledRole without removing extra permissions: the role to store, None when
    ``existing`` needs nothing (or is protected)."""
    if _protected(existing):
        return None
    result = copy.deepcopy(existing)
    changed = _merge_meta(result, expected, existing)
    _, missing = covers(existing.get("rules") or [], expected.get("rules") or [])
    if missing:
        result["rules"] = list(existing.get("rules") or []) + missing
        changed = True
    expected_agg, existing_agg = expected.get("aggregationRule"), existing.get("aggregationRule")
    if expected_agg is None and existing_agg is not None:
        result.pop("aggregationRule", None)  # not meant to be aggregated at all
        changed = True
    elif expected_agg is not None:
        have = (existing_agg or {}).get("clusterRoleSelectors") or []
        lacking = [s for s in expected_agg.get("clusterRoleSelectors") or [] if s not in have]
        if lacking:
            result["aggregationRule"] = {"clusterRoleSelectors": list(have) + lacking}
            changed = True
    return result if changed else None


def reconciled_binding(existing: Obj, expected: Obj) -> tuple[str, Obj | None]:
    """kube's computeReconciledRoleBinding without removing subjects: ("none" | "update" | "recreate", object)."""
    if _protected(existing):
        return "none", None
    if (existing.get("roleRef") or {}) != expected["roleRef"]:
        return "recreate", expected
    result = copy.deepcopy(existing)
    changed = _merge_meta(result, expected, existing)
    have = list(existing.get("subjects") or [])
    lacking: list[Obj] = []
    for subject in expected.get("subjects") or []:
        if subject not in have and subject not in lacking:
            lacking.append(subject)
    if lacking:
        result["subjects"] = have + lacking
        changed = True
    return ("update", result) if changed else ("none", None)


async def _get(registry: Registry, res: Resource, namespace: str, name: str) -> Obj | None:
    try:
        return await registry.get(res, namespace, name)
    except errors.NotFound:
        return None


async def reconcile_role(registry: Registry, res: Resource, expected: Obj, writer: Writer | None = None) -> str:
    """Reconcile one Role or ClusterRole; returns what was done (create, update, none, protected)."""
    return await _reconcile(registry, res, expected, lambda existing: ("update", reconciled_role(existing, expected)),
                            writer or Writes(registry).apiserver())


async def reconcile_binding(registry: Registry, res: Resource, expected: Obj, writer: Writer | None = None) -> str:
    """Reconcile one RoleBinding or ClusterRoleBinding; returns what was done (also recreate)."""
    return await _reconcile(registry, res, expected, lambda existing: reconciled_binding(existing, expected),
                            writer or Writes(registry).apiserver())


async def _reconcile(registry: Registry, res: Resource, expected: Obj,
                     decide: Callable[[Obj], tuple[str, Obj | None]], writer: Writer) -> str:
    """Create ``expected`` if missing, else write what ``decide`` makes of the stored object (None: it is
    as it should be), retried while the object comes and goes under us."""
    md = expected["metadata"]
    namespace, name = md.get("namespace", ""), md["name"]
    for _ in range(_ATTEMPTS):
        existing = await _get(registry, res, namespace, name)
        if existing is None:
            try:
                await writer.create(res, namespace, copy.deepcopy(expected), WriteOptions())
                return "create"
            except errors.AlreadyExists:
                continue
        if _protected(existing):
            return "protected"
        operation, wanted = decide(existing)
        if wanted is None:
            return "none"
        try:
            if operation == "recreate":
                # roleRef is immutable: the binding goes and comes back with the policy's role
                await writer.delete(res, namespace, name, DeleteOptions())
                await writer.create(res, namespace, copy.deepcopy(wanted), WriteOptions())
                return "recreate"
            await writer.update(res, namespace, name, wanted, WriteOptions())
            return "update"
        except (errors.NotFound, errors.Conflict, errors.AlreadyExists):
            continue
    raise errors.Conflict(f"exceeded maximum attempts reconciling {res.resource} {name}")


async def _prime_aggregated_roles(registry: Registry, res: Resource, writer: Writer) -> None:
    """kube's primeAggregatedClusterRoles: an old unaggregated admin/edit/view's rules become its part."""
    for old_name, new_name in rbacpolicy.AGGREGATED_ROLE_PARTS.items():
        if await _get(registry, res, "", new_name) is not None:
            continue
        existing = await _get(registry, res, "", old_name)
        if existing is None:
            continue
        if existing.get("aggregationRule") is not None:
            return  # already moved: nothing left to migrate (kube stops here)
        log.info("migrating clusterrole %s to %s", old_name, new_name)
        copied = copy.deepcopy(existing)
        copied["metadata"] = {k: v for k, v in copied["metadata"].items()
                              if k in ("labels", "annotations")} | {"name": new_name}
        try:
            await writer.create(res, "", copied, WriteOptions())
        except errors.AlreadyExists:
            pass


async def _prime_split_bindings(registry: Registry, res: Resource, writer: Writer) -> None:
    """kube's primeSplitClusterRoleBindings: a new binding split from an old one starts with its subjects."""
    expected = {b["metadata"]["name"]: b for b in rbacpolicy.cluster_role_bindings()}
    for old_name, new_name in rbacpolicy.SPLIT_BINDINGS.items():
        if await _get(registry, res, "", new_name) is not None:
            continue
        existing = await _get(registry, res, "", old_name)
        if existing is None:
            continue
        new = copy.deepcopy(expected[new_name])
        new["subjects"] = copy.deepcopy(existing.get("subjects") or [])
        if not new["subjects"]:
            new.pop("subjects")
        try:
            await writer.create(res, "", new, WriteOptions())
        except errors.AlreadyExists:
            pass


async def reconcile_bootstrap_policy(registry: Registry, writer: Writer | None = None) -> None:
    """Reconcile every object of the bootstrap policy; one that fails is logged, the start goes on
    (kube retries its hook until it succeeds; here a failure of one object is not fatal)."""
    table = registry.table
    roles, bindings = table.get(GROUP, "v1", "roles"), table.get(GROUP, "v1", "rolebindings")
    cluster_roles = table.get(GROUP, "v1", "clusterroles")
    cluster_bindings = table.get(GROUP, "v1", "clusterrolebindings")
    assert roles and bindings and cluster_roles and cluster_bindings
    counts: dict[str, int] = {}
    writer = writer or Writes(registry).apiserver()
    try:
        await _prime_aggregated_roles(registry, cluster_roles, writer)
        await _prime_split_bindings(registry, cluster_bindings, writer)
    except errors.StatusError as err:
        log.error("cannot migrate the bootstrap RBAC policy: %s", err.message)
    plan: list[tuple[Resource, list[Obj], bool]] = [
        (cluster_roles, rbacpolicy.bootstrap_cluster_roles(), True),
        (cluster_bindings, rbacpolicy.bootstrap_cluster_role_bindings(), False),
        (roles, rbacpolicy.namespace_roles(), True),
        (bindings, rbacpolicy.namespace_role_bindings(), False),
    ]
    for res, objects, is_role in plan:
        for obj in objects:
            try:
                done = await (reconcile_role if is_role else reconcile_binding)(registry, res, obj, writer)
            except errors.StatusError as err:
                log.error("cannot reconcile %s %s: %s", res.resource, obj["metadata"]["name"], err.message)
                continue
            counts[done] = counts.get(done, 0) + 1
            if done == "protected":
                log.info("skipped reconcile-protected %s %s", res.resource, obj["metadata"]["name"])
    log.debug("bootstrap RBAC policy reconciled: %s", counts)
