"""Generic CRUD over storage for every table-driven resource.

Owns the object semantics of SEMANTICS §5: system metadata, generation,
preconditions, optimistic concurrency, graceful deletion and finalizers,
status and scale subresources; and it turns ``StorageError`` into API errors.
"""

from __future__ import annotations

import copy
import logging
import sys
from contextlib import aclosing
import ipaddress
import random
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterable

import orjson
import trio

from kapi import errors
from kapi.encoding import codec
from kapi.encoding import protobuf
from kapi.object import meta
from kapi.object.defaults import apply_defaults
from kapi.object.listopts import ListOptions, decode_continue, encode_continue
from kapi.object.managedfields.update import reset_fields_for, update_managed_fields
from kapi.object.schema import Schema, go_roundtrip, load_builtin
from kapi.object.selectors import (FieldSelector, LabelSelector, field_values, parse_field_selector,
    parse_label_selector, selectable_fields)
from kapi.storage.base import KeyValue, Storage
from kapi.cacher.cache import CacheConfig, Cacher, Delegate, WatchStart
from kapi.cacher.store import Entry
from kapi.cacher.watcher import Encoder, Filter, transition
from kapi.metrics import Metrics
from kapi.object.validation import validate, validate_object_meta, validate_update_meta
from kapi.registry import convert
from kapi.registry.resources import Resource, ResourceTable

Obj = dict[str, Any]
Mutate = Callable[[Obj], Obj]
log = logging.getLogger("kapi.registry")

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_DECODE_CHUNK = 500
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
_GUARANTEED_UPDATE_TRIES = 16
_PAGE_CAP = 10_000


@dataclass(frozen=True, slots=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    dry_run: bool = False
    grace_period_s: int | None = None
    propagation_policy: str = ""
    orphan_dependents: bool | None = None
    precondition_uid: str = ""
    precondition_rv: str = ""
    # DeleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: remove an object that cannot be
    # decoded, without reading it (no preconditions, finalizers or grace period).
    ignore_store_read_error: bool = False


@dataclass(slots=True)
class ListPage:
    """A page of a LIST: decoded objects (from storage) or their JSON (from the watch cache)."""

    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None
    raw: list[bytes] | None = None  # list-item JSON, when served from the cache
    entries: list[Entry] | None = None  # the cache entries behind ``raw``
    source: str = "storage"
    scanned: int = 0
    index: str = ""

    def objects(self) -> list[Obj]:
        """The items as dicts (decoding cached JSON only when a caller needs dicts)."""
        if self.raw is not None:
            with codec.paused_gc():
                return [orjson.loads(b) for b in self.raw]
        return self.items

    def __len__(self) -> int:
        return len(self.raw) if self.raw is not None else len(self.items)


@dataclass(frozen=True, slots=True)
class Selection:
    label: LabelSelector | None
    field: FieldSelector | None

    @property
    def everything(self) -> bool:
        return self.label is None and self.field is None


@dataclass(slots=True)
class DeleteResult:
    obj: Obj
    deleted: bool  # False: the object stays (finalizers or a grace period)


@dataclass
class Registry:
    """The generic store over a ``Storage``; one per server."""

    storage: Storage
    table: ResourceTable
    schema: Schema = field(default_factory=load_builtin)
    root: str = "/registry"
    metrics: Metrics = field(default_factory=Metrics)
    cachers: dict[tuple[str, str], Cacher] = field(default_factory=dict)
    _ip_lock: trio.Lock = field(default_factory=trio.Lock)
    _reported: set[tuple[str, int]] = field(default_factory=set)  # corrupt (key, revision) pairs logged

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
    # etcd client, or damaged on disk): ``_decode`` raises ``CorruptObject`` naming the key. Reads of
    # one object answer kube-apiserver's 500 for it (``_decode_one``); LIST and WATCH leave it out and
    # log it once (``_skip_corrupt``), so that no consumer ever sees a value Go's decoder would refuse.

    def _decode(self, res: Resource, kv: KeyValue, json_safe: bool = True) -> Obj:
        """The stored object as ``res`` serves it; ``json_safe``: check that it encodes as JSON too."""
        try:
            obj = codec.decode_object(kv.value)
            if json_safe:
                codec.check_json(obj)
            meta.metadata(obj)["resourceVersion"] = str(kv.revision)
            return convert.from_storage(res, obj)
        except codec.CorruptObject as exc:
            raise codec.CorruptObject(str(exc), key=kv.key, revision=kv.revision) from None

    @staticmethod
    def _decode_metadata(res: Resource, kv: KeyValue) -> Obj:
        try:
            obj = codec.decode_metadata(kv.value)
            codec.check_metadata(obj["metadata"])
        except codec.CorruptObject as exc:
            raise codec.CorruptObject(str(exc), key=kv.key, revision=kv.revision) from None
        obj["metadata"]["resourceVersion"] = str(kv.revision)
        return obj

    def _decode_one(self, res: Resource, kv: KeyValue) -> Obj:
        """One object read to answer a request: a corrupt one is kube-apiserver's 500 for it."""
        try:
            return self._decode(res, kv)
        except codec.CorruptObject as exc:
            self._skip_corrupt(exc)
            raise corrupt_object_error(exc) from None

    def _skip_corrupt(self, exc: codec.CorruptObject) -> None:
        """Log a corrupt stored object once per (key, revision), as kube's decode-error metric counts it."""
        seen = (exc.key, exc.revision)
        if seen in self._reported:
            return
        if len(self._reported) >= 10_000:
            self._reported.clear()
        self._reported.add(seen)
        log.error("corrupt object in storage, left out of lists and watches: key %s revision %d: %s",
                  exc.key, exc.revision, exc)

    def _decoded_match(self, res: Resource, sel: Selection, kv: KeyValue,
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
            self._skip_corrupt(exc)
            return None

    def _encode(self, res: Resource, obj: Obj) -> bytes:
        stored = convert.to_storage(res, obj)
        md = stored.get("metadata", {})
        if "resourceVersion" in md:
            md = dict(md)
            del md["resourceVersion"]
            stored = {**stored, "metadata": md}
        return codec.encode_value(stored)

    async def count(self, res: Resource, namespace: str) -> int:
        """How many objects storage holds for ``res`` in ``namespace`` (readable or not), without reading them."""
        return await self.storage.count(self.prefix(res, namespace))

    def selection(self, res: Resource, opts: ListOptions) -> Selection:
        label = parse_label_selector(opts.label_selector) if opts.label_selector else None
        fsel = None
        if opts.field_selector:
            fsel = parse_field_selector(opts.field_selector, self.selectable_fields(res), kind=res.kind)
        if label is not None and label.empty:
            label = None
        if fsel is not None and not fsel.requirements:
            fsel = None
        return Selection(label, fsel)

    @staticmethod
    def selectable_fields(res: Resource) -> frozenset[str]:
        fields = selectable_fields(res.kind)
        return fields if res.namespaced else fields - {"metadata.namespace"}

    def matches(self, res: Resource, sel: Selection, obj: Obj) -> bool:
        md = obj.get("metadata", {})
        if sel.label is not None and not sel.label.matches(md.get("labels") or {}):
            return False
        if sel.field is not None and not sel.field.matches(field_values(res.kind, obj, res.namespaced)):
            return False
        return True

    def _not_found(self, res: Resource, name: str) -> errors.NotFound:
        return errors.not_found(res.resource, res.group, name)

    # ---------------------------------------------------------------- get

    async def get_kv(self, res: Resource, namespace: str, name: str) -> KeyValue:
        try:
            return await self.storage.get(self.key(res, namespace, name))
        except errors.KeyNotFound:
            raise self._not_found(res, name) from None

    async def get(self, res: Resource, namespace: str, name: str, resource_version: str = "") -> Obj:
        """GET: from storage, or from the watch cache when a resourceVersion is given (SEMANTICS §3.1)."""
        cacher = self.cachers.get((res.group, res.resource))
        if resource_version and cacher is not None and cacher.ready:
            if resource_version != "0":
                await cacher.wait_for_rv(meta.parse_resource_version(resource_version))
            entry = cacher.get(self.key(res, namespace, name))
            if entry is None:
                raise self._not_found(res, name)
            obj: Obj = orjson.loads(cacher.encoder.typed(entry.data))
            return obj
        if resource_version:
            # etcd3's Get: a minimum resourceVersion newer than storage is "too large".
            rv = meta.parse_resource_version(resource_version)
            current = self.storage.current_revision()
            if rv > current:
                raise too_large_rv(rv, current)
        return self._decode_one(res, await self.get_kv(res, namespace, name))

    # -------------------------------------------------------------- cache

    def make_cacher(self, res: Resource, *, capacity: int, indexed_fields: tuple[str, ...] = ()) -> Cacher:
        """The watch cache of ``res`` (not started); the server runs it and the registry uses it."""
        def make_entry(value: bytes, revision: int) -> Entry:
            # Raises CorruptObject (or any error of a value nobody foresaw): the cacher leaves the key
            # out of its state and logs it once (see Cacher._entry).
            obj = self._decode(res, KeyValue("", value, revision, 0), json_safe=False)  # dumped below
            md = obj["metadata"]
            # orjson's buffer is larger than its output: keep an exact copy, the cache holds it long.
            data = bytes(memoryview(orjson.dumps({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})))
            ns = md.get("namespace", "")
            key = self.key(res, ns, md.get("name", ""))
            # Label and field values repeat across objects (app names, node names, phases): share them.
            labels = {sys.intern(k): sys.intern(v) for k, v in (md.get("labels") or {}).items()}
            fields = {k: v if k == "metadata.name" else sys.intern(v)
                      for k, v in field_values(res.kind, obj, res.namespaced).items()}
            return Entry(key, ns, md.get("name", ""), revision, labels, fields, data)

        cacher = Cacher(self.storage, self.prefix(res, ""), make_entry,
                        Encoder(res.kind, res.group_version, self.schema),
                        group=res.group, resource=res.resource, metrics=self.metrics,
                        config=CacheConfig(capacity=capacity, indexed_fields=indexed_fields))
        self.cachers[(res.group, res.resource)] = cacher
        return cacher

    def protobuf_items(self, res: Resource, page: ListPage) -> list[bytes]:
        """The page's items as protobuf messages; a cached object's is made once per version."""
        gvk = (res.group, res.version, res.kind)
        if page.entries is None:
            return [protobuf.encode(self.schema, gvk, obj) for obj in page.items]
        out = []
        for e in page.entries:
            if e.proto is None:
                e.proto = protobuf.encode(self.schema, gvk, orjson.loads(e.data))
            out.append(e.proto)
        return out

    def _filter(self, res: Resource, namespace: str, sel: Selection) -> Filter:
        return Filter(self.prefix(res, namespace), sel.label, sel.field)

    # --------------------------------------------------------------- list

    async def list(self, res: Resource, namespace: str, opts: ListOptions) -> ListPage:
        """A LIST: from the watch cache where SEMANTICS §1.2 says so, else from storage."""
        sel = self.selection(res, opts)
        cacher = self.cachers.get((res.group, res.resource))
        reason = "uncached"
        if cacher is not None:
            try:
                got = await cacher.list(opts, self._filter(res, namespace, sel))
            except Delegate as d:
                reason = d.reason
            else:
                return ListPage([], str(got.resource_version), got.continue_token, got.remaining,
                                [e.data for e in got.entries], got.entries, got.source, got.scanned, got.index)
        self.metrics.storage_list_total.labels(group=res.group, resource=res.resource, reason=reason).inc()
        page = await self._list_storage(res, namespace, opts, sel)
        return page

    async def _list_storage(self, res: Resource, namespace: str, opts: ListOptions, sel: Selection) -> ListPage:
        """A LIST served from storage with etcd's paging rules (SEMANTICS §1.2, §1.3)."""
        prefix = self.prefix(res, namespace)
        revision: int | None = None
        start = prefix
        if opts.continue_token:
            token = decode_continue(opts.continue_token)
            start = prefix + token.start
            revision = token.revision if token.revision > 0 else None
        elif opts.resource_version and opts.resource_version != "0":
            rv = int(opts.resource_version)
            exact = opts.resource_version_match == "Exact" or (
                not opts.resource_version_match and opts.limit > 0)
            current = self.storage.current_revision()
            if rv > current:  # etcd: "required revision is a future revision", Exact or not
                raise too_large_rv(rv, current)
            if exact:
                revision = rv
        limit = opts.limit if opts.limit > 0 else 0  # storage honours limit, even with rv=0
        items: list[Obj] = []
        remaining: int | None = None
        next_token = ""
        scanned = 0
        page = limit if limit else None
        while True:
            try:
                result = await self.storage.list(prefix, revision=revision, start=start, limit=page)
            except errors.RevisionCompacted:
                raise self._expired(res, prefix, start if opts.continue_token else "") from None
            if revision is None:
                revision = result.revision
            last_key = ""
            scanned += len(result.items)
            with codec.paused_gc():
                for kv in result.items:
                    last_key = kv.key
                    # A corrupt object is left out, as the watch cache leaves it out: a LIST gives the
                    # same answer from either (kube-apiserver answers 500 StoreReadError naming the keys).
                    found = self._decoded_match(res, sel, kv, self._decode)
                    if found is not None:
                        items.append(found)
                        if limit and len(items) == limit:
                            break
            if limit and len(items) == limit and (result.more or last_key != result.items[-1].key):
                next_token = encode_continue(revision, last_key + "\x00", prefix)
                if sel.everything:
                    remaining = result.remaining + (len(result.items) - _index_of(result.items, last_key) - 1)
                break
            if not result.more or not limit:
                break
            start = last_key + "\x00"
            page = min(page * 2, _PAGE_CAP) if page else None
        if revision is not None and revision > self.storage.current_revision():
            revision = self.storage.current_revision()
        return ListPage(items, str(revision or self.storage.current_revision()), next_token,
                        remaining if remaining else None, scanned=scanned)

    def _expired(self, res: Resource, prefix: str, start: str) -> errors.Gone:
        msg = "The provided continue parameter is too old to display a consistent list result. " \
              "You can start a new list without the continue parameter, or use the continue token " \
              "in this response to retrieve the remainder of the results. Continuing with the provided " \
              "token results in an inconsistent list - objects that were created, modified, or deleted " \
              "between the time the first chunk was returned and now may show up in the list."
        if not start:
            return errors.Gone("The resourceVersion for the provided list is too old.")
        return errors.Gone(msg, list_continue=encode_continue(-1, start, prefix))

    # ------------------------------------------------------------- create

    async def create(self, res: Resource, namespace: str, obj: Obj, opts: WriteOptions) -> Obj:
        obj = self._prepare_create(res, namespace, obj)
        self._track_fields(res, None, obj, opts, "")
        md = obj["metadata"]
        if res.namespaced:
            await self._check_namespace_open(md["namespace"])
        if res.resource == "services":
            await self._allocate_cluster_ip(obj, opts.dry_run)
        if opts.dry_run:
            md.pop("resourceVersion", None)
            return obj
        try:
            rev = await self.storage.create(self.key(res, namespace, md["name"]), self._encode(res, obj))
        except errors.KeyExists:
            raise errors.already_exists(res.resource, res.group, md["name"]) from None
        md["resourceVersion"] = str(rev)
        return obj

    def _prepare_create(self, res: Resource, namespace: str, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        self._check_type_meta(res, obj)
        md = meta.metadata(obj)
        self._check_namespace_matches(res, namespace, md)
        if md.get("resourceVersion"):
            raise errors.BadRequest("resourceVersion should not be set on objects to be created")
        if not md.get("name") and md.get("generateName"):
            md["name"] = meta.generate_name(str(md["generateName"]))
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            md.pop(k, None)
        md["uid"] = meta.new_uid()
        md["creationTimestamp"] = meta.now_rfc3339()
        if res.tracks_generation:
            md["generation"] = 1
        else:
            md.pop("generation", None)
        if res.has_status and res.resource != "customresourcedefinitions":
            obj.pop("status", None)
        go_roundtrip(self.schema, (res.group, res.version, res.kind), obj)  # kube decodes into Go structs first
        convert.normalize_write(res, obj)
        apply_defaults(res.resource, res.group, obj)
        causes = validate_object_meta(obj, namespaced=res.namespaced, resource=res.resource, group=res.group)
        causes += validate(res.resource, res.group, obj, None)
        if causes:
            raise errors.invalid(res.kind, res.group, str(md.get("name", "")), causes)
        return obj

    def _track_fields(self, res: Resource, old: Obj | None, new: Obj, opts: WriteOptions, subresource: str) -> None:
        """Record the write in ``metadata.managedFields`` (an Update by the request's field manager)."""
        if not opts.field_manager:
            return
        entries = update_managed_fields(
            self.schema, (res.group, res.version, res.kind), old, new, manager=opts.field_manager,
            subresource=subresource, api_version=res.group_version, now=meta.now_rfc3339(),
            reset_fields=reset_fields_for(has_status=res.has_status, subresource=subresource))
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

    async def _check_namespace_open(self, namespace: str) -> None:
        ns_res = self.table.get("", "v1", "namespaces")
        assert ns_res is not None
        try:
            ns = await self.get(ns_res, "", namespace)
        except errors.NotFound:
            raise errors.not_found("namespaces", "", namespace) from None
        if ns.get("metadata", {}).get("deletionTimestamp") or ns.get("status", {}).get("phase") == "Terminating":
            raise errors.Forbidden(
                f"unable to create new content in namespace {namespace} because it is being terminated",
                name=namespace, kind="namespaces",
                causes=[errors.Cause(reason="NamespaceTerminating",
                                     message=f"namespace {namespace} is being terminated",
                                     field="metadata.namespace")])

    async def _allocate_cluster_ip(self, svc: Obj, dry_run: bool) -> None:
        spec = svc.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return
        wanted = spec.get("clusterIP")
        if wanted == "None":
            spec["clusterIPs"] = ["None"]
            return
        async with self._ip_lock:
            used = await self._used_cluster_ips()
            if wanted:
                try:
                    ip = ipaddress.ip_address(wanted)
                except ValueError:
                    ip = None
                if ip is None or ip not in SERVICE_CIDR:
                    raise errors.invalid("Service", "", svc["metadata"]["name"], [errors.Cause(
                        "FieldValueInvalid", f'Invalid value: "{wanted}": failed to allocate IP {wanted}: '
                        f"the provided IP ({wanted}) is not in the valid range. The range of valid IPs is "
                        f"{SERVICE_CIDR}", "spec.clusterIPs")])
                if str(ip) in used:
                    raise errors.invalid("Service", "", svc["metadata"]["name"], [errors.Cause(
                        "FieldValueInvalid", f'Invalid value: ["{wanted}"]: failed to allocate IP {wanted}: '
                        "provided IP is already allocated", "spec.clusterIPs")])
                chosen = str(ip)
            else:
                hosts = SERVICE_CIDR.num_addresses - 2
                for _ in range(64):
                    candidate = str(SERVICE_CIDR.network_address + random.randint(11, hosts))
                    if candidate not in used:
                        break
                chosen = candidate
        spec["clusterIP"] = chosen
        spec["clusterIPs"] = [chosen]

    async def _used_cluster_ips(self) -> set[str]:
        svc_res = self.table.get("", "v1", "services")
        assert svc_res is not None
        result = await self.storage.list(self.prefix(svc_res, ""))
        used = set()
        for kv in result.items:
            try:
                spec = codec.decode_value(kv.value).get("spec")
            except codec.CorruptObject:
                continue
            ip = spec.get("clusterIP") if isinstance(spec, dict) else None
            if ip and isinstance(ip, str):
                used.add(ip)
        return used

    # ------------------------------------------------------------- update

    async def update(self, res: Resource, namespace: str, name: str, obj: Obj, opts: WriteOptions,
                     subresource: str = "") -> tuple[Obj, bool]:
        """PUT: replace the object (or its status); returns (object, created)."""
        obj = copy.deepcopy(obj)
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
            if res.create_on_update and not subresource:
                md.pop("resourceVersion", None)
                return await self.create(res, namespace, obj, opts), True
            raise self._not_found(res, name) from None
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
        """Read, mutate, validate and compare-and-swap, retrying on races (GuaranteedUpdate)."""
        key = self.key(res, namespace, name)
        kv = first
        for _ in range(_GUARANTEED_UPDATE_TRIES):
            if kv is None:
                kv = await self.get_kv(res, namespace, name)
            old = self._decode_one(res, kv)
            # Objects stored before they took Go's shape get it here too, so the comparisons below
            # (generation, no-op writes) see only what the client changed.
            go_roundtrip(self.schema, (res.group, res.version, res.kind), old)
            new = mutate(copy.deepcopy(old))
            new = self._prepare_update(res, new, old, subresource)
            self._track_fields(res, old, new, opts, subresource)
            if res.resource == "namespaces" and _namespace_finished(new):
                if opts.dry_run:
                    return new
                try:
                    await self.storage.delete(key, kv.revision)
                except (errors.RevisionConflict, errors.KeyNotFound):
                    kv = None
                    continue
                return new
            if _finalized(new):
                # The update removed the last finalizer of an object being deleted: it goes now.
                if opts.dry_run:
                    return new
                try:
                    await self.storage.delete(key, kv.revision)
                except (errors.RevisionConflict, errors.KeyNotFound):
                    kv = None
                    continue
                return new
            value = self._encode(res, new)
            if value == kv.value:
                return old  # nothing changed: no write, the resourceVersion stays
            if opts.dry_run:
                return new
            try:
                rev = await self.storage.update(key, value, kv.revision)
            except errors.RevisionConflict:
                kv = None
                continue
            except errors.KeyNotFound:
                raise self._not_found(res, name) from None
            new["metadata"]["resourceVersion"] = str(rev)
            return new
        raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)

    def _prepare_update(self, res: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
        self._check_type_meta(res, new)
        go_roundtrip(self.schema, (res.group, res.version, res.kind), new)  # kube decodes into Go structs first
        md = meta.metadata(new)
        old_md = old["metadata"]
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
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            new["metadata"]["resourceVersion"] = old_md["resourceVersion"]
        elif res.has_status and res.resource != "namespaces" or subresource == "finalize":
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if subresource == "finalize":
            new_spec_finalizers = new.get("spec", {}).get("finalizers")
            new = copy.deepcopy(old)
            new.setdefault("spec", {})["finalizers"] = new_spec_finalizers or []
        elif res.resource == "namespaces":
            # spec.finalizers change only through /finalize; status.phase is the server's.
            new.setdefault("spec", {})["finalizers"] = old.get("spec", {}).get("finalizers", [])
            new["status"] = old.get("status", {})
        md = new["metadata"]
        if res.tracks_generation:
            md["generation"] = old_md.get("generation", 1)
            if subresource != "status" and self._spec_changed(res, new, old):
                md["generation"] = md["generation"] + 1
        else:
            md.pop("generation", None)
        if subresource != "status":
            convert.normalize_write(res, new)
            apply_defaults(res.resource, res.group, new, old=old)
            causes = validate_object_meta(new, namespaced=res.namespaced, resource=res.resource,
                                          group=res.group)
            causes += validate(res.resource, res.group, new, old)
            if causes:
                raise errors.invalid(res.kind, res.group, old_md["name"], causes)
        return new

    @staticmethod
    def _spec_changed(res: Resource, new: Obj, old: Obj) -> bool:
        if res.generation_on_annotations and (new["metadata"].get("annotations") or {}) != (
                old["metadata"].get("annotations") or {}):
            return True
        strip = ("metadata", "status", "kind", "apiVersion")
        return {k: v for k, v in new.items() if k not in strip} != {k: v for k, v in old.items() if k not in strip}

    # -------------------------------------------------------------- scale

    async def get_scale(self, res: Resource, namespace: str, name: str) -> Obj:
        return to_scale(await self.get(res, namespace, name))

    async def update_scale(self, res: Resource, namespace: str, name: str, scale_mutate: Mutate,
                           opts: WriteOptions) -> Obj:
        def mutate(obj: Obj) -> Obj:
            scale = scale_mutate(to_scale(obj))
            smd = scale.get("metadata") or {}
            if smd.get("resourceVersion") and smd["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)
            replicas = (scale.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise errors.invalid("Scale", "autoscaling", name, [errors.Cause(
                    "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "spec.replicas")])
            obj.setdefault("spec", {})["replicas"] = replicas
            return obj

        return to_scale(await self.guaranteed_update(res, namespace, name, mutate, opts, "scale"))

    # ------------------------------------------------------------- delete

    async def delete(self, res: Resource, namespace: str, name: str, opts: DeleteOptions) -> DeleteResult:
        key = self.key(res, namespace, name)
        if res.resource == "namespaces" and name in PROTECTED_NAMESPACES:
            raise errors.Forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                                   name=name, kind="namespaces")
        for _ in range(_GUARANTEED_UPDATE_TRIES):
            kv = await self.get_kv(res, namespace, name)
            try:
                obj = self._decode(res, kv)
            except codec.CorruptObject as exc:
                if not opts.ignore_store_read_error:
                    self._skip_corrupt(exc)
                    raise corrupt_object_error(exc) from None
                done = await self._delete_corrupt(key, kv, opts)
                if done is None:
                    continue
                return done
            if opts.ignore_store_read_error:
                # kube-apiserver: the option is only for objects that cannot be read.
                raise errors.invalid(res.resource, res.group, name, [errors.Cause(
                    "FieldValueInvalid", "Invalid value: true: is exclusively used to delete corrupt "
                    "object(s), try again by removing this option",
                    "ignoreStoreReadErrorWithClusterBreakingPotential")])
            md = obj["metadata"]
            if opts.precondition_uid and opts.precondition_uid != md.get("uid"):
                raise errors.conflict(res.resource, res.group, name,
                                      f"Precondition failed: UID in precondition: {opts.precondition_uid}, "
                                      f"UID in object meta: {md.get('uid')}")
            if opts.precondition_rv and opts.precondition_rv != md.get("resourceVersion"):
                raise errors.conflict(res.resource, res.group, name,
                                      "Precondition failed: ResourceVersion in precondition: "
                                      f"{opts.precondition_rv}, ResourceVersion in object meta: "
                                      f"{md.get('resourceVersion')}")
            new = self._deletion_update(res, obj, opts)
            if new is None:
                if opts.dry_run:
                    return DeleteResult(obj, True)
                try:
                    _, prev = await self.storage.delete(key, kv.revision)
                except (errors.RevisionConflict, errors.KeyNotFound):
                    continue
                return DeleteResult(obj, True)
            if opts.dry_run or new == obj:
                return DeleteResult(new, False)
            try:
                rev = await self.storage.update(key, self._encode(res, new), kv.revision)
            except (errors.RevisionConflict, errors.KeyNotFound):
                continue
            new["metadata"]["resourceVersion"] = str(rev)
            return DeleteResult(new, False)
        raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)

    async def _delete_corrupt(self, key: str, kv: KeyValue, opts: DeleteOptions) -> DeleteResult | None:
        """kube-apiserver's unsafe deletion of a corrupt object: no preconditions, no finalizers, no object back."""
        log.warning("unsafe deletion of corrupt object %s (revision %d)", key, kv.revision)
        gone = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        if opts.dry_run:
            return DeleteResult(gone, True)
        try:
            await self.storage.delete(key, kv.revision)
        except (errors.RevisionConflict, errors.KeyNotFound):
            return None  # changed or went meanwhile: read it again
        return DeleteResult(gone, True)

    def _deletion_update(self, res: Resource, obj: Obj, opts: DeleteOptions) -> Obj | None:
        """The object as it stays after this DELETE, or None if it goes now."""
        new = copy.deepcopy(obj)
        md = new["metadata"]
        finalizers = list(md.get("finalizers") or [])
        policy = opts.propagation_policy
        if not policy and opts.orphan_dependents is not None:
            policy = "Orphan" if opts.orphan_dependents else "Background"
        if policy and policy not in ("Orphan", "Foreground", "Background"):
            raise errors.invalid("DeleteOptions", "", "", [errors.Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"',
                "propagationPolicy")])
        # The garbage collector finishes these (kapi.controllers): orphan or delete the dependents.
        gc_finalizer = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(policy)
        if gc_finalizer and res.resource != "namespaces" and not md.get("deletionTimestamp") \
                and gc_finalizer not in finalizers:
            finalizers.append(gc_finalizer)
            md["finalizers"] = finalizers
        if res.resource == "namespaces":
            if md.get("deletionTimestamp"):
                return new
            md["deletionTimestamp"] = meta.now_rfc3339()
            md["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            if not new.get("spec", {}).get("finalizers") and not finalizers:
                return None
            return new
        grace = self._grace_period(res, obj, opts)
        if md.get("deletionTimestamp"):
            if finalizers:
                return new
            old_grace = md.get("deletionGracePeriodSeconds")
            if grace == 0 or (old_grace is not None and grace is not None and grace < old_grace):
                if grace == 0:
                    return None
                md["deletionGracePeriodSeconds"] = grace
                md["deletionTimestamp"] = meta.rfc3339_after(grace)
            return new
        if finalizers:
            md["deletionTimestamp"] = meta.now_rfc3339()
            md["deletionGracePeriodSeconds"] = 0
            if md.get("generation"):
                md["generation"] += 1
            return new
        if grace:
            md["deletionTimestamp"] = meta.rfc3339_after(grace)
            md["deletionGracePeriodSeconds"] = grace
            if md.get("generation"):
                md["generation"] += 1
            return new
        return None

    @staticmethod
    def _grace_period(res: Resource, obj: Obj, opts: DeleteOptions) -> int:
        """Graceful deletion applies to pods bound to a node that are still running."""
        if res.resource != "pods":
            return 0
        spec = obj.get("spec", {})
        grace = opts.grace_period_s
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if grace < 0:
            grace = 1
        if not spec.get("nodeName") or obj.get("status", {}).get("phase") in ("Failed", "Succeeded"):
            return 0
        return int(grace)

    async def delete_collection(self, res: Resource, namespace: str, list_opts: ListOptions,
                                opts: DeleteOptions) -> ListPage:
        page = await self.list(res, namespace, ListOptions(label_selector=list_opts.label_selector,
                                                            field_selector=list_opts.field_selector))
        deleted = []
        for obj in page.objects():
            md = obj["metadata"]
            try:
                result = await self.delete(res, md.get("namespace", ""), md["name"], opts)
            except errors.NotFound:
                continue
            deleted.append(result.obj)
        return ListPage(deleted, page.resource_version)

    # -------------------------------------------------------------- watch

    def watch(self, res: Resource, namespace: str, opts: ListOptions,
              initial_filter: Callable[[bytes], bool] | None = None,
              metadata_only: bool = False) -> AsyncIterator[tuple[str, Obj]]:
        """Watch events from storage with selector transitions (SEMANTICS §2.1, §2.5).

        rv unset or "0": ADDED for every current object, then changes; rv=N: changes after N.
        ``initial_filter``: the current objects whose stored bytes it refuses are left out of
        the initial ADDED events without being decoded (later changes all come).
        ``metadata_only``: each object is ``{"metadata": ...}`` alone (no managedFields), decoded
        at a fraction of the cost, for controllers that read only metadata (no selectors then).

        The options are checked here, before the first event is asked for: a bad selector or
        resourceVersion is a 400 before the response starts, not a stream cut after its 200.
        """
        sel = self.selection(res, opts)
        if metadata_only and not sel.everything:
            raise ValueError("a metadata-only watch takes no selectors")
        from_rev = None
        if opts.resource_version not in ("", "0"):
            from_rev = meta.parse_resource_version(opts.resource_version)
        return self._watch_events(res, self.prefix(res, namespace), sel, from_rev, initial_filter,
                                  self._decode_metadata if metadata_only else self._decode)

    async def _watch_events(self, res: Resource, prefix: str, sel: Selection, from_rev: int | None,
                            initial_filter: Callable[[bytes], bool] | None,
                            decode: Callable[[Resource, KeyValue], Obj]) -> AsyncIterator[tuple[str, Obj]]:
        if from_rev is None:
            page = await self.storage.list(prefix)
            from_rev = page.revision
            items = page.items if initial_filter is None else [kv for kv in page.items if initial_filter(kv.value)]
            large = len(page.items) > _DECODE_CHUNK
            del page  # the stored bytes of the whole list: only ``items`` is needed now
            for first in range(0, len(items), _DECODE_CHUNK):
                # Decoded a chunk at a time: a controller watching everything never holds it all at once.
                with codec.paused_gc():
                    chunk = [obj for obj in (self._decoded_match(res, sel, kv, decode)
                                             for kv in items[first:first + _DECODE_CHUNK]) if obj is not None]
                for obj in chunk:
                    yield "ADDED", obj
                chunk = []
            items = []
            if large:
                # The stored bytes of the whole list are garbage now: give their pages back.
                codec.release_free_memory()
        try:
            async with self.storage.watch(prefix, from_rev) as events:
                async for ev in events:
                    if ev.type == "PROGRESS":
                        continue
                    # A corrupt value is seen as absent: an object that turns corrupt goes (DELETED
                    # with its last good state), one that turns good again comes back (ADDED).
                    new = self._decoded_match(res, sel, KeyValue(ev.key, ev.value, ev.revision,
                                                                 ev.create_revision), decode) \
                        if ev.value is not None else None
                    old = self._decoded_match(res, sel, KeyValue(ev.key, ev.prev_value, ev.revision,
                                                                 ev.create_revision), decode) \
                        if ev.prev_value is not None else None
                    if new is not None and (ev.type == "ADDED" or old is None):
                        yield "ADDED", new
                    elif new is not None:
                        yield "MODIFIED", new
                    elif old is not None:
                        yield "DELETED", old
        except errors.RevisionCompacted as exc:
            gone = errors.Gone(f"too old resource version: {from_rev} ({exc.revision + 1})")
            yield "ERROR", gone.to_status()

    async def watch_lines(self, res: Resource, namespace: str, opts: ListOptions, deadline: float,
                          proto: bool = False) -> AsyncIterator[bytes]:
        """Open a watch for the API: an iterator of newline-delimited JSON events, ready to send.

        Refusals that happen before the stream starts (429 while the cache initialises) raise;
        those kube-apiserver reports inside the stream (410, 504) become one ERROR event.
        """
        cacher = self.cachers.get((res.group, res.resource))
        if cacher is None:
            return _storage_watch_lines(self.watch(res, namespace, opts), self.schema if proto else None)
        sel = self.selection(res, opts)
        if opts.resource_version not in ("", "0"):
            meta.parse_resource_version(opts.resource_version)  # a 400 now, not a broken stream later
        filt = self._filter(res, namespace, sel)
        try:
            start = await cacher.watch(opts, filt, deadline, proto)
        except (errors.Gone, errors.ServerTimeout) as err:
            return _one_line(cacher.encoder.error(err.to_status(), proto))
        return _CachedWatchLines(cacher, start)

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


WATCH_BATCH_BYTES = 256 * 1024  # initial events go out in writes of about this size


async def _one_line(line: bytes) -> AsyncIterator[bytes]:
    yield line


async def _storage_watch_lines(events: AsyncIterator[tuple[str, Obj]],
                               proto_schema: Schema | None) -> AsyncIterator[bytes]:
    """A storage-backed watch's events, as JSON lines or (with a schema) protobuf frames."""
    async with aclosing(events):  # type: ignore[type-var]
        async for kind, obj in events:
            if proto_schema is not None:
                yield protobuf.encode_watch_event(proto_schema, kind, obj)
            else:
                yield orjson.dumps({"type": kind, "object": obj}) + b"\n"
            if kind == "ERROR":
                return


class _CachedWatchLines:
    """A cached watch's lines; closing it unregisters the watcher even if it was never read."""

    def __init__(self, cacher: Cacher, start: WatchStart) -> None:
        self._cacher = cacher
        self._watcher = start.watcher
        self._lines = _cached_watch_lines(cacher, start)

    def __aiter__(self) -> _CachedWatchLines:
        return self

    async def __anext__(self) -> bytes:
        return await self._lines.__anext__()

    async def aclose(self) -> None:
        try:
            await self._lines.aclose()
        finally:
            self._cacher.unregister(self._watcher)


async def _cached_watch_lines(cacher: Cacher, start: WatchStart) -> AsyncIterator[bytes]:
    """Initial events, the window catch-up, the end bookmark, then live lines; queued lines go in one write."""
    w = start.watcher
    enc = cacher.encoder
    proto = w.protobuf
    try:
        batch: list[bytes] = []
        size = 0
        for entry in start.initial:
            line = enc.entry_event("ADDED", entry, proto)
            batch.append(line)
            size += len(line)
            if size >= WATCH_BATCH_BYTES:
                yield b"".join(batch)
                batch, size = [], 0
        for ev in start.catch_up:
            seen = transition(w.filter, ev)
            if seen is not None:
                batch.append(enc.event_line(ev, *seen, proto))
        if start.end_bookmark_rv is not None:
            batch.append(enc.bookmark(start.end_bookmark_rv, initial_events_end=True, proto=proto))
        if batch:
            yield b"".join(batch)
        async for line in w.receive:
            lines = [line]
            while True:
                try:
                    lines.append(w.receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            yield b"".join(lines)
    finally:
        cacher.unregister(w)


def _index_of(items: Any, key: str) -> int:
    for i, kv in enumerate(items):
        if kv.key == key:
            return int(i)
    return len(items) - 1


def _finalized(obj: Obj) -> bool:
    md = obj.get("metadata", {})
    return bool(md.get("deletionTimestamp")) and not md.get("finalizers") and \
        md.get("deletionGracePeriodSeconds", 0) == 0 and obj.get("kind") != "Namespace"


def _namespace_finished(ns: Obj) -> bool:
    md = ns.get("metadata", {})
    return bool(md.get("deletionTimestamp")) and not md.get("finalizers") and \
        not ns.get("spec", {}).get("finalizers")


def to_scale(obj: Obj) -> Obj:
    """The autoscaling/v1 Scale view of a scalable object."""
    md = obj["metadata"]
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    selector = spec.get("selector") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in md},
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {"replicas": status.get("replicas", 0), "selector": _selector_string(selector)},
    }


def _selector_string(selector: Obj) -> str:
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{expr['key']} in ({values})")
        elif op == "NotIn":
            parts.append(f"{expr['key']} notin ({values})")
        elif op == "Exists":
            parts.append(expr["key"])
        elif op == "DoesNotExist":
            parts.append(f"!{expr['key']}")
    return ",".join(sorted(parts))


def corrupt_object_error(exc: codec.CorruptObject) -> errors.InternalError:
    """kube-apiserver's answer for an object it cannot decode (storeerr: corrupt object -> InternalError)."""
    detail = (f"StorageError: corrupt object, Code: 7, Key: {exc.key}, ResourceVersion: 0, "
              f"AdditionalErrorMsg: object not decodable revision={exc.revision}: {exc}")
    return errors.InternalError(f"Internal error occurred: {detail}", causes=[errors.Cause(message=detail)])


def too_large_rv(rv: int, current: int) -> errors.ServerTimeout:
    return errors.ServerTimeout(
        f"Timeout: Too large resource version: {rv}, current: {current}",
        causes=[errors.Cause(reason="ResourceVersionTooLarge", message="Too large resource version")],
        retry_after_s=0)

