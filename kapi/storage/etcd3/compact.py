"""kube-apiserver's etcd compactor (staging/.../storage/etcd3/compact.go): replicas on one etcd take
turns through one key, so exactly one of them compacts each interval.

``compact_rev_key``'s *version* is a logical clock, its *value* the revision last compacted. Every
interval each replica runs ``Txn(Version(compact_rev_key) == local version) Put(compact_rev_key,
str(rev)) Else Get(compact_rev_key)``, ``rev`` being the revision it saw one interval earlier:

- the winner (its compare held) bumps the version by one and alone calls ``Compact(rev)`` (not on
  its first round, with no earlier revision: kube does not compact on bootstrap);
- a loser adopts the version and the compacted revision its ``Else Get`` read, and tries again next
  interval: should the winner stop, a loser's compare holds one interval later and it takes over.

So history is kept for between one and two intervals. Every replica's ``EtcdStorage`` learns the
revision compacted (its own or the winner's) within one interval, as kube 1.34's compactor exposes
``CompactRevision``: a LIST or watch below it answers ``RevisionCompacted`` without asking etcd.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kapi.errors import RevisionCompacted, StorageError
from kapi.storage.etcd3.client import compare_version, op_get, op_put

if TYPE_CHECKING:
    from kapi.storage.etcd3.store import EtcdStorage

logger = logging.getLogger(__name__)

COMPACT_REV_KEY = b"compact_rev_key"  # kube's compactRevKey, shared with kube-apiservers on the same etcd


async def compact(storage: EtcdStorage, expect_version: int, rev: int) -> tuple[int, int]:
    """One round (kube's ``Compact``): the compare-and-swap on ``compact_rev_key``, then ``Compact(rev)``
    if this replica won. Returns the version of ``compact_rev_key`` now known and the current revision
    (the ``rev`` of the next round). A failed compare is no error; a failed txn raises ``StorageError``.
    """
    client = storage.client
    resp = await client.txn([compare_version(COMPACT_REV_KEY, expect_version)],
                            [op_put(COMPACT_REV_KEY, str(rev).encode())], [op_get(COMPACT_REV_KEY)])
    current = int(resp.header.revision)
    if not resp.succeeded:
        kvs = resp.responses[0].response_range.kvs
        if not kvs:  # deleted by someone: start the clock again
            return 0, current
        try:
            storage.observe_compacted(int(kvs[0].value))
        except ValueError:
            logger.warning("etcd: %s holds %r, not a revision", COMPACT_REV_KEY.decode(), kvs[0].value)
        return int(kvs[0].version), current
    if rev:
        try:
            await client.compact(rev)
        except RevisionCompacted:
            pass  # compacted past it already (by another client of this etcd)
        except StorageError as exc:
            logger.warning("etcd: compaction to revision %d failed: %s", rev, exc)
            return expect_version + 1, current
        storage.observe_compacted(rev)
        logger.debug("etcd: compacted to revision %d", rev)
    return expect_version + 1, current


async def compactor(storage: EtcdStorage, interval_s: float) -> None:
    """Every ``interval_s`` (none if not positive), a round of ``compact``, until cancelled; a round
    that fails is logged and the next one tries again (kube's ``runCompactLoop``)."""
    if interval_s <= 0:
        return
    version = rev = 0
    while True:
        await trio.sleep(interval_s)
        try:
            version, rev = await compact(storage, version, rev)
        except StorageError as exc:
            logger.warning("etcd: compaction round failed: %s", exc)


__all__ = ["COMPACT_REV_KEY", "compact", "compactor"]
