"""One admission plugin's view of a write (kube's ``admission.Attributes``), what plugins are built
with, and the base class every plugin (built-in, policies, webhooks) derives from.

A plugin overrides ``admit`` to mutate, ``validate`` to validate, or both (kube's MutationInterface
and ValidationInterface). It declares the operations and resources it acts on (``operations``,
``resources``) so that the chain calls it only for those, at no cost for the rest; anything finer
it checks itself. Plugins read cluster state through ``Objects`` (the server's shared informers,
else the registry), never from storage per request when an informer holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import trio

from kapi import errors
from kapi.apis.crdconversion import ClientFactory, ServiceResolver
from kapi.encoding import listitems
from kapi.object.access import UserInfo
from kapi.object.listopts import ListOptions
from kapi.registry.admit import CONNECT, CREATE, DELETE, UPDATE, AdmissionRequest
from kapi.registry.informer import Informer, Informers
from kapi.registry.resources import Resource
from kapi.registry.store import Registry
from kapi.registry.strategy import Access

Obj = dict[str, Any]
ALL_OPERATIONS: frozenset[str] = frozenset((CREATE, UPDATE, DELETE, CONNECT))


@dataclass(slots=True)
class Attributes:
    """One write as a plugin sees it: the registry's request, who makes it, its options, and where
    the plugin's warnings and audit annotations go."""

    request: AdmissionRequest
    user: UserInfo
    # CreateOptions / UpdateOptions / DeleteOptions as kube hands them to webhooks and policies
    options: Obj
    warnings: list[str]
    annotate: Callable[[str, str], None] = lambda key, value: None
    # Reinvocation (kube's ReinvocationContext): a mutating plugin that changed the object after an
    # earlier one that asked to be reinvoked sets ``reinvoke``; the chain then runs the mutating
    # plugins once more with ``is_reinvoke`` set. ``plugin_state`` keeps each plugin's notes
    # between the two rounds (by plugin name).
    reinvoke: bool = False
    is_reinvoke: bool = False
    plugin_state: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------- the request's fields

    @property
    def operation(self) -> str:
        return self.request.operation

    @property
    def resource(self) -> Resource:
        return self.request.resource

    @property
    def group(self) -> str:
        return self.request.resource.group

    @property
    def version(self) -> str:
        return self.request.resource.version

    @property
    def plural(self) -> str:
        """The resource's plural ("pods"), as kube's ``GetResource().Resource``."""
        return self.request.resource.resource

    @property
    def subresource(self) -> str:
        return self.request.subresource

    @property
    def namespace(self) -> str:
        return self.request.namespace

    @property
    def name(self) -> str:
        return self.request.name

    @property
    def obj(self) -> Obj | None:
        return self.request.obj

    @obj.setter
    def obj(self, value: Obj | None) -> None:
        self.request.obj = value

    @property
    def old(self) -> Obj | None:
        return self.request.old

    @property
    def dry_run(self) -> bool:
        return self.request.dry_run

    @property
    def gvk(self) -> tuple[str, str, str]:
        """The object's (group, version, kind)."""
        return self.request.gvk

    def warn(self, text: str) -> None:
        """Answer the request with a ``Warning`` header carrying ``text``."""
        self.warnings.append(text)

    def object_name(self) -> str:
        """The name kube's admission errors give: the object's, its generateName, the request's, or Unknown."""
        for obj in (self.obj, self.old):
            md = (obj or {}).get("metadata") if isinstance(obj, dict) else None
            if isinstance(md, dict):
                if md.get("name"):
                    return str(md["name"])
                if md.get("generateName"):
                    return str(md["generateName"])
        return self.name or "Unknown"


def forbidden(a: Attributes, reason: str, *, causes: list[errors.Cause] | None = None) -> errors.Forbidden:
    """kube's ``admission.NewForbidden``: 403 ``<resource>[.<group>] "<name>" is forbidden: <reason>``."""
    name = a.object_name()
    return errors.Forbidden(f'{a.resource.qualified} "{name}" is forbidden: {reason}', name=name,
                            group=a.group, kind=a.plural, causes=causes or [])


class Objects:
    """What plugins read: an object or a namespace's objects of a resource, from the server's shared
    informers once they have synced, else (and for an object an informer does not hold yet) from
    the registry. ``watch`` asks for an informer up front, so that it syncs before the first request."""

    def __init__(self, registry: Registry, informers: Informers | None) -> None:
        self.registry = registry
        self.informers = informers

    def watch(self, group: str, resource: str) -> Informer | None:
        """The shared informer of a resource (None without informers or when it is not served)."""
        if self.informers is None:
            return None
        try:
            return self.informers.informer(group, resource)
        except KeyError:
            return None

    def _synced(self, group: str, resource: str) -> Informer | None:
        inf = self.watch(group, resource)
        return inf if inf is not None and inf.has_synced else None

    def resource(self, group: str, resource: str) -> Resource | None:
        """The served resource (its preferred version) of ``group``/``resource``."""
        return self.registry.resource_of(group, resource)

    async def get(self, group: str, resource: str, namespace: str, name: str, *, live: bool = True) -> Obj | None:
        """One object, None when absent. ``live``: one the informer does not hold is read from storage
        (it may have been created a moment ago), as kube's NamespaceLifecycle does."""
        inf = self._synced(group, resource)
        if inf is not None:
            found = inf.get(namespace, name)
            if found is not None or not live:
                return found
        res = self.resource(group, resource)
        if res is None:
            return None
        try:
            return await self.registry.get(res, namespace, name)
        except errors.NotFound:
            return None

    async def list(self, group: str, resource: str, namespace: str = "") -> list[Obj]:
        """The objects of one namespace (or all: ``""``), in key order."""
        inf = self._synced(group, resource)
        if inf is not None:
            return inf.list(namespace)
        res = self.resource(group, resource)
        if res is None:
            return []
        page = await self.registry.list(res, namespace if res.namespaced else "", ListOptions())
        return listitems.objects(page.items)


@dataclass
class PluginDeps:
    """What the server builds plugins with."""

    registry: Registry
    objects: Objects
    # The authorizer (a policy's ``authorizer`` variable, NodeRestriction's node checks); None: allow all
    access: Access | None = None
    # Webhook clients (an AdmissionReview POST) and the Service resolver of ``clientConfig.service``
    client_factory: ClientFactory | None = None
    resolve_service: ServiceResolver | None = None
    # Each plugin's configuration from --admission-control-config-file, by plugin name (None: none given)
    configuration: dict[str, Obj] = field(default_factory=dict)


class Plugin:
    """An admission plugin: override ``admit`` (mutating), ``validate`` (validating), or both."""

    name: ClassVar[str] = ""
    # The operations and (group, plural) resources the chain calls it for; None: every resource.
    operations: ClassVar[frozenset[str]] = ALL_OPERATIONS
    resources: ClassVar[frozenset[tuple[str, str]] | None] = None
    # Whether ``admit`` may change the object (NamespaceLifecycle only refuses); see ``changing``.
    changes_objects: ClassVar[bool] = True

    def __init__(self, deps: PluginDeps) -> None:
        self.deps = deps

    @property
    def mutating(self) -> bool:
        return type(self).admit is not Plugin.admit

    @property
    def validating(self) -> bool:
        return type(self).validate is not Plugin.validate

    def changing(self) -> bool:
        """Whether ``admit`` may change objects now (webhooks: only while a mutating webhook is configured)."""
        return self.changes_objects

    def interested(self, operation: str, group: str, resource: str) -> bool:
        """Whether the chain calls it for this operation on this resource (any subresource)."""
        return operation in self.operations and (self.resources is None or (group, resource) in self.resources)

    async def admit(self, a: Attributes) -> None:
        """Mutate ``a.obj`` in place (or set ``a.obj``); raise a ``StatusError`` to refuse."""

    async def validate(self, a: Attributes) -> None:
        """Raise a ``StatusError`` to refuse the write."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Background work the plugin needs while the server runs (none by default); ``started()``
        once it can answer requests."""
        task_status.started()
