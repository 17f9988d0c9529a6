"""List options validation and continue tokens (SEMANTICS §1.1, §1.3)."""

from __future__ import annotations

import base64

import orjson
import pytest

from kapi import errors
from kapi.listopts import decode_continue, encode_continue, parse_list_options


def test_continue_token_format_matches_kube_apiserver() -> None:
    token = encode_continue(42, "/registry/pods/default/web-1\x00", "/registry/pods/")
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    assert orjson.loads(raw) == {"v": "meta.k8s.io/v1", "rv": 42, "start": "default/web-1\x00"}
    assert "=" not in token
    decoded = decode_continue(token)
    assert decoded.revision == 42 and decoded.start == "default/web-1\x00"


@pytest.mark.parametrize("token", [
    "garbage!!",
    base64.urlsafe_b64encode(b'{"v":"other","rv":1,"start":"a"}').decode(),
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":0,"start":"a"}').decode(),
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":5,"start":""}').decode(),
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":5,"start":"../../secrets/x"}').decode(),
    base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":5,"start":"default/./x"}').decode(),
])
def test_tampered_tokens_are_400(token: str) -> None:
    with pytest.raises(errors.BadRequest):
        decode_continue(token)


def test_resource_version_match_rules() -> None:
    with pytest.raises(errors.Invalid) as exc:
        parse_list_options({"resourceVersionMatch": "NotOlderThan"})
    assert exc.value.kind == "ListOptions" and exc.value.group == "meta.k8s.io"
    with pytest.raises(errors.Invalid):
        parse_list_options({"resourceVersion": "0", "resourceVersionMatch": "Exact"})
    with pytest.raises(errors.Invalid):
        parse_list_options({"resourceVersion": "5", "resourceVersionMatch": "Sometimes"})
    with pytest.raises(errors.Invalid):
        parse_list_options({"sendInitialEvents": "true"})
    with pytest.raises(errors.BadRequest):
        parse_list_options({"resourceVersion": "5", "continue": "abc"})
    with pytest.raises(errors.BadRequest):
        parse_list_options({"resourceVersion": "x"})
    opts = parse_list_options({"resourceVersion": "7", "resourceVersionMatch": "Exact", "limit": "10"})
    assert opts.limit == 10 and opts.resource_version == "7"


def test_watch_flag_spellings() -> None:
    for v in ("1", "true", "True"):
        assert parse_list_options({"watch": v}).watch
    assert not parse_list_options({"watch": "false"}).watch
