"""Requests shared by the ports of kube-apiserver's server-side apply integration tests."""

from __future__ import annotations

from typing import Any

import orjson

from .conftest import Api, Reply

APPLY = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


# kube's integration tests run a client with a User-Agent: a write without fieldManager is its manager's
UA = {"user-agent": "apply-test/v0.0.0"}


def _query(path: str, **params: str) -> str:
    q = "&".join(f"{k}={v}" for k, v in params.items() if v)
    if not q:
        return path
    return path + ("&" if "?" in path else "?") + q


async def apply(api: Api, path: str, body: Any, manager: str | None = "apply_test", *,
                force: bool = False) -> Reply:
    """PATCH ``path`` with an apply body (a JSON text is valid YAML) as ``manager``."""
    raw = body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else orjson.dumps(body))
    url = _query(path, fieldManager=manager or "", force="true" if force else "")
    return await api.request("PATCH", url, raw, content_type=APPLY, headers=UA)


async def patch(api: Api, path: str, body: Any, content_type: str = MERGE_PATCH, manager: str | None = None) -> Reply:
    url = _query(path, fieldManager=manager or "")
    return await api.request("PATCH", url, body, content_type=content_type, headers=UA)


async def put(api: Api, path: str, body: Any, manager: str | None = None) -> Reply:
    return await api.request("PUT", _query(path, fieldManager=manager or ""), body, headers=UA)


async def get(api: Api, path: str) -> dict[str, Any]:
    r = await api.request("GET", path)
    assert r.status == 200, r.body
    return r.json()  # type: ignore[no-any-return]


def ok(r: Reply, *codes: int) -> dict[str, Any]:
    """The reply's object, asserting its status is one of ``codes`` (200 or 201 by default)."""
    assert r.status in (codes or (200, 201)), (r.status, r.body)
    return r.json()  # type: ignore[no-any-return]


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """``metadata.managedFields`` without the times, for comparison with kube's expectations."""
    return [{k: v for k, v in e.items() if k != "time"} for e in obj["metadata"].get("managedFields") or []]
