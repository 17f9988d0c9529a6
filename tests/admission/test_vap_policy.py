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
         "messageExpression": "string(object.spec.nope)"},
    ]), binding("b", "p"))
    r = await until(api, "POST", DEPLOYS, deployment("forbidden"), 403)
    assert r.status == 403 and r.json()["reason"] == "Forbidden"
    assert r.json()["message"].endswith("denied request: failed expression: object.metadata.name != 'forbidden'")
    r = await api.create(DEPLOYS, deployment("toolarge"))
    assert r.status == 413 and r.json()["reason"] == "RequestEntityTooLarge"
    assert r.json()["message"].endswith("denied request: name toolarge is too large")
    r = await api.create(DEPLOYS, deployment("multi"))  # a multi-line message falls back to message
    assert r.status == 422 and r.json()["message"].endswith("denied request: static message")
    r = await api.create(DEPLOYS, deployment("unauth"))  # a messageExpression that fails falls back too
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


PARAM_KIND = {"apiVersion": "v1", "kind": "ConfigMap"}


async def test_params_by_name_and_selector(api: Api) -> None:
    await api.create(CMS, configmap("limits", {"max": "3"}))
    await api.create(CMS, configmap("sel-a", {"max": "4"}, labels={"tier": "x"}))
    await api.create(CMS, configmap("sel-b", {"max": "2"}, labels={"tier": "x"}))
    p = policy("params", [{"expression": "object.spec.replicas <= int(params.data.max)",
                           "messageExpression": "'at most ' + params.data.max + ' (' + params.metadata.name + ', '"
                                                " + params.kind + ')'"}], paramKind=PARAM_KIND)
    await install(api, p, binding("by-name", "params", paramRef={"name": "limits", "namespace": "default",
                                                                 "parameterNotFoundAction": "Deny"}))
    r = await until(api, "POST", DEPLOYS, deployment(replicas=4), 422)
    assert r.json()["message"].endswith("binding 'by-name' denied request: at most 3 (limits, ConfigMap)")
    assert (await api.create(DEPLOYS, deployment(replicas=3))).status == 201
    # a selector evaluates once per param selected: the first denial answers
    r = await api.create(f"{AR}/validatingadmissionpolicybindings", binding(
        "by-selector", "params", paramRef={"selector": {"matchLabels": {"tier": "x"}},
                                           "parameterNotFoundAction": "Allow"}))
    assert r.status == 201
    r = await until(api, "POST", DEPLOYS, deployment("two", replicas=3), 422)
    assert r.json()["message"].endswith("binding 'by-selector' denied request: at most 2 (sel-b, ConfigMap)")


async def test_param_not_found_actions(api: Api) -> None:
    p = policy("params", [{"expression": "false", "message": "evaluated"}], paramKind=PARAM_KIND)
    await install(api, p, [binding("deny-missing", "params", paramRef={
        "name": "absent", "parameterNotFoundAction": "Deny"})])
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert r.json()["message"] == (
        'deployments.apps "web" is forbidden: ValidatingAdmissionPolicy \'params\' with binding \'deny-missing\' '
        "denied request: failed to configure binding: no params found for policy binding with `Deny` "
        "parameterNotFoundAction")
    r = await api.request("DELETE", f"{AR}/validatingadmissionpolicybindings/deny-missing")
    assert r.status == 200
    r = await api.create(f"{AR}/validatingadmissionpolicybindings", binding(
        "allow-missing", "params", paramRef={"name": "absent", "parameterNotFoundAction": "Allow"}))
    assert r.status == 201
    r = await until(api, "POST", DEPLOYS, deployment(), 201)
    assert r.status == 201  # no param: the policy is not evaluated
    # the param appears: it is evaluated
    await api.create(CMS, configmap("absent"))
    r = await until(api, "POST", DEPLOYS, deployment("later"), 422)
    assert r.json()["message"].endswith("denied request: evaluated")


async def test_param_kind_not_served_is_a_configuration_error(api: Api) -> None:
    p = policy("nokind", [{"expression": "true"}], paramKind={"apiVersion": "example.com/v1", "kind": "Nope"})
    await install(api, p, binding("b", "nokind", paramRef={"name": "x", "parameterNotFoundAction": "Allow"}))
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert r.json()["message"] == (
        'deployments.apps "web" is forbidden: ValidatingAdmissionPolicy \'nokind\' denied request: failed to '
        "configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'")
    # failurePolicy Ignore: the configuration error admits
    r = await api.request("GET", f"{AR}/validatingadmissionpolicies/nokind")
    got = r.json()
    got["spec"]["failurePolicy"] = "Ignore"
    assert (await api.request("PUT", f"{AR}/validatingadmissionpolicies/nokind", got)).status == 200
    r = await until(api, "POST", DEPLOYS, deployment(), 201)
    assert r.status == 201


async def test_match_conditions_and_variables(api: Api) -> None:
    p = policy("cond", [{"expression": "variables.replicas <= variables.limit",
                         "messageExpression": "'replicas ' + string(variables.replicas) + ' > ' + "
                                              "string(variables.limit)"}],
               matchConditions=[{"name": "not-exempt",
                                 "expression": "!('exempt' in object.metadata.labels)"},
                                {"name": "has-labels", "expression": "has(object.metadata.labels)"}],
               variables=[{"name": "replicas", "expression": "object.spec.replicas"},
                          {"name": "limit", "expression": "variables.replicas > 100 ? 1000 : 2"}])
    await install(api, p, binding("b", "cond"))
    r = await until(api, "POST", DEPLOYS, deployment(replicas=3, labels={"a": "b"}), 422)
    assert r.json()["message"].endswith("denied request: replicas 3 > 2")
    r = await api.create(DEPLOYS, deployment("exempt", replicas=3, labels={"exempt": "yes"}))
    assert r.status == 201  # a false match condition: not evaluated
    r = await api.create(DEPLOYS, deployment("big", replicas=300, labels={"a": "b"}))
    assert r.status == 201


async def test_match_condition_error_follows_failure_policy(api: Api) -> None:
    p = policy("mc", [{"expression": "false", "message": "validated"}],
               matchConditions=[{"name": "boom", "expression": "object.metadata.annotations['missing'] == 'x'"}])
    await install(api, p, binding("b", "mc"))
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert r.json()["message"].endswith(
        "denied request: expression 'object.metadata.annotations['missing'] == 'x'' resulted in error: "
        "no such key: annotations")
    got = (await api.request("GET", f"{AR}/validatingadmissionpolicies/mc")).json()
    got["spec"]["failurePolicy"] = "Ignore"
    assert (await api.request("PUT", f"{AR}/validatingadmissionpolicies/mc", got)).status == 200
    r = await until(api, "POST", DEPLOYS, deployment(), 201)
    assert r.status == 201  # an erroring condition under Ignore: not matched


async def test_evaluation_error_and_failure_policy(api: Api) -> None:
    p = policy("err", [{"expression": "object.spec.missing > 1"}, {"expression": "true"}])
    await install(api, p, binding("b", "err"))
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert r.json()["message"].endswith(
        "with binding 'b' denied request: expression 'object.spec.missing > 1' resulted in error: no such key: missing")
    got = (await api.request("GET", f"{AR}/validatingadmissionpolicies/err")).json()
    got["spec"]["failurePolicy"] = "Ignore"
    assert (await api.request("PUT", f"{AR}/validatingadmissionpolicies/err", got)).status == 200
    r = await until(api, "POST", DEPLOYS, deployment(), 201)
    assert r.status == 201


async def test_request_namespace_object_old_object(api: Api) -> None:
    r = await api.request("GET", "/api/v1/namespaces/default")
    ns = r.json()
    ns["metadata"].setdefault("labels", {})["env"] = "prod"
    assert (await api.request("PUT", "/api/v1/namespaces/default", ns)).status == 200
    p = policy("ctx", [
        {"expression": "namespaceObject.metadata.labels['env'] != 'prod' || object.spec.replicas >= 2",
         "message": "prod needs 2 replicas"},
        {"expression": "request.operation != 'UPDATE' || object.spec.replicas >= oldObject.spec.replicas",
         "messageExpression": "'no scaling down by ' + request.userInfo.username + ' in ' + request.namespace"},
        {"expression": "request.kind.kind == 'Deployment' && request.resource.resource == 'deployments'"
                       " && (request.operation != 'CREATE' || oldObject == null)"},
    ])
    await install(api, p, binding("b", "ctx"))
    r = await until(api, "POST", DEPLOYS, deployment(replicas=1), 422)
    assert r.json()["message"].endswith("denied request: prod needs 2 replicas")
    r = await api.create(DEPLOYS, deployment(replicas=3))
    assert r.status == 201, r.body
    got = r.json()
    got["spec"]["replicas"] = 2
    r = await api.request("PUT", f"{DEPLOYS}/web", got)
    assert r.status == 422
    assert r.json()["message"].endswith("denied request: no scaling down by kapi-admin in default")


async def test_binding_match_resources_narrow_the_policy(api: Api) -> None:
    p = policy("narrow", [{"expression": "false", "message": "no"}])
    await install(api, p, binding("b", "narrow", matchResources={
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-public"}}}))
    r = await api.create("/apis/apps/v1/namespaces/kube-public/deployments?dryRun=All", deployment())
    for _ in range(400):
        if r.status == 422:
            break
        await trio.sleep(0.005)
        r = await api.create("/apis/apps/v1/namespaces/kube-public/deployments?dryRun=All", deployment())
    assert r.status == 422
    assert (await api.create(DEPLOYS, deployment())).status == 201  # default is not selected


async def test_policies_never_judge_policies(api: Api) -> None:
    every = {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]}
    p = policy("all", [{"expression": "false", "message": "nothing"}], matchConstraints=every)
    await install(api, p, binding("b", "all"))
    r = await until(api, "POST", CMS, configmap("x"), 422)
    assert r.status == 422
    # the policy can still be changed and removed
    r = await api.create(f"{AR}/validatingadmissionpolicybindings", binding("b2", "all"))
    assert r.status == 201
    assert (await api.request("DELETE", f"{AR}/validatingadmissionpolicybindings/b2")).status == 200
    assert (await api.request("DELETE", f"{AR}/validatingadmissionpolicies/all")).status == 200
    r = await until(api, "POST", CMS, configmap("x"), 201)
    assert r.status == 201


async def test_authorizer_checks(api: Api) -> None:
    p = policy("authz", [
        {"expression": "authorizer.group('apps').resource('deployments').namespace('default').check('delete')"
                       ".allowed()", "message": "must be able to delete"},
        {"expression": "authorizer.requestResource.check('create').allowed()"},
        {"expression": "!authorizer.serviceAccount('default', 'nobody').group('').resource('secrets')"
                       ".check('get').allowed()", "message": "service account check"},
    ])
    await install(api, p, binding("b", "authz"))
    # AlwaysAllow: the first two pass, the service account's check is allowed too, so the third fails
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert r.json()["message"].endswith("denied request: service account check")


async def test_authorizer_with_rbac(nursery: trio.Nursery, tmp_path: Any) -> None:
    """The authorizer variable asks the server's authorizer, as the requesting user."""
    from tests.api.conftest import serve_with_informers
    rbac = await serve_with_informers(nursery, tmp_path, ("RBAC",), 'bob-token,bob,uid-b,"devs"\n'
                                                                     'carol-token,carol,uid-c,"devs"\n')
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "deployers"},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "get", "list"]}]}
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "deployers"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployers"},
          "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]}
    deleters = {**role, "metadata": {"name": "deleters"},
                "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]}]}
    drb = {**rb, "metadata": {"name": "deleters"}, "roleRef": {**rb["roleRef"], "name": "deleters"},
           "subjects": [{"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"}]}
    for path, body in (("roles", role), ("rolebindings", rb), ("roles", deleters), ("rolebindings", drb)):
        r = await rbac.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/default/{path}", body)
        assert r.status == 201, r.body
    p = policy("authz", [{
        "expression": "authorizer.group('apps').resource('deployments').namespace(request.namespace)"
                      ".check('delete').allowed()",
        "messageExpression": "'only users who may delete deployments may create them'"}])
    await install(rbac, p, binding("b", "authz"))
    hdr_bob = {"authorization": "Bearer bob-token"}
    hdr_carol = {"authorization": "Bearer carol-token"}
    for _ in range(400):
        r = await rbac.request("POST", f"{DEPLOYS}?dryRun=All", deployment(), token=None, headers=hdr_bob)
        if r.status == 422:
            break
        await trio.sleep(0.005)
    assert r.status == 422, r.body
    assert r.json()["message"].endswith("denied request: only users who may delete deployments may create them")
    r = await rbac.request("POST", DEPLOYS, deployment(), token=None, headers=hdr_carol)
    assert r.status == 201, r.body


async def test_expressions_that_do_not_compile_are_refused(api: Api) -> None:
    p = policy("bad", [{"expression": "object.spec.replicas <", "messageExpression": "1"},
                       {"expression": "object.spec.paused"}],
               variables=[{"name": "v", "expression": "variables.w"}],
               matchConditions=[{"name": "m", "expression": "variables.v == 1"}],
               auditAnnotations=[{"key": "k", "valueExpression": "1"}])
    r = await api.create(f"{AR}/validatingadmissionpolicies", p)
    assert r.status == 422
    st = r.json()
    assert st["reason"] == "Invalid"
    got = {c["field"]: c["message"] for c in st["details"]["causes"]}
    assert got["spec.validations[0].expression"].startswith(
        'Invalid value: "object.spec.replicas <": compilation failed: ERROR: <input>:1:23: Syntax error:')
    assert got["spec.validations[0].messageExpression"] == 'Invalid value: "1": must evaluate to string but got int'
    assert got["spec.validations[1].expression"] == (
        'Invalid value: "object.spec.paused": must evaluate to bool but got dyn')
    assert got["spec.variables[0].expression"] == (
        "Invalid value: \"variables.w\": compilation failed: ERROR: <input>:1:10: undefined field 'w'\n"
        " | variables.w\n | .........^")
    # kube compiles matchConditions without the policy's variables (and with params declared)
    assert got["spec.matchConditions[0].expression"] == (
        "Invalid value: \"variables.v == 1\": compilation failed: ERROR: <input>:1:10: undefined field 'v'\n"
        " | variables.v == 1\n | .........^")
    assert got["spec.auditAnnotations[0].valueExpression"] == (
        'Invalid value: "1": must evaluate to one of [string null_type] but got int')
    assert st["message"].startswith('ValidatingAdmissionPolicy.admissionregistration.k8s.io "bad" is invalid: [')
    # params in a validation needs a paramKind; in a matchCondition kube's validation declares it anyway
    # (the policy then fails at evaluation: compiled for it without params)
    r = await api.create(f"{AR}/validatingadmissionpolicies", policy("noparams", [{"expression": "params.x == 1"}]))
    assert r.status == 422 and "undeclared reference to 'params'" in r.json()["message"]
    mc = policy("mc-params", [{"expression": "true"}], matchConditions=[{"name": "m", "expression": "params == null"}])
    assert (await api.create(f"{AR}/validatingadmissionpolicies", mc)).status == 201
    assert (await api.create(f"{AR}/validatingadmissionpolicybindings", binding("mc-b", "mc-params"))).status == 201
    r = await until(api, "POST", DEPLOYS, deployment(), 422)
    assert "denied request: compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to " \
           "'params'" in r.json()["message"]
    ok = policy("good", [{"expression": "params.data.x == 'y'"}], paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    assert (await api.create(f"{AR}/validatingadmissionpolicies", ok)).status == 201
    # and an update that breaks it is refused too
    got_ok = (await api.request("GET", f"{AR}/validatingadmissionpolicies/good")).json()
    got_ok["spec"]["validations"][0]["expression"] = "params.data.x =="
    assert (await api.request("PUT", f"{AR}/validatingadmissionpolicies/good", got_ok)).status == 422


async def test_delete_sees_old_object_and_null_object(api: Api) -> None:
    rules = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                                "resources": ["configmaps"]}]}
    p = policy("keep", [{"expression": "object == null && !('keep' in oldObject.metadata.?labels.orValue({}))",
                         "messageExpression": "'configmap ' + oldObject.metadata.name + ' is kept'"}],
               matchConstraints=rules)
    assert (await api.create(CMS, configmap("kept", labels={"keep": "yes"}))).status == 201
    assert (await api.create(CMS, configmap("gone"))).status == 201
    await install(api, p, binding("b", "keep"))
    r = await until(api, "DELETE", f"{CMS}/kept", None, 422)
    assert r.status == 422
    assert r.json()["message"] == ('configmaps "kept" is forbidden: ValidatingAdmissionPolicy \'keep\' with binding '
                                   "'b' denied request: configmap kept is kept")
    assert (await api.request("DELETE", f"{CMS}/gone")).status == 200
    assert (await api.request("GET", f"{CMS}/kept")).status == 200


async def test_subresource_rules(api: Api) -> None:
    rules = {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                                "resources": ["deployments/scale"]}]}
    p = policy("scale", [{"expression": "object.spec.replicas <= 3", "message": "scale at most 3",
                          }, {"expression": "request.subResource == 'scale' && object.kind == 'Scale'"}],
               matchConstraints=rules)
    assert (await api.create(DEPLOYS, deployment(replicas=1))).status == 201
    await install(api, p, binding("b", "scale"))
    scale = (await api.request("GET", f"{DEPLOYS}/web/scale")).json()
    scale["spec"]["replicas"] = 5
    r = await until(api, "PUT", f"{DEPLOYS}/web/scale", scale, 422)
    assert r.status == 422 and r.json()["message"].endswith("denied request: scale at most 3")
    # the main resource is not matched by a subresource rule
    got = (await api.request("GET", f"{DEPLOYS}/web")).json()
    got["spec"]["replicas"] = 5
    assert (await api.request("PUT", f"{DEPLOYS}/web", got)).status == 200


async def test_without_informers_the_registry_is_read(nursery: trio.Nursery) -> None:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    api = Api(app, registry)
    await install(api, policy("max", [{"expression": "object.spec.replicas <= 2"}]), binding("b", "max"))
    r = await api.create(DEPLOYS, deployment(replicas=3))  # at once: nothing to wait for
    assert r.status == 422 and r.json()["message"].endswith("denied request: failed expression: "
                                                            "object.spec.replicas <= 2")


async def test_namespaced_params_for_a_cluster_scoped_request(api: Api) -> None:
    rules = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["namespaces"]}]}
    p = policy("ns-params", [{"expression": "namespaceObject == null"}],
               matchConstraints=rules, paramKind=PARAM_KIND)
    await install(api, p, binding("b", "ns-params", paramRef={"name": "x", "parameterNotFoundAction": "Allow"}))
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}
    r = await until(api, "POST", "/api/v1/namespaces", ns, 422)
    assert r.json()["message"] == (
        'namespaces "fresh" is forbidden: ValidatingAdmissionPolicy \'ns-params\' with binding \'b\' denied request: '
        "failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped "
        "resources")
    # with the params' namespace named, the policy is evaluated (and passes: no namespaceObject for a Namespace)
    await api.create(CMS, configmap("x"))
    got = (await api.request("GET", f"{AR}/validatingadmissionpolicybindings/b")).json()
    got["spec"]["paramRef"]["namespace"] = "default"
    assert (await api.request("PUT", f"{AR}/validatingadmissionpolicybindings/b", got)).status == 200
    r = await until(api, "POST", "/api/v1/namespaces", ns, 201)
    assert r.status == 201, r.body


async def test_match_policy_equivalent_converts_the_object(api: Api) -> None:
    rules = {"matchPolicy": "Equivalent",
             "resourceRules": [{"apiGroups": ["autoscaling"], "apiVersions": ["v1"], "operations": ["CREATE"],
                                "resources": ["horizontalpodautoscalers"]}]}
    p = policy("hpa", [{"expression": "object.apiVersion == 'autoscaling/v1' && "
                                      "object.spec.targetCPUUtilizationPercentage <= 80",
                        "messageExpression": "'at most 80%, at ' + request.resource.version + ' of ' + "
                                             "request.requestResource.version"}], matchConstraints=rules)
    await install(api, p, binding("b", "hpa"))
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 3,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": 90}}}]}}
    path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
    r = await until(api, "POST", path, hpa, 422)
    assert r.status == 422
    assert r.json()["message"].endswith("denied request: at most 80%, at v1 of v2")
    hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = 50
    assert (await api.create(path, hpa)).status == 201
    # with matchPolicy Exact the v2 request is not matched
    got = (await api.request("GET", f"{AR}/validatingadmissionpolicies/hpa")).json()
    got["spec"]["matchConstraints"]["matchPolicy"] = "Exact"
    got["spec"]["validations"][0]["expression"] = "false"
    assert (await api.request("PUT", f"{AR}/validatingadmissionpolicies/hpa", got)).status == 200
    hpa["metadata"]["name"] = "h2"
    r = await until(api, "POST", path, hpa, 201)
    assert r.status == 201
