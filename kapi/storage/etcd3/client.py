"""A small trio client of etcd's v3 API over grpcio: the unary calls the etcd3 backend needs.

The packaged Python clients were measured and do not serve (DESIGN.md's field notes), so this is
grpcio with the stubs in ``_pb``:

- **One channel over all endpoints**: ``host:port`` for one, ``ipv4:h1:p1,h2:p2`` (or ``ipv6:``) with
  the ``round_robin`` load-balancing policy for several, so a call in flight to a dead member fails at
  once with UNAVAILABLE and the next one goes to a live member. Over TLS with several endpoints, **one
  channel per endpoint** instead (below), as etcd's clientv3 checks each member against its own host.
- **Metadata** ``hasleader: true`` on every call: a member cut off from its cluster's leader refuses
  the call instead of answering stale.
- **Unary calls as grpc futures** completed into trio with ``TrioToken.run_sync_soon`` (no thread per
  call; many calls may be in flight from many tasks). Each call has a deadline: the client's
  ``call_timeout_s``, or less when the caller's cancel scope ends sooner; a call cancelled by trio
  cancels its future.
- **Errors mapped at this edge** to ``kapi.errors``, the original kept as ``__cause__``:

  ====================================================  ======================================
  OUT_OF_RANGE "required revision has been compacted"   RevisionCompacted
  OUT_OF_RANGE "required revision is a future revision"  RevisionInFuture
  DEADLINE_EXCEEDED, or UNAVAILABLE "request timed out"  OutcomeUnknown for a write, else
  / "leader changed", after a write was sent             StorageUnavailable
  any other status (UNAVAILABLE: unreachable, no         StorageUnavailable
  leader; RESOURCE_EXHAUSTED: no space; ...)
  ====================================================  ======================================

  No grpc exception leaves this module; a trio cancellation passes through untouched.

``WatchStream`` carries all of a replica's watches on one bidirectional ``Watch`` stream, told apart
by a client-chosen ``watch_id``; one thread reads the stream and hands each response to trio with
back-pressure (it waits until trio has routed it). A broken stream is opened again and every watch
re-created from its last event's ``mod_revision + 1`` (never from a response header: etcd stamps
catch-up batches with the current revision, so resuming from a header loses events).

**TLS** (kube's ``--etcd-cafile``, ``--etcd-certfile``, ``--etcd-keyfile``): ``https://`` endpoints get
secure channels that trust ``cafile`` only, and present ``certfile``/``keyfile`` as the client
certificate when given (for etcd's ``--client-cert-auth``). All endpoints share one scheme. grpc
checks a server's certificate against one name per channel (its target's host), so with several
endpoints each gets a channel of its own and each member's certificate need name only its own host
(an IP address or a DNS name, as kubeadm and etcdadm issue them). A failed handshake (wrong CA,
refused client certificate) fails a call at once as ``StorageUnavailable``, naming it.

**Several channels** (TLS, several endpoints): each channel's connectivity is followed
(``channel.subscribe``; the callbacks, on grpc threads, only store the state, which trio reads
lock-free). A call goes round-robin to a READY channel; when none is READY (at start-up, or all
members away) every channel is tried in turn. A call that fails UNAVAILABLE moves on to the next
channel only when that is safe: a read always (it changes nothing), a write only when it was never
sent (the channel could not connect: "failed to connect to all addresses", a refused handshake); a
write that may have been sent keeps the table above (never retried here). Every try shares the
call's one deadline. Each of these channels has the ``round_robin`` policy (over its member's
addresses) and no idle timeout, so a lost connection is made again at once, not only when a call
comes (none would: calls go to READY channels), and a member that comes back takes calls again. The
``Watch`` stream runs on one READY channel, another one than before when it is re-opened.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import queue
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from operator import attrgetter
from types import TracebackType
from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit

import grpc
import trio

from kapi.errors import OutcomeUnknown, RevisionCompacted, RevisionInFuture, StorageError, StorageUnavailable
from kapi.storage.etcd3._pb import kv_pb2, rpc_pb2, rpc_pb2_grpc

R = TypeVar("R")

logger = logging.getLogger(__name__)

METADATA = (("hasleader", "true"),)

# etcd's own messages (server/etcdserver/api/v3rpc/rpctypes), matched on the status details
_COMPACTED = "required revision has been compacted"
_FUTURE = "required revision is a future revision"
_WRITE_UNKNOWN = ("request timed out", "leader changed")
# grpc's own words for a call failed at once because its channel has no connection (pick_first's,
# round_robin's): nothing was sent
_NOT_SENT = ("failed to connect to all addresses", "connections to all backends failing")

# etcd answers a LIST as one message; kube-apiserver lifts grpc's 4 MiB default the same way
_CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
]
_READ_AHEAD = 256  # watch responses the reader thread may hold before trio has routed them
_RETRY_MAX_S = 5.0  # a watch stream that keeps breaking is opened again at most this far apart


def _split(endpoint: str) -> tuple[bool, str, int]:
    """``tls``, ``host``, ``port`` of ``http://h:p``, ``https://h:p``, ``h:p`` or ``[v6]:p`` (etcd's client URLs)."""
    split = urlsplit(endpoint if "//" in endpoint else "//" + endpoint)
    if split.scheme not in ("", "http", "https"):
        raise ValueError(f"etcd endpoint {endpoint!r}: expected http:// or https://")
    if not split.hostname or split.port is None:
        raise ValueError(f"etcd endpoint {endpoint!r}: expected host:port")
    return split.scheme == "https", split.hostname, split.port


def _tls(endpoints: Sequence[str]) -> bool:
    """Whether ``endpoints`` are ``https://`` (all of them; a mix is a ``ValueError``)."""
    schemes = {_split(e)[0] for e in endpoints}
    if len(schemes) > 1:
        raise ValueError(f"etcd endpoints mix http:// and https:// (got {list(endpoints)})")
    return schemes == {True}


def target(endpoints: Sequence[str]) -> tuple[str, list[tuple[str, Any]]]:
    """The grpc target and extra channel options of one channel over ``endpoints``: ``host:port`` for
    one, an ``ipv4:``/``ipv6:`` address list with ``round_robin`` for several (IP addresses only)."""
    if not endpoints:
        raise ValueError("no etcd endpoints")
    _tls(endpoints)
    hosts = [_split(e)[1:] for e in endpoints]
    if len(hosts) == 1:
        host, port = hosts[0]
        return (f"[{host}]:{port}" if ":" in host else f"{host}:{port}"), []
    try:
        addrs = [(ipaddress.ip_address(h), p) for h, p in hosts]
    except ValueError:
        raise ValueError(f"several etcd endpoints must be IP addresses (got {list(endpoints)})") from None
    if all(a.version == 4 for a, _ in addrs):
        joined = "ipv4:" + ",".join(f"{a}:{p}" for a, p in addrs)
    elif all(a.version == 6 for a, _ in addrs):
        joined = "ipv6:" + ",".join(f"[{a}]:{p}" for a, p in addrs)
    else:
        raise ValueError(f"etcd endpoints mix IPv4 and IPv6 (got {list(endpoints)})")
    return joined, [("grpc.lb_policy_name", "round_robin")]


# A channel of its own per member: round_robin (over the member's addresses) asks for a new connection
# as soon as one is lost, where pick_first would stay IDLE until a call came, and no call comes to a
# channel that is not READY; no idle timeout either (grpc's 30 min without calls), for the same reason.
_MEMBER_OPTIONS: list[tuple[str, Any]] = [("grpc.lb_policy_name", "round_robin"),
                                          ("grpc.client_idle_timeout_ms", 2**31 - 1)]


def channels(endpoints: Sequence[str]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """The channels (a target and extra options each) an ``EtcdClient`` of ``endpoints`` opens: one over
    them all (``target``), or over TLS with several endpoints one per endpoint, each certificate
    checked against its own endpoint's host (host names allowed)."""
    if _tls(endpoints) and len(endpoints) > 1:
        return [(target([e])[0], list(_MEMBER_OPTIONS)) for e in endpoints]
    return [target(endpoints)]


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def credentials(endpoints: Sequence[str], *, cafile: str | None = None, certfile: str | None = None,
                keyfile: str | None = None) -> grpc.ChannelCredentials | None:
    """The channel's TLS credentials for ``endpoints`` (``None``: plain ``http://``).

    ``https://`` needs ``cafile`` (etcd's CA, the only one trusted); ``certfile`` and ``keyfile`` (the
    client certificate) come together. TLS files with ``http://`` endpoints are a ``ValueError``
    rather than silently unused.
    """
    files = {"cafile": cafile, "certfile": certfile, "keyfile": keyfile}
    given = [name for name, path in files.items() if path]
    if not _tls(endpoints):
        if given:
            raise ValueError(f"etcd TLS files ({', '.join(given)}) given, but the endpoints are not https:// "
                             f"(got {list(endpoints)})")
        return None
    if not cafile:
        raise ValueError(f"https:// etcd endpoints need the CA file of etcd's server certificates "
                         f"(got {list(endpoints)})")
    if bool(certfile) != bool(keyfile):
        raise ValueError("the etcd client certificate needs both certfile and keyfile")
    return grpc.ssl_channel_credentials(root_certificates=_read(cafile),
                                        private_key=_read(keyfile) if keyfile else None,
                                        certificate_chain=_read(certfile) if certfile else None)


@contextmanager
def etcd_errors(*, write: bool) -> Iterator[None]:
    """Turn a ``grpc.RpcError`` into kapi's ``StorageError`` tree (the table in the module docstring)."""
    try:
        yield
    except grpc.RpcError as exc:
        raise mapped(exc, write=write) from exc


def mapped(exc: grpc.RpcError, *, write: bool) -> StorageError:
    """The ``StorageError`` an etcd call's failure ``exc`` is."""
    code: grpc.StatusCode | None = exc.code() if isinstance(exc, grpc.Call) else None
    details: str = (exc.details() if isinstance(exc, grpc.Call) else "") or str(exc)
    name = code.name if code is not None else "UNKNOWN"
    message = f"etcd: {name}: {details}"
    if code is grpc.StatusCode.OUT_OF_RANGE and _COMPACTED in details:
        return RevisionCompacted(message)
    if code is grpc.StatusCode.OUT_OF_RANGE and _FUTURE in details:
        return RevisionInFuture(message)
    if write and (code is grpc.StatusCode.DEADLINE_EXCEEDED
                  or (code is grpc.StatusCode.UNAVAILABLE and any(s in details for s in _WRITE_UNKNOWN))):
        return OutcomeUnknown(f"{message} (the write may or may not have been applied)")
    return StorageUnavailable(message)


def _may_retry(exc: grpc.RpcError, *, write: bool) -> bool:
    """Whether a call that failed with ``exc`` on one channel may be sent on another: UNAVAILABLE, and
    for a write only when it was never sent."""
    if not isinstance(exc, grpc.Call) or exc.code() is not grpc.StatusCode.UNAVAILABLE:
        return False
    details = exc.details() or ""
    return not write or any(s in details for s in _NOT_SENT)


# ----------------------------------------------------------------- txn parts


def compare_mod(key: bytes, revision: int, result: str = "EQUAL") -> rpc_pb2.Compare:
    """``ModRevision(key) <result> revision`` (``result``: EQUAL, NOT_EQUAL, GREATER, LESS)."""
    return rpc_pb2.Compare(key=key, target=rpc_pb2.Compare.MOD, result=rpc_pb2.Compare.CompareResult.Value(result),
                           mod_revision=revision)


def compare_version(key: bytes, version: int, result: str = "EQUAL") -> rpc_pb2.Compare:
    """``Version(key) <result> version`` (kube's compaction CAS on ``compact_rev_key``)."""
    return rpc_pb2.Compare(key=key, target=rpc_pb2.Compare.VERSION, result=rpc_pb2.Compare.CompareResult.Value(result),
                           version=version)


def op_put(key: bytes, value: bytes, *, prev_kv: bool = False) -> rpc_pb2.RequestOp:
    return rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=key, value=value, prev_kv=prev_kv))


def op_get(key: bytes, range_end: bytes = b"") -> rpc_pb2.RequestOp:
    return rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=key, range_end=range_end))


def op_delete(key: bytes, *, prev_kv: bool = False) -> rpc_pb2.RequestOp:
    return rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=key, prev_kv=prev_kv))


def prefix_end(prefix: bytes) -> bytes:
    """The ``range_end`` that makes a range cover every key starting with ``prefix`` (etcd's GetPrefixRangeEnd)."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\x00"  # all keys


@dataclass(frozen=True, slots=True)
class ClientStatistics:
    calls: int
    in_flight: int
    failures: int


_READY = grpc.ChannelConnectivity.READY

# a call's stub method on a channel
_RANGE = attrgetter("kv.Range")
_PUT = attrgetter("kv.Put")
_DELETE_RANGE = attrgetter("kv.DeleteRange")
_TXN = attrgetter("kv.Txn")
_COMPACT = attrgetter("kv.Compact")
_STATUS = attrgetter("maintenance.Status")


class _Channel:
    """One grpc channel of an ``EtcdClient``, its stubs, and its connectivity as grpc last reported it."""

    def __init__(self, name: str, target: str, options: list[tuple[str, Any]],
                 creds: grpc.ChannelCredentials | None) -> None:
        self.name = name  # the endpoint(s) it reaches, for messages
        self.channel = (grpc.insecure_channel(target, options=options) if creds is None
                        else grpc.secure_channel(target, creds, options=options))
        self.kv = rpc_pb2_grpc.KVStub(self.channel)
        self.maintenance = rpc_pb2_grpc.MaintenanceStub(self.channel)
        self.state: grpc.ChannelConnectivity | None = None  # written on grpc's thread, read in trio's

    def follow(self) -> None:
        """Connect now, and keep ``state`` current."""
        self.channel.subscribe(self._changed, try_to_connect=True)

    def _changed(self, state: grpc.ChannelConnectivity) -> None:  # on a grpc thread: one atomic store
        self.state = state

    def close(self) -> None:
        self.channel.close()  # drops the subscription too


class EtcdClient:
    """The unary calls of etcd's KV and Maintenance services, awaited from trio.

    Open with ``async with EtcdClient([...]) as client`` (or call ``close()``). Every method raises only
    ``kapi.errors.StorageError`` subclasses (and ``trio.Cancelled``).
    """

    def __init__(self, endpoints: Sequence[str], *, call_timeout_s: float = 5.0, cafile: str | None = None,
                 certfile: str | None = None, keyfile: str | None = None) -> None:
        self.endpoints = tuple(endpoints)
        self.call_timeout_s = call_timeout_s
        targets = channels(self.endpoints)
        creds = credentials(self.endpoints, cafile=cafile, certfile=certfile, keyfile=keyfile)
        names = self.endpoints if len(targets) > 1 else (",".join(self.endpoints),)
        self._channels = [_Channel(name, t, _CHANNEL_OPTIONS + options, creds)
                          for name, (t, options) in zip(names, targets)]
        if len(self._channels) > 1:
            for c in self._channels:
                c.follow()
        self._one = self._channels[0] if len(self._channels) == 1 else None  # the single channel's fast path
        self._turn = 0  # round-robin over the READY channels
        self._closed = False
        self._calls = 0
        self._in_flight = 0
        self._failures = 0

    async def __aenter__(self) -> EtcdClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the channels; calls in flight fail (``StorageUnavailable``), later calls too."""
        if not self._closed:
            self._closed = True
            for c in self._channels:
                c.close()

    def statistics(self) -> ClientStatistics:
        return ClientStatistics(calls=self._calls, in_flight=self._in_flight, failures=self._failures)

    def ready_endpoints(self) -> list[str]:
        """The endpoints whose channel is connected now (with one channel over all endpoints: all of them,
        its state not being followed)."""
        if self._one is not None:
            return list(self.endpoints)
        return [c.name for c in self._channels if c.state is _READY]

    # ------------------------------------------------------------ the calls

    async def range(self, key: bytes, range_end: bytes = b"", *, limit: int = 0, revision: int = 0,
                    keys_only: bool = False, count_only: bool = False,
                    serializable: bool = False) -> rpc_pb2.RangeResponse:
        """``KV.Range`` of ``[key, range_end)`` (``key`` alone when ``range_end`` is empty), sorted by key.

        ``limit`` 0 is no limit; ``revision`` 0 is the latest (a linearizable read unless
        ``serializable``); a ``revision`` above the current one is ``RevisionInFuture`` (with it).
        """
        req = rpc_pb2.RangeRequest(key=key, range_end=range_end, limit=limit, revision=revision,
                                   keys_only=keys_only, count_only=count_only, serializable=serializable)
        try:
            return await self._unary(_RANGE, req, write=False)
        except RevisionInFuture as exc:
            exc.revision = revision
            raise

    async def put(self, key: bytes, value: bytes, *, prev_kv: bool = False) -> rpc_pb2.PutResponse:
        """``KV.Put`` (unconditional; the backend writes through ``txn``)."""
        req = rpc_pb2.PutRequest(key=key, value=value, prev_kv=prev_kv)
        return await self._unary(_PUT, req, write=True)

    async def delete_range(self, key: bytes, range_end: bytes = b"", *,
                           prev_kv: bool = False) -> rpc_pb2.DeleteRangeResponse:
        """``KV.DeleteRange`` (unconditional)."""
        req = rpc_pb2.DeleteRangeRequest(key=key, range_end=range_end, prev_kv=prev_kv)
        return await self._unary(_DELETE_RANGE, req, write=True)

    async def txn(self, compare: Iterable[rpc_pb2.Compare], success: Iterable[rpc_pb2.RequestOp],
                  failure: Iterable[rpc_pb2.RequestOp] = ()) -> rpc_pb2.TxnResponse:
        """``KV.Txn``: ``success`` if every ``compare`` holds, else ``failure``; ``succeeded`` says which.

        A txn whose ops are all reads is a read (a failed deadline is ``StorageUnavailable``); any
        other is a write (``OutcomeUnknown``).
        """
        req = rpc_pb2.TxnRequest(compare=list(compare), success=list(success), failure=list(failure))
        write = any(op.WhichOneof("request") != "request_range" for op in (*req.success, *req.failure))
        return await self._unary(_TXN, req, write=write)

    async def compact(self, revision: int, *, physical: bool = False) -> rpc_pb2.CompactionResponse:
        """``KV.Compact`` to ``revision`` (``RevisionCompacted`` if already compacted past it)."""
        req = rpc_pb2.CompactionRequest(revision=revision, physical=physical)
        return await self._unary(_COMPACT, req, write=True)

    async def status(self) -> rpc_pb2.StatusResponse:
        """``Maintenance.Status`` of the member the call reaches (version, leader, raft index, db size)."""
        return await self._unary(_STATUS, rpc_pb2.StatusRequest(), write=False)

    def watch_stub(self) -> rpc_pb2_grpc.WatchStub:
        """The Watch service on a channel of this client (for ``WatchStream``)."""
        return self.watch_target()[1]

    def watch_target(self, *, avoid: str | None = None) -> tuple[str, rpc_pb2_grpc.WatchStub]:
        """The endpoint(s) and Watch service of the channel a new ``Watch`` stream should use: a READY
        one, other than ``avoid`` (the one a broken stream was on) when another is READY."""
        if self._closed:
            raise StorageUnavailable("etcd: client closed")
        if self._one is not None:
            chosen = self._one
        else:
            chosen = min(self._order(), key=lambda c: (c.state is not _READY, c.name == avoid))
        return chosen.name, rpc_pb2_grpc.WatchStub(chosen.channel)

    # ------------------------------------------------------------ the bridge

    def _timeout(self) -> float:
        left = trio.current_effective_deadline() - trio.current_time()
        timeout = min(self.call_timeout_s, left)
        # a deadline already past still sends nothing useful: grpc fails it at once as DEADLINE_EXCEEDED
        return max(timeout, 0.0) if math.isfinite(timeout) else self.call_timeout_s

    def _order(self) -> list[_Channel]:
        """The channels in the order one call tries them: the READY ones round-robin (starting one further
        each call), then the others, those failing to connect last (they fail a call at once)."""
        ready = [c for c in self._channels if c.state is _READY]
        turn = self._turn
        self._turn += 1
        if ready:
            k = turn % len(ready)
            ready = ready[k:] + ready[:k]
        k = turn % len(self._channels)
        rest = [c for c in self._channels[k:] + self._channels[:k] if c.state is not _READY]
        rest.sort(key=lambda c: c.state is grpc.ChannelConnectivity.TRANSIENT_FAILURE)
        return ready + rest

    async def _unary(self, method: Callable[[_Channel], Callable[..., Any]], request: Any, *, write: bool) -> Any:
        if self._closed:
            raise StorageUnavailable("etcd: client closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        self._calls += 1
        self._in_flight += 1
        try:
            if self._one is not None:
                with etcd_errors(write=write):
                    return await self._call(method(self._one), request, self._timeout())
            deadline = trio.current_time() + self._timeout()
            order = self._order()
            for i, channel in enumerate(order):
                try:
                    return await self._call(method(channel), request, max(deadline - trio.current_time(), 0.0))
                except grpc.RpcError as exc:
                    if i == len(order) - 1 or not _may_retry(exc, write=write):
                        raise mapped(exc, write=write) from exc
                    details = exc.details() if isinstance(exc, grpc.Call) else exc
                    logger.debug("etcd %s: %s; trying %s", channel.name, details, order[i + 1].name)
            raise AssertionError("unreachable: the last try returns or raises")
        except StorageError:
            self._failures += 1
            raise
        finally:
            self._in_flight -= 1

    @staticmethod
    async def _call(method: Any, request: Any, timeout: float) -> Any:
        """One call of ``method`` as a grpc future completed into trio; its ``grpc.RpcError`` raised as is."""
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def completed(_: grpc.Future) -> None:  # on a grpc thread, or at once in this one
            try:
                token.run_sync_soon(done.set)
            except trio.RunFinishedError:
                pass

        try:
            future = method.future(request, timeout=timeout, metadata=METADATA)
        except ValueError as exc:  # the channel was closed under us
            raise StorageUnavailable(f"etcd: {exc}") from exc
        future.add_done_callback(completed)
        try:
            await done.wait()
        except BaseException:
            future.cancel()
            raise
        return future.result()


# ------------------------------------------------------------------ watch

# etcd answers RequestProgress with this watch_id (clientv3.InvalidWatchID): meant for every watch
_BROADCAST = -1


@dataclass(eq=False)
class _Watch:
    watch_id: int
    key: bytes
    range_end: bytes
    next_revision: int  # where a re-created watch starts: the last event's mod_revision + 1
    prev_kv: bool
    send: trio.MemorySendChannel[rpc_pb2.WatchResponse]

    def create_request(self) -> rpc_pb2.WatchRequest:
        return rpc_pb2.WatchRequest(create_request=rpc_pb2.WatchCreateRequest(
            key=self.key, range_end=self.range_end, start_revision=self.next_revision, prev_kv=self.prev_kv,
            progress_notify=True, watch_id=self.watch_id))


@dataclass(frozen=True, slots=True)
class WatchStreamStatistics:
    watches: int
    streams_opened: int
    responses: int
    closed_slow: int


class WatchStream:
    """All of one process's etcd watches on one bidirectional ``Watch`` stream.

    ``run`` owns the stream (and its reader thread) until cancelled and re-opens it when it breaks;
    ``watch`` opens one watch and yields a bounded channel of etcd's ``WatchResponse`` messages
    (events with ``prev_kv``, progress notifications with no events, and a last one with
    ``canceled`` set, e.g. ``compact_revision`` when the start revision was compacted). A watch whose
    channel is full is closed (its reader sees the end and watches again from its last revision):
    a slow reader never stalls the others.
    """

    def __init__(self, client: EtcdClient, *, buffer: int = 1000, retry_s: float = 0.2) -> None:
        if buffer < 1:
            raise ValueError("watch buffer must hold at least one response")
        self._client = client
        self._buffer = buffer
        self._retry_s = retry_s
        self._watches: dict[int, _Watch] = {}
        self._next_id = 1
        self._requests: queue.SimpleQueue[rpc_pb2.WatchRequest | None] | None = None
        self._running = False
        self._opened = 0
        self._responses = 0
        self._closed_slow = 0
        self.endpoint: str | None = None  # the endpoint(s) of the channel the stream is (or was last) on

    def statistics(self) -> WatchStreamStatistics:
        return WatchStreamStatistics(watches=len(self._watches), streams_opened=self._opened,
                                     responses=self._responses, closed_slow=self._closed_slow)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the stream open until cancelled; ``started()`` once watches may be opened."""
        self._running = True
        try:
            task_status.started()
            delay = self._retry_s
            while True:
                before = self._responses
                try:
                    await self._serve_stream()
                except StorageError as exc:
                    # Said once per outage: while etcd stays away, the retries back off quietly.
                    level = logging.INFO if delay == self._retry_s else logging.DEBUG
                    logger.log(level, "etcd watch stream on %s broke (%s); re-opening", self.endpoint, exc)
                delay = self._retry_s if self._responses > before else min(delay * 2, _RETRY_MAX_S)
                await trio.sleep(delay)
        finally:
            self._running = False
            self._requests = None
            for w in list(self._watches.values()):
                self._close(w)

    @asynccontextmanager
    async def watch(self, key: bytes, range_end: bytes, start_revision: int, *,
                    prev_kv: bool = True) -> AsyncIterator[trio.MemoryReceiveChannel[rpc_pb2.WatchResponse]]:
        """A watch of ``[key, range_end)`` from ``start_revision`` (0: from now) on the shared stream."""
        await trio.lowlevel.checkpoint()
        if not self._running:
            raise StorageUnavailable("etcd watch stream is not running")
        send, receive = trio.open_memory_channel[rpc_pb2.WatchResponse](self._buffer)
        w = _Watch(self._next_id, key, range_end, start_revision, prev_kv, send)
        self._next_id += 1
        self._watches[w.watch_id] = w
        self._send(w.create_request())
        try:
            async with receive:
                yield receive
        finally:
            if self._watches.pop(w.watch_id, None) is not None:
                self._send(rpc_pb2.WatchRequest(cancel_request=rpc_pb2.WatchCancelRequest(watch_id=w.watch_id)))
            send.close()

    def request_progress(self) -> None:
        """Ask etcd for a progress notification on every watch of the stream (etcd's RequestProgress)."""
        self._send(rpc_pb2.WatchRequest(progress_request=rpc_pb2.WatchProgressRequest()))

    # ------------------------------------------------------------ internals

    def _send(self, request: rpc_pb2.WatchRequest) -> None:
        if self._requests is not None:
            self._requests.put(request)
        # no stream open: the next one re-creates every watch, and a progress request is moot

    async def _serve_stream(self) -> None:
        requests: queue.SimpleQueue[rpc_pb2.WatchRequest | None] = queue.SimpleQueue()
        for w in self._watches.values():
            requests.put(w.create_request())

        def request_iterator() -> Iterator[rpc_pb2.WatchRequest]:
            while (request := requests.get()) is not None:
                yield request

        self.endpoint, stub = self._client.watch_target(avoid=self.endpoint)
        call = stub.Watch(request_iterator(), metadata=METADATA)
        self._requests = requests
        self._opened += 1
        token = trio.lowlevel.current_trio_token()
        # The reader thread hands responses to trio in batches: it appends to ``pending`` and schedules
        # one ``drain`` while none is scheduled, so a busy trio loop takes many responses per wake-up
        # instead of one thread hand-off each. Back-pressure: past _READ_AHEAD unrouted responses the
        # reader waits for trio.
        pending: list[rpc_pb2.WatchResponse] = []
        cond = threading.Condition()
        state = {"scheduled": False, "stopped": False}

        def drain() -> None:  # in trio's thread
            with cond:
                taken = pending[:]
                pending.clear()
                state["scheduled"] = False
                cond.notify()
            for response in taken:
                self._route(response)

        def read() -> None:
            with etcd_errors(write=False):
                for response in call:
                    with cond:
                        while len(pending) >= _READ_AHEAD and not state["stopped"]:
                            cond.wait(0.5)
                        if state["stopped"]:
                            return
                        pending.append(response)
                        if state["scheduled"]:
                            continue
                        state["scheduled"] = True
                    try:
                        token.run_sync_soon(drain)
                    except trio.RunFinishedError:
                        return
            raise StorageUnavailable("etcd: watch stream ended")

        try:
            await trio.to_thread.run_sync(read, abandon_on_cancel=True)
        finally:
            with cond:
                state["stopped"] = True
                cond.notify()
            drain()  # what the reader read before the stream ended, in order, before any watch is re-created
            if self._requests is requests:
                self._requests = None
            requests.put(None)
            call.cancel()

    def _route(self, response: rpc_pb2.WatchResponse) -> None:
        self._responses += 1
        if response.watch_id == _BROADCAST:
            for w in list(self._watches.values()):
                self._deliver(w, response)
            return
        w = self._watches.get(response.watch_id)
        if w is None or (response.created and not response.canceled):
            return
        if response.events:
            w.next_revision = response.events[-1].kv.mod_revision + 1
        self._deliver(w, response)
        if response.canceled:
            self._watches.pop(w.watch_id, None)
            w.send.close()

    def _deliver(self, w: _Watch, response: rpc_pb2.WatchResponse) -> None:
        try:
            w.send.send_nowait(response)
        except trio.WouldBlock:
            self._closed_slow += 1
            self._watches.pop(w.watch_id, None)
            self._send(rpc_pb2.WatchRequest(cancel_request=rpc_pb2.WatchCancelRequest(watch_id=w.watch_id)))
            w.send.close()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._watches.pop(w.watch_id, None)

    def _close(self, w: _Watch) -> None:
        self._watches.pop(w.watch_id, None)
        w.send.close()


__all__ = [
    "ClientStatistics",
    "EtcdClient",
    "WatchStream",
    "WatchStreamStatistics",
    "channels",
    "compare_mod",
    "compare_version",
    "credentials",
    "etcd_errors",
    "kv_pb2",
    "mapped",
    "op_delete",
    "op_get",
    "op_put",
    "prefix_end",
    "rpc_pb2",
    "target",
]
