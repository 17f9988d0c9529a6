"""Type checking of ValidatingAdmissionPolicies and the status controller: warnings as kube's
TypeChecker words them ('apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'...'),
per matched kind, for expressions and messageExpressions, into macros, with params typed by the
paramKind; status.observedGeneration and status.typeChecking written for each new generation, and the
policy still enforced as written."""

from __future__ import annotations

from typing import Any, AsyncIterator

import pytest
import trio

from kapi.admission.policy.typecheck import check, check_expression, types_to_check
from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.admissionpolicystatus import GROUP, RESOURCE, AdmissionPolicyStatusController
from kapi.controllers.namespace import NamespaceController
from kapi.object.schema import load_builtin
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.admission.test_vap_policy import AR, DEPLOYS, binding, deployment, policy, until
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]
SCHEMA = load_builtin()
TABLE = ResourceTable(BUILTIN)


def rules(*resources: str, group: str = "apps", versions: tuple[str, ...] = ("v1",)) -> Obj:
    return {"resourceRules": [{"apiGroups": [group], "apiVersions": list(versions), "operations": ["CREATE"],
                               "resources": list(resources)}]}


def test_undefined_field_warning_per_kind() -> None:
    p = policy("p", [{"expression": "object.replicas > 1"}], matchConstraints=rules("deployments", "replicasets"))
    assert check(p, SCHEMA, TABLE) == [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n"
                   " | object.replicas > 1\n | ......^\n\n"
                   "apps/v1, Kind=ReplicaSet: ERROR: <input>:1:7: undefined field 'replicas'\n"
                   " | object.replicas > 1\n | ......^\n"}]


def test_clean_policy_has_no_warnings() -> None:
    p = policy("p", [{"expression": "object.spec.replicas <= 5 && has(object.metadata.labels) && "
                                    "object.metadata.labels['a'] == 'b' && "
                                    "object.spec.template.spec.containers.all(c, c.image.startsWith('r/'))",
                      "messageExpression": "'name ' + object.metadata.name"}], matchConstraints=rules("deployments"))
    assert check(p, SCHEMA, TABLE) == []


def test_macro_variable_message_expression_and_comparison() -> None:
    p = policy("p", [{"expression": "object.spec.template.spec.containers.exists(c, c.imag == 'x')",
                      "messageExpression": "'x' + object.metadata.nam"},
                     {"expression": "object.spec.replicas == 'three'"}], matchConstraints=rules("deployments"))
    got = {w["fieldRef"]: w["warning"] for w in check(p, SCHEMA, TABLE)}
    assert got["spec.validations[0].expression"] == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:49: undefined field 'imag'\n"
        " | object.spec.template.spec.containers.exists(c, c.imag == 'x')\n"
        " | ................................................^\n")
    assert got["spec.validations[0].messageExpression"].startswith(
        "apps/v1, Kind=Deployment: ERROR: <input>:1:22: undefined field 'nam'")
    assert got["spec.validations[1].expression"] == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_==_' applied to "
        "'(int, string)'\n | object.spec.replicas == 'three'\n | .....................^\n")


def test_params_typed_by_param_kind() -> None:
    p = policy("p", [{"expression": "object.spec.replicas <= int(params.dat.max)"}],
               matchConstraints=rules("deployments"), paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    (w,) = check(p, SCHEMA, TABLE)
    assert "undefined field 'dat'" in w["warning"]
    assert check_expression("params.data.max == '1'", SCHEMA, SCHEMA.type_for("apps", "v1", "Deployment"),
                            SCHEMA.type_for("", "v1", "ConfigMap"), [], True) == ""


def test_types_to_check_skips_wildcards_and_subresources() -> None:
    assert types_to_check(policy("p", [], matchConstraints=rules("*")), TABLE) == []
    assert types_to_check(policy("p", [], matchConstraints=rules("deployments/status")), TABLE) == []
    assert types_to_check(policy("p", [], matchConstraints=rules("deployments", group="*")), TABLE) == []
    assert types_to_check(policy("p", [], matchConstraints=rules("pods", "configmaps", group="")), TABLE) == [
        ("", "v1", "ConfigMap"), ("", "v1", "Pod")]


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
    controller = AdmissionPolicyStatusController(registry, informers.informer(GROUP, RESOURCE))
    await nursery.start(informers.run)
    assert app.handlers.admission is not None
    await nursery.start(app.handlers.admission.run)
    await nursery.start(controller.run)
    yield Api(app, registry)


async def status_of(api: Api, name: str, generation: int) -> Obj:
    for _ in range(400):
        got = (await api.request("GET", f"{AR}/validatingadmissionpolicies/{name}")).json()
        if (got.get("status") or {}).get("observedGeneration") == generation:
            return got["status"]
        await trio.sleep(0.005)
    raise AssertionError(f"status of {name} never observed generation {generation}")


async def test_status_controller_writes_type_checking(api: Api) -> None:
    p = policy("typo", [{"expression": "object.replicas > 1", "message": "typo"}])
    r = await api.create(f"{AR}/validatingadmissionpolicies", p)
    assert r.status == 201
    st = await status_of(api, "typo", 1)
    assert st["typeChecking"] == {"expressionWarnings": [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n"
                   " | object.replicas > 1\n | ......^\n"}]}
    # the policy still applies as written: at run time the field is missing, an error (failurePolicy Fail)
    assert (await api.create(f"{AR}/validatingadmissionpolicybindings", binding("b", "typo"))).status == 201
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert r.json()["message"].endswith(
        "denied request: expression 'object.replicas > 1' resulted in error: no such key: replicas")
    # fixed: a new generation, no warnings
    got = (await api.request("GET", f"{AR}/validatingadmissionpolicies/typo")).json()
    got["spec"]["validations"][0]["expression"] = "object.spec.replicas > 1"
    r = await api.request("PUT", f"{AR}/validatingadmissionpolicies/typo", got)
    assert r.status == 200 and r.json()["metadata"]["generation"] == 2
    st = await status_of(api, "typo", 2)
    assert st["typeChecking"] == {}


def test_variables_typed_by_their_selection() -> None:
    p = policy("p", [{"expression": "variables.spec.replica > 1 && variables.containers.all(c, c.nam != '')"}],
               matchConstraints=rules("deployments"),
               variables=[{"name": "spec", "expression": "object.spec"},
                          {"name": "containers", "expression": "variables.spec.template.spec.containers"}])
    (w,) = check(p, SCHEMA, TABLE)
    assert w["warning"] == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:15: undefined field 'replica'\n"
        " | variables.spec.replica > 1 && variables.containers.all(c, c.nam != '')\n"
        " | ..............^\n"
        "ERROR: <input>:1:60: undefined field 'nam'\n"
        " | variables.spec.replica > 1 && variables.containers.all(c, c.nam != '')\n"
        " | " + "." * 59 + "^\n")


def test_custom_resource_kinds_checked_with_their_schema() -> None:
    from dataclasses import replace

    from kapi.object.structural import from_props

    class _Strategy:
        schema = from_props({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "extra": {"type": "object", "additionalProperties": {"type": "string"}}}}}})

    base = next(r for r in BUILTIN if r.resource == "configmaps")
    crd = replace(base, group="example.com", version="v1", resource="widgets", kind="Widget",
                  strategy=_Strategy())  # type: ignore[arg-type]
    table = ResourceTable([*BUILTIN, crd])
    p = policy("p", [{"expression": "object.spec.size <= 3 && object.metadata.name != '' && "
                                    "object.spec.tags.all(t, t.name != '') && object.spec.extra['a'] == 'b'"},
                     {"expression": "object.spec.sise <= 3 || object.spec.tags.exists(t, t.nme == 'x') || "
                                    "object.spec.size == 'big'"}],
               matchConstraints=rules("widgets", group="example.com"))
    (w,) = check(p, SCHEMA, table)
    assert w["fieldRef"] == "spec.validations[1].expression"
    text = w["warning"]
    assert text.startswith("example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'sise'")
    assert "undefined field 'nme'" in text
    assert "found no matching overload for '_==_' applied to '(int, string)'" in text


def test_request_and_namespace_object_typed_as_kube_declares_them() -> None:
    p = policy("p", [{"expression": "request.userInfo.username != '' && request.operation == 'CREATE' && "
                                    "namespaceObject.metadata.labels['env'] == 'prod' && "
                                    "request.userInfo.groups.exists(g, g == 'x')"},
                     {"expression": "request.user == 'bob' || namespaceObject.metadata.uid == 'x'"}],
               matchConstraints=rules("deployments"))
    (w,) = check(p, SCHEMA, TABLE)
    assert w["fieldRef"] == "spec.validations[1].expression"
    assert "1:8: undefined field 'user'" in w["warning"]
    assert "undefined field 'uid'" in w["warning"]  # kube's namespace type spells it UID
