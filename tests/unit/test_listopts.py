"""List options validation and continue tokens (SEMANTICS §1.1, §1.3)."""

from __future__ import annotations

import base64

import orjson
import pytest

from kapi import errors
from kapi.chain.context import new_request_info
from kapi.object.listopts import decode_continue, encode_continue, parse_list_options


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


@pytest.mark.parametrize(("query", "message"), [
    ({"limit": "99999999999999999999999"},
     'strconv.ParseInt: parsing "99999999999999999999999": value out of range'),
    ({"limit": "9223372036854775808"}, 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
    ({"timeoutSeconds": "4" * 400}, f'strconv.ParseInt: parsing "{"4" * 400}": value out of range'),
    ({"timeoutSeconds": "-9223372036854775809"},
     'strconv.ParseInt: parsing "-9223372036854775809": value out of range'),
    ({"limit": "ten"}, 'strconv.ParseInt: parsing "ten": invalid syntax'),
    ({"limit": " 5"}, 'strconv.ParseInt: parsing " 5": invalid syntax'),
    ({"limit": "1_000"}, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
    ({"timeoutSeconds": "\u0661\u0662"}, 'strconv.ParseInt: parsing "\u0661\u0662": invalid syntax'),
])
def test_integer_parameters_are_int64_or_400(query: dict[str, str], message: str) -> None:
    """Issue 10: out-of-range limit/timeoutSeconds were 500s (OverflowError in SQLite, in the deadline)."""
    with pytest.raises(errors.BadRequest) as exc:
        parse_list_options(query)
    assert exc.value.message == message


def test_integer_parameters_at_the_int64_bounds() -> None:
    """Issue 10: the int64 extremes themselves parse, as Go's ParseInt takes them."""
    assert parse_list_options({"limit": "9223372036854775807"}).limit == 2**63 - 1
    assert parse_list_options({"limit": "+7"}).limit == 7
    assert parse_list_options({"limit": "-3"}).limit == 0
    assert parse_list_options({"timeoutSeconds": "-9223372036854775808"}).timeout_seconds == -2**63


def test_resource_version_beyond_uint64_is_400() -> None:
    """Issue 10: kube's storage parses resourceVersion with ParseUint(s, 10, 64)."""
    assert parse_list_options({"resourceVersion": str(2**64 - 1)}).resource_version == str(2**64 - 1)
    with pytest.raises(errors.BadRequest) as exc:
        parse_list_options({"resourceVersion": str(2**64)})
    assert "value out of range" in exc.value.message


def test_continue_token_revision_beyond_int64_is_400() -> None:
    """Issue 10: the token's rv is an int64 in kube; a larger one must not reach storage."""
    raw = b'{"v":"meta.k8s.io/v1","rv":18446744073709551615,"start":"a"}'
    with pytest.raises(errors.BadRequest):
        decode_continue(base64.urlsafe_b64encode(raw).decode().rstrip("="))


@pytest.mark.parametrize(("value", "want"), [("true", True), ("t", True), ("yes", True), ("2", True), ("", True),
                                             ("True", True), ("0", False), ("false", False), ("FALSE", False),
                                             ("False", False)])
def test_bool_parameters_read_as_kube_reads_them(value: str, want: bool) -> None:
    """Issue 10 (found by the fuzz suite): watch=t answered a LIST; kube's Convert_Slice_string_To_bool
    takes anything but "0" or "false" in any case as true."""
    opts = parse_list_options({"watch": value, "allowWatchBookmarks": value})
    assert (opts.watch, opts.allow_watch_bookmarks) == (want, want)
    assert parse_list_options({}).watch is False
    assert new_request_info("GET", "/api/v1/configmaps", {"watch": value}).verb == ("watch" if want else "list")
