"""MutatingAdmissionPolicy with the server's shared informers: a policy or binding created, changed
(compiled again for its new generation) or deleted is followed without a storage read per request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from tests.api.conftest import Api, serve_with_informers

Obj = dict[str, Any]
BETA = "/apis/admissionregistration.k8s.io/v1beta1"
CMS = "/api/v1/namespaces/default/configmaps"


def policy(value: str) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "stamp"}, "spec": {
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                        "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": f'Object{{metadata: Object.metadata{{labels: {{"stamp": "{value}"}}}}}}'}}]}}


async def label_of(api: Api, name: str) -> str | None:
    r = await api.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    assert r.status == 201, r.body
    return ((r.json()["metadata"].get("labels")) or {}).get("stamp")


async def until(api: Api, want: str | None, prefix: str) -> str | None:
    """Create configmaps until one gets ``want`` (the informers deliver the change soon; bounded)."""
    got: str | None = "unset"
    for i in range(200):
        got = await label_of(api, f"{prefix}-{i}")
        if got == want:
            return got
        await trio.sleep(0.02)
    return got


async def test_policy_changes_are_followed(nursery: trio.Nursery, tmp_path: Path) -> None:
    api = await serve_with_informers(nursery, tmp_path, ("AlwaysAllow",), "")
    assert (await api.create(f"{BETA}/mutatingadmissionpolicies", policy("one"))).status == 201
    r = await api.create(f"{BETA}/mutatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "stamp-binding"}, "spec": {"policyName": "stamp"}})
    assert r.status == 201, r.body
    assert await until(api, "one", "a") == "one"
    chain = api.app.handlers.admission
    assert chain is not None
    plugin = next(p for p in chain.plugins if p.name == "MutatingAdmissionPolicy")
    assert plugin.source.informed  # read from the informers, not storage
    current = (await api.request("GET", f"{BETA}/mutatingadmissionpolicies/stamp")).json()
    current["spec"] = policy("two")["spec"]
    r = await api.request("PUT", f"{BETA}/mutatingadmissionpolicies/stamp", current)
    assert r.status == 200 and r.json()["metadata"]["generation"] == 2
    assert await until(api, "two", "b") == "two"
    r = await api.request("DELETE", f"{BETA}/mutatingadmissionpolicybindings/stamp-binding")
    assert r.status == 200, r.body
    assert await until(api, None, "c") is None
