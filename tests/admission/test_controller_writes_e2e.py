"""Under a real ``kapi serve`` with an audit log at Metadata: a ValidatingAdmissionPolicy refuses the
garbage collector's delete of a dependent (it stays; the collector tries again, each try audited as
``generic-garbage-collector``); the start-up objects are audited as ``system:apiserver``; a
MutatingAdmissionPolicy marks the ServiceAccount the namespace controller creates (issue 30, item 7)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.e2e.conftest import Server, start_server, stop_server

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
AR = "/apis/admissionregistration.k8s.io"
GC_USER = "system:serviceaccount:kube-system:generic-garbage-collector"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = Path(tmp_path_factory.mktemp("controller-writes"))
    (base / "audit-policy.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    srv = start_server(base / "data", "--audit-policy-file", str(base / "audit-policy.yaml"),
                       "--audit-log-path", str(base / "audit.log"))
    yield srv
    stop_server(srv)


def call(server: Server, method: str, path: str, body: Obj | None = None) -> tuple[int, Any]:
    code, _, raw = server.request(method, path, json.dumps(body).encode() if body is not None else None,
                                  {"Content-Type": "application/json"})
    return code, json.loads(raw) if raw else None


def events(server: Server) -> list[Obj]:
    log = server.data_dir.parent / "audit.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_start_up_objects_are_the_apiservers_audited_writes(server: Server) -> None:
    def created(name: str) -> list[Obj]:
        return [e for e in events(server) if e["stage"] == "ResponseComplete" and e["verb"] == "create"
                and e["objectRef"].get("resource") == "namespaces" and e["objectRef"].get("name") == name]

    made = wait_for(lambda: created("kube-system"), "the kube-system namespace's create event")
    assert made[0]["user"]["username"] == "system:apiserver"
    assert made[0]["user"]["groups"] == ["system:authenticated", "system:masters"]
    assert made[0]["responseStatus"]["code"] == 201


def test_policy_refuses_the_garbage_collectors_delete(server: Server) -> None:
    ns = "gc-refused"
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    assert call(server, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": ns}})[0] == 201
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "keep-labelled"},
              "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["DELETE"],
                                                               "resources": ["configmaps"]}]},
                       "validations": [{"expression": "!has(oldObject.metadata.labels) || "
                                                      "!('keep' in oldObject.metadata.labels)",
                                        "messageExpression": "'kept from ' + request.userInfo.username"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "keep-labelled"},
               "spec": {"policyName": "keep-labelled", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {
                            "kubernetes.io/metadata.name": ns}}}}}
    assert call(server, "POST", f"{AR}/v1/validatingadmissionpolicies", policy)[0] == 201
    assert call(server, "POST", f"{AR}/v1/validatingadmissionpolicybindings", binding)[0] == 201
    probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "labels": {"keep": "1"}}}
    assert call(server, "POST", cms, probe)[0] == 201
    wait_for(lambda: call(server, "DELETE", f"{cms}/probe?dryRun=All")[0] == 422, "the policy to apply")

    code, owner = call(server, "POST", cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    assert code == 201
    dep = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "dep", "labels": {"keep": "1"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                             "uid": owner["metadata"]["uid"]}]}}
    assert call(server, "POST", cms, dep)[0] == 201
    assert call(server, "DELETE", f"{cms}/owner")[0] == 200

    def refused() -> list[Obj]:
        return [e for e in events(server) if e["stage"] == "ResponseComplete" and e["verb"] == "delete"
                and e["user"]["username"] == GC_USER and e["objectRef"].get("namespace") == ns
                and e["objectRef"].get("name") == "dep" and e["responseStatus"]["code"] == 422]

    wait_for(lambda: len(refused()) >= 2, "the collector's refused deletes, tried again")
    assert call(server, "GET", f"{cms}/dep")[0] == 200  # the dependent stays
    first = refused()[0]
    assert f"kept from {GC_USER}" in first["responseStatus"]["message"]
    assert first["objectRef"] == {"resource": "configmaps", "namespace": ns, "name": "dep", "apiVersion": "v1"}
    assert first["userAgent"].startswith("kube-controller-manager/") and first["userAgent"].endswith(
        "/generic-garbage-collector")

    # The binding gone, a later try of the collector deletes the dependent.
    assert call(server, "DELETE", f"{AR}/v1/validatingadmissionpolicybindings/keep-labelled")[0] == 200
    wait_for(lambda: call(server, "GET", f"{cms}/dep")[0] == 404, "the dependent's deletion", timeout_s=60)


def test_mutating_policy_sees_the_namespace_controllers_service_account(server: Server) -> None:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
              "metadata": {"name": "who-made-it"},
              "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["CREATE"],
                                                               "resources": ["serviceaccounts"]}]},
                       "matchConditions": [{"name": "marked-namespaces",
                                            "expression": "namespaceObject.metadata.name.startsWith('marked-')"}],
                       "reinvocationPolicy": "Never",
                       "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                           "expression": "Object{metadata: Object.metadata{labels: {\"made-by\": "
                                         "request.userInfo.username.replace(':', '.')}}}"}}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": "who-made-it"}, "spec": {"policyName": "who-made-it"}}
    assert call(server, "POST", f"{AR}/v1beta1/mutatingadmissionpolicies", policy)[0] == 201
    assert call(server, "POST", f"{AR}/v1beta1/mutatingadmissionpolicybindings", binding)[0] == 201
    assert call(server, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "marked-probe"}})[0] == 201
    probe = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "probe"}}

    def applies() -> bool:
        code, body = call(server, "POST", "/api/v1/namespaces/marked-probe/serviceaccounts?dryRun=All", probe)
        return code == 201 and bool((body["metadata"].get("labels") or {}).get("made-by"))

    wait_for(applies, "the mutating policy to apply")
    assert call(server, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "marked-one"}})[0] == 201

    def default_sa() -> Obj | None:
        code, body = call(server, "GET", "/api/v1/namespaces/marked-one/serviceaccounts/default")
        return body if code == 200 else None

    sa = wait_for(default_sa, "the default ServiceAccount")
    assert sa["metadata"]["labels"] == {
        "made-by": "system.serviceaccount.kube-system.service-account-controller"}
