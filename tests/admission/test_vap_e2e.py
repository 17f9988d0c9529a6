"""ValidatingAdmissionPolicy under a real ``kapi serve`` with kubectl 1.33: the policy status
controller serve() runs writes status.typeChecking, kubectl prints the policy's denial as kube's, and
a Warn binding's warning; an Audit binding's failure and a policy's auditAnnotations are in the
audit log."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.conftest import Kubectl, Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e

POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 3"
    messageExpression: "'replicas ' + string(object.spec.replicas) + ' is more than 3'"
  - expression: "object.replicas < 100"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: labelled
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "deployments should have a team label"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding
spec:
  policyName: replica-limit
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: labelled-binding
spec:
  policyName: labelled
  validationActions: [Warn]
"""


AUDITED = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: audited
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || object.data.size() < 2"
    message: "at most one key"
  auditAnnotations:
  - key: keys
    valueExpression: "has(object.data) ? string(object.data.size()) : null"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: audited-binding
spec:
  policyName: audited
  validationActions: [Audit]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = Path(tmp_path_factory.mktemp("vap"))
    (base / "audit-policy.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    srv = start_server(base / "data", "--audit-policy-file", str(base / "audit-policy.yaml"),
                       "--audit-log-path", str(base / "audit.log"))
    yield srv
    stop_server(srv)


def test_audit_annotations_in_the_audit_log(server: Server) -> None:
    path = kubectl_binary("1.33")
    k = Kubectl(path, server, "1.33")
    k.run("apply", "-f", "-", input=AUDITED)
    log = server.data_dir.parent / "audit.log"
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"},
                       "data": {"a": "1", "b": "2"}}).encode()
    annotations: dict[str, str] = {}
    for i in range(600):  # the policy reaches the informers: a dry run's audit event shows it
        code, headers, _ = server.request("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", body,
                                          {"Content-Type": "application/json"})
        assert code == 201
        audit_id = headers.get("Audit-Id") or headers.get("audit-id")
        for _ in range(40):
            events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
            done = [e for e in events if e["auditID"] == audit_id and e["stage"] == "ResponseComplete"]
            if done:
                annotations = done[0].get("annotations") or {}
                break
            time.sleep(0.05)
        if "audited/keys" in annotations:
            break
        time.sleep(0.05)
    assert annotations["audited/keys"] == "2"
    assert json.loads(annotations["validation.policy.admission.k8s.io/validation_failure"]) == [
        {"message": "at most one key", "policy": "audited", "binding": "audited-binding", "expressionIndex": 0,
         "validationActions": ["Audit"]}]


def test_policy_status_denial_and_warning(server: Server) -> None:
    path = kubectl_binary("1.33")
    k = Kubectl(path, server, "1.33")
    k.run("apply", "-f", "-", input=POLICY)
    status: dict[str, object] = {}
    for _ in range(600):
        got = json.loads(k.run("get", "validatingadmissionpolicy", "replica-limit", "-o", "json").stdout)
        status = got.get("status") or {}
        if status.get("observedGeneration") == 1:
            break
        time.sleep(0.05)
    assert status["typeChecking"] == {"expressionWarnings": [{
        "fieldRef": "spec.validations[1].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n"
                   " | object.replicas < 100\n | ......^\n"}]}
    # the policies reach the server's informers; until then a create may pass: try with dry runs
    for _ in range(600):
        proc = k.run("create", "deployment", "web", "--image=nginx", "--replicas=5", "--dry-run=server",
                     namespace="default", check=False)
        if proc.returncode != 0:
            break
        time.sleep(0.05)
    proc = k.run("create", "deployment", "web", "--image=nginx", "--replicas=5", namespace="default", check=False)
    assert proc.returncode != 0
    assert ('error: failed to create deployment: deployments.apps "web" is forbidden: ValidatingAdmissionPolicy '
            "'replica-limit' with binding 'replica-limit-binding' denied request: replicas 5 is more than 3"
            in proc.stderr), proc.stderr
    # replicas within the limit: the second validation reads a field that is not there (an error, Fail)
    proc = k.run("create", "deployment", "web", "--image=nginx", "--replicas=2", namespace="default", check=False)
    assert proc.returncode != 0
    assert ("denied request: expression 'object.replicas < 100' resulted in error: no such key: replicas"
            in proc.stderr), proc.stderr
    # fixed; the Warn binding's warning is printed
    fixed = POLICY.replace('"object.replicas < 100"', '"object.spec.replicas < 100"')
    k.run("apply", "-f", "-", input=fixed)
    for _ in range(600):
        proc = k.run("create", "deployment", "web", "--image=nginx", "--replicas=2", "--dry-run=server",
                     namespace="default", check=False)
        if proc.returncode == 0:
            break
        time.sleep(0.05)
    proc = k.run("create", "deployment", "web", "--image=nginx", "--replicas=2", namespace="default")
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled-binding': "
            "deployments should have a team label") in proc.stderr, proc.stderr
