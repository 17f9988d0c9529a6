"""Pod admission on a real ``kapi serve`` driven by kubectl 1.33: the flags
(--default-not-ready-toleration-seconds, --enable-admission-plugins) reach the plugins, a pod gets
its service account's token volume, and kubectl prints a LimitRanger refusal as kube's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.conftest import Kubectl, Server, _kubectl, start_server, stop_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def admission_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kapi-pods"), "--default-not-ready-toleration-seconds", "60",
                       "--default-unreachable-toleration-seconds", "90",
                       "--enable-admission-plugins", "AlwaysPullImages")
    yield srv
    stop_server(srv)


@pytest.fixture
def kubectl(admission_server: Server) -> Kubectl:
    return _kubectl("1.33", admission_server)


POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: web, image: "nginx:1.27", imagePullPolicy: IfNotPresent}
"""

LIMITS = """
apiVersion: v1
kind: LimitRange
metadata: {name: caps}
spec:
  limits:
  - {type: Container, max: {cpu: "1"}, default: {cpu: 500m}}
"""


def test_pod_admission_with_kubectl(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl.run("create", "namespace", "shop")
    kubectl.run("apply", "-f", "-", input=POD, namespace="shop")
    got = json.loads(kubectl.run("get", "pod", "web", "-o", "json", namespace="shop").stdout)
    spec = got["spec"]
    assert spec["serviceAccountName"] == "default"
    [vol] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[a-z0-9]{5}", vol["name"])
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": vol["name"], "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert [(t["key"], t["tolerationSeconds"]) for t in spec["tolerations"]] == [
        ("node.kubernetes.io/not-ready", 60), ("node.kubernetes.io/unreachable", 90)]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")

    kubectl.run("apply", "-f", "-", input=LIMITS, namespace="shop")
    big = POD.replace("name: web}", "name: big}").replace("imagePullPolicy: IfNotPresent",
                                                          "resources: {limits: {cpu: '2'}}")
    refused = kubectl.run("apply", "-f", "-", input=big, namespace="shop", check=False)
    assert refused.returncode != 0
    assert 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in refused.stderr
    assert "Error from server (Forbidden)" in refused.stderr
