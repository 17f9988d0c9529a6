"""Issue 12: the authenticator union in kube's order, x509, the authenticating proxy, JWT authenticators."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kapi import errors
from kapi.chain.authn import (
    ANONYMOUS,
    CREDENTIAL_ID,
    AuthenticationError,
    Authenticator,
    X509,
    bearer_token,
    unescape_extra_key,
    with_authenticated_group,
)
from kapi.chain.authn import jwt as jwt_authn
from kapi.chain.authn.requestheader import RequestHeader, from_config, validate
from kapi.chain.context import RequestContext
from kapi.config import Config
from kapi.object.access import UserInfo
from kapi.server.security import build_authenticator
from tests.chain.authn_helpers import Cert, JWTIssuer, issue, make_ca

ALICE = UserInfo("alice", "1", ("dev",))


def request(headers: dict[str, str] | None = None, cert: Cert | None = None, path: str = "/api/v1/pods",
            raw: list[tuple[str, str]] | None = None) -> RequestContext:
    hdrs = {k.lower(): v for k, v in (headers or {}).items()}
    raw_headers = [(k.lower().encode(), v.encode()) for k, v in raw or ()]
    for k, v in raw or ():
        hdrs.setdefault(k.lower(), v)
    return RequestContext("GET", path, {}, hdrs, client_cert=cert.der if cert else None, raw_headers=raw_headers)


class Tokens:
    """A TokenAuthenticator for tests: knows ``token`` as ``user``; records the audiences asked for."""

    def __init__(self, token: str, user: UserInfo, audiences: tuple[str, ...] | None = None,
                 fail: bool = False) -> None:
        self.token, self.user, self.audiences, self.fail = token, user, audiences, fail
        self.asked: list[tuple[str, ...]] = []

    async def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Any:
        self.asked.append(audiences)
        if token != self.token:
            return None
        if self.fail:
            raise AuthenticationError("bad signature")
        return self.user, audiences if self.audiences is None else self.audiences


# ------------------------------------------------------------------ the union


async def test_no_credentials_is_anonymous_only_when_allowed() -> None:
    assert await Authenticator().authenticate(request()) == ANONYMOUS
    assert ANONYMOUS.groups == ("system:unauthenticated",)
    with pytest.raises(errors.Unauthorized):
        await Authenticator(anonymous=False).authenticate(request())


async def test_a_bad_credential_is_401_never_anonymous() -> None:
    """kube's FailOnError union: a token nobody knows is no reason to be anonymous."""
    with pytest.raises(errors.Unauthorized, match="Unauthorized"):
        await Authenticator({"good": ALICE}).authenticate(request({"Authorization": "Bearer nope"}))


@pytest.mark.parametrize("value", ["Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer ", "Negotiate x", "Bearer  good"])
async def test_no_bearer_token_is_no_credential(value: str) -> None:
    """kube's bearertoken: another scheme, or Bearer without a token, is ignored (then anonymous)."""
    assert bearer_token(value) == ""
    ctx = request({"Authorization": value})
    assert await Authenticator({"good": ALICE}).authenticate(ctx) == ANONYMOUS
    # kube's bearertoken warns about the extra space (the Warning header of the answer)
    assert ctx.warnings == (["the provided Authorization header contains extra space before the bearer token, "
                             "and is ignored"] if value == "Bearer  good" else [])


async def test_token_file_then_token_authenticators_in_order() -> None:
    first = Tokens("t", UserInfo("first"))
    second = Tokens("t", UserInfo("second"))
    authn = Authenticator({"static": ALICE}, api_audiences=("api",))
    authn.add_token_authenticator(first)
    authn.add_token_authenticator(second)
    user = await authn.authenticate(request({"Authorization": "Bearer t"}))
    assert user.name == "first" and user.groups == ("system:authenticated",)
    assert first.asked == [("api",)] and second.asked == []  # asked for the API audiences; the first won
    assert (await authn.authenticate(request({"Authorization": "Bearer static"}))).name == "alice"
    assert first.asked == [("api",)]  # the token file is asked first


async def test_a_failing_token_authenticator_leaves_the_next_to_try() -> None:
    authn = Authenticator(token_authenticators=[Tokens("t", UserInfo("x"), fail=True), Tokens("t", UserInfo("y"))])
    assert (await authn.authenticate(request({"Authorization": "Bearer t"}))).name == "y"


async def test_authenticated_group_added_once_never_to_anonymous() -> None:
    assert with_authenticated_group(ALICE).groups == ("dev", "system:authenticated")
    already = UserInfo("bob", groups=("system:authenticated", "x"))
    assert with_authenticated_group(already) is already
    assert with_authenticated_group(UserInfo("system:anonymous")).groups == ()
    assert with_authenticated_group(UserInfo("u", groups=("system:unauthenticated",))).groups == (
        "system:unauthenticated",)


async def test_static_tokens_are_good_for_the_api_audiences_only() -> None:
    """kube's WrapAudienceAgnosticToken: a TokenReview for another audience does not authenticate."""
    authn = Authenticator({"static": ALICE}, api_audiences=("api", "other"))
    assert await authn.authenticate_token("static", ("elsewhere",)) is None
    user, audiences = await authn.authenticate_token("static", ("other", "elsewhere"))  # type: ignore[misc]
    assert user.name == "alice" and audiences == ("other",)
    user, audiences = await authn.authenticate_token("static", ())  # type: ignore[misc]
    assert audiences == ("api", "other")


async def test_a_token_for_another_audience_is_401() -> None:
    """kube's audiencesAreAcceptable."""
    authn = Authenticator(api_audiences=("api",), token_authenticators=[Tokens("t", ALICE, ("vault",))])
    with pytest.raises(errors.Unauthorized):
        await authn.authenticate(request({"Authorization": "Bearer t"}))


async def test_the_authorization_header_is_dropped_once_used() -> None:
    ctx = request({"Authorization": "Bearer static"})
    await Authenticator({"static": ALICE}).authenticate(ctx)
    assert "authorization" not in ctx.headers


async def test_anonymous_only_on_the_configured_paths() -> None:
    authn = Authenticator(anonymous_paths=frozenset({"/livez"}))
    assert await authn.authenticate(request(path="/livez")) == ANONYMOUS
    with pytest.raises(errors.Unauthorized):
        await authn.authenticate(request(path="/api"))


def test_unescape_extra_key_as_go_path_unescape() -> None:
    assert unescape_extra_key("scopes") == "scopes"
    assert unescape_extra_key("example.org%2fteam") == "example.org/team"
    assert unescape_extra_key("bad%zz") == "bad%zz"
    assert unescape_extra_key("short%2") == "short%2"


# ------------------------------------------------------------------ x509


@pytest.fixture(scope="module")
def cas() -> dict[str, Cert]:
    client_ca, proxy_ca = make_ca("kapi-ca"), make_ca("front-proxy-ca")
    return {"client": client_ca, "proxy": proxy_ca,
            "alice": issue(client_ca, "alice", ("dev", "ops")),
            "proxy-client": issue(proxy_ca, "front-proxy-client"),
            "other-proxy": issue(proxy_ca, "someone-else"),
            "expired": issue(client_ca, "old", expired=True),
            "server-only": issue(client_ca, "srv", server=True),
            "no-cn": issue(client_ca, "", ("dev",))}


async def test_x509_maps_cn_and_orgs_and_credential_id(cas: dict[str, Cert]) -> None:
    authn = Authenticator(x509=X509([cas["client"].cert]))
    user = await authn.authenticate(request(cert=cas["alice"]))
    assert (user.name, user.groups) == ("alice", ("dev", "ops", "system:authenticated"))
    assert user.extra[CREDENTIAL_ID][0].startswith("X509SHA256=") and len(user.extra[CREDENTIAL_ID][0]) == 75


async def test_x509_trusting_the_tls_layer(cas: dict[str, Cert]) -> None:
    """Without a request-header CA the TLS layer accepts kapi's CA only: its verification is enough."""
    first = await Authenticator().authenticate(request(cert=cas["alice"]))
    again = await Authenticator().authenticate(request(cert=cas["alice"]))
    assert first == again and (first.name, first.groups) == ("alice", ("dev", "ops", "system:authenticated"))
    assert await Authenticator().authenticate(request(cert=cas["no-cn"])) == ANONYMOUS


@pytest.mark.parametrize("which", ["proxy-client", "expired", "server-only"])
async def test_x509_refuses_certificates_it_cannot_use(cas: dict[str, Cert], which: str) -> None:
    """Another CA's certificate (the proxy's), an expired one, one not for client auth: 401."""
    authn = Authenticator(x509=X509([cas["client"].cert]))
    with pytest.raises(errors.Unauthorized):
        await authn.authenticate(request(cert=cas[which]))


async def test_x509_without_a_common_name_is_no_credential(cas: dict[str, Cert]) -> None:
    """kube's CommonNameUserConversion: no CN, not ok and no error: the next authenticator (anonymous)."""
    assert await Authenticator(x509=X509([cas["client"].cert])).authenticate(request(cert=cas["no-cn"])) == ANONYMOUS


# ------------------------------------------------------------------ the authenticating proxy


def _proxy(cas: dict[str, Cert], allowed: tuple[str, ...] = ()) -> Authenticator:
    header = RequestHeader([cas["proxy"].cert], ("X-Remote-User",), ("X-Remote-Uid",), ("X-Remote-Group",),
                           ("X-Remote-Extra-",), allowed)
    return Authenticator(x509=X509([cas["client"].cert]), request_header=header)


async def test_proxy_headers_with_the_proxys_certificate(cas: dict[str, Cert]) -> None:
    ctx = request(cert=cas["proxy-client"], raw=[
        ("X-Remote-User", "bob"), ("X-Remote-Uid", "42"), ("X-Remote-Group", "a"), ("X-Remote-Group", "b"),
        ("X-Remote-Group", ""), ("X-Remote-Extra-Scopes", "view"), ("X-Remote-Extra-Scopes", "edit"),
        ("X-Remote-Extra-Example.org%2fteam", "t1")])
    user = await _proxy(cas, ("front-proxy-client",)).authenticate(ctx)
    assert (user.name, user.uid, user.groups) == ("bob", "42", ("a", "b", "system:authenticated"))
    assert user.extra == {"scopes": ("view", "edit"), "example.org/team": ("t1",)}
    assert not [h for h in ctx.headers if h.startswith("x-remote-")]  # kube clears what it read


async def test_proxy_names_not_allowed_fail(cas: dict[str, Cert]) -> None:
    with pytest.raises(errors.Unauthorized):
        await _proxy(cas, ("front-proxy-client",)).authenticate(
            request({"X-Remote-User": "bob"}, cert=cas["other-proxy"]))


async def test_proxy_certificate_without_username_is_not_a_user(cas: dict[str, Cert]) -> None:
    """No username header: not the proxy's request; x509 then refuses the proxy's certificate (401)."""
    with pytest.raises(errors.Unauthorized):
        await _proxy(cas).authenticate(request(cert=cas["proxy-client"]))


async def test_proxy_headers_from_a_kapi_client_are_ignored(cas: dict[str, Cert]) -> None:
    """A certificate of kapi's CA is x509's: the headers it sends do not make it someone else."""
    user = await _proxy(cas).authenticate(request({"X-Remote-User": "root"}, cert=cas["alice"]))
    assert user.name == "alice"


async def test_proxy_headers_without_a_certificate_are_ignored(cas: dict[str, Cert]) -> None:
    assert await _proxy(cas).authenticate(request({"X-Remote-User": "root"})) == ANONYMOUS


def test_requestheader_flags_validated_as_kube(tmp_path: Path, cas: dict[str, Cert]) -> None:
    ca = tmp_path / "proxy-ca.crt"
    ca.write_bytes(cas["proxy"].pem)
    assert from_config(Config()) is None  # no CA file: no proxy authenticator
    assert validate(Config(requestheader_uid_headers=("X-Uid",))) == [
        "--requestheader-uid-headers is set without specifying the standard X-Remote-Uid header - API "
        "aggregation will not work"]
    assert validate(Config(requestheader_username_headers=(" ",))) == ['empty value in "requestheader-username-headers"']
    header = from_config(Config(requestheader_client_ca_file=str(ca), requestheader_username_headers=("X-Remote-User",)))
    assert header is not None and header.cas[0] == cas["proxy"].cert


# ------------------------------------------------------------------ JWT: the configuration


def _config(**entry: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"issuer": {"url": "https://issuer.example", "audiences": ["kapi"]},
                            "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}
    for key, value in entry.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return {"apiVersion": "apiserver.config.k8s.io/v1beta1", "kind": "AuthenticationConfiguration", "jwt": [base]}


@pytest.mark.parametrize("entry,message", [
    ({"issuer": {"url": "http://issuer.example"}}, 'jwt[0].issuer.url: Invalid value: "http://issuer.example": '
                                                   "URL scheme must be https"),
    ({"issuer": {"url": "https://issuer.example?x=1"}}, "URL must not contain a query"),
    ({"issuer": {"audiences": []}}, "jwt[0].issuer.audiences: Required value"),
    ({"issuer": {"audiences": ["a", "b"]}}, "audienceMatchPolicy must be MatchAny for multiple audiences"),
    ({"claimMappings": {"username": {"claim": "sub"}}}, "jwt[0].claimMappings.username.prefix: Required value: "
                                                        "prefix is required when claim is set"),
    ({"claimMappings": {"username": {}}}, "jwt[0].claimMappings.username: Required value: claim or expression "
                                          "is required"),
    ({"claimMappings": {"username": {"expression": "claims.sub"}}}, "claimMappings.username.expression: Forbidden: "
                                                                    "CEL expressions are not supported"),
    ({"claimValidationRules": [{"expression": "claims.x == 'y'"}]}, "issue 14"),
    ({"userValidationRules": [{"expression": "true"}]}, "jwt[0].userValidationRules: Forbidden: CEL"),
    ({"claimMappings": {"extra": [{"key": "example.org/x", "valueExpression": "'y'"}]}}, "claimMappings.extra"),
    ({"issuer": {"url": "https://kubernetes.default.svc.cluster.local"}}, "URL must not overlap with disallowed "
                                                                          "issuers"),
])
def test_authentication_configuration_refused_with_kubes_messages(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(jwt_authn.ConfigError, match=None) as info:
        jwt_authn.parse(_config(**entry), ("https://kubernetes.default.svc.cluster.local",))
    assert message in str(info.value)


def test_authentication_configuration_duplicates_and_kind() -> None:
    doc = _config()
    doc["jwt"].append(doc["jwt"][0])
    with pytest.raises(jwt_authn.ConfigError, match=r'jwt\[1\].issuer.url: Duplicate value: "https://issuer.example"'):
        jwt_authn.parse(doc)
    with pytest.raises(jwt_authn.ConfigError, match="AuthenticationConfiguration"):
        jwt_authn.parse({**doc, "kind": "Other"})


def test_authentication_configuration_read() -> None:
    doc = _config(claimValidationRules=[{"claim": "hd", "requiredValue": "example.com"}],
                  claimMappings={"groups": {"claim": "groups", "prefix": "g:"}, "uid": {"claim": "oid"}})
    doc["anonymous"] = {"enabled": True, "conditions": [{"path": "/livez"}]}
    config = jwt_authn.parse(doc)
    (one,) = config.jwt
    assert one.issuer.url == "https://issuer.example" and one.username == jwt_authn.ClaimMapping("sub", "")
    assert one.groups == jwt_authn.ClaimMapping("groups", "g:") and one.uid_claim == "oid"
    assert one.required_claims == (("hd", "example.com"),)
    assert (config.anonymous, config.anonymous_paths) == (True, ("/livez",))


def test_untrusted_issuer() -> None:
    import jwt

    token = jwt.encode({"iss": "https://x"}, "k" * 32, algorithm="HS256")
    assert jwt_authn.untrusted_issuer(token) == "https://x"
    assert jwt_authn.untrusted_issuer(jwt.encode({"iss": "accounts.google.com"}, "k" * 32, algorithm="HS256")) == \
        "https://accounts.google.com"
    assert jwt_authn.untrusted_issuer("not.a.jwt") == ""
    assert jwt_authn.untrusted_issuer("{}") == ""


# ------------------------------------------------------------------ JWT: tokens of an issuer on 127.0.0.1


@pytest.fixture
def issuer(tmp_path: Path) -> Any:
    with JWTIssuer(tmp_path) as running:
        yield running


def _authenticator(issuer: JWTIssuer, **mappings: Any) -> jwt_authn.JWTAuthenticator:
    (config,) = jwt_authn.parse(issuer.config(**mappings)).jwt
    return jwt_authn.JWTAuthenticator(config, ("https://kubernetes.default.svc.cluster.local",))


async def test_a_token_of_the_issuer_is_its_user(issuer: JWTIssuer) -> None:
    authn = _authenticator(issuer, claimMappings={"uid": {"claim": "oid"}})
    token = issuer.token(groups=["admins", "dev"], oid="u-1", jti="j-1")
    found = await authn.authenticate_token(token, ("https://kubernetes.default.svc.cluster.local",))
    assert found is not None
    user, audiences = found
    assert (user.name, user.uid, user.groups) == ("oidc:alice", "u-1", ("oidc:admins", "oidc:dev"))
    assert user.extra == {CREDENTIAL_ID: ("JTI=j-1",)}
    assert audiences == ("https://kubernetes.default.svc.cluster.local",)
    assert issuer.jwks_fetches == 1
    await authn.authenticate_token(issuer.token(oid="u-1"), ())
    assert issuer.jwks_fetches == 1  # keys are kept
    with pytest.raises(AuthenticationError, match='parse uid claim "oid": claim not present'):
        await authn.authenticate_token(issuer.token(), ())


async def test_rsa_keys_and_a_single_group_string(tmp_path: Path) -> None:
    with JWTIssuer(tmp_path, rsa_key=True) as rsa_issuer:
        user, _ = await _authenticator(rsa_issuer).authenticate_token(  # type: ignore[misc]
            rsa_issuer.token(groups="one"), ())
        assert user.groups == ("oidc:one",)
        user, _ = await _authenticator(rsa_issuer).authenticate_token(  # type: ignore[misc]
            rsa_issuer.token(groups=None), ())
        assert user.groups == ()


@pytest.mark.parametrize("claims,message", [
    ({"aud": "someone-else"}, "expected audience"),
    ({"exp": 1}, "token is expired"),
    ({"exp": None}, "token is expired"),
    ({"nbf": 4102444800}, "before the nbf"),
    ({"sub": 7}, 'parse username claims "sub"'),
    ({"groups": [1]}, 'parse groups claim "groups"'),
])
async def test_tokens_kube_refuses(issuer: JWTIssuer, claims: dict[str, Any], message: str) -> None:
    with pytest.raises(AuthenticationError, match=message):
        await _authenticator(issuer).authenticate_token(issuer.token(claims), ())


async def test_a_token_of_another_issuer_is_not_its(issuer: JWTIssuer) -> None:
    assert await _authenticator(issuer).authenticate_token(issuer.token(iss="https://other.example"), ()) is None
    assert await _authenticator(issuer).authenticate_token("opaque-token", ()) is None


async def test_a_forged_signature_fails(issuer: JWTIssuer) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    forged = issuer.token(key=ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(AuthenticationError, match="failed to verify"):
        await _authenticator(issuer).authenticate_token(forged, ())


async def test_a_new_key_id_fetches_the_keys_again(issuer: JWTIssuer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issuer rotated its key: a token with a kid not seen yet makes the JWKS be fetched again."""
    monkeypatch.setattr(jwt_authn, "REFRESH_INTERVAL_S", 0.0)
    authn = _authenticator(issuer)
    await authn.authenticate_token(issuer.token(), ())
    issuer.rotate()
    user, _ = await authn.authenticate_token(issuer.token(sub="carol"), ())  # type: ignore[misc]
    assert user.name == "oidc:carol" and issuer.jwks_fetches == 2


async def test_a_key_the_issuer_stopped_publishing_verifies_nothing_after_a_refresh(
        issuer: JWTIssuer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verified tokens are remembered, but only until the keys are fetched again."""
    monkeypatch.setattr(jwt_authn, "REFRESH_INTERVAL_S", 0.0)
    authn = _authenticator(issuer)
    old = issuer.token()
    assert await authn.authenticate_token(old, ()) is not None
    assert await authn.authenticate_token(old, ()) is not None  # from what was verified
    issuer.rotate()
    issuer.unpublish_all_but_current()
    assert await authn.authenticate_token(issuer.token(sub="new"), ()) is not None  # a new kid: keys fetched
    with pytest.raises(AuthenticationError, match="failed to verify"):
        await authn.authenticate_token(old, ())


async def test_a_remembered_token_still_expires(issuer: JWTIssuer) -> None:
    import time

    authn = _authenticator(issuer)
    token = issuer.token(lifetime_s=60)
    assert await authn.authenticate_token(token, ()) is not None
    authn.now = lambda: time.time() + 120
    with pytest.raises(AuthenticationError, match="token is expired"):
        await authn.authenticate_token(token, ())


async def test_discovery_naming_another_issuer_is_refused(issuer: JWTIssuer) -> None:
    issuer.discovery_issuer = "https://impostor.example"
    with pytest.raises(AuthenticationError, match="failed to verify"):
        await _authenticator(issuer).authenticate_token(issuer.token(), ())


async def test_claim_validation_rules_and_email(issuer: JWTIssuer) -> None:
    authn = _authenticator(issuer, claimValidationRules=[{"claim": "hd", "requiredValue": "example.com"}])
    assert (await authn.authenticate_token(issuer.token(hd="example.com"), ())) is not None
    with pytest.raises(AuthenticationError, match="required claim hd value does not match"):
        await authn.authenticate_token(issuer.token(hd="evil.com"), ())
    with pytest.raises(AuthenticationError, match="required claim hd not present"):
        await authn.authenticate_token(issuer.token(), ())
    email = _authenticator(issuer, claimMappings={"username": {"claim": "email", "prefix": ""}})
    user, _ = await email.authenticate_token(issuer.token(email="a@x.io", email_verified=True), ())  # type: ignore[misc]
    assert user.name == "a@x.io"
    with pytest.raises(AuthenticationError, match="email not verified"):
        await email.authenticate_token(issuer.token(email="a@x.io", email_verified=False), ())


async def test_the_server_union_with_an_authentication_config(issuer: JWTIssuer, tmp_path: Path) -> None:
    """build_authenticator reads --authentication-config: JWT users authenticate, with system:authenticated."""
    doc = issuer.config()
    doc["anonymous"] = {"enabled": True, "conditions": [{"path": "/healthz"}]}
    path = tmp_path / "authn.yaml"
    path.write_text(yaml.safe_dump(doc))
    authn = build_authenticator(Config(authentication_config=str(path), anonymous_auth=False), None, "admin-t")
    user = await authn.authenticate(request({"Authorization": f"Bearer {issuer.token(groups=['g'])}"}))
    assert (user.name, user.groups) == ("oidc:alice", ("oidc:g", "system:authenticated"))
    assert await authn.authenticate(request(path="/healthz")) == ANONYMOUS
    with pytest.raises(errors.Unauthorized):
        await authn.authenticate(request(path="/api"))
    with pytest.raises(errors.Unauthorized):
        await authn.authenticate(request({"Authorization": f"Bearer {issuer.token(aud='x')}"}))
    path.write_text(yaml.safe_dump(_config(issuer={"url": "http://insecure"})))
    with pytest.raises(ValueError, match="URL scheme must be https"):
        build_authenticator(Config(authentication_config=str(path)), None, "")
