"""Built-in groups A (issue 14) with kubectl 1.33 and 1.27 against a real ``kapi serve``: ``apply -f``
of each kind, ``get`` with the server's Table columns, the system PriorityClasses, ``explain``, a
validation refusal as kubectl shows it."""

from __future__ import annotations

import pytest
import yaml

from .conftest import Kubectl

pytestmark = pytest.mark.e2e


def manifests(suffix: str) -> str:
    docs = [
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
         "spec": {"ingressClassName": f"nginx-{suffix}", "rules": [{"host": "web.example.com", "http": {"paths": [
             {"path": "/", "pathType": "Prefix",
              "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny"},
         "spec": {"podSelector": {"matchLabels": {"app": "web"}}}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-1"},
         "addressType": "IPv4", "ports": [{"port": 8080}], "endpoints": [{"addresses": ["10.0.0.7"]}]},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": f"fast-{suffix}"},
         "provisioner": "ebs.csi.aws.com"},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"high-{suffix}"},
         "value": 1000},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": f"gvisor-{suffix}"},
         "handler": "runsc"},
    ]
    return yaml.safe_dump_all(docs)


def lines(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_builtin_groups_a_with_kubectl(kubectl: Kubectl, namespace: str) -> None:
    suffix = kubectl.version.replace(".", "")  # cluster-scoped names differ per kubectl version
    applied = kubectl.run("apply", "-f", "-", input=manifests(suffix), namespace=namespace).stdout
    assert "ingress.networking.k8s.io/web created" in applied
    assert f"priorityclass.scheduling.k8s.io/high-{suffix} created" in applied
    ing = lines(kubectl.run("get", "ingress", namespace=namespace).stdout)
    assert ing[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert ing[1][:4] == ["web", f"nginx-{suffix}", "web.example.com", "80"]
    pdb = kubectl.run("get", "pdb", namespace=namespace).stdout.splitlines()
    assert pdb[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert pdb[1].split()[:4] == ["web", "1", "N/A", "0"]
    eps = lines(kubectl.run("get", "endpointslices", namespace=namespace).stdout)
    assert eps[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert eps[1][:4] == ["web-1", "IPv4", "8080", "10.0.0.7"]
    assert lines(kubectl.run("get", "netpol", namespace=namespace).stdout)[1][:2] == ["deny", "app=web"]
    sc = lines(kubectl.run("get", "sc", f"fast-{suffix}").stdout)
    assert sc[0] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert sc[1][:5] == [f"fast-{suffix}", "ebs.csi.aws.com", "Delete", "Immediate", "false"]
    pcs = {row[0]: row for row in lines(kubectl.run("get", "priorityclasses").stdout)[1:]}
    assert pcs["system-node-critical"][1:3] == ["2000001000", "false"]
    assert pcs["system-cluster-critical"][1:3] == ["2000000000", "false"]
    assert pcs[f"high-{suffix}"][1] == "1000"
    assert lines(kubectl.run("get", "runtimeclass", f"gvisor-{suffix}").stdout)[1][:2] == [f"gvisor-{suffix}",
                                                                                          "runsc"]
    explained = kubectl.run("explain", "ingress.spec.rules").stdout
    assert "host" in explained and "http" in explained
    refused = kubectl.run("create", "-f", "-", check=False, namespace=namespace, input=yaml.safe_dump(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"system-x{suffix}"},
         "value": 1}))
    assert refused.returncode != 0
    assert "priority class names with 'system-' prefix are reserved for system use only" in refused.stderr
