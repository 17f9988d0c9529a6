"""TLS to etcd (kube's --etcd-cafile/--etcd-certfile/--etcd-keyfile): https:// endpoints, the CA and a
client certificate; wrong combinations refused at once, a wrong CA failing fast with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kapi.errors import StorageUnavailable
from kapi.storage.etcd3.client import EtcdClient, credentials, target
from kapi.storage.etcd3.store import EtcdStorage
from tests._needs import require_module
from tests.storage.etcd_support import EtcdCluster, etcd_cluster, make_tls

require_module("grpc")


# ---------------------------------------------------------------- no etcd needed


def test_https_endpoints_keep_the_target_and_several_check_the_first_host(tmp_path: Path) -> None:
    assert target(["https://127.0.0.1:2379"]) == ("127.0.0.1:2379", [])
    joined, options = target(["https://127.0.0.1:1", "https://127.0.0.2:2"])
    assert joined == "ipv4:127.0.0.1:1,127.0.0.2:2"
    assert ("grpc.ssl_target_name_override", "127.0.0.1") in options
    assert ("grpc.ssl_target_name_override", "127.0.0.1") not in target(["127.0.0.1:1", "127.0.0.2:2"])[1]


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
async def test_three_tls_members_on_one_round_robin_channel(tmp_path: Path, nursery: trio.Nursery) -> None:
    async with etcd_cluster(tmp_path, members=3, tls=make_tls(tmp_path)) as cluster:
        async with EtcdClient(cluster.endpoints, call_timeout_s=5.0, **cluster.client_options()) as client:
            members = set()
            for _ in range(9):
                members.add((await client.status()).header.member_id)
            assert len(members) == 3  # round_robin reaches every member through the name override
        # the store reads every member's version, each on a TLS channel of its own
        storage = EtcdStorage(cluster.endpoints, **cluster.client_options())
        await nursery.start(storage.run)
        assert storage._versions.keys() == set(cluster.endpoints)
