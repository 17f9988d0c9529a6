"""LIST (and GET at a resourceVersion) from the watch cache or from storage, with etcd's paging rules.

Owns the list page type, the cache-facing registry code (the cacher of a resource, its filter, the
protobuf items of a page) and the storage LIST with its continue tokens and Exact reads.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from kapi import errors
from kapi.cacher.cache import CacheConfig, Cacher, Delegate
from kapi.cacher.store import Entry
from kapi.cacher.watcher import Encoder, Filter
from kapi.encoding import codec, protobuf
from kapi.object import meta
from kapi.object.listopts import ListOptions, decode_continue, encode_continue
from kapi.registry.resources import Resource
from kapi.storage.base import KeyValue

if TYPE_CHECKING:
    from kapi.registry.store import Registry, Selection

Obj = dict[str, Any]
_PAGE_CAP = 10_000


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


# ------------------------------------------------------------------ cache


def make_cacher(reg: Registry, res: Resource, *, capacity: int, indexed_fields: tuple[str, ...] = ()) -> Cacher:
    """The watch cache of ``res`` (not started); the server runs it and the registry uses it."""
    def make_entry(value: bytes, revision: int) -> Entry:
        # Raises CorruptObject (or any error of a value nobody foresaw): the cacher leaves the key
        # out of its state and logs it once (see Cacher._entry).
        obj = reg.decode(res, KeyValue("", value, revision, 0), json_safe=False)  # dumped below
        md = obj["metadata"]
        # orjson's buffer is larger than its output: keep an exact copy, the cache holds it long.
        data = bytes(memoryview(orjson.dumps({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})))
        ns = md.get("namespace", "")
        key = reg.key(res, ns, md.get("name", ""))
        # Label and field values repeat across objects (app names, node names, phases): share them.
        labels = {sys.intern(k): sys.intern(v) for k, v in (md.get("labels") or {}).items()}
        fields = {k: v if k == "metadata.name" else sys.intern(v)
                  for k, v in res.strategy.field_values(obj, res.namespaced).items()}
        return Entry(key, ns, md.get("name", ""), revision, labels, fields, data)

    cacher = Cacher(reg.storage, reg.prefix(res, ""), make_entry,
                    Encoder(res.kind, res.group_version, reg.schema),
                    group=res.group, resource=res.resource, metrics=reg.metrics,
                    config=CacheConfig(capacity=capacity, indexed_fields=indexed_fields))
    reg.cachers[(res.group, res.resource)] = cacher
    return cacher


def protobuf_items(reg: Registry, res: Resource, page: ListPage) -> list[bytes]:
    """The page's items as protobuf messages; a cached object's is made once per version."""
    gvk = (res.group, res.version, res.kind)
    if page.entries is None:
        return [protobuf.encode(reg.schema, gvk, obj) for obj in page.items]
    out = []
    for e in page.entries:
        if e.proto is None:
            e.proto = protobuf.encode(reg.schema, gvk, orjson.loads(e.data))
        out.append(e.proto)
    return out


def cache_filter(reg: Registry, res: Resource, namespace: str, sel: Selection) -> Filter:
    return Filter(reg.prefix(res, namespace), sel.label, sel.field)


async def get_cached(reg: Registry, cacher: Cacher, res: Resource, namespace: str, name: str,
                     resource_version: str) -> Obj:
    """GET at a resourceVersion from a ready watch cache (SEMANTICS §3.1)."""
    if resource_version != "0":
        await cacher.wait_for_rv(meta.parse_resource_version(resource_version))
    entry = cacher.get(reg.key(res, namespace, name))
    if entry is None:
        raise reg.not_found(res, name)
    obj: Obj = orjson.loads(cacher.encoder.typed(entry.data))
    return obj


# ------------------------------------------------------------------- list


async def list(reg: Registry, res: Resource, namespace: str, opts: ListOptions) -> ListPage:
    """A LIST: from the watch cache where SEMANTICS §1.2 says so, else from storage."""
    sel = reg.selection(res, opts)
    cacher = reg.cachers.get((res.group, res.resource))
    reason = "uncached"
    if cacher is not None:
        try:
            got = await cacher.list(opts, cache_filter(reg, res, namespace, sel))
        except Delegate as d:
            reason = d.reason
        else:
            return ListPage([], str(got.resource_version), got.continue_token, got.remaining,
                            [e.data for e in got.entries], got.entries, got.source, got.scanned, got.index)
    reg.metrics.storage_list_total.labels(group=res.group, resource=res.resource, reason=reason).inc()
    page = await list_storage(reg, res, namespace, opts, sel)
    return page


async def list_storage(reg: Registry, res: Resource, namespace: str, opts: ListOptions, sel: Selection) -> ListPage:
    """A LIST served from storage with etcd's paging rules (SEMANTICS §1.2, §1.3)."""
    prefix = reg.prefix(res, namespace)
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
        current = reg.storage.current_revision()
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
            result = await reg.storage.list(prefix, revision=revision, start=start, limit=page)
        except errors.RevisionCompacted:
            raise _expired(prefix, start if opts.continue_token else "") from None
        if revision is None:
            revision = result.revision
        last_key = ""
        scanned += len(result.items)
        with codec.paused_gc():
            for kv in result.items:
                last_key = kv.key
                # A corrupt object is left out, as the watch cache leaves it out: a LIST gives the
                # same answer from either (kube-apiserver answers 500 StoreReadError naming the keys).
                found = reg.decoded_match(res, sel, kv, reg.decode)
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
    if revision is not None and revision > reg.storage.current_revision():
        revision = reg.storage.current_revision()
    return ListPage(items, str(revision or reg.storage.current_revision()), next_token,
                    remaining if remaining else None, scanned=scanned)


def _expired(prefix: str, start: str) -> errors.Gone:
    msg = "The provided continue parameter is too old to display a consistent list result. " \
          "You can start a new list without the continue parameter, or use the continue token " \
          "in this response to retrieve the remainder of the results. Continuing with the provided " \
          "token results in an inconsistent list - objects that were created, modified, or deleted " \
          "between the time the first chunk was returned and now may show up in the list."
    if not start:
        return errors.Gone("The resourceVersion for the provided list is too old.")
    return errors.Gone(msg, list_continue=encode_continue(-1, start, prefix))


def _index_of(items: Any, key: str) -> int:
    for i, kv in enumerate(items):
        if kv.key == key:
            return int(i)
    return len(items) - 1


def too_large_rv(rv: int, current: int) -> errors.ServerTimeout:
    return errors.ServerTimeout(
        f"Timeout: Too large resource version: {rv}, current: {current}",
        causes=[errors.Cause(reason="ResourceVersionTooLarge", message="Too large resource version")],
        retry_after_s=0)
