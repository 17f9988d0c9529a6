"""Backend fixtures: every contract test runs once per backend factory listed here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
import trio

from kapi.storage.base import Storage
from kapi.storage.memory import MemoryStorage
from kapi.storage.sqlite import SqliteStorage

BackendFactory = Callable[..., Storage]  # (directory, **options) -> a backend not yet running
StartStorage = Callable[..., Awaitable[Storage]]


def memory_backend(directory: Path, **options: Any) -> Storage:
    """A fresh in-memory backend (``directory`` unused)."""
    return MemoryStorage(**options)


def sqlite_backend(directory: Path, **options: Any) -> Storage:
    """A SQLite backend on a file in ``directory``."""
    return SqliteStorage(str(directory / "kapi.db"), **options)


# A new backend (etcd3) joins the contract suite by adding its factory here,
# marked to skip when its server is not available.
BACKENDS = [
    pytest.param(memory_backend, id="memory"),
    pytest.param(sqlite_backend, id="sqlite"),
]


@pytest.fixture(params=BACKENDS)
def backend_factory(request: pytest.FixtureRequest) -> BackendFactory:
    """The factory of the backend under test."""
    factory: BackendFactory = request.param
    return factory


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
