"""Discovery documents (/api, /apis, group and group-version lists, aggregated v2/v2beta1).

Each document is encoded once and kept until the resource table changes (its ``generation``
moves): then every document, and so every ETag, is made again from the table as it is.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from kapi.registry.resources import GROUP_ORDER, SUBRESOURCE_VERBS, Resource, ResourceTable

Obj = dict[str, Any]


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """kube's CompareKubeAwareVersionStrings as a sort key (smallest first = highest priority):
    GA before beta before alpha, a higher major then a higher minor first; other names after, by name."""
    m = _KUBE_VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major, level, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[level], -major, -minor, "")


def ordered_versions(group: str, versions: list[str]) -> list[str]:
    """A group's versions in discovery order: a built-in group's as the table lists them (its
    preferred first), a custom group's by kube's version priority (CRDs)."""
    if group in GROUP_ORDER:
        return versions
    return sorted(versions, key=version_priority)


def _storage_version_hash(res: Resource) -> str:
    digest = hashlib.sha256(f"{res.group}/{res.version}/{res.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _legacy_resource(res: Resource) -> Obj:
    out: Obj = {"name": res.resource, "singularName": res.singular, "namespaced": res.namespaced,
                "kind": res.kind, "verbs": list(res.verbs)}
    if res.short_names:
        out["shortNames"] = list(res.short_names)
    if res.categories:
        out["categories"] = list(res.categories)
    out["storageVersionHash"] = _storage_version_hash(res)
    return out


# Subresources whose body is a kind of its own (the others serve the parent's kind).
_SUBRESOURCE_KINDS: dict[str, Obj] = {"scale": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                                      "token": {"group": "authentication.k8s.io", "version": "v1",
                                                "kind": "TokenRequest"}}


def _sub_verbs(sub: str) -> list[str]:
    return list(SUBRESOURCE_VERBS.get(sub, ("get", "patch", "update")))


def _legacy_subresource(res: Resource, sub: str) -> Obj:
    out: Obj = {"name": f"{res.resource}/{sub}", "singularName": "", "namespaced": res.namespaced,
                "kind": res.kind, "verbs": _sub_verbs(sub)}
    if sub in _SUBRESOURCE_KINDS:
        out.update(_SUBRESOURCE_KINDS[sub])
    return out


def _aggregated_resource(res: Resource) -> Obj:
    out: Obj = {
        "resource": res.resource,
        "responseKind": {"group": res.group, "version": res.version, "kind": res.kind},
        "scope": "Namespaced" if res.namespaced else "Cluster",
        "singularResource": res.singular,
        "verbs": list(res.verbs),
    }
    if res.short_names:
        out["shortNames"] = list(res.short_names)
    if res.categories:
        out["categories"] = list(res.categories)
    subs = []
    for sub in sorted(res.subresources):
        kind = _SUBRESOURCE_KINDS.get(sub) or {"group": res.group, "version": res.version, "kind": res.kind}
        subs.append({"subresource": sub, "responseKind": kind, "verbs": _sub_verbs(sub)})
    if subs:
        out["subresources"] = subs
    return out


@dataclass
class Discovery:
    """Every discovery document, encoded once per state of the table."""

    table: ResourceTable
    _cache: dict[str, bytes] = field(default_factory=dict)
    _generation: int = -1  # the table's generation the cache was made from

    def _cached(self) -> dict[str, bytes]:
        if self._generation != self.table.generation:
            self._cache.clear()
            self._generation = self.table.generation
        return self._cache

    def _encode(self, key: str, doc: Obj) -> bytes:
        if key not in self._cached():
            self._cache[key] = orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)  # as Go's encoder
        return self._cache[key]

    def api_versions(self, server_address: str) -> bytes:
        return orjson.dumps({"kind": "APIVersions", "versions": ["v1"],
                             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                             "serverAddress": server_address}]},
                            option=orjson.OPT_APPEND_NEWLINE)

    def _group(self, group: str, versions: list[str]) -> Obj:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in ordered_versions(group, versions)]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def api_group_list(self) -> bytes:
        groups = [self._group(g, vs) for g, vs in self.table.groups() if g]
        return self._encode("groups", {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    def api_group(self, group: str) -> bytes | None:
        for g, vs in self.table.groups():
            if g == group and g:
                return self._encode("group:" + g, {"kind": "APIGroup", "apiVersion": "v1", **self._group(g, vs)})
        return None

    def resource_list(self, group: str, version: str) -> bytes | None:
        resources = self.table.in_group_version(group, version)
        if not resources:
            return None
        items: list[Obj] = []
        for res in sorted(resources, key=lambda r: r.resource):
            items.append(_legacy_resource(res))
            for sub in sorted(res.subresources):
                items.append(_legacy_subresource(res, sub))
        gv = f"{group}/{version}" if group else version
        return self._encode(f"resources:{gv}", {"kind": "APIResourceList", "apiVersion": "v1",
                                                "groupVersion": gv, "resources": items})

    def aggregated(self, core: bool, version: str) -> tuple[bytes, str]:
        """The APIGroupDiscoveryList for /api (core) or /apis, and its ETag."""
        key = f"aggregated:{core}:{version}"
        if key not in self._cached():
            items = []
            for group, versions in self.table.groups():
                if bool(group) == core:
                    continue
                md: Obj = {"name": group} if group else {"creationTimestamp": None}
                vs = [{"version": v,
                       "resources": [_aggregated_resource(r) for r in
                                     sorted(self.table.in_group_version(group, v), key=lambda r: r.resource)],
                       "freshness": "Current"} for v in ordered_versions(group, versions)]
                items.append({"metadata": md, "versions": vs})
            doc = {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
                   "metadata": {}, "items": items}
            self._cache[key] = orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)  # as Go's encoder
        body = self._cache[key]
        return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
