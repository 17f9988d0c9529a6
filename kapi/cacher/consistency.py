"""DetectCacheInconsistency (kube-apiserver 1.34, beta): a watch cache checked against storage now and then.

Every ``CHECK_PERIOD_S`` (jittered up to half as long again, as kube's checker) the keys and
resourceVersions a cache holds at its revision are compared with those storage holds at that same
revision (a range read at it, in pages of 10,000). kube hashes both sides (FNV of
namespace/name/rv) and compares the digests; here the two sequences are compared as they stream,
which also names the first difference, and lets a value the cache refused to serve (a corrupt
object, left out of the cache as out of storage's LISTs) count as absent on both sides.

Counted as kube counts it, ``apiserver_storage_consistency_checks_total{group, resource, status}``:
``success``, ``failure`` (they differ: logged, and the cache is rebuilt from a fresh list, where
kube stops serving snapshots), ``error`` (no comparison: the cache was not ready, storage failed,
or compacted the cache's revision meanwhile).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kapi import errors

if TYPE_CHECKING:
    from kapi.cacher.cache import Cacher

log = logging.getLogger("kapi.cacher")

CHECK_PERIOD_S = 300.0  # kube's ConsistencyCheckPeriod: 5 minutes, the default compaction interval
JITTER = 0.5  # each wait is between the period and this much more of it
STORAGE_PAGE = 10_000


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place where the cache and storage differ: (key, rv) on each side (None: nothing there)."""

    index: int
    cache: tuple[str, int] | None
    storage: tuple[str, int] | None


async def compare(cacher: Cacher) -> tuple[int, Difference | None]:
    """(the revision compared at, the first difference or None).

    ``RevisionCompacted`` when storage no longer has the cache's revision; ``StorageError`` as storage fails.
    """
    rv = cacher.rv
    cached = cacher.store.versions()  # at ``rv``: taken without a pause
    i = 0
    start: str | None = None
    while True:
        page = await cacher.storage.list(cacher.prefix, revision=rv, start=start, limit=STORAGE_PAGE)
        for kv in page.items:
            if i < len(cached) and cached[i] == (kv.key, kv.revision):
                i += 1
            elif not cacher.serves(kv):
                continue  # refused by the cache: absent from it and from storage's LISTs alike
            else:
                return rv, Difference(i, cached[i] if i < len(cached) else None, (kv.key, kv.revision))
        if not page.more or not page.items:
            break
        start = page.items[-1].key + "\x00"
    return rv, (Difference(i, cached[i], None) if i < len(cached) else None)


async def check(cacher: Cacher) -> str:
    """One check of ``cacher`` against its storage, counted; rebuilds it on a difference. Returns the status."""
    status = await _check(cacher)
    cacher.metrics.consistency_checks.labels(group=cacher.group, resource=cacher.resource, status=status).inc()
    return status


async def _check(cacher: Cacher) -> str:
    if not cacher.ready:
        log.info("watch cache %s: consistency check skipped: the cache is not ready", cacher.resource)
        return "error"
    try:
        rv, diff = await compare(cacher)
    except errors.RevisionCompacted as exc:
        log.info("watch cache %s: consistency check skipped: %s", cacher.resource, exc)
        return "error"
    except Exception:
        log.exception("watch cache %s: consistency check failed", cacher.resource)
        return "error"
    if diff is None:
        log.debug("watch cache %s: consistent with storage at revision %d", cacher.resource, rv)
        return "success"
    log.error("watch cache %s: inconsistent with storage at revision %d: first difference at item %d: "
              "cache %s, storage %s; rebuilding it", cacher.resource, rv, diff.index, diff.cache, diff.storage)
    cacher.rebuild()
    return "failure"


async def check_periodically(cacher: Cacher, period_s: float) -> None:
    """Check ``cacher`` every ``period_s`` to ``(1 + JITTER) * period_s`` seconds, the first one after a wait."""
    while True:
        await trio.sleep(period_s * random.uniform(1.0, 1.0 + JITTER))
        await check(cacher)
