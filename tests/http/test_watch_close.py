"""Closing a watch leaves trio's cancel scopes intact (issue 10: "Cancel scope stack corrupted")."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio

from .conftest import TOKEN, Api


async def _watch(api: Api, query: str, *, disconnect_after: int | None) -> list[dict[str, Any]]:
    """Drive one watch through the ASGI app; the client leaves after ``disconnect_after`` body messages."""
    scope = {"type": "http", "method": "GET", "path": "/api/v1/namespaces/default/configmaps",
             "query_string": query.encode(), "http_version": "1.1", "scheme": "https",
             "headers": [(b"authorization", f"Bearer {TOKEN}".encode())]}
    out: list[dict[str, Any]] = []
    gone = trio.Event()
    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)
        bodies = sum(1 for m in out if m["type"] == "http.response.body")
        if disconnect_after is not None and bodies >= disconnect_after:
            gone.set()
        await trio.sleep(0)  # a real server's send waits on the socket: the watch can end during it

    await api.app(scope, receive, send)
    return out


@pytest.mark.parametrize("how", ["client leaves", "timeoutSeconds ends it", "server shuts down"])
async def test_closing_watches_corrupts_no_cancel_scope(api: Api, caplog: pytest.LogCaptureFixture,
                                                        autojump_clock: trio.testing.MockClock, how: str) -> None:
    """Issue 10: every way a watch ends closes its stream without a cancel scope crossing a yield."""
    for i in range(3):
        r = await api.create("/api/v1/namespaces/default/configmaps",
                             {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v"}})
        assert r.status == 201
    caplog.set_level(logging.DEBUG)
    for _ in range(20):
        async with trio.open_nursery() as nursery:
            if how == "client leaves":
                out = await _watch(api, "watch=true", disconnect_after=2)
            elif how == "timeoutSeconds ends it":
                out = await _watch(api, "watch=true&timeoutSeconds=5", disconnect_after=None)
            else:
                async def close_soon() -> None:
                    await trio.sleep(1)
                    api.app.closing.set()
                nursery.start_soon(close_soon)
                out = await _watch(api, "watch=true", disconnect_after=None)
                api.app.closing = trio.Event()
        assert out[0]["status"] == 200
        assert sum(m.get("body", b"").count(b'"ADDED"') for m in out[1:]) >= 1
        if how != "client leaves":
            assert out[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    corrupted = [r for r in caplog.records if "cancel scope" in r.getMessage().lower()
                 or "cancel scope" in str(r.exc_info).lower()]
    assert corrupted == []
