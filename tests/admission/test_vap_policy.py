"""ValidatingAdmissionPolicy through the API, as kube-apiserver answers: a denial is 422 'deployments.apps
"x" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ...' (or the code of the
validation's reason); message, messageExpression and the "failed expression" fallback; Warn and Audit
actions; params by name and by selector with parameterNotFoundAction; matchConditions; variables;
namespaceObject, request, oldObject and the authorizer; auditAnnotations; failurePolicy on errors and
configuration errors; a binding's own matchResources; policies never judge policies."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]
AR = "/apis/admissionregistration.k8s.io/v1"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True), informers)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    await nursery.start(informers.run)
    assert app.handlers.admission is not None
    await nursery.start(app.handlers.admission.run)
    yield Api(app, registry)


def deployment(name: str = "web", replicas: int = 1, labels: dict[str, str] | None = None) -> Obj:
    sel = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": sel},
                     "template": {"metadata": {"labels": sel},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
            "data": data or {}}


DEPLOY_RULES = {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                   "resources": ["deployments"]}]}


def policy(name: str, validations: list[Obj], **spec: Any) -> Obj:
    body: Obj = {"matchConstraints": DEPLOY_RULES, "validations": validations}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": body}


def binding(name: str, policy_name: str, actions: list[str] | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": actions or ["Deny"], **spec}}


async def install(api: Api, p: Obj, b: Obj | list[Obj]) -> None:
    r = await api.create(f"{AR}/validatingadmissionpolicies", p)
    assert r.status == 201, r.body
    for one in b if isinstance(b, list) else [b]:
        r = await api.create(f"{AR}/validatingadmissionpolicybindings", one)
        assert r.status == 201, r.body


async def until(api: Api, method: str, path: str, body: Any, status: int) -> Any:
    """Send a dry-run request until it answers ``status`` (the policy reaches the informers), then the real one."""
    sep = "&" if "?" in path else "?"
    for _ in range(400):
        r = await api.request(method, f"{path}{sep}dryRun=All", body)
        if r.status == status:
            break
        await trio.sleep(0.005)
    return await api.request(method, path, body)


async def test_deny_with_message_and_code(api: Api) -> None:
    await install(api, policy("max-replicas", [{"expression": "object.spec.replicas <= 5",
                                                 "message": "replicas must be no more than 5"}]),
                  binding("max-replicas-binding", "max-replicas"))
    r = await until(api, "POST", DEPLOYS, deployment(replicas=6), 422)
    assert r.status == 422
    st = r.json()
    assert st["reason"] == "Invalid"
    assert st["message"] == ('deployments.apps "web" is forbidden: ValidatingAdmissionPolicy \'max-replicas\' with '
                             "binding 'max-replicas-binding' denied request: replicas must be no more than 5")
    assert st["details"]["causes"] == [{"message": st["message"].split("is forbidden: ", 1)[1]}]
    assert st["details"]["name"] == "web" and st["details"]["group"] == "apps"
    assert st["details"]["kind"] == "deployments"
    r = await api.create(DEPLOYS, deployment(replicas=5))
    assert r.status == 201, r.body
    # an update is judged too, with the new object
    got = r.json()
    got["spec"]["replicas"] = 9
    r = await api.request("PUT", f"{DEPLOYS}/web", got)
    assert r.status == 422 and "replicas must be no more than 5" in r.json()["message"]
    # other resources are not matched
    assert (await api.create(CMS, configmap("free"))).status == 201


async def test_reason_gives_the_code_and_message_fallbacks(api: Api) -> None:
    await install(api, policy("p", [
        {"expression": "object.metadata.name != 'forbidden'", "reason": "Forbidden"},
        {"expression": "object.metadata.name != 'toolarge'", "reason": "RequestEntityTooLarge",
         "messageExpression": "'name ' + object.metadata.name + ' is too large'"},
        {"expression": "object.metadata.name != 'multi'", "message": "static message",
         "messageExpression": "'line one\\nline two'"},
        {"expression": "object.metadata.name != 'unauth'", "reason": "Unauthorized",
         "messageExpression": "object.spec.replicas"},
    ]), binding("b", "p"))
    r = await until(api, "POST", DEPLOYS, deployment("forbidden"), 403)
    assert r.status == 403 and r.json()["reason"] == "Forbidden"
    assert r.json()["message"].endswith("denied request: failed expression: object.metadata.name != 'forbidden'")
    r = await api.create(DEPLOYS, deployment("toolarge"))
    assert r.status == 413 and r.json()["reason"] == "RequestEntityTooLarge"
    assert r.json()["message"].endswith("denied request: name toolarge is too large")
    r = await api.create(DEPLOYS, deployment("multi"))  # a multi-line message falls back to message
    assert r.status == 422 and r.json()["message"].endswith("denied request: static message")
    r = await api.create(DEPLOYS, deployment("unauth"))  # a non-string messageExpression (a compile error) too
    assert r.status == 401
    assert r.json()["message"].endswith("denied request: failed expression: object.metadata.name != 'unauth'")


async def test_warn_and_audit_actions(api: Api) -> None:
    await install(api, policy("replicas", [{"expression": "object.spec.replicas < 3", "message": "too many"}]),
                  [binding("warn", "replicas", ["Warn", "Audit"])])
    # nothing refuses, so wait for the warning to appear
    for _ in range(400):
        r = await api.request("POST", f"{DEPLOYS}?dryRun=All", deployment(replicas=4))
        if r.header_values("warning"):
            break
        await trio.sleep(0.005)
    r = await api.create(DEPLOYS, deployment(replicas=4))
    assert r.status == 201
    assert r.header_values("warning") == [
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'replicas' with binding 'warn': too many\""]
    assert (await api.create(DEPLOYS, deployment("ok", replicas=1))).header_values("warning") == []


async def test_audit_annotations_recorded(api: Api) -> None:
    from kapi.admission.plugin import Attributes
    from kapi.admission.plugins.validatingpolicy import VALIDATION_FAILURE_KEY, ValidatingAdmissionPolicy
    from kapi.object.access import UserInfo
    from kapi.registry.admit import AdmissionRequest

    await install(api, policy("audited", [{"expression": "object.spec.replicas < 3", "message": "too <many>"}],
                              auditAnnotations=[{"key": "replicas", "valueExpression": "string(object.spec.replicas)"},
                                                {"key": "none", "valueExpression": "null"}]),
                  [binding("audit", "audited", ["Audit"])])
    chain = api.app.handlers.admission
    assert chain is not None
    plugin = next(p for p in chain.plugins if isinstance(p, ValidatingAdmissionPolicy))
    res = next(r for r in api.registry.table.resources if r.group == "apps" and r.resource == "deployments")
    for _ in range(400):
        if await plugin.source.hooks():
            break
        await trio.sleep(0.005)
    notes: dict[str, str] = {}
    a = Attributes(AdmissionRequest(operation="CREATE", resource=res, subresource="", namespace="default",
                                    name="web", obj=deployment(replicas=4), old=None, dry_run=False),
                   UserInfo("alice"), {}, [], annotate=notes.__setitem__)
    await plugin.validate(a)  # Audit alone never refuses
    assert notes["audited/replicas"] == "4"
    assert "audited/none" not in notes
    assert json.loads(notes[VALIDATION_FAILURE_KEY]) == [
        {"message": "too <many>", "policy": "audited", "binding": "audit", "expressionIndex": 0,
         "validationActions": ["Audit"]}]
    assert "\\u003cmany\\u003e" in notes[VALIDATION_FAILURE_KEY]  # encoding/json's escaping
