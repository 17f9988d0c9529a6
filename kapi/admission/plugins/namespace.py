"""NamespaceLifecycle, NamespaceExists and NamespaceAutoProvision (kube's plugin/pkg/admission/namespace).

NamespaceLifecycle refuses to create objects in a namespace that is missing (404, as kube's live
lookup answers) or terminating (403 with the ``NamespaceTerminating`` cause), refuses writes in
a missing namespace, and refuses to delete the namespaces kube keeps (default, kube-system,
kube-public). It reads namespaces from the shared informer, and storage when the informer does
not hold one yet (created a moment ago).
"""

from __future__ import annotations

from typing import Any, Final

import trio

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.registry.admit import CREATE, DELETE
from kapi.registry.store import WriteOptions

Obj = dict[str, Any]
IMMORTAL_NAMESPACES: Final = frozenset(("default", "kube-system", "kube-public"))
_ACCESS_REVIEWS: Final = frozenset((("authorization.k8s.io", "localsubjectaccessreviews"),))
# A namespace deleted through this server is read from storage for this long (kube's forceLiveLookupTTL):
# the informer may not have seen it terminate yet.
FORCE_LIVE_LOOKUP_S: Final = 30.0
_LIVE_LOOKUPS_MAX: Final = 10_000


def _is_namespace(a: Attributes) -> bool:
    return a.group == "" and a.plural == "namespaces"


class NamespaceLifecycle(Plugin):
    name = "NamespaceLifecycle"
    changes_objects = False  # it refuses, never changes

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch("", "namespaces")
        self._live_until: dict[str, float] = {}  # namespace -> trio time its live lookups end

    async def admit(self, a: Attributes) -> None:
        if _is_namespace(a):
            if a.operation == DELETE and not a.subresource:
                if a.name in IMMORTAL_NAMESPACES:
                    raise errors.Forbidden(f'namespaces "{a.name}" is forbidden: this namespace may not be deleted',
                                           name=a.name, kind="namespaces")
                self._force_live_lookup(a.name)
            return  # every other operation on namespaces is allowed
        if not a.namespace or a.operation == DELETE or (a.group, a.plural) in _ACCESS_REVIEWS:
            return
        ns = await self._namespace(a.namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", a.namespace)
        if a.operation == CREATE and _terminating(ns):
            raise forbidden(a, f"unable to create new content in namespace {a.namespace} because it is being "
                            "terminated", causes=[errors.Cause(reason="NamespaceTerminating",
                                                               message=f"namespace {a.namespace} is being terminated",
                                                               field="metadata.namespace")])


    def _force_live_lookup(self, name: str) -> None:
        now = trio.current_time()
        if len(self._live_until) >= _LIVE_LOOKUPS_MAX:
            self._live_until = {k: t for k, t in self._live_until.items() if t > now}
        if len(self._live_until) < _LIVE_LOOKUPS_MAX:
            self._live_until[name] = now + FORCE_LIVE_LOOKUP_S

    async def _namespace(self, name: str) -> Obj | None:
        """The namespace from the informer, or from storage when it is missing there or was deleted a
        moment ago through this server while the informer still has it active."""
        objects = self.deps.objects
        until = self._live_until.get(name)
        if until is not None:
            if until > trio.current_time():
                res = objects.resource("", "namespaces")
                if res is not None:
                    try:
                        return await self.deps.registry.get(res, "", name)
                    except errors.NotFound:
                        return None
            else:
                del self._live_until[name]
        return await objects.get("", "namespaces", "", name)


def _terminating(ns: Obj) -> bool:
    return bool((ns.get("metadata") or {}).get("deletionTimestamp")) or \
        (ns.get("status") or {}).get("phase") == "Terminating"


class NamespaceExists(Plugin):
    """Refuses a create or update in a namespace that does not exist (off by default)."""

    name = "NamespaceExists"
    operations = frozenset((CREATE, "UPDATE"))

    async def validate(self, a: Attributes) -> None:
        if not a.namespace or _is_namespace(a):
            return
        if await self.deps.objects.get("", "namespaces", "", a.namespace) is None:
            raise errors.not_found("namespaces", "", a.namespace)


class NamespaceAutoProvision(Plugin):
    """Creates the namespace of a create that names a missing one (off by default)."""

    name = "NamespaceAutoProvision"
    operations = frozenset((CREATE,))

    async def admit(self, a: Attributes) -> None:
        if not a.namespace or _is_namespace(a) or a.dry_run:
            return
        if await self.deps.objects.get("", "namespaces", "", a.namespace) is not None:
            return
        res = self.deps.objects.resource("", "namespaces")
        if res is None:
            return
        try:
            await self.deps.registry.create(res, "", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": a.namespace}}, WriteOptions())
        except errors.AlreadyExists:
            pass


__all__ = ["IMMORTAL_NAMESPACES", "NamespaceAutoProvision", "NamespaceExists", "NamespaceLifecycle"]
