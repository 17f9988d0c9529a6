"""End to end: kubectl 1.33 against ``kapi serve`` applies a MutatingAdmissionPolicy (v1beta1) and its
binding, lists them with kube's columns, and a ConfigMap it then creates comes back labelled."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e import conftest as _e2e
from tests.e2e.conftest import Kubectl

# the end-to-end fixtures, used by name
shared_server, server, namespace, kubectl133 = _e2e.shared_server, _e2e.server, _e2e.namespace, _e2e.kubectl133

POLICY = """
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata:
  name: e2e-add-label
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: opted-in
    expression: "has(object.metadata.labels) && object.metadata.labels['map-e2e'] == 'yes'"
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{metadata: Object.metadata{labels: {"team": "blue"}}}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: e2e-add-label-binding
spec:
  policyName: e2e-add-label
"""


@pytest.mark.e2e
def test_kubectl_applies_a_policy_that_adds_a_label(kubectl133: Kubectl, namespace: str) -> None:
    try:
        kubectl133.run("apply", "-f", "-", input=POLICY)
        out = kubectl133.run("get", "mutatingadmissionpolicies").stdout
        assert out.split("\n")[0].split() == ["NAME", "MUTATIONS", "PARAMKIND", "AGE"]
        assert "e2e-add-label" in out and "<unset>" in out
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"map-e2e": "yes"}}}
        labels: dict[str, str] = {}
        for i in range(100):  # the policy reaches the plugin through the informers: soon, bounded
            cm["metadata"]["name"] = f"cm-{i}"
            made = json.loads(kubectl133.run("create", "-f", "-", "-o", "json", input=json.dumps(cm),
                                             namespace=namespace).stdout)
            labels = made["metadata"]["labels"]
            if "team" in labels:
                break
            time.sleep(0.1)
        assert labels == {"map-e2e": "yes", "team": "blue"}
    finally:
        kubectl133.run("delete", "mutatingadmissionpolicybindings.v1beta1.admissionregistration.k8s.io",
                       "e2e-add-label-binding", "--ignore-not-found", check=False)
        kubectl133.run("delete", "mutatingadmissionpolicies.v1beta1.admissionregistration.k8s.io",
                       "e2e-add-label", "--ignore-not-found", check=False)
