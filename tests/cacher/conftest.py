"""Shared fixtures: a backend, a registry and a started pod watch cache.

Every test that takes ``backend`` (``env`` and ``make_env`` do) runs on each backend: memory, SQLite
and etcd3 (marked e2e). The etcd tests of one module share one etcd, emptied before each; a test
on trio's virtual clock runs on memory alone (the clock would jump over real I/O).

The tests' etcd is 3.5.1, older than kube's 3.5.13 for consistent reads from a cache: EtcdStorage
says so, and a watch cache then hands consistent LISTs to storage (test_consistent_reads checks
that). Here it is taken as a newer etcd, so that the cache's own consistent reads, and its waits
on RequestProgress answers (which EtcdStorage orders with events itself), are tested over etcd too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, Sequence

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
from kapi.storage.base import Storage
from kapi.storage.etcd3.client import EtcdClient
from kapi.storage.etcd3.store import EtcdStorage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage
from tests.conftest import require_e2e
from tests.storage.etcd_support import EtcdCluster, etcd_binary

NODE_INDEX = ("spec.nodeName",)
BACKENDS = ["memory", "sqlite", pytest.param("etcd3", marks=pytest.mark.e2e)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    chosen = any(m.args[0] == "backend" for m in metafunc.definition.iter_markers("parametrize"))
    if "backend" in metafunc.fixturenames and not chosen:
        virtual_clock = "autojump_clock" in metafunc.fixturenames or "mock_clock" in metafunc.fixturenames
        metafunc.parametrize("backend", ["memory"] if virtual_clock else BACKENDS, indirect=True)


class NewerEtcdStorage(EtcdStorage):
    """EtcdStorage taken as over an etcd that serves consistent reads from a cache (see above)."""

    consistent_reads_from_cache = True  # type: ignore[assignment]


@dataclass(frozen=True)
class Backend:
    """How a test gets its storage: ``make()`` a backend not yet running."""

    name: str
    make: Callable[[], Storage]


@pytest.fixture(scope="module")
def shared_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The endpoints of one etcd for the module's etcd3 tests."""
    require_e2e("a real etcd")
    with EtcdCluster(1, tmp_path_factory.mktemp("etcd"), binary=etcd_binary()) as cluster:
        yield cluster.endpoints


async def emptied(endpoints: list[str]) -> list[str]:
    """``endpoints``, once their etcd holds no key (its revision goes on)."""
    async with EtcdClient(endpoints) as client:
        await client.delete_range(b"\x00", b"\x00")
    return endpoints


@pytest.fixture
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The backend under test (parametrized by ``pytest_generate_tests``; "etcd3-as-is": EtcdStorage itself)."""
    name = request.param
    if name == "memory":
        return Backend(name, MemoryStorage)
    if name == "sqlite":
        return Backend(name, partial(SqliteStorage, str(tmp_path / "kapi.db")))
    endpoints = await emptied(request.getfixturevalue("shared_etcd"))
    store = EtcdStorage if name == "etcd3-as-is" else NewerEtcdStorage
    return Backend(name, partial(store, endpoints))


@dataclass
class Env:
    """A running backend, a registry over it and the pods cacher, with write helpers."""

    storage: Storage
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
def make_env(nursery: trio.Nursery, backend: Backend) -> MakeEnv:
    """Start the backend (or take ``storage``) and, unless ``start=False``, the cacher, with the given cache options."""

    async def make(*, capacity: int = 100, indexed_fields: tuple[str, ...] = NODE_INDEX, start: bool = True,
                   storage: Storage | None = None) -> Env:
        if storage is None:
            storage = backend.make()
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
    """A started pods cacher (capacity 100, indexed on spec.nodeName) over an empty backend."""
    return await make_env()

