"""ResourceQuota on a real ``kapi serve`` with kubectl 1.33: the server runs the quota controller
(``kubectl describe quota`` shows usage), a pod past the quota is refused with kube's message as
kubectl prints it, and a deleted pod's usage comes back."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.conftest import Kubectl, Server, kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(Path(tmp_path_factory.mktemp("kapi-quota")))
    yield srv
    stop_server(srv)


@pytest.fixture
def kubectl(server: Server) -> Kubectl:
    path = kubectl_binary("1.33")
    return Kubectl(path, server, "1.33")


def _used(kubectl: Kubectl, ns: str) -> dict[str, str]:
    out = kubectl.run("get", "resourcequota", "q", "-o", "json", namespace=ns).stdout
    return dict((json.loads(out).get("status") or {}).get("used") or {})


def _wait_used(kubectl: Kubectl, ns: str, want: dict[str, str]) -> None:
    deadline = time.monotonic() + 30
    while _used(kubectl, ns) != want:
        assert time.monotonic() < deadline, _used(kubectl, ns)
        time.sleep(0.1)


def test_quota_with_kubectl(kubectl: Kubectl) -> None:
    ns = f"q-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", ns)
    deadline = time.monotonic() + 30  # its default ServiceAccount, which pods need
    while kubectl.run("get", "serviceaccount", "default", namespace=ns, check=False).returncode != 0:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    kubectl.run("create", "quota", "q", "--hard=pods=1,requests.cpu=1", namespace=ns)
    _wait_used(kubectl, ns, {"pods": "0", "requests.cpu": "0"})
    kubectl.run("run", "a", "--image=nginx", "--overrides",
                json.dumps({"spec": {"containers": [{"name": "a", "image": "nginx",
                                                     "resources": {"requests": {"cpu": "250m"}}}]}}),
                namespace=ns)
    assert _used(kubectl, ns) == {"pods": "1", "requests.cpu": "250m"}
    out = kubectl.run("describe", "quota", "q", namespace=ns).stdout
    assert any(line.split() == ["pods", "1", "1"] for line in out.splitlines()), out
    assert any(line.split() == ["requests.cpu", "250m", "1"] for line in out.splitlines()), out
    refused = kubectl.run("run", "b", "--image=nginx", "--overrides",
                          json.dumps({"spec": {"containers": [{"name": "b", "image": "nginx",
                                                               "resources": {"requests": {"cpu": "100m"}}}]}}),
                          namespace=ns, check=False)
    assert refused.returncode != 0
    assert refused.stderr.strip() == ('Error from server (Forbidden): pods "b" is forbidden: exceeded quota: q, '
                                      'requested: pods=1, used: pods=1, limited: pods=1')
    kubectl.run("delete", "pod", "a", "--grace-period=0", "--force", namespace=ns)
    _wait_used(kubectl, ns, {"pods": "0", "requests.cpu": "0"})
