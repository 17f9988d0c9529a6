"""The table of served resources: adding a built-in resource is one entry here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kapi import errors

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = {"status": ("get", "patch", "update"), "scale": ("get", "patch", "update"),
                     "finalize": ("update",)}


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
    # Generation also moves on annotation changes (the Deployment strategy).
    generation_on_annotations: bool = False
    # Served from the watch cache (kube-apiserver keeps events out of it).
    cacheable: bool = True
    # The strategy sets metadata.generation (1 on create, +1 on spec changes).
    tracks_generation: bool = False
    # PUT of a missing object creates it.
    create_on_update: bool = False
    # DELETE answers with the object rather than a success Status: kube's registry store sets
    # ReturnDeletedObject for namespaces, pods, services, serviceaccounts, persistentvolumes and
    # persistentvolumeclaims (and podtemplates, resourcequotas and the storage.k8s.io kinds, not served).
    delete_returns_object: bool = False
    # Not stored: a create is answered by the server (access reviews, self subject reviews).
    virtual: bool = False

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

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
    def qualified(self) -> str:
        """``deployments.apps`` (``pods`` for the core group), as in messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


_ALL = ("all",)


def _r(group: str, version: str, resource: str, kind: str, **kw: object) -> Resource:
    return Resource(group=group, version=version, resource=resource, kind=kind, **kw)  # type: ignore[arg-type]


BUILTIN: tuple[Resource, ...] = (
    # core/v1
    _r("", "v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",),
       subresources=("status", "finalize"),
       verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
       delete_returns_object=True),
    _r("", "v1", "pods", "Pod", short_names=("po",), categories=_ALL, subresources=("status",),
       tracks_generation=True, delete_returns_object=True),
    _r("", "v1", "nodes", "Node", namespaced=False, short_names=("no",), subresources=("status",),
       storage_prefix="minions"),
    _r("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    _r("", "v1", "secrets", "Secret"),
    _r("", "v1", "services", "Service", short_names=("svc",), categories=_ALL, subresources=("status",),
       storage_prefix="services/specs",
       verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
       delete_returns_object=True),
    _r("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",), delete_returns_object=True),
    _r("", "v1", "endpoints", "Endpoints", short_names=("ep",), storage_prefix="services/endpoints",
       create_on_update=True),
    _r("", "v1", "events", "Event", short_names=("ev",), cacheable=False,
       create_on_update=True),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",),
       subresources=("status",),
       tracks_generation=True, delete_returns_object=True),
    _r("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False, short_names=("pv",),
       subresources=("status",), delete_returns_object=True),
    # apps/v1
    _r("apps", "v1", "deployments", "Deployment", short_names=("deploy",), categories=_ALL,
       subresources=("status", "scale"), generation_on_annotations=True,
       tracks_generation=True),
    _r("apps", "v1", "replicasets", "ReplicaSet", short_names=("rs",), categories=_ALL,
       subresources=("status", "scale"),
       tracks_generation=True),
    _r("apps", "v1", "statefulsets", "StatefulSet", short_names=("sts",), categories=_ALL,
       subresources=("status", "scale"),
       tracks_generation=True),
    _r("apps", "v1", "daemonsets", "DaemonSet", short_names=("ds",), categories=_ALL,
       subresources=("status",),
       tracks_generation=True),
    # batch/v1
    _r("batch", "v1", "jobs", "Job", categories=_ALL, subresources=("status",),
       tracks_generation=True),
    _r("batch", "v1", "cronjobs", "CronJob", short_names=("cj",), categories=_ALL, subresources=("status",),
       tracks_generation=True),
    # coordination.k8s.io/v1
    _r("coordination.k8s.io", "v1", "leases", "Lease",
       create_on_update=True),
    # events.k8s.io/v1: the same objects as core/v1 events, another shape
    _r("events.k8s.io", "v1", "events", "Event", short_names=("ev",), cacheable=False,
       storage_of=("", "events"),
       create_on_update=True),
    # rbac.authorization.k8s.io/v1
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role",
       create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding",
       create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False,
       create_on_update=True),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False,
       create_on_update=True),
    # authorization.k8s.io/v1 and authentication.k8s.io/v1: reviews answered, never stored
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False,
       verbs=("create",), virtual=True, cacheable=False),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False,
       verbs=("create",), virtual=True, cacheable=False),
    _r("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview",
       verbs=("create",), virtual=True, cacheable=False),
    _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", namespaced=False,
       verbs=("create",), virtual=True, cacheable=False),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", namespaced=False,
       verbs=("create",), virtual=True, cacheable=False),
    # apiextensions.k8s.io/v1 (stored only, for now)
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
       namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
       subresources=("status",), storage_prefix="apiextensions.k8s.io/customresourcedefinitions",
       tracks_generation=True),
    # flowcontrol.apiserver.k8s.io/v1 (stored only, for now)
    _r("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", namespaced=False,
       subresources=("status",),
       tracks_generation=True, create_on_update=True),
    _r("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration",
       namespaced=False, subresources=("status",),
       tracks_generation=True, create_on_update=True),
)

# The preferred order of groups in discovery, as kube-apiserver lists them.
GROUP_ORDER = ("", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
               "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy",
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

    __slots__ = ("_by_gvr", "_listeners", "_snapshot", "generation")

    def __init__(self, resources: Iterable[Resource] = BUILTIN) -> None:
        self._by_gvr: dict[tuple[str, str, str], Resource] = {}
        for r in resources:
            self._insert(r)
        self._snapshot: tuple[Resource, ...] = tuple(self._by_gvr.values())
        self._listeners: list[TableListener] = []
        self.generation = 0  # moves on every add and remove

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

    def _changed(self, change: str, res: Resource) -> None:
        self._snapshot = tuple(self._by_gvr.values())
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
