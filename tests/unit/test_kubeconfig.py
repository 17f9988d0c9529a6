"""``kapi kubeconfig`` (issue 12): a client certificate minted from kapi's CA for a user other than admin."""

from __future__ import annotations

import base64
import datetime as dt
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kapi.__main__ import main
from kapi.chain.authn import user_from_certificate
from kapi.server.pki import ensure_pki, mint_client_certificate, user_kubeconfig, write_kubeconfig


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    ensure_pki(d, "127.0.0.1")
    return d


def _user_of(doc: dict) -> dict:
    return doc["users"][0]["user"]


def test_the_certificate_names_the_user_and_groups_as_kube_reads_them(data_dir: Path) -> None:
    cred = mint_client_certificate(data_dir, "bob", ("dev", "ops", "dev"))
    cert = x509.load_pem_x509_certificate(cred.cert_pem)
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["bob"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["dev", "ops"]
    # The x509 authenticator's reading of it: CN the user, each O a group.
    user = user_from_certificate(cert.public_bytes(serialization.Encoding.DER))
    assert user.name == "bob" and [g for g in user.groups if g != "system:authenticated"] == ["dev", "ops"]
    # A client certificate, not a CA, signed by kapi's CA.
    ca = x509.load_pem_x509_certificate((data_dir / "pki" / "ca.crt").read_bytes())
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH]
    key = serialization.load_pem_private_key(cred.key_pem, None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()  # type: ignore[union-attr]


def test_validity_is_asked_for_and_never_outlives_the_ca(data_dir: Path) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    short = mint_client_certificate(data_dir, "bob", validity_s=3600)
    assert now + dt.timedelta(minutes=59) < short.not_after <= now + dt.timedelta(minutes=61)
    cert = x509.load_pem_x509_certificate(short.cert_pem)
    assert cert.not_valid_after_utc == short.not_after.replace(microsecond=0)
    ca = x509.load_pem_x509_certificate((data_dir / "pki" / "ca.crt").read_bytes())
    forever = mint_client_certificate(data_dir, "bob", validity_s=100 * 365 * 86400.0)
    assert forever.not_after == ca.not_valid_after_utc


@pytest.mark.parametrize("user,groups", [("", ()), (" bob", ()), ("bob", ("",)), ("bob", ("dev", " ops"))])
def test_bad_names_are_refused(data_dir: Path, user: str, groups: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        mint_client_certificate(data_dir, user, groups)


def test_no_ca_yet_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as err:
        mint_client_certificate(tmp_path, "bob")
    assert "kapi serve" in str(err.value)


def test_the_kubeconfig_embeds_ca_certificate_and_key_and_no_token(data_dir: Path) -> None:
    cred = mint_client_certificate(data_dir, "bob", ("dev",))
    doc = yaml.safe_load(user_kubeconfig("https://127.0.0.1:7443", cred, "team"))
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:7443",
        "certificate-authority-data": base64.b64encode((data_dir / "pki" / "ca.crt").read_bytes()).decode()}
    assert _user_of(doc) == {"client-certificate-data": base64.b64encode(cred.cert_pem).decode(),
                             "client-key-data": base64.b64encode(cred.key_pem).decode()}
    ctx = doc["contexts"][0]
    assert doc["current-context"] == ctx["name"] == "bob@kapi"
    assert ctx["context"] == {"cluster": "kapi", "user": "bob", "namespace": "team"}


def test_cli_writes_a_private_file_with_the_running_servers_url(data_dir: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pki = ensure_pki(data_dir, "127.0.0.1")
    write_kubeconfig(data_dir / "admin.kubeconfig", "https://127.0.0.1:45678", pki)
    out = tmp_path / "bob.kubeconfig"
    assert main(["kubeconfig", "--user", "bob", "--group", "dev", "--group", "ops", "--data-dir", str(data_dir),
                 "--out", str(out), "--validity-period", "48h"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    doc = yaml.safe_load(out.read_text())
    assert doc["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:45678"
    cert = x509.load_pem_x509_certificate(base64.b64decode(_user_of(doc)["client-certificate-data"]))
    groups = user_from_certificate(cert.public_bytes(serialization.Encoding.DER)).groups
    assert [g for g in groups if g != "system:authenticated"] == ["dev", "ops"]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= dt.timedelta(hours=48, minutes=5)
    err = capsys.readouterr().err
    assert "bob" in err and str(out) in err


def test_cli_prints_to_stdout_without_out_and_honours_server(data_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kubeconfig", "--user", "carol", "--data-dir", str(data_dir),
                 "--server", "https://kapi.example:6443"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["clusters"][0]["cluster"]["server"] == "https://kapi.example:6443"
    assert doc["users"][0]["name"] == "carol" and "token" not in _user_of(doc)


def test_cli_without_a_server_url_uses_the_default_address(data_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kubeconfig", "--user", "carol", "--data-dir", str(data_dir)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"


def test_cli_errors_are_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kubeconfig", "--user", "bob", "--data-dir", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ca.crt" in err and "kapi serve" in err
    ensure_pki(tmp_path / "d", "127.0.0.1")
    assert main(["kubeconfig", "--user", "", "--data-dir", str(tmp_path / "d")]) == 1
    assert "invalid user name" in capsys.readouterr().err
    assert main(["kubeconfig", "--user", "bob", "--data-dir", str(tmp_path / "d"),
                 "--out", str(tmp_path / "missing" / "dir" / "x")]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_cli_warns_that_system_masters_bypasses_authorization(data_dir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kubeconfig", "--user", "root", "--group", "system:masters", "--data-dir", str(data_dir)]) == 0
    assert "system:masters" in capsys.readouterr().err


def test_user_flag_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["kubeconfig"])
    assert exit_.value.code == 2 and "--user" in capsys.readouterr().err
