"""kube's --tls-cert-file and --tls-private-key-file: the server presents the given certificate instead
of the one it makes from its CA; one without the other stops start-up."""

from __future__ import annotations

import ssl
import urllib.error
from pathlib import Path
from urllib.parse import urlparse

import pytest

from kapi.server.pki import ensure_pki
from tests.e2e.conftest import start_server, stop_server

pytestmark = pytest.mark.e2e


def test_the_given_serving_certificate_is_presented(tmp_path: Path) -> None:
    other = ensure_pki(tmp_path / "other", "127.0.0.1")  # a certificate from another CA
    server = start_server(tmp_path / "d", "--tls-cert-file", str(other.serving_cert),
                          "--tls-private-key-file", str(other.serving_key))
    try:
        url = urlparse(server.url)
        presented = ssl.get_server_certificate((url.hostname or "", url.port or 0))
        assert ssl.PEM_cert_to_DER_cert(presented) == ssl.PEM_cert_to_DER_cert(other.serving_cert.read_text())
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            server.request("GET", "/readyz")  # the server's own CA does not verify another CA's certificate
    finally:
        assert stop_server(server) == 0


def test_a_certificate_without_its_key_stops_start_up(tmp_path: Path) -> None:
    other = ensure_pki(tmp_path / "other", "127.0.0.1")
    with pytest.raises(RuntimeError, match="--tls-cert-file and --tls-private-key-file go together"):
        start_server(tmp_path / "d", "--tls-cert-file", str(other.serving_cert))
