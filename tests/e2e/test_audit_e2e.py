"""Audit on a real ``kapi serve`` (issue 12): the lines its --audit-log-path holds for real requests,
the legacy format on stdout, and what is queued written when the server stops."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import start_server, stop_server

pytestmark = pytest.mark.e2e

POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*"]},
        {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets"]}]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["configmaps"]}],
         "omitStages": []},  # a rule adds stages to the policy's, never takes them away (kube's union)
        {"level": "Metadata"},
    ],
}


def _id(headers: dict[str, str]) -> str:
    """The Audit-ID answered (header names are case-insensitive; HTTP/2 and hypercorn send them lower case)."""
    return {k.lower(): v for k, v in headers.items()}["audit-id"]


def _events(log: Path, audit_id: str, want: int) -> list[dict[str, Any]]:
    """The events of ``audit_id`` once ``want`` of them are in the log (it is written in batches)."""
    deadline = time.monotonic() + 20
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        found = [e for e in map(json.loads, lines) if e["auditID"] == audit_id]
        if len(found) >= want or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_the_audit_log_of_a_real_server(tmp_path: Path) -> None:
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    log = tmp_path / "logs" / "audit.log"
    server = start_server(tmp_path / "data", "--audit-policy-file", str(policy), "--audit-log-path", str(log),
                          "--audit-log-maxsize", "10", "--audit-log-maxbackup", "2")
    try:
        assert log.exists() and log.stat().st_mode & 0o777 == 0o600
        ns = b'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"audited"}}'
        code, headers, _ = server.request("POST", "/api/v1/namespaces", ns,
                                          headers={"Content-Type": "application/json"})
        assert code == 201
        [complete] = _events(log, _id(headers), 1)  # RequestReceived omitted by the policy
        assert complete["stage"] == "ResponseComplete" and complete["verb"] == "create"
        assert complete["objectRef"] == {"resource": "namespaces", "name": "audited", "apiVersion": "v1"}
        assert complete["responseStatus"] == {"metadata": {}, "code": 201}
        assert complete["sourceIPs"] == ["127.0.0.1"] and complete["user"]["username"] == "kapi-admin"
        assert complete["annotations"]["authorization.k8s.io/decision"] == "allow"

        secret = (b'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pw"},'
                  b'"stringData":{"password":"hunter2-very-secret"}}')
        code, headers, _ = server.request("POST", "/api/v1/namespaces/audited/secrets", secret,
                                          headers={"Content-Type": "application/json"})
        assert code == 201
        [complete] = _events(log, _id(headers), 1)
        assert complete["level"] == "Metadata" and "requestObject" not in complete
        code, headers, body = server.request("GET", "/api/v1/namespaces/audited/secrets/pw")
        assert code == 200 and b"aHVudGVyMi12ZXJ5LXNlY3JldA==" in body
        _events(log, _id(headers), 1)
        text = log.read_text()
        assert "hunter2" not in text and "aHVudGVyMi12ZXJ5LXNlY3JldA==" not in text

        cm = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}'
        code, headers, _ = server.request("POST", "/api/v1/namespaces/audited/configmaps", cm,
                                          headers={"Content-Type": "application/json"})
        assert code == 201
        [complete] = _events(log, _id(headers), 1)
        assert complete["level"] == "RequestResponse"
        assert complete["requestObject"]["data"] == {"k": "v"}
        assert complete["responseObject"]["metadata"]["name"] == "c" and complete["responseObject"]["data"] == {"k": "v"}

        code, headers, _ = server.request("GET", "/api/v1/namespaces/audited/configmaps/none")
        assert code == 404
        [complete] = _events(log, _id(headers), 1)
        assert complete["responseStatus"]["reason"] == "NotFound" and complete["responseStatus"]["code"] == 404

        code, headers, _ = server.request("GET", "/api/v1/namespaces", token="not-a-token")
        assert code == 401
        [started] = _events(log, _id(headers), 1)
        assert started["stage"] == "ResponseStarted" and started["user"] == {}

        code, headers, _ = server.request("GET", "/api/v1/namespaces/audited/configmaps?watch=true&timeoutSeconds=1")
        assert code == 200
        stages = [e["stage"] for e in _events(log, _id(headers), 2)]
        assert stages == ["ResponseStarted", "ResponseComplete"]

        code, health, _ = server.request("GET", "/healthz")
        assert code == 200 and _id(health)

        # Answered just before the stop: its event is written on the way out.
        code, last, _ = server.request("GET", "/api/v1/namespaces/audited")
        assert code == 200
    finally:
        assert stop_server(server, signal.SIGTERM) == 0
    assert [e["stage"] for e in _events(log, _id(last), 1)] == ["ResponseComplete"]
    assert _events(log, _id(health), 0) == []  # level None: nothing, though its Audit-ID was answered
    assert all(json.loads(line)["apiVersion"] == "audit.k8s.io/v1" for line in log.read_text().splitlines())


def test_legacy_lines_on_stdout(tmp_path: Path) -> None:
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                      "rules": [{"level": "Metadata", "verbs": ["get"]}]}))
    server = start_server(tmp_path / "data", "--audit-policy-file", str(policy), "--audit-log-path", "-",
                          "--audit-log-format", "legacy")
    try:
        code, headers, _ = server.request("GET", "/api/v1/namespaces/default")
        assert code == 200
        audit_id = _id(headers)
        deadline = time.monotonic() + 20
        while server.log.read_text().count(audit_id) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = [line for line in server.log.read_text().splitlines() if audit_id in line]
        assert len(lines) == 2
        assert f'AUDIT: id="{audit_id}" stage="RequestReceived" ip="127.0.0.1" method="get" user="kapi-admin"' \
            in lines[0]
        assert 'namespace="<none>" uri="/api/v1/namespaces/default" response="<deferred>"' in lines[0]
        assert 'stage="ResponseComplete"' in lines[1] and lines[1].endswith('response="200"')
    finally:
        stop_server(server)


def test_a_policy_kube_refuses_stops_the_server_with_its_reason(tmp_path: Path) -> None:
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
    with pytest.raises(RuntimeError, match="loaded illegal policy with 0 rules"):
        start_server(tmp_path / "data", "--audit-policy-file", str(policy), "--audit-log-path",
                     str(tmp_path / "audit.log"))
