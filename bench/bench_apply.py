"""Server-side apply's cost: a Deployment's re-apply against a strategic merge patch, and a pod's apply; one run.

Run ``python bench/bench_apply.py`` from the repository root (``--quick`` for short points).
Two ``kapi serve`` (sqlite, fresh data directories, started as ``python -m bench`` starts its pair):
one on the compiled twins (``KAPI_REQUIRE_EXTENSIONS=1``) and one on the pure ones
(``KAPI_NO_EXTENSIONS=1``). On each, in namespace ``bench-apply``:

- **Deployment, re-apply against SMP**: two Deployments made alike (a realistic manifest of two
  containers with ports, env, probes, resources and volumes, ``paused`` so that no controller ever
  acts on them), each with two managers: ``bench-applier`` applied the manifest (which leaves
  ``spec.replicas`` out), and ``bench-controller``, as an autoscaler and a deployment controller
  would, updated ``spec.replicas`` and an annotation (an Update) and the status (an Update of the
  ``status`` subresource). Then, point by point, the two sides take turns: ``bench-applier``
  re-applies its whole manifest with one field changed (the first container's image, a new tag per
  request) to the first; ``bench-patcher`` sends the strategic merge patch making the same change
  to the second. **apply ÷ SMP** of server CPU per request (the goal: ≤ 2), per round, median
  with min and max;
- **pod apply**: the pod of ``tests/fixtures/pod.json`` as a client writes it (no server-set
  metadata, owner, node, status, or the token volume the ServiceAccount plugin adds) applied by
  ``bench-applier``: to a new name each time (``create``: the apply creates the pod), re-applied to
  one pod with one label changed (``change``), and re-applied unchanged (``noop``); server µs per
  apply, pure and compiled, and **pure ÷ compiled**.

Requests go one at a time over one kept-alive HTTP/1.1 TLS connection; the server's CPU comes from
``/proc`` (``_common.process_cpu_seconds``), so its figures include the HTTP, TLS, authentication
and admission work every write has, the same on both sides of a ratio. ``idle_cpu_pct`` is the
server's own CPU when nothing is asked of it (its controllers): read it before small differences.
After the points the objects are read back and checked: the last image and label sent are there,
the controller's replicas and annotation survived every apply, and ``managedFields`` holds both
managers. Prints Markdown tables and writes JSON (``bench/results/apply.json``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, RESULTS, Server, start_kapi, stop, write_json  # noqa: E402
from _workload import KeptAlive, Target  # noqa: E402

GOAL = 2.0  # apply ÷ SMP of server CPU per request
NS = "bench-apply"
APPLIER, CONTROLLER, PATCHER = "bench-applier", "bench-controller", "bench-patcher"
APPLY = "application/apply-patch+yaml"
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
PODS = f"/api/v1/namespaces/{NS}/pods"
APPLIED, PATCHED, POD = "bench-applied", "bench-patched", "bench-pod"
IMAGE = "registry.example.com/shop/web:v2."  # + a counter: a new tag per request
VERSION_LABEL = "app.kubernetes.io/version"
REVISION = "deployment.kubernetes.io/revision"
MODES = ("compiled", "pure")
DEPLOYMENT_SIDES = ("apply", "smp")
POD_KINDS = ("create", "change", "noop")
POD_FIXTURE = REPO / "tests" / "fixtures" / "pod.json"


# ---------------------------------------------------------------- bodies


def deployment_manifest(name: str, image: str) -> dict[str, Any]:
    """What the applier applies: a web Deployment with a sidecar, ``spec.replicas`` left to the controller."""
    labels = {"app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop", "tier": "frontend"}
    env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "LOG_FORMAT", "value": "json"}, {"name": "CACHE_URL", "value": "redis://cache.shop:6379"}]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {**labels, VERSION_LABEL: "2.0"},
                     "annotations": {"shop.example.com/owner": "web-team", "shop.example.com/oncall": "web-oncall"}},
        "spec": {
            "paused": True,  # no controller may act on it: the measured writes must be the only ones
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels, "annotations": {"prometheus.io/scrape": "true",
                                                               "prometheus.io/port": "9090"}},
                "spec": {
                    "serviceAccountName": "default",
                    "terminationGracePeriodSeconds": 30,
                    "containers": [
                        {"name": "web", "image": image, "imagePullPolicy": "IfNotPresent",
                         "args": ["--listen=:8080", "--metrics=:9090"],
                         "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                                   {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                         "env": env,
                         "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                       "limits": {"cpu": "1", "memory": "512Mi"}},
                         "volumeMounts": [{"name": "config", "mountPath": "/etc/web", "readOnly": True},
                                          {"name": "cache", "mountPath": "/var/cache/web"}],
                         "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                         "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}, "periodSeconds": 5}},
                        {"name": "envoy", "image": "registry.example.com/infra/envoy-sidecar:v1.29.3",
                         "ports": [{"name": "proxy", "containerPort": 15001, "protocol": "TCP"}],
                         "env": env[:3],
                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                       "limits": {"cpu": "200m", "memory": "128Mi"}}}],
                    "volumes": [{"name": "config", "configMap": {"name": "web-config"}},
                                {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}]}}},
    }


def image_patch(image: str) -> dict[str, Any]:
    """The strategic merge patch making the re-apply's one change: the web container's image."""
    return {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}}


CONTROLLER_UPDATE = {"metadata": {"annotations": {REVISION: "1"}}, "spec": {"replicas": 3}}
CONTROLLER_STATUS = {"status": {
    "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
    "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                    "message": "Deployment has minimum availability.",
                    "lastUpdateTime": "2026-01-05T10:00:00Z", "lastTransitionTime": "2026-01-05T10:00:00Z"}]}}


@functools.cache
def _fixture_text() -> str:
    return POD_FIXTURE.read_text()


def pod_manifest(name: str, version: str) -> dict[str, Any]:
    """The fixture pod as its author applies it: no server-set metadata, owner, node, status or token volume."""
    pod = json.loads(_fixture_text())
    meta = pod["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "generateName", "managedFields", "ownerReferences"):
        meta.pop(key, None)
    meta.update(name=name, namespace=NS)
    meta["labels"][VERSION_LABEL] = version
    spec = pod["spec"]
    for key in ("nodeName", "serviceAccount"):  # the scheduler's; a deprecated alias of serviceAccountName
        spec.pop(key, None)
    token = [v["name"] for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in token]
    for container in spec["containers"]:
        container["volumeMounts"] = [m for m in container.get("volumeMounts", []) if m["name"] not in token]
    pod.pop("status", None)
    return pod


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# ---------------------------------------------------------------- requests


def call(server: Server, method: str, path: str, body: bytes | None = None,
         ctype: str = "application/json") -> tuple[int, bytes]:
    """One HTTPS request with the bearer token and ``ctype``; (status, body)."""
    req = urllib.request.Request(server.url + path, data=body, method=method)
    req.add_header("Authorization", f"Bearer {server.token}")
    req.add_header("Content-Type", ctype)
    req.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(req, context=server.ssl_context(), timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def check(got: tuple[int, bytes], *expect: int, what: str) -> Any:
    status, text = got
    if status not in expect:
        raise RuntimeError(f"{what}: {status} {text[:500]!r}")
    return json.loads(text) if text else None


def wait_for(what: str, done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.05)


def apply_path(base: str, name: str) -> str:
    return f"{base}/{name}?fieldManager={APPLIER}"


class ApplyUnavailable(RuntimeError):
    """The server does not serve apply yet (415, or an error where an apply should succeed)."""


def prepare(server: Server) -> None:
    """The namespace, and the two Deployments with their two managers each."""
    check(call(server, "POST", "/api/v1/namespaces", dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})), 201, 409, what="creating the namespace")
    # The ServiceAccount admission plugin refuses pods until the namespace's default account exists.
    wait_for(f"the default ServiceAccount of {NS}", lambda: call(
        server, "GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default")[0] == 200)
    for name in (APPLIED, PATCHED):
        manifest = dumps(deployment_manifest(name, IMAGE + "0"))
        status, text = call(server, "PATCH", apply_path(DEPLOYMENTS, name), manifest, APPLY)
        if status != 201:
            raise ApplyUnavailable(f"an apply creating Deployment {name}: {status} {text[:300]!r}")
        check(call(server, "PATCH", f"{DEPLOYMENTS}/{name}?fieldManager={CONTROLLER}", dumps(CONTROLLER_UPDATE),
                   MERGE), 200, what=f"the controller's update of {name}")
        check(call(server, "PATCH", f"{DEPLOYMENTS}/{name}/status?fieldManager={CONTROLLER}", dumps(CONTROLLER_STATUS),
                   MERGE), 200, what=f"the controller's status of {name}")
    # the pod the change and no-op points re-apply
    check(call(server, "PATCH", apply_path(PODS, POD), dumps(pod_manifest(POD, "1.3.0")), APPLY), 201, 200,
          what=f"an apply creating Pod {POD}")


def prepare_without_apply(server: Server) -> None:
    """Only the SMP side, for a server that does not apply yet: the patched Deployment, made by create."""
    manifest = dumps(deployment_manifest(PATCHED, IMAGE + "0"))
    check(call(server, "POST", f"{DEPLOYMENTS}?fieldManager={APPLIER}", manifest), 201, 409,
          what=f"creating Deployment {PATCHED}")
    check(call(server, "PATCH", f"{DEPLOYMENTS}/{PATCHED}?fieldManager={CONTROLLER}", dumps(CONTROLLER_UPDATE), MERGE),
          200, what="the controller's update")
    check(call(server, "PATCH", f"{DEPLOYMENTS}/{PATCHED}/status?fieldManager={CONTROLLER}", dumps(CONTROLLER_STATUS),
               MERGE), 200, what="the controller's status")


# ---------------------------------------------------------------- points


@dataclass(slots=True)
class Point:
    """One measured point: requests sent one at a time for about ``seconds``."""

    requests: int
    seconds: float
    server_cpu_s: float
    server_us: float  # server CPU per request
    wall_us: float  # client-observed time per request
    server_cpu_pct: float

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


class Sender:
    """Numbered requests of one shape over one kept-alive connection, each checked for its status."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.conn = KeptAlive(Target.of(server))
        self.counter = 0  # shared by every shape: each request's changed value is new on its object
        self.last: dict[str, str] = {}  # what each shape sent last, to check against the objects

    def close(self) -> None:
        self.conn.close()

    def request(self, shape: str) -> None:
        self.counter += 1
        k = self.counter
        if shape == "apply":
            image = IMAGE + str(k)
            path, body, ctype, expect = (apply_path(DEPLOYMENTS, APPLIED), dumps(deployment_manifest(APPLIED, image)),
                                         APPLY, 200)
            self.last[shape] = image
        elif shape == "smp":
            image = IMAGE + str(k)
            path, body, ctype, expect = (f"{DEPLOYMENTS}/{PATCHED}?fieldManager={PATCHER}",
                                         dumps(image_patch(image)), SMP, 200)
            self.last[shape] = image
        elif shape == "create":
            name = f"pod-{k}"
            path, body, ctype, expect = apply_path(PODS, name), dumps(pod_manifest(name, "1.3.3")), APPLY, 201
            self.last[shape] = name
        elif shape == "change":
            version = f"1.3.{k}"
            path, body, ctype, expect = apply_path(PODS, POD), dumps(pod_manifest(POD, version)), APPLY, 200
            self.last[shape] = version
        elif shape == "noop":
            version = self.last.get("change", "1.3.3")
            path, body, ctype, expect = apply_path(PODS, POD), dumps(pod_manifest(POD, version)), APPLY, 200
        else:
            raise ValueError(shape)
        status, _, _ = self.conn.request("PATCH", path, body, ctype)
        if status != expect:
            detail = call(self.server, "PATCH", path, body, ctype)  # again, to read the answer's body
            raise RuntimeError(f"{shape}: {status}, expected {expect}; once more: {detail[0]} {detail[1][:400]!r}")

    def point(self, shape: str, seconds: float, warmup: int = 3) -> Point:
        for _ in range(warmup):
            self.request(shape)
        n = 0
        cpu0, t0 = self.server.cpu_seconds(), time.perf_counter()
        while (took := time.perf_counter() - t0) < seconds or n == 0:
            self.request(shape)
            n += 1
        cpu = self.server.cpu_seconds() - cpu0
        return Point(requests=n, seconds=took, server_cpu_s=cpu, server_us=1e6 * cpu / n, wall_us=1e6 * took / n,
                     server_cpu_pct=100 * cpu / took)


def idle_cpu_pct(server: Server, seconds: float = 1.0) -> float:
    """The server's CPU while nothing is asked of it, percent of one core."""
    cpu0 = server.cpu_seconds()
    time.sleep(seconds)
    return 100 * (server.cpu_seconds() - cpu0) / seconds


# ---------------------------------------------------------------- checks


def managers(obj: dict[str, Any]) -> list[list[str]]:
    """(manager, operation, subresource) of each managedFields entry."""
    return sorted([e.get("manager", ""), e.get("operation", ""), e.get("subresource", "")]
                  for e in obj["metadata"].get("managedFields") or [])


def checks(server: Server, sender: Sender, with_apply: bool) -> dict[str, Any]:
    """What the objects hold after the points: the writes happened and the managers are all there."""
    out: dict[str, Any] = {}
    patched = check(call(server, "GET", f"{DEPLOYMENTS}/{PATCHED}"), 200, what="reading the patched Deployment")
    out["smp_image_is_last_sent"] = patched["spec"]["template"]["spec"]["containers"][0]["image"] == sender.last["smp"]
    out["smp_managers"] = managers(patched)
    if not with_apply:
        return out
    applied = check(call(server, "GET", f"{DEPLOYMENTS}/{APPLIED}"), 200, what="reading the applied Deployment")
    spec = applied["spec"]
    out.update(
        apply_image_is_last_sent=spec["template"]["spec"]["containers"][0]["image"] == sender.last["apply"],
        apply_generation=applied["metadata"].get("generation", 0),
        controller_replicas_kept=spec.get("replicas") == 3,
        controller_annotation_kept=(applied["metadata"].get("annotations") or {}).get(REVISION) == "1",
        controller_status_kept=(applied.get("status") or {}).get("readyReplicas") == 3,
        apply_managers=managers(applied))
    pod = check(call(server, "GET", f"{PODS}/{POD}"), 200, what="reading the re-applied pod")
    out.update(pod_label_is_last_sent=pod["metadata"]["labels"].get(VERSION_LABEL) == sender.last["change"],
               pod_managers=managers(pod),
               last_created_pod_exists=call(server, "GET", f"{PODS}/{sender.last['create']}")[0] == 200)
    return out


# ---------------------------------------------------------------- run


def kapi_env(mode: str) -> dict[str, str]:
    """The server's environment: the compiled twins required, or the pure ones forced (as ``python -m bench``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAPI_NO_EXTENSIONS", "KAPI_REQUIRE_EXTENSIONS")}
    env["KAPI_NO_EXTENSIONS" if mode == "pure" else "KAPI_REQUIRE_EXTENSIONS"] = "1"
    return env


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)} if values else {}


def summarize(turns: dict[str, dict[str, list[Point]]], with_apply: bool) -> dict[str, Any]:
    """Per mode: the median µs of each shape, and apply ÷ SMP per round (the rounds' ratios' median, min, max)."""
    out: dict[str, Any] = {}
    for mode, shapes in turns.items():
        m: dict[str, Any] = {"server_us": {s: round(statistics.median(p.server_us for p in pts), 1)
                                           for s, pts in shapes.items()},
                             "wall_us": {s: round(statistics.median(p.wall_us for p in pts), 1)
                                         for s, pts in shapes.items()},
                             "requests": {s: sum(p.requests for p in pts) for s, pts in shapes.items()}}
        if with_apply:
            m["apply_over_smp"] = spread([a.server_us / s.server_us for a, s in zip(shapes["apply"], shapes["smp"])
                                          if s.server_us])
        out[mode] = m
    return out


def tables(result: dict[str, Any]) -> str:
    s = result["summary"]
    modes = [m for m in MODES if m in s]
    rows = ["| request | " + " | ".join(f"server µs, {m}" for m in modes) + " | " +
            " | ".join(f"wall µs, {m}" for m in modes) + " |",
            "|---|" + "---:|" * (2 * len(modes))]
    labels = {"apply": "Deployment re-apply, one field changed", "smp": "Deployment SMP, the same change",
              "create": "pod apply, creating", "change": "pod re-apply, one label changed",
              "noop": "pod re-apply, unchanged"}
    for shape, label in labels.items():
        if shape in s[modes[0]]["server_us"]:
            rows.append(f"| {label} | " + " | ".join(f"{s[m]['server_us'][shape]:.0f}" for m in modes) + " | " +
                        " | ".join(f"{s[m]['wall_us'][shape]:.0f}" for m in modes) + " |")
    ratios = result["ratios"]
    if "apply_over_smp" in ratios:
        rows += ["", "| ratio | value | goal |", "|---|---:|---:|"]
        for m in modes:
            r = s[m]["apply_over_smp"]
            rows.append(f"| Deployment apply ÷ SMP, server CPU, {m} (median of rounds; min–max) | "
                        f"{r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f}) | ≤ {GOAL:g} |")
        for shape in POD_KINDS:
            rows.append(f"| pod {shape}: pure ÷ compiled µs | {ratios[f'pod_{shape}_pure_over_compiled_us']:.2f} | |")
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    args.seconds = args.seconds if args.seconds is not None else (0.5 if args.quick else 3.0)
    args.repeat = args.repeat or (1 if args.quick else 3)
    modes = [m for m in MODES if m in args.modes]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        servers: dict[str, Server] = {}
        senders: dict[str, Sender] = {}
        try:
            for mode in modes:
                servers[mode] = start_kapi(tmp / mode, env=kapi_env(mode))
            with_apply = True
            for mode, server in servers.items():
                try:
                    prepare(server)
                except ApplyUnavailable as err:
                    print(f"apply is not served ({err}); measuring the SMP side only", file=sys.stderr)
                    with_apply = False
                    prepare_without_apply(server)
                senders[mode] = Sender(server)
            idle = {mode: round(idle_cpu_pct(server), 2) for mode, server in servers.items()}
            shapes = (*DEPLOYMENT_SIDES, *POD_KINDS) if with_apply else ("smp",)
            turns: dict[str, dict[str, list[Point]]] = {m: {s: [] for s in shapes} for m in modes}
            print(f"{args.seconds:g} s per point, {args.repeat} rounds, modes {', '.join(modes)}; "
                  f"idle server CPU {idle} %", file=sys.stderr)
            for rnd in range(args.repeat):
                # Rotate who goes first, so that a drift in the machine's load touches each side alike.
                order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                for mode in order:
                    sides = list(shapes[:2]) if with_apply else ["smp"]
                    if rnd % 2:
                        sides.reverse()
                    for shape in (*sides, *shapes[2:]):
                        p = senders[mode].point(shape, args.seconds)
                        turns[mode][shape].append(p)
                        print(f"  round {rnd + 1} {mode:>8} {shape:>6}: {p.requests:5d} requests, "
                              f"server {p.server_us:7.0f} µs each, wall {p.wall_us:7.0f} µs", file=sys.stderr)
            verified = {mode: checks(servers[mode], senders[mode], with_apply) for mode in modes}
        finally:
            for sender in senders.values():
                sender.close()
            for server in servers.values():
                stop(server)

    summary = summarize(turns, with_apply)
    ratios: dict[str, float] = {}
    if with_apply:
        for mode in modes:
            ratios[f"apply_over_smp_{mode}"] = summary[mode]["apply_over_smp"]["median"]
        ratios["apply_over_smp"] = ratios[f"apply_over_smp_{modes[0]}"]
        if len(modes) == 2:
            for shape in POD_KINDS:
                c, p = summary["compiled"]["server_us"][shape], summary["pure"]["server_us"][shape]
                ratios[f"pod_{shape}_pure_over_compiled_us"] = round(p / c, 3) if c else 0.0
    result = {
        "config": {"seconds": args.seconds, "repeat": args.repeat, "quick": args.quick, "modes": modes,
                   "python": platform.python_version(), "machine": platform.machine()},
        "apply_served": with_apply,
        "idle_cpu_pct": idle,
        "turns": {m: {s: [p.to_json() for p in pts] for s, pts in shapes_.items()} for m, shapes_ in turns.items()},
        "summary": summary,
        "pod_apply_us": ({m: {k: summary[m]["server_us"][k] for k in POD_KINDS} for m in modes}
                         if with_apply else None),
        "ratios": ratios,
        "checks": verified,
        "goal": {"apply_over_smp": GOAL},
    }
    write_json(args.output, result)
    print(tables(result))
    print(f"\ngoal: Deployment re-apply ÷ SMP of the same change, server CPU per request ≤ {GOAL:g}")
    if not with_apply:
        print("apply is not served by this tree: only the SMP side was measured", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None, help="seconds per point (default 3, 0.5 with --quick)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="rounds, the sides taking turns (default 3, 1 with --quick)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                        help="which servers: compiled twins, pure twins (default both)")
    parser.add_argument("--quick", action="store_true", help="short points: a check that everything runs")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "apply.json", help="JSON results file")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
