"""``RoutedStorage``: the ``Storage`` protocol over several backends, each owning the keys under some prefixes.

kube-apiserver's ``--etcd-servers-overrides group/resource#servers``: a resource's objects live in
another etcd cluster than the rest. Keys follow the registry's layout ``<root>/<resource prefix>/...``
(``kapi.object.meta``), so a resource is a key prefix (``/registry/events/``) and a backend owns it.
Every call with a key or a prefix goes to the backend owning it: the one whose prefix is the longest
that the key starts with, else the default. A range that spans backends (``list("/registry/")``
with an override under it) is a ``ValueError``: the registry only ever reads one resource's range.

**Revisions are per backend.** Each etcd cluster numbers its own writes, so a resource's
resourceVersions come from the backend that stores it, as in kube (where each resource's store has
its own etcd client), and two resources' resourceVersions cannot be compared. The calls without a key
therefore cannot have one right answer. Rather than widen the protocol with a ``prefix`` argument on
every backend, callers that need a resource's revision ask the backend owning the resource,
``backend_of(storage, prefix)``, which is the storage itself when it is not routed:

- the registry's watch caches wrap the owning backend (their freshness checks, progress requests and
  resourceVersions are that backend's); so do the registry's own reads of a current revision;
- ``current_revision``, ``compacted_revision`` and ``compact`` here answer for the default backend
  (the one most resources live in); ``kapi serve`` runs one compactor per backend (``backends``);
- ``request_progress`` asks every backend; ``run`` runs every backend, ``started()`` once all are;
  ``consistent_reads_from_cache`` holds when it holds of every backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AsyncContextManager, Mapping, TypeVar

import trio

from kapi.storage.base import Event, KeyValue, ListResult, Predicate, Storage

if TYPE_CHECKING:
    from kapi.object.listopts import ListOptions

T = TypeVar("T")


class RoutedStorage:
    """``Storage`` over ``default`` and, for the keys under each prefix of ``routes``, its backend.

    A backend may own several prefixes; the same object given twice is run once.
    """

    def __init__(self, default: Storage, routes: Mapping[str, Storage]) -> None:
        for prefix in routes:
            if not prefix.endswith("/"):
                raise ValueError(f"route prefix {prefix!r} must end with '/'")
        self.default = default
        # longest first: the first prefix a key starts with is the most specific one
        self.routes = dict(sorted(routes.items(), key=lambda item: -len(item[0])))

    def backends(self) -> list[Storage]:
        """Every distinct backend, the default first."""
        out: list[Storage] = [self.default]
        for backend in self.routes.values():
            if not any(backend is b for b in out):
                out.append(backend)
        return out

    def backend(self, key_or_prefix: str) -> Storage:
        """The backend owning ``key_or_prefix``; ``ValueError`` for a range that spans backends."""
        for prefix, backend in self.routes.items():
            if key_or_prefix.startswith(prefix):
                return backend
        for prefix, backend in self.routes.items():
            if prefix.startswith(key_or_prefix) and backend is not self.default:
                raise ValueError(f"the range {key_or_prefix!r} spans storages ({prefix!r} lives elsewhere)")
        return self.default

    # ------------------------------------------------------------ keyless

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for backend in self.backends():
                await nursery.start(backend.run)
            task_status.started()

    def request_progress(self) -> None:
        for backend in self.backends():
            backend.request_progress()

    @property
    def consistent_reads_from_cache(self) -> bool:
        """Whether every backend lets a watch cache serve consistent reads (a cache wraps its own backend)."""
        return all(getattr(backend, "consistent_reads_from_cache", True) for backend in self.backends())

    async def current_revision(self) -> int:
        """The default backend's (see the module docstring: a resource's is ``backend_of``'s)."""
        return await self.default.current_revision()

    def compacted_revision(self) -> int:
        return self.default.compacted_revision()

    async def compact(self, revision: int) -> None:
        await self.default.compact(revision)

    # ------------------------------------------------------------- routed

    async def create(self, key: str, value: bytes) -> int:
        return await self.backend(key).create(key, value)

    async def get(self, key: str) -> KeyValue:
        return await self.backend(key).get(key)

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        return await self.backend(key).update(key, value, expected_revision)

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, KeyValue]:
        return await self.backend(key).delete(key, expected_revision)

    async def list(self, prefix: str, *, revision: int | None = None, start: str | None = None,
                   limit: int | None = None) -> ListResult[KeyValue]:
        return await self.backend(prefix).list(prefix, revision=revision, start=start, limit=limit)

    async def get_list(self, prefix: str, opts: ListOptions, pred: Predicate[T]) -> ListResult[T]:
        return await self.backend(prefix).get_list(prefix, opts, pred)

    async def count(self, prefix: str) -> int:
        return await self.backend(prefix).count(prefix)

    def watch(self, prefix: str, from_revision: int) -> AsyncContextManager[trio.MemoryReceiveChannel[Event]]:
        return self.backend(prefix).watch(prefix, from_revision)


def backend_of(storage: Storage, prefix: str) -> Storage:
    """The backend that owns ``prefix`` (a key, or a resource's range) and numbers its revisions:
    ``storage`` itself unless it is a ``RoutedStorage``."""
    return storage.backend(prefix) if isinstance(storage, RoutedStorage) else storage


def backends_of(storage: Storage) -> list[Storage]:
    """The distinct backends of ``storage`` (itself alone unless it is a ``RoutedStorage``)."""
    return storage.backends() if isinstance(storage, RoutedStorage) else [storage]
