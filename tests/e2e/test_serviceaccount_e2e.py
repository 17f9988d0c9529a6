"""Service-account tokens on a real ``kapi serve`` (issue 12): ``kubectl create token`` and ``auth whoami``
with the token (kubectl 1.33 and 1.27, whose whoami asks authentication.k8s.io/v1beta1), a legacy
token Secret filled by the token controller, the issuer discovery documents, and the Python client
authenticating with a TokenRequest token."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any, Iterator

import jwt
import pytest
import yaml
from kubernetes import client, config

from .conftest import Kubectl, Server, _kubectl, start_server, stop_server

pytestmark = pytest.mark.e2e

ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def sa_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own, AlwaysAllow named: these tests are about who a token is, not what it may do."""
    srv = start_server(tmp_path_factory.mktemp("kapi-sa"), "--authorization-mode", "AlwaysAllow")
    yield srv
    stop_server(srv)


@pytest.fixture(params=["1.33", "1.27"])
def kubectl(request: pytest.FixtureRequest, sa_server: Server) -> Kubectl:
    return _kubectl(request.param, sa_server)


def token_kubeconfig(server: Server, token: str, path: Path) -> Path:
    """A kubeconfig with nothing but the CA and ``token``: no client certificate that would win over it."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "kapi", "cluster": {"server": server.url, "certificate-authority": str(server.ca_file)}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "kapi", "user": "sa", "namespace": "default"}}]}))
    return path


def whoami(kubectl: Kubectl, kubeconfig: Path) -> dict[str, Any]:
    import subprocess

    proc = subprocess.run([kubectl.binary, "--kubeconfig", str(kubeconfig), "auth", "whoami", "-o", "json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def until(check: Any, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_kubectl_create_token_and_whoami_with_it(kubectl: Kubectl, tmp_path: Path) -> None:
    name = f"robot-{kubectl.version.replace('.', '')}"
    kubectl.run("create", "serviceaccount", name)
    uid = kubectl.run("get", "serviceaccount", name, "-o", "jsonpath={.metadata.uid}").stdout
    token = kubectl.run("create", "token", name, "--duration", "15m", "--audience", ISSUER).stdout.strip()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["sub"] == f"system:serviceaccount:default:{name}" and claims["exp"] - claims["iat"] == 900
    review = whoami(kubectl, token_kubeconfig(kubectl.server, token, tmp_path / "sa.kubeconfig"))
    info = review["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:default:{name}" and info["uid"] == uid
    assert "system:serviceaccounts:default" in info["groups"]
    if kubectl.version == "1.27":
        assert review["apiVersion"] == "authentication.k8s.io/v1beta1"
    # Deleting the account ends the token.
    kubectl.run("delete", "serviceaccount", name)
    import subprocess

    def refused() -> bool:
        proc = subprocess.run([kubectl.binary, "--kubeconfig", str(tmp_path / "sa.kubeconfig"), "auth", "whoami"],
                              capture_output=True, text=True, timeout=60)
        return proc.returncode != 0 and "Unauthorized" in proc.stderr

    assert until(refused)


def test_kubectl_create_token_bound_to_a_pod(kubectl: Kubectl, tmp_path: Path) -> None:
    name = f"bound-{kubectl.version.replace('.', '')}"
    kubectl.run("create", "serviceaccount", name)
    kubectl.run("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"serviceAccountName": name, "containers": [{"name": "c", "image": "nginx"}]}}))
    token = kubectl.run("create", "token", name, "--bound-object-kind", "Pod", "--bound-object-name",
                        name).stdout.strip()
    assert jwt.decode(token, options={"verify_signature": False})["kubernetes.io"]["pod"]["name"] == name
    info = whoami(kubectl, token_kubeconfig(kubectl.server, token, tmp_path / "pod.kubeconfig"))["status"]["userInfo"]
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == [name]
    wrong = kubectl.run("create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", name,
                        check=False)
    assert wrong.returncode != 0 and "different serviceaccount name" in wrong.stderr


def test_a_legacy_token_secret_is_filled_and_authenticates(sa_server: Server, tmp_path: Path) -> None:
    kubectl = _kubectl("1.33", sa_server)
    kubectl.run("create", "serviceaccount", "legacy")
    kubectl.run("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "legacy-token", "annotations": {"kubernetes.io/service-account.name": "legacy"}}}))

    def token() -> str:
        return kubectl.run("get", "secret", "legacy-token", "-o", "jsonpath={.data.token}").stdout

    encoded = until(token)
    assert encoded
    legacy = base64.b64decode(encoded).decode()
    assert jwt.decode(legacy, options={"verify_signature": False})["iss"] == "kubernetes/serviceaccount"
    info = whoami(kubectl, token_kubeconfig(sa_server, legacy, tmp_path / "legacy.kubeconfig"))["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:legacy"
    ca = kubectl.run("get", "secret", "legacy-token", "-o", "jsonpath={.data.ca\\.crt}").stdout
    assert base64.b64decode(ca) == sa_server.ca_file.read_bytes()


def test_issuer_discovery_over_https(sa_server: Server) -> None:
    status, headers, body = sa_server.request("GET", "/.well-known/openid-configuration")
    assert status == 200, body
    doc = json.loads(body)
    assert doc["issuer"] == ISSUER and doc["jwks_uri"] == f"{sa_server.url}/openid/v1/jwks"
    status, headers, body = sa_server.request("GET", "/openid/v1/jwks")
    assert status == 200 and {k.lower(): v for k, v in headers.items()}["content-type"] == "application/jwk-set+json"
    assert [k["alg"] for k in json.loads(body)["keys"]] == ["ES256"]


def test_the_python_client_authenticates_with_a_token_request_token(sa_server: Server) -> None:
    admin = config.new_client_from_config(config_file=str(sa_server.kubeconfig))
    core = client.CoreV1Api(admin)
    core.create_namespaced_service_account("default", client.V1ServiceAccount(
        metadata=client.V1ObjectMeta(name="pyclient")))
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[ISSUER],
                                                                                 expiration_seconds=600))
    answer = core.create_namespaced_service_account_token("pyclient", "default", request)
    assert answer.status.token and answer.status.expiration_timestamp
    cfg = client.Configuration(host=sa_server.url, api_key={"authorization": answer.status.token},
                               api_key_prefix={"authorization": "Bearer"})
    cfg.ssl_ca_cert = str(sa_server.ca_file)
    with client.ApiClient(cfg) as sa_client:
        review = client.AuthenticationV1Api(sa_client).create_self_subject_review(
            client.V1SelfSubjectReview(metadata=client.V1ObjectMeta()))
        assert review.status.user_info.username == "system:serviceaccount:default:pyclient"
        names = [c.metadata.name for c in client.CoreV1Api(sa_client).list_namespaced_config_map("default").items]
        assert "kube-root-ca.crt" in names


@pytest.fixture(scope="module")
def rbac_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kapi-sa-rbac"), "--authorization-mode", "Node,RBAC")
    yield srv
    stop_server(srv)


@pytest.mark.parametrize("version", ["1.33", "1.27"])
def test_under_rbac_a_token_may_ask_who_it_is_and_the_issuer_keys_and_nothing_more(
        rbac_server: Server, version: str, tmp_path: Path) -> None:
    """kube's bootstrap policy: system:basic-user lets every authenticated user review itself,
    system:service-account-issuer-discovery lets service accounts (not anonymous) read the issuer's keys."""
    kubectl = _kubectl(version, rbac_server)
    name = f"rbac-{version.replace('.', '')}"
    kubectl.run("create", "serviceaccount", name)
    token = kubectl.run("create", "token", name).stdout.strip()
    kubeconfig = token_kubeconfig(rbac_server, token, tmp_path / "sa.kubeconfig")
    info = whoami(kubectl, kubeconfig)["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:default:{name}"
    import subprocess

    proc = subprocess.run([kubectl.binary, "--kubeconfig", str(kubeconfig), "get", "secrets"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert (f'secrets is forbidden: User "system:serviceaccount:default:{name}" cannot list resource "secrets" in '
            'API group "" in the namespace "default"') in proc.stderr
    status, _, body = rbac_server.request("GET", "/openid/v1/jwks", token=token)
    assert status == 200 and json.loads(body)["keys"]
    status, _, _ = rbac_server.request("GET", "/openid/v1/jwks", token="")
    assert status == 403
