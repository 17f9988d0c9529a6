"""A conversion webhook named by a Service: ``registry_service_resolver`` reads the Service and its
Endpoints from the server's registry; the connection goes to the endpoint's address and the
certificate is verified against ``<name>.<namespace>.svc``."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kapi import errors
from kapi.apis.crdconversion import conversion_for, registry_service_resolver
from kapi.chain.webhookclient import WebhookClient
from kapi.encoding import codec
from kapi.registry.store import WriteOptions
from kapi.server.serve import Server
from tests.chain.test_webhooks import Pki, Webhook
from tests.crd.conversion_support import GROUP, crd, start
from tests.crd.test_conversion_webhook import converting, crontab


def pki_for(where: Path, dns: str) -> Pki:
    """A CA and a server certificate for ``dns`` (and 127.0.0.1), a client certificate for kube-apiserver."""
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("svc-ca")).issuer_name(name("svc-ca"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, sans: list[x509.GeneralName] | None) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject).public_key(key.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=1)))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return b.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM), pem_key(key)

    where.mkdir(parents=True, exist_ok=True)
    (where / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert, key = leaf(dns, [x509.DNSName(dns), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    (where / "server.crt").write_bytes(cert)
    (where / "server.key").write_bytes(key)
    client_cert, client_key = leaf("kube-apiserver", None)
    (where / "client.crt").write_bytes(client_cert)
    (where / "client.key").write_bytes(client_key)
    return Pki(where, where / "ca.crt", where / "server.crt", where / "server.key", client_cert, client_key)


def factory(url: str, ctx: ssl.SSLContext, sni: str, timeout_s: float) -> WebhookClient:
    return WebhookClient(url, ctx, {}, sni, timeout_s)


@pytest.fixture
async def server(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Server]:
    srv, client = await start(nursery, tmp_path / "a")
    async with client:
        yield srv
    nursery.cancel_scope.cancel()


async def test_a_service_reference_goes_to_its_endpoints(server: Server, tmp_path: Path) -> None:
    pki = pki_for(tmp_path / "pki", "hook.hooks.svc")
    hook = Webhook(pki, answer=converting())
    hook.start()
    try:
        port = hook.server.server_address[1]  # type: ignore[union-attr]
        reg = server.registry
        table = reg.table
        services, endpoints, namespaces = (table.get("", "v1", r) for r in ("services", "endpoints", "namespaces"))
        assert services and endpoints and namespaces
        await reg.create(namespaces, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hooks"}},
                         WriteOptions())
        await reg.create(services, "hooks", {"apiVersion": "v1", "kind": "Service",
                                             "metadata": {"name": "hook", "namespace": "hooks"},
                                             "spec": {"ports": [{"name": "https", "port": 8443, "targetPort": 9443}]}},
                         WriteOptions())
        resolve = registry_service_resolver(reg)
        with pytest.raises(errors.ServiceUnavailable, match="endpoints for service/hook"):
            await resolve("hooks", "hook", 8443)
        with pytest.raises(errors.ServiceUnavailable, match='service "nothere" not found'):
            await resolve("hooks", "nothere", 8443)
        with pytest.raises(errors.ServiceUnavailable, match="no service port 1 found"):
            await resolve("hooks", "hook", 1)
        # The hook listens on loopback, which the API refuses in an Endpoints (kube's validateEndpointAddress,
        # issue 30): stored as it is, around the API's validation.
        await reg.storage.create(reg.key(endpoints, "hooks", "hook"), codec.encode_value({
            "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hook", "namespace": "hooks"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port}]}]}))
        assert await resolve("hooks", "hook", 8443) == ("127.0.0.1", port)

        spec = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "caBundle": base64.b64encode(pki.ca.read_bytes()).decode(),
            "service": {"namespace": "hooks", "name": "hook", "path": "/convert", "port": 8443}}}}
        conv = conversion_for(crd([], spec), client_factory=factory, resolve_service=resolve,
                              client_cert=(str(pki.dir / "client.crt"), str(pki.dir / "client.key")))
        out = await conv.convert([crontab()], f"{GROUP}/v2")
        await conv.aclose()
        assert out[0]["apiVersion"] == f"{GROUP}/v2" and out[0]["spec"] == {"schedule": "* * * * *"}
        assert hook.seen[0].path == "/convert"
    finally:
        hook.stop()
