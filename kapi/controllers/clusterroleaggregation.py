"""kube's ClusterRoleAggregation controller: an aggregated ClusterRole's rules are the union of the
rules of the ClusterRoles its ``aggregationRule.clusterRoleSelectors`` select.

As kube's (pkg/controller/clusterroleaggregation): any change to any ClusterRole queues every
aggregated one; a sync visits the selectors in order, the matching roles by name (the role itself
skipped), and appends each rule not already there (a semantic comparison); the rules are written
only when they differ from the stored ones. It reads the shared clusterroles informer, so a newly
labelled role is picked up as soon as the informer sees it.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from kapi import errors
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import Writes
from kapi.object.selectors import label_selector_from_spec
from kapi.registry.informer import Informer, Item
from kapi.registry.store import Registry, WriteOptions

__all__ = ["ClusterRoleAggregationController", "aggregated_rules"]

log = logging.getLogger("kapi.controllers.clusterroleaggregation")
Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
FIELD_MANAGER = "clusterrole-aggregation-controller"
_START_PASSES = 8


def _semantic(rule: Any) -> Any:
    """A rule as equality.Semantic compares it: absent, null and empty lists alike."""
    if not isinstance(rule, dict):
        return rule
    return {k: v for k, v in rule.items() if v not in (None, [], "")}


def aggregated_rules(role: Obj, roles: list[Obj]) -> list[Obj] | None:
    """kube's syncClusterRole: the rules ``role`` aggregates from ``roles`` (every ClusterRole), or None
    when a selector cannot be read (the sync fails, as LabelSelectorAsSelector's error does)."""
    own_name = (role.get("metadata") or {}).get("name")
    rules: list[Obj] = []
    seen: list[Any] = []
    by_name = sorted(roles, key=lambda r: str((r.get("metadata") or {}).get("name") or ""))
    for spec in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        try:
            selector = label_selector_from_spec(spec)
        except errors.StatusError:
            return None
        for other in by_name:
            md = other.get("metadata") or {}
            if md.get("name") == own_name:
                continue
            if selector is not None and not selector.matches(md.get("labels") or {}):
                continue
            if selector is None:
                continue  # a null selector selects nothing
            for rule in other.get("rules") or []:
                key = _semantic(rule)
                if key not in seen:
                    seen.append(key)
                    rules.append(rule)
    return rules


class ClusterRoleAggregationController:
    """Keeps aggregated ClusterRoles' rules up to date, from the shared clusterroles informer."""

    def __init__(self, registry: Registry, informer: Informer, writes: Writes | None = None) -> None:
        self.registry = registry
        self.writer = (writes or Writes(registry)).controller("clusterrole-aggregation-controller")
        self.informer = informer
        self.resource = informer.res
        self._queue = WorkQueue()
        self._roles: dict[str, Obj] = {}  # every ClusterRole, decoded once per change
        # Registered once (a restarted run must not add a second set): any change requeues them all.
        informer.add_handler(on_add=self._put, on_update=lambda _old, new: self._put(new), on_delete=self._drop)

    def _put(self, item: Item) -> None:
        try:
            self._roles[item.name] = item.object()
        except Exception:  # undecodable (the informer logs it): it selects nothing
            self._roles.pop(item.name, None)
        self._enqueue_all()

    def _drop(self, item: Item) -> None:
        self._roles.pop(item.name, None)
        self._enqueue_all()

    def _enqueue_all(self) -> None:
        for name, role in self._roles.items():
            if role.get("aggregationRule") is not None:
                self._queue.add(name)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sync the queued aggregated roles one at a time; ``started()`` once the informer has synced."""
        await self.informer.wait_for_sync()
        # The roles stored at start are aggregated before the server answers anyone: passes until
        # nothing changes (admin aggregates edit, which aggregates view: an order may need two).
        for _ in range(_START_PASSES):
            wrote = False
            for name in [n for n, r in self._roles.items() if r.get("aggregationRule") is not None]:
                wrote |= await self._sync_logged(name) is True
            if not wrote:
                break
        task_status.started()
        while True:
            name = await self._queue.get()
            if await self._sync_logged(name) is None:
                await trio.sleep(0.5)
                self._queue.add(name)

    async def _sync_logged(self, name: str) -> bool | None:
        """Whether the sync wrote; None when it failed (logged)."""
        try:
            return await self.sync(name)
        except errors.StatusError as err:
            log.warning("aggregating clusterrole %s: %s", name, err.message)
            return None

    async def sync(self, name: str) -> bool:
        """Bring one aggregated role's rules to the union of what its selectors select; whether it wrote."""
        role = self._roles.get(name)
        if role is None or role.get("aggregationRule") is None:
            return False
        rules = aggregated_rules(role, list(self._roles.values()))
        if rules is None:
            log.warning("clusterrole %s has an unreadable aggregationRule", name)
            return False
        if [_semantic(r) for r in rules] == [_semantic(r) for r in role.get("rules") or []]:
            return False

        def set_rules(current: Obj) -> Obj:
            current["rules"] = rules
            return current

        try:
            written = await self.writer.guaranteed_update(self.resource, "", name, set_rules,
                                                          WriteOptions(field_manager=FIELD_MANAGER))
        except errors.NotFound:
            return False
        # What was written counts at once for the roles that aggregate this one (the informer's
        # notification of it comes later and changes nothing then).
        self._roles[name] = written
        return True

