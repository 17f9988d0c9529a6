"""Replicas share the CA, admin credentials and service-account key through the datastore under a
join token (k3s's bootstrap data): the first stores its own, later ones (and the loser of a race at
first start) take the stored ones, a wrong token is refused; each replica keeps its own serving
certificate, signed by the shared CA and naming its addresses."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import trio
from cryptography import x509

from kapi.server.pki import SHARED_FILES, ensure_pki, ensure_service_account_key
from kapi.server.replica.shared import bootstrap_key, decrypt, encrypt, join
from kapi.server.supervise import FatalError
from kapi.storage.memory import MemoryStorage


@pytest.fixture
async def storage(nursery: trio.Nursery) -> MemoryStorage:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    return storage


def _maker(data_dir: Path):  # type: ignore[no-untyped-def]
    def make_local() -> None:
        ensure_pki(data_dir, "127.0.0.1")
        ensure_service_account_key(data_dir)
    return make_local


async def _join(storage: MemoryStorage, data_dir: Path, token: str) -> bool:
    return await join(storage, "/registry", token, data_dir / "pki", _maker(data_dir))


def _files(data_dir: Path) -> dict[str, bytes]:
    return {name: (data_dir / "pki" / name).read_bytes() for name in SHARED_FILES}


def test_a_record_opens_with_its_token_only() -> None:
    key = bootstrap_key("/registry", "s3cret")
    record = encrypt("s3cret", key, {"ca.crt": b"CA"})
    assert b"s3cret" not in record and b"CA" not in record
    assert "s3cret" not in key
    assert decrypt("s3cret", key, record) == {"ca.crt": b"CA"}
    with pytest.raises(FatalError, match="token does not match"):
        decrypt("other", key, record)
    with pytest.raises(FatalError, match="token does not match"):  # a record moved to another key
        decrypt("s3cret", bootstrap_key("/registry", "x"), record)


async def test_the_second_replica_takes_the_first_ones_files(storage: MemoryStorage, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert await _join(storage, a, "T") is False
    assert await _join(storage, b, "T") is True
    assert _files(a) == _files(b)
    # each keeps its own serving key, signed by the shared CA
    pki_a, pki_b = ensure_pki(a, "127.0.0.1"), ensure_pki(b, "127.0.0.1")
    assert pki_a.serving_key.read_bytes() != pki_b.serving_key.read_bytes()
    ca = x509.load_pem_x509_certificate(pki_a.ca_cert.read_bytes())
    x509.load_pem_x509_certificate(pki_b.serving_cert.read_bytes()).verify_directly_issued_by(ca)
    assert pki_a.admin_token == pki_b.admin_token


async def test_a_replica_that_ran_alone_takes_the_clusters_ca_and_a_new_serving_certificate(
        storage: MemoryStorage, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    await _join(storage, a, "T")
    old = ensure_pki(b, "127.0.0.1").serving_cert.read_bytes()  # b's own CA, from a run alone
    assert await _join(storage, b, "T") is True
    assert _files(b) == _files(a)
    pki = ensure_pki(b, "127.0.0.1")
    assert pki.serving_cert.read_bytes() != old
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    x509.load_pem_x509_certificate(pki.serving_cert.read_bytes()).verify_directly_issued_by(ca)


async def test_a_wrong_token_is_refused(storage: MemoryStorage, tmp_path: Path) -> None:
    await _join(storage, tmp_path / "a", "T")
    with pytest.raises(FatalError, match="token does not match"):
        await _join(storage, tmp_path / "b", "wrong")
    assert not (tmp_path / "b" / "pki" / "ca.key").exists()


class _RacingStorage:
    """Holds each create until two are waiting, so both replicas found no record first."""

    def __init__(self, storage: MemoryStorage) -> None:
        self._storage = storage
        self._waiting = 0
        self._both = trio.Event()
        self.get, self.list = storage.get, storage.list

    async def create(self, key: str, value: bytes) -> int:
        self._waiting += 1
        if self._waiting == 2:
            self._both.set()
        await self._both.wait()
        return await self._storage.create(key, value)


async def test_two_replicas_racing_at_first_start_end_with_one_ca(storage: MemoryStorage, tmp_path: Path) -> None:
    racing = _RacingStorage(storage)
    results: list[bool] = []

    async def start(name: str) -> None:
        results.append(await join(racing, "/registry", "T", tmp_path / name / "pki",  # type: ignore[arg-type]
                                  _maker(tmp_path / name)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(start, "a")
        nursery.start_soon(start, "b")
    assert sorted(results) == [False, True]  # one stored its own, the other took them
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    [record] = (await storage.list("/registry/kapi-bootstrap/")).items
    assert decrypt("T", record.key, record.value) == _files(tmp_path / "a")


def test_the_serving_certificate_names_the_advertised_address_and_the_tls_sans(tmp_path: Path) -> None:
    ensure_pki(tmp_path, "0.0.0.0")
    pki = ensure_pki(tmp_path, "0.0.0.0", ("192.0.2.7", "LB.example.com", "2001:db8::1"))
    san = x509.load_pem_x509_certificate(pki.serving_cert.read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    ips = set(san.get_values_for_type(x509.IPAddress))
    assert {ipaddress.ip_address("192.0.2.7"), ipaddress.ip_address("2001:db8::1")} <= ips
    assert ipaddress.ip_address("0.0.0.0") not in ips
    assert "lb.example.com" in san.get_values_for_type(x509.DNSName)
    # unchanged names keep the certificate
    assert ensure_pki(tmp_path, "0.0.0.0", ("192.0.2.7", "lb.example.com")).serving_cert.read_bytes() == \
        pki.serving_cert.read_bytes()
