"""API Priority and Fairness under load: system traffic against a flood, fairness between equal flows, overhead.

Run ``python bench/bench_apf.py`` from the repository root (``--quick``: small and short, a check that it
runs). Three measures, each a ratio taken within one run:

- **flood**: one ``kapi serve`` (sqlite, AlwaysAllow, ``--token-auth-file``) holds ``--objects`` ConfigMaps
  of about 1 kB in namespace ``bench``. System traffic: ``--nodes`` node heartbeats (each node,
  ``system:node:node-i`` in ``system:nodes``, PATCHes its Lease in ``kube-node-lease`` every
  ``--heartbeat-interval`` s) and a kubelet's pod watch (``system:node:node-0`` watching the pods bound to
  ``node-0``, while the admin PATCHes that pod at ``--update-rate``/s with its wall-clock time in an
  annotation). It runs ``--seconds`` alone, then as long again beside a flood: one flow (user ``bench-flood``,
  which lands in ``global-default``) holding ``--flood`` concurrent LISTs of every ConfigMap. Reported: the p99
  (and p50) of heartbeat latency and of watch-event delay, **under flood ÷ unloaded** (goal ≤ 2), and the
  flood's answers: 200s, 429s, and how many 429s carried ``Retry-After``.
- **fairness**: on the same server, ``--flows`` users (``bench-flow-k``, ``global-default``, ByUser: one flow
  each) hold ``--flow-concurrency`` LISTs each for ``--seconds``; every LIST is the same, so each flow's
  seat-seconds are proportional to its completed LISTs. Reported: each flow's share ÷ the mean (goal: all
  within ±10 %), the level's queue during the run (it must be saturated), and the heaviest flows as
  ``dump_priority_levels`` names them.
- **overhead**: two more servers, ``--enable-priority-and-fairness`` true and false, otherwise alike; GETs/s
  of one ConfigMap as a non-admin user (the admin is exempt) at ``--get-concurrency``, unsaturated, the two
  taking turns ``--repeat`` times; **on ÷ off** (goal ≥ 0.95), median with min and max.

The flood server has ``--request-timeout`` ``--flood-request-timeout`` (default 8 s): a queued request waits
at most a quarter of it, kube's rule. With kube's default 60 s the flood's one flow only queues (its hand of
6 queues of ``global-default`` holds 300 requests, and none waits 15 s), and gets no 429.
Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, Load, Server, run_load, start_kapi, stop, write_json  # noqa: E402
from _workload import MARKER_KEY, KeptAlive, Target, Watching, _gather, _join, _spawn, watch_path  # noqa: E402

NAMESPACE = "bench"
FLOOD_USER = "bench-flood"
READER = "bench-reader"
NODE_GROUP = "system:nodes"
GOALS = {"flood_p99_ratio": 2.0, "fairness_spread": 0.10, "overhead_ratio": 0.95}
PF_LEVEL_HEADER = "x-kubernetes-pf-prioritylevel-uid"


def token_of(user: str) -> str:
    return "tok-" + user.replace(":", "-")


def tokens_file(path: Path, nodes: int, flows: int) -> None:
    rows = [f'{token_of(FLOOD_USER)},{FLOOD_USER},uid-flood,"bench"', f'{token_of(READER)},{READER},uid-reader,"bench"']
    rows += [f'{token_of(f"bench-flow-{k}")},bench-flow-{k},uid-flow-{k},"bench"' for k in range(flows)]
    rows += [f'{token_of(f"system:node:node-{i}")},system:node:node-{i},uid-node-{i},"{NODE_GROUP}"'
             for i in range(nodes)]
    path.write_text("\n".join(rows) + "\n")


# ---------------------------------------------------------------- setup through the API


def create_all(server: Server, items: list[tuple[str, dict[str, Any]]], threads: int = 8) -> None:
    """POST every item as the admin; raise on anything but 201 (409 for what already exists)."""
    import httpx

    def work(chunk: list[tuple[str, dict[str, Any]]]) -> None:
        with httpx.Client(base_url=server.url, verify=server.ssl_context(), timeout=60,
                          headers={"Authorization": f"Bearer {server.token}"}) as client:
            for path, body in chunk:
                resp = client.post(path, json=body)
                if resp.status_code not in (201, 409):
                    raise RuntimeError(f"POST {path}: {resp.status_code} {resp.text[:300]}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, [items[k::threads] for k in range(threads)]))


def micro_time() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def populate(server: Server, objects: int, nodes: int, object_bytes: int = 1000) -> None:
    """The namespace, its ConfigMaps (``object_bytes`` of data each), node-0's pod and every node's Lease."""
    create_all(server, [("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": NAMESPACE}})], threads=1)
    value = "x" * object_bytes
    cms = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    items: list[tuple[str, dict[str, Any]]] = [
        (cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-get"}, "data": {"k": "v"}})]
    items += [(cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:05d}"},
                     "data": {"payload": value}}) for i in range(objects)]
    items += [(f"/api/v1/namespaces/{NAMESPACE}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kubelet-pod"},
        "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "busybox"}]}})]
    items += [("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": f"node-{i}"},
        "spec": {"holderIdentity": f"node-{i}", "leaseDurationSeconds": 40, "renewTime": micro_time()}})
        for i in range(nodes)]
    create_all(server, items)


# ---------------------------------------------------------------- client processes


@dataclass(slots=True)
class Tally:
    """What one flow (or one kind of system traffic) got."""

    ok: int = 0
    rejected: int = 0  # 429
    with_retry_after: int = 0  # of the 429s
    other: int = 0
    latencies_ms: list[float] = field(default_factory=list)  # of the answered (2xx) requests
    first_error: str = ""

    def add(self, status: int, retry_after: str | None, ms: float) -> None:
        if 200 <= status < 300:
            self.ok += 1
            self.latencies_ms.append(ms)
        elif status == 429:
            self.rejected += 1
            self.with_retry_after += retry_after is not None and retry_after.isdigit() and int(retry_after) >= 1
        else:
            self.other += 1
            self.first_error = self.first_error or f"status {status}"


def _loop(url: str, ca_file: str, token: str, path: str, until: float, tally: Tally, lock: threading.Lock) -> None:
    conn = KeptAlive(Target(url, ca_file, token))
    try:
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            try:
                status, retry_after, _ = conn.request("GET", path)
            except OSError as err:
                with lock:
                    tally.other += 1
                    tally.first_error = tally.first_error or repr(err)
                continue
            with lock:
                tally.add(status, retry_after, (time.perf_counter() - t0) * 1000)
    finally:
        conn.close()


def _flows_main(url: str, ca_file: str, flows: list[tuple[str, str, int]], path: str, seconds: float,
                out: Any, go: Any) -> None:
    """A client process: for each (flow, token, connections), that many threads GETting ``path`` in a loop."""
    try:
        out.put(("ready", len(flows)))
        go.wait()
        until = time.perf_counter() + seconds
        lock = threading.Lock()
        tallies = {flow: Tally() for flow, _, _ in flows}
        threads = [threading.Thread(target=_loop, args=(url, ca_file, tok, path, until, tallies[flow], lock))
                   for flow, tok, n in flows for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out.put({flow: asdict(t) for flow, t in tallies.items()})
    except BaseException as err:
        out.put(RuntimeError(repr(err)))
        raise


def _heartbeats_main(url: str, ca_file: str, nodes: int, interval: float, seconds: float, admin_token: str,
                     pod_path: str, update_rate: float, out: Any, go: Any) -> None:
    """A client process: every node PATCHes its Lease's renewTime every ``interval`` s, on its own connection;
    and the admin PATCHes the kubelet's pod ``update_rate`` times a second, the wall-clock time of the send in
    an annotation (the watch's event delay is measured from it: a lean client, so that the delay is the
    server's and not a busy client's)."""
    try:
        out.put(("ready", nodes))
        go.wait()
        t0 = time.perf_counter()
        lock = threading.Lock()
        tally = Tally()

        def node(i: int) -> None:
            conn = KeptAlive(Target(url, ca_file, token_of(f"system:node:node-{i}")))
            path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-{i}"
            k = 0
            try:
                while True:
                    slot = t0 + (i / nodes + k) * interval  # the nodes' beats spread over the interval
                    if slot >= t0 + seconds:
                        return
                    time.sleep(max(0.0, slot - time.perf_counter()))
                    body = json.dumps({"spec": {"renewTime": micro_time()}}).encode()
                    started = time.perf_counter()
                    try:
                        status, retry_after, _ = conn.request("PATCH", path, body, "application/merge-patch+json")
                    except OSError as err:
                        status, retry_after = 0, None
                        tally.first_error = tally.first_error or repr(err)
                    with lock:
                        tally.add(status, retry_after, (time.perf_counter() - started) * 1000)
                    k += 1
            finally:
                conn.close()

        updates = {"sent": 0, "errors": 0, "first_error": ""}

        def writer() -> None:
            conn = KeptAlive(Target(url, ca_file, admin_token))
            try:
                for k in range(max(1, int(update_rate * seconds))):
                    time.sleep(max(0.0, t0 + k / update_rate - time.perf_counter()))
                    body = json.dumps({"metadata": {"annotations": {MARKER_KEY: f"{time.time():.6f}"}}}).encode()
                    status, _, _ = conn.request("PATCH", pod_path, body, "application/merge-patch+json")
                    ok = status == 200
                    updates["sent" if ok else "errors"] += 1
                    updates["first_error"] = updates["first_error"] or ("" if ok else f"status {status}")
            finally:
                conn.close()

        threads = [threading.Thread(target=node, args=(i,)) for i in range(nodes)]
        threads.append(threading.Thread(target=writer))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out.put({"heartbeats": asdict(tally), "updates": updates})
    except BaseException as err:
        out.put(RuntimeError(repr(err)))
        raise


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def summary(tally: dict[str, Any]) -> dict[str, Any]:
    lat = tally.pop("latencies_ms")
    return {**tally, "p50_ms": round(pct(lat, 0.5), 2), "p99_ms": round(pct(lat, 0.99), 2)}


def by_level(server: Server, name: str) -> dict[str, float]:
    """``name``'s samples summed per ``priority_level``, from /metrics."""
    status, body = server.request("GET", "/metrics")
    out: dict[str, float] = {}
    if status != 200:
        return out
    for line in body.decode().splitlines():
        if not line.startswith(name + "{"):
            continue
        key, _, value = line.rpartition(" ")
        level = key.partition('priority_level="')[2].partition('"')[0]
        out[level] = out.get(level, 0.0) + float(value)
    return out


def classification(server: Server, users: list[str]) -> dict[str, str]:
    """The priority level each user's requests land in (from the PF header and the PLC list)."""
    import urllib.request

    status, body = server.request("GET", "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations")
    names = {o["metadata"]["uid"]: o["metadata"]["name"] for o in json.loads(body)["items"]} if status == 200 else {}
    out = {}
    for user in users:
        req = urllib.request.Request(server.url + f"/api/v1/namespaces/{NAMESPACE}/configmaps/bench-get")
        req.add_header("Authorization", f"Bearer {token_of(user)}")
        with urllib.request.urlopen(req, context=server.ssl_context(), timeout=30) as resp:
            uid = resp.headers.get(PF_LEVEL_HEADER, "")
        out[user] = names.get(uid, f"uid {uid!r}")
    return out


def metric(server: Server, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``, from /metrics."""
    status, body = server.request("GET", "/metrics")
    if status != 200:
        return 0.0
    total = 0.0
    for line in body.decode().splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        metric_name, _, label_text = key.partition("{")
        if metric_name != name:
            continue
        if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
            total += float(value)
    return total


# ---------------------------------------------------------------- the measures


def system_phase(server: Server, args: argparse.Namespace, flood: bool) -> dict[str, Any]:
    """System traffic for ``--seconds`` (beside the flood when ``flood``)."""
    admin = Target.of(server)
    kubelet = Target(server.url, str(server.ca_file), token_of("system:node:node-0"))
    status, body = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/kubelet-pod")
    rv = json.loads(body)["metadata"]["resourceVersion"] if status == 200 else "0"
    watching = Watching.open(kubelet, [watch_path("/api/v1/pods", rv, fieldSelector="spec.nodeName=node-0")], 1)
    jobs: list[tuple[Any, ...]] = [(server.url, str(server.ca_file), args.nodes, args.heartbeat_interval,
                                    args.seconds, admin.token, f"/api/v1/namespaces/{NAMESPACE}/pods/kubelet-pod",
                                    args.update_rate)]
    beats, beats_out, beats_go = _spawn(_heartbeats_main, jobs)
    floods: list[Any] = []
    flood_out = flood_go = None
    if flood:
        per = [args.flood // args.flood_processes + (k < args.flood % args.flood_processes)
               for k in range(args.flood_processes)]
        fjobs = [(server.url, str(server.ca_file), [(FLOOD_USER, token_of(FLOOD_USER), n)],
                  f"/api/v1/namespaces/{NAMESPACE}/configmaps", args.seconds) for n in per if n]
        floods, flood_out, flood_go = _spawn(_flows_main, fjobs)
    try:
        _gather(beats, beats_out, 120)
        if floods:
            _gather(floods, flood_out, 120)
            flood_go.set()
            time.sleep(min(1.0, args.seconds / 4))  # the flood is under way before the system traffic starts
        beats_go.set()
        inqueue_samples: list[float] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.5):
                inqueue_samples.append(metric(server, "apiserver_flowcontrol_current_inqueue_requests"))

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            system = _gather(beats, beats_out, args.seconds + 120)[0]
        finally:
            done.set()
            sampler.join()
        hb, updates = system["heartbeats"], system["updates"]
        if updates["errors"]:
            raise RuntimeError(f"{updates['errors']} pod updates failed; first: {updates['first_error']}")
        fl = None
        if floods:
            parts = _gather(floods, flood_out, args.seconds + 300)
            fl = Tally()
            for part in parts:
                t = part[FLOOD_USER]
                fl.ok += t["ok"]
                fl.rejected += t["rejected"]
                fl.with_retry_after += t["with_retry_after"]
                fl.other += t["other"]
                fl.latencies_ms += t["latencies_ms"]
                fl.first_error = fl.first_error or t["first_error"]
    finally:
        watched = watching.close()
        _join(beats)
        _join(floods)
    delays = [d for part in watched for d in part.delays_ms]
    return {"heartbeats": summary(hb), "watch": {"events": len(delays), "sent": updates["sent"],
                                                  "p50_ms": round(pct(delays, 0.5), 2),
                                                  "p99_ms": round(pct(delays, 0.99), 2)},
            "flood": summary(asdict(fl)) if fl else None,
            "inqueue_max": max(inqueue_samples, default=0.0)}


def fairness(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    """``--flows`` equal flows in one level, saturated: each flow's completed LISTs ÷ the mean."""
    flows = [(f"bench-flow-{k}", token_of(f"bench-flow-{k}"), args.flow_concurrency) for k in range(args.flows)]
    jobs = [(server.url, str(server.ca_file), flows[p::args.flood_processes],
             f"/api/v1/namespaces/{NAMESPACE}/configmaps", args.seconds)
            for p in range(args.flood_processes) if flows[p::args.flood_processes]]
    procs, out, go = _spawn(_flows_main, jobs)
    samples: list[float] = []
    try:
        _gather(procs, out, 120)
        go.set()
        t_end = time.perf_counter() + args.seconds
        while time.perf_counter() < t_end - 0.5:
            time.sleep(0.5)
            samples.append(metric(server, "apiserver_flowcontrol_current_inqueue_requests"))
        status, dump = server.request("GET", "/debug/api_priority_and_fairness/dump_priority_levels")
        parts = _gather(procs, out, args.seconds + 300)
    finally:
        _join(procs)
    by_flow: dict[str, dict[str, Any]] = {}
    for part in parts:
        for flow, tally in part.items():
            by_flow[flow] = summary(tally)
    done = [by_flow[f]["ok"] for f, _, _ in flows]
    mean = statistics.mean(done) if done else 0.0
    shares = {f: round(by_flow[f]["ok"] / mean, 3) if mean else 0.0 for f, _, _ in flows}
    dump_lines = [line for line in dump.decode(errors="replace").splitlines() if "bench-flow-" in line] \
        if status == 200 else []
    # The server's own account: the flows table of dump_priority_levels (SeatSeconds, a decaying sum)
    seat_seconds: dict[str, float] = {}
    for line in dump_lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 4 and cells[3].endswith("ss"):
            seat_seconds[cells[2]] = seat_seconds.get(cells[2], 0.0) + float(cells[3][:-2])
    ss_mean = statistics.mean(seat_seconds.values()) if seat_seconds else 0.0
    dump_shares = {f: round(v / ss_mean, 3) for f, v in sorted(seat_seconds.items())} if ss_mean else {}
    return {"flows": by_flow, "share_over_mean": shares, "dump_seat_seconds": seat_seconds,
            "dump_share_over_mean": dump_shares,
            "dump_max_deviation": round(max(abs(v - 1) for v in dump_shares.values()), 3) if dump_shares else None,
            "max_deviation": round(max(abs(s - 1) for s in shares.values()), 3) if shares else None,
            "inqueue_max": max(samples, default=0.0), "inqueue_median": statistics.median(samples) if samples else 0.0,
            "dump_lines": dump_lines[:40]}


def overhead(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """GETs/s as a non-admin user with APF on and off, unsaturated, the two servers taking turns."""
    servers: dict[str, Server] = {}
    rates: dict[str, list[float]] = {"on": [], "off": []}
    cpu_us: dict[str, list[float]] = {"on": [], "off": []}  # the server's CPU per request
    headers_seen = {}
    try:
        for name, flag in (("on", "true"), ("off", "false")):
            server = start_kapi(root / f"overhead-{name}", "--storage-backend", "sqlite", "--authorization-mode",
                                "AlwaysAllow", "--token-auth-file", str(root / "tokens.csv"),
                                "--enable-priority-and-fairness", flag, timeout_s=120)
            servers[name] = server
            create_all(server, [("/api/v1/namespaces",
                                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})], 1)
            create_all(server, [(f"/api/v1/namespaces/{NAMESPACE}/configmaps",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-get"},
                                  "data": {"k": "v"}})], 1)
            conn = KeptAlive(Target(server.url, str(server.ca_file), token_of(READER)))
            conn.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/bench-get")
            conn.close()
            headers_seen[name] = pf_headers(server, token_of(READER))
        order = ["on", "off"]
        for r in range(args.repeat):
            for name in order[r % 2:] + order[:r % 2]:
                load = Load(url=servers[name].url, path=f"/api/v1/namespaces/{NAMESPACE}/configmaps/bench-get",
                            ca_file=str(servers[name].ca_file), token=token_of(READER),
                            concurrency=args.get_concurrency, duration_s=args.get_duration)
                result = run_load(load, servers[name].proc.pid)
                if result.errors or not result.requests:
                    raise RuntimeError(f"overhead {name}: {result.errors} errors; first: {result.first_error}")
                rates[name].append(result.rate)
                cpu_us[name].append(result.server_cpu_pct / 100 * result.seconds / result.requests * 1e6)
                print(f"  overhead round {r + 1} APF {name:<3} {result.rate:8.0f} GETs/s  "
                      f"server cpu {result.server_cpu_pct:4.0f}% ({cpu_us[name][-1]:5.0f} µs/req)  "
                      f"client cpu {result.client_cpu_pct:4.0f}%", flush=True)
    finally:
        for server in servers.values():
            stop(server)
    ratios = [a / b for a, b in zip(rates["on"], rates["off"])]
    per_cpu = [b / a for a, b in zip(cpu_us["on"], cpu_us["off"])]  # requests per CPU-second, on ÷ off
    return {"rates": {k: [round(v, 1) for v in vs] for k, vs in rates.items()},
            "cpu_us_per_request": {k: [round(v, 1) for v in vs] for k, vs in cpu_us.items()},
            "on_over_off": {"median": round(statistics.median(ratios), 3), "min": round(min(ratios), 3),
                            "max": round(max(ratios), 3)},
            "per_cpu_on_over_off": {"median": round(statistics.median(per_cpu), 3), "min": round(min(per_cpu), 3),
                                    "max": round(max(per_cpu), 3)},
            "classified": headers_seen}


def pf_headers(server: Server, token: str) -> bool:
    """Whether a non-admin GET answers with kube's PF priority-level header (APF active)."""
    import urllib.request

    req = urllib.request.Request(server.url + f"/api/v1/namespaces/{NAMESPACE}/configmaps/bench-get")
    req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, context=server.ssl_context(), timeout=30) as resp:
        return PF_LEVEL_HEADER in {k.lower() for k in resp.headers.keys()}


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    tokens_file(root / "tokens.csv", args.nodes, args.flows)
    flags = ["--storage-backend", "sqlite", "--authorization-mode", "AlwaysAllow",
             "--token-auth-file", str(root / "tokens.csv"), "--request-timeout", args.flood_request_timeout,
             "--max-requests-inflight", str(args.max_requests_inflight),
             "--max-mutating-requests-inflight", str(args.max_mutating_requests_inflight)]
    server = start_kapi(root / "flood", *flags, timeout_s=120)
    try:
        t0 = time.perf_counter()
        populate(server, args.objects, args.nodes, args.object_bytes)
        levels = classification(server, [FLOOD_USER, "system:node:node-0", "bench-flow-0", READER])
        print(f"  {args.objects} ConfigMaps, {args.nodes} Leases in {time.perf_counter() - t0:.1f} s; "
              f"priority levels: {levels}", flush=True)
        # Fairness first: the flows table of dump_priority_levels keeps a level's 10 heaviest flows, and the
        # flood's, decaying with a half-life of a minute, would take a place in it.
        fair = fairness(server, args)
        print(f"  fairness: shares {fair['share_over_mean']}, queue max {fair['inqueue_max']}", flush=True)
        unloaded = system_phase(server, args, flood=False)
        print(f"  unloaded: heartbeats p99 {unloaded['heartbeats']['p99_ms']} ms, "
              f"watch p99 {unloaded['watch']['p99_ms']} ms", flush=True)
        flooded = system_phase(server, args, flood=True)
        f = flooded["flood"]
        print(f"  flooded:  heartbeats p99 {flooded['heartbeats']['p99_ms']} ms, watch p99 "
              f"{flooded['watch']['p99_ms']} ms; flood {f['ok']} ok, {f['rejected']} 429 "
              f"({f['with_retry_after']} with Retry-After), {f['other']} other", flush=True)
        rejected_by_level = by_level(server, "apiserver_flowcontrol_rejected_requests_total")
    finally:
        stop(server)
    off = None
    if args.compare_off:  # the same flood against max-in-flight alone: what APF changes
        server = start_kapi(root / "flood-off", *flags, "--enable-priority-and-fairness", "false", timeout_s=120)
        try:
            populate(server, args.objects, args.nodes, args.object_bytes)
            off = {"unloaded": system_phase(server, args, flood=False),
                   "flooded": system_phase(server, args, flood=True)}
        finally:
            stop(server)
        off["ratios"] = {f"{k}_{q}": ratio(off["flooded"][k2][q + "_ms"], off["unloaded"][k2][q + "_ms"])
                         for k, k2 in (("heartbeat", "heartbeats"), ("watch", "watch")) for q in ("p99", "p50")}
        print(f"  APF off, flooded: heartbeats p99 {off['flooded']['heartbeats']['p99_ms']} ms "
              f"({off['flooded']['heartbeats']['rejected']} × 429), watch p99 {off['flooded']['watch']['p99_ms']} ms; "
              f"flood {off['flooded']['flood']['ok']} ok, {off['flooded']['flood']['rejected']} × 429", flush=True)
    over = overhead(root, args) if args.repeat else None
    flood_ratios = {
        "heartbeat_p99": ratio(flooded["heartbeats"]["p99_ms"], unloaded["heartbeats"]["p99_ms"]),
        "heartbeat_p50": ratio(flooded["heartbeats"]["p50_ms"], unloaded["heartbeats"]["p50_ms"]),
        "watch_p99": ratio(flooded["watch"]["p99_ms"], unloaded["watch"]["p99_ms"]),
        "watch_p50": ratio(flooded["watch"]["p50_ms"], unloaded["watch"]["p50_ms"]),
    }
    return {"flood": {"unloaded": unloaded, "flooded": flooded, "ratios": flood_ratios,
                      "rejected_by_level": rejected_by_level, "levels": levels},
            "flood_apf_off": off, "fairness": fair, "overhead": over}


def goals(result: dict[str, Any]) -> dict[str, Any]:
    fl = result["flood"]["ratios"]
    worst = max((v for k, v in fl.items() if k.endswith("p99") and v is not None), default=None)
    fair = result["fairness"]["max_deviation"]
    over = result["overhead"]["on_over_off"]["median"] if result["overhead"] else None
    return {"flood_p99_ratio": {"goal": GOALS["flood_p99_ratio"], "worst": worst,
                                "met": worst is not None and worst <= GOALS["flood_p99_ratio"]},
            "fairness_spread": {"goal": GOALS["fairness_spread"], "max_deviation": fair,
                                "met": fair is not None and fair <= GOALS["fairness_spread"]},
            "overhead_ratio": {"goal": GOALS["overhead_ratio"], "median": over,
                               "met": over is not None and over >= GOALS["overhead_ratio"]}}


def table(result: dict[str, Any]) -> str:
    fl = result["flood"]
    u, f = fl["unloaded"], fl["flooded"]
    lines = ["| measure | unloaded | under flood | ratio (goal) |", "|---|---:|---:|---:|"]
    levels = ", ".join(f"{user} → {pl}" for user, pl in fl["levels"].items())
    for key, label in (("heartbeats", "node heartbeat (Lease PATCH)"), ("watch", "kubelet pod watch event delay")):
        short = "heartbeat" if key == "heartbeats" else "watch"
        lines.append(f"| {label} p99 | {u[key]['p99_ms']} ms | {f[key]['p99_ms']} ms | "
                     f"{fl['ratios'][short + '_p99']} (≤ 2) |")
        lines.append(f"| {label} p50 | {u[key]['p50_ms']} ms | {f[key]['p50_ms']} ms | "
                     f"{fl['ratios'][short + '_p50']} |")
    fd = f["flood"]
    lines.append(f"| the flood's LISTs | | {fd['ok']} answered, {fd['rejected']} × 429 "
                 f"({fd['with_retry_after']} with Retry-After), {fd['other']} other | |")
    lines.append(f"| system traffic refused | {u['heartbeats']['rejected']} | {f['heartbeats']['rejected']} | |")
    if result.get("flood_apf_off"):
        off = result["flood_apf_off"]
        for key, short in (("heartbeats", "heartbeat"), ("watch", "watch")):
            lines.append(f"| APF off (max-in-flight): {short} p99 | {off['unloaded'][key]['p99_ms']} ms | "
                         f"{off['flooded'][key]['p99_ms']} ms | {off['ratios'][short + '_p99']} |")
        lines.append(f"| APF off: the flood's LISTs; heartbeats refused | | {off['flooded']['flood']['ok']} answered, "
                     f"{off['flooded']['flood']['rejected']} × 429; {off['flooded']['heartbeats']['rejected']} | |")
    fair = result["fairness"]
    shares = ", ".join(f"{v:.2f}" for v in fair["share_over_mean"].values())
    lines.append(f"| fairness: {len(fair['share_over_mean'])} equal flows' completed LISTs ÷ mean | | {shares} "
                 f"(queue ≤ {fair['inqueue_max']:.0f}) | max deviation {fair['max_deviation']} (≤ 0.10) |")
    dump_shares = ", ".join(f"{v:.2f}" for v in fair["dump_share_over_mean"].values())
    lines.append(f"| fairness: their SeatSeconds in dump_priority_levels ÷ mean | | {dump_shares or '—'} | "
                 f"max deviation {fair['dump_max_deviation']} |")
    if result["overhead"]:
        o = result["overhead"]
        lines.append(f"| GETs/s APF on ÷ off, unsaturated | {statistics.median(o['rates']['off']):,.0f}/s off | "
                     f"{statistics.median(o['rates']['on']):,.0f}/s on | {o['on_over_off']['median']} "
                     f"({o['on_over_off']['min']}–{o['on_over_off']['max']}) (≥ 0.95) |")
        c = o["per_cpu_on_over_off"]
        lines.append(f"| GETs per server CPU-second, on ÷ off | "
                     f"{statistics.median(o['cpu_us_per_request']['off']):,.0f} µs/req off | "
                     f"{statistics.median(o['cpu_us_per_request']['on']):,.0f} µs/req on | "
                     f"{c['median']} ({c['min']}–{c['max']}) |")
    lines.append(f"\npriority levels: {levels}; 429s by level: {fl['rejected_by_level']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small and short: a check that everything runs")
    parser.add_argument("--objects", type=int, default=None, help="ConfigMaps of ~1 kB listed by the flood "
                                                                   "(default 1000, 100 quick)")
    parser.add_argument("--object-bytes", type=int, default=1000, help="data bytes per ConfigMap (1000)")
    parser.add_argument("--flood", type=int, default=None, help="concurrent LISTs of the flood (default 100, 20 quick)")
    parser.add_argument("--flood-processes", type=int, default=2, help="client processes of the flood and the flows")
    parser.add_argument("--nodes", type=int, default=None, help="nodes heartbeating (default 20, 5 quick)")
    parser.add_argument("--heartbeat-interval", type=float, default=0.25, help="seconds between a node's beats")
    parser.add_argument("--update-rate", type=float, default=10.0, help="PATCHes/s of the kubelet's pod")
    parser.add_argument("--seconds", type=float, default=None, help="length of each phase (default 10, 2 quick)")
    parser.add_argument("--flows", type=int, default=10, help="equal flows of the fairness measure")
    parser.add_argument("--flow-concurrency", type=int, default=None, help="LISTs each flow holds (default 5, 2 quick)")
    parser.add_argument("--flood-request-timeout", default="8s", help="--request-timeout of the flood server")
    parser.add_argument("--max-requests-inflight", type=int, default=400)
    parser.add_argument("--max-mutating-requests-inflight", type=int, default=200)
    parser.add_argument("--get-concurrency", type=int, default=16, help="connections of the overhead GETs")
    parser.add_argument("--get-duration", type=float, default=None, help="seconds per overhead point (1.5, 0.3 quick)")
    parser.add_argument("--repeat", type=int, default=None, help="overhead rounds (default 6, 1 quick; 0 skips)")
    parser.add_argument("--compare-off", type=int, default=None, choices=(0, 1),
                        help="1: the flood again against a server with APF off (default 1, 0 quick)")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "apf.json", help="JSON results file")
    args = parser.parse_args(argv)
    q = args.quick
    args.objects = args.objects if args.objects is not None else (100 if q else 1000)
    args.flood = args.flood if args.flood is not None else (20 if q else 100)
    args.nodes = args.nodes if args.nodes is not None else (5 if q else 20)
    args.seconds = args.seconds if args.seconds is not None else (2.0 if q else 10.0)
    args.flow_concurrency = args.flow_concurrency if args.flow_concurrency is not None else (2 if q else 5)
    args.get_duration = args.get_duration if args.get_duration is not None else (0.3 if q else 1.5)
    args.repeat = args.repeat if args.repeat is not None else (1 if q else 6)
    args.compare_off = args.compare_off if args.compare_off is not None else (0 if q else 1)
    if min(args.flood, args.nodes, args.flows, args.flow_concurrency, args.flood_processes) < 1 or args.repeat < 0:
        parser.error("--flood, --nodes, --flows, --flow-concurrency and --flood-processes must be at least 1")

    started = time.monotonic()
    print(f"APF: {args.objects} ConfigMaps, a flood of {args.flood} LISTs, {args.nodes} nodes, {args.flows} flows × "
          f"{args.flow_concurrency}, {args.seconds:g} s phases, {os.cpu_count()} CPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="kapi-bench-", dir=args.dir) as tmp:
        measured = run(args, Path(tmp))
    result = {"config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                         if k not in ("dir", "output")} | {"cpus": os.cpu_count(),
                                                           "python": platform.python_version()},
              **measured}
    result["goals"] = goals(result)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    write_json(args.output, result)
    print()
    print(table(result))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
