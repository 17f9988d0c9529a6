"""kube's ValidatingAdmissionPolicy status controller (pkg/controller/validatingadmissionpolicystatus):
a policy whose ``metadata.generation`` is newer than its ``status.observedGeneration`` is type
checked against the schemas of the kinds it matches, and its status written with that generation
and ``typeChecking.expressionWarnings`` (``typeChecking: {}`` when there are none), as kube's
controller applies it (field manager ``validatingadmissionpolicy-status-controller``)."""

from __future__ import annotations

import copy
import logging
from typing import Any

import trio

from kapi import errors
from kapi.admission.policy import typecheck
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import Writes
from kapi.registry.informer import Informer, Item
from kapi.registry.store import Registry, WriteOptions

__all__ = ["AdmissionPolicyStatusController", "GROUP", "RESOURCE", "FIELD_MANAGER"]

log = logging.getLogger("kapi.controllers.admissionpolicystatus")
Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
RESOURCE = "validatingadmissionpolicies"
FIELD_MANAGER = "validatingadmissionpolicy-status-controller"


def _stale(policy: Obj) -> bool:
    generation = (policy.get("metadata") or {}).get("generation") or 0
    observed = (policy.get("status") or {}).get("observedGeneration") or 0
    return bool(generation) and generation > observed


class AdmissionPolicyStatusController:
    """Type checks policies and writes their status, from the shared policies informer."""

    def __init__(self, registry: Registry, informer: Informer, writes: Writes | None = None) -> None:
        self.registry = registry
        self.writer = (writes or Writes(registry)).controller("validatingadmissionpolicy-status-controller")
        self.informer = informer
        self.resource = informer.res
        self._queue = WorkQueue()
        informer.add_handler(on_add=self._put, on_update=lambda _old, new: self._put(new))

    def _put(self, item: Item) -> None:
        self._queue.add(item.name)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self.informer.wait_for_sync()
        task_status.started()
        while True:
            name = await self._queue.get()
            try:
                await self.sync(name)
            except errors.StatusError as err:
                log.warning("validatingadmissionpolicy %s status: %s", name, err.message)
                await trio.sleep(0.5)
                self._queue.add(name)
            except Exception:  # one odd stored policy must not stop the others' status
                log.exception("validatingadmissionpolicy %s status: type checking failed", name)

    async def sync(self, name: str) -> bool:
        """Check one policy and write its status if its generation is not observed yet; whether it wrote."""
        policy = self.informer.get("", name)
        if policy is None or not _stale(policy):
            return False
        generation = policy["metadata"]["generation"]
        warnings = typecheck.check(policy, self.registry.schema, self.registry.table)

        def mutate(current: Obj) -> Obj:
            if (current.get("metadata") or {}).get("generation") != generation:
                return current  # changed since: its own notification checks it again
            status = copy.deepcopy(current.get("status") or {})
            status["observedGeneration"] = generation
            status["typeChecking"] = {"expressionWarnings": warnings} if warnings else {}
            current["status"] = status
            return current

        try:
            await self.writer.guaranteed_update(self.resource, "", name, mutate,
                                                WriteOptions(field_manager=FIELD_MANAGER), subresource="status")
        except errors.NotFound:
            return False
        return True
