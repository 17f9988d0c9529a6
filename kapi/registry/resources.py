"""The table of served resources: the ``Resource`` description of each, and lookups by name and kind.

The built-in resources are ``kapi.apis.BUILTIN``; what a kind does is its ``strategy``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kapi import errors
from kapi.object.managedfields.updater import MissingVersion
from kapi.registry.strategy import Strategy

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = {"status": ("get", "patch", "update"), "scale": ("get", "patch", "update"),
                     "finalize": ("update",), "token": ("create",)}


@dataclass(frozen=True, kw_only=True, slots=True)
class Resource:
    """One served resource (group, version, plural) and how it behaves."""

    group: str
    version: str
    resource: str  # plural, lower case
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    storage_prefix: str = ""  # defaults to the resource name (SEMANTICS §5)
    # Where another resource's storage holds the objects (events.k8s.io events live with core events).
    storage_of: tuple[str, str] = ("", "")
    # Served from the watch cache (kube-apiserver keeps events out of it).
    cacheable: bool = True
    # Not stored: a create is answered by the server (access reviews, self subject reviews).
    virtual: bool = False
    # Everything the generic store does differently for this kind.
    strategy: Strategy
    # The singular name discovery gives (a CRD's names.singular); the kind in lower case when empty.
    singular_name: str = ""
    # The version objects are stored in when it is not this one (another served version of the same
    # objects: a custom resource's, autoscaling/v1 beside v2). The strategy's ``from_storage`` and
    # ``to_storage`` convert; such a resource has its own watch cache (``cache_key``).
    storage_version: str = ""
    # A deprecated version: the Warning header every request to it is answered with ("" if none).
    warning: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def cache_key(self) -> tuple[str, str]:
        """The key of this resource's watch cache in ``Registry.cachers``: one per storage prefix, and
        one more per version served by conversion from another (``storage_version``)."""
        if self.storage_version and self.storage_version != self.version:
            return (self.group, f"{self.resource}/{self.version}")
        return (self.group, self.resource)

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def prefix(self) -> str:
        return self.storage_prefix or self.resource

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def storage_identity(self) -> tuple[str, str]:
        """What makes two served resources the same objects: the storage that holds them (kube keys its
        equivalent resource registry by the storage prefix)."""
        if self.storage_of != ("", ""):
            return self.storage_of
        return (self.group, self.prefix)

    @property
    def qualified(self) -> str:
        """``deployments.apps`` (``pods`` for the core group), as in messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


# The preferred order of groups in discovery, as kube-apiserver lists them.
GROUP_ORDER = ("", "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
               "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy",
               "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
               "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
               "discovery.k8s.io", "flowcontrol.apiserver.k8s.io")


# Called with ("added" | "removed", resource) after the table changed; must not block or raise.
TableListener = Callable[[str, Resource], None]


class ResourceTable:
    """The served resources by (group, version, resource); resources come and go while serving.

    Handlers look a resource up per request, so an added one is routed at once and a removed
    one answers 404. What is derived from the whole table (discovery documents, OpenAPI, the
    server's set of watch caches) follows ``generation`` or subscribes to the changes.
    """

    __slots__ = ("_by_gvr", "_listeners", "_snapshot", "_sharing", "generation")

    def __init__(self, resources: Iterable[Resource]) -> None:
        self._by_gvr: dict[tuple[str, str, str], Resource] = {}
        for r in resources:
            self._insert(r)
        self._snapshot: tuple[Resource, ...] = tuple(self._by_gvr.values())
        self._listeners: list[TableListener] = []
        self.generation = 0  # moves on every add and remove
        # storage identity -> the resources holding those objects (see sharing_storage); rebuilt on change
        self._sharing: dict[tuple[str, str], tuple[Resource, ...]] | None = None

    @property
    def resources(self) -> tuple[Resource, ...]:
        """Every served resource now, in the order they were added."""
        return self._snapshot

    def _insert(self, res: Resource) -> None:
        key = (res.group, res.version, res.resource)
        if key in self._by_gvr:
            raise errors.AlreadyExists(f"{res.resource} in {res.group_version} is already served")
        self._by_gvr[key] = res

    def add(self, res: Resource) -> None:
        """Serve ``res`` from now on; AlreadyExists if its group, version and plural are served."""
        self._insert(res)
        self._changed("added", res)

    def remove(self, group: str, version: str, resource: str) -> Resource:
        """Stop serving a resource and return it; NotFound if it is not served."""
        res = self._by_gvr.pop((group, version, resource), None)
        if res is None:
            gv = f"{group}/{version}" if group else version
            raise errors.NotFound(f"{resource} in {gv} is not served")
        self._changed("removed", res)
        return res

    def sharing_storage(self, res: Resource) -> tuple[Resource, ...]:
        """The other served resources holding the same objects as ``res`` (another version of them, a
        resource stored with another's), in table order (admission's matchPolicy Equivalent)."""
        if self._sharing is None:
            sharing: dict[tuple[str, str], list[Resource]] = {}
            for r in self._snapshot:
                sharing.setdefault(r.storage_identity, []).append(r)
            self._sharing = {k: tuple(v) for k, v in sharing.items()}
        own = (res.group, res.version, res.resource)
        return tuple(r for r in self._sharing.get(res.storage_identity, ())
                     if (r.group, r.version, r.resource) != own)

    def _changed(self, change: str, res: Resource) -> None:
        self._snapshot = tuple(self._by_gvr.values())
        self._sharing = None
        self.generation += 1
        for listener in list(self._listeners):
            listener(change, res)

    def subscribe(self, listener: TableListener) -> Callable[[], None]:
        """Call ``listener`` after each change; returns the function that unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def get(self, group: str, version: str, resource: str) -> Resource | None:
        return self._by_gvr.get((group, version, resource))

    def by_kind(self, group: str, kind: str) -> Resource | None:
        for r in self._snapshot:
            if r.group == group and r.kind == kind:
                return r
        return None

    def groups(self) -> list[tuple[str, list[str]]]:
        """(group, [versions]) in discovery order; the core group first."""
        seen: dict[str, list[str]] = {}
        for r in self._snapshot:
            versions = seen.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        rank = {g: i for i, g in enumerate(GROUP_ORDER)}
        return sorted(seen.items(), key=lambda gv: (rank.get(gv[0], len(rank)), gv[0]))

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self._snapshot if r.group == group and r.version == version]


class VersionConverter:
    """Converts an object of a served resource into another version serving the same stored objects
    (``autoscaling/v1`` and ``v2`` HorizontalPodAutoscalers, a CRD's versions), through the storage
    form: the managed fields' converter (kube's scheme conversion). A version not served is
    ``MissingVersion``; a conversion that is I/O (a CRD's webhook) is not made here: the object
    only takes the version's apiVersion, its paths taken as the same."""

    def __init__(self, table: ResourceTable, res: Resource) -> None:
        self._versions = {r.group_version: r for r in (res, *table.sharing_storage(res)) if r.kind == res.kind}

    def convert(self, obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        source = self._versions.get(str(obj.get("apiVersion") or ""))
        if obj.get("apiVersion") == api_version:
            return obj
        target = self._versions.get(api_version)
        if source is None or target is None:
            raise MissingVersion(f"{api_version} does not serve these objects")
        if source.strategy.converts_async or target.strategy.converts_async:
            return {**obj, "apiVersion": api_version}
        out = target.strategy.from_storage(source.strategy.to_storage(copy.deepcopy(obj)))
        return {**out, "apiVersion": api_version, "kind": target.kind}
