"""Admission end to end against a real ``kapi serve`` (issue 15).

- kubectl 1.33 prints the warnings admission adds: a ValidatingAdmissionPolicy bound with
  ``validationActions: [Warn]`` ("Warning: Validation failed for ValidatingAdmissionPolicy ..."),
  a validating webhook's ``warnings``; and the refusals of a Deny binding, of a webhook, and of
  an unreachable webhook with ``failurePolicy: Fail``, with kube's messages.
- kopf's examples/17-admission (tests/e2e/kopf_admission_operator.py) run by ``kopf run
  --standalone``: kopf serves its validating and mutating webhooks on 127.0.0.1 over HTTPS and
  manages the webhook configurations; the refusals (codes 500 and 555), the dry-run exemption,
  the mutation by object selector and the warnings come back through kapi as kube returns them.

Every test scopes what it installs to its own namespace (a namespaceSelector on
``kubernetes.io/metadata.name``) and removes it, since the server is shared.
"""

from __future__ import annotations

import datetime
import http.client
import http.server
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import pytest

from tests._needs import require_module

from .conftest import Kubectl, Server

pytestmark = pytest.mark.e2e

ADMISSION = "/apis/admissionregistration.k8s.io/v1"


# ---------------------------------------------------------------- requests and waits


def call(server: Server, method: str, path: str, body: Any = None,
         content_type: str = "application/json") -> tuple[int, list[str], Any]:
    """One request with the admin token: (status, the Warning headers' texts, the decoded body)."""
    parts = urlsplit(server.url)
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=ctx, timeout=60)
    try:
        conn.request(method, path, None if body is None else json.dumps(body).encode(),
                     {"Authorization": f"Bearer {server.token}", "Content-Type": content_type,
                      "Accept": "application/json"})
        resp = conn.getresponse()
        text = resp.read()
        warnings = [_warning_text(h) for h in resp.msg.get_all("Warning") or []]
        return resp.status, warnings, json.loads(text) if text else None
    finally:
        conn.close()


def _warning_text(header: str) -> str:
    """The text of an RFC 7234 warning as kube writes it: ``299 - "text"``."""
    code, _, rest = header.partition(" ")
    agent, _, quoted = rest.partition(" ")
    assert (code, agent) == ("299", "-"), header
    return json.loads(quoted)  # kube escapes the text as a Go quoted string, which JSON reads for these


def eventually(what: str, check: Callable[[], Any], timeout_s: float = 60.0,
               log: Path | None = None) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            tail = f"; the log ends:\n{log.read_text()[-6000:]}" if log else ""
            raise AssertionError(f"{what}: not within {timeout_s:g} s{tail}")
        time.sleep(0.2)


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def in_namespace(namespace: str) -> dict[str, Any]:
    return {"matchLabels": {"kubernetes.io/metadata.name": namespace}}


def make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate for 127.0.0.1 signed by it: (cert file, key file, CA file)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "admission-e2e-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    cert_file, key_file, ca_file = directory / "tls.crt", directory / "tls.key", directory / "ca.crt"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return cert_file, key_file, ca_file


class Webhook:
    """A validating webhook server on 127.0.0.1 over HTTPS, in a thread of the test.

    ``/warn`` allows with two warnings; ``/deny`` refuses objects whose data has ``bad``
    (code 403, a message), allowing the rest.
    """

    WARNINGS = ["configmap data is not reviewed by anyone", "this webhook is a test"]

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.reviews: list[dict[str, Any]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.reviews.append(review)
                request = review["request"]
                response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
                if urlsplit(self.path).path == "/warn":  # kube's calls add ?timeout=<seconds>s
                    response["warnings"] = Webhook.WARNINGS
                elif "bad" in ((request.get("object") or {}).get("data") or {}):
                    response = {"uid": request["uid"], "allowed": False,
                                "status": {"code": 403, "message": "the key bad is not welcome here"}}
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(cert_file), str(key_file))
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join()


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[tuple[Webhook, bytes]]:
    cert_file, key_file, ca_file = make_certificates(tmp_path / "pki")
    hook = Webhook(cert_file, key_file)
    yield hook, ca_file.read_bytes()
    hook.close()


# ---------------------------------------------------------------- kubectl and admission warnings


def test_kubectl_prints_policy_warnings_and_denials(server: Server, kubectl133: Kubectl, namespace: str) -> None:
    """A ValidatingAdmissionPolicy with a Warn binding and a Deny binding, as kubectl 1.33 shows them."""
    name = f"no-forbidden-key-{uuid.uuid4().hex[:6]}"
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"namespaceSelector": in_namespace(namespace), "resourceRules": [
                           {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                            "resources": ["configmaps"]}]},
                       "validations": [
                           {"expression": "!has(object.data) || !('forbidden' in object.data)",
                            "message": "the key forbidden is not allowed"},
                           {"expression": "!has(object.data) || !('denied' in object.data)",
                            "messageExpression": "'configmap ' + object.metadata.name + ' has the key denied'"}]}}
    warn = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": f"{name}-warn"},
            "spec": {"policyName": name, "validationActions": ["Warn"],
                     "matchResources": {"objectSelector": {"matchLabels": {"mode": "warn"}}}}}
    deny = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": f"{name}-deny"},
            "spec": {"policyName": name, "validationActions": ["Deny"],
                     "matchResources": {"objectSelector": {"matchLabels": {"mode": "deny"}}}}}
    try:
        for path, obj in (("validatingadmissionpolicies", policy), ("validatingadmissionpolicybindings", warn),
                          ("validatingadmissionpolicybindings", deny)):
            status, _, body = call(server, "POST", f"{ADMISSION}/{path}", obj)
            assert status == 201, body
        probe = {**configmap("probe", {"denied": "1"}), "metadata": {"name": "probe", "labels": {"mode": "deny"}}}
        eventually("the policy and its bindings in effect", lambda: call(
            server, "POST", f"/api/v1/namespaces/{namespace}/configmaps?dryRun=All", probe)[0] == 422)

        # Warn: created, and kubectl prints the policy's warning
        proc = kubectl133.run("create", "configmap", "warned", "--from-literal=forbidden=1", namespace=namespace)
        assert "configmap/warned created" in proc.stdout
        assert "Warning" not in proc.stderr, proc.stderr  # no label: no binding selects it
        kubectl133.run("label", "configmap", "warned", "mode=warn", namespace=namespace)
        proc = kubectl133.run("create", "-f", "-", namespace=namespace, input=json.dumps(
            {**configmap("warned-2", {"forbidden": "1"}), "metadata": {"name": "warned-2", "labels": {"mode": "warn"}}}))
        assert "configmap/warned-2 created" in proc.stdout
        expected = (f"Warning: Validation failed for ValidatingAdmissionPolicy '{name}' with binding "
                    f"'{name}-warn': the key forbidden is not allowed")
        assert expected in proc.stderr, proc.stderr
        # the update of "warned" to a labelled object was also an update the Warn binding saw
        proc = kubectl133.run("annotate", "configmap", "warned", "seen=yes", namespace=namespace)
        assert expected in proc.stderr, proc.stderr

        # Deny: refused with kube's 422 message (the messageExpression's text)
        proc = kubectl133.run("create", "-f", "-", namespace=namespace, check=False, input=json.dumps(
            {**configmap("denied", {"denied": "1"}), "metadata": {"name": "denied", "labels": {"mode": "deny"}}}))
        assert proc.returncode != 0
        assert (f"ValidatingAdmissionPolicy '{name}' with binding '{name}-deny' denied request: "
                f"configmap denied has the key denied") in proc.stderr, proc.stderr
        status, _, body = call(server, "POST", f"/api/v1/namespaces/{namespace}/configmaps",
                               {**configmap("denied", {"denied": "1"}),
                                "metadata": {"name": "denied", "labels": {"mode": "deny"}}})
        assert (status, body["reason"], body["code"]) == (422, "Invalid", 422), body
        assert kubectl133.run("get", "configmap", "denied", namespace=namespace, check=False).returncode != 0

        # an object no binding selects: neither warned nor refused
        status, warnings, body = call(server, "POST", f"/api/v1/namespaces/{namespace}/configmaps",
                                      configmap("unselected", {"forbidden": "1", "denied": "1"}))
        assert status == 201 and warnings == [], (warnings, body)
    finally:
        call(server, "DELETE", f"{ADMISSION}/validatingadmissionpolicybindings/{name}-warn")
        call(server, "DELETE", f"{ADMISSION}/validatingadmissionpolicybindings/{name}-deny")
        call(server, "DELETE", f"{ADMISSION}/validatingadmissionpolicies/{name}")


def test_kubectl_prints_webhook_warnings_and_denials(server: Server, kubectl133: Kubectl, namespace: str,
                                                     webhook: tuple[Webhook, bytes]) -> None:
    """A validating webhook's warnings and its refusal, over HTTPS on loopback, as kubectl 1.33 shows them."""
    import base64

    hook, ca_pem = webhook
    name = f"e2e-{uuid.uuid4().hex[:6]}.admission.kapi.dev"
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": name},
              "webhooks": [{"name": f"{kind}.{name}", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                            "failurePolicy": "Fail", "timeoutSeconds": 5,
                            "clientConfig": {"url": f"{hook.url}/{kind}",
                                             "caBundle": base64.b64encode(ca_pem).decode()},
                            "namespaceSelector": in_namespace(namespace),
                            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                       "resources": ["configmaps"]}]}
                           for kind in ("warn", "deny")]}
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    try:
        status, _, body = call(server, "POST", f"{ADMISSION}/validatingwebhookconfigurations", config)
        assert status == 201, body
        eventually("the webhooks called", lambda: call(server, "POST", f"{path}?dryRun=All",
                                                       configmap("probe", {"bad": "1"}))[0] == 403)

        proc = kubectl133.run("create", "configmap", "hooked", "--from-literal=key=value", namespace=namespace)
        assert "configmap/hooked created" in proc.stdout
        for text in Webhook.WARNINGS:
            assert f"Warning: {text}" in proc.stderr, proc.stderr

        proc = kubectl133.run("create", "configmap", "refused", "--from-literal=bad=1", namespace=namespace,
                              check=False)
        assert proc.returncode != 0
        assert f'admission webhook "deny.{name}" denied the request: the key bad is not welcome here' in proc.stderr
        status, warnings, body = call(server, "POST", path, configmap("refused", {"bad": "1"}))
        assert (status, body["code"]) == (403, 403), body
        assert body["message"] == f'admission webhook "deny.{name}" denied the request: the key bad is not welcome here'

        # what the webhook was sent: an admission.k8s.io/v1 AdmissionReview of the create
        reviews = [r for r in hook.reviews if (r["request"].get("object") or {}).get("metadata", {}).get("name")
                   == "hooked"]
        assert reviews, [r["request"].get("name") for r in hook.reviews]
        review = reviews[0]
        assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
        request = review["request"]
        assert request["operation"] == "CREATE" and request["namespace"] == namespace
        assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert request["object"]["data"] == {"key": "value"} and request["dryRun"] is False
        assert request["options"]["kind"] == "CreateOptions"
        assert request["userInfo"]["username"]
        # the dry-run probes were sent as dry run (sideEffects: None allows them)
        assert any(r["request"]["dryRun"] is True for r in hook.reviews)

        # the webhook gone: failurePolicy Fail refuses with kube's 500 "failed calling webhook"
        hook.close()
        proc = kubectl133.run("create", "configmap", "unreviewed", "--from-literal=key=value", namespace=namespace,
                              check=False)
        assert proc.returncode != 0
        assert "Internal error occurred: failed calling webhook " in proc.stderr, proc.stderr
        status, _, body = call(server, "POST", path, configmap("unreviewed", {"key": "value"}))
        assert (status, body["reason"]) == (500, "InternalError"), body
        assert any(body["message"].startswith(f'Internal error occurred: failed calling webhook "{kind}.{name}": ')
                   for kind in ("warn", "deny")), body
    finally:
        call(server, "DELETE", f"{ADMISSION}/validatingwebhookconfigurations/{name}")


# ---------------------------------------------------------------- kopf's admission example

OPERATOR = Path(__file__).with_name("kopf_admission_operator.py")
MANAGED = "auto.kopf.dev"  # the webhook configurations kopf manages (settings.admission.managed)
KOPF_CRD_NAME = "kopfexamples.kopf.dev"
# kopf's examples/crd.yaml (as tests/e2e/test_crd_kopf.py has it, without its printer columns)
KOPF_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": KOPF_CRD_NAME},
    "spec": {
        "scope": "Namespaced", "group": "kopf.dev",
        "names": {"kind": "KopfExample", "plural": "kopfexamples", "singular": "kopfexample",
                  "shortNames": ["kopfexes", "kopfex", "kexes", "kex"]},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                          "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                          "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}


def _ensure_kopf_crd(server: Server) -> None:
    """kopf's examples/crd.yaml, Established (waiting out one an earlier test is deleting)."""
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{KOPF_CRD_NAME}"

    def created() -> bool:
        status, _, body = call(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                               KOPF_CRD)
        if status == 201:
            return True
        assert status == 409, body
        status, _, crd = call(server, "GET", crd_path)
        return status == 200 and not crd["metadata"].get("deletionTimestamp")

    eventually("kopf's CRD created", created)

    def established() -> bool:
        _, _, crd = call(server, "GET", crd_path)
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in (crd.get("status") or {}).get("conditions") or [])

    eventually("kopf's CRD Established", established)


def _kex(name: str, field: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """An object like kopf's examples/obj.yaml."""
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": name, **({"labels": labels} if labels else {})},
            "spec": {"duration": "1m", "field": field, "items": ["item1", "item2"]}}


def test_kopf_admission_example(server: Server, kubectl133: Kubectl, namespace: str, tmp_path: Path) -> None:
    require_module("kopf")
    kopf_bin = shutil.which("kopf", path=os.path.dirname(sys.executable)) or shutil.which("kopf")
    assert kopf_bin, "kopf is installed (the test extras) but its command is not found"
    cert_file, key_file, ca_file = make_certificates(tmp_path / "pki")
    _ensure_kopf_crd(server)
    log = tmp_path / "kopf.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [kopf_bin, "run", "--standalone", "--verbose", "--namespace", namespace, str(OPERATOR)],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
            env={**os.environ, "KUBECONFIG": str(server.kubeconfig), "KOPF_WEBHOOK_CERT": str(cert_file),
                 "KOPF_WEBHOOK_KEY": str(key_file), "KOPF_WEBHOOK_CA": str(ca_file)})
    objects = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    try:
        # kopf creates and fills its webhook configurations
        def configured() -> Any:
            got = {}
            for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
                status, _, body = call(server, "GET", f"{ADMISSION}/{kind}/{MANAGED}")
                if status != 200 or not body.get("webhooks"):
                    return None
                got[kind] = body
            return got

        configs = eventually("kopf's webhook configurations", configured, log=log)
        validating = {w["name"]: w for w in configs["validatingwebhookconfigurations"]["webhooks"]}
        mutating = {w["name"]: w for w in configs["mutatingwebhookconfigurations"]["webhooks"]}
        # kopf's webhook names: the handler ids (validate2's with its field) and the suffix
        assert set(validating) == {f"{h}.{MANAGED}" for h in ("authhook", "validate1", "validate2.spec.field")}
        assert set(mutating) == {f"mutate1.{MANAGED}"}, mutating
        hook = validating[f"validate1.{MANAGED}"]
        assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:")
        assert hook["clientConfig"]["caBundle"]  # kopf's CA, for kapi to verify kopf's server with
        # kapi's defaults filled in what kopf left out
        assert hook["namespaceSelector"] == {} and hook["matchPolicy"] == "Equivalent"
        assert mutating[f"mutate1.{MANAGED}"]["reinvocationPolicy"] == "Never"

        # validate1: "wrong" refused with kopf's default code 500 and its message, as kube reports a webhook's refusal
        def refused() -> Any:
            status, _, body = call(server, "POST", objects, _kex("kex-wrong", "wrong"))
            if status == 201:  # kapi has not seen the configuration yet: go again
                call(server, "DELETE", f"{objects}/kex-wrong")
            return (status, body) if status not in (201, 409) else None

        status, body = eventually("validate1 refusing spec.field=wrong", refused, log=log)
        assert (status, body["code"]) == (500, 500), body
        assert body["message"] == (f'admission webhook "validate1.{MANAGED}" denied the request: '
                                   "Meh! I don't like it. Change the field."), body
        # ... but not in a dry run (the handler looks at dryrun)
        status, _, body = call(server, "POST", f"{objects}?dryRun=All", _kex("kex-wrong", "wrong"))
        assert status == 201, body
        assert call(server, "GET", f"{objects}/kex-wrong")[0] == 404

        # validate2: its own code, 555
        status, _, body = call(server, "POST", objects, _kex("kex-lazy", "not-allowed"))
        assert (status, body["code"]) == (555, 555), body
        assert body["message"] == f'admission webhook "validate2.spec.field.{MANAGED}" denied the request: I\'m too lazy anyway. Go away!'

        # mutate1: objects labelled somelabel=somevalue get spec.injected; kubectl prints authhook's warnings
        eventually("mutate1 in effect (a dry run)", lambda: (call(
            server, "POST", f"{objects}?dryRun=All", _kex("kex-labelled", "value", {"somelabel": "somevalue"}))[2]
            .get("spec", {}).get("injected") == 123), log=log)
        out = kubectl133.run("create", "-f", "-", "-o", "json", namespace=namespace,
                              input=json.dumps(_kex("kex-labelled", "value", {"somelabel": "somevalue"})))
        created = json.loads(out.stdout)
        assert created["spec"] == {"duration": "1m", "field": "value", "items": ["item1", "item2"], "injected": 123}
        assert "Warning: Accessing as user-agent: " in out.stderr, out.stderr
        assert "Warning: SSL peer is not identified." in out.stderr, out.stderr
        status, _, stored = call(server, "GET", f"{objects}/kex-labelled")
        assert stored["spec"]["injected"] == 123

        status, warnings, body = call(server, "POST", objects, _kex("kex-plain", "value"))
        assert status == 201, body
        assert "injected" not in body["spec"]  # the object selector left it out
        assert "SSL peer is not identified." in warnings
        assert any(w.startswith("Accessing as user-agent: ") for w in warnings), warnings

        # an update goes through the validating webhooks too
        status, _, body = call(server, "PATCH", f"{objects}/kex-plain", {"spec": {"field": "wrong"}},
                               "application/merge-patch+json")
        assert status == 500 and "Meh! I don't like it." in body["message"], body
        assert proc.poll() is None, f"kopf exited with {proc.returncode}:\n{log.read_text()[-6000:]}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
            call(server, "DELETE", f"{ADMISSION}/{kind}/{MANAGED}")
        for obj in ("kex-labelled", "kex-plain"):
            call(server, "DELETE", f"{objects}/{obj}")
        call(server, "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{KOPF_CRD_NAME}")
    text = log.read_text()
    errors = [line for line in text.splitlines() if "Traceback" in line]
    assert not errors, "the operator logged tracebacks:\n" + text[-6000:]
