"""Service-account tokens (issue 12): kube's claims, signature and key rotation, bound-object uid
checks, legacy Secret tokens, audiences, the issuer discovery documents."""

from __future__ import annotations

import base64
import json

import jwt
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kapi.errors import AuthenticationError
from kapi.chain.authn.serviceaccount import (CREDENTIAL_ID_KEY, LABEL_INVALID_SINCE, LEGACY_ISSUER, NODE_NAME_KEY,
                                             NODE_UID_KEY, POD_NAME_KEY, POD_UID_KEY, ServiceAccountTokens, _Ref,
                                             key_id, load_public_keys)

ISSUER = "https://kubernetes.default.svc.cluster.local"
NOW = 1_800_000_000.0


def sa(ns: str = "team", name: str = "robot", uid: str = "sa-uid") -> dict:
    return {"metadata": {"namespace": ns, "name": name, "uid": uid}}


def obj(name: str, uid: str, ns: str = "team") -> dict:
    return {"metadata": {"namespace": ns, "name": name, "uid": uid}}


@pytest.fixture
def tokens() -> ServiceAccountTokens:
    t = ServiceAccountTokens(ec.generate_private_key(ec.SECP256R1()), issuers=(ISSUER,), now=lambda: NOW)
    t.index.refs["serviceaccounts"][("team", "robot")] = _Ref("sa-uid")
    return t


def payload(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def header(token: str) -> dict:
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


async def test_a_bound_token_carries_kubes_claims_and_is_the_service_account(tokens: ServiceAccountTokens) -> None:
    token = tokens.sign(tokens.bound_claims(sa(), [ISSUER], 3600))
    claims = payload(token)
    assert claims["iss"] == ISSUER and claims["sub"] == "system:serviceaccount:team:robot"
    assert claims["aud"] == [ISSUER]
    assert claims["iat"] == claims["nbf"] == int(NOW) and claims["exp"] == int(NOW) + 3600
    assert claims["kubernetes.io"] == {"namespace": "team", "serviceaccount": {"name": "robot", "uid": "sa-uid"}}
    assert header(token) == {"alg": "ES256", "kid": tokens.kid}  # no typ, as kube's tokens
    user, auds = await tokens.authenticate_token(token, (ISSUER,))
    assert user.name == "system:serviceaccount:team:robot" and user.uid == "sa-uid"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:team")
    assert user.extra == {CREDENTIAL_ID_KEY: (f"JTI={claims['jti']}",)}
    assert auds == (ISSUER,)


async def test_expired_and_future_tokens_are_refused_with_kubes_reasons(tokens: ServiceAccountTokens) -> None:
    token = tokens.sign(tokens.bound_claims(sa(), [ISSUER], 600))
    tokens.now = lambda: NOW + 600 + 30  # within the minute of leeway
    assert await tokens.authenticate_token(token, (ISSUER,)) is not None
    tokens.now = lambda: NOW + 600 + 61
    with pytest.raises(AuthenticationError, match="service account token has expired"):
        await tokens.authenticate_token(token, (ISSUER,))
    tokens.now = lambda: NOW - 120
    with pytest.raises(AuthenticationError, match="not valid yet"):
        await tokens.authenticate_token(token, (ISSUER,))


async def test_a_token_stops_working_when_its_service_account_goes_or_is_recreated(
        tokens: ServiceAccountTokens) -> None:
    token = tokens.sign(tokens.bound_claims(sa(), [ISSUER], 3600))
    tokens.index.refs["serviceaccounts"][("team", "robot")] = _Ref("another-uid")
    with pytest.raises(AuthenticationError, match=r"service account UID \(another-uid\) does not match claim "
                                                  r"\(sa-uid\)"):
        await tokens.authenticate_token(token, (ISSUER,))
    del tokens.index.refs["serviceaccounts"][("team", "robot")]
    with pytest.raises(AuthenticationError, match='serviceaccounts "robot" not found'):
        await tokens.authenticate_token(token, (ISSUER,))


async def test_a_pod_bound_token_lives_as_long_as_its_pod(tokens: ServiceAccountTokens) -> None:
    pods = tokens.index.refs["pods"]
    pods[("team", "web")] = _Ref("pod-uid")
    token = tokens.sign(tokens.bound_claims(sa(), [ISSUER], 3600, pod=obj("web", "pod-uid"),
                                            node={"metadata": {"name": "n1", "uid": "node-uid"}}))
    assert payload(token)["kubernetes.io"]["pod"] == {"name": "web", "uid": "pod-uid"}
    user, _ = await tokens.authenticate_token(token, ())
    assert user.extra[POD_NAME_KEY] == ("web",) and user.extra[POD_UID_KEY] == ("pod-uid",)
    assert user.extra[NODE_NAME_KEY] == ("n1",) and user.extra[NODE_UID_KEY] == ("node-uid",)
    pods[("team", "web")] = _Ref("pod-uid", deleting_since=NOW - 61)
    with pytest.raises(AuthenticationError, match="service account token has been invalidated"):
        await tokens.authenticate_token(token, ())
    pods[("team", "web")] = _Ref("new-pod")
    with pytest.raises(AuthenticationError, match=r"pod UID \(new-pod\) does not match service account pod ref"):
        await tokens.authenticate_token(token, ())
    del pods[("team", "web")]
    with pytest.raises(AuthenticationError, match="service account token has been invalidated"):
        await tokens.authenticate_token(token, ())


async def test_secret_and_node_bound_tokens_check_their_objects(tokens: ServiceAccountTokens) -> None:
    tokens.index.refs["secrets"][("team", "s1")] = _Ref("secret-uid")
    token = tokens.sign(tokens.bound_claims(sa(), [ISSUER], 3600, secret=obj("s1", "secret-uid")))
    assert await tokens.authenticate_token(token, ()) is not None
    tokens.index.refs["secrets"][("team", "s1")] = _Ref("other")
    with pytest.raises(AuthenticationError, match="secret UID"):
        await tokens.authenticate_token(token, ())
    tokens.index.refs["nodes"][("", "n1")] = _Ref("node-uid")
    token = tokens.sign(tokens.bound_claims(sa(), [ISSUER], 3600, node={"metadata": {"name": "n1", "uid": "node-uid"}}))
    user, _ = await tokens.authenticate_token(token, ())
    assert user.extra[NODE_NAME_KEY] == ("n1",)
    del tokens.index.refs["nodes"][("", "n1")]
    with pytest.raises(AuthenticationError, match="invalidated"):
        await tokens.authenticate_token(token, ())


async def test_audiences_are_intersected_and_a_token_for_others_is_refused(tokens: ServiceAccountTokens) -> None:
    token = tokens.sign(tokens.bound_claims(sa(), ["vault", "other"], 3600))
    _, auds = await tokens.authenticate_token(token, ("vault", "x"))
    assert auds == ("vault",)
    with pytest.raises(AuthenticationError, match=r'token audiences \["vault" "other"\] is invalid for the target '
                                                  r'audiences \["https://kubernetes.default.svc.cluster.local"\]'):
        await tokens.authenticate_token(token, (ISSUER,))


async def test_tokens_of_other_issuers_or_no_jwt_at_all_are_not_ours(tokens: ServiceAccountTokens) -> None:
    other = jwt.encode({"iss": "https://elsewhere", "sub": "x"}, "secret-key-long-enough-for-hs256-32b!",
                       algorithm="HS256")
    assert await tokens.authenticate_token(other, ()) is None
    assert await tokens.authenticate_token("abcdef", ()) is None
    assert await tokens.authenticate_token('{"iss": "x"}.a.b', ()) is None


async def test_a_forged_signature_and_an_unknown_key_are_refused(tokens: ServiceAccountTokens) -> None:
    stranger = ServiceAccountTokens(ec.generate_private_key(ec.SECP256R1()), issuers=(ISSUER,), now=lambda: NOW)
    token = stranger.sign(stranger.bound_claims(sa(), [ISSUER], 3600))
    with pytest.raises(AuthenticationError, match="no keys found"):
        await tokens.authenticate_token(token, ())
    # The same claims under our kid but another key's signature.
    forged = jwt.encode(payload(token), stranger.signing_key, algorithm="ES256", headers={"kid": tokens.kid})
    with pytest.raises(AuthenticationError, match="cryptographic primitive"):
        await tokens.authenticate_token(forged, ())


async def test_a_verification_key_file_keeps_rotated_keys_valid(tmp_path) -> None:
    old = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    old_tokens = ServiceAccountTokens(old, issuers=(ISSUER,), now=lambda: NOW)
    assert old_tokens.alg == "RS256"
    token = old_tokens.sign(old_tokens.bound_claims(sa(), [ISSUER], 3600))
    pem = tmp_path / "old.pub"
    pem.write_bytes(old.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    keys = load_public_keys(pem)
    assert key_id(keys[0]) == old_tokens.kid
    new = ServiceAccountTokens(ec.generate_private_key(ec.SECP384R1()), keys, issuers=(ISSUER,), now=lambda: NOW)
    new.index.refs["serviceaccounts"][("team", "robot")] = _Ref("sa-uid")
    assert new.alg == "ES384"
    user, _ = await new.authenticate_token(token, ())
    assert user.name == "system:serviceaccount:team:robot"
    jwks = orjson.loads(new.jwks())["keys"]
    assert {k["kid"] for k in jwks} == {new.kid, old_tokens.kid}
    assert {(k["kty"], k["alg"]) for k in jwks} == {("EC", "ES384"), ("RSA", "RS256")}
    assert all(k["use"] == "sig" for k in jwks)


async def test_legacy_secret_tokens_live_while_their_secret_holds_them(tokens: ServiceAccountTokens) -> None:
    token = tokens.legacy_token(sa(), "robot-token")
    claims = payload(token)
    assert claims["iss"] == LEGACY_ISSUER and "exp" not in claims and "aud" not in claims
    assert claims["kubernetes.io/serviceaccount/secret.name"] == "robot-token"
    secrets = tokens.index.refs["secrets"]
    secrets[("team", "robot-token")] = _Ref("s-uid", token=token.encode())
    user, auds = await tokens.authenticate_token(token, ())
    assert user.name == "system:serviceaccount:team:robot" and auds == (ISSUER,)
    secrets[("team", "robot-token")] = _Ref("s-uid", token=b"another token")
    with pytest.raises(AuthenticationError, match="does not match server's copy"):
        await tokens.authenticate_token(token, ())
    secrets[("team", "robot-token")] = _Ref("s-uid", token=token.encode(), invalid_since="2026-01-01")
    with pytest.raises(AuthenticationError, match=f"remove the '{LABEL_INVALID_SINCE}' label"):
        await tokens.authenticate_token(token, ())
    del secrets[("team", "robot-token")]
    with pytest.raises(AuthenticationError, match="invalidated"):
        await tokens.authenticate_token(token, ())
    # A legacy token only ever serves the API audiences.
    secrets[("team", "robot-token")] = _Ref("s-uid", token=token.encode())
    with pytest.raises(AuthenticationError, match="is invalid for the target audiences"):
        await tokens.authenticate_token(token, ("vault",))


def test_openid_configuration_is_kubes_document_for_an_https_issuer(tokens: ServiceAccountTokens) -> None:
    doc = orjson.loads(tokens.openid_configuration("127.0.0.1:6443"))
    assert doc == {"issuer": ISSUER, "jwks_uri": "https://127.0.0.1:6443/openid/v1/jwks",
                   "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                   "id_token_signing_alg_values_supported": ["ES256"]}
    plain = ServiceAccountTokens(ec.generate_private_key(ec.SECP256R1()), issuers=("kapi",))
    assert plain.openid_configuration("127.0.0.1:6443") is None


async def test_a_legacy_tokens_use_is_reported_once_its_day_is_not_on_the_secret(tokens: ServiceAccountTokens) -> None:
    used: list[tuple[str, str, str]] = []
    tokens.on_legacy_use = lambda ns, name, day: used.append((ns, name, day))
    token = tokens.legacy_token(sa(), "robot-token")
    tokens.index.refs["secrets"][("team", "robot-token")] = _Ref("s-uid", token=token.encode())
    await tokens.authenticate_token(token, ())
    assert used == [("team", "robot-token", "2027-01-15")]  # NOW in UTC
    tokens.index.refs["secrets"][("team", "robot-token")] = _Ref("s-uid", token=token.encode(), last_used="2027-01-15")
    await tokens.authenticate_token(token, ())
    assert len(used) == 1


def test_the_signing_key_is_made_once_private_and_kept(tmp_path) -> None:
    from kapi.server.pki import ensure_service_account_key

    path = ensure_service_account_key(tmp_path)
    assert path == tmp_path / "pki" / "sa.key" and path.stat().st_mode & 0o777 == 0o600
    first = path.read_bytes()
    assert ensure_service_account_key(tmp_path).read_bytes() == first  # a restart keeps it: tokens stay valid
    with pytest.raises(FileNotFoundError):
        ensure_service_account_key(tmp_path, str(tmp_path / "missing.key"))


def test_the_flags_build_kubes_issuer(tmp_path) -> None:
    from kapi.config import Config
    from kapi.server.security import build_service_account_tokens

    key = ec.generate_private_key(ec.SECP256R1())
    with pytest.raises(ValueError, match="between 1 hour and 2\\^32 seconds"):
        build_service_account_tokens(Config(service_account_max_token_expiration_s=600.0), None, key)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "keys.pem"
    pem.write_bytes(other.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    tokens = build_service_account_tokens(Config(service_account_issuers=("https://a", "https://b"),
                                                 service_account_key_files=(str(pem),)), None, key)
    assert tokens.issuers == ("https://a", "https://b") and tokens.api_audiences == ("https://a", "https://b")
    assert {k["kid"] for k in orjson.loads(tokens.jwks())["keys"]} == {key_id(key.public_key()),
                                                                       key_id(other.public_key())}
    tokens = build_service_account_tokens(Config(api_audiences=("api",)), None, key)
    assert tokens.issuers == (ISSUER,) and tokens.api_audiences == ("api",)


async def test_a_token_request_names_the_issued_credential_for_audit(tokens: ServiceAccountTokens) -> None:
    from kapi.apis.core.serviceaccounts import create_token

    async def get(resource: str, namespace: str, name: str) -> dict:
        assert (resource, namespace, name) == ("serviceaccounts", "team", "robot")
        return sa()

    notes: dict[str, str] = {}
    out = await create_token(get, tokens, "team", "robot", {"spec": {}}, [], notes.__setitem__)
    jti = payload(out["status"]["token"])["jti"]
    assert notes == {"authentication.kubernetes.io/issued-credential-id": f"JTI={jti}"}
