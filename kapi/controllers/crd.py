"""The CustomResourceDefinition controllers of kube's apiextensions-apiserver, over the shared CRD informer.

One work queue and one sync per CRD name do what kube splits in four controllers:

- naming (pkg/controller/status): ``status.acceptedNames`` and the ``NamesAccepted`` condition. A
  name another CRD of the same group has accepted (its plural, singular, short names; its kind and
  list kind), or a built-in resource of the group has, is refused with kube's reasons
  (``PluralConflict``, ``SingularConflict``, ``ShortNamesConflict``, ``KindConflict``,
  ``ListKindConflict``) and message (``"foos" is already in use``); names already accepted stay.
- serving and establishing (pkg/controller/establish): once the names are accepted the CRD's
  resources (``kapi.apis.customresources.custom_resources``) are put in the resource table, then
  ``Established`` is True (``InitialNamesAccepted``). A change of the spec or of the accepted names
  replaces them; ``status.storedVersions`` gets the storage version.
- finalizer (pkg/controller/finalizer): a CRD being deleted carries
  ``customresourcecleanup.apiextensions.k8s.io`` (added by the CRD strategy at the first DELETE,
  as kube's REST.Delete does); the controller sets ``Terminating`` True
  (``InstanceDeletionInProgress``), deletes every object of the resource in every namespace, then
  removes the finalizer, so the CRD goes; its resources leave the table when the CRD is gone.

Its status and finalizer writes are the apiserver's loopback client's (``system:apiserver``), admitted
and audited as requests; the deletion of the instances goes to the registry unadmitted, as kube's
finalizer goes to the storage directly.

``run`` serves the CRDs stored at start-up before it reports ``started()``; a CRD whose resources
cannot be built is logged and reported in its ``Established`` condition, and start-up goes on.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable

import orjson
import trio

from kapi import errors
from kapi.apis.customresources import custom_resources
from kapi.controllers.base import WorkQueue
from kapi.controllers.writes import Writes
from kapi.object import meta
from kapi.object.listopts import ListOptions
from kapi.registry.deletion import DeleteOptions
from kapi.registry.informer import Informer, Item
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions

__all__ = ["CLEANUP_FINALIZER", "CRDController", "GROUP", "RESOURCE", "calculate_names", "crd_resources"]

log = logging.getLogger("kapi.controllers.crd")
Obj = dict[str, Any]
GROUP = "apiextensions.k8s.io"
RESOURCE = "customresourcedefinitions"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
FIELD_MANAGER = "kube-apiserver"
RETRY_S = 1.0


def crd_resources(crd: Obj) -> list[Resource]:
    """The served resources of one CRD (one per served version), made by ``kapi.apis.customresources``."""
    return list(custom_resources(crd))


# ------------------------------------------------------------------ conditions


def find_condition(crd: Obj, ctype: str) -> Obj | None:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def set_condition(status: Obj, ctype: str, cstatus: str, reason: str, message: str) -> None:
    """kube's SetCRDCondition: lastTransitionTime moves only when the status does."""
    conditions = status["conditions"] = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for c in conditions:
        if c.get("type") == ctype:
            if c.get("status") != cstatus:
                c["lastTransitionTime"] = meta.now_rfc3339()
            c.update(status=cstatus, reason=reason, message=message)
            return
    conditions.append({"type": ctype, "status": cstatus, "lastTransitionTime": meta.now_rfc3339(),
                       "reason": reason, "message": message})


def _conflict(requested: Any, accepted: Any, used: set[str]) -> str:
    """kube's equalToAcceptedOrFresh: the error message, or "" when the name may be taken."""
    if requested == accepted or requested not in used:
        return ""
    return f'"{requested}" is already in use'


def calculate_names(crd: Obj, used_resources: set[str], used_kinds: set[str]) -> tuple[Obj, tuple[str, str, str]]:
    """kube's calculateNamesAndConditions: the accepted names and (status, reason, message) of NamesAccepted."""
    requested = (crd.get("spec") or {}).get("names") or {}
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    new = copy.deepcopy(accepted)
    new.setdefault("plural", "")
    new.setdefault("kind", "")
    cond: tuple[str, str, str] | None = None
    for field, reason, used in (("plural", "PluralConflict", used_resources),
                                ("singular", "SingularConflict", used_resources)):
        msg = _conflict(requested.get(field, ""), accepted.get(field, ""), used)
        if msg:
            cond = ("False", reason, msg)
        elif requested.get(field):
            new[field] = requested[field]
    req_short = list(requested.get("shortNames") or [])
    acc_short = list(accepted.get("shortNames") or [])
    if req_short != acc_short:
        msgs = [m for s in req_short if s not in acc_short for m in [_conflict(s, "", used_resources)] if m]
        if msgs:
            cond = ("False", "ShortNamesConflict", msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]")
        elif req_short:
            new["shortNames"] = req_short
        else:
            new.pop("shortNames", None)
    for field, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        msg = _conflict(requested.get(field, ""), accepted.get(field, ""), used_kinds)
        if msg:
            cond = ("False", reason, msg)
        elif requested.get(field):
            new[field] = requested[field]
    if requested.get("categories"):
        new["categories"] = list(requested["categories"])
    else:
        new.pop("categories", None)
    return new, cond or ("True", "NoConflicts", "no conflicts found")


def _storage_version(crd: Obj) -> str:
    return next((v.get("name", "") for v in (crd.get("spec") or {}).get("versions") or []
                 if isinstance(v, dict) and v.get("storage")), "")


# ------------------------------------------------------------------ the controller


class CRDController:
    """Names, serving, conditions and cleanup of every CRD, from the shared CRD informer."""

    def __init__(self, registry: Registry, informer: Informer,
                 resources_of: Callable[[Obj], list[Resource]] | None = None, writes: Writes | None = None) -> None:
        """``resources_of``: a CRD's served resources (``custom_resources`` with what the server reaches
        conversion webhooks with, e.g. ``partial(custom_resources, client_factory=..., resolve_service=...)``);
        ``crd_resources`` when None."""
        self.registry = registry
        self.writer = (writes or Writes(registry)).apiserver()
        self._resources_of = resources_of
        self.table: ResourceTable = registry.table
        self.informer = informer
        self.crd_res = informer.res
        self._queue = WorkQueue()
        # What each CRD serves: the signature it was built from, and its resources in the table.
        self._served: dict[str, tuple[bytes, list[Resource]]] = {}
        self._crds: dict[str, Obj] = {}  # the last decoded state of each CRD, by name
        informer.add_handler(on_add=self._put, on_update=lambda _old, new: self._put(new), on_delete=self._drop)

    # ---------------------------------------------------------------- informer

    def _put(self, item: Item) -> None:
        try:
            obj = item.object()
        except Exception:  # undecodable (the informer logs it)
            return
        old = self._crds.get(item.name)
        self._crds[item.name] = obj
        self._queue.add(item.name)
        if old is not None and (old.get("status") or {}).get("acceptedNames") != \
                (obj.get("status") or {}).get("acceptedNames"):
            self._requeue_group(obj)

    def _drop(self, item: Item) -> None:
        obj = self._crds.pop(item.name, None)
        self._queue.add(item.name)
        if obj is not None:
            self._requeue_group(obj)  # names it held are free now

    def _requeue_group(self, crd: Obj) -> None:
        group = (crd.get("spec") or {}).get("group")
        name = (crd.get("metadata") or {}).get("name")
        for other, obj in self._crds.items():
            if other != name and (obj.get("spec") or {}).get("group") == group:
                self._queue.add(other)

    # ---------------------------------------------------------------- running

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sync every CRD stored now (served before ``started()``), then each one queued, one at a time."""
        await self.informer.wait_for_sync()
        # Start-up: the ones that held names first keep them (kube's informer order is arbitrary;
        # the oldest first is what a cluster that made them one by one would have).
        for name in sorted(self._crds, key=lambda n: (str((self._crds[n].get("metadata") or {})
                                                           .get("creationTimestamp") or ""), n)):
            for _ in range(3):  # names, then establish, then storedVersions settle in a few writes
                if not await self._sync_logged(name):
                    break
        task_status.started()
        while True:
            name = await self._queue.get()
            if await self._sync_logged(name) is None:
                await trio.sleep(RETRY_S)
                self._queue.add(name)

    async def _sync_logged(self, name: str) -> bool | None:
        """Whether the sync wrote; None when it failed (logged)."""
        try:
            return await self.sync(name)
        except errors.StatusError as err:
            log.warning("customresourcedefinition %s: %s", name, err.message)
            return None
        except Exception:  # one CRD's trouble must not stop the others: logged, tried again
            log.exception("customresourcedefinition %s", name)
            return None

    async def sync(self, name: str) -> bool:
        """Bring one CRD's status, served resources and finalizer to what it asks; whether it wrote."""
        crd = self._crds.get(name)
        if crd is None:
            self._unserve(name)
            return False
        if (crd.get("metadata") or {}).get("deletionTimestamp"):
            return await self._finalize(name, crd)
        used_resources, used_kinds = self._used_names(crd)
        accepted, (cstatus, reason, message) = calculate_names(crd, used_resources, used_kinds)
        status = copy.deepcopy(crd.get("status") or {})
        status["acceptedNames"] = accepted
        set_condition(status, "NamesAccepted", cstatus, reason, message)
        established = find_condition(crd, "Established")
        if established is None or established.get("status") != "True":
            if cstatus == "True":
                if established is None or established.get("reason") != "InstallationFailed":  # kept until served
                    set_condition(status, "Established", "False", "Installing", "the initial names have been accepted")
            else:
                set_condition(status, "Established", "False", "NotAccepted", "not all names are accepted")
        if status != (crd.get("status") or {}):
            return await self._write_status(name, status)
        # The names are accepted (as stored): serve them, then say so.
        if cstatus == "True" or (established is not None and established.get("status") == "True"):
            problem = self._serve(name, crd)
            if problem:
                set_condition(status, "Established", "False", "InstallationFailed", problem)
            elif established is None or established.get("status") != "True":
                set_condition(status, "Established", "True", "InitialNamesAccepted",
                              "the initial names have been accepted")
            storage = _storage_version(crd)
            stored = list(status.get("storedVersions") or [])
            if not problem and storage and storage not in stored:
                status["storedVersions"] = stored + [storage]
            if status != (crd.get("status") or {}):
                return await self._write_status(name, status)
        return False

    def _used_names(self, crd: Obj) -> tuple[set[str], set[str]]:
        """kube's getAcceptedNamesForGroup, and the built-in resources of the group."""
        group = (crd.get("spec") or {}).get("group")
        name = (crd.get("metadata") or {}).get("name")
        resources: set[str] = set()
        kinds: set[str] = set()
        for other, obj in self._crds.items():
            if other == name or (obj.get("spec") or {}).get("group") != group:
                continue
            acc = (obj.get("status") or {}).get("acceptedNames") or {}
            resources.update(n for n in (acc.get("plural"), acc.get("singular"), *(acc.get("shortNames") or ())) if n)
            kinds.update(n for n in (acc.get("kind"), acc.get("listKind")) if n)
        ours = {id(r) for served in self._served.values() for r in served[1]}
        for res in self.table.resources:
            if res.group == group and id(res) not in ours:
                resources.update((res.resource, res.singular, *res.short_names))
                kinds.update((res.kind, res.list_kind))
        return resources, kinds

    async def _write_status(self, name: str, status: Obj) -> bool:
        def mutate(current: Obj) -> Obj:
            current["status"] = copy.deepcopy(status)
            return current

        try:
            written = await self.writer.guaranteed_update(self.crd_res, "", name, mutate,
                                                          WriteOptions(field_manager=FIELD_MANAGER),
                                                          subresource="status", verb="update")
        except errors.NotFound:
            return False
        self._crds[name] = written
        self._queue.add(name)  # the next step (establish, storedVersions) follows
        return True

    # ---------------------------------------------------------------- serving

    def _serve(self, name: str, crd: Obj) -> str:
        """Put the CRD's resources in the table (replacing what it served if it changed); a problem, or ""."""
        status = crd.get("status") or {}
        signature = orjson.dumps([crd.get("spec"), status.get("acceptedNames")], option=orjson.OPT_SORT_KEYS)
        served = self._served.get(name)
        if served is not None and served[0] == signature:
            return ""
        try:
            resources = self._build(crd)
        except Exception as exc:  # a CRD kapi cannot serve must not stop anything else
            log.exception("customresourcedefinition %s cannot be served", name)
            return f"the resources cannot be built: {exc}"
        self._unserve(name)
        added: list[Resource] = []
        for res in resources:
            try:
                self.table.add(res)
            except errors.AlreadyExists as err:
                log.warning("customresourcedefinition %s: %s", name, err.message)
                for r in added:
                    self.table.remove(r.group, r.version, r.resource)
                return err.message
            added.append(res)
        self._served[name] = (signature, added)
        return ""

    def _build(self, crd: Obj) -> list[Resource]:
        return list(self._resources_of(crd)) if self._resources_of is not None else crd_resources(crd)

    def _unserve(self, name: str) -> None:
        served = self._served.pop(name, None)
        for res in served[1] if served else ():
            try:
                self.table.remove(res.group, res.version, res.resource)
            except errors.NotFound:
                pass

    def served(self, name: str) -> list[Resource]:
        """The resources the CRD ``name`` serves now."""
        served = self._served.get(name)
        return list(served[1]) if served else []

    # ---------------------------------------------------------------- deletion

    async def _finalize(self, name: str, crd: Obj) -> bool:
        """kube's CRDFinalizer: Terminating, the objects deleted, then the finalizer removed."""
        if CLEANUP_FINALIZER not in ((crd.get("metadata") or {}).get("finalizers") or []):
            return False
        status = copy.deepcopy(crd.get("status") or {})
        terminating = find_condition(crd, "Terminating")
        if terminating is None or terminating.get("status") != "True":
            set_condition(status, "Terminating", "True", "InstanceDeletionInProgress",
                          "CustomResource deletion is in progress")
            await self._write_status(name, status)
            crd = self._crds.get(name, crd)
            status = copy.deepcopy(crd.get("status") or {})
        res = self._instances_resource(name, crd)
        if res is not None:
            try:
                await self._delete_instances(res)
                remaining = len((await self.registry.list(res, "", ListOptions())).items)
            except errors.StatusError as err:
                set_condition(status, "Terminating", "True", "InstanceDeletionFailed",
                              f"could not list instances: {err.message}")
                await self._write_status(name, status)
                raise
            if remaining:
                set_condition(status, "Terminating", "True", "InstanceDeletionCheck",
                              f"could not confirm zero CustomResources remaining: {remaining} remaining")
                if status != (crd.get("status") or {}):
                    await self._write_status(name, status)
                raise errors.Conflict(f"{remaining} objects of {res.qualified} remain")
        set_condition(status, "Terminating", "False", "InstanceDeletionCompleted", "removed all instances")
        if status != (crd.get("status") or {}):
            await self._write_status(name, status)

        def drop_finalizer(current: Obj) -> Obj:
            md = current["metadata"]
            md["finalizers"] = [f for f in md.get("finalizers") or [] if f != CLEANUP_FINALIZER]
            if not md["finalizers"]:
                del md["finalizers"]
            return current

        try:
            await self.writer.guaranteed_update(self.crd_res, "", name, drop_finalizer,
                                                WriteOptions(field_manager=FIELD_MANAGER), verb="update")
        except errors.NotFound:
            pass
        return True

    def _instances_resource(self, name: str, crd: Obj) -> Resource | None:
        """The resource the CRD's objects are read through: its storage version's if served, else any."""
        resources = self.served(name)
        if not resources:
            try:
                resources = self._build(crd)
            except Exception:
                log.exception("customresourcedefinition %s: its objects cannot be listed", name)
                return None
        own = [r for r in resources if not r.storage_version]
        return (own or resources or [None])[0]

    async def _delete_instances(self, res: Resource) -> None:
        """kube's deleteInstances: a deletecollection in every namespace holding objects (from storage, as
        kube's: no admission, no audit)."""
        page = await self.registry.list(res, "", ListOptions())
        namespaces = sorted({(item_namespace(raw)) for raw in _objects(page)}) if res.namespaced else [""]
        for ns in namespaces:
            await self.registry.delete_collection(res, ns, ListOptions(), DeleteOptions())


def _objects(page: Any) -> list[Obj]:
    from kapi.encoding import listitems

    return list(listitems.objects(page.items))


def item_namespace(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def controller_for(registry: Registry, informer_of: Callable[[str, str], Informer]) -> CRDController:
    """The controller over the server's shared CRD informer (``Informers.informer``)."""
    return CRDController(registry, informer_of(GROUP, RESOURCE))
