"""Admission's cost: the default plugins, a ValidatingAdmissionPolicy, a validating webhook; one run.

Run ``python bench/bench_admission.py`` from the repository root (``--quick`` for short points).
Three measurements, each against ``kapi serve`` (sqlite, fresh data directories):

- **default plugins**: two servers, one with kube 1.33's default admission plugins and one
  started with ``--disable-admission-plugins`` naming all of them; pod creates/s (the pod of
  ``tests/fixtures/pod.json`` without its owner and node, so no controller acts on it) against
  each, the two taking turns; **on ÷ off** (the goal: ≥ 0.85);
- **ValidatingAdmissionPolicy**: on the server with the default plugins, Deployment creates/s
  with no policy and with a policy of 5 CEL validations on deployments (and its binding,
  ``validationActions: [Deny]``), the two taking turns: the policy and binding are created,
  and deleted again, between the points; each time a dry-run create of a Deployment that
  breaks a rule shows that the change is in effect (422 with it, 201 without) before the
  next point; **with ÷ without** (the goal: ≥ 0.8);
- **validating webhook**: a webhook server (its own process, hypercorn on trio, HTTPS on
  127.0.0.1 with a certificate of a CA made for the run, the CA in ``caBundle``) that allows
  everything but names starting ``probe-deny``; ConfigMap creates at concurrency 1 with and
  without a ValidatingWebhookConfiguration for configmaps, taking turns in the same way;
  **added latency** p50 and p99 (with − without) per request.

Each point records CPU as ``bench_http.py`` does (server, clients, the rest of the machine:
read "other" before the rates) and requests per second of server CPU (``per_cpu``), which
holds better than the rate on a machine doing other work. ``--repeat N`` runs N turns per point
and keeps the best (by rate); the ratio of the medians of requests per server CPU-second over all
turns is reported beside it (``median_ratio_per_cpu``), the steadiest figure when the machine is
busy. Prints Markdown tables and writes JSON (``bench/results/admission.json``).

``python bench/bench_admission.py webhook --certfile C --keyfile K --url-file F`` runs the
webhook server on its own (the benchmark starts it that way).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import ipaddress
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (NAME_PLACEHOLDER, REPO, RESULTS, Load, LoadResult, Server, _readyz_ok, _wait,  # noqa: E402
                     configmap_body, lifespan, run_load, serve_app, start_kapi, stop, write_json)

sys.path.insert(0, str(REPO))
from kapi.admission.chain import BUILT, DEFAULT_ON  # noqa: E402

GOALS = {"pods_on_over_off": 0.85, "vap_with_over_without": 0.8}
POD_FIXTURE = REPO / "tests" / "fixtures" / "pod.json"
POLICY = "bench-deployments"
BINDING = "bench-deployments-binding"
WEBHOOK = "bench-webhook"
NS = "default"
VAP_NS = "bench-vap"
WEBHOOK_NS = "bench-webhook"
PARTS = ("plugins", "policy", "webhook")
PROBE_DENY = "probe-deny"  # the webhook refuses objects named so: how a probe sees that it is called


# ---------------------------------------------------------------- bodies


def pod_body() -> bytes:
    """The fixture pod as a create body: no owner (the garbage collector would delete it), no node, no status."""
    pod = json.loads(POD_FIXTURE.read_text())
    meta = pod["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "generateName", "managedFields", "ownerReferences",
                "namespace"):
        meta.pop(key, None)
    meta["name"] = NAME_PLACEHOLDER.decode()
    pod["spec"].pop("nodeName", None)
    pod.pop("status", None)
    return json.dumps(pod, separators=(",", ":")).encode()


def deployment_body(name: str | bytes = NAME_PLACEHOLDER, replicas: int = 2) -> bytes:
    """A paused Deployment (no ReplicaSet is made for it) that every rule of the policy allows."""
    text = name.decode() if isinstance(name, bytes) else name
    labels = {"app": "bench", "tier": "web"}
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": text, "labels": labels},
        "spec": {"replicas": replicas, "paused": True, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "web", "image": "registry.example/web:1.25.3",
                      "ports": [{"containerPort": 8080}],
                      "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                    "limits": {"cpu": "500m", "memory": "128Mi"}}},
                     {"name": "sidecar", "image": "registry.example/proxy:2.1",
                      "resources": {"requests": {"cpu": "50m", "memory": "32Mi"},
                                    "limits": {"cpu": "100m", "memory": "64Mi"}}}]}}},
    }, separators=(",", ":")).encode()


# The policy's five rules: the kind of checks a cluster's policies make on workloads.
VALIDATIONS = [
    {"expression": "object.spec.replicas <= 50", "message": "at most 50 replicas"},
    {"expression": "has(object.metadata.labels) && 'app' in object.metadata.labels",
     "message": "an app label is required"},
    {"expression": "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))",
     "message": "images must not use the latest tag"},
    {"expression": "object.spec.template.spec.containers.all(c, has(c.resources.limits) && "
                   "'memory' in c.resources.limits)", "message": "every container needs a memory limit"},
    {"expression": "object.spec.template.spec.containers.size() <= 5", "message": "at most 5 containers"},
]


def policy() -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": POLICY},
            "spec": {"failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                             "operations": ["CREATE", "UPDATE"],
                                                             "resources": ["deployments"]}]},
                     "validations": VALIDATIONS}}


def binding() -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": BINDING},
            "spec": {"policyName": POLICY, "validationActions": ["Deny"]}}


def webhook_configuration(url: str, ca_pem: bytes) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK},
            "webhooks": [{"name": "allow.bench.kapi.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": "Fail", "timeoutSeconds": 10,
                          "clientConfig": {"url": url + "/validate", "caBundle": base64.b64encode(ca_pem).decode()},
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": WEBHOOK_NS}},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                     "resources": ["configmaps"]}]}]}


# ---------------------------------------------------------------- certificates


def make_certificates(directory: Path) -> tuple[Path, Path, bytes]:
    """A CA and a serving certificate for 127.0.0.1 and localhost signed by it: (cert file, key file, CA PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = directory / "webhook.crt", directory / "webhook.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file, ca.public_bytes(serialization.Encoding.PEM)


# ---------------------------------------------------------------- the webhook server


STATS: dict[str, Any] = {"reviews": 0, "clients": set()}  # the webhook server's: reviews answered, connections seen


async def webhook_app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                      send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """ASGI app: an AdmissionReview answered allowed (refused for names starting ``probe-deny``); ``ok`` for /readyz."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    if scope["type"] != "http":
        return
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    if scope["path"] == "/readyz":
        status, body = 200, b"ok"
    elif scope["path"] == "/stats":
        status, body = 200, json.dumps({"reviews": STATS["reviews"], "connections": len(STATS["clients"])}).encode()
    else:
        STATS["reviews"] += 1
        STATS["clients"].add(tuple(scope.get("client") or ()))
        try:
            review = json.loads(b"".join(chunks))
            request = review["request"]
            name = (request.get("object") or {}).get("metadata", {}).get("name") or request.get("name") or ""
            response: dict[str, Any] = {"uid": request["uid"], "allowed": not name.startswith(PROBE_DENY)}
            if not response["allowed"]:
                response["status"] = {"code": 403, "message": "probe refused"}
            status = 200
            body = json.dumps({"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
                               "kind": "AdmissionReview", "response": response}).encode()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            status, body = 400, str(exc).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _serve_webhook(certfile: str, keyfile: str, url_file: str) -> None:
    await serve_app(webhook_app, certfile, keyfile, url_file)


def webhook_stats(hook: Server) -> dict[str, int]:
    """What the webhook server has seen so far."""
    import urllib.request

    with urllib.request.urlopen(hook.url + "/stats", context=hook.ssl_context(), timeout=30) as resp:
        return json.loads(resp.read())


def start_webhook(cert_file: Path, key_file: Path, ca_pem: bytes, work_dir: Path, timeout_s: float = 60.0) -> Server:
    """The webhook server in its own process; its URL once /readyz answers."""
    url_file = work_dir / "webhook-url"
    url_file.unlink(missing_ok=True)
    log = work_dir / "webhook.log"
    cmd = [sys.executable, str(Path(__file__).resolve()), "webhook", "--certfile", str(cert_file),
           "--keyfile", str(key_file), "--url-file", str(url_file)]
    with open(log, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    deadline = started + timeout_s
    _wait(proc, log, deadline, url_file.exists)
    url = url_file.read_text().strip()
    _wait(proc, log, deadline, partial(_readyz_ok, url))
    ca_file = work_dir / "webhook-ca.crt"
    ca_file.write_bytes(ca_pem)
    return Server(proc, url, ca_file, "unused", log, time.monotonic() - started)


# ---------------------------------------------------------------- requests and waits


def check(got: tuple[int, bytes], *expect: int, what: str) -> bytes:
    status, text = got
    if status not in expect:
        raise RuntimeError(f"{what}: {status} {text[:500]!r}")
    return text


def eventually(what: str, done: Callable[[], bool], timeout_s: float = 60.0) -> float:
    """Poll ``done`` until it holds; the seconds it took (raise after ``timeout_s``)."""
    t0 = time.monotonic()
    while not done():
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.05)
    return time.monotonic() - t0


def create_namespace(server: Server, name: str) -> None:
    check(server.request("POST", "/api/v1/namespaces", json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).encode()), 201, 409,
        what=f"creating namespace {name}")


def wait_service_account(server: Server, namespace: str) -> None:
    """The namespace's default ServiceAccount exists (the ServiceAccount plugin refuses pods before it does)."""
    eventually(f"the default ServiceAccount of {namespace}", lambda: server.request(
        "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")[0] == 200)


def per_cpu(r: LoadResult) -> float:
    """Requests per second of server CPU."""
    return r.rate / (r.server_cpu_pct / 100) if r.server_cpu_pct else 0.0


def cpu_ms(r: LoadResult) -> float:
    """Milliseconds of server CPU per request."""
    return 1000 / per_cpu(r) if per_cpu(r) else 0.0


def measure(server: Server, path: str, body: bytes, concurrency: int, args: argparse.Namespace,
            label: str, prefix: str) -> LoadResult:
    load = Load(url=server.url, path=path, ca_file=str(server.ca_file), token=server.token, method="POST",
                body=body, expect=201, concurrency=concurrency, processes=args.clients,
                duration_s=args.seconds, name_prefix=prefix)
    r = run_load(load, server.proc.pid)
    print(f"  {label:<34} c={concurrency:<3} {r.rate:8.0f}/s  p50 {r.p50_ms:6.2f} ms  p99 {r.p99_ms:6.2f} ms  "
          f"server {r.server_cpu_pct:4.0f}%  client {r.client_cpu_pct:4.0f}%  other {r.other_cpu_pct:4.0f}%  "
          f"errors {r.errors}", file=sys.stderr)
    if r.errors:
        print(f"    first error: {r.first_error}", file=sys.stderr)
    return r


def best(turns: list[LoadResult]) -> LoadResult:
    """The turn with the highest rate."""
    return max(turns, key=lambda r: r.rate)


def pair(without: list[LoadResult], with_: list[LoadResult], names: tuple[str, str]) -> dict[str, Any]:
    """Two sides' turns: the best of each and their ratios, by rate and by server CPU; and the ratio of the
    sides' median requests per server CPU-second over all turns (the steadiest figure on a busy machine)."""
    a, b = best(without), best(with_)
    med_a, med_b = statistics.median(map(per_cpu, without)), statistics.median(map(per_cpu, with_))
    return {names[0]: a.to_json(), names[1]: b.to_json(),
            "ratio": round(b.rate / a.rate, 3) if a.rate else 0.0,
            "ratio_per_cpu": round(per_cpu(b) / per_cpu(a), 3) if per_cpu(a) else 0.0,
            f"{names[0]}_per_cpu": round(per_cpu(a), 1), f"{names[1]}_per_cpu": round(per_cpu(b), 1),
            "median_ratio_per_cpu": round(med_b / med_a, 3) if med_a else 0.0,
            "turns": {names[0]: [turn(r) for r in without], names[1]: [turn(r) for r in with_]}}


def turn(r: LoadResult) -> dict[str, float]:
    return {"rate": round(r.rate, 1), "per_cpu": round(per_cpu(r), 1), "p50_ms": round(r.p50_ms, 2),
            "p99_ms": round(r.p99_ms, 2), "other_cpu_pct": round(r.other_cpu_pct, 1)}


# ---------------------------------------------------------------- the three measurements


def bench_plugins(on: Server, off: Server, args: argparse.Namespace) -> dict[str, Any]:
    """Pod creates/s with the default plugins ÷ with none, the two servers taking turns."""
    body, path = pod_body(), f"/api/v1/namespaces/{NS}/pods"
    for server in (on, off):
        wait_service_account(server, NS)
        check(server.request("POST", path, body.replace(NAME_PLACEHOLDER, b"warm-up")), 201, what="a first pod")
    turns: dict[str, list[LoadResult]] = {"on": [], "off": []}
    for _ in range(args.repeat):
        for side, server in (("off", off), ("on", on)):
            turns[side].append(measure(server, path, body, args.concurrency, args, f"pods, admission {side}",
                                       f"p{side}"))
    return {"concurrency": args.concurrency, **pair(turns["off"], turns["on"], ("off", "on"))}


def probe(server: Server, path: str, body: bytes) -> int:
    """The status of a dry-run create."""
    return server.request("POST", path + "?dryRun=All", body)[0]


def bench_policy(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    """Deployment creates/s with a 5-rule ValidatingAdmissionPolicy ÷ without, taking turns."""
    create_namespace(server, VAP_NS)
    path = f"/apis/apps/v1/namespaces/{VAP_NS}/deployments"
    body, bad = deployment_body(), deployment_body("probe-too-many", replicas=100)
    check(server.request("POST", path, deployment_body("warm-up")), 201, what="a first deployment")
    vaps = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    turns: dict[str, list[LoadResult]] = {"without": [], "with": []}
    took: list[float] = []
    for _ in range(args.repeat):
        turns["without"].append(measure(server, path, body, args.concurrency, args, "deployments, no policy",
                                        "dwo"))
        check(server.request("POST", vaps, json.dumps(policy()).encode()), 201, what="creating the policy")
        check(server.request("POST", bindings, json.dumps(binding()).encode()), 201, what="creating the binding")
        took.append(eventually("the policy refusing a deployment with 100 replicas",
                               lambda: probe(server, path, bad) == 422))
        check(server.request("POST", path + "?dryRun=All", deployment_body("probe-good")), 201,
              what="a deployment the policy allows")
        turns["with"].append(measure(server, path, body, args.concurrency, args, "deployments, 5-rule policy",
                                     "dwi"))
        check(server.request("DELETE", f"{bindings}/{BINDING}"), 200, what="deleting the binding")
        check(server.request("DELETE", f"{vaps}/{POLICY}"), 200, what="deleting the policy")
        eventually("the policy gone", lambda: probe(server, path, bad) == 201)
    return {"concurrency": args.concurrency, "validations": len(VALIDATIONS),
            "policy_in_effect_s": [round(t, 3) for t in took],
            **pair(turns["without"], turns["with"], ("without", "with"))}


def bench_webhook(server: Server, hook: Server, ca_pem: bytes, args: argparse.Namespace) -> dict[str, Any]:
    """ConfigMap creates at concurrency 1 with a validating webhook and without: the latency it adds."""
    create_namespace(server, WEBHOOK_NS)
    path = f"/api/v1/namespaces/{WEBHOOK_NS}/configmaps"
    configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    bad = configmap_body(f"{PROBE_DENY}-x")
    turns: dict[str, list[LoadResult]] = {"without": [], "with": []}
    calls: list[dict[str, int]] = []
    for _ in range(args.repeat):
        turns["without"].append(measure(server, path, configmap_body(), 1, args, "configmaps, no webhook", "cwo"))
        check(server.request("POST", configs, json.dumps(webhook_configuration(hook.url, ca_pem)).encode()), 201,
              what="creating the webhook configuration")
        eventually("the webhook refusing its probe", lambda: probe(server, path, bad) == 403)
        before = webhook_stats(hook)
        point = measure(server, path, configmap_body(), 1, args, "configmaps, validating webhook", "cwi")
        after = webhook_stats(hook)
        seen = {k: after[k] - before[k] for k in after}
        print(f"    the webhook answered {seen['reviews']} reviews on {seen['connections']} new connections",
              file=sys.stderr)
        turns["with"].append(point)
        calls.append(seen)
        check(server.request("DELETE", f"{configs}/{WEBHOOK}"), 200, what="deleting the webhook configuration")
        eventually("the webhook gone", lambda: probe(server, path, bad) == 201)
    without, with_ = best(turns["without"]), best(turns["with"])
    seen = calls[turns["with"].index(with_)]

    def p50(r: LoadResult) -> float:
        return r.p50_ms

    def p99(r: LoadResult) -> float:
        return r.p99_ms

    def median_of(side: str, value: Callable[[LoadResult], float]) -> float:
        return statistics.median(map(value, turns[side]))

    return {"concurrency": 1, "without": without.to_json(), "with": with_.to_json(),
            "added_p50_ms": round(with_.p50_ms - without.p50_ms, 3),
            "added_p99_ms": round(with_.p99_ms - without.p99_ms, 3),
            # reviews the webhook answered during the measured point (warm-up requests included) and the
            # connections kapi opened to it meanwhile: reused connections keep the second far below the first
            "webhook_reviews": seen["reviews"], "webhook_connections": seen["connections"],
            # server CPU per create: on a machine doing other work this holds better than the latencies
            "cpu_ms_per_request": {"without": round(cpu_ms(without), 3), "with": round(cpu_ms(with_), 3)},
            "added_cpu_ms": round(cpu_ms(with_) - cpu_ms(without), 3),
            # the same over all turns: the medians' differences
            "median_added_p50_ms": round(median_of("with", p50) - median_of("without", p50), 3),
            "median_added_p99_ms": round(median_of("with", p99) - median_of("without", p99), 3),
            "median_added_cpu_ms": round(median_of("with", cpu_ms) - median_of("without", cpu_ms), 3),
            "turns": {side: [turn(r) for r in turns[side]] for side in turns},
            "ratio": round(with_.rate / without.rate, 3) if without.rate else 0.0}


# ---------------------------------------------------------------- report


def tables(result: dict[str, Any]) -> str:
    p, v, w = result["plugins"], result["policy"], result["webhook"]
    rows = ["| measurement | without /s | with /s | with ÷ without | per server CPU-s (without / with) | "
            "÷ per CPU | ÷ per CPU, medians of all turns | goal | server CPU % (without / with) | other CPU % |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, m, a, b, goal in (("pod creates, default plugins", p, "off", "on", GOALS["pods_on_over_off"]),
                                 ("Deployment creates, 5-rule VAP", v, "without", "with",
                                  GOALS["vap_with_over_without"])):
        if not m:
            continue
        rows.append(f"| {label} (c={m['concurrency']}) | {m[a]['rate']:.0f} | {m[b]['rate']:.0f} | "
                    f"{m['ratio']:.2f} | {m[a + '_per_cpu']:.0f} / {m[b + '_per_cpu']:.0f} | "
                    f"{m['ratio_per_cpu']:.2f} | {m['median_ratio_per_cpu']:.2f} | ≥ {goal} | "
                    f"{m[a]['server_cpu_pct']:.0f} / {m[b]['server_cpu_pct']:.0f} | "
                    f"{max(m[a]['other_cpu_pct'], m[b]['other_cpu_pct']):.0f} |")
    if not (p or v):
        rows = []
    if w:
        rows += ["", "| ConfigMap create, c=1 | p50 ms | p99 ms | server CPU ms per create | creates/s |"]
        rows += ["|---|---:|---:|---:|---:|"]
        for label, key in (("no webhook", "without"), ("validating webhook (HTTPS, loopback)", "with")):
            rows.append(f"| {label} | {w[key]['p50_ms']:.2f} | {w[key]['p99_ms']:.2f} | "
                        f"{w['cpu_ms_per_request'][key]:.2f} | {w[key]['rate']:.0f} |")
        rows.append(f"| **added by the webhook** | **{w['added_p50_ms']:.2f}** | **{w['added_p99_ms']:.2f}** | "
                    f"**{w['added_cpu_ms']:.2f}** | |")
        rows.append(f"| added, medians of all turns | {w['median_added_p50_ms']:.2f} | "
                    f"{w['median_added_p99_ms']:.2f} | "
                    f"{w['median_added_cpu_ms']:.2f} | |")
        rows.append(f"\n(the webhook answered {w['webhook_reviews']} reviews on {w['webhook_connections']} "
                    "connections kapi opened during the point)")
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    args.seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 5.0)
    args.concurrency = args.concurrency or (4 if args.quick else 16)
    defaults = sorted(n for n in DEFAULT_ON if n in BUILT)
    parts = set(args.parts)
    plugins = vap = webhook = None
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        cert_file, key_file, ca_pem = make_certificates(tmp / "webhook-pki")
        on = start_kapi(tmp / "on")
        try:
            print(f"{args.seconds:g} s per point, best of {args.repeat}", file=sys.stderr)
            if "plugins" in parts:
                off = start_kapi(tmp / "off", "--disable-admission-plugins", ",".join(defaults))
                try:
                    plugins = bench_plugins(on, off, args)
                finally:
                    stop(off)
            if "policy" in parts:
                vap = bench_policy(on, args)
            if "webhook" in parts:
                hook = start_webhook(cert_file, key_file, ca_pem, tmp)
                try:
                    webhook = bench_webhook(on, hook, ca_pem, args)
                finally:
                    stop(hook)
        finally:
            stop(on)

    errors = sum(m[k]["errors"] for m, keys in ((plugins, ("on", "off")), (vap, ("with", "without")),
                                                (webhook, ("with", "without"))) if m for k in keys)
    ratios: dict[str, float] = {}
    if plugins:
        ratios.update(pods_on_over_off=plugins["ratio"], pods_on_over_off_per_cpu=plugins["ratio_per_cpu"],
                      pods_on_over_off_median_per_cpu=plugins["median_ratio_per_cpu"])
    if vap:
        ratios.update(vap_with_over_without=vap["ratio"], vap_with_over_without_per_cpu=vap["ratio_per_cpu"],
                      vap_with_over_without_median_per_cpu=vap["median_ratio_per_cpu"])
    result = {
        "config": {"seconds": args.seconds, "concurrency": args.concurrency, "clients": args.clients,
                   "repeat": args.repeat, "quick": args.quick, "parts": sorted(parts), "disabled": defaults,
                   "python": platform.python_version(), "machine": platform.machine()},
        "plugins": plugins, "policy": vap, "webhook": webhook, "ratios": ratios,
        "webhook_added_ms": {"p50": webhook["added_p50_ms"], "p99": webhook["added_p99_ms"]} if webhook else None,
        "goals": GOALS,
    }
    write_json(args.output, result)
    print(tables(result))
    print(f"\ngoals: pods with the default plugins ÷ none ≥ {GOALS['pods_on_over_off']}; "
          f"deployments with the 5-rule policy ÷ without ≥ {GOALS['vap_with_over_without']}")
    if errors:
        print(f"{errors} requests failed; the rates above count only successes", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["webhook"]:
        hook = argparse.ArgumentParser(description="the benchmark's webhook server")
        hook.add_argument("--certfile", required=True)
        hook.add_argument("--keyfile", required=True)
        hook.add_argument("--url-file", required=True, help="the bound https URL is written here once listening")
        hook_args = hook.parse_args(argv[1:])
        import trio

        trio.run(_serve_webhook, hook_args.certfile, hook_args.keyfile, hook_args.url_file)
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None, help="seconds per point (default 5, 1 with --quick)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="connections for the creates/s points (default 16, 4 with --quick); the webhook's "
                             "latency is measured at 1")
    parser.add_argument("--clients", type=int, default=1, help="client processes")
    parser.add_argument("--repeat", type=int, default=1, help="best of N turns per point")
    parser.add_argument("--quick", action="store_true", help="short points: a check that everything runs")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="which measurements to run")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "admission.json", help="JSON results file")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
