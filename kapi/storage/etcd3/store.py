"""The ``Storage`` protocol over etcd, with kube-apiserver's etcd3 store semantics (draft).

create = ``Txn(ModRevision(key)==0) Put Else Get``; update = ``Txn(ModRevision==rev) Put Else Get``;
delete = ``Txn(ModRevision==rev or >0) Delete(prev_kv) Else Get``; list = one Range at one revision;
the current revision from one Get's header (never below one this store has seen); watch from
``from_revision + 1`` with prev_kv on the shared ``WatchStream``.

Watches keep the contract of the in-process backends (``kapi.storage._watch``):

- history up to the revision current when the watch opened is replayed with back-pressure (the
  replay waits for the reader; if the shared stream drops the watch meanwhile, it is re-created from
  the last event delivered); later events never wait: a watch whose channel is full is closed;
- a write through this store returns once its event is in the channel of every live watch of this
  store that covers its key (or that watch closed), as a local backend dispatches in the commit's step;
- PROGRESS events only answer ``request_progress``, one unread marker at a time. etcd before 3.5.13
  answers RequestProgress out of order with events (kube trusts it only from 3.5.13), so a response
  at header revision H is turned into a marker at H only once the watch has delivered through H (an
  event at or past H, or etcd's periodic progress notification for that watch, which is ordered with
  its events); a watch that has delivered through every revision this store had seen when progress
  was asked gets its marker at once, at its last delivered revision.
"""

from __future__ import annotations

import heapq
import logging
import re
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AsyncIterator, Sequence, TypeVar

import trio

from kapi.errors import (
    KeyExists,
    KeyNotFound,
    RevisionCompacted,
    RevisionConflict,
    RevisionInFuture,
    StorageError,
    StorageUnavailable,
)
from kapi.storage import _paging
from kapi.storage._keys import prefix_end, range_start
from kapi.storage.base import Event, KeyValue, ListResult, Predicate
from kapi.storage.etcd3.client import (
    EtcdClient,
    WatchStream,
    compare_mod,
    credentials,
    kv_pb2,
    op_delete,
    op_get,
    op_put,
    rpc_pb2,
)

if TYPE_CHECKING:
    from kapi.object.listopts import ListOptions

T = TypeVar("T")


def _b(key: str) -> bytes:
    return key.encode()


def _low(key: str) -> bytes:
    return key.encode() or b"\x00"  # etcd refuses an empty key; b"\x00" is the lowest one


def _end(prefix: str) -> bytes:
    end = prefix_end(prefix)
    return b"\x00" if end is None else end.encode()


def _kv(kv: kv_pb2.KeyValue) -> KeyValue:
    return KeyValue(kv.key.decode(), kv.value, kv.mod_revision, kv.create_revision)


# etcd's RequestProgress answer, meant for every watch of the stream (clientv3.InvalidWatchID)
_BROADCAST = -1

logger = logging.getLogger(__name__)

_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")
_VERSION_CHECK_CAP_S = 15.0  # kube's backoff for the check: 10 ms doubling up to 15 s


def supports_request_watch_progress(version: str) -> bool:
    """Whether an etcd server of ``version`` (``Maintenance.Status``) answers RequestProgress in order
    with its events: 3.4.31+ on 3.4, 3.5.13+ on 3.5, any 3.6 or later (kube's feature_support_checker,
    etcd issues 15220 and 17507). A pre-release is below its release; a version that does not parse
    is not supported."""
    m = _SEMVER.fullmatch(version.strip())
    if m is None:
        return False
    v = (int(m[1]), int(m[2]), int(m[3]), m[4] is None)  # a pre-release sorts before its release
    return not (v < (3, 4, 31, True) or (3, 5, 0, True) <= v < (3, 5, 13, True))


@dataclass(eq=False)
class _Sub:
    """One watch of this store: its channel and how far it has delivered."""

    prefix: str
    start: int  # from_revision: events above it are wanted
    replay_to: int  # events up to here are history (sent with back-pressure); later ones are live
    send: trio.MemorySendChannel[Event]
    scope: trio.CancelScope
    last: int  # every event of the watch up to this revision has been put in the channel
    closed: bool = False
    sent: int = 0  # items put in the channel so far
    marker_at: int = 0  # ``sent`` just after the latest PROGRESS marker (0: none yet)
    asked: int = 0  # progress was asked when this store had seen this revision (0: not asked)
    pending: int = 0  # a RequestProgress answer at this revision, waiting for delivery to reach it
    waiters: list[tuple[int, int, trio.Event]] = field(default_factory=list)  # heap: (revision, seq, event)

    @property
    def live(self) -> bool:
        return self.last >= self.replay_to

    async def reached(self, revision: int) -> None:
        """Until this watch has delivered through ``revision``, or closed."""
        if self.closed or self.last >= revision:
            return
        event = trio.Event()
        heapq.heappush(self.waiters, (revision, id(event), event))
        await event.wait()

    def release(self) -> None:
        """Wake the writers waiting for a revision this watch has now delivered (every one once closed)."""
        while self.waiters and (self.closed or self.waiters[0][0] <= self.last):
            heapq.heappop(self.waiters)[2].set()

    def marker_unread(self) -> bool:
        return self.marker_at > self.sent - self.send.statistics().current_buffer_used


class EtcdStorage:
    """``Storage`` over one etcd cluster (``endpoints``), through ``EtcdClient`` and one ``WatchStream``.

    ``https://`` endpoints take ``cafile`` and, for etcd's ``--client-cert-auth``, ``certfile`` and
    ``keyfile`` (``EtcdClient``'s TLS; wrong combinations are a ``ValueError`` here, at once).
    ``run`` reads every endpoint's etcd version before ``started()`` (one try each; those that fail
    are retried in the background) for ``consistent_reads_from_cache``. ``compact.compactor`` is
    kube's compactor over this store.
    """

    def __init__(self, endpoints: Sequence[str], *, cafile: str | None = None, certfile: str | None = None,
                 keyfile: str | None = None, watch_buffer: int = 1000, call_timeout_s: float = 5.0) -> None:
        self._endpoints = list(endpoints)
        self._tls = {"cafile": cafile, "certfile": certfile, "keyfile": keyfile}
        credentials(self._endpoints, **self._tls)  # a ValueError now, not when run() starts
        self._watch_buffer = watch_buffer
        self._call_timeout_s = call_timeout_s
        self._client: EtcdClient | None = None
        self._stream: WatchStream | None = None
        self._nursery: trio.Nursery | None = None
        self._compacted = 0
        self._seen = 0  # the highest revision this store has seen committed
        self._subs: set[_Sub] = set()
        self._versions: dict[str, str] = {}  # endpoint -> its etcd server version, once it answered

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with EtcdClient(self._endpoints, call_timeout_s=self._call_timeout_s, **self._tls) as client:
            stream = WatchStream(client, buffer=self._watch_buffer)
            async with trio.open_nursery() as nursery:
                await nursery.start(stream.run)
                async with trio.open_nursery() as first_tries:  # every endpoint's at once
                    for endpoint in dict.fromkeys(self._endpoints):
                        first_tries.start_soon(nursery.start, self._check_version, endpoint)
                self._client, self._stream, self._nursery = client, stream, nursery
                try:
                    task_status.started()
                    await trio.sleep_forever()
                finally:
                    self._client = self._stream = self._nursery = None

    @property
    def consistent_reads_from_cache(self) -> bool:
        """Whether a watch cache may serve consistent reads over this store (kube's RequestWatchProgress
        gate): every endpoint has answered ``Maintenance.Status`` with a version that
        ``supports_request_watch_progress``. False until then, and for good if one is older."""
        endpoints = set(self._endpoints)
        return self._versions.keys() == endpoints and all(map(supports_request_watch_progress, self._versions.values()))

    async def _check_version(self, endpoint: str, *,
                             task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read ``endpoint``'s etcd version (that member's, on a channel of its own); ``started()`` after
        the first try, then retried with kube's backoff until it answers."""
        delay = 0.01
        started = False
        async with EtcdClient([endpoint], call_timeout_s=self._call_timeout_s, **self._tls) as client:
            while True:
                try:
                    self._versions[endpoint] = version = str((await client.status()).version)
                    if not supports_request_watch_progress(version):
                        logger.info("etcd %s is version %s: RequestWatchProgress is not supported (3.4.31+, "
                                    "3.5.13+ or 3.6+ is), consistent reads are not served from the watch cache",
                                    endpoint, version)
                except StorageError as exc:
                    logger.info("etcd %s: version not known yet (%s)", endpoint, exc)
                if not started:
                    started = True
                    task_status.started()
                if endpoint in self._versions:
                    return
                await trio.sleep(delay)
                delay = min(delay * 2, _VERSION_CHECK_CAP_S)

    @property
    def client(self) -> EtcdClient:
        """The running client (``StorageUnavailable`` when the store is not running)."""
        if self._client is None:
            raise StorageUnavailable("storage is not running")
        return self._client

    def observe_compacted(self, revision: int) -> None:
        """etcd has been compacted to ``revision`` (by this replica or another: ``compact.compactor``)."""
        self._compacted = max(self._compacted, revision)

    # ------------------------------------------------------------ writes

    async def create(self, key: str, value: bytes) -> int:
        await trio.lowlevel.checkpoint()
        resp = await self.client.txn([compare_mod(_b(key), 0)], [op_put(_b(key), value)], [op_get(_b(key))])
        if not resp.succeeded:
            [kv] = resp.responses[0].response_range.kvs
            raise KeyExists(f"key {key!r} already exists", key=key, revision=kv.mod_revision)
        return await self._written(key, int(resp.header.revision))

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        await trio.lowlevel.checkpoint()
        resp = await self.client.txn([compare_mod(_b(key), expected_revision)], [op_put(_b(key), value)],
                                   [op_get(_b(key))])
        if not resp.succeeded:
            self._failed(key, expected_revision, resp)
        return await self._written(key, int(resp.header.revision))

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, KeyValue]:
        await trio.lowlevel.checkpoint()
        cmp = (compare_mod(_b(key), 0, "GREATER") if expected_revision is None
               else compare_mod(_b(key), expected_revision))
        resp = await self.client.txn([cmp], [op_delete(_b(key), prev_kv=True)], [op_get(_b(key))])
        if not resp.succeeded:
            self._failed(key, expected_revision or 0, resp)
        [prev] = resp.responses[0].response_delete_range.prev_kvs
        return await self._written(key, int(resp.header.revision)), _kv(prev)

    async def _written(self, key: str, revision: int) -> int:
        """Note ``revision`` and wait (bounded) until every live watch covering ``key`` has delivered it.

        The watches behind are found once; each wakes its writers as its delivery passes their revision.
        """
        self._saw(revision)
        behind = [sub for sub in self._subs if not sub.closed and sub.live and sub.start < revision
                  and sub.last < revision and key.startswith(sub.prefix)]
        if behind:
            with trio.move_on_after(self._call_timeout_s):
                for sub in behind:
                    await sub.reached(revision)
        return revision

    def _saw(self, revision: int) -> int:
        self._seen = max(self._seen, revision)
        return self._seen

    @staticmethod
    def _failed(key: str, expected: int, resp: rpc_pb2.TxnResponse) -> None:
        kvs = resp.responses[0].response_range.kvs
        if not kvs:
            raise KeyNotFound(f"key {key!r} not found", key=key)
        raise RevisionConflict(f"key {key!r} is at revision {kvs[0].mod_revision}, not {expected}",
                               key=key, revision=kvs[0].mod_revision, current=_kv(kvs[0]))

    async def compact(self, revision: int) -> None:
        current = await self.current_revision()
        revision = min(revision, current)
        if revision <= self._compacted:
            return
        try:
            await self.client.compact(revision)
        except RevisionCompacted:
            pass  # someone compacted at or past it
        self.observe_compacted(revision)

    # ------------------------------------------------------------- reads

    async def get(self, key: str) -> KeyValue:
        await trio.lowlevel.checkpoint()
        resp = await self.client.range(_b(key))
        if not resp.kvs:
            raise KeyNotFound(f"key {key!r} not found", key=key)
        return _kv(resp.kvs[0])

    async def list(self, prefix: str, *, revision: int | None = None, start: str | None = None,
                   limit: int | None = None) -> ListResult[KeyValue]:
        await trio.lowlevel.checkpoint()
        client = self.client
        low = _low(range_start(prefix, start))
        if revision is not None and 0 < revision <= self._compacted:
            raise RevisionCompacted(f"revision {revision} has been compacted (compacted revision {self._compacted})",
                                    revision=self._compacted)
        try:
            resp = await client.range(low, _end(prefix), limit=limit or 0, revision=revision or 0)
        except RevisionCompacted as exc:
            raise RevisionCompacted(str(exc), revision=self._compacted) from exc
        except RevisionInFuture:
            resp = await client.range(low, _end(prefix), limit=limit or 0)  # above current: the current state
            revision = None
        items = [_kv(kv) for kv in resp.kvs]
        at = revision if revision is not None and revision < resp.header.revision else resp.header.revision
        more = bool(resp.more)
        return ListResult(items, int(at), more=more, remaining=int(resp.count) - len(items) if more else 0)

    async def get_list(self, prefix: str, opts: ListOptions, pred: Predicate[T]) -> ListResult[T]:
        return await _paging.get_list(self, prefix, opts, pred)

    async def count(self, prefix: str) -> int:
        await trio.lowlevel.checkpoint()
        return int((await self.client.range(_low(prefix), _end(prefix), count_only=True)).count)

    async def current_revision(self) -> int:
        await trio.lowlevel.checkpoint()
        return self._saw(int((await self.client.range(b"\x00", count_only=True)).header.revision))

    def compacted_revision(self) -> int:
        return self._compacted

    # ------------------------------------------------------------- watch

    @asynccontextmanager
    async def watch(self, prefix: str, from_revision: int) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        await trio.lowlevel.checkpoint()
        if self._stream is None or self._nursery is None:
            raise StorageUnavailable("storage is not running")
        if from_revision < self._compacted:
            raise RevisionCompacted(f"revision {from_revision} has been compacted", revision=self._compacted)
        replay_to = await self.current_revision()
        nursery = self._nursery
        if nursery is None:
            raise StorageUnavailable("storage is not running")
        send, receive = trio.open_memory_channel[Event](self._watch_buffer)
        sub = _Sub(prefix, from_revision, replay_to, send, trio.CancelScope(), last=from_revision)
        self._subs.add(sub)
        nursery.start_soon(self._pump, sub)
        try:
            async with receive:
                yield receive
        finally:
            self._close(sub)

    def _close(self, sub: _Sub) -> None:
        sub.closed = True
        sub.scope.cancel()
        sub.send.close()
        self._subs.discard(sub)
        sub.release()

    async def _pump(self, sub: _Sub) -> None:
        """Feed ``sub`` from the shared stream; re-create the etcd watch if the stream drops it mid-replay."""
        low, end = _low(sub.prefix), _end(sub.prefix)
        try:
            with sub.scope:
                while not sub.closed:
                    stream = self._stream
                    if stream is None:
                        return
                    async with stream.watch(low, end, sub.last + 1) as responses:
                        async for resp in responses:
                            if resp.canceled:
                                if resp.compact_revision:
                                    self.observe_compacted(int(resp.compact_revision))
                                return
                            if not await self._handle(sub, resp):
                                return
                    if sub.live:
                        return  # dropped while live (too slow, or the store stopped): closed
        except (StorageError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._close(sub)

    async def _handle(self, sub: _Sub, resp: rpc_pb2.WatchResponse) -> bool:
        """Deliver one etcd response to ``sub``; False once ``sub`` must be closed."""
        header = int(resp.header.revision)
        if resp.events:
            for e in resp.events:
                event = self._event(e)
                if event.revision <= sub.last:
                    continue  # already delivered before the etcd watch was re-created
                if sub.live:
                    try:
                        sub.send.send_nowait(event)
                    except trio.WouldBlock:
                        return False  # too slow: closed, as the other backends do
                else:
                    await sub.send.send(event)  # history: the replay waits for the reader
                sub.sent += 1
                sub.last = event.revision
                self._saw(event.revision)
            sub.release()
        elif resp.watch_id == _BROADCAST:
            # A RequestProgress answer: not ordered with events before etcd 3.5.13.
            if sub.asked:
                if sub.last >= header:
                    return self._marker(sub, header)
                if sub.last >= sub.asked:
                    return self._marker(sub, sub.last)
                sub.pending = max(sub.pending, header)
            return True
        else:
            # etcd's periodic progress notification: ordered with this watch's events.
            sub.last = max(sub.last, header)
            self._saw(header)
            sub.release()
            if sub.pending and sub.last >= sub.pending:
                return self._marker(sub, sub.last)
            return True
        if sub.pending and sub.last >= sub.pending:
            return self._marker(sub, sub.pending)
        return True

    def _marker(self, sub: _Sub, revision: int) -> bool:
        sub.asked = sub.pending = 0
        try:
            sub.send.send_nowait(Event("PROGRESS", "", None, None, revision))
        except trio.WouldBlock:
            return True  # a full channel gets no marker (the reader asks again)
        sub.sent += 1
        sub.marker_at = sub.sent
        return True

    @staticmethod
    def _event(e: kv_pb2.Event) -> Event:
        kv, prev = e.kv, e.prev_kv
        key = kv.key.decode()
        if e.type == kv_pb2.Event.DELETE:
            return Event("DELETED", key, None, prev.value if e.HasField("prev_kv") else None, int(kv.mod_revision),
                         int(prev.create_revision), int(prev.mod_revision))
        if kv.create_revision == kv.mod_revision:
            return Event("ADDED", key, kv.value, None, int(kv.mod_revision), int(kv.create_revision), 0)
        return Event("MODIFIED", key, kv.value, prev.value if e.HasField("prev_kv") else None, int(kv.mod_revision),
                     int(kv.create_revision), int(prev.mod_revision))

    def request_progress(self) -> None:
        """Ask etcd for progress on every live watch whose last marker has been read (see the module doc)."""
        asked = False
        for sub in self._subs:
            if sub.closed or not sub.live or sub.marker_unread():
                continue
            sub.asked = sub.asked or max(self._seen, 1)  # an unanswered request keeps its revision
            asked = True
        if asked and self._stream is not None:
            self._stream.request_progress()
