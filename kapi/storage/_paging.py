"""A LIST over a backend's range reads by etcd's rules (SEMANTICS §1.2, §1.3), shared by every backend.

resourceVersion unset or "0" reads the latest state; a resourceVersion with Exact (or with a
limit and no match) reads that revision; a continue token reads its page-one revision from its
key on. When the predicate leaves a page short of ``limit`` items, the next range read asks
for twice as many keys, up to ``PAGE_CAP`` (kube's GetList: ``limit *= 2`` while below its
``maxLimit``; a limit already above it stays), until ``limit`` selected items are found or the
keys run out. kube-apiserver's etcd3 store answers a compacted revision 410 Expired and a future
one 504 ResourceVersionTooLarge, as here.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

from kapi import errors
from kapi.encoding.codec import paused_gc
from kapi.object.listopts import ListOptions, decode_continue, encode_continue
from kapi.storage.base import KeyValue, ListResult, Predicate, Storage

T = TypeVar("T")
PAGE_CAP = 10_000  # kube's maxLimit


async def get_list(storage: Storage, prefix: str, opts: ListOptions, pred: Predicate[T]) -> ListResult[T]:
    """``Storage.get_list`` over ``storage.list`` (range reads at one revision)."""
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
        current = await storage.current_revision()
        if rv > current:  # etcd: "required revision is a future revision", Exact or not
            raise errors.too_large_resource_version(rv, current, retry_after_s=0)
        if exact:
            revision = rv
    limit = opts.limit if opts.limit > 0 else 0  # storage honours limit, even with rv=0
    items: list[T] = []
    remaining: int | None = None
    next_token = ""
    scanned = 0
    page = limit  # keys asked of the next range read (0: all)
    while True:
        try:
            result = await storage.list(prefix, revision=revision, start=start, limit=page or None)
        except errors.RevisionCompacted:
            raise _expired(prefix, start if opts.continue_token else "") from None
        if revision is None:
            revision = result.revision
        last_key = ""
        scanned += len(result.items)
        with paused_gc():
            for kv in result.items:
                last_key = kv.key
                # A corrupt object is left out, as the watch cache leaves it out: a LIST gives the
                # same answer from either (kube-apiserver answers 500 StoreReadError naming the keys).
                found = pred.decode(kv)
                if found is not None:
                    items.append(found)
                    if limit and len(items) == limit:
                        break
        if limit and len(items) == limit and (result.more or last_key != result.items[-1].key):
            next_token = encode_continue(revision, last_key + "\x00", prefix)
            if pred.everything:
                remaining = (result.remaining or 0) + (len(result.items) - _index_of(result.items, last_key) - 1)
            break
        if not result.more or not limit:
            break
        start = last_key + "\x00"
        if page < PAGE_CAP:
            page = min(page * 2, PAGE_CAP)
    current = await storage.current_revision()
    if revision is not None and revision > current:
        revision = current
    return ListResult(items, revision or current, more=bool(next_token), remaining=remaining if remaining else None,
                      continue_token=next_token, scanned=scanned)


def _expired(prefix: str, start: str) -> errors.Gone:
    msg = "The provided continue parameter is too old to display a consistent list result. " \
          "You can start a new list without the continue parameter, or use the continue token " \
          "in this response to retrieve the remainder of the results. Continuing with the provided " \
          "token results in an inconsistent list - objects that were created, modified, or deleted " \
          "between the time the first chunk was returned and now may show up in the list."
    if not start:
        return errors.Gone("The resourceVersion for the provided list is too old.")
    return errors.Gone(msg, list_continue=encode_continue(-1, start, prefix))


def _index_of(items: Sequence[KeyValue], key: str) -> int:
    for i, kv in enumerate(items):
        if kv.key == key:
            return i
    return len(items) - 1
