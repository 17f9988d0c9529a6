"""LIST (and GET at a resourceVersion) through the watch cache or storage, and the entries both hand out.

Owns how a resource's stored values become entries (key, labels, selectable field values, the
JSON list item), the watch cache of a resource (``make_cacher``) and a LIST's predicate. A cached
resource is listed through its cacher, an uncached one through storage, by the same protocol
(``Storage.get_list``): the paging, continue and Exact rules live in ``kapi.storage``, the
fallback from cache to storage in the cacher.
"""

from __future__ import annotations

import dataclasses
import sys
from functools import partial
from typing import TYPE_CHECKING, Any, Mapping

import orjson

from kapi.cacher.cache import CacheConfig, Cacher
from kapi.cacher.store import Entry
from kapi.encoding import listitems
from kapi.object import meta
from kapi.object.listopts import ListOptions
from kapi.registry.resources import Resource
from kapi.storage.base import KeyValue, ListResult, Predicate
from kapi.storage.routed import backend_of

if TYPE_CHECKING:
    from kapi.registry.store import Registry, Selection

Obj = dict[str, Any]
Page = ListResult[Entry]  # a LIST's answer, as the handlers get it


# ---------------------------------------------------------------- entries


def _entry(reg: Registry, res: Resource, key: str, obj: Obj, revision: int, fields: Mapping[str, str]) -> Entry:
    md = obj["metadata"]
    ns = md.get("namespace", "")
    # Label and field values repeat across objects (app names, node names, phases): share them.
    labels = {sys.intern(k): sys.intern(v) for k, v in (md.get("labels") or {}).items()}
    interned = {k: v if k == "metadata.name" else sys.intern(v) for k, v in fields.items()}
    return Entry(key or reg.key(res, ns, md.get("name", "")), ns, md.get("name", ""), revision, labels, interned,
                 listitems.list_item(obj))


class _CacheEntries:
    """The entries of one resource's watch cache (``kapi.cacher.cache.Entries``)."""

    def __init__(self, reg: Registry, res: Resource) -> None:
        self._reg, self._res = reg, res

    def make(self, value: bytes, revision: int) -> Entry:
        # Raises CorruptObject (or any error of a value nobody foresaw): the cacher leaves the key
        # out of its state and logs it once (see Cacher._entry).
        res = self._res
        obj = self._reg.decode(res, KeyValue("", value, revision, 0), json_safe=False)  # dumped by _entry
        return _entry(self._reg, res, "", obj, revision, res.strategy.field_values(obj, res.namespaced))

    def gone_at(self, entry: Entry, revision: int) -> Entry:
        return Entry(entry.key, entry.namespace, entry.name, revision, entry.labels, entry.fields,
                     listitems.at_revision(entry.data, revision))


def _stored_entry(reg: Registry, res: Resource, sel: Selection, kv: KeyValue) -> Entry | None:
    """The entry of a value read from storage for a LIST; None when ``sel`` refuses it or it is corrupt.

    A page item lives as long as its answer and only its JSON is read: ``decoded_match`` has judged
    the selectors, so the labels and field values a cache entry keeps for matching are not made.
    """
    obj = reg.decoded_match(res, sel, kv, reg.decode)
    if obj is None:
        return None
    md = obj["metadata"]
    return Entry(kv.key, md.get("namespace", ""), md.get("name", ""), kv.revision, {}, {}, listitems.list_item(obj))


# ------------------------------------------------------------------ cache


def make_cacher(reg: Registry, res: Resource, *, capacity: int, indexed_fields: tuple[str, ...] = ()) -> Cacher:
    """The watch cache of ``res`` (not started); the server runs it and the registry uses it."""
    prefix = reg.prefix(res, "")
    # The backend that stores the resource (one of several with --etcd-servers-overrides): the cache's
    # freshness checks and resourceVersions are its revisions.
    cacher = Cacher(backend_of(reg.storage, prefix), prefix, _CacheEntries(reg, res), group=res.group,
                    resource=res.resource, kind=res.kind, metrics=reg.metrics,
                    config=CacheConfig(capacity=capacity, indexed_fields=indexed_fields))
    reg.cachers[res.cache_key] = cacher
    return cacher


def protobuf_items(reg: Registry, res: Resource, page: ListResult[Entry]) -> list[bytes]:
    """The page's items as protobuf messages; each entry's is made once per object version."""
    return listitems.messages(reg.schema, (res.group, res.version, res.kind), page.items)


async def get_cached(reg: Registry, cacher: Cacher, res: Resource, namespace: str, name: str,
                     resource_version: str) -> Obj:
    """GET at a resourceVersion from a ready watch cache (SEMANTICS §3.1)."""
    if resource_version != "0":
        await cacher.wait_for_rv(meta.parse_resource_version(resource_version))
    entry = cacher.entry(reg.key(res, namespace, name))
    if entry is None:
        raise reg.not_found(res, name)
    obj: Obj = orjson.loads(listitems.typed(listitems.type_prefix(res.kind, res.group_version), entry.data))
    return obj


# ------------------------------------------------------------------- list


def predicate(reg: Registry, res: Resource, sel: Selection) -> Predicate[Entry]:
    """What a LIST of ``res`` selects, and how a value read from storage becomes one of its entries."""
    return Predicate(partial(_stored_entry, reg, res, sel), sel.label, sel.field)


async def list(reg: Registry, res: Resource, namespace: str, opts: ListOptions) -> Page:
    """A LIST through the watch cache (which answers or asks storage, SEMANTICS §1.2), or from storage."""
    sel = reg.selection(res, opts)
    prefix = reg.prefix(res, namespace)
    cacher = reg.cacher_of(res)
    if cacher is None:
        reg.metrics.storage_list_total.labels(group=res.group, resource=res.resource, reason="uncached").inc()
    backend = cacher if cacher is not None else reg.storage
    page = await backend.get_list(prefix, opts, predicate(reg, res, sel))
    if res.strategy.converts_async and page.items:
        page = await _converted_page(reg, res, page)
    return page


async def _converted_page(reg: Registry, res: Resource, page: Page) -> Page:
    """A page of stored objects in the version ``res`` serves, converted in one call (a webhook's)."""
    stored = res.storage_version or res.version
    api_version = f"{res.group}/{stored}" if res.group else stored
    objs = [{"apiVersion": api_version, "kind": res.kind, **orjson.loads(bytes(e.data))} for e in page.items]
    converted = await reg.served(res, objs)
    items = [Entry(e.key, e.namespace, e.name, e.rv, e.labels, e.fields, listitems.list_item(obj))
             for e, obj in zip(page.items, converted)]
    return dataclasses.replace(page, items=items)
