"""kubectl get flowschemas / prioritylevelconfigurations on a real ``kapi serve`` (issue 13): kube's
columns, the bootstrap configuration's rows, FlowSchemas in matching order."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from .conftest import Kubectl

pytestmark = pytest.mark.e2e

FLOW_SCHEMAS = [  # kube 1.33's, in matching order: (name, priority level, precedence, distinguisher)
    ("exempt", "exempt", "1", "<none>"), ("probes", "exempt", "2", "<none>"),
    ("system-leader-election", "leader-election", "100", "ByUser"),
    ("endpoint-controller", "workload-high", "150", "ByUser"),
    ("workload-leader-election", "leader-election", "200", "ByUser"),
    ("system-node-high", "node-high", "400", "ByUser"), ("system-nodes", "system", "500", "ByUser"),
    ("kube-controller-manager", "workload-high", "800", "ByNamespace"),
    ("kube-scheduler", "workload-high", "800", "ByNamespace"),
    ("kube-system-service-accounts", "workload-high", "900", "ByNamespace"),
    ("service-accounts", "workload-low", "9000", "ByUser"),
    ("global-default", "global-default", "9900", "ByUser"), ("catch-all", "catch-all", "10000", "ByUser"),
]
PRIORITY_LEVELS = {  # name: type, shares, queues, hand size, queue length limit
    "catch-all": ["Limited", "5", "<none>", "<none>", "<none>"],
    "exempt": ["Exempt", "<none>", "<none>", "<none>", "<none>"],
    "global-default": ["Limited", "20", "128", "6", "50"], "leader-election": ["Limited", "10", "16", "4", "50"],
    "node-high": ["Limited", "40", "64", "6", "50"], "system": ["Limited", "30", "64", "6", "50"],
    "workload-high": ["Limited", "40", "128", "6", "50"], "workload-low": ["Limited", "100", "128", "6", "50"],
}


def _rows(out: str) -> tuple[list[str], list[list[str]]]:
    lines = out.splitlines()
    return lines[0].split(), [line.split() for line in lines[1:]]


def _flow_schema_rows(kubectl: Kubectl) -> list[list[str]]:
    header, rows = _rows(kubectl.run("get", "flowschemas").stdout)
    assert header == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]
    return [r for r in rows if not r[0].startswith("e2e-")]


def test_get_flowschemas(kubectl: Kubectl) -> None:
    rows = _flow_schema_rows(kubectl)
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == FLOW_SCHEMAS
    # MISSINGPL is the Dangling condition the APF controller writes ("?" until it has)
    deadline = time.monotonic() + 30
    while any(r[5] != "False" for r in rows) and time.monotonic() < deadline:
        time.sleep(0.2)
        rows = _flow_schema_rows(kubectl)
    assert {r[5] for r in rows} == {"False"}


def test_get_prioritylevelconfigurations(kubectl: Kubectl) -> None:
    header, rows = _rows(kubectl.run("get", "prioritylevelconfigurations").stdout)
    assert header == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"]
    assert {r[0]: r[1:6] for r in rows if not r[0].startswith("e2e-")} == PRIORITY_LEVELS


def test_a_flowschema_of_a_missing_level_shows_missing(kubectl: Kubectl) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    manifest = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
                "spec": {"priorityLevelConfiguration": {"name": f"{name}-nowhere"}, "distinguisherMethod": {"type": "ByUser"},
                         "rules": [{"subjects": [{"kind": "User", "user": {"name": name}}],
                                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}]}]}}
    kubectl.run("create", "-f", "-", input=json.dumps(manifest))
    try:
        deadline = time.monotonic() + 30
        while True:
            _, rows = _rows(kubectl.run("get", "flowschemas", name).stdout)
            (row,) = rows
            if row[5] != "?" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # matchingPrecedence defaulted to 1000; the level it names does not exist
        assert [row[0], row[1], row[2], row[3], row[5]] == [name, f"{name}-nowhere", "1000", "ByUser", "True"]
    finally:
        kubectl.run("delete", "flowschema", name)


def test_invalid_flowschema_is_refused_with_kubes_message(kubectl: Kubectl) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    manifest = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
                "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 10001,
                         "rules": [{"subjects": [{"kind": "User", "user": {"name": name}}],
                                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}]}]}}
    proc = kubectl.run("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert proc.returncode != 0
    assert (f'The FlowSchema "{name}" is invalid: spec.matchingPrecedence: Invalid value: 10001: '
            "must not be greater than 10000") in proc.stderr
