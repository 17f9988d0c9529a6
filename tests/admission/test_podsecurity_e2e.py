"""PodSecurity in a real ``kapi serve``: its PodSecurityConfiguration read from
--admission-control-config-file, kubectl 1.33 showing the refusal and the warnings (a pod, a
deployment, a namespace label that tightens enforce), and the pod-security.kubernetes.io audit
annotations in the audit log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e

PSA = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      audit: restricted
      warn: baseline
    exemptions:
      namespaces: [exempt]
"""
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: ["pods"]}]
- level: None
"""


def test_podsecurity_with_kubectl(tmp_path: Path) -> None:
    binary = kubectl_binary("1.33")
    (tmp_path / "admission.yaml").write_text(PSA)
    (tmp_path / "audit.yaml").write_text(AUDIT_POLICY)
    audit_log = tmp_path / "audit.log"
    server = start_server(tmp_path / "data", "--admission-control-config-file", str(tmp_path / "admission.yaml"),
                          "--audit-policy-file", str(tmp_path / "audit.yaml"), "--audit-log-path", str(audit_log))

    def kubectl(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, "--kubeconfig", str(server.kubeconfig), *args], input=input,
                              capture_output=True, text=True, timeout=120,
                              stdin=None if input is not None else subprocess.DEVNULL)

    try:
        assert kubectl("create", "namespace", "psa").returncode == 0
        # the default warn level (baseline) from the configuration
        out = kubectl("run", "-n", "psa", "host", "--image=nginx", "--overrides",
                      json.dumps({"spec": {"hostNetwork": True}}))
        assert out.returncode == 0, out.stderr
        assert 'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)' in out.stderr
        # tightening enforce: kubectl prints the existing pods' warnings
        out = kubectl("label", "namespace", "psa", "pod-security.kubernetes.io/enforce=baseline")
        assert out.returncode == 0, out.stderr
        assert ('Warning: existing pods in namespace "psa" violate the new PodSecurity enforce level '
                '"baseline:latest"') in out.stderr
        assert "Warning: host: host namespaces" in out.stderr
        # now refused
        out = kubectl("run", "-n", "psa", "priv", "--image=nginx", "--privileged")
        assert out.returncode != 0
        assert ('Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "baseline:latest": '
                'privileged (container "priv" must not set securityContext.privileged=true)') in out.stderr
        # a deployment is warned about, not refused
        out = kubectl("apply", "-n", "psa", "-f", "-", input=json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "hostpid"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"hostPID": True, "containers": [{"name": "c", "image": "nginx"}]}}}}))
        assert out.returncode == 0, out.stderr
        assert 'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)' in out.stderr
        # an invalid label
        out = kubectl("label", "namespace", "psa", "--overwrite", "pod-security.kubernetes.io/warn=loud")
        assert out.returncode != 0
        assert ('The Namespace "psa" is invalid: metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: '
                '"loud": must be one of privileged, baseline, restricted') in out.stderr
        # the exempt namespace
        assert kubectl("create", "namespace", "exempt").returncode == 0
        out = kubectl("run", "-n", "exempt", "priv", "--image=nginx", "--privileged")
        assert out.returncode == 0 and "Warning" not in out.stderr, out.stderr
    finally:
        stop_server(server)
    events = [json.loads(line) for line in audit_log.read_text().splitlines() if line.strip()]
    creates = {(e["objectRef"].get("namespace"), e["objectRef"].get("name")): e for e in events
               if e.get("verb") == "create" and e["objectRef"].get("resource") == "pods" and e.get("stage") ==
               "ResponseComplete"}
    host = creates[("psa", "host")]["annotations"]
    assert host["pod-security.kubernetes.io/enforce-policy"] == "privileged:latest"
    assert host["pod-security.kubernetes.io/audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true), allowPrivilegeEscalation')
    refused = creates[("psa", "priv")]["annotations"]
    assert refused["pod-security.kubernetes.io/enforce-policy"] == "baseline:latest"
    assert creates[("exempt", "priv")]["annotations"]["pod-security.kubernetes.io/exempt"] == "namespace"
