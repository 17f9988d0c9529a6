"""The admission CEL environment (kapi.admission.cel): kube's compile messages and return-type checks,
the declared variables (params only with paramKind, authorizer not in messageExpressions), composited
variables evaluated on use with kube's errors, evaluation errors, the authorizer library resolved
through an authorizer, the per-call limit and the shared budget, and the request/namespace bindings."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi.admission import cel
from kapi.admission.plugin import Attributes
from kapi.apis import BUILTIN
from kapi.object.access import Decision, UserInfo
from kapi.registry.admit import AdmissionRequest
from kapi.registry.resources import ResourceTable


def test_compile_errors_as_kube_words_them() -> None:
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("object.")
    assert e.value.message == ("compilation failed: ERROR: <input>:1:8: Syntax error: no viable alternative at "
                               "input '.'\n | object.\n | .......^")
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("foo == 1")
    assert e.value.message == ("compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' "
                               "(in container '')\n | foo == 1\n | ^")
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("params.x == 1", params=False)
    assert "undeclared reference to 'params' (in container '')" in e.value.message
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("authorizer.path('/').check('get').reason()", kind="string", authorizer=False)
    assert "undeclared reference to 'authorizer'" in e.value.message


def test_return_types() -> None:
    assert cel.compile_expression("object.spec.replicas > 1").output == "bool"
    for text, kind, msg in (("1", "bool", "must evaluate to bool but got int"),
                            ("object.x", "bool", "must evaluate to bool but got dyn"),
                            ("[1]", "string", "must evaluate to string but got list(int)"),
                            ("{'a': 1}", "bool", "must evaluate to bool but got map(string, int)"),
                            ("1", "string_or_null", "must evaluate to one of [string null_type] but got int")):
        with pytest.raises(cel.CelError) as e:
            cel.compile_expression(text, kind=kind)
        assert e.value.message == msg
    assert cel.compile_expression("null", kind="string_or_null").output == "null_type"
    assert cel.compile_expression("[1, 2]", kind="any").output == "list(int)"


def test_undeclared_variable_reference() -> None:
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("variables.later > 1", ["earlier"])
    assert e.value.message == ("compilation failed: ERROR: <input>:1:10: undefined field 'later'\n"
                               " | variables.later > 1\n | .........^")
    # a string that mentions variables is not a reference
    assert cel.compile_expression("'variables.none' != ''").references == frozenset()


def test_evaluation_errors() -> None:
    act = cel.Activation(object={"spec": {"list": [1]}})
    for text, msg in (("object.spec.missing == 1", "no such key: missing"),
                      ("object.spec.list[3] == 1", "index out of range: 3"),
                      ("1 / 0 == 1", "divide by zero")):
        with pytest.raises(cel.EvalError) as e:
            cel.compile_expression(text).evaluate(act)
        assert e.value.message == f"expression '{text}' resulted in error: {msg}"
    assert cel.compile_expression("oldObject == null").evaluate(act) is True


def test_composited_variables_lazy_and_errors() -> None:
    vs = cel.compile_variables([("doubled", "object.n * 2"), ("plus", "variables.doubled + 1"),
                                ("broken", "object.nope"), ("uncompiled", "variables.absent")])
    assert isinstance(vs["uncompiled"], cel.CelError)
    act = cel.Activation(object={"n": 3}, variables=vs)
    assert cel.compile_expression("variables.plus == 7", vs).evaluate(act) is True
    assert "broken" not in act.var_values  # never read, never evaluated
    assert cel.compile_expression("true || variables.broken == 1", vs).evaluate(act) is True
    with pytest.raises(cel.EvalError) as e:
        cel.compile_expression("variables.broken == 1", vs).evaluate(act)
    assert e.value.message == ("expression 'variables.broken == 1' resulted in error: composited variable "
                               '"broken" fails to evaluate: no such key: nope')
    with pytest.raises(cel.EvalError) as e:
        cel.compile_expression("variables.uncompiled == 1", vs).evaluate(act)
    assert e.value.message.startswith("expression 'variables.uncompiled == 1' resulted in error: composited "
                                      'variable "uncompiled" fails to compile: compilation failed: ERROR: ')


def test_kube_libraries_available() -> None:
    act = cel.Activation(object={"metadata": {"name": "web-1"}, "spec": {"cpu": "500m", "ip": "10.0.0.1"}})
    for text in ("quantity(object.spec.cpu).isLessThan(quantity('1'))", "object.metadata.name.matches('^web-')",
                 "ip(object.spec.ip).family() == 4", "cidr('10.0.0.0/8').containsIP(object.spec.ip)",
                 "['a', 'b'].join('-') == 'a-b'", "object.metadata.name.split('-')[1] == '1'",
                 "optional.of(1).hasValue()", "cel.bind(x, 2, x * x == 4)"):
        assert cel.compile_expression(text).evaluate(act) is True, text


class _Access:
    def __init__(self) -> None:
        self.asked: list[Any] = []

    async def authorize(self, attrs: Any) -> Decision:
        self.asked.append(attrs)
        if attrs.resource_request:
            ok = attrs.verb == "get" and attrs.resource == "pods" and attrs.user.name == "alice"
        else:
            ok = attrs.path == "/healthz"
        return Decision("Allow" if ok else "NoOpinion", "reason " + attrs.verb)


async def test_authorizer_library() -> None:
    access = _Access()
    az = cel.Authorizer(access=access, user=UserInfo("alice", uid="u1", groups=("devs",)),
                        request_resource={"group": "apps", "resource": "deployments", "subresource": "scale",
                                          "namespace": "ns", "name": "web"})
    act = cel.Activation(object={}, authorizer=az)

    async def ev(text: str, kind: str = "bool") -> Any:
        return await cel.compile_expression(text, kind=kind).evaluate_async(act, cel.Budget())

    assert await ev("authorizer.group('').resource('pods').namespace('ns').name('p').check('get').allowed()")
    assert not await ev("authorizer.group('').resource('pods').check('delete').allowed()")
    assert await ev("authorizer.group('').resource('pods').check('delete').reason()", "string") == "reason delete"
    assert await ev("authorizer.path('/healthz').check('get').allowed() && "
                    "!authorizer.path('/metrics').check('get').allowed()")
    assert not await ev("authorizer.requestResource.check('update').allowed()")
    assert not await ev("authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('get').allowed()")
    assert not await ev("authorizer.group('').resource('pods').check('get').errored()")
    by_verb = {(a.verb, a.user.name, a.resource, a.subresource, a.namespace, a.name, a.path) for a in access.asked}
    assert ("get", "alice", "pods", "", "ns", "p", "") in by_verb
    assert ("update", "alice", "deployments", "scale", "ns", "web", "") in by_verb
    assert ("get", "system:serviceaccount:ns:sa", "pods", "", "", "", "") in by_verb
    sa = next(a for a in access.asked if a.user.name.startswith("system:serviceaccount"))
    assert sa.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns")
    assert all(a.version == "*" for a in access.asked if a.resource_request)
    # each check is asked once per activation
    n = len(access.asked)
    assert await ev("authorizer.group('').resource('pods').namespace('ns').name('p').check('get').allowed()")
    assert len(access.asked) == n


async def test_authorizer_in_a_variable() -> None:
    access = _Access()
    az = cel.Authorizer(access=access, user=UserInfo("alice"))
    vs = cel.compile_variables([("canGet", "authorizer.group('').resource('pods').check('get').allowed()")])
    act = cel.Activation(object={}, authorizer=az, variables=vs)
    c = cel.compile_expression("variables.canGet", vs)
    assert await c.evaluate_async(act) is True


def test_cost_limits() -> None:
    big = {"items": list(range(200_000))}
    act = cel.Activation(object=big)
    c = cel.compile_expression("object.items.all(x, object.items.exists(y, y == x))")
    with pytest.raises(cel.EvalError) as e:
        c.evaluate(act, cel.Budget())
    assert e.value.message.endswith("resulted in error: operation cancelled: actual cost limit exceeded")
    budget = cel.Budget(cel.RUNTIME_CEL_COST_BUDGET)
    cheap = cel.compile_expression("object.items.all(x, x >= 0)")
    act = cel.Activation(object={"items": list(range(5_000))})
    assert cheap.evaluate(act, budget) is True
    assert budget.remaining < cel.RUNTIME_CEL_COST_BUDGET
    with pytest.raises(cel.OutOfBudget) as ob:
        for _ in range(1000):
            cheap.evaluate(act, budget)
    assert ob.value.message == ("validation failed due to running out of cost budget, no further validation "
                                "rules will be run")


def test_activation_of_a_request() -> None:
    table = ResourceTable(BUILTIN)
    res = next(r for r in table.resources if (r.group, r.resource) == ("apps", "deployments"))
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"}}
    a = Attributes(AdmissionRequest(operation="UPDATE", resource=res, subresource="", namespace="ns", name="web",
                                    obj=obj, old=obj, dry_run=True),
                   UserInfo("alice", uid="u1", groups=("devs",)), {"kind": "UpdateOptions"}, [])
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "ns", "labels": {"env": "prod"}, "managedFields": [{"manager": "x"}],
                       "ownerReferences": []}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    act = cel.activation(a, namespace_obj=ns)
    assert act.request["operation"] == "UPDATE" and act.request["dryRun"] is True
    assert "uid" not in act.request and "object" not in act.request
    assert act.request["userInfo"] == {"username": "alice", "uid": "u1", "groups": ["devs"]}
    assert act.request["kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert act.namespaceObject == {"metadata": {"name": "ns", "labels": {"env": "prod"}},
                                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    c = cel.compile_expression("request.userInfo.groups.exists(g, g == 'devs') && "
                               "namespaceObject.metadata.labels.env == 'prod' && object.metadata.name == 'web'")
    assert c.evaluate(act) is True


def test_evaluate_async_without_authorizer_is_plain() -> None:
    async def main() -> Any:
        return await cel.compile_expression("1 + 1 == 2").evaluate_async(cel.Activation())
    assert trio.run(main) is True


def test_conditional_with_a_null_branch_is_typed_by_the_other() -> None:
    """kube's documented auditAnnotations: ``cond ? 'text' : null`` is a string-or-null expression."""
    c = cel.compile_expression("object.n > 5 ? 'high: ' + string(object.n) : null", kind="string_or_null")
    assert c.output == "string"
    assert c.evaluate(cel.Activation(object={"n": 7})) == "high: 7"
    assert c.evaluate(cel.Activation(object={"n": 1})) is None
    assert cel.compile_expression("object.n > 5 ? null : 'low'", kind="string_or_null").output == "string"
    assert cel.compile_expression("'null' + 'x' == 'nullx'").evaluate(cel.Activation()) is True


def test_request_and_namespace_object_are_typed() -> None:
    """kube declares ``request`` and ``namespaceObject`` with their types: a field they do not have,
    or a comparison with the wrong type, does not compile."""
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("request.user == 'bob'")
    assert e.value.message == ("compilation failed: ERROR: <input>:1:8: undefined field 'user'\n"
                               " | request.user == 'bob'\n | .......^")
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("request.operation == 1")
    assert "found no matching overload for '_==_' applied to '(string, int)'" in e.value.message
    with pytest.raises(cel.CelError) as e:
        cel.compile_expression("namespaceObject.metadata.labelz['a'] == 'b'")
    assert "undefined field 'labelz'" in e.value.message
    for ok in ("request.userInfo.extra['k'].exists(v, v == 'x')", "request.options.dryRun == ['All']",
               "namespaceObject.status.phase == 'Active'", "request.dryRun"):
        cel.compile_expression(ok, kind="any")


def test_request_leaves_out_empty_fields_as_json_does() -> None:
    """kube's request value looks like the AdmissionRequest's JSON: empty omitempty fields are absent."""
    table = ResourceTable(BUILTIN)
    res = next(r for r in table.resources if (r.group, r.resource) == ("", "namespaces"))
    a = Attributes(AdmissionRequest(operation="CREATE", resource=res, subresource="", namespace="", name="",
                                    obj={"metadata": {"generateName": "x-"}}, old=None),
                   UserInfo("alice"), {"kind": "CreateOptions"}, [])
    act = cel.activation(a)
    assert "name" not in act.request and "namespace" not in act.request and "subResource" not in act.request
    assert act.request["dryRun"] is False and act.request["options"] == {"kind": "CreateOptions"}
    assert cel.compile_expression("!has(request.subResource) && !has(request.name)").evaluate(act) is True
