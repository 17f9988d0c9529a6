"""The Registry: the one facade over storage the handlers and the server call, and its CRUD.

Owns the object semantics of SEMANTICS §5 for create and update: system metadata, generation,
preconditions, optimistic concurrency, status subresources; decoding what storage holds; and it
turns ``StorageError`` into API errors. LIST is in ``listing``, WATCH in ``watching``, DELETE in
``deletion``, the scale subresource in ``scale``: the facade's methods delegate to them.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, ContextManager, Iterable

import orjson
import trio

from kapi import errors
from kapi._fast import copy_tree
from kapi.cacher.cache import Cacher
from kapi.cacher.watcher import WatchCounts
from kapi.encoding import codec
from kapi.metrics import Metrics
from kapi.object import meta
from kapi.object.listopts import ListOptions, query_int64
from kapi.object.managedfields.update import is_reset, update_managed_fields
from kapi.object.schema import Schema, go_roundtrip, load_builtin
from kapi.object.selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from kapi.object.validation import validate_object_meta, validate_update_meta
from kapi.registry import applying, deletion, listing, scale, watching
from kapi.registry.deletion import DeleteOptions, DeleteResult
from kapi.registry.resources import Resource, ResourceTable, VersionConverter
from kapi.object.access import UserInfo
from kapi.registry.admit import CREATE, UPDATE, Admission, AdmissionRequest
from kapi.registry.strategy import Access, Allocation
from kapi.storage.base import Event, KeyValue, ListResult, Storage
from kapi.storage.routed import backend_of

Obj = dict[str, Any]
Mutate = Callable[[Obj], Obj | Awaitable[Obj]]
log = logging.getLogger("kapi.registry")

_GUARANTEED_UPDATE_TRIES = 16

# The object counts of resources without a watch cache (kube's store count poll and object count tracker)
OBJECT_COUNT_PERIOD_S = 60.0  # kube's --etcd-count-metric-poll-period default
OBJECT_COUNT_STALE_S = 180.0  # kube's staleTolerationThreshold: older counts read as the worst case
OBJECT_SIZE_SAMPLE = 100  # stored values whose sizes give a count's average
# What a stale count reads as (kube's list estimator: infiniteObjectCount objects of maxObjectSize)
STALE_OBJECT_STATS = (1_000_000_000, 1_500_000)
# A watch opened while its resource's cache loads waits this long for it (kube's freshness wait), then storage
CACHE_WAIT_S = 3.0


@dataclass(frozen=True, slots=True)
class WriteOptions:
    dry_run: bool = False
    # The manager an Update is recorded under in managedFields ("" when a request names none and sends no
    # User-Agent: kube records an entry without a manager); None: not recorded (the server's own writes).
    field_manager: str | None = None
    # Who writes, and what judges their access: a strategy's ``authorize_write`` reads them (RBAC's
    # escalation check). None for the server's own writes (bootstrap, controllers), which may do anything.
    requester: UserInfo | None = None
    access: Access | None = None
    # The request's admission (kapi.admission, bound to its user): mutating before the write's
    # validation, validating after it, on each try of an update. None: no admission (the server's own writes).
    admission: Admission | None = None
    # A server-side apply: the managedFields were made by the apply (kapi.registry.applying), so the
    # write records no Update entry of its own.
    apply: bool = False


@dataclass(frozen=True, slots=True)
class Selection:
    label: LabelSelector | None
    field: FieldSelector | None

    @property
    def everything(self) -> bool:
        return self.label is None and self.field is None


@dataclass
class Registry:
    """The generic store over a ``Storage``; one per server."""

    storage: Storage
    table: ResourceTable
    schema: Schema = field(default_factory=load_builtin)
    root: str = "/registry"
    metrics: Metrics = field(default_factory=Metrics)
    cachers: dict[tuple[str, str], Cacher] = field(default_factory=dict)
    _written: dict[tuple[str, str], int] = field(default_factory=dict)  # see wrote()
    _allocations: dict[tuple[str, str], Allocation] = field(default_factory=dict)  # see _allocation
    _reported: set[tuple[str, int]] = field(default_factory=set)  # corrupt (key, revision) pairs logged
    # Storage watches (resources without a watch cache, in-process informers), as the cachers count theirs
    storage_watches: WatchCounts = field(default_factory=WatchCounts)
    # The same watches by the resource each serves, ended when its route changes (see storage_route)
    storage_routes: watching.StorageRoutes = field(default_factory=watching.StorageRoutes)
    # The caches being made (the table gained their resource, or they restart): see cacher_for_watch
    _caches_coming: dict[tuple[str, str], trio.Event] = field(default_factory=dict)
    # (group, resource) -> (objects, average stored bytes, trio time counted): see track_object_counts
    _object_counts: dict[tuple[str, str], tuple[int, int, float]] = field(default_factory=dict)
    _by_group_resource: tuple[int, dict[tuple[str, str], Resource]] = field(default_factory=lambda: (-1, {}))
    # The largest value a write may store: etcd's default --max-request-bytes, kube-apiserver's limit in effect
    max_object_bytes: int = 1_572_864

    def __post_init__(self) -> None:
        self.table.subscribe(self._table_changed)

    # ------------------------------------------------------------ helpers

    def key(self, res: Resource, namespace: str, name: str) -> str:
        return meta.storage_key(self.root, self._storage_res(res).prefix, namespace if res.namespaced else "", name)

    def prefix(self, res: Resource, namespace: str) -> str:
        return meta.list_prefix(self.root, self._storage_res(res).prefix, namespace if res.namespaced else "")

    def _storage_res(self, res: Resource) -> Resource:
        if res.storage_of[1]:
            found = self.table.get(res.storage_of[0], "v1", res.storage_of[1])
            assert found is not None
            return found
        return res

    # What storage holds may not be an object kapi can serve (written by an older kapi, by another
    # etcd client, or damaged on disk): ``decode`` raises ``CorruptObject`` naming the key. Reads of
    # one object answer kube-apiserver's 500 for it (``decode_one``); LIST and WATCH leave it out and
    # log it once (``skip_corrupt``), so that no consumer ever sees a value Go's decoder would refuse.

    def decode(self, res: Resource, kv: KeyValue, json_safe: bool = True) -> Obj:
        """The stored object as ``res`` serves it; ``json_safe``: check that it encodes as JSON too."""
        try:
            obj = codec.decode_object(kv.value)
            if json_safe:
                codec.check_json(obj)
            meta.metadata(obj)["resourceVersion"] = str(kv.revision)
            return res.strategy.from_storage(obj)
        except codec.CorruptObject as exc:
            raise codec.CorruptObject(str(exc), key=kv.key, revision=kv.revision) from None

    @staticmethod
    def decode_metadata(res: Resource, kv: KeyValue) -> Obj:
        try:
            obj = codec.decode_metadata(kv.value)
            codec.check_metadata(obj["metadata"])
        except codec.CorruptObject as exc:
            raise codec.CorruptObject(str(exc), key=kv.key, revision=kv.revision) from None
        obj["metadata"]["resourceVersion"] = str(kv.revision)
        return obj

    def decode_one(self, res: Resource, kv: KeyValue) -> Obj:
        """One object read to answer a request: a corrupt one is kube-apiserver's 500 for it."""
        try:
            return self.decode(res, kv)
        except codec.CorruptObject as exc:
            raise self.corrupt_error(exc) from None

    def corrupt_error(self, exc: codec.CorruptObject) -> errors.InternalError:
        """The 500 answering a request for a corrupt object (logged once, as ``skip_corrupt``)."""
        self.skip_corrupt(exc)
        return corrupt_object_error(exc)

    def skip_corrupt(self, exc: codec.CorruptObject) -> None:
        """Log a corrupt stored object once per (key, revision), as kube's decode-error metric counts it."""
        seen = (exc.key, exc.revision)
        if seen in self._reported:
            return
        if len(self._reported) >= 10_000:
            self._reported.clear()
        self._reported.add(seen)
        log.error("corrupt object in storage, left out of lists and watches: key %s revision %d: %s",
                  exc.key, exc.revision, exc)

    def decoded_match(self, res: Resource, sel: Selection, kv: KeyValue,
                      decode: Callable[[Resource, KeyValue], Obj]) -> Obj | None:
        """The object at ``kv`` if it decodes and ``sel`` takes it; None (and logged once) if corrupt."""
        try:
            obj = decode(res, kv)
            if sel.everything:
                return obj
            # A value of the wrong type under spec or status (a selectable field) is corrupt too.
            try:
                return obj if self.matches(res, sel, obj) else None
            except (AttributeError, TypeError, ValueError) as exc:
                raise codec.CorruptObject(f"selectable fields: {exc}", key=kv.key, revision=kv.revision) from None
        except codec.CorruptObject as exc:
            self.skip_corrupt(exc)
            return None

    async def served(self, res: Resource, objs: list[Obj]) -> list[Obj]:
        """Decoded objects in the version ``res`` serves, where its conversion is I/O (a webhook)."""
        if not res.strategy.converts_async or not objs:
            return objs
        return await res.strategy.convert_from_storage(objs)

    async def encode_async(self, res: Resource, obj: Obj) -> bytes:
        """``encode``, converted to the storage version first where that is I/O (a webhook)."""
        if res.strategy.converts_async:
            obj = await res.strategy.convert_to_storage(obj)
        return self.encode(res, obj)

    async def _bounded(self, res: Resource, obj: Obj, value: bytes, opts: WriteOptions) -> bytes:
        """``value`` if it fits ``max_object_bytes``. Otherwise, as kube-apiserver retries a create, update
        or patch that etcd finds too large, ``obj`` loses its managedFields (they can be large) and is
        encoded again; an apply keeps them, and what still does not fit is 413."""
        if len(value) <= self.max_object_bytes:
            return value
        md = obj.get("metadata")
        if not opts.apply and isinstance(md, dict) and md.get("managedFields"):
            del md["managedFields"]
            value = await self.encode_async(res, obj)
            if len(value) <= self.max_object_bytes:
                return value
        raise errors.RequestEntityTooLarge(
            f"Request entity too large: the object would be stored in {len(value)} bytes, "
            f"the limit is {self.max_object_bytes}")

    def cacher_of(self, res: Resource) -> Cacher | None:
        """The watch cache serving ``res``: none where its conversion is I/O (kapi serves those from storage)."""
        return None if res.strategy.converts_async else self.cachers.get(res.cache_key)

    def encode(self, res: Resource, obj: Obj) -> bytes:
        stored = res.strategy.to_storage(obj)
        md = stored.get("metadata", {})
        if "resourceVersion" in md:
            md = dict(md)
            del md["resourceVersion"]
            stored = {**stored, "metadata": md}
        return codec.encode_value(stored)

    def wrote(self, res: Resource, revision: int) -> None:
        """Note a write of ``res`` stored at ``revision``: a watch cache past it holds every write made here."""
        stored = self._storage_res(res)
        key = (stored.group, stored.resource)
        if revision > self._written.get(key, 0):
            self._written[key] = revision

    def cached(self, res: Resource, namespace: str, name: str) -> Obj | None:
        """The object from the watch cache of ``res`` if that has seen every write made here, else None.

        None also when the cache does not hold it: only storage can tell absent from unreadable.
        """
        cacher = self.cachers.get(res.cache_key)
        if cacher is None or not cacher.ready or cacher.rv < self._written.get((res.group, res.resource), 0):
            return None
        entry = cacher.entry(self.key(res, namespace, name))
        if entry is None:
            return None
        obj: Obj = orjson.loads(entry.data)
        return obj

    async def count(self, res: Resource, namespace: str) -> int:
        """How many objects storage holds for ``res`` in ``namespace`` (readable or not), without reading them."""
        return await self.storage.count(self.prefix(res, namespace))

    def selection(self, res: Resource, opts: ListOptions) -> Selection:
        label = parse_label_selector(opts.label_selector) if opts.label_selector else None
        fsel = None
        if opts.field_selector:
            fsel = parse_field_selector(opts.field_selector, self.selectable_fields(res),
                                        labels=res.strategy.field_labels)
        if label is not None and label.empty:
            label = None
        if fsel is not None and not fsel.requirements:
            fsel = None
        return Selection(label, fsel)

    @staticmethod
    def selectable_fields(res: Resource) -> frozenset[str]:
        fields = res.strategy.field_labels.fields
        return fields if res.namespaced else fields - {"metadata.namespace"}

    def matches(self, res: Resource, sel: Selection, obj: Obj) -> bool:
        md = obj.get("metadata", {})
        if sel.label is not None and not sel.label.matches(md.get("labels") or {}):
            return False
        if sel.field is not None and not sel.field.matches(res.strategy.field_values(obj, res.namespaced)):
            return False
        return True

    def not_found(self, res: Resource, name: str) -> errors.NotFound:
        return errors.not_found(res.resource, res.group, name)

    # ---------------------------------------------------------------- get

    async def get_kv(self, res: Resource, namespace: str, name: str) -> KeyValue:
        try:
            return await self.storage.get(self.key(res, namespace, name))
        except errors.KeyNotFound:
            raise self.not_found(res, name) from None

    async def get(self, res: Resource, namespace: str, name: str, resource_version: str = "") -> Obj:
        """GET: from storage, or from the watch cache when a resourceVersion is given (SEMANTICS §3.1)."""
        cacher = self.cacher_of(res)
        if resource_version and cacher is not None and cacher.ready:
            return await listing.get_cached(self, cacher, res, namespace, name, resource_version)
        if resource_version:
            # etcd3's Get: a minimum resourceVersion newer than storage is "too large".
            rv = meta.parse_resource_version(resource_version)
            current = await backend_of(self.storage, self.key(res, namespace, name)).current_revision()
            if rv > current:
                raise errors.too_large_resource_version(rv, current, retry_after_s=0)
        obj = self.decode_one(res, await self.get_kv(res, namespace, name))
        return (await self.served(res, [obj]))[0] if res.strategy.converts_async else obj

    # --------------------------------------------- cache, list (listing.py)

    def make_cacher(self, res: Resource, *, capacity: int, indexed_fields: tuple[str, ...] = ()) -> Cacher:
        """The watch cache of ``res`` (not started); the server runs it and the registry uses it."""
        return listing.make_cacher(self, res, capacity=capacity, indexed_fields=indexed_fields)

    def protobuf_items(self, res: Resource, page: listing.Page) -> list[bytes]:
        """The page's items as protobuf messages; a cached object's is made once per version."""
        return listing.protobuf_items(self, res, page)

    async def list(self, res: Resource, namespace: str, opts: ListOptions) -> listing.Page:
        """A LIST: from the watch cache where SEMANTICS §1.2 says so, else from storage."""
        return await listing.list(self, res, namespace, opts)

    # ------------------------------------------------------------- create

    async def create(self, res: Resource, namespace: str, obj: Obj, opts: WriteOptions) -> Obj:
        obj = self._prepare_create(res, namespace, obj)
        # kube's create handler records the decoded body's fields before mutating admission and the store's
        # PrepareForCreate: what those add (a pod's service account, a Job's selector, a namespace's
        # finalizer) is no manager's
        self._track_fields(res, None, obj, opts, "")
        if opts.admission is not None:
            obj = await self._mutate(res, CREATE, "", namespace, obj, None, opts.admission, opts.dry_run)
        self._fill_system_fields(res, obj)
        md = obj["metadata"]
        causes = self._validate_meta(res, obj)
        causes += res.strategy.validate(obj)
        if causes:
            raise errors.invalid(res.kind, res.group, str(md.get("name", "")), causes)
        if opts.admission is not None:
            await opts.admission.validate(AdmissionRequest(CREATE, res, "", namespace, md["name"], obj, None,
                                                           opts.dry_run))
        await res.strategy.authorize_write(obj, None, opts)
        await res.strategy.before_create(obj, self._allocation(res))
        if opts.dry_run:
            md.pop("resourceVersion", None)
            return obj
        value = await self._bounded(res, obj, await self.encode_async(res, obj), opts)
        try:
            rev = await self.storage.create(self.key(res, namespace, md["name"]), value)
        except errors.KeyExists:
            raise errors.already_exists(res.resource, res.group, md["name"]) from None
        self.wrote(res, rev)
        md["resourceVersion"] = str(rev)
        return obj

    def _prepare_create(self, res: Resource, namespace: str, obj: Obj) -> Obj:
        """A copy of a create's body, checked, prepared by the strategy and defaulted: what mutating
        admission sees (kube's decoding; the system metadata comes after admission, as kube's)."""
        obj = copy_tree(obj)
        self._check_type_meta(res, obj)
        md = meta.metadata(obj)
        self._check_namespace_matches(res, namespace, md)
        if md.get("resourceVersion"):
            raise errors.BadRequest("resourceVersion should not be set on objects to be created")
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            md.pop(k, None)
        res.strategy.prepare_for_create(res, obj)
        self._decode_defaults(res, obj, None)  # kube decodes into Go structs first
        return obj

    @staticmethod
    def _fill_system_fields(res: Resource, obj: Obj) -> None:
        """kube's Store.Create after admission: uid, creation time and a generated name, then the rest of
        the kind's PrepareForCreate (a Job's generated selector, a namespace's finalizer)."""
        md = obj["metadata"]
        if not md.get("name") and md.get("generateName"):
            md["name"] = meta.generate_name(str(md["generateName"]))
        md["uid"] = meta.new_uid()
        md["creationTimestamp"] = meta.now_rfc3339()
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            md.pop(k, None)
        res.strategy.prepare_named(obj)

    async def _mutate(self, res: Resource, operation: str, subresource: str, namespace: str, new: Obj,
                      old: Obj | None, admission: Admission, dry_run: bool, defaulted: bool = True) -> Obj:
        """Mutating admission of a create or update. An object a plugin replaced (a webhook's patch, a
        policy's mutation) is decoded again as kube decodes a patched object: type checked, defaulted.

        ``defaulted``: an update's new object is defaulted first (as kube's handlers decode it) when a
        plugin that may change it will see it; a create's is defaulted already.
        """
        if subresource == "scale":
            assert old is not None
            req = AdmissionRequest(operation, res, subresource, namespace, old["metadata"]["name"],
                                   scale.to_scale(res, new), scale.to_scale(res, old), dry_run, scale.SCALE_KIND)
            before = copy_tree(req.obj)
            await admission.mutate(req)
            if req.obj != before and isinstance(req.obj, dict):
                res.strategy.set_replicas(new, scale.replicas_of(req.obj, new["metadata"]["name"]))
            return new
        if old is not None and defaulted:
            self._decode_defaults(res, new, old)
        name = str(new["metadata"].get("name") or "") if old is None else old["metadata"]["name"]
        req = AdmissionRequest(operation, res, subresource, namespace, name, new, old, dry_run)
        await admission.mutate(req)
        if req.obj is not new:
            if not isinstance(req.obj, dict):
                raise errors.InternalError("admission produced no object")
            new = req.obj
            self._check_type_meta(res, new)
            if old is None:  # an update's is defaulted by its preparation, next
                res.strategy.prepare_for_create(res, new)
                self._decode_defaults(res, new, None)
        elif old is None and admission.changes(operation, res):
            # Plugins changed it in place (with Go-shaped values): what the defaults derive from their
            # changes follows (a pod's QoS class from the resources LimitRanger set; kube's PrepareForCreate).
            res.strategy.default(new, None)
        return new

    def _decode_defaults(self, res: Resource, obj: Obj, old: Obj | None) -> None:
        """What kube's decoding of a body does: Go's shape, then the kind's defaults."""
        go_roundtrip(self.schema, (res.group, res.version, res.kind), obj)
        res.strategy.canonicalize(obj)
        res.strategy.default(obj, old)

    def _track_fields(self, res: Resource, old: Obj | None, new: Obj, opts: WriteOptions, subresource: str) -> None:
        """Record the write in ``metadata.managedFields`` (an Update by the request's field manager)."""
        if opts.field_manager is None or opts.apply:
            if new["metadata"].get("managedFields") == []:
                del new["metadata"]["managedFields"]  # a reset with no manager to record
            return
        entries = update_managed_fields(
            res.strategy.managed_fields_schema(self.schema), (res.group, res.version, res.kind), old, new,
            manager=opts.field_manager,
            subresource=subresource, api_version=res.group_version, now=meta.now_rfc3339(),
            reset_fields=res.strategy.reset_fields_of(res.has_status, subresource),
            converter=VersionConverter(self.table, res))
        if entries:
            new["metadata"]["managedFields"] = entries
        else:
            new["metadata"].pop("managedFields", None)

    def _check_type_meta(self, res: Resource, obj: Obj) -> None:
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if kind and kind != res.kind or api_version and api_version != res.group_version:
            raise errors.BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({res.group_version})" if api_version != res.group_version else
                f"the kind in the data ({kind}) does not match the expected kind ({res.kind})")
        obj["kind"] = res.kind
        obj["apiVersion"] = res.group_version

    def _check_namespace_matches(self, res: Resource, namespace: str, md: Obj) -> None:
        if not res.namespaced:
            md.pop("namespace", None)
            return
        body_ns = md.get("namespace")
        if body_ns and body_ns != namespace:
            raise errors.BadRequest("the namespace of the provided object does not match the namespace "
                                    "sent on the request")
        md["namespace"] = namespace

    def _allocation(self, res: Resource) -> Allocation:
        """What a strategy's ``before_create`` allocates from: a lock and the stored values of ``res``."""
        found = self._allocations.get((res.group, res.resource))
        if found is None:
            async def stored_values() -> list[bytes]:
                return [kv.value for kv in (await self.storage.list(self.prefix(res, ""))).items]

            found = self._allocations[(res.group, res.resource)] = Allocation(trio.Lock(), stored_values)
        return found

    @staticmethod
    def _validate_meta(res: Resource, obj: Obj) -> list[errors.Cause]:
        return validate_object_meta(obj, namespaced=res.namespaced, name_rule=res.strategy.name_rule,
                                    core_finalizers=res.strategy.core_finalizers)

    # ------------------------------------------------------------- update

    async def update(self, res: Resource, namespace: str, name: str, obj: Obj, opts: WriteOptions,
                     subresource: str = "") -> tuple[Obj, bool]:
        """PUT: replace the object (or its status); returns (object, created)."""
        obj = copy_tree(obj)
        self._check_type_meta(res, obj)
        md = meta.metadata(obj)
        if md.get("name") and md["name"] != name:
            raise errors.BadRequest(f"the name of the object ({md['name']}) does not match the name on "
                                    f"the URL ({name})")
        md["name"] = name
        self._check_namespace_matches(res, namespace, md)
        try:
            current = await self.storage.get(self.key(res, namespace, name))
        except errors.KeyNotFound:
            if res.strategy.create_on_update and not subresource:
                md.pop("resourceVersion", None)
                return await self.create(res, namespace, obj, opts), True
            raise self.not_found(res, name) from None
        wanted_rv = md.get("resourceVersion") or ""

        def mutate(old: Obj) -> Obj:
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)
            return obj

        updated = await self.guaranteed_update(res, namespace, name, mutate, opts, subresource,
                                               first=current)
        return updated, False

    async def guaranteed_update(self, res: Resource, namespace: str, name: str, mutate: Mutate,
                                opts: WriteOptions, subresource: str = "",
                                first: KeyValue | None = None) -> Obj:
        """Read, mutate, validate and compare-and-swap, retrying on races (GuaranteedUpdate): a retry
        starts from the value the failed compare-and-swap returned (``RevisionConflict.current``)."""
        key = self.key(res, namespace, name)
        kv = first
        for _ in range(_GUARANTEED_UPDATE_TRIES):
            if kv is None:
                kv = await self.get_kv(res, namespace, name)
            old = self.decode_one(res, kv)
            if res.strategy.converts_async:
                old = (await self.served(res, [old]))[0]
            # Objects stored before they took Go's shape get it here too, so the comparisons below
            # (generation, no-op writes) see only what the client changed.
            go_roundtrip(self.schema, (res.group, res.version, res.kind), old)
            defaulted = opts.admission is not None and subresource != "scale" and \
                opts.admission.changes(UPDATE, res)
            if defaulted:
                # Admission that may change it sees the new object defaulted (kube decodes it so): the stored
                # one is compared with it defaulted too, as kube decodes what it reads with the defaults.
                res.strategy.canonicalize(old)
                res.strategy.default(old, old)
            mutated = mutate(copy_tree(old))
            new = await mutated if inspect.isawaitable(mutated) else mutated
            # [] and [{}] reset managedFields: kube's field manager sees them before admission and before
            # omitempty drops []
            sent = new.get("metadata")
            reset = isinstance(sent, dict) and is_reset(sent.get("managedFields"))
            if opts.admission is not None:
                new = await self._mutate(res, UPDATE, subresource, namespace, new, old, opts.admission, opts.dry_run,
                                         defaulted)
            applied = new["metadata"].get("managedFields") if opts.apply and isinstance(new.get("metadata"), dict) \
                else None
            new = self._prepare_update(res, new, old, subresource, reset)
            if applied is not None:  # an apply's managedFields outlive a status write's metadata reset
                new["metadata"]["managedFields"] = applied
            if opts.admission is not None:
                await self._validate_update(res, subresource, namespace, name, new, old, opts)
            # After validation, on each try: what is judged is the object this try would write.
            await res.strategy.authorize_write(new, old, opts)
            self._track_fields(res, old, new, opts, subresource)
            if res.strategy.finished(new):
                # The update removed the last finalizer of an object being deleted: it goes now.
                if opts.dry_run:
                    return new
                try:
                    rev, _ = await self.storage.delete(key, kv.revision)
                    self.wrote(res, rev)
                except errors.RevisionConflict as exc:
                    kv = exc.current
                    continue
                except errors.KeyNotFound:
                    kv = None
                    continue
                return new
            value = await self.encode_async(res, new)
            if _same_value(value, kv.value):
                return old  # nothing changed: no write, the resourceVersion stays
            if opts.dry_run:
                return new
            value = await self._bounded(res, new, value, opts)
            try:
                rev = await self.storage.update(key, value, kv.revision)
            except errors.RevisionConflict as exc:
                kv = exc.current
                continue
            except errors.KeyNotFound:
                raise self.not_found(res, name) from None
            self.wrote(res, rev)
            new["metadata"]["resourceVersion"] = str(rev)
            return new
        raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)

    @staticmethod
    async def _validate_update(res: Resource, subresource: str, namespace: str, name: str, new: Obj, old: Obj,
                               opts: WriteOptions) -> None:
        """Validating admission of one try of an update (a scale's sees the Scales, as kube's scale REST)."""
        assert opts.admission is not None
        if subresource == "scale":
            req = AdmissionRequest(UPDATE, res, subresource, namespace, name, scale.to_scale(res, new),
                                   scale.to_scale(res, old), opts.dry_run, scale.SCALE_KIND)
        else:
            req = AdmissionRequest(UPDATE, res, subresource, namespace, name, new, old, opts.dry_run)
        await opts.admission.validate(req)

    def _prepare_update(self, res: Resource, new: Obj, old: Obj, subresource: str, reset: bool) -> Obj:
        self._check_type_meta(res, new)
        go_roundtrip(self.schema, (res.group, res.version, res.kind), new)  # kube decodes into Go structs first
        md = meta.metadata(new)
        old_md = old["metadata"]
        if reset:
            md["managedFields"] = []
        if not md.get("uid"):
            md["uid"] = old_md.get("uid")
        # kube's BeforeUpdate ignores changes to the creation timestamp: it keeps the old one.
        if old_md.get("creationTimestamp"):
            md["creationTimestamp"] = old_md["creationTimestamp"]
        elif not md.get("creationTimestamp"):
            md["creationTimestamp"] = old_md.get("creationTimestamp")
        causes = validate_update_meta(new, old)
        if causes:
            raise errors.invalid(res.kind, res.group, old_md["name"], causes)
        md["namespace"] = old_md.get("namespace") if res.namespaced else None
        if not res.namespaced:
            md.pop("namespace", None)
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if k in old_md:
                md[k] = old_md[k]
            else:
                md.pop(k, None)
        if old_md.get("deletionTimestamp"):
            added = set(md.get("finalizers") or ()) - set(old_md.get("finalizers") or ())
            if added:
                raise errors.invalid(res.kind, res.group, old_md["name"], [errors.Cause(
                    "FieldValueForbidden",
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {sorted(added)!r}".replace("'", '"'), "metadata.finalizers")])
        new = res.strategy.prepare_for_update(res, new, old, subresource)
        if subresource == "status":
            causes = res.strategy.validate_status_update(new, old)
        else:
            res.strategy.canonicalize(new)
            res.strategy.default(new, old)
            causes = self._validate_meta(res, new)
            causes += res.strategy.validate_update(new, old)
        if causes:
            raise errors.invalid(res.kind, res.group, old_md["name"], causes)
        return new

    # ------------------------------------------------- apply (applying.py)

    async def apply(self, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions, *,
                    force: bool, subresource: str = "", merged: Callable[[], None] = lambda: None) -> tuple[Obj, bool]:
        """Server-side apply of ``config``; returns (object, created). ``merged``: see ``applying.apply``."""
        return await applying.apply(self, res, namespace, name, config, opts, force=force, subresource=subresource,
                                    merged=merged)

    # -------------------------------------------------------- scale (scale.py)

    async def get_scale(self, res: Resource, namespace: str, name: str) -> Obj:
        return await scale.get_scale(self, res, namespace, name)

    async def update_scale(self, res: Resource, namespace: str, name: str, scale_mutate: Mutate,
                           opts: WriteOptions) -> Obj:
        return await scale.update_scale(self, res, namespace, name, scale_mutate, opts)

    # ---------------------------------------------------- delete (deletion.py)

    async def delete(self, res: Resource, namespace: str, name: str, opts: DeleteOptions,
                     mutate: bool = True) -> DeleteResult:
        result = await deletion.delete(self, res, namespace, name, opts, mutate)
        if res.strategy.converts_async and result.obj.get("kind") != "Status":
            result.obj = (await self.served(res, [result.obj]))[0]  # deletion read it in the storage version
        return result

    async def delete_collection(self, res: Resource, namespace: str, list_opts: ListOptions,
                                opts: DeleteOptions) -> ListResult[Obj]:
        return await deletion.delete_collection(self, res, namespace, list_opts, opts)  # each through delete

    # ----------------------------------------------------- watch (watching.py)

    def watch(self, res: Resource, namespace: str, opts: ListOptions,
              initial_filter: Callable[[bytes], bool] | None = None,
              metadata_only: bool = False) -> AsyncIterator[tuple[str, Obj]]:
        """Watch events from storage with selector transitions (see ``watching.watch``)."""
        return watching.watch(self, res, namespace, opts, initial_filter, metadata_only)

    async def watch_lines(self, res: Resource, namespace: str, opts: ListOptions, deadline: float,
                          proto: bool = False, initialized: Callable[[], None] | None = None
                          ) -> AsyncIterator[bytes]:
        """Open a watch for the API: an iterator of event lines, ready to send (see ``watching``).

        ``initialized``: called once the initial events have been handed off (see ``watching.watch_lines``).
        """
        return await watching.watch_lines(self, res, namespace, opts, deadline, proto, initialized)

    # ------------------------------- the route of a watch: the watch cache or storage (watching.py)

    def storage_route(self, res: Resource, events: trio.MemoryReceiveChannel[Event],
                      route: Callable[[], Cacher | None] | None = None) -> ContextManager[None]:
        """Hold ``events``, a storage watch serving ``res``, while storage is the route of its watches.

        Its channel is closed (its reader ends the watch cleanly) when ``res`` leaves the table or a
        watch cache starts serving it (``route()``, by default ``cacher_of(res)``), and at once when
        either is already so.
        """
        served = self.table.get(res.group, res.version, res.resource) is res
        return self.storage_routes.held(res, events, route or (lambda: self.cacher_of(res)), served)

    def _table_changed(self, change: str, res: Resource) -> None:
        if change == "removed":
            # As the watches of its stopped cache end: the clients re-list and see 404.
            self.storage_routes.end(lambda held, _route: held is res)

    def expect_cache(self, key: tuple[str, str]) -> None:
        """A watch cache for ``key`` is being made: watches wait for it (``cacher_for_watch``)."""
        if key not in self.cachers:
            self._caches_coming.setdefault(key, trio.Event())

    def serve_cache(self, key: tuple[str, str], cacher: Cacher) -> None:
        """``cacher`` (loaded) serves ``key`` from now on: the watches waiting for it go on, and the
        storage-backed watches of its resources end, to resume on it."""
        self.cachers[key] = cacher
        self.settle_caches(key)
        self.storage_routes.end(lambda res, route: res.cache_key == key and route() is not None)

    def settle_caches(self, *keys: tuple[str, str]) -> None:
        """No cache for ``keys`` is coming any more (served, or not wanted): their waiting watches go on."""
        for key in keys:
            coming = self._caches_coming.pop(key, None)
            if coming is not None:
                coming.set()

    def caches_coming(self) -> set[tuple[str, str]]:
        return set(self._caches_coming)

    async def cacher_for_watch(self, res: Resource) -> Cacher | None:
        """The watch cache a watch of ``res`` uses, or None for storage.

        A cache still loading is waited for (at most ``CACHE_WAIT_S``), as kube's cacher waits for
        readiness before registering a watch (before 1.31; since, it answers 429 and the client
        retries): a watch opened right after its resource was added lands on the cache. Past the
        wait, storage serves it until the cache is ready (``serve_cache`` ends it there).
        """
        cacher = self.cacher_of(res)
        coming = self._caches_coming.get(res.cache_key)
        if cacher is None and coming is not None and not res.strategy.converts_async:
            with trio.move_on_after(CACHE_WAIT_S):
                await coming.wait()
            cacher = self.cacher_of(res)
        return cacher

    # ------------------- what APF's work estimates read (kapi.chain.flowcontrol.estimate.ObjectStats)

    def resource_of(self, group: str, resource: str) -> Resource | None:
        """A served resource by group and plural: its first version in the table (the preferred one; they
        share storage)."""
        generation, index = self._by_group_resource
        if generation != self.table.generation:
            index = {}
            for r in self.table.resources:
                index.setdefault((r.group, r.resource), r)
            self._by_group_resource = (self.table.generation, index)
        return index.get((group, resource))

    def object_stats(self, group: str, resource: str) -> tuple[int, int] | None:
        """(objects, average bytes) of a resource: its watch cache's own sums, else the last storage count.

        None when nothing is known (kube: not found); a count not refreshed for 3 minutes reads
        as kube's stale worst case. The cache's sizes are of what a LIST sends (the served JSON).
        """
        cacher = self.cachers.get((group, resource))
        if cacher is not None and cacher.ready:
            return cacher.object_stats()
        counted = self._object_counts.get((group, resource))
        if counted is None:
            return None
        count, average, at = counted
        if trio.current_time() - at > OBJECT_COUNT_STALE_S:
            return STALE_OBJECT_STATS
        return count, average

    def watch_count(self, group: str, resource: str, namespace: str, name: str) -> int:
        """Watchers a write of ``name`` in ``namespace`` would be offered to (kube's GetInterestedWatchCount):

        those of the whole resource, of the namespace and of that object (``name`` "" for a create),
        on its watch cache and on storage.
        """
        res = self.resource_of(group, resource)
        if res is None:
            return 0
        prefixes = [self.prefix(res, "")]
        if namespace and res.namespaced:
            prefixes.append(self.prefix(res, namespace))
        count = self.storage_watches.count(prefixes, name)
        cacher = self.cachers.get((group, resource))
        if cacher is not None:
            count += cacher.watch_count(prefixes, name)
        return count

    def lists_from_cache(self, group: str, resource: str, query: dict[str, str]) -> bool:
        """Whether a LIST with ``query`` would be answered by the watch cache (the route the cacher takes)."""
        cacher = self.cachers.get((group, resource))
        if cacher is None:
            return False
        try:
            limit = max(query_int64(query, "limit") or 0, 0)
        except errors.BadRequest:
            return False  # refused before anything is read
        opts = ListOptions(resource_version=query.get("resourceVersion", ""),
                           resource_version_match=query.get("resourceVersionMatch", ""), limit=limit,
                           continue_token=query.get("continue", ""))
        return cacher.lists_from_cache(opts, not query.get("labelSelector") and not query.get("fieldSelector"))

    async def track_object_counts(self, *, period_s: float = OBJECT_COUNT_PERIOD_S,
                                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Count the objects of every stored resource without a watch cache, every ``period_s`` (kube's count poll)."""
        task_status.started()
        while True:
            await self.refresh_object_counts()
            await trio.sleep(period_s)

    async def refresh_object_counts(self) -> None:
        """One round of ``track_object_counts``: a count, and the sizes of a first page for the average."""
        counted: dict[str, tuple[int, int, float]] = {}
        for res in self.table.resources:
            if res.virtual or res.cache_key in self.cachers:
                continue
            prefix = self.prefix(res, "")
            if prefix not in counted:
                try:
                    count = await self.storage.count(prefix)
                    sample = (await self.storage.list(prefix, limit=OBJECT_SIZE_SAMPLE)).items
                except errors.StorageError as exc:
                    log.info("object count of %s: %s", res.qualified, exc)  # goes stale as kube's
                    continue
                average = sum(len(kv.value) for kv in sample) // len(sample) if sample else 0
                counted[prefix] = (count, average, trio.current_time())
            self._object_counts[(res.group, res.resource)] = counted[prefix]

    # ---------------------------------------------------------- bootstrap

    async def ensure_exists(self, res: Resource, namespace: str, obj: Obj) -> None:
        """Create ``obj`` unless it exists (start-up objects)."""
        try:
            await self.get_kv(res, namespace, obj["metadata"]["name"])
            return
        except errors.NotFound:
            pass
        try:
            await self.create(res, namespace, obj, WriteOptions())
        except errors.AlreadyExists:
            pass

    def resources(self) -> Iterable[Resource]:
        return self.table.resources


# How long a client is asked to wait before it retries a request storage could not answer
STORAGE_RETRY_AFTER_S = 1


def storage_fault(exc: errors.StorageUnavailable) -> errors.StatusError:
    """The Status of a request storage did not answer, one a client can act on (never a 500), with
    ``Retry-After``: a write sent without an answer (``OutcomeUnknown``) is kube's 504 Timeout (storage's
    NewTimeoutError; re-read before retrying, it may have been applied); storage that cannot be reached
    is 503 ServiceUnavailable."""
    if isinstance(exc, errors.OutcomeUnknown):
        return errors.ServerTimeout(f"Timeout: the storage did not answer in time; the write may or may not have "
                                    f"been applied: {exc}", retry_after_s=STORAGE_RETRY_AFTER_S)
    return errors.ServiceUnavailable(f"the storage is unavailable: {exc}", retry_after_s=STORAGE_RETRY_AFTER_S)


def corrupt_object_error(exc: codec.CorruptObject) -> errors.InternalError:
    """kube-apiserver's answer for an object it cannot decode (storeerr: corrupt object -> InternalError)."""
    detail = (f"StorageError: corrupt object, Code: 7, Key: {exc.key}, ResourceVersion: 0, "
              f"AdditionalErrorMsg: object not decodable revision={exc.revision}: {exc}")
    return errors.InternalError(f"Internal error occurred: {detail}", causes=[errors.Cause(message=detail)])


_COUNTED_BYTES = tuple(bytes([c]) for c in b"0123456789abcdef")


def _same_value(a: bytes, b: bytes) -> bool:
    """Two stored values hold the same object: the same bytes, or the same JSON with keys in another
    order (kube compares Go-encoded bytes, whose order is the struct's; a dict keeps the order it was
    built in). A true is never a 1, nor a 1.0 a 1, as in JSON text."""
    if a == b:
        return True
    if len(a) != len(b):
        return False
    # The same object with its keys in another order is a permutation of the same bytes: a byte counted
    # differently in each tells them apart without decoding (digits and hex letters: what changes most).
    if any(a.count(p) != b.count(p) for p in _COUNTED_BYTES):
        return False
    try:
        return orjson.dumps(codec.decode_value(a), option=orjson.OPT_SORT_KEYS) == \
            orjson.dumps(codec.decode_value(b), option=orjson.OPT_SORT_KEYS)
    except (TypeError, errors.CorruptObject):  # an integer orjson cannot carry: take them as different
        return False
