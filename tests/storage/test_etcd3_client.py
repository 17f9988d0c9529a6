"""The etcd3 client (kapi.storage.etcd3.client) against a real one-member etcd: ranges with limit and
revision, txn compares, compaction, and etcd's failures as kapi's StorageError tree (never a raw grpc
error)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import trio

from kapi.errors import OutcomeUnknown, RevisionCompacted, RevisionInFuture, StorageError, StorageUnavailable
from kapi.storage.etcd3.client import (
    ClientStatistics,
    EtcdClient,
    WatchStream,
    _may_retry,
    compare_mod,
    mapped,
    op_get,
    op_put,
    prefix_end,
    target,
)
from tests._needs import require_module
from tests.storage.etcd_support import EtcdCluster, etcd_cluster, free_port, make_tls

require_module("grpc")


@pytest.fixture
async def etcd(tmp_path: Path) -> AsyncIterator[EtcdCluster]:
    async with etcd_cluster(tmp_path, members=1) as cluster:
        yield cluster


@pytest.fixture
async def client(etcd: EtcdCluster) -> AsyncIterator[EtcdClient]:
    async with EtcdClient(etcd.endpoints, call_timeout_s=2.0) as c:
        yield c


# ---------------------------------------------------------------- no etcd needed


def test_target_one_endpoint_is_plain_and_several_are_round_robin() -> None:
    assert target(["http://127.0.0.1:2379"]) == ("127.0.0.1:2379", [])
    assert target(["localhost:2379"]) == ("localhost:2379", [])
    joined, options = target(["http://127.0.0.1:1", "127.0.0.2:2"])
    assert joined == "ipv4:127.0.0.1:1,127.0.0.2:2"
    assert ("grpc.lb_policy_name", "round_robin") in options
    assert target(["[::1]:1", "[::2]:2"])[0] == "ipv6:[::1]:1,[::2]:2"
    with pytest.raises(ValueError):
        target(["a.example:1", "b.example:2"])
    with pytest.raises(ValueError):
        target(["unix://127.0.0.1:2379"])


def test_prefix_end() -> None:
    assert prefix_end(b"/registry/pods/") == b"/registry/pods0"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff\xff") == b"\x00"


class _Failed(grpc.RpcError, grpc.Call):  # type: ignore[misc]
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(("code", "details", "write", "expected"), [
    (grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses", True, StorageUnavailable),
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: no leader", False, StorageUnavailable),
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: request timed out", True, OutcomeUnknown),
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: request timed out", False, StorageUnavailable),
    (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", True, OutcomeUnknown),
    (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", False, StorageUnavailable),
    (grpc.StatusCode.OUT_OF_RANGE, "etcdserver: mvcc: required revision has been compacted", False,
     RevisionCompacted),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "etcdserver: mvcc: database space exceeded", True, StorageUnavailable),
])
def test_grpc_failures_map_to_storage_errors(code: grpc.StatusCode, details: str, write: bool,
                                             expected: type[StorageError]) -> None:
    err = mapped(_Failed(code, details), write=write)
    assert type(err) is expected
    assert details in str(err)


@pytest.mark.parametrize(("code", "details", "write", "retry"), [
    # grpc's own failures of a channel that has no connection: nothing was sent
    (grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:2379: "
                                  "Failed to connect to remote host: Connection refused", True, True),
    (grpc.StatusCode.UNAVAILABLE, "connections to all backends failing; last error: UNKNOWN: ipv4:127.0.0.1:2379: "
                                  "Ssl handshake failed: CERTIFICATE_VERIFY_FAILED", True, True),
    # the connection broke with the call on it, or etcd refused it: a write may have been applied
    (grpc.StatusCode.UNAVAILABLE, "Socket closed", True, False),
    (grpc.StatusCode.UNAVAILABLE, "Socket closed", False, True),
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: no leader", False, True),
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: no leader", True, False),
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: request timed out", True, False),
    (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", False, False),  # the call's time is spent
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "etcdserver: mvcc: database space exceeded", False, False),
])
def test_only_a_read_or_a_write_never_sent_goes_on_to_another_member(code: grpc.StatusCode, details: str,
                                                                     write: bool, retry: bool) -> None:
    assert _may_retry(_Failed(code, details), write=write) is retry


async def test_a_write_no_member_took_tries_each_channel_once_then_is_unavailable(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tls = make_tls(tmp_path)
    endpoints = [f"https://127.0.0.1:{free_port()}", f"https://127.0.0.2:{free_port('127.0.0.2')}"]
    caplog.set_level(logging.DEBUG, logger="kapi.storage.etcd3.client")
    async with EtcdClient(endpoints, call_timeout_s=30.0, **tls.client_options()) as client:
        with trio.fail_after(20):  # refused at once: no waiting for the 30 s deadline
            with pytest.raises(StorageUnavailable, match="Connection refused") as info:
                await client.put(b"/k", b"v")
        assert type(info.value) is StorageUnavailable  # never sent: not OutcomeUnknown
        tried = [r.getMessage() for r in caplog.records if "trying" in r.getMessage()]
        assert len(tried) == 1 and any(e in tried[0] for e in endpoints)  # the other one, once
        assert client.statistics() == ClientStatistics(calls=1, in_flight=0, failures=1)
        assert client.ready_endpoints() == []


def test_future_revision_is_its_own_error() -> None:
    err = mapped(_Failed(grpc.StatusCode.OUT_OF_RANGE, "etcdserver: mvcc: required revision is a future revision"),
                 write=False)
    assert type(err) is RevisionInFuture


# ---------------------------------------------------------------- against etcd


@pytest.mark.e2e
async def test_put_get_and_range_with_limit_and_revision(client: EtcdClient) -> None:
    revs = []
    for i in range(5):
        revs.append((await client.put(f"/r/k{i}".encode(), f"v{i}".encode())).header.revision)
    assert revs == sorted(revs) and len(set(revs)) == 5
    got = await client.range(b"/r/k2")
    assert [(kv.key, kv.value, kv.mod_revision) for kv in got.kvs] == [(b"/r/k2", b"v2", revs[2])]
    assert got.header.revision == revs[-1]

    page = await client.range(b"/r/", prefix_end(b"/r/"), limit=2)
    assert [kv.key for kv in page.kvs] == [b"/r/k0", b"/r/k1"]
    assert page.more and page.count == 5

    await client.put(b"/r/k0", b"changed")
    old = await client.range(b"/r/", prefix_end(b"/r/"), revision=revs[2])
    assert [(kv.key, kv.value) for kv in old.kvs] == [(b"/r/k0", b"v0"), (b"/r/k1", b"v1"), (b"/r/k2", b"v2")]
    assert (await client.range(b"/r/k0")).kvs[0].value == b"changed"

    keys = await client.range(b"/r/", prefix_end(b"/r/"), keys_only=True)
    assert [kv.value for kv in keys.kvs] == [b""] * 5
    counted = await client.range(b"/r/", prefix_end(b"/r/"), count_only=True)
    assert counted.count == 5 and not counted.kvs
    assert (await client.delete_range(b"/r/k4")).deleted == 1


@pytest.mark.e2e
async def test_txn_compare_that_fails_runs_the_else_branch(client: EtcdClient) -> None:
    created = await client.txn([compare_mod(b"/t/a", 0)], [op_put(b"/t/a", b"one")])
    assert created.succeeded
    rev = created.header.revision
    again = await client.txn([compare_mod(b"/t/a", 0)], [op_put(b"/t/a", b"two")], [op_get(b"/t/a")])
    assert not again.succeeded  # a create of an existing key: kube's KeyExists
    [kv] = again.responses[0].response_range.kvs
    assert (kv.value, kv.mod_revision) == (b"one", rev)
    stale = await client.txn([compare_mod(b"/t/a", rev - 1)], [op_put(b"/t/a", b"x")], [op_get(b"/t/a")])
    assert not stale.succeeded
    updated = await client.txn([compare_mod(b"/t/a", rev)], [op_put(b"/t/a", b"three")], [op_get(b"/t/a")])
    assert updated.succeeded and updated.header.revision == rev + 1
    assert (await client.range(b"/t/a")).kvs[0].value == b"three"


@pytest.mark.e2e
async def test_a_compacted_revision_is_revision_compacted(client: EtcdClient) -> None:
    first = (await client.put(b"/c/k", b"1")).header.revision
    await client.put(b"/c/k", b"2")
    last = (await client.put(b"/c/k", b"3")).header.revision
    await client.compact(last)
    with pytest.raises(RevisionCompacted) as info:
        await client.range(b"/c/k", revision=first)
    assert isinstance(info.value.__cause__, grpc.RpcError)
    assert (await client.range(b"/c/k", revision=last)).kvs[0].value == b"3"  # the compacted revision itself
    with pytest.raises(RevisionCompacted):
        await client.compact(first)
    with pytest.raises(RevisionInFuture, match="future revision") as future:
        await client.range(b"/c/k", revision=last + 100)
    assert future.value.revision == last + 100


@pytest.mark.e2e
async def test_status_answers_version_and_leader(client: EtcdClient) -> None:
    status = await client.status()
    assert status.version.startswith("3.") and status.leader != 0


@pytest.mark.e2e
async def test_stopped_etcd_is_storage_unavailable_not_a_grpc_error(etcd: EtcdCluster, client: EtcdClient) -> None:
    await client.put(b"/u/k", b"v")
    etcd.stop_members()
    for call in (lambda: client.range(b"/u/k"), lambda: client.put(b"/u/k", b"w"), client.status):
        with trio.fail_after(5):
            with pytest.raises(StorageUnavailable) as info:
                await call()
        assert isinstance(info.value.__cause__, grpc.RpcError)
        assert not isinstance(info.value, grpc.RpcError)
    etcd.members[0].start()  # the same channel recovers when etcd is back
    await trio.to_thread.run_sync(etcd.wait_ready)
    with trio.fail_after(10):
        while True:
            try:
                assert (await client.range(b"/u/k")).kvs[0].value == b"v"
                break
            except StorageUnavailable:
                await trio.sleep(0.1)


@pytest.mark.e2e
async def test_a_trio_deadline_bounds_the_call_and_pipelined_calls_share_the_channel(client: EtcdClient) -> None:
    async with trio.open_nursery() as nursery:
        for i in range(200):
            nursery.start_soon(client.put, f"/p/{i:03}".encode(), b"v")
    assert (await client.range(b"/p/", prefix_end(b"/p/"), count_only=True)).count == 200
    assert client.statistics().in_flight == 0
    with trio.move_on_after(0) as scope:
        await client.range(b"/p/000")
    assert scope.cancelled_caught


async def test_a_closed_client_is_unavailable() -> None:
    client = EtcdClient(["127.0.0.1:1"])
    client.close()
    with pytest.raises(StorageUnavailable):
        await client.status()


@pytest.mark.e2e
async def test_three_members_one_channel_survives_a_member_killed(tmp_path: Path) -> None:
    async with etcd_cluster(tmp_path, members=3) as cluster:
        async with EtcdClient(cluster.endpoints, call_timeout_s=0.5) as client:
            await client.put(b"/m/k", b"0")
            leader = (await client.status()).leader
            ids = {}
            for m in cluster.members:
                async with EtcdClient([m.endpoint]) as one:
                    ids[m.name] = (await one.status()).header.member_id
            [killed] = [m for m in cluster.members if ids[m.name] == leader]
            killed.stop(kill=True)
            written = 0
            with trio.fail_after(15):
                while written < 20:  # some calls fail while the others elect a leader, then all go through
                    try:
                        await client.put(b"/m/k", str(written).encode())
                        written += 1
                    except StorageUnavailable:
                        await trio.sleep(0.05)
            assert (await client.range(b"/m/k")).kvs[0].value == b"19"


# ---------------------------------------------------------------- the Watch stream


async def _responses(events: trio.MemoryReceiveChannel[Any], n: int) -> list[Any]:
    out = []
    with trio.fail_after(10):
        while len(out) < n:
            out.append(await events.receive())
    return out


def _events(responses: list[Any]) -> list[tuple[int, bytes, bytes, bytes]]:
    return [(e.kv.mod_revision, e.kv.key, e.kv.value, e.prev_kv.value) for r in responses for e in r.events]


@pytest.fixture
async def stream(client: EtcdClient, nursery: trio.Nursery) -> WatchStream:
    s = WatchStream(client, buffer=100)
    await nursery.start(s.run)
    return s


@pytest.mark.e2e
async def test_watches_share_one_stream_and_see_history_then_live(client: EtcdClient, stream: WatchStream) -> None:
    first = (await client.put(b"/w/a/1", b"x")).header.revision
    await client.put(b"/w/a/1", b"y")
    async with stream.watch(b"/w/a/", prefix_end(b"/w/a/"), first) as a, \
            stream.watch(b"/w/b/", prefix_end(b"/w/b/"), first) as b:
        await client.put(b"/w/b/1", b"z")
        got_a: list[Any] = []
        with trio.fail_after(10):
            while len(_events(got_a)) < 2:
                got_a.append(await a.receive())
        assert _events(got_a) == [(first, b"/w/a/1", b"x", b""), (first + 1, b"/w/a/1", b"y", b"x")]
        [rb] = await _responses(b, 1)
        assert _events([rb]) == [(first + 2, b"/w/b/1", b"z", b"")]
        assert stream.statistics().streams_opened == 1 and stream.statistics().watches == 2
    assert stream.statistics().watches == 0


@pytest.mark.e2e
async def test_a_watch_at_a_compacted_revision_is_canceled_with_it(client: EtcdClient, stream: WatchStream) -> None:
    first = (await client.put(b"/w/c", b"1")).header.revision
    last = (await client.put(b"/w/c", b"2")).header.revision
    await client.compact(last)
    async with stream.watch(b"/w/c", b"", first) as events:
        [r] = await _responses(events, 1)
        assert r.canceled and r.compact_revision == last
        with trio.fail_after(5):
            assert [x async for x in events] == []  # closed after the cancel
    async with stream.watch(b"/w/c", b"", last) as events:  # at the compacted revision itself: still works
        [r] = await _responses(events, 1)
        assert _events([r]) == [(last, b"/w/c", b"2", b"")]  # its prev_kv was compacted away


@pytest.mark.e2e
async def test_request_progress_reaches_every_watch_at_the_current_revision(client: EtcdClient,
                                                                            stream: WatchStream) -> None:
    rev = (await client.put(b"/w/p", b"1")).header.revision
    async with stream.watch(b"/w/none/", prefix_end(b"/w/none/"), rev + 1) as quiet, \
            stream.watch(b"/w/p", b"", rev + 1) as other:
        await client.put(b"/w/elsewhere", b"x")
        await trio.sleep(0.2)  # both watches created on the server
        stream.request_progress()
        for events in (quiet, other):
            with trio.fail_after(5):
                r = await events.receive()
                while r.events:  # none expected, but never loop forever
                    r = await events.receive()
            assert r.header.revision == rev + 1 and not r.canceled


@pytest.mark.e2e
async def test_a_broken_stream_resumes_every_watch_after_its_last_event(etcd: EtcdCluster, client: EtcdClient,
                                                                        stream: WatchStream) -> None:
    rev = (await client.put(b"/w/r/0", b"0")).header.revision
    async with stream.watch(b"/w/r/", prefix_end(b"/w/r/"), rev) as events:
        before = await _responses(events, 1)
        assert _events(before) == [(rev, b"/w/r/0", b"0", b"")]
        etcd.stop_members()
        etcd.members[0].start()
        await trio.to_thread.run_sync(etcd.wait_ready)
        written = []
        with trio.fail_after(10):
            while len(written) < 3:
                try:
                    written.append((await client.put(f"/w/r/{len(written) + 1}".encode(), b"v")).header.revision)
                except StorageUnavailable:
                    await trio.sleep(0.1)
        got: list[Any] = []
        with trio.fail_after(15):
            while len(_events(got)) < 3:
                got.append(await events.receive())
        assert [e[0] for e in _events(got)] == written  # none missed, none repeated
        assert stream.statistics().streams_opened >= 2


@pytest.mark.e2e
async def test_a_slow_watch_is_closed_without_stalling_the_others(client: EtcdClient, nursery: trio.Nursery) -> None:
    stream = WatchStream(client, buffer=2)
    await nursery.start(stream.run)
    rev = (await client.put(b"/w/s/x", b"")).header.revision
    async with stream.watch(b"/w/s/", prefix_end(b"/w/s/"), rev + 1) as slow, \
            stream.watch(b"/w/f/", prefix_end(b"/w/f/"), rev + 1) as fast:
        await trio.sleep(0.2)
        for i in range(5):
            await client.put(f"/w/s/{i}".encode(), b"")
        await trio.sleep(0.5)  # the slow one is never read: closed when its buffer fills
        await client.put(b"/w/f/1", b"")
        [r] = await _responses(fast, 1)
        assert _events([r])[0][1] == b"/w/f/1"
        with trio.fail_after(5):
            left = [x async for x in slow]
        assert len(left) <= 2 and stream.statistics().closed_slow == 1
