"""kopf operator against a real ``kapi serve`` (issue 14): ``kopf run --standalone tests/e2e/kopf_operator.py``.

kopf's examples/crd.yaml (``kopfexamples.kopf.dev``, no subresources, preserved unknown
fields) is created, then an object like kopf's examples/obj.yaml. The operator (a
subprocess, the test server's kubeconfig) must: add its finalizer and its
last-handled-configuration annotation, create the adopted child ConfigMap, store the
handlers' results in status, react to a change of ``spec.field``, and on delete run its
handler and release the finalizer so that the object goes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests._needs import require_module

from .conftest import Server

pytestmark = pytest.mark.e2e

require_module("kopf")

OPERATOR = Path(__file__).with_name("kopf_operator.py")
CRD_NAME = "kopfexamples.kopf.dev"
FIELD_FN = "field_fn/spec.field"  # kopf's id of a field handler: where its result goes in status

# kopf's examples/crd.yaml
KOPF_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "scope": "Namespaced", "group": "kopf.dev",
        "names": {"kind": "KopfExample", "plural": "kopfexamples", "singular": "kopfexample",
                  "shortNames": ["kopfexes", "kopfex", "kexes", "kex"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
            "additionalPrinterColumns": [
                {"name": "Duration", "type": "string", "priority": 0, "jsonPath": ".spec.duration",
                 "description": "For how long the pod should sleep."},
                {"name": "Children", "type": "string", "priority": 0, "jsonPath": ".status.create_fn.children",
                 "description": "The children pods created."},
                {"name": "Message", "type": "string", "priority": 0, "jsonPath": ".status.create_fn.message",
                 "description": "As returned from the handler (sometimes)."},
            ]}],
    },
}


def _json(server: Server, method: str, path: str, body: Any = None,
          content_type: str = "application/json") -> tuple[int, Any]:
    status, _, text = server.request(method, path, None if body is None else json.dumps(body).encode(),
                                     {"Content-Type": content_type})
    return status, json.loads(text) if text else None


def _eventually(what: str, check: Callable[[], Any], log: Path, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:g} s; the operator's log ends:\n"
                                 f"{log.read_text()[-6000:]}")
        time.sleep(0.2)


def test_kopf_operator(server: Server, namespace: str, tmp_path: Path) -> None:
    kopf_bin = shutil.which("kopf", path=os.path.dirname(sys.executable)) or shutil.which("kopf")
    assert kopf_bin, "kopf is installed (the test extras) but its command is not found"
    status, body = _json(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", KOPF_CRD)
    assert status in (201, 409), body  # 409: a CRD of an earlier run on the same server
    obj_path = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples/kopf-example-1"
    log = tmp_path / "kopf.log"

    def established() -> bool:
        _, crd = _json(server, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in (crd.get("status") or {}).get("conditions") or [])

    log.write_text("")
    _eventually("the CRD is Established", established, log)

    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [kopf_bin, "run", "--standalone", "--verbose", "--namespace", namespace, str(OPERATOR)],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
            env={**os.environ, "KUBECONFIG": str(server.kubeconfig)})
    try:
        # kopf's examples/obj.yaml
        status, body = _json(server, "POST", f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples", {
            "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": "kopf-example-1", "labels": {"somelabel": "somevalue"},
                         "annotations": {"someannotation": "somevalue"}},
            "spec": {"duration": "1m", "field": "value", "items": ["item1", "item2"]}})
        assert status == 201, body

        def handled() -> Any:
            _, obj = _json(server, "GET", obj_path)
            st = obj.get("status") or {}
            return obj if "create_fn" in st and FIELD_FN in st else None

        obj = _eventually("the create handler's result in status", handled, log)
        assert obj["status"]["create_fn"] == {"message": "hello world", "children": ["kopf-example-1-child"]}
        assert obj["status"][FIELD_FN] == {"seen": "value"}
        assert any(f.startswith("kopf.zalando.org/") for f in obj["metadata"].get("finalizers", [])), obj["metadata"]
        assert "kopf.zalando.org/last-handled-configuration" in obj["metadata"]["annotations"]
        assert obj["spec"] == {"duration": "1m", "field": "value", "items": ["item1", "item2"]}

        status, child = _json(server, "GET", f"/api/v1/namespaces/{namespace}/configmaps/kopf-example-1-child")
        assert status == 200, child
        assert child["data"] == {"duration": "1m", "field": "value"}
        owner = child["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("KopfExample", "kopf-example-1", obj["metadata"]["uid"])
        assert owner["apiVersion"] == "kopf.dev/v1"

        # the printer columns of kopf's CRD, filled by the operator's status
        status, _, text = server.request("GET", obj_path, headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
        table = json.loads(text)
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Duration", "Children", "Message"]  # no Age: columns given
        cells = table["rows"][0]["cells"]
        assert [cells[0], cells[1], cells[3]] == ["kopf-example-1", "1m", "hello world"]
        assert "kopf-example-1-child" in cells[2]  # a list as text: test_crd_clients' printer-column test

        status, body = _json(server, "PATCH", obj_path, {"spec": {"field": "changed"}},
                             "application/merge-patch+json")
        assert status == 200, body

        def updated() -> Any:
            _, obj = _json(server, "GET", obj_path)
            # kopf merge-patches the result into the earlier one: {"seen": ...} stays
            got = (obj.get("status") or {}).get(FIELD_FN) or {}
            return obj if got == {"seen": "value", "old": "value", "new": "changed"} else None

        _eventually("the field handler's result after a change", updated, log)
        _, child = _json(server, "GET", f"/api/v1/namespaces/{namespace}/configmaps/kopf-example-1-child")
        assert child["data"]["field"] == "changed"

        status, body = _json(server, "DELETE", obj_path)
        assert status == 200, body  # kopf's finalizer holds it: a 200 with deletionTimestamp set
        assert body["metadata"].get("deletionTimestamp"), body

        _eventually("the object gone once kopf released its finalizer",
                    lambda: server.request("GET", obj_path)[0] == 404, log)
        status, _, _ = server.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/kopf-example-1-child")
        assert status == 404
        assert proc.poll() is None, f"kopf exited with {proc.returncode}:\n{log.read_text()[-6000:]}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        server.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")
    text = log.read_text()
    errors = [line for line in text.splitlines() if "[ERROR" in line or "Traceback" in line]
    assert not errors, "the operator logged errors:\n" + "\n".join(errors) + "\n\n" + text[-6000:]
