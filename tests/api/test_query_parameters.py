"""Issue 30: integer and boolean query parameters read as kube-apiserver's url.Values conversion reads them.

kube converts each present parameter, empty or not: an int64 with ``strconv.ParseInt(s, 10, 64)``
(its error is the 400's message), a bool as true unless "0" or "false" in any case (the empty
string is true). An absent parameter keeps its default.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing

from .conftest import Api

CMS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
UNSAFE = "ignoreStoreReadErrorWithClusterBreakingPotential"


def _bad_request(message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "BadRequest", "code": 400}


def _syntax(value: str) -> dict[str, Any]:
    return _bad_request(f"strconv.ParseInt: parsing {orjson.dumps(value).decode()}: invalid syntax")


def _range(value: str) -> dict[str, Any]:
    return _bad_request(f"strconv.ParseInt: parsing {orjson.dumps(value).decode()}: value out of range")


async def _two_config_maps(api: Api) -> None:
    for name in ("a", "b"):
        assert (await api.create(CMS, {"metadata": {"name": name}})).status == 201


@pytest.mark.parametrize(("query", "status"), [
    ("limit=", _syntax("")),
    ("limit", _syntax("")),  # no "=": Go's url.ParseQuery gives the key an empty value too
    ("limit=ten", _syntax("ten")),
    ("limit=1.5", _syntax("1.5")),
    ("limit=0x10", _syntax("0x10")),
    ("limit=9223372036854775808", _range("9223372036854775808")),
    ("limit=-9223372036854775809", _range("-9223372036854775809")),
    ("timeoutSeconds=", _syntax("")),
    ("timeoutSeconds=soon", _syntax("soon")),
    ("timeoutSeconds=99999999999999999999", _range("99999999999999999999")),
    # kube converts timeoutSeconds before limit: the first refusal is timeoutSeconds'.
    ("limit=x&timeoutSeconds=y", _syntax("y")),
    ("limit=&timeoutSeconds=", _syntax("")),
    # the first value of a repeated parameter is the one converted
    ("limit=1&limit=", None),
    ("limit=&limit=1", _syntax("")),
])
async def test_list_integer_parameters(api: Api, query: str, status: dict[str, Any] | None) -> None:
    await _two_config_maps(api)
    r = await api.request("GET", f"{CMS}?{query}")
    if status is None:
        assert r.status == 200, r.body
    else:
        assert (r.status, r.json()) == (400, status)


@pytest.mark.parametrize(("query", "listed", "has_continue"), [
    ("limit=-1", 2, False),  # a negative limit is no limit
    ("limit=0", 2, False),
    ("limit=%2B1", 1, True),  # ParseInt takes a sign
    ("limit=9223372036854775807", 2, False),
    ("timeoutSeconds=-1", 2, False),  # a list has no use for it
    ("timeoutSeconds=0", 2, False),
    ("allowWatchBookmarks=", 2, False),
    ("watch=0", 2, False),
    ("watch=false", 2, False),
    ("watch=FALSE", 2, False),
    ("watch=fAlSe", 2, False),
])
async def test_list_parameters_that_convert(api: Api, query: str, listed: int, has_continue: bool) -> None:
    await _two_config_maps(api)
    r = await api.request("GET", f"{CMS}?{query}")
    assert r.status == 200, r.body
    body = r.json()
    assert body["kind"] == "ConfigMapList"
    assert (len(body["items"]), "continue" in body["metadata"]) == (listed, has_continue)


@pytest.mark.parametrize("value", ["", "1", "true", "TRUE", "yes", "no", "f"])
async def test_send_initial_events_on_a_list_is_true_for_any_value_but_false(api: Api, value: str) -> None:
    """Only "0" and "false" convert to false, and even false is a value: a list may not carry it."""
    r = await api.request("GET", f"{CMS}?sendInitialEvents={value}")
    assert r.status == 422
    assert r.json()["details"]["causes"] == [{"reason": "FieldValueForbidden", "field": "sendInitialEvents",
                                              "message": "Forbidden: sendInitialEvents is forbidden for list"}]


@pytest.mark.parametrize("value", ["", "1", "true", "yes", "no", "f"])
async def test_watch_is_true_for_any_value_but_false(api: Api, autojump_clock: trio.testing.MockClock,
                                                       value: str) -> None:
    await _two_config_maps(api)
    r = await api.request("GET", f"{CMS}?watch={value}&timeoutSeconds=5")
    assert r.status == 200, r.body
    events = [orjson.loads(line) for line in r.body.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


@pytest.mark.parametrize(("query", "status"), [
    ("timeoutSeconds=", _syntax("")),
    ("timeoutSeconds=x", _syntax("x")),
    ("timeoutSeconds=-9223372036854775809", _range("-9223372036854775809")),
    ("limit=", _syntax("")),
])
async def test_watch_integer_parameters(api: Api, autojump_clock: trio.testing.MockClock, query: str,
                                        status: dict[str, Any]) -> None:
    for path in (f"{CMS}?watch=1&{query}", f"/api/v1/watch/namespaces/default/configmaps?{query}"):
        with trio.fail_after(60):  # on the mock clock: a watch wrongly opened would run for its default
            r = await api.request("GET", path)
        assert (r.status, r.json()) == (400, status)


async def test_watch_with_a_negative_timeout_ends_at_once(api: Api, autojump_clock: trio.testing.MockClock) -> None:
    """kube: timeoutSeconds=0 is the server's default (minRequestTimeout, randomised); a negative value is a
    deadline already past, so the watch closes at once instead of running for the default half hour."""
    with trio.fail_after(60):  # on the mock clock: the default would be 1800 s or more
        r = await api.request("GET", f"{CMS}?watch=true&timeoutSeconds=-1")
    assert r.status == 200


@pytest.mark.parametrize(("query", "status"), [
    ("gracePeriodSeconds=", _syntax("")),
    ("gracePeriodSeconds", _syntax("")),
    ("gracePeriodSeconds=later", _syntax("later")),
    ("gracePeriodSeconds=9223372036854775808", _range("9223372036854775808")),
])
async def test_delete_integer_parameters(api: Api, query: str, status: dict[str, Any]) -> None:
    await _two_config_maps(api)
    r = await api.request("DELETE", f"{CMS}/a?{query}")
    assert (r.status, r.json()) == (400, status)
    assert (await api.request("GET", f"{CMS}/a")).status == 200


@pytest.mark.parametrize("query", ["gracePeriodSeconds=-1", "gracePeriodSeconds=0", "gracePeriodSeconds=%2B30"])
async def test_delete_grace_periods_that_convert(api: Api, query: str) -> None:
    await _two_config_maps(api)
    r = await api.request("DELETE", f"{CMS}/a?{query}")
    assert r.status == 200, r.body
    assert (await api.request("GET", f"{CMS}/a")).status == 404


@pytest.mark.parametrize(("value", "orphan"), [
    ("", True), ("1", True), ("true", True), ("TRUE", True), ("yes", True), ("t", True),
    ("0", False), ("false", False), ("False", False), ("FALSE", False),
])
async def test_orphan_dependents_is_true_for_any_value_but_false(api: Api, value: str, orphan: bool) -> None:
    """orphanDependents=true leaves the object with the orphan finalizer for the garbage collector."""
    await _two_config_maps(api)
    r = await api.request("DELETE", f"{CMS}/a?orphanDependents={value}")
    assert r.status == 200, r.body
    body = r.json()
    if orphan:
        assert body["kind"] == "ConfigMap" and body["metadata"]["finalizers"] == ["orphan"]
    else:
        assert (body["kind"], body["status"]) == ("Status", "Success")


@pytest.mark.parametrize("value", ["", "maybe", "0", "false"])
async def test_orphan_dependents_of_any_value_with_a_propagation_policy_is_invalid(api: Api, value: str) -> None:
    await _two_config_maps(api)
    r = await api.request("DELETE", f"{CMS}/a?orphanDependents={value}&propagationPolicy=Background")
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["message"] == (
        'Invalid value: "Background": orphanDependents and deletionPropagation cannot be both set')


@pytest.mark.parametrize(("value", "code"), [("", 422), ("maybe", 422), ("True", 422), ("0", 200), ("FALSE", 200)])
async def test_unsafe_delete_option_is_true_for_any_value_but_false(api: Api, value: str, code: int) -> None:
    """True on a readable object is refused: the option is only for objects that cannot be read."""
    await _two_config_maps(api)
    r = await api.request("DELETE", f"{CMS}/a?{UNSAFE}={value}")
    assert r.status == code, r.body
    if code == 422:
        assert "is exclusively used to delete corrupt object(s)" in r.json()["message"]


@pytest.mark.parametrize(("query", "status"), [
    ("limit=&gracePeriodSeconds=x", _syntax("")),  # the list options are converted first
    ("timeoutSeconds=y&gracePeriodSeconds=x", _syntax("y")),
    ("gracePeriodSeconds=x", _syntax("x")),
])
async def test_deletecollection_converts_list_options_before_delete_options(api: Api, query: str,
                                                                           status: dict[str, Any]) -> None:
    await _two_config_maps(api)
    r = await api.request("DELETE", f"{CMS}?{query}")
    assert (r.status, r.json()) == (400, status)
    assert len((await api.request("GET", CMS)).json()["items"]) == 2


@pytest.mark.parametrize(("value", "forced"), [
    ("", True), ("yes", True), ("1", True), ("True", True), ("0", False), ("false", False), ("FALSE", False),
])
async def test_apply_force_is_true_for_any_value_but_false(api: Api, value: str, forced: bool) -> None:
    first = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"one"}}'
    second = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"two"}}'
    r = await api.request("PATCH", f"{CMS}/c?fieldManager=first", first, content_type=APPLY)
    assert r.status == 201, r.body
    r = await api.request("PATCH", f"{CMS}/c?fieldManager=second&force={value}", second, content_type=APPLY)
    if forced:
        assert r.status == 200, r.body
        assert r.json()["data"] == {"k": "two"}
    else:
        assert r.status == 409, r.body
        assert r.json()["reason"] == "Conflict"


async def test_list_options_refusals_are_kubes_field_errors_all_at_once(api: Api) -> None:
    """After conversion, kube's ValidateListOptions: every refusal, each as field.Forbidden/NotSupported words it."""
    r = await api.request("GET", f"{CMS}?resourceVersionMatch=Sometimes&sendInitialEvents=false")
    assert r.status == 422
    body = r.json()
    forbidden = "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    unsupported = 'Unsupported value: "Sometimes": supported values: "Exact", "NotOlderThan", ""'
    sie = "Forbidden: sendInitialEvents is forbidden for list"
    assert body["message"] == (f'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: {forbidden}, '
                               f'resourceVersionMatch: {unsupported}, sendInitialEvents: {sie}]')
    assert body["details"]["causes"] == [
        {"reason": "FieldValueForbidden", "message": forbidden, "field": "resourceVersionMatch"},
        {"reason": "FieldValueNotSupported", "message": unsupported, "field": "resourceVersionMatch"},
        {"reason": "FieldValueForbidden", "message": sie, "field": "sendInitialEvents"},
    ]
    r = await api.request("GET", f"{CMS}?watch=1&resourceVersionMatch=Exact")
    assert r.status == 422
    assert [c["message"] for c in r.json()["details"]["causes"]] == [
        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        'Unsupported value: "Exact": supported values: "NotOlderThan"',
    ]
