"""Issue 10: random wrong types in metadata and spec, through the app: never a 5xx, and the server still lists."""

from __future__ import annotations

import random
from typing import Any

from .conftest import Api

FIELDS = ["name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "finalizers", "uid",
          "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
          "managedFields"]
KINDS = {
    "/api/v1/namespaces/default/configmaps": ("v1", "ConfigMap", ["data", "binaryData", "immutable"]),
    "/api/v1/namespaces/default/pods": ("v1", "Pod", ["spec", "status"]),
    "/apis/apps/v1/namespaces/default/deployments": ("apps/v1", "Deployment", ["spec", "status"]),
    "/apis/coordination.k8s.io/v1/namespaces/default/leases": ("coordination.k8s.io/v1", "Lease", ["spec"]),
    "/api/v1/namespaces/default/services": ("v1", "Service", ["spec"]),
}


def _value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(11 if depth < 3 else 7)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63 - 1, 2**64 - 1, -(2**63)])
    if choice == 3:
        return rng.choice([0.5, -1.5, 1e300, 3.0])
    if choice == 4:
        return rng.choice(["", "a", "2026-12-01T17:50:12+00:00", "500m", "x" * 300, "a/b", "\u00e9"])
    if choice == 5:
        return rng.choice(["orphan", "foregroundDeletion", "kubernetes.io/x", "Ki"])
    if choice == 6:
        return "2026-12-01T17:50:12.123456Z"
    if choice in (7, 8):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    keys = ["a", "name", "uid", "apiVersion", "kind", "controller", "containers", "image", "ports", "replicas",
            "selector", "manager", "fieldsV1", "time", "operation", "holderIdentity", "renewTime", "type"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _right_typed(rng: random.Random, field: str) -> Any:
    """A value of the field's Go type with odd contents: what passes the decoder must not break a consumer."""
    text = rng.choice(["", "a", "-a", "a..b", "x" * 300, "orphan", "foregroundDeletion", "kubernetes", "a/b/c", "7"])
    if field in ("labels", "annotations"):
        return {rng.choice(["", "a", "a/b", "-", "x" * 70, "kubernetes.io/x"]): text for _ in range(rng.randrange(3))}
    if field == "finalizers":
        return [text for _ in range(rng.randrange(3))]
    if field == "ownerReferences":
        return [{k: (rng.choice([True, False]) if k in ("controller", "blockOwnerDeletion") else text)
                 for k in rng.sample(["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"],
                                     rng.randrange(7))} for _ in range(rng.randrange(3))]
    if field in ("generation", "deletionGracePeriodSeconds"):
        return rng.choice([0, -1, 2**63 - 1, -(2**63), 30])
    if field in ("creationTimestamp", "deletionTimestamp"):
        return rng.choice(["2026-12-01T17:50:12+00:00", "1970-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00"])
    if field == "managedFields":
        return [{"manager": text, "operation": rng.choice(["Apply", "Update", "", "x"]),
                 "fieldsType": rng.choice(["FieldsV1", "", "x"]), "apiVersion": rng.choice(["v1", "", "x/y/z"]),
                 "fieldsV1": rng.choice([{}, {"f:data": {}}, {"x": {"y": {}}}, {".": {}}]),
                 "time": rng.choice(["2026-12-01T17:50:12Z", "0001-01-01T00:00:00Z"])}
                for _ in range(rng.randrange(3))]
    return text


async def test_random_wrong_types_never_5xx(api: Api) -> None:
    rng = random.Random(10)  # fixed: the same 1,000 bodies each run
    seen: dict[int, int] = {}
    for i in range(1000):
        path = rng.choice(sorted(KINDS))
        api_version, kind, top = KINDS[path]
        md: dict[str, Any] = {"name": f"r{i}"}
        field = rng.choice(FIELDS)
        md[field] = _value(rng) if rng.random() < 0.4 else _right_typed(rng, field)
        body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": md}
        if rng.random() < 0.5:
            body[rng.choice(top)] = _value(rng)
        r = await api.create(path, body)
        assert r.status < 500, (body, r.body)
        seen[r.status] = seen.get(r.status, 0) + 1
        if r.status == 201 and rng.random() < 0.5:
            field = rng.choice(FIELDS)
            patch = {"metadata": {field: _value(rng) if rng.random() < 0.4 else _right_typed(rng, field)}}
            r = await api.request("PATCH", f"{path}/r{i}", patch, content_type="application/merge-patch+json")
            assert r.status < 500, (patch, r.body)
    assert seen.get(201) and seen.get(400) and seen.get(422), seen  # each kind of answer was met
    for path in KINDS:
        assert (await api.request("GET", path)).status == 200
