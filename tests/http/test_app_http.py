"""The HTTP layer through the ASGI app (issue 10): headers, methods, upgrades, bodies, query integers."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio

from .conftest import TOKEN, Api

CM = "/api/v1/namespaces/default/configmaps"


def _status(body: bytes) -> dict[str, Any]:
    status = orjson.loads(body)
    assert status["kind"] == "Status" and status["status"] == "Failure"
    return status


async def test_first_authorization_header_wins(api: Api) -> None:
    """Issue 10: with two Authorization headers Go's Header.Get takes the first; kapi took the last."""
    base = {"type": "http", "method": "GET", "path": CM, "query_string": b"", "http_version": "1.1",
            "scheme": "https"}
    good, bad = f"Bearer {TOKEN}".encode(), b"Bearer not-a-token"
    for first, second, want in ((good, bad, 200), (bad, good, 401)):
        scope = dict(base, headers=[(b"authorization", first), (b"authorization", second)])
        status, _, body = await _call(api, scope)
        assert status == want, body


@pytest.mark.parametrize("header", ["Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"])
async def test_impersonation_headers_without_a_user_are_refused(api: Api, header: str) -> None:
    """Issue 10: impersonation headers were silently ignored. Issue 12: impersonation exists; a group,
    uid or extra without Impersonate-User is kube's "without impersonating a user" (a 400 here: it is
    the client's mistake, kube's 500 is not followed)."""
    r = await api.request("GET", CM, headers={header: "alice"})
    assert r.status == 400
    status = _status(r.body)
    assert status["reason"] == "BadRequest" and status["code"] == 400
    assert "without impersonating a user" in status["message"]
    assert (await api.request("GET", CM)).status == 200


async def test_impersonate_user_acts_as_that_user(api: Api) -> None:
    """Issue 12: the admin (system:masters) impersonating alice is alice, in system:authenticated."""
    r = await api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                          headers={"Impersonate-User": "alice", "Impersonate-Extra-Scopes": "view"})
    assert r.status == 201, r.body
    info = orjson.loads(r.body)["status"]["userInfo"]
    assert info["username"] == "alice" and info["groups"] == ["system:authenticated"]
    assert info["extra"] == {"scopes": ["view"]}


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_watch_paths_allow_only_get(api: Api, method: str) -> None:
    """Issue 10: POST/PUT/DELETE on /api/v1/watch/... opened a watch; kube answers 405."""
    r = await api.request(method, "/api/v1/watch/namespaces/default/configmaps", {"metadata": {"name": "x"}})
    assert r.status == 405
    status = _status(r.body)
    assert status["reason"] == "MethodNotAllowed" and status["code"] == 405


async def _call(api: Api, scope: dict[str, Any], first: dict[str, Any] | None = None) -> tuple[int, list, bytes]:
    sent = False
    out: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return first or {"type": "http.request", "body": b"", "more_body": False}
        await trio.sleep_forever()  # the client stays until the answer is sent
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    await api.app(scope, receive, send)
    assert out, "the app answered nothing"
    return out[0]["status"], out[0]["headers"], b"".join(m.get("body", b"") for m in out[1:])


async def _upgrade(api: Api, path: str, query: bytes = b"") -> tuple[int, dict[bytes, bytes], bytes, list[str]]:
    """A WebSocket upgrade request as hypercorn hands it to the app."""
    scope = {"type": "websocket", "path": path, "query_string": query, "http_version": "1.1", "scheme": "wss",
             "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"upgrade", b"websocket"),
                         (b"connection", b"Upgrade")],
             "subprotocols": ["v5.channel.k8s.io"], "extensions": {"websocket.http.response": {}}}
    out: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    await api.app(scope, receive, send)
    types = [m["type"] for m in out]
    assert types[0] == "websocket.http.response.start", types
    return out[0]["status"], dict(out[0]["headers"]), b"".join(m.get("body", b"") for m in out[1:]), types


async def test_websocket_upgrade_gets_a_status_not_an_empty_500(api: Api) -> None:
    """Issue 10: an upgrade request answered 500 with an empty body on every path."""
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert (await api.create("/api/v1/namespaces/default/pods", pod)).status == 201
    cases = [
        ("/api/v1/namespaces/default/pods/missing/exec", 404, "NotFound"),
        ("/api/v1/namespaces/default/pods/web/exec", 404, "NotFound"),
        ("/api/v1/namespaces/default/pods/web/attach", 404, "NotFound"),
        ("/api/v1/namespaces/default/pods/web/portforward", 404, "NotFound"),
        ("/api/v1/namespaces/default/nosuchthings", 404, "NotFound"),
        ("/no/such/path", 404, "NotFound"),
    ]
    for path, code, reason in cases:
        status, headers, body, types = await _upgrade(api, path)
        assert (status, types[-1]) == (code, "websocket.http.response.body"), (path, body)
        assert headers[b"content-type"] == b"application/json"
        assert int(headers[b"content-length"]) == len(body)
        got = _status(body)
        assert (got["code"], got["reason"]) == (code, reason), path
    # What a GET answers, an upgrade request that no handler upgrades gets too.
    status, _, body, _ = await _upgrade(api, "/api/v1/namespaces/default/pods/web")
    assert status == 200 and orjson.loads(body)["metadata"]["name"] == "web"
    # A watch would be a stream: refused, its watcher closed.
    status, _, body, _ = await _upgrade(api, "/api/v1/namespaces/default/pods", b"watch=true")
    assert status == 400 and "WebSocket" in _status(body)["message"]


async def test_json_bodies_end_with_a_newline(api: Api) -> None:
    """Issue 10: Go's json.Encoder ends every JSON body with a newline; kapi's had none."""
    created = await api.create(CM, {"metadata": {"name": "nl"}, "data": {"k": "v"}})
    assert created.status == 201 and created.body.endswith(b"}\n") and created.body.count(b"\n") == 1
    got = await api.request("GET", f"{CM}/nl")
    assert got.body.endswith(b"}\n")
    listed = await api.request("GET", CM)
    assert listed.body.endswith(b"]}\n") and int(listed.headers["content-length"]) == len(listed.body)
    assert orjson.loads(listed.body)["items"][0]["metadata"]["name"] == "nl"
    missing = await api.request("GET", f"{CM}/nope")
    assert missing.status == 404 and missing.body.endswith(b"}\n")
    table = await api.request("GET", CM, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert table.body.endswith(b"}\n") and orjson.loads(table.body)["kind"] == "Table"
    deleted = await api.request("DELETE", f"{CM}/nl")
    assert deleted.status == 200 and deleted.body.endswith(b"}\n")


@pytest.mark.parametrize("query", ["limit=99999999999999999999999", "timeoutSeconds=" + "9" * 400 + "&watch=true",
                                   "watch=true&timeoutSeconds=1e3", "resourceVersion=" + "9" * 30,
                                   "limit=9223372036854775808"])
async def test_out_of_range_integers_are_400_not_500(api: Api, query: str) -> None:
    """Issue 10: limit=99999999999999999999999 on events was an OverflowError into SQLite (500)."""
    for path in ("/api/v1/namespaces/default/events", CM):
        r = await api.request("GET", f"{path}?{query}")
        assert r.status == 400, (path, query, r.body[:300])
        assert _status(r.body)["reason"] == "BadRequest"


async def test_a_body_sent_too_slowly_gets_504(api: Api, autojump_clock: trio.testing.MockClock) -> None:
    """Issue 10: a request body that never finishes arriving held its connection forever (slow POST)."""
    scope = {"type": "http", "method": "POST", "path": CM, "query_string": b"", "http_version": "1.1",
             "scheme": "https", "headers": [(b"authorization", f"Bearer {TOKEN}".encode()),
                                           (b"content-type", b"application/json")]}
    parts = [b'{"metadata":', b'{"name":"slow"}']

    async def receive() -> dict[str, Any]:
        if parts:
            return {"type": "http.request", "body": parts.pop(0), "more_body": True}
        await trio.sleep_forever()  # ... and the rest never comes
        raise AssertionError("unreachable")

    out: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        out.append(message)

    with trio.fail_after(api.app.chain.request_timeout_s * 2):
        await api.app(scope, receive, send)
    assert out[0]["status"] == 504
    status = _status(b"".join(m.get("body", b"") for m in out[1:]))
    assert (status["reason"], status["code"]) == ("Timeout", 504)
    assert (await api.request("GET", f"{CM}/slow")).status == 404


@pytest.mark.parametrize("name", [b"\\u20ac", b"\xe2\x82\xac", b"a\\u000bb", b"x\\ny"])
async def test_warning_headers_carry_any_field_name(api: Api, name: bytes) -> None:
    """Issue 10 (found by the fuzz suite): a Warning naming an unknown field "\u20ac" failed to encode as
    latin-1 (500, empty body); one with a control character made h11 refuse the header. Go writes
    header values as UTF-8 and turns line breaks into spaces."""
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"%s":1}' % name
    r = await api.request("POST", CM, body)
    assert r.status == 201, r.body[:300]
    warnings = [v for k, v in r.raw_headers if k == "warning"]
    assert warnings and "unknown field" in warnings[0]
    assert not any(c in warnings[0] for c in "\n\r\x0b")
