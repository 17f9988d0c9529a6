"""Backend fixtures: every contract test runs once per backend factory listed here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
import trio

from kapi.storage.base import Storage
from kapi.storage.etcd3.store import EtcdStorage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage
from tests.storage.etcd_support import etcd_cluster

BackendFactory = Callable[..., Storage]  # (directory, **options) -> a backend not yet running
StartStorage = Callable[..., Awaitable[Storage]]


def memory_backend(directory: Path, **options: Any) -> Storage:
    """A fresh in-memory backend (``directory`` unused)."""
    return MemoryStorage(**options)


def sqlite_backend(directory: Path, **options: Any) -> Storage:
    """A SQLite backend on a file in ``directory``."""
    return SqliteStorage(str(directory / "kapi.db"), **options)


def etcd3_backend(directory: Path, *, endpoints: list[str], **options: Any) -> Storage:
    """An etcd3 backend on the etcd at ``endpoints`` (``directory`` unused: etcd keeps the data)."""
    return EtcdStorage(endpoints, **options)


# A backend whose server is a real process is marked e2e (etcd_support skips it when etcd is not
# installed); its factory gets the server's endpoints from ``backend_factory``.
BACKENDS = [
    pytest.param(memory_backend, id="memory"),
    pytest.param(sqlite_backend, id="sqlite"),
    pytest.param(etcd3_backend, id="etcd3", marks=pytest.mark.e2e),
]


@pytest.fixture(params=BACKENDS)
async def backend_factory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BackendFactory]:
    """The factory of the backend under test (for etcd3: over a fresh 1-member etcd, stopped after)."""
    factory: BackendFactory = request.param
    if factory is not etcd3_backend:
        yield factory
        return
    async with etcd_cluster(tmp_path, members=1) as cluster:
        yield partial(etcd3_backend, endpoints=cluster.endpoints)


@pytest.fixture
def start_storage(nursery: trio.Nursery, backend_factory: BackendFactory, tmp_path: Path) -> StartStorage:
    """Start the backend under test (with options) in the test's nursery."""

    async def start(**options: Any) -> Storage:
        backend = backend_factory(tmp_path, **options)
        await nursery.start(backend.run)
        return backend

    return start


@pytest.fixture
async def storage(start_storage: StartStorage) -> Storage:
    """The backend under test, running with default options."""
    return await start_storage()
