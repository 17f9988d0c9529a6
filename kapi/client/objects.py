"""Objects stay plain dicts; ``key`` and ``Meta`` read them without a typed model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


def key(obj: Obj) -> str:
    """The store key: ``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name', '')}" if ns else str(md.get("name", ""))


def split_key(k: str) -> tuple[str, str]:
    """(namespace, name) of a store key ("" namespace for cluster-scoped)."""
    ns, sep, name = k.partition("/")
    return (ns, name) if sep else ("", ns)


@dataclass(frozen=True, slots=True)
class Meta:
    """A read-only view of an object's metadata: ``Meta(pod).name``, ``Meta(pod).labels``."""

    obj: Obj

    @property
    def _md(self) -> Obj:
        return self.obj.get("metadata") or {}

    @property
    def name(self) -> str:
        return str(self._md.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self._md.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self._md.get("uid", ""))

    @property
    def resource_version(self) -> str:
        return str(self._md.get("resourceVersion", ""))

    @property
    def generation(self) -> int:
        return int(self._md.get("generation") or 0)

    @property
    def labels(self) -> dict[str, str]:
        return dict(self._md.get("labels") or {})

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self._md.get("annotations") or {})

    @property
    def owner_references(self) -> list[Obj]:
        return list(self._md.get("ownerReferences") or [])

    @property
    def finalizers(self) -> list[str]:
        return list(self._md.get("finalizers") or [])

    @property
    def deletion_timestamp(self) -> str | None:
        return self._md.get("deletionTimestamp")

    @property
    def key(self) -> str:
        return key(self.obj)
