"""TokenRequest, TokenReview, legacy token Secrets and the issuer's discovery documents through the
ASGI app (issue 12), with the shared informers that bound-token validation reads."""

from __future__ import annotations

import base64
from typing import Any, AsyncIterator

import jwt
import pytest
import trio
from cryptography.hazmat.primitives.asymmetric import ec

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.serviceaccounttoken import TokensController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.security import build_service_account_tokens
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage

from .conftest import TOKEN, Api

ISSUER = "https://kubernetes.default.svc.cluster.local"
SA = "/api/v1/namespaces/default/serviceaccounts"
TR = "/apis/authentication.k8s.io/v1/tokenreviews"


async def make_api(nursery: trio.Nursery, **flags: Any) -> Api:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    config = Config(storage_backend="memory", authorization_mode=("AlwaysAllow",), **flags)
    tokens = build_service_account_tokens(config, informers, ec.generate_private_key(ec.SECP256R1()))
    app = build_app(config, registry, TOKEN, Health(ready=True), informers, tokens)
    app.server_address = "127.0.0.1:6443"
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(informers.run)
    await nursery.start(namespaces.run)
    await nursery.start(TokensController(registry, informers, tokens, "CA PEM").run)
    return Api(app, registry)


@pytest.fixture
async def api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    yield await make_api(nursery)


async def until(check: Any, tries: int = 400) -> Any:
    """The first truthy result of ``check()``, tried while the informers catch up."""
    for _ in range(tries):
        result = await check()
        if result:
            return result
        await trio.sleep(0.01)
    raise AssertionError("condition never held")


async def make_sa(api: Api, name: str = "robot") -> dict[str, Any]:
    r = await api.create(SA, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    assert r.status == 201, r.body
    return r.json()


async def request_token(api: Api, name: str = "robot", spec: dict[str, Any] | None = None, **kw: Any) -> Any:
    return await api.create(f"{SA}/{name}/token", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                                   "spec": spec or {}}, **kw)


async def whoami(api: Api, token: str) -> Any:
    return await api.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, token=token)


async def test_a_token_request_answers_a_signed_token_that_authenticates_as_the_account(api: Api) -> None:
    sa = await make_sa(api)
    r = await request_token(api)
    assert r.status == 201, r.body
    body = r.json()
    assert body["kind"] == "TokenRequest" and body["apiVersion"] == "authentication.k8s.io/v1"
    assert body["metadata"]["name"] == "robot" and body["metadata"]["namespace"] == "default"
    assert body["spec"]["audiences"] == [ISSUER] and body["spec"]["expirationSeconds"] == 3600
    claims = jwt.decode(body["status"]["token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["kubernetes.io"]["serviceaccount"] == {"name": "robot", "uid": sa["metadata"]["uid"]}
    who = await until(lambda: _who(api, body["status"]["token"]))
    assert who["username"] == "system:serviceaccount:default:robot" and who["uid"] == sa["metadata"]["uid"]
    assert who["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]


async def _who(api: Api, token: str) -> Any:
    r = await whoami(api, token)
    return r.json()["status"]["userInfo"] if r.status == 201 else None


async def test_token_requests_are_checked_as_kube_checks_them(api: Api) -> None:
    r = await request_token(api, "nobody")
    assert r.status == 404 and r.json()["message"] == 'serviceaccounts "nobody" not found'
    await make_sa(api)
    r = await request_token(api, spec={"expirationSeconds": 60})
    assert r.status == 422
    assert r.json()["message"] == ('TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
                                   'Invalid value: 60: may not specify a duration less than 10 minutes')
    r = await api.create(f"{SA}/robot/token", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                               "metadata": {"name": "other"}, "spec": {}})
    assert r.status == 422 and "must match the service account name if specified" in r.json()["message"]
    r = await request_token(api, spec={"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}})
    assert r.status == 400 and r.json()["message"] == "cannot bind token to object of type /v1, Kind=ConfigMap"
    r = await request_token(api, spec={"expirationSeconds": "soon"})
    assert r.status == 400


async def test_a_pod_bound_token_dies_with_its_pod(api: Api) -> None:
    await make_sa(api)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
           "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "nginx"}]}}
    r = await api.create("/api/v1/namespaces/default/pods", pod)
    assert r.status == 201, r.body
    uid = r.json()["metadata"]["uid"]
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web"}
    r = await request_token(api, spec={"boundObjectRef": {**ref, "uid": "not-the-uid"}})
    assert r.status == 409 and "the UID in the bound object reference (not-the-uid) does not match" in r.json()["message"]
    r = await request_token(api, "default", spec={"boundObjectRef": ref})
    assert r.status == 400 and "to pod running with different serviceaccount name" in r.json()["message"]
    r = await request_token(api, spec={"boundObjectRef": {**ref, "uid": uid}})
    assert r.status == 201, r.body
    token = r.json()["status"]["token"]
    who = await until(lambda: _who(api, token))
    assert who["extra"]["authentication.kubernetes.io/pod-name"] == ["web"]
    assert who["extra"]["authentication.kubernetes.io/pod-uid"] == [uid]
    r = await api.request("DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0")
    assert r.status == 200
    r = await until(lambda: _refused(api, token))
    assert r.json()["reason"] == "Unauthorized"


async def _refused(api: Api, token: str) -> Any:
    r = await whoami(api, token)
    return r if r.status == 401 else None


async def test_secret_and_node_bound_tokens_die_with_their_objects(api: Api) -> None:
    await make_sa(api)
    r = await api.create("/api/v1/namespaces/default/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                                "metadata": {"name": "anchor"}})
    assert r.status == 201
    r = await request_token(api, spec={"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "anchor"}})
    assert r.status == 201, r.body
    secret_token = r.json()["status"]["token"]
    r = await api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    assert r.status == 201
    r = await request_token(api, spec={"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "n1"}})
    assert r.status == 201, r.body
    node_token = r.json()["status"]["token"]
    assert jwt.decode(node_token, options={"verify_signature": False})["kubernetes.io"]["node"]["name"] == "n1"
    who = await until(lambda: _who(api, node_token))
    assert who["extra"]["authentication.kubernetes.io/node-name"] == ["n1"]
    await until(lambda: _who(api, secret_token))
    assert (await api.request("DELETE", "/api/v1/namespaces/default/secrets/anchor")).status == 200
    await until(lambda: _refused(api, secret_token))
    assert (await api.request("DELETE", "/api/v1/nodes/n1")).status == 200
    await until(lambda: _refused(api, node_token))
    r = await request_token(api, spec={"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "n1"}})
    assert r.status == 404 and r.json()["message"] == 'nodes "n1" not found'


async def test_a_token_dies_with_its_service_account(api: Api) -> None:
    await make_sa(api)
    token = (await request_token(api)).json()["status"]["token"]
    await until(lambda: _who(api, token))
    r = await api.request("DELETE", f"{SA}/robot")
    assert r.status == 200
    await until(lambda: _refused(api, token))
    await make_sa(api)  # the same name again is another account (another uid)
    await trio.sleep(0.05)
    assert (await whoami(api, token)).status == 401


async def test_max_expiration_caps_and_the_projected_default_is_extended(nursery: trio.Nursery) -> None:
    api = await make_api(nursery, service_account_max_token_expiration_s=7200.0)
    await make_sa(api)
    r = await request_token(api, spec={"expirationSeconds": 10000})
    assert r.status == 201 and r.json()["spec"]["expirationSeconds"] == 7200
    assert r.headers["warning"] == '299 - "requested expiration of 10000 seconds shortened to 7200 seconds"'
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "nginx"}]}}
    assert (await api.create("/api/v1/namespaces/default/pods", pod)).status == 201
    r = await request_token(api, spec={"expirationSeconds": 3607,
                                       "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}})
    claims = jwt.decode(r.json()["status"]["token"], options={"verify_signature": False})
    # kube's safe transition: valid for a year, warning after the 3607 s asked for.
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    assert claims["kubernetes.io"]["warnafter"] - claims["iat"] == 3607
    assert r.json()["status"]["expirationTimestamp"]  # the time asked for, not the extension


async def test_token_review_answers_from_the_token_authenticators(api: Api) -> None:
    await make_sa(api)
    token = (await request_token(api, spec={"audiences": ["vault", ISSUER]})).json()["status"]["token"]
    await until(lambda: _who(api, token))
    r = await api.create(TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                              "spec": {"token": token}})
    assert r.status == 201
    status = r.json()["status"]
    assert status["authenticated"] is True and status["audiences"] == [ISSUER]
    assert status["user"]["username"] == "system:serviceaccount:default:robot"
    r = await api.create(TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                              "spec": {"token": token, "audiences": ["vault"]}})
    assert r.json()["status"]["audiences"] == ["vault"]
    r = await api.create(TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                              "spec": {"token": token, "audiences": ["elsewhere"]}})
    # kube: the token union's error, the service-account authenticator's audience check
    assert r.json()["status"] == {"user": {}, "error": f'token audiences ["vault" "{ISSUER}"] is invalid for the '
                                                      'target audiences ["elsewhere"]'}
    r = await api.create(TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                              "spec": {"token": "garbage"}})
    assert r.json()["status"] == {"user": {}}  # no authenticator takes it and none errs: kube reports no error
    r = await api.create(TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}})
    assert r.status == 400 and r.json()["message"] == "token is required for TokenReview in authentication"


async def test_the_token_controller_fills_legacy_token_secrets_and_removes_orphans(api: Api) -> None:
    sa = await make_sa(api)
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
              "metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}}}
    assert (await api.create("/api/v1/namespaces/default/secrets", secret)).status == 201

    async def filled() -> Any:
        r = await api.request("GET", "/api/v1/namespaces/default/secrets/robot-token")
        return r.json() if "token" in (r.json().get("data") or {}) else None

    got = await until(filled)
    assert base64.b64decode(got["data"]["namespace"]) == b"default"
    assert base64.b64decode(got["data"]["ca.crt"]) == b"CA PEM"
    assert got["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == sa["metadata"]["uid"]
    token = base64.b64decode(got["data"]["token"]).decode()
    assert jwt.decode(token, options={"verify_signature": False})["iss"] == "kubernetes/serviceaccount"
    who = await until(lambda: _who(api, token))
    assert who["username"] == "system:serviceaccount:default:robot"

    async def used() -> Any:  # kube's legacy token tracking labels the Secret with the day of use
        r = await api.request("GET", "/api/v1/namespaces/default/secrets/robot-token")
        return r.json()["metadata"].get("labels", {}).get("kubernetes.io/legacy-token-last-used")

    day = await until(used)
    assert len(day) == 10 and day[4] == day[7] == "-"
    assert (await api.request("DELETE", f"{SA}/robot")).status == 200

    async def secret_gone() -> bool:
        return (await api.request("GET", "/api/v1/namespaces/default/secrets/robot-token")).status == 404

    await until(secret_gone)
    await until(lambda: _refused(api, token))


async def test_a_deleted_token_secret_leaves_its_accounts_secrets(api: Api) -> None:
    await make_sa(api)
    r = await api.request("PATCH", f"{SA}/robot", {"secrets": [{"name": "robot-token"}, {"name": "other"}]},
                          content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
              "metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}}}
    assert (await api.create("/api/v1/namespaces/default/secrets", secret)).status == 201

    async def annotated() -> bool:
        r = await api.request("GET", "/api/v1/namespaces/default/secrets/robot-token")
        return "kubernetes.io/service-account.uid" in r.json()["metadata"].get("annotations", {})

    await until(annotated)
    assert (await api.request("DELETE", "/api/v1/namespaces/default/secrets/robot-token")).status == 200

    async def dropped() -> Any:
        r = await api.request("GET", f"{SA}/robot")
        return r.json() if r.json().get("secrets") == [{"name": "other"}] else None

    await until(dropped)


async def test_issuer_discovery_documents_name_the_issuer_and_its_keys(api: Api) -> None:
    r = await api.request("GET", "/.well-known/openid-configuration")
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["cache-control"] == "public, max-age=3600"
    doc = r.json()
    assert doc["issuer"] == ISSUER and doc["jwks_uri"] == "https://127.0.0.1:6443/openid/v1/jwks"
    r = await api.request("GET", "/openid/v1/jwks")
    assert r.status == 200 and r.headers["content-type"] == "application/jwk-set+json"
    await make_sa(api)
    token = (await request_token(api)).json()["status"]["token"]
    [key] = r.json()["keys"]
    assert jwt.get_unverified_header(token)["kid"] == key["kid"]
    verified = jwt.decode(token, jwt.PyJWK(key).key, algorithms=[key["alg"]], audience=ISSUER)
    assert verified["sub"] == "system:serviceaccount:default:robot"


async def test_kubectl_127s_self_subject_review_version_is_served(api: Api) -> None:
    r = await api.create("/apis/authentication.k8s.io/v1beta1/selfsubjectreviews",
                         {"apiVersion": "authentication.k8s.io/v1beta1", "kind": "SelfSubjectReview"})
    assert r.status == 201 and r.json()["apiVersion"] == "authentication.k8s.io/v1beta1"
    assert r.json()["status"]["userInfo"]["username"] == "kapi-admin"


async def test_discovery_names_the_token_subresource_as_kube_does(api: Api) -> None:
    r = await api.request("GET", "/api/v1")
    [token] = [x for x in r.json()["resources"] if x["name"] == "serviceaccounts/token"]
    assert token == {"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
                     "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}
    r = await api.request("GET", "/api", headers={
        "accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    [sa] = [res for v in r.json()["items"][0]["versions"] for res in v["resources"]
            if res["resource"] == "serviceaccounts"]
    assert sa["subresources"] == [{"subresource": "token", "verbs": ["create"], "responseKind": {
        "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}}]
    r = await api.request("GET", "/apis/authentication.k8s.io")
    assert r.json()["preferredVersion"]["version"] == "v1"
