"""Kubeconfig and in-cluster loading: clientcmd's merge rules, TLS material, credentials."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import yaml

from kapi.client.config import (
    TOKEN_FILE_REFRESH_S,
    ClientConfig,
    ConfigError,
    kubeconfig_paths,
    load_config,
    load_incluster_config,
    load_kubeconfig,
)
from kapi.server.pki import Pki, ensure_pki

from ..e2e.conftest import start_server, stop_server


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA with a serving certificate (localhost) and a client certificate (kapi-admin)."""
    return ensure_pki(tmp_path_factory.mktemp("pki"), "127.0.0.1")


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """An unrelated CA, to show that verification really uses the configured one."""
    return ensure_pki(tmp_path_factory.mktemp("other-pki"), "127.0.0.1")


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(path: Path, *, clusters: dict[str, Any] | None = None, users: dict[str, Any] | None = None,
               contexts: dict[str, Any] | None = None, current: str | None = None) -> Path:
    """Write a kubeconfig from name -> body mappings."""
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    for section, kind, items in (("clusters", "cluster", clusters), ("users", "user", users),
                                 ("contexts", "context", contexts)):
        if items is not None:
            doc[section] = [{"name": name, kind: body} for name, body in items.items()]
    if current is not None:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def simple(path: Path, cluster: dict[str, Any], user: dict[str, Any] | None = None,
           namespace: str | None = None) -> Path:
    """One cluster, one user, one current context named "ctx"."""
    ctx: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    return kubeconfig(path, clusters={"c": cluster}, users={"u": user or {}}, contexts={"ctx": ctx},
                      current="ctx")


def handshake(client_ctx: ssl.SSLContext, pki: Pki, server_name: str = "localhost") -> tuple[Any, str | None]:
    """A TLS handshake in memory against pki's serving certificate.

    Returns the client certificate the server saw (or None) and the negotiated ALPN protocol.
    """
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(pki.serving_cert, pki.serving_key)
    server_ctx.load_verify_locations(pki.ca_cert)
    server_ctx.verify_mode = ssl.CERT_OPTIONAL
    server_ctx.set_alpn_protocols(["h2", "http/1.1"])
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=server_name)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        done = 0
        for side in (client, server):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if done == 2:
            break
    else:
        raise AssertionError("handshake did not finish")
    return server.getpeercert() or None, client.selected_alpn_protocol()


def common_name(cert: Any) -> str:
    return str(dict(pair for rdn in cert["subject"] for pair in rdn)["commonName"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- single file ----------------------------------------------------------------------------------


def test_single_file(tmp_path: Path, pki: Pki) -> None:
    path = simple(tmp_path / "config", {"server": "https://127.0.0.1:6443/",
                                        "certificate-authority-data": b64(pki.ca_cert)},
                  {"token": "abc"}, namespace="team")
    cfg = load_kubeconfig(path)
    assert (cfg.server, cfg.namespace, cfg.context) == ("https://127.0.0.1:6443", "team", "ctx")
    assert cfg.bearer_token() == "abc"
    assert cfg.auth_headers() == {"Authorization": "Bearer abc"}
    assert cfg.ssl_context is not None
    assert cfg.ssl_context.verify_mode == ssl.CERT_REQUIRED and cfg.ssl_context.check_hostname
    peer, alpn = handshake(cfg.ssl_context, pki)
    assert peer is None and alpn == "h2"


def test_namespace_defaults_and_scheme(tmp_path: Path) -> None:
    cfg = load_kubeconfig(simple(tmp_path / "config", {"server": "http://127.0.0.1:8080"}))
    assert cfg.namespace == "default"
    assert cfg.ssl_context is None
    assert cfg.auth_headers() == {}
    cfg = load_kubeconfig(simple(tmp_path / "config2", {"server": "127.0.0.1:6443"}))
    assert cfg.server == "https://127.0.0.1:6443" and cfg.ssl_context is not None


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read kubeconfig .*nope"):
        load_kubeconfig(tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.write_text("clusters: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_kubeconfig(bad)
    bad.write_text("clusters: {c: 1}")
    with pytest.raises(ConfigError, match="clusters must be a list"):
        load_kubeconfig(bad)
    with pytest.raises(ConfigError, match="no server is set"):
        load_kubeconfig(simple(tmp_path / "noserver", {"tls-server-name": "x"}))


# --- merging --------------------------------------------------------------------------------------


def test_merge_first_file_wins(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "a", clusters={"c": {"server": "https://first:1"}},
                       users={"u": {"token": "first-token"}},
                       contexts={"x": {"cluster": "c", "user": "u", "namespace": "first"}})
    second = kubeconfig(tmp_path / "b", clusters={"c": {"server": "https://second:2"},
                                                  "d": {"server": "https://only-second:3"}},
                        users={"u": {"token": "second-token"}},
                        contexts={"x": {"cluster": "c", "user": "u", "namespace": "second"},
                                  "y": {"cluster": "d", "user": "u"}},
                        current="x")
    third = kubeconfig(tmp_path / "c", contexts={"z": {"cluster": "c"}}, current="y")
    cfg = load_kubeconfig([first, second, third])
    # current-context: the first non-empty one (second's), and "x" itself comes whole from the first file.
    assert (cfg.context, cfg.server, cfg.namespace, cfg.token) == ("x", "https://first:1", "first", "first-token")
    other = load_kubeconfig([first, second, third], context="y")
    assert (other.server, other.token) == ("https://only-second:3", "first-token")
    assert load_kubeconfig([third, second, first]).context == "y"


def test_kubeconfig_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = kubeconfig(tmp_path / "a", current="ctx-a", clusters={"c": {"server": "https://a:1"}},
                   contexts={"ctx-a": {"cluster": "c"}})
    b = kubeconfig(tmp_path / "b", clusters={"c": {"server": "https://b:1"}})
    missing = tmp_path / "missing"
    listed = os.pathsep.join([str(missing), str(a), "", str(b), str(a)])
    assert kubeconfig_paths(env={"KUBECONFIG": listed}) == [a, b]
    with pytest.raises(ConfigError, match="none of the files in KUBECONFIG"):
        kubeconfig_paths(env={"KUBECONFIG": str(missing)})
    assert kubeconfig_paths(env={"HOME": str(tmp_path)}) == [tmp_path / ".kube" / "config"]
    assert kubeconfig_paths("explicit", env={"KUBECONFIG": listed}) == [Path("explicit")]
    monkeypatch.setenv("KUBECONFIG", listed)
    assert load_kubeconfig().server == "https://a:1"


def test_relative_paths_resolve_per_file(tmp_path: Path, pki: Pki) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    (one / "certs").mkdir(parents=True)
    (one / "certs" / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    (two / "keys").mkdir(parents=True)
    (two / "keys" / "admin.crt").write_bytes(pki.admin_cert.read_bytes())
    (two / "keys" / "admin.key").write_bytes(pki.admin_key.read_bytes())
    (two / "token").write_text("from-two\n")
    kubeconfig(one / "config", clusters={"c": {"server": "https://localhost:1",
                                               "certificate-authority": "certs/ca.crt"}},
               contexts={"ctx": {"cluster": "c", "user": "u"}}, current="ctx")
    kubeconfig(two / "config", users={"u": {"client-certificate": "keys/admin.crt",
                                            "client-key": "keys/admin.key", "tokenFile": "token"}})
    cfg = load_kubeconfig([one / "config", two / "config"])
    assert cfg.token_file == str(two / "token")
    assert cfg.bearer_token() == "from-two"
    assert cfg.ssl_context is not None
    peer, _ = handshake(cfg.ssl_context, pki)
    assert common_name(peer) == "kapi-admin"


# --- contexts -------------------------------------------------------------------------------------


def test_context_override_and_lookup_errors(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config",
                      clusters={"c": {"server": "https://c:1"}}, users={"u": {"token": "t"}},
                      contexts={"main": {"cluster": "c", "user": "u"},
                                "anon": {"cluster": "c", "namespace": "anon-ns"},
                                "no-cluster": {"cluster": "gone", "user": "u"},
                                "no-user": {"cluster": "c", "user": "gone"},
                                "empty": {"user": "u"}},
                      current="main")
    assert load_kubeconfig(path).token == "t"
    anon = load_kubeconfig(path, context="anon")
    assert (anon.context, anon.namespace, anon.auth_headers()) == ("anon", "anon-ns", {})
    with pytest.raises(ConfigError, match='context "missing" not found in .*config'):
        load_kubeconfig(path, context="missing")
    with pytest.raises(ConfigError, match='cluster "gone" of context "no-cluster" not found'):
        load_kubeconfig(path, context="no-cluster")
    with pytest.raises(ConfigError, match='user "gone" of context "no-user" not found'):
        load_kubeconfig(path, context="no-user")
    with pytest.raises(ConfigError, match='context "empty" in .*: no cluster is set'):
        load_kubeconfig(path, context="empty")
    nocurrent = kubeconfig(tmp_path / "nocurrent", clusters={"c": {"server": "https://c:1"}})
    with pytest.raises(ConfigError, match="no current-context"):
        load_kubeconfig(nocurrent)


# --- cluster TLS ----------------------------------------------------------------------------------


def test_ca_from_data_and_from_file(tmp_path: Path, pki: Pki, other_pki: Pki) -> None:
    for cluster in ({"certificate-authority-data": b64(pki.ca_cert)},
                    {"certificate-authority": str(pki.ca_cert)}):
        cfg = load_kubeconfig(simple(tmp_path / "config", {"server": "https://localhost:1", **cluster}))
        assert cfg.ssl_context is not None
        assert [common_name(c) for c in cfg.ssl_context.get_ca_certs()] == ["kapi-ca"]
        handshake(cfg.ssl_context, pki)
        with pytest.raises(ssl.SSLCertVerificationError):
            handshake(cfg.ssl_context, other_pki)
    both = {"server": "https://x:1", "certificate-authority-data": b64(pki.ca_cert),
            "certificate-authority": str(pki.ca_cert)}
    with pytest.raises(ConfigError, match="both set"):
        load_kubeconfig(simple(tmp_path / "both", both))


@pytest.mark.parametrize("cluster,message", [
    ({"certificate-authority-data": "not base64!"}, 'cluster "c" in .*certificate-authority-data is not valid base64'),
    ({"certificate-authority-data": base64.b64encode(b"no pem here").decode()}, "holds no PEM certificate"),
    ({"certificate-authority": "missing.crt"}, "cannot load certificate-authority .*missing.crt"),
    ({"insecure-skip-tls-verify": "yes"}, "insecure-skip-tls-verify must be true or false"),
])
def test_bad_ca(tmp_path: Path, cluster: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1", **cluster}))


def test_insecure_skip_tls_verify(tmp_path: Path, pki: Pki, other_pki: Pki) -> None:
    cfg = load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1", "insecure-skip-tls-verify": True,
                                                       "tls-server-name": "kubernetes"}))
    assert cfg.ssl_context is not None and cfg.tls_server_name == "kubernetes"
    assert cfg.ssl_context.verify_mode == ssl.CERT_NONE and not cfg.ssl_context.check_hostname
    handshake(cfg.ssl_context, other_pki, server_name="not-in-the-cert")
    with pytest.raises(ConfigError, match="root certificates file with the insecure flag is not allowed"):
        load_kubeconfig(simple(tmp_path / "both", {"server": "https://x:1", "insecure-skip-tls-verify": True,
                                                   "certificate-authority-data": b64(pki.ca_cert)}))


# --- client certificates --------------------------------------------------------------------------


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point tempfile at an empty directory, to see what the loader leaves behind."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


@pytest.mark.parametrize("source", ["data", "files", "mixed"])
def test_client_certificate(tmp_path: Path, pki: Pki, private_tmp: Path, source: str) -> None:
    user = {
        "data": {"client-certificate-data": b64(pki.admin_cert), "client-key-data": b64(pki.admin_key)},
        "files": {"client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key)},
        "mixed": {"client-certificate": str(pki.admin_cert), "client-key-data": b64(pki.admin_key)},
    }[source]
    cfg = load_kubeconfig(simple(tmp_path / "config", {"server": "https://localhost:1",
                                                       "certificate-authority": str(pki.ca_cert)}, user))
    assert cfg.ssl_context is not None
    peer, _ = handshake(cfg.ssl_context, pki)
    assert common_name(peer) == "kapi-admin"
    assert list(private_tmp.iterdir()) == []


def test_client_certificate_errors(tmp_path: Path, pki: Pki, other_pki: Pki, private_tmp: Path) -> None:
    cluster = {"server": "https://localhost:1"}
    with pytest.raises(ConfigError, match="cannot load the client certificate and key"):
        load_kubeconfig(simple(tmp_path / "mismatch", cluster, {"client-certificate-data": b64(pki.admin_cert),
                                                                 "client-key-data": b64(other_pki.admin_key)}))
    with pytest.raises(ConfigError, match="needs both a certificate and a key"):
        load_kubeconfig(simple(tmp_path / "nokey", cluster, {"client-certificate": str(pki.admin_cert)}))
    with pytest.raises(ConfigError, match="client-key and client-key-data are both set"):
        load_kubeconfig(simple(tmp_path / "twokeys", cluster, {
            "client-certificate": str(pki.admin_cert), "client-key": str(pki.admin_key),
            "client-key-data": b64(pki.admin_key)}))
    assert list(private_tmp.iterdir()) == []


def test_encrypted_client_key_is_refused(tmp_path: Path, pki: Pki) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.admin_key.read_bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"secret"))
    user = {"client-certificate": str(pki.admin_cert), "client-key-data": base64.b64encode(encrypted).decode()}
    with pytest.raises(ConfigError, match='user "u" in .*: the client key is encrypted'):
        load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1"}, user))


# --- credentials ----------------------------------------------------------------------------------


def test_token_wins_over_token_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file")
    cfg = load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1"},
                                 {"token": "literal", "tokenFile": "token"}))
    assert cfg.bearer_token() == "literal"
    assert cfg.token_file == str(tmp_path / "token")


def test_token_file_is_reread_after_the_refresh_interval(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    clock = FakeClock()
    cfg = ClientConfig(server="https://x:1", namespace="default", context="", token_file=str(token), clock=clock)
    assert cfg.auth_headers() == {"Authorization": "Bearer one"}
    token.write_text("two\n")
    clock.now += TOKEN_FILE_REFRESH_S - 1
    assert cfg.bearer_token() == "one"
    clock.now += 1
    assert cfg.bearer_token() == "two"
    token.unlink()  # a rotation in progress: keep the last good token
    clock.now += TOKEN_FILE_REFRESH_S
    assert cfg.bearer_token() == "two"


@pytest.mark.parametrize("content,message", [(None, "cannot read token file"), ("  \n", "is empty")])
def test_unusable_token_file(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "token").write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1"}, {"tokenFile": "token"}))


def test_basic_auth(tmp_path: Path) -> None:
    cfg = load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1"},
                                 {"username": "admin", "password": "s3cret:x"}))
    assert cfg.bearer_token() is None
    assert cfg.auth_headers() == {"Authorization": "Basic " + base64.b64encode(b"admin:s3cret:x").decode()}
    with pytest.raises(ConfigError, match="more than one authentication method"):
        load_kubeconfig(simple(tmp_path / "both", {"server": "https://x:1"},
                               {"username": "admin", "password": "p", "token": "t"}))


@pytest.mark.parametrize("user,message", [
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws"}}, "exec credential plugin"),
    ({"auth-provider": {"name": "oidc"}}, "auth-provider plugin"),
    ({"token": "t", "as": "someone"}, r"impersonation \(as\)"),
])
def test_unsupported_user_fields(tmp_path: Path, user: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=f'user "u" in .*config: uses .*{message}'):
        load_kubeconfig(simple(tmp_path / "config", {"server": "https://x:1"}, user))


# --- in-cluster -----------------------------------------------------------------------------------


@pytest.fixture
def sa_root(tmp_path: Path, pki: Pki) -> Path:
    """A fake service account mount."""
    root = tmp_path / "serviceaccount"
    root.mkdir()
    (root / "token").write_text("sa-token\n")
    (root / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    (root / "namespace").write_text("apps\n")
    return root


def test_incluster(sa_root: Path, pki: Pki) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg = load_incluster_config(str(sa_root), env)
    assert (cfg.server, cfg.namespace, cfg.context) == ("https://10.96.0.1:443", "apps", "")
    assert cfg.token is None and cfg.token_file == str(sa_root / "token")
    assert cfg.auth_headers() == {"Authorization": "Bearer sa-token"}
    assert cfg.ssl_context is not None
    handshake(cfg.ssl_context, pki)
    v6 = load_incluster_config(str(sa_root), {**env, "KUBERNETES_SERVICE_HOST": "fd00::1", "POD_NAMESPACE": "pod"})
    assert (v6.server, v6.namespace) == ("https://[fd00::1]:443", "pod")
    (sa_root / "namespace").unlink()
    assert load_incluster_config(str(sa_root), env).namespace == "default"


def test_incluster_errors(sa_root: Path) -> None:
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"):
        load_incluster_config(str(sa_root), {"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    (sa_root / "token").unlink()
    with pytest.raises(ConfigError, match="cannot read token file"):
        load_incluster_config(str(sa_root), {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"})


# --- load_config ----------------------------------------------------------------------------------


def test_load_config_order(tmp_path: Path, sa_root: Path) -> None:
    incluster = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    home = tmp_path / "home"
    home.mkdir()
    explicit = simple(tmp_path / "explicit", {"server": "https://explicit:1"})
    listed = simple(tmp_path / "listed", {"server": "https://listed:1"})
    simple(home / ".kube" / "config", {"server": "https://home:1"})

    def load(**env: str) -> ClientConfig:
        return load_config(env={"HOME": str(home), **incluster, **env}, incluster_root=str(sa_root))

    assert load_config(explicit, env={"KUBECONFIG": str(listed)}).server == "https://explicit:1"
    assert load(KUBECONFIG=str(listed)).server == "https://listed:1"
    assert load().server == "https://home:1"
    (home / ".kube" / "config").unlink()
    assert load().server == "https://10.96.0.1:443"
    assert load(KUBECONFIG=str(tmp_path / "missing")).server == "https://10.96.0.1:443"
    with pytest.raises(ConfigError, match='context "x" was requested but no kubeconfig'):
        load_config(context="x", env={"HOME": str(home), **incluster}, incluster_root=str(sa_root))
    with pytest.raises(ConfigError, match="no kubeconfig file found .* and no in-cluster config"):
        load_config(env={"HOME": str(home)}, incluster_root=str(sa_root))


# --- against a real server ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The admin kubeconfig of a ``kapi serve`` started for this module, stopped afterwards."""
    server = start_server(tmp_path_factory.mktemp("kapi"))
    try:
        yield server.kubeconfig
    finally:
        stop_server(server)


@pytest.mark.e2e
async def test_version_from_a_real_server(served_kubeconfig: Path) -> None:
    cfg = load_kubeconfig(served_kubeconfig)
    assert cfg.ssl_context is not None
    async with httpx.AsyncClient(base_url=cfg.server, verify=cfg.ssl_context, http2=True,
                                 headers=cfg.auth_headers()) as client:
        with trio.fail_after(30):
            while (await client.get("/readyz")).status_code != 200:
                await trio.sleep(0.1)
        resp = await client.get("/version")
        assert resp.status_code == 200
        assert resp.http_version == "HTTP/2"
        assert resp.json()["gitVersion"].startswith("v1.")
        namespaces = await client.get(f"/api/v1/namespaces/{cfg.namespace}")
        assert namespaces.status_code == 200, namespaces.text
