"""Shared fixtures: a memory backend, a registry and a started pod watch cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

import orjson
import pytest
import trio

from kapi.encoding import codec
from kapi.cacher.cache import Cacher
from kapi.cacher.store import Entry
from kapi.metrics import Metrics
from kapi.apis import BUILTIN
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry
from kapi.storage.memory import MemoryStorage

NODE_INDEX = ("spec.nodeName",)


@dataclass
class Env:
    """A running memory backend, a registry over it and the pods cacher, with write helpers."""

    storage: MemoryStorage
    registry: Registry
    res: Resource
    cacher: Cacher
    revisions: dict[str, int] = field(default_factory=dict)  # key -> its current revision

    def key(self, namespace: str, name: str) -> str:
        return self.registry.key(self.res, namespace, name)

    def pod(self, namespace: str, name: str, node: str = "", labels: dict[str, str] | None = None,
            phase: str = "Pending") -> dict[str, Any]:
        md: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
        if labels:
            md["labels"] = dict(labels)
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
        if node:
            spec["nodeName"] = node
        return {"kind": "Pod", "apiVersion": "v1", "metadata": md, "spec": spec, "status": {"phase": phase}}

    async def put(self, namespace: str, name: str, node: str = "", labels: dict[str, str] | None = None,
                  phase: str = "Pending") -> int:
        """Create the pod, or replace it if it exists; the new revision."""
        key = self.key(namespace, name)
        value = codec.encode_value(self.pod(namespace, name, node, labels, phase))
        if key in self.revisions:
            rev = await self.storage.update(key, value, self.revisions[key])
        else:
            rev = await self.storage.create(key, value)
        self.revisions[key] = rev
        return rev

    async def delete(self, namespace: str, name: str) -> int:
        key = self.key(namespace, name)
        rev, _ = await self.storage.delete(key, self.revisions.pop(key))
        return rev

    async def synced(self) -> int:
        """Wait until the cacher has seen every write; the storage revision."""
        rev = await self.storage.current_revision()
        await self.cacher.wait_for_rv(rev)
        return rev

    def sample(self, name: str, **labels: str) -> float:
        """A metric sample value (0 when never set)."""
        value = self.registry.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


MakeEnv = Callable[..., Awaitable[Env]]


def names(items: Sequence[Entry]) -> list[str]:
    """``namespace/name`` of each list item (the entries' JSON), in order."""
    out = []
    for entry in items:
        md = orjson.loads(entry.data)["metadata"]
        out.append(f"{md.get('namespace', '')}/{md['name']}")
    return out


def line_objects(data: bytes) -> list[dict[str, Any]]:
    """The watch events of newline-delimited JSON."""
    return [orjson.loads(line) for line in data.split(b"\n") if line]


@pytest.fixture
def make_env(nursery: trio.Nursery) -> MakeEnv:
    """Start storage (and, unless ``start=False``, the cacher) with the given cache options."""

    async def make(*, capacity: int = 100, indexed_fields: tuple[str, ...] = NODE_INDEX, start: bool = True,
                   storage: MemoryStorage | None = None, **storage_options: Any) -> Env:
        if storage is None:
            storage = MemoryStorage(**storage_options)
            await nursery.start(storage.run)
        registry = Registry(storage, ResourceTable(BUILTIN), metrics=Metrics())
        res = registry.table.get("", "v1", "pods")
        assert res is not None
        cacher = registry.make_cacher(res, capacity=capacity, indexed_fields=indexed_fields)
        env = Env(storage, registry, res, cacher)
        if start:
            await nursery.start(cacher.run)
        return env

    return make


@pytest.fixture
async def env(make_env: MakeEnv) -> Env:
    """A started pods cacher (capacity 100, indexed on spec.nodeName) over an empty memory backend."""
    return await make_env()

