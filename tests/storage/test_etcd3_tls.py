"""TLS to etcd (kube's --etcd-cafile/--etcd-certfile/--etcd-keyfile): https:// endpoints, the CA and a
client certificate; wrong combinations refused at once, a wrong CA failing fast with a clear message."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import pytest
import trio

from kapi.errors import KeyExists, StorageUnavailable
from kapi.storage.etcd3.client import EtcdClient, WatchStream, channels, credentials, prefix_end, target
from kapi.storage.etcd3.store import EtcdStorage
from tests._needs import require_module
from kapi.storage.etcd3.client import _may_retry, compare_mod, op_put, rpc_pb2, rpc_pb2_grpc
from tests.chain.authn_helpers import make_ca
from tests.storage.etcd_support import EtcdCluster, etcd_cluster, make_member_tls, make_tls, write_server_cert

require_module("grpc")


# ---------------------------------------------------------------- no etcd needed


def test_several_https_endpoints_get_a_channel_each_checked_against_its_own_host() -> None:
    assert channels(["https://127.0.0.1:2379"]) == [("127.0.0.1:2379", [])]
    several = channels(["https://127.0.0.1:1", "https://127.0.0.2:2", "https://etcd-2.example:3"])
    assert [t for t, _ in several] == ["127.0.0.1:1", "127.0.0.2:2", "etcd-2.example:3"]  # host names too
    for _, options in several:  # no name override: each channel checks its own host
        assert "grpc.ssl_target_name_override" not in dict(options)
        assert dict(options)["grpc.lb_policy_name"] == "round_robin"  # reconnects without waiting for a call
    assert [t for t, _ in channels(["https://[::1]:1", "https://[::2]:2"])] == ["[::1]:1", "[::2]:2"]
    # plain http keeps one round_robin channel over them all
    assert channels(["127.0.0.1:1", "http://127.0.0.2:2"]) == [target(["127.0.0.1:1", "127.0.0.2:2"])]


def test_wrong_tls_combinations_are_value_errors(tmp_path: Path) -> None:
    tls = make_tls(tmp_path)
    with pytest.raises(ValueError, match="not https"):
        EtcdStorage(["http://127.0.0.1:2379"], cafile=tls.cafile)
    with pytest.raises(ValueError, match="not https"):
        EtcdClient(["127.0.0.1:2379"], certfile=tls.certfile, keyfile=tls.keyfile)
    with pytest.raises(ValueError, match="CA file"):
        EtcdStorage(["https://127.0.0.1:2379"])
    with pytest.raises(ValueError, match="both certfile and keyfile"):
        EtcdStorage(["https://127.0.0.1:2379"], cafile=tls.cafile, certfile=tls.certfile)
    with pytest.raises(ValueError, match="mix http"):
        EtcdStorage(["https://127.0.0.1:1", "http://127.0.0.1:2"], cafile=tls.cafile)
    assert credentials(["127.0.0.1:2379"]) is None
    assert credentials(["https://127.0.0.1:2379"], **tls.client_options()) is not None


# ---------------------------------------------------------------- a real etcd over TLS


async def _member_ids(cluster: EtcdCluster) -> dict[str, int]:
    """Each running member's id, asked of it alone (``EtcdMember.status``)."""
    return {m.name: (await trio.to_thread.run_sync(m.status))[0] for m in cluster.members if m.running()}


async def _reach_all(client: EtcdClient, ids: set[int]) -> set[int]:
    """The members that answered ``Status`` calls made until every one of ``ids`` has answered one (calls
    go round-robin to the connected channels; a channel still connecting takes none)."""
    seen: set[int] = set()
    with trio.fail_after(15):
        while not ids <= seen:
            try:
                seen.add((await client.status()).header.member_id)
            except StorageUnavailable:
                pass
            await trio.sleep(0.01)
    return seen


async def _create_once(client: EtcdClient, key: bytes) -> None:
    """Create ``key``, trying again while etcd is unavailable (a create applied once already is done)."""
    with trio.fail_after(20):
        while True:
            try:
                await client.txn([compare_mod(key, 0)], [op_put(key, b"v")])
                return
            except StorageUnavailable:
                await trio.sleep(0.05)



@pytest.mark.e2e
async def test_etcd_storage_over_tls_with_the_ca_and_a_client_certificate(tmp_path: Path,
                                                                         nursery: trio.Nursery) -> None:
    async with etcd_cluster(tmp_path, tls=make_tls(tmp_path)) as cluster:
        [endpoint] = cluster.endpoints
        assert endpoint.startswith("https://")
        storage = EtcdStorage(cluster.endpoints, call_timeout_s=5.0, **cluster.client_options())
        await nursery.start(storage.run)
        rev = await storage.create("/registry/pods/a", b"v1")
        assert (await storage.get("/registry/pods/a")).revision == rev
        async with storage.watch("/registry/pods/", rev) as events:
            await storage.update("/registry/pods/a", b"v2", rev)
            assert (await events.receive()).value == b"v2"


async def _refused(cluster: EtcdCluster, **options: str) -> StorageUnavailable:
    async with trio.open_nursery() as nursery:
        storage = EtcdStorage(cluster.endpoints, call_timeout_s=30.0, **options)
        await nursery.start(storage.run)
        with pytest.raises(StorageUnavailable) as info:
            await storage.get("/registry/pods/a")
        nursery.cancel_scope.cancel()
    return info.value


@pytest.mark.e2e
async def test_a_wrong_ca_or_no_client_certificate_fails_at_once_saying_why(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    other = make_tls(tmp_path / "other", name="other")
    async with etcd_cluster(tmp_path, tls=make_tls(tmp_path)) as cluster:
        assert cluster.tls is not None
        # A 30 s call timeout: a hang would end as DEADLINE_EXCEEDED, not as the handshake's failure.
        wrong_ca = await _refused(cluster, cafile=other.cafile, certfile=cluster.tls.certfile,
                                  keyfile=cluster.tls.keyfile)
        assert "UNAVAILABLE" in str(wrong_ca) and "DEADLINE" not in str(wrong_ca)
        assert "handshake failed" in str(wrong_ca).lower() and "CERTIFICATE_VERIFY_FAILED" in str(wrong_ca)
        no_client_cert = await _refused(cluster, cafile=cluster.tls.cafile)
        assert "handshake failed" in str(no_client_cert).lower() and "DEADLINE" not in str(no_client_cert)
        # the right options still work against the same member
        async with EtcdClient(cluster.endpoints, **cluster.client_options()) as client:
            assert (await client.status()).leader


@pytest.mark.e2e
async def test_three_tls_members_sharing_one_certificate(tmp_path: Path, nursery: trio.Nursery) -> None:
    async with etcd_cluster(tmp_path, members=3, tls=make_tls(tmp_path)) as cluster:
        async with EtcdClient(cluster.endpoints, call_timeout_s=5.0, **cluster.client_options()) as client:
            ids = await _member_ids(cluster)
            assert await _reach_all(client, set(ids.values())) == set(ids.values())
        # the store reads every member's version, each on a TLS channel of its own
        storage = EtcdStorage(cluster.endpoints, **cluster.client_options())
        await nursery.start(storage.run)
        assert storage._versions.keys() == set(cluster.endpoints)


# ------------------------------------------------- members each with a certificate naming only itself

_IPS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


@pytest.mark.e2e
async def test_each_member_is_checked_against_its_own_host_and_a_killed_leader_is_ridden_out(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    async with etcd_cluster(tmp_path, members=3, tls=make_member_tls(tmp_path, _IPS)) as cluster:
        assert [urlsplit(e).hostname for e in cluster.endpoints] == _IPS
        ids = await _member_ids(cluster)
        storage = EtcdStorage(cluster.endpoints, call_timeout_s=2.0, **cluster.client_options())
        await nursery.start(storage.run)
        # every member answers (one channel over them all would check them all against 127.0.0.1)
        assert await _reach_all(storage.client, set(ids.values())) == set(ids.values())
        rev = await storage.create("/registry/pods/a", b"v1")
        assert (await storage.get("/registry/pods/a")).value == b"v1"
        async with storage.watch("/registry/pods/", rev) as events:
            leader = cluster.leader()
            leader.stop(kill=True)
            keys = [f"/registry/pods/p{i}" for i in range(10)]
            with trio.fail_after(20):
                for key in keys:  # some calls fail while the others elect a leader, then all go through
                    while True:
                        try:
                            await storage.create(key, b"v")
                            break
                        except KeyExists:  # created by a try whose answer was lost
                            break
                        except StorageUnavailable:
                            await trio.sleep(0.05)
            got = []
            with trio.fail_after(15):
                while len(got) < len(keys):
                    got.append(await events.receive())
            assert [e.key for e in got] == keys  # none missed, none twice, in order
        survivors = {ids[m.name] for m in cluster.members if m is not leader}
        assert await _reach_all(storage.client, survivors) == survivors


@pytest.mark.e2e
async def test_the_watch_stream_moves_off_a_killed_member_which_takes_calls_again_once_back(
        tmp_path: Path, nursery: trio.Nursery) -> None:
    async with etcd_cluster(tmp_path, members=3, tls=make_member_tls(tmp_path, _IPS)) as cluster:
        ids = await _member_ids(cluster)
        async with EtcdClient(cluster.endpoints, call_timeout_s=2.0, **cluster.client_options()) as client:
            stream = WatchStream(client, retry_s=0.05)
            await nursery.start(stream.run)
            await _reach_all(client, set(ids.values()))
            await _create_once(client, b"/w/0")
            first = (await client.range(b"/w/0")).kvs[0].mod_revision
            async with stream.watch(b"/w/", prefix_end(b"/w/"), first) as events:
                with trio.fail_after(10):
                    [event] = (await events.receive()).events
                assert event.kv.key == b"/w/0"
                carrier = stream.endpoint
                [member] = [m for m in cluster.members if m.endpoint == carrier]
                member.stop(kill=True)
                for i in range(1, 6):
                    await _create_once(client, f"/w/{i}".encode())
                written = [(kv.key, kv.mod_revision) for kv in (await client.range(b"/w/1", b"/w/6")).kvs]
                got: list[tuple[bytes, int]] = []
                with trio.fail_after(15):
                    while len(got) < len(written):
                        got += [(e.kv.key, e.kv.mod_revision) for e in (await events.receive()).events]
                assert sorted(got, key=lambda kr: kr[1]) == sorted(written, key=lambda kr: kr[1]) == got
                assert stream.endpoint != carrier and stream.statistics().streams_opened >= 2
            # the killed member back: its channel connects again and it takes calls again
            member.start()
            await trio.to_thread.run_sync(cluster.wait_ready)
            assert await _reach_all(client, set(ids.values())) == set(ids.values())


def _status_trusting(cafile: str, address: str, cluster: EtcdCluster) -> int:
    """The member id ``address`` answers with to a client trusting ``cafile`` (``grpc.RpcError`` if none)."""
    assert cluster.tls is not None
    creds = grpc.ssl_channel_credentials(Path(cafile).read_bytes(), Path(cluster.tls.keyfile).read_bytes(),
                                         Path(cluster.tls.certfile).read_bytes())
    with grpc.secure_channel(address, creds) as channel:
        resp = rpc_pb2_grpc.MaintenanceStub(channel).Status(rpc_pb2.StatusRequest(), timeout=1.0)
    return int(resp.header.member_id)


@pytest.mark.e2e
async def test_a_member_whose_certificate_is_from_another_ca_is_refused_and_the_others_serve(
        tmp_path: Path) -> None:
    hosts = ["localhost", "127.0.0.2", "127.0.0.3"]  # a host name among them: each channel its own name
    async with etcd_cluster(tmp_path, members=3, tls=make_member_tls(tmp_path, hosts)) as cluster:
        ids = await _member_ids(cluster)
        bad = cluster.members[2]
        bad.stop()
        other = make_ca("other-ca")
        other_cafile, _ = other.write(tmp_path, "other-ca")
        write_server_cert(other, "127.0.0.3", tmp_path, "etcd-m2")  # over m2's certificate and key
        bad.start()
        address = bad.endpoint.removeprefix("https://")
        with trio.fail_after(15):  # m2 is back and serves, to a client trusting the other CA
            while True:
                try:
                    assert await trio.to_thread.run_sync(_status_trusting, str(other_cafile), address,
                                                         cluster) == ids["m2"]
                    break
                except grpc.RpcError:
                    await trio.sleep(0.1)
        # m2 alone: refused at the handshake, before anything was sent (so a write may go elsewhere)
        async with EtcdClient([bad.endpoint], call_timeout_s=30.0, **cluster.client_options()) as alone:
            with pytest.raises(StorageUnavailable, match="CERTIFICATE_VERIFY_FAILED") as info:
                await alone.put(b"/x", b"never")
            cause: Any = info.value.__cause__
            assert _may_retry(cause, write=True)
        # m2 listed first: the first call, a write, goes on to the others; m2 never answers
        endpoints = [bad.endpoint] + [m.endpoint for m in cluster.members[:2]]
        async with EtcdClient(endpoints, call_timeout_s=5.0, **cluster.client_options()) as client:
            await client.put(b"/x", b"1")
            good = {ids["m0"], ids["m1"]}
            assert await _reach_all(client, good) == good
            for i in range(20):  # and no call fails for it
                await client.put(b"/x", str(i).encode())
                assert (await client.status()).header.member_id in good
            assert (await client.range(b"/x")).kvs[0].value == b"19"
            assert client.statistics().failures == 0
            assert set(client.ready_endpoints()) == set(endpoints[1:])
