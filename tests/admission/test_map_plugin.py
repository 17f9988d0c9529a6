"""The MutatingAdmissionPolicy plugin through the API: ApplyConfiguration and JSONPatch mutations,
params, matchConditions, variables, binding matchResources, failurePolicy, kube's messages and
reinvocation (Never / IfNeeded); the mutated object is re-defaulted and admitted."""

from __future__ import annotations

from typing import Any

from kapi.admission import cel
from tests.api import conftest as _api
from tests.api.conftest import Api

api = _api.api  # the in-process API fixture, used by name

Obj = dict[str, Any]
BETA = "/apis/admissionregistration.k8s.io/v1beta1"
CMS = "/api/v1/namespaces/default/configmaps"
RULES = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]


def policy(name: str, *mutations: Obj, **spec: Any) -> Obj:
    body: Obj = {"matchConstraints": {"resourceRules": RULES}, "reinvocationPolicy": "Never",
                 "mutations": list(mutations)}
    body.update(spec)
    return {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": body}


def apply(expression: str) -> Obj:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def jsonpatch(expression: str) -> Obj:
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


async def install(api: Api, pol: Obj, **binding_spec: Any) -> None:
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", pol)
    assert r.status == 201, r.body
    name = pol["metadata"]["name"]
    r = await api.create(f"{BETA}/mutatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": f"{name}-binding"}, "spec": {"policyName": name, **binding_spec}})
    assert r.status == 201, r.body


def cm(name: str, **labels: str) -> Obj:
    md: Obj = {"name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"k": "v"}}


async def test_apply_configuration_adds_a_label(api: Api) -> None:
    await install(api, policy("add-label", apply('Object{metadata: Object.metadata{labels: {"team": "blue"}}}')))
    r = await api.create(CMS, cm("one", app="x"))
    assert r.status == 201, r.body
    assert r.json()["metadata"]["labels"] == {"app": "x", "team": "blue"}
    stored = (await api.request("GET", f"{CMS}/one")).json()
    assert stored["metadata"]["labels"]["team"] == "blue"
    # UPDATE is matched too: a label taken away comes back
    stored["metadata"]["labels"] = {"app": "y"}
    r = await api.request("PUT", f"{CMS}/one", stored)
    assert r.status == 200, r.body
    assert r.json()["metadata"]["labels"] == {"app": "y", "team": "blue"}
    # other resources are not matched
    r = await api.create("/api/v1/namespaces/default/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                               "metadata": {"name": "s"}})
    assert "labels" not in r.json()["metadata"]


async def test_json_patch_with_escaped_key_and_variables(api: Api) -> None:
    await install(api, policy(
        "annotate",
        jsonpatch('[JSONPatch{op: "add", path: "/metadata/annotations", value: {}}, '
                  'JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey("example.com/owner"), '
                  'value: variables.owner}]'),
        variables=[{"name": "owner", "expression": "request.userInfo.username + '@' + object.metadata.name"}]))
    r = await api.create(CMS, cm("two"))
    assert r.status == 201, r.body
    assert r.json()["metadata"]["annotations"] == {"example.com/owner": "kapi-admin@two"}


async def test_json_patch_failed_test_leaves_the_object(api: Api) -> None:
    await install(api, policy("guarded", jsonpatch(
        '[JSONPatch{op: "test", path: "/data/k", value: "other"}, '
        'JSONPatch{op: "replace", path: "/data/k", value: "patched"}]')))
    r = await api.create(CMS, cm("three"))
    assert r.status == 201 and r.json()["data"] == {"k": "v"}


async def test_params_and_parameter_not_found(api: Api) -> None:
    pol = policy("from-params", apply('Object{metadata: Object.metadata{labels: {"tier": params.data.tier}}}'),
                 paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    pol["spec"]["matchConstraints"]["objectSelector"] = {"matchExpressions": [
        {"key": "skip", "operator": "DoesNotExist"}]}
    await install(api, pol, paramRef={"name": "tiers", "namespace": "default"})
    r = await api.create(CMS, cm("four"))
    assert r.status == 403
    body = r.json()
    assert body["message"] == ("policy 'from-params' with binding 'from-params-binding' denied request: "
                               "failed to configure binding: no params found for policy binding with `Deny` "
                               "parameterNotFoundAction")
    assert body["reason"] == "Forbidden"
    assert body["details"]["causes"] == [{"message": body["message"]}]
    r = await api.create(CMS, {**cm("tiers", skip="yes"), "data": {"tier": "gold"}})
    assert r.status == 201, r.body
    r = await api.create(CMS, cm("five"))
    assert r.status == 201, r.body
    assert r.json()["metadata"]["labels"] == {"tier": "gold"}


async def test_match_conditions(api: Api) -> None:
    await install(api, policy("only-labelled", apply('Object{metadata: Object.metadata{labels: {"seen": "yes"}}}'),
                              matchConditions=[{"name": "has-app", "expression": "'app' in object.metadata.labels"}]))
    # the condition is an error for an object without labels: failurePolicy Fail refuses
    r = await api.create(CMS, cm("six"))
    assert r.status == 403
    assert r.json()["reason"] == "Invalid"
    assert r.json()["message"].startswith("policy 'only-labelled' with binding 'only-labelled-binding' denied "
                                          "request: expression ''app' in object.metadata.labels' resulted in error")
    r = await api.create(CMS, cm("seven", other="1"))
    assert r.status == 201 and r.json()["metadata"]["labels"] == {"other": "1"}
    r = await api.create(CMS, cm("eight", app="1"))
    assert r.status == 201 and r.json()["metadata"]["labels"] == {"app": "1", "seen": "yes"}


async def test_failure_policy_and_errors(api: Api) -> None:
    await install(api, policy("broken", apply("Object{data: {'k': object.missing.field}}"), failurePolicy="Ignore"))
    r = await api.create(CMS, cm("nine"))
    assert r.status == 201 and r.json()["data"] == {"k": "v"}
    await install(api, policy("mismatch", apply('Object{metadata: Object.spec{labels: {"a": "b"}}}')))
    r = await api.create(CMS, cm("ten"))
    assert r.status == 403
    assert r.json()["message"] == ("policy 'mismatch' with binding 'mismatch-binding' denied request: type mismatch: "
                                   'expected type name "Object.spec" to match field path "Object.metadata"')
    assert r.json()["reason"] == "Invalid"


async def test_atomic_fields_may_not_be_set(api: Api) -> None:
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]
    await install(api, policy("selector", apply(
        'Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {"a": "b"}}}}'),
        matchConstraints={"resourceRules": rules}))
    r = await api.create("/apis/apps/v1/namespaces/default/deployments", deployment("d1"))
    assert r.status == 403
    assert r.json()["message"] == (
        "policy 'selector' with binding 'selector-binding' denied request: error applying patch: invalid "
        "ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector")


def deployment(name: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}


async def test_sidecar_merged_by_name_and_defaulted(api: Api) -> None:
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]
    await install(api, policy("sidecar", apply(
        'Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{'
        'containers: [Object.spec.template.spec.containers{name: "proxy", image: "envoy:v1"}, '
        'Object.spec.template.spec.containers{name: "main", workingDir: "/srv"}]}}}}'),
        matchConstraints={"resourceRules": rules}))
    r = await api.create("/apis/apps/v1/namespaces/default/deployments", deployment("d2"))
    assert r.status == 201, r.body
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["proxy", "main"]
    assert containers[1]["image"] == "nginx" and containers[1]["workingDir"] == "/srv"
    # the added container is defaulted as the request's own are
    assert containers[0]["imagePullPolicy"] == "IfNotPresent"
    assert containers[0]["terminationMessagePath"] == "/dev/termination-log"


async def test_reinvocation_if_needed_and_never(api: Api) -> None:
    seen = 'Object{metadata: Object.metadata{labels: {"a": "b" in object.metadata.labels ? "saw-b" : "no-b"}}}'
    await install(api, policy("a-first", apply(seen), reinvocationPolicy="IfNeeded"))
    await install(api, policy("b-second", apply('Object{metadata: Object.metadata{labels: {"b": "1"}}}')))
    r = await api.create(CMS, cm("eleven", x="1"))
    assert r.status == 201, r.body
    assert r.json()["metadata"]["labels"] == {"x": "1", "a": "saw-b", "b": "1"}


async def test_never_is_not_reinvoked(api: Api) -> None:
    seen = 'Object{metadata: Object.metadata{labels: {"a": "b" in object.metadata.labels ? "saw-b" : "no-b"}}}'
    await install(api, policy("a-first", apply(seen), reinvocationPolicy="Never"))
    await install(api, policy("b-second", apply('Object{metadata: Object.metadata{labels: {"b": "1"}}}')))
    r = await api.create(CMS, cm("twelve", x="1"))
    assert r.status == 201, r.body
    assert r.json()["metadata"]["labels"] == {"x": "1", "a": "no-b", "b": "1"}


async def test_binding_match_resources_and_v1alpha1(api: Api) -> None:
    pol = policy("scoped", apply('Object{metadata: Object.metadata{labels: {"scoped": "yes"}}}'))
    pol["apiVersion"] = "admissionregistration.k8s.io/v1alpha1"
    r = await api.create("/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies", pol)
    assert r.status == 201, r.body
    r = await api.create(f"{BETA}/mutatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "scoped-binding"}, "spec": {"policyName": "scoped", "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-public"}}}}})
    assert r.status == 201, r.body
    r = await api.create(CMS, cm("thirteen"))
    assert "labels" not in r.json()["metadata"]
    r = await api.create("/api/v1/namespaces/kube-public/configmaps", cm("fourteen"))
    assert r.json()["metadata"]["labels"] == {"scoped": "yes"}


async def test_expressions_are_compiled_when_a_policy_is_written(api: Api) -> None:
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", policy("bad", apply("Object{metadata: }")))
    assert r.status == 422
    cause = r.json()["details"]["causes"][0]
    assert cause["field"] == "spec.mutations[0].applyConfiguration.expression"
    assert cause["message"].startswith('Invalid value: "Object{metadata: }": compilation failed: ')
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", policy(
        "not-an-object", apply("'text'"), matchConditions=[{"name": "c", "expression": "1"}],
        variables=[{"name": "v", "expression": "object.+"}]))
    assert r.status == 422
    causes = {c["field"]: c["message"] for c in r.json()["details"]["causes"]}
    assert causes["spec.mutations[0].applyConfiguration.expression"] == (
        "Invalid value: \"'text'\": must evaluate to Object but got string")
    assert causes["spec.matchConditions[0].expression"] == 'Invalid value: "1": must evaluate to bool but got int'
    assert causes["spec.variables[0].expression"].startswith('Invalid value: "object.+": compilation failed: ')
    r = await api.create(f"{BETA}/mutatingadmissionpolicies", policy("jp", jsonpatch('JSONPatch{op: "remove"}')))
    assert r.status == 422
    assert "must evaluate to list(JSONPatch) but got map(string, string)" in r.json()["message"]


async def test_json_patch_that_does_not_apply(api: Api) -> None:
    await install(api, policy("remove-missing", jsonpatch('[JSONPatch{op: "remove", path: "/spec/missing"}]')))
    r = await api.create(CMS, cm("seventeen"))
    assert r.status == 403
    assert r.json()["message"] == ("policy 'remove-missing' with binding 'remove-missing-binding' denied request: "
                                   'JSONPath: doc is missing path: "/spec/missing": missing value')


def test_a_policy_that_does_not_compile_fails_at_admission() -> None:
    import trio

    from kapi.admission.policy.mutating import PatchError, compile_policy

    compiled = compile_policy(policy("bad", apply("Object{metadata: }")))
    assert compiled.fail and not compiled.reinvoke

    async def run() -> str:
        try:
            schema: Any = None  # never reached: the expression did not compile
            await compiled.apply(0, cel.Activation(), {}, schema, ("", "v1", "ConfigMap"), cel.Budget(10**6))
        except PatchError as exc:
            return exc.message
        return ""

    assert trio.run(run).startswith("compilation failed: ")


async def test_equivalent_version_is_mutated_and_converted_back(api: Api) -> None:
    rules = [{"apiGroups": ["autoscaling"], "apiVersions": ["v2"], "operations": ["CREATE"],
              "resources": ["horizontalpodautoscalers"]}]
    await install(api, policy("hpa", apply(
        'Object{metadata: Object.metadata{labels: {"seen-as": request.resource.version, '
        '"kind": request.kind.version}}, spec: Object.spec{minReplicas: 2}}'),
        matchConstraints={"resourceRules": rules}))
    hpa = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                    "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}}
    r = await api.create("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", hpa)
    assert r.status == 201, r.body
    got = r.json()
    assert got["apiVersion"] == "autoscaling/v1"
    assert got["metadata"]["labels"] == {"seen-as": "v2", "kind": "v2"}
    assert got["spec"]["minReplicas"] == 2 and got["spec"]["targetCPUUtilizationPercentage"] == 50
    # with matchPolicy Exact the v1 request is not matched
    current = (await api.request("GET", f"{BETA}/mutatingadmissionpolicies/hpa")).json()
    current["spec"]["matchConstraints"]["matchPolicy"] = "Exact"
    assert (await api.request("PUT", f"{BETA}/mutatingadmissionpolicies/hpa", current)).status == 200
    r = await api.create("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers",
                         {**hpa, "metadata": {"name": "h2"}})
    assert r.status == 201 and "labels" not in r.json()["metadata"]


async def test_fields_the_schema_does_not_declare_are_refused(api: Api) -> None:
    await install(api, policy("unknown", apply('Object{bogus: 1, metadata: Object.metadata{labels: {"a": "b"}}}')))
    r = await api.create(CMS, cm("eighteen"))
    assert r.status == 403
    assert r.json()["message"] == ("policy 'unknown' with binding 'unknown-binding' denied request: error applying "
                                   "patch: failed to convert patch object to typed object: .bogus: field not declared "
                                   "in schema")


async def test_scale_subresource(api: Api) -> None:
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
              "resources": ["deployments/scale"]}]
    await install(api, policy("at-least-two", apply(
        "Object{spec: Object.spec{replicas: object.spec.replicas < 2 ? 2 : object.spec.replicas}}"),
        matchConstraints={"resourceRules": rules}, matchConditions=[
            {"name": "is-scale", "expression": "request.kind.kind == 'Scale' && request.subResource == 'scale'"}]))
    path = "/apis/apps/v1/namespaces/default/deployments"
    assert (await api.create(path, deployment("d3"))).status == 201
    scale = (await api.request("GET", f"{path}/d3/scale")).json()
    scale["spec"]["replicas"] = 1
    r = await api.request("PUT", f"{path}/d3/scale", scale)
    assert r.status == 200, r.body
    assert r.json()["spec"]["replicas"] == 2
    assert (await api.request("GET", f"{path}/d3")).json()["spec"]["replicas"] == 2


async def test_json_patch_adding_an_unknown_field_is_an_internal_error(api: Api) -> None:
    await install(api, policy("unknown-jp", jsonpatch('[JSONPatch{op: "add", path: "/bogus", value: 1}]'),
                              failurePolicy="Ignore"))
    r = await api.create(CMS, cm("nineteen"))
    # the decoding error is kube's StatusError, answered whatever the failurePolicy
    assert r.status == 500
    assert r.json()["message"] == 'Internal error occurred: strict decoding error: unknown field "bogus"'


async def test_custom_resource_merged_with_its_crd_schema(nursery: Any) -> None:
    import copy

    from tests.crd.serving_support import serve_crds, widget_crd

    crd = widget_crd()
    spec_props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec_props["ports"] = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                           "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                      "port": {"type": "integer"}}}}
    spec_props["args"] = {"type": "array", "items": {"type": "string"}}
    cr_api = await serve_crds(nursery, crd)
    rules = [{"apiGroups": ["stable.example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["widgets"]}]
    await install(cr_api, policy("widget-port", apply(
        'Object{spec: Object.spec{ports: [Object.spec.ports{name: "metrics", port: 9090}]}}'),
        matchConstraints={"resourceRules": rules}))
    widget = {"apiVersion": "stable.example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"color": "red", "ports": [{"name": "http", "port": 80}]}}
    path = "/apis/stable.example.com/v1/namespaces/default/widgets"
    r = await cr_api.create(path, copy.deepcopy(widget))
    assert r.status == 201, r.body
    assert r.json()["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]
    assert r.json()["spec"]["size"] == 3  # the CRD's defaults applied
    await install(cr_api, policy("widget-args", apply('Object{spec: Object.spec{args: ["x"]}}'),
                                 matchConstraints={"resourceRules": rules}))
    r = await cr_api.create(path, {**widget, "metadata": {"name": "w2"}})
    assert r.status == 403
    assert r.json()["message"].endswith("may not mutate atomic arrays, maps or structs: .spec.args")
