"""What the request chain's authorization and audit cost: GETs/s and LISTs/s of a non-admin user.

Run ``python bench/bench_auth.py`` from the repository root (``--quick``: a check that it runs).
One run starts three ``kapi serve`` (sqlite, fresh data directories), each holding the same
objects, created through the API as the admin:

- ``always_allow``: ``--authorization-mode AlwaysAllow``;
- ``rbac``: ``--authorization-mode Node,RBAC``;
- ``audit``: ``--authorization-mode AlwaysAllow`` with an audit policy of one rule, ``level:
  Metadata`` for everything (every stage kept), written to ``--audit-log-path`` in its data dir.

The objects: namespace ``bench`` with 100 ConfigMaps (the LIST) and ``bench-get`` (the GET);
``--roles`` Roles and as many RoleBindings (default 1,000 each) spread over ``bench`` and nine
other namespaces, each Role with two rules, each binding to a user, a group and a service account
that are not the measured user; and the measured user's own Role (get/list ConfigMaps) and
RoleBinding in ``bench``. The user, ``bench-user`` in group ``bench-group``, authenticates with a
``--token-auth-file`` token on every server, so only authorization and audit differ. Before
measuring, each server must show it is what it says: the user's LIST holds the 100 ConfigMaps, and
its read of Secrets is 403 under RBAC and 200 under AlwaysAllow.

The servers take turns point by point (``--repeat`` rounds, the order rotating), each point the
same httpx load at ``--concurrency`` keep-alive connections for ``--duration`` seconds: GET of one
ConfigMap, and LIST of the 100. Reported per figure: the rates, **rbac ÷ always_allow** (goal
≥ 0.9) and **audit ÷ always_allow** (goal ≥ 0.8), median of the rounds' ratios with min and max,
and the requests per second of server CPU (from /proc) ÷ AlwaysAllow's, which does not depend on
whether the client or other work on the machine was the limit. A server whose mode does not exist yet fails to start: its ratios are left out and the
reason is given; an audit log left empty means the audit policy was not applied, and is reported
so rather than as a ratio. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, Load, LoadResult, Server, run_load, start_kapi, stop, write_json  # noqa: E402

NAMESPACE = "bench"
NAMESPACES = (NAMESPACE, *(f"rbac-{k}" for k in range(1, 10)))  # where the loaded Roles and bindings go
LIST_SIZE = 100
USER, USER_GROUP, USER_TOKEN = "bench-user", "bench-group", "bench-user-token-0123456789abcdef"
GET_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps/bench-get"
LIST_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps?labelSelector=bench%3Dlist"
SECRETS_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets"
GOALS = {"rbac": 0.9, "audit": 0.8}
AUDIT_POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
SERVERS = ("always_allow", "rbac", "audit")
FIGURES = {"get": ("GET one ConfigMap", GET_PATH), "list": (f"LIST {LIST_SIZE} ConfigMaps", LIST_PATH)}


def server_flags(name: str, root: Path) -> list[str]:
    """The flags of one of the three servers."""
    flags = ["--storage-backend", "sqlite", "--token-auth-file", str(root / "tokens.csv")]
    if name == "rbac":
        return [*flags, "--authorization-mode", "Node,RBAC"]
    flags += ["--authorization-mode", "AlwaysAllow"]
    if name == "audit":
        flags += ["--audit-policy-file", str(root / "audit-policy.yaml"),
                  "--audit-log-path", str(root / name / "audit.log")]
    return flags


def objects(roles: int) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """(namespaces, everything else) to create: path and body of each."""
    namespaces = [("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                  for ns in NAMESPACES]
    cms = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    rest: list[tuple[str, dict[str, Any]]] = [
        (cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-get"}, "data": {"key": "value"}})]
    rest += [(cms, {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"item-{i}", "labels": {"bench": "list"}},
                    "data": {"key": f"value-{i}"}}) for i in range(LIST_SIZE)]
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{kind}"
    for i in range(roles):
        ns = NAMESPACES[i % len(NAMESPACES)]
        rest.append((rbac.format(ns=ns, kind="roles"), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": f"role-{i}"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps", "pods"], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "update"],
                       "resourceNames": [f"deploy-{i}"]}]}))
        rest.append((rbac.format(ns=ns, kind="rolebindings"), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": f"binding-{i}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"role-{i}"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"user-{i}"},
                         {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"group-{i % 50}"},
                         {"kind": "ServiceAccount", "name": f"sa-{i}", "namespace": ns}]}))
    return namespaces, rest


def user_binding() -> list[tuple[str, dict[str, Any]]]:
    """The measured user's Role and RoleBinding: get and list ConfigMaps in ``bench``."""
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}"
    return [
        (f"{rbac}/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                           "metadata": {"name": "bench-reader"},
                           "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
        (f"{rbac}/rolebindings", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                  "metadata": {"name": "bench-reader"},
                                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                              "name": "bench-reader"},
                                  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                                "name": USER}]}),
    ]


def create_all(server: Server, items: list[tuple[str, dict[str, Any]]], threads: int = 8) -> None:
    """POST every item as the admin from ``threads`` keep-alive connections; raise on anything but 201."""
    import httpx

    ctx = server.ssl_context()

    def work(chunk: list[tuple[str, dict[str, Any]]]) -> None:
        with httpx.Client(base_url=server.url, verify=ctx, timeout=60,
                          headers={"Authorization": f"Bearer {server.token}"}) as client:
            for path, body in chunk:
                resp = client.post(path, json=body)
                if resp.status_code != 201:
                    raise RuntimeError(f"POST {path}: {resp.status_code} {resp.text[:300]}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, [items[k::threads] for k in range(threads)]))


def as_user(server: Server, path: str) -> tuple[int, bytes]:
    """One GET as the measured user."""
    return Server(server.proc, server.url, server.ca_file, USER_TOKEN, server.log, 0.0).request("GET", path)


def check(name: str, server: Server, timeout_s: float = 30.0) -> None:
    """The server is what it says: the user's LIST holds every item; Secrets 403 under RBAC, 200 otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:  # the binding reaches the authorizer through its informer: wait for it
        status, body = as_user(server, LIST_PATH)
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if status != 200:
        raise RuntimeError(f"{name}: the user's LIST answered {status}: {body[:300]!r}")
    items = len(json.loads(body)["items"])
    if items != LIST_SIZE:
        raise RuntimeError(f"{name}: the user's LIST holds {items} items, not {LIST_SIZE}")
    status, body = as_user(server, SECRETS_PATH)
    want = 403 if name == "rbac" else 200
    if status != want:
        raise RuntimeError(f"{name}: the user's read of Secrets answered {status}, not {want}: {body[:200]!r}")


def measure(server: Server, path: str, args: argparse.Namespace) -> LoadResult:
    """One point: GETs of ``path`` as the user at ``--concurrency`` for ``--duration`` seconds."""
    load = Load(url=server.url, path=path, ca_file=str(server.ca_file), token=USER_TOKEN,
                concurrency=args.concurrency, duration_s=args.duration)
    result = run_load(load, server.proc.pid)
    if result.errors or not result.requests:
        raise RuntimeError(f"GET {path}: {result.errors} errors; first: {result.first_error}")
    return result


def cpu_us_per_request(result: LoadResult) -> float:
    """The server's CPU time per answered request, in µs."""
    return result.server_cpu_pct / 100 * result.seconds / result.requests * 1e6


def audit_log(path: Path) -> dict[str, Any]:
    """Lines and bytes of the audit log (and its rotated files); the levels and stages of its events."""
    files = sorted(path.parent.glob(path.stem + "*" + path.suffix)) if path.parent.exists() else []
    lines, size, levels, stages, bodies = 0, 0, set(), set(), 0
    for f in files:
        data = f.read_bytes()
        size += len(data)
        for line in data.splitlines():
            if not line.strip():
                continue
            lines += 1
            event = json.loads(line)
            levels.add(event.get("level"))
            stages.add(event.get("stage"))
            bodies += "requestObject" in event or "responseObject" in event
    return {"files": len(files), "lines": lines, "bytes": size, "levels": sorted(map(str, levels)),
            "stages": sorted(map(str, stages)), "events_with_bodies": bodies}


def spread(values: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "values": [round(v, 3) for v in values]}


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Start, load and check the servers, then measure them in turns."""
    (root / "tokens.csv").write_text(f'{USER_TOKEN},{USER},uid-{USER},"{USER_GROUP}"\n')
    (root / "audit-policy.yaml").write_text(AUDIT_POLICY)
    namespaces, rest = objects(args.roles)
    servers: dict[str, Server] = {}
    skipped: dict[str, str] = {}
    loading: dict[str, Any] = {}
    points: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for name in SERVERS:
            try:
                server = start_kapi(root / name, *server_flags(name, root), timeout_s=120)
            except RuntimeError as err:
                # A mode or flag that does not exist yet: the others are still measured.
                last = str(err).strip().splitlines()[-1]
                skipped[name] = last.partition("kapi cannot serve: ")[2][:300] or last[:300]
                print(f"  {name}: not started: {skipped[name]}", flush=True)
                continue
            servers[name] = server
            t0 = time.perf_counter()
            create_all(server, namespaces, threads=1)
            create_all(server, rest)
            create_all(server, user_binding(), threads=1)
            loading[name] = {"objects": len(namespaces) + len(rest) + 2,
                             "seconds": round(time.perf_counter() - t0, 2)}
            check(name, server)
            print(f"  {name}: {loading[name]['objects']} objects in {loading[name]['seconds']} s", flush=True)
        if "always_allow" not in servers:
            raise RuntimeError(f"the AlwaysAllow server, the baseline, did not start: {skipped.get('always_allow')}")
        order = list(servers)
        for r in range(args.repeat):
            turn = order[r % len(order):] + order[:r % len(order)]  # rotate who goes first
            for fig, (label, path) in FIGURES.items():
                for name in turn:
                    result = measure(servers[name], path, args)
                    points.setdefault(fig, {}).setdefault(name, []).append(
                        {**result.to_json(), "cpu_us_per_request": round(cpu_us_per_request(result), 1)})
                    print(f"  round {r + 1} {label:<22} {name:<13} {result.rate:8.0f}/s  "
                          f"server cpu {result.server_cpu_pct:4.0f}% ({cpu_us_per_request(result):6.0f} µs/req)  "
                          f"client cpu {result.client_cpu_pct:4.0f}%  other {result.other_cpu_pct:3.0f}%",
                          flush=True)
    finally:
        for server in servers.values():
            stop(server)
    audit = audit_log(root / "audit" / "audit.log") if "audit" in servers else None
    if audit is not None and audit["lines"] == 0:
        skipped["audit"] = "the audit log stayed empty: --audit-policy-file/--audit-log-path had no effect"
    return {"points": points, "skipped": skipped, "loading": loading, "audit_log": audit}


def ratios(points: dict[str, dict[str, list[dict[str, Any]]]], skipped: dict[str, str]) -> dict[str, Any]:
    """Per figure and measured server: its rate ÷ AlwaysAllow's, and its requests per CPU-second ÷
    AlwaysAllow's, round by round."""
    out: dict[str, Any] = {}
    for fig, by_server in points.items():
        base = by_server["always_allow"]
        for name in ("rbac", "audit"):
            if name in skipped or name not in by_server:
                continue
            mine = by_server[name]
            out[f"{fig}_{name}_over_always_allow"] = spread([m["rate"] / b["rate"] for m, b in zip(mine, base)])
            # Requests per second of server CPU, ÷ AlwaysAllow's: the rate ratio of a server that has
            # the machine to itself, which the rates measured on a busy machine only approach.
            out[f"{fig}_{name}_per_cpu_over_always_allow"] = spread(
                [b["cpu_us_per_request"] / m["cpu_us_per_request"] for m, b in zip(mine, base)])
    return out


def table(result: dict[str, Any]) -> str:
    """The results as Markdown."""
    pts, rat = result["points"], result["ratios"]
    lines = ["| figure | AlwaysAllow | Node,RBAC | audit Metadata | RBAC ÷ AlwaysAllow (goal ≥ 0.9): rate; "
             "per CPU-s | audit ÷ AlwaysAllow (goal ≥ 0.8): rate; per CPU-s |", "|---|---:|---:|---:|---:|---:|"]
    for fig, (label, _) in FIGURES.items():
        cells = []
        for name in SERVERS:
            got = pts.get(fig, {}).get(name)
            cells.append(f"{statistics.median(p['rate'] for p in got):,.0f}/s "
                         f"({statistics.median(p['cpu_us_per_request'] for p in got):,.0f} µs CPU/req)"
                         if got and name not in result["skipped"] else "—")
        for name in ("rbac", "audit"):
            r = rat.get(f"{fig}_{name}_over_always_allow")
            c = rat.get(f"{fig}_{name}_per_cpu_over_always_allow")
            cells.append(f"{r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f}); {c['median']:.2f} "
                         f"({c['min']:.2f}–{c['max']:.2f})" if r and c else "not measured")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for name, why in result["skipped"].items():
        lines.append(f"\n{name}: not measured: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roles", type=int, default=None, help="Roles and RoleBindings loaded (default 1000, "
                                                                "100 with --quick)")
    parser.add_argument("--duration", type=float, default=None, help="seconds per point (default 1.5, 0.5 quick)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds (default 10, 1 with --quick)")
    parser.add_argument("--concurrency", type=int, default=16, help="keep-alive connections per point")
    parser.add_argument("--quick", action="store_true", help="small and short: a check that everything runs")
    parser.add_argument("--dir", default=None, help="where the temporary data directories go")
    parser.add_argument("--output", type=Path, default=RESULTS / "auth.json", help="JSON results file")
    args = parser.parse_args(argv)
    args.roles = args.roles if args.roles is not None else (100 if args.quick else 1000)
    # Short points and many rounds: the servers are measured close together in time, so that other
    # work on the machine, which comes and goes, touches them alike.
    args.duration = args.duration if args.duration is not None else (0.5 if args.quick else 1.5)
    args.repeat = args.repeat if args.repeat is not None else (1 if args.quick else 10)
    if args.repeat < 1 or args.roles < 0 or args.concurrency < 1:
        parser.error("--repeat and --concurrency must be at least 1, --roles at least 0")

    started = time.monotonic()
    print(f"authorization and audit cost: {args.roles} Roles and RoleBindings, {args.concurrency} connections, "
          f"{args.duration:g} s per point, {args.repeat} round(s), {os.cpu_count()} CPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="kapi-bench-", dir=args.dir) as tmp:
        measured = run(args, Path(tmp))
    measured["ratios"] = ratios(measured["points"], measured["skipped"])
    goals = {}
    for name, goal in GOALS.items():
        for fig in FIGURES:
            r = measured["ratios"].get(f"{fig}_{name}_over_always_allow")
            c = measured["ratios"].get(f"{fig}_{name}_per_cpu_over_always_allow")
            goals[f"{fig}_{name}"] = {"goal": goal, "median": r["median"] if r else None,
                                      "met": (r["median"] >= goal) if r else None,
                                      "per_cpu_median": c["median"] if c else None,
                                      "per_cpu_met": (c["median"] >= goal) if c else None}
    result = {"config": {"roles": args.roles, "list_size": LIST_SIZE, "concurrency": args.concurrency,
                         "duration_s": args.duration, "repeat": args.repeat, "quick": args.quick,
                         "cpus": os.cpu_count(), "python": platform.python_version(),
                         "audit_policy": AUDIT_POLICY, "client": "httpx, HTTP/1.1, one process"},
              **measured, "goals": goals, "elapsed_s": round(time.monotonic() - started, 1)}
    write_json(args.output, result)
    print()
    print(table(result))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
