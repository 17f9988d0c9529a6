"""The cacher wraps storage behind the storage protocol, and stays below encoding and HTTP (issue 11)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from kapi.cacher.cache import Cacher
from kapi.encoding import listitems
from kapi.object.listopts import ListOptions
from kapi.storage.base import Storage

from .conftest import Env

CACHER = Path(__file__).resolve().parents[2] / "kapi" / "cacher"
# What the cacher must not import: wire formats and schema are the encoding layer's, requests the API's.
FORBIDDEN = ("kapi.encoding", "kapi.object.schema", "kapi.api", "kapi.chain", "kapi.registry", "hypercorn",
             "orjson")


def _protocol_methods() -> dict[str, object]:
    return {name: member for name, member in vars(Storage).items()
            if not name.startswith("_") and callable(member)}


def test_cacher_has_every_storage_method_with_the_same_calling_convention() -> None:
    """Issue 11: the registry can ask a cacher or a backend the same questions."""
    methods = _protocol_methods()
    assert {"get_list", "current_revision", "watch", "list"} <= set(methods)
    for name, proto in methods.items():
        mine = getattr(Cacher, name, None)
        assert mine is not None, f"Cacher lacks {name}"
        assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(proto), name
        assert list(inspect.signature(mine).parameters) == list(inspect.signature(proto).parameters), name


def test_cacher_imports_no_encoding_schema_or_http() -> None:
    """Issue 11: the cacher hands out entries and events; bytes on the wire are made above it."""
    for path in sorted(CACHER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(FORBIDDEN), f"{path.name} imports {name}"


async def test_writes_and_reads_pass_through_to_the_wrapped_storage(env: Env) -> None:
    key = env.key("a", "p1")
    await env.put("a", "p1")
    assert (await env.cacher.get(key)).revision == env.revisions[key]
    assert await env.cacher.current_revision() == await env.storage.current_revision()
    assert await env.cacher.count(env.registry.prefix(env.res, "a")) == 1
    page = await env.cacher.list(env.registry.prefix(env.res, ""))
    assert [kv.key for kv in page.items] == [key]


async def test_uncached_list_asks_storage_by_the_same_protocol(env: Env) -> None:
    """Issue 11: without a cacher the registry calls storage's get_list, counted as uncached."""
    await env.put("a", "p1")
    del env.registry.cachers[(env.res.group, env.res.resource)]
    page = await env.registry.list(env.res, "", ListOptions(limit=5))
    assert page.source == "storage"
    assert [o["metadata"]["name"] for o in listitems.objects(page.items)] == ["p1"]
    assert env.sample("kapi_storage_list_total", group="", resource="pods", reason="uncached") == 1
