"""Issue 12, end to end over a real ``kapi serve``: a JWT issuer on 127.0.0.1 (the Python client and kubectl
with its token), the authenticating proxy's client certificate through the TLS layer, kubectl --as."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
import yaml

from tests.chain.authn_helpers import JWTIssuer, issue, make_ca
from tests.e2e.conftest import Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e

SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
# kubectl get --raw: no discovery first (a refused discovery reads "unknown" in client-go, kube's answer alike)
PODS = "/api/v1/namespaces/default/pods"
SSR_BODY = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def _json(server: Server, method: str, path: str, body: Any = None, token: str | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    status, _, text = server.request(method, path, data, {"Content-Type": "application/json", **(headers or {})},
                                     token=token)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


@pytest.fixture
def jwt_server(tmp_path: Path) -> Iterator[tuple[Server, JWTIssuer]]:
    with JWTIssuer(tmp_path) as issuer:
        config = tmp_path / "authn.yaml"
        config.write_text(yaml.safe_dump(issuer.config()))
        srv = start_server(tmp_path / "d", "--authentication-config", str(config), "--authorization-mode", "RBAC",
                           "--anonymous-auth", "false")
        try:
            yield srv, issuer
        finally:
            stop_server(srv)


def test_jwt_issuer_token_with_the_python_client(jwt_server: tuple[Server, JWTIssuer]) -> None:
    """The issuer's token is oidc:alice (its groups prefixed); RBAC decides what she may do."""
    from kubernetes import client

    srv, issuer = jwt_server
    token = issuer.token(sub="alice", groups=["devs"])
    cfg = client.Configuration(host=srv.url)
    cfg.ssl_ca_cert = str(srv.ca_file)
    cfg.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(cfg) as api:
        review = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
        info = review.status.user_info
        assert info.username == "oidc:alice"
        assert info.groups == ["oidc:devs", "system:authenticated"]
        core = client.CoreV1Api(api)
        with pytest.raises(client.ApiException) as refused:
            core.list_namespaced_config_map("default")
        assert refused.value.status == 403
        assert 'User \\"oidc:alice\\" cannot list resource \\"configmaps\\"' in refused.value.body
        status, _ = _json(srv, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "devs-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "oidc:devs"}]})
        assert status == 201
        _wait_allowed(lambda: core.list_namespaced_config_map("default"))
    assert _json(srv, "POST", SSR, SSR_BODY, token=issuer.token(aud="someone-else"))[0] == 401
    assert _json(srv, "POST", SSR, SSR_BODY, token=issuer.token(lifetime_s=-60))[0] == 401


def _wait_allowed(call: Any) -> None:
    """RBAC reads its informers: a new binding is seen within moments."""
    from kubernetes import client

    deadline = time.monotonic() + 10
    while True:
        try:
            call()
            return
        except client.ApiException as exc:
            if exc.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_jwt_issuer_token_with_kubectl(jwt_server: tuple[Server, JWTIssuer]) -> None:
    srv, issuer = jwt_server
    binary = kubectl_binary("1.33")
    cfg = yaml.safe_load(srv.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"token": issuer.token(sub="carol", groups="ops")}
    kubeconfig = srv.data_dir / "carol.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(cfg))
    out = subprocess.run([binary, "--kubeconfig", str(kubeconfig), "auth", "whoami", "-o", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)["status"]["userInfo"]
    assert info["username"] == "oidc:carol" and info["groups"] == ["oidc:ops", "system:authenticated"]


def test_client_ca_file_certificates_authenticate_beside_kapis_own(tmp_path: Path) -> None:
    """--client-ca-file (kube's flag): a certificate its CA signed is its CN and O; kapi's admin certificate
    still works; another CA's is refused; a file without certificates stops start-up saying so."""
    ours, stranger = make_ca("company-ca"), make_ca("stranger-ca")
    ca_file = tmp_path / "company-ca.crt"
    ca_file.write_bytes(ours.pem)
    dave = issue(ours, "dave", ("devs",)).write(tmp_path, "dave")
    eve = issue(stranger, "eve").write(tmp_path, "eve")
    srv = start_server(tmp_path / "d", "--client-ca-file", str(ca_file))
    try:
        def ssr(cert: tuple[Path, Path]) -> httpx.Response:
            ctx = ssl.create_default_context(cafile=str(srv.ca_file))
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))
            with httpx.Client(verify=ctx) as c:
                return c.post(srv.url + SSR, json=SSR_BODY)

        info = ssr(dave).json()["status"]["userInfo"]
        assert (info["username"], info["groups"]) == ("dave", ["devs", "system:authenticated"])
        pki = srv.data_dir / "pki"
        assert ssr((pki / "admin.crt", pki / "admin.key")).json()["status"]["userInfo"]["username"] == "kapi-admin"
        with pytest.raises(httpx.HTTPError):  # the TLS layer does not accept the stranger's CA
            ssr(eve)
    finally:
        stop_server(srv)
    empty = tmp_path / "empty.crt"
    empty.write_text("not a certificate\n")
    out = subprocess.run([sys.executable, "-m", "kapi", "serve", "--data-dir", str(tmp_path / "e"), "--secure-port",
                          "0", "--client-ca-file", str(empty)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "empty.crt" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_authenticating_proxy_over_tls(tmp_path: Path) -> None:
    """The TLS layer accepts the proxy CA's certificates; the headers then name the user. kapi's admin
    certificate is still x509's user; a proxy certificate without headers, or with another CN, is 401."""
    proxy_ca = make_ca("front-proxy-ca")
    ca_file = tmp_path / "proxy-ca.crt"
    ca_file.write_bytes(proxy_ca.pem)
    proxy_crt, proxy_key = issue(proxy_ca, "front-proxy-client").write(tmp_path, "proxy")
    other_crt, other_key = issue(proxy_ca, "intruder").write(tmp_path, "intruder")
    srv = start_server(tmp_path / "d", "--requestheader-client-ca-file", str(ca_file),
                       "--requestheader-username-headers", "X-Remote-User",
                       "--requestheader-group-headers", "X-Remote-Group",
                       "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
                       "--requestheader-allowed-names", "front-proxy-client",
                       "--authorization-mode", "AlwaysAllow", "--anonymous-auth", "false")
    try:
        def ssr(cert: tuple[str, str], headers: dict[str, str] | None = None) -> httpx.Response:
            ctx = ssl.create_default_context(cafile=str(srv.ca_file))
            ctx.load_cert_chain(*cert)
            with httpx.Client(verify=ctx) as c:
                return c.post(srv.url + SSR, json=SSR_BODY, headers=headers or {})

        proxied = [("X-Remote-User", "bob"), ("X-Remote-Group", "g1"), ("X-Remote-Group", "g2"),
                   ("X-Remote-Extra-Scopes", "view")]
        ctx = ssl.create_default_context(cafile=str(srv.ca_file))
        ctx.load_cert_chain(str(proxy_crt), str(proxy_key))
        with httpx.Client(verify=ctx) as c:
            r = c.post(srv.url + SSR, json=SSR_BODY, headers=httpx.Headers(proxied))
        assert r.status_code == 201, r.text
        info = r.json()["status"]["userInfo"]
        assert (info["username"], info["groups"]) == ("bob", ["g1", "g2", "system:authenticated"])
        assert info["extra"] == {"scopes": ["view"]}
        assert ssr((str(proxy_crt), str(proxy_key))).status_code == 401  # no username header
        assert ssr((str(other_crt), str(other_key)), {"X-Remote-User": "bob"}).status_code == 401
        pki = srv.data_dir / "pki"
        admin = ssr((str(pki / "admin.crt"), str(pki / "admin.key")), {"X-Remote-User": "bob"})
        assert admin.status_code == 201 and admin.json()["status"]["userInfo"]["username"] == "kapi-admin"
    finally:
        stop_server(srv)


def test_kubectl_as_against_rbac(tmp_path: Path) -> None:
    """kubectl --as: a user without the impersonate verb is refused with kube's message; granted
    impersonate on one user, she acts as that user (and RBAC then judges him)."""
    binary = kubectl_binary("1.33")
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('alice-token,alice,1,"dev"\n')
    srv = start_server(tmp_path / "d", "--token-auth-file", str(tokens), "--authorization-mode", "RBAC")
    try:
        cfg = yaml.safe_load(srv.kubeconfig.read_text())
        cfg["users"][0]["user"] = {"token": "alice-token"}
        alice = srv.data_dir / "alice.kubeconfig"
        alice.write_text(yaml.safe_dump(cfg))

        def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([binary, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                                  timeout=60)

        out = kubectl(alice, "get", "--raw", PODS, "--as", "bob")
        assert out.returncode != 0
        assert ('users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at '
                'the cluster scope') in out.stderr
        out = kubectl(srv.kubeconfig, "auth", "whoami", "--as", "bob", "--as-group", "g", "-o", "json")
        assert out.returncode == 0, out.stderr
        info = json.loads(out.stdout)["status"]["userInfo"]
        assert info["username"] == "bob" and info["groups"] == ["g", "system:authenticated"]
        for manifest in ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                          "metadata": {"name": "impersonate-bob"},
                          "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
                                     "resourceNames": ["bob"]}]},
                         {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                          "metadata": {"name": "alice-impersonates-bob"},
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                      "name": "impersonate-bob"},
                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}):
            done = subprocess.run([binary, "--kubeconfig", str(srv.kubeconfig), "create", "-f", "-"],
                                  input=json.dumps(manifest), capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 10
        while True:
            out = kubectl(alice, "get", "--raw", PODS, "--as", "bob")
            if "cannot impersonate" not in out.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # Now alice is bob, and bob may not list pods: RBAC's refusal names bob, not alice.
        assert out.returncode != 0
        assert 'User "bob" cannot list resource "pods"' in out.stderr, out.stderr
        out = kubectl(alice, "get", "--raw", PODS, "--as", "carol")
        assert 'users "carol" is forbidden: User "alice" cannot impersonate' in out.stderr
    finally:
        stop_server(srv)
