"""The informer's local cache: objects by key, with indexes.

An index function maps an object to the values it is filed under (client-go's
``IndexFunc``); ``by_index(name, value)`` answers from the index without a scan.
The namespace index is always there. Objects are the dicts the server sent;
callers must not mutate them (copy first), as with client-go's shared caches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kapi.client.objects import key as object_key

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]

NAMESPACE_INDEX = "namespace"


def namespace_index(obj: Obj) -> list[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


class Store:
    """Objects by key, with named indexes kept up to date on every change."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        self._indexes: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}}
        self.add_indexers(indexers or {})

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, k: object) -> bool:
        return k in self._items

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes (and file every object already held under them)."""
        for name, fn in indexers.items():
            if name in self._indexers:
                raise ValueError(f"index {name!r} already exists")
            self._indexers[name] = fn
            self._indexes[name] = {}
            for k, obj in self._items.items():
                self._file(name, k, obj)

    def has_index(self, name: str) -> bool:
        return name in self._indexers

    def get(self, k: str) -> Obj | None:
        return self._items.get(k)

    def get_by(self, namespace: str, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> list[str]:
        return list(self._items)

    def list(self) -> list[Obj]:
        return list(self._items.values())

    def index_values(self, index: str) -> list[str]:
        """The values ``index`` files objects under."""
        return list(self._index(index))

    def index_keys(self, index: str, value: str) -> list[str]:
        return sorted(self._index(index).get(value, ()))

    def by_index(self, index: str, value: str) -> list[Obj]:
        """Objects filed under ``value`` in ``index``, in key order."""
        return [self._items[k] for k in self.index_keys(index, value)]

    def _index(self, name: str) -> dict[str, set[str]]:
        try:
            return self._indexes[name]
        except KeyError:
            raise KeyError(f"no index named {name!r}") from None

    # ------------------------------------------------------------------ changes

    def upsert(self, obj: Obj) -> Obj | None:
        """Add or replace ``obj``; the previous version, if any."""
        k = object_key(obj)
        old = self._items.get(k)
        if old is not None:
            self._unfile_all(k, old)
        self._items[k] = obj
        for name in self._indexers:
            self._file(name, k, obj)
        return old

    def delete(self, k: str) -> Obj | None:
        """Remove the object at ``k``; what was there, if anything."""
        old = self._items.pop(k, None)
        if old is not None:
            self._unfile_all(k, old)
        return old

    def replace(self, objs: Iterable[Obj]) -> tuple[list[Obj], list[tuple[Obj, Obj]], list[Obj]]:
        """Make the store hold exactly ``objs``: (added, (old, new) updated, deleted) as a relist sees them."""
        fresh = {object_key(o): o for o in objs}
        deleted = [self.delete(k) for k in [k for k in self._items if k not in fresh]]
        added: list[Obj] = []
        updated: list[tuple[Obj, Obj]] = []
        for obj in fresh.values():
            old = self.upsert(obj)
            if old is None:
                added.append(obj)
            else:
                updated.append((old, obj))
        return added, updated, [d for d in deleted if d is not None]

    def _file(self, name: str, k: str, obj: Obj) -> None:
        index = self._indexes[name]
        for value in self._indexers[name](obj):
            index.setdefault(value, set()).add(k)

    def _unfile_all(self, k: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            index = self._indexes[name]
            for value in fn(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(k)
                    if not keys:
                        del index[value]
