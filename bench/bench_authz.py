"""The cost of one RBAC authorization decision, in µs, with many Roles and RoleBindings loaded.

Run ``python bench/bench_authz.py`` from the repository root (1,000 Roles and 1,000
RoleBindings over 50 namespaces, plus a few ClusterRoles bound to groups as a bootstrap
policy binds them; ``--quick`` for 100 of each). Pure Python: RBAC has no compiled twin.
The index is fed as the informers feed it (``RBACIndex.put_*``), then decisions are timed:

- **allowed, warm**: a user bound in its namespace reads a pod (the resolved grants of
  the user are memoised, as they are between two RBAC changes);
- **allowed, cold**: the same with the memo emptied before each decision (index lookup
  of the user's and groups' bindings, their roles, the rules);
- **denied, warm / cold**: the same user asks for secrets it holds no rule for (every
  rule it has is tried, then NoOpinion);
- **anonymous path**: ``GET /healthz`` by a user bound to nothing but the groups' roles;
- **through the union**: the allowed-warm decision through ``Authorizer.authorize``
  (the async union of modes) under trio;
- **full scan**: the allowed decision as an unindexed resolver makes it (visit every
  ClusterRoleBinding and every RoleBinding of the namespace, match the subjects), for
  comparison: **index ÷ scan** is how many times faster the index is.

Prints a Markdown table and writes JSON (``bench/results/authz.json``).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write_json  # noqa: E402

from kapi.chain.authz import Authorizer  # noqa: E402
from kapi.chain.authz.rbac import RBAC, Binding, RBACIndex  # noqa: E402
from kapi.object.access import Attributes, UserInfo  # noqa: E402
from kapi.object.rbac import applies_to, rule_allows  # noqa: E402

GROUP = "rbac.authorization.k8s.io"
NAMESPACES = 50


def role_rules(i: int) -> list[dict[str, Any]]:
    """A namespace Role as an application team's: a few rules over workloads, config and pods."""
    return [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log", "services"]},
        {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"], "apiGroups": ["apps"],
         "resources": ["deployments", "replicasets", "statefulsets"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": [f"cm-{i}"]},
        {"verbs": ["get", "list"], "apiGroups": ["batch"], "resources": ["jobs", "cronjobs"]},
    ]


def load(index: RBACIndex, roles: int) -> None:
    """``roles`` Roles and as many RoleBindings (one user each, some with a group and a service
    account too), and cluster roles bound to groups as kube's bootstrap policy binds them."""
    index.put_cluster_role("system:discovery", {"rules": [{"verbs": ["get"], "nonResourceURLs": [
        "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
        "/version", "/version/"]}]})
    index.put_cluster_role("system:public-info-viewer", {"rules": [{"verbs": ["get"], "nonResourceURLs": [
        "/healthz", "/livez", "/readyz", "/version", "/version/"]}]})
    index.put_cluster_role("system:basic-user", {"rules": [{"verbs": ["create"], "apiGroups": [
        "authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}]})
    for name, role, group in (("system:discovery", "system:discovery", "system:authenticated"),
                              ("system:basic-user", "system:basic-user", "system:authenticated"),
                              ("system:public-info-viewer", "system:public-info-viewer", "system:authenticated"),
                              ("system:public-info-viewer-anon", "system:public-info-viewer",
                               "system:unauthenticated")):
        index.put_binding(Binding("", name, "ClusterRole", role, ({"kind": "Group", "name": group},)))
    for i in range(roles):
        ns = f"ns-{i % NAMESPACES}"
        index.put_role(ns, f"role-{i}", {"rules": role_rules(i)})
        subjects: list[dict[str, Any]] = [{"kind": "User", "name": f"user-{i}"}]
        if i % 3 == 0:
            subjects.append({"kind": "Group", "name": f"team-{i % 40}"})
        if i % 5 == 0:
            subjects.append({"kind": "ServiceAccount", "name": f"sa-{i}", "namespace": ns})
        index.put_binding(Binding(ns, f"binding-{i}", "Role", f"role-{i}", tuple(subjects)))


def scan_decide(index: RBACIndex, attrs: Attributes) -> bool:
    """The decision without the index: kube's VisitRulesFor over every binding in scope."""
    scopes = ("", attrs.namespace) if attrs.namespace else ("",)
    for scope in scopes:
        for (ns, _), binding in index.bindings.items():
            if ns != scope or not any(applies_to(s, attrs.user, scope) for s in binding.subjects):
                continue
            rules, _err = index.role_rules(binding)
            if rules and any(rule_allows(r, attrs) for r in rules):
                return True
    return False


def per_call_us(fn: Callable[[], object], seconds: float, repeat: int) -> float:
    """µs per call of ``fn``: the median of ``repeat`` rounds of about ``seconds``."""
    n = 1
    while True:  # size a round
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed > seconds / 10 or n > 10_000_000:
            break
        n *= 2
    n = max(1, int(n * seconds / max(elapsed, 1e-9)))  # calls in a round of about ``seconds``
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(rounds)


def async_per_call_us(authorizer: Authorizer, attrs: Attributes, seconds: float, repeat: int) -> float:
    async def main() -> float:
        n, rounds = 2000, []
        for _ in range(repeat):
            t0 = time.perf_counter()
            deadline = t0 + seconds
            done = 0
            while time.perf_counter() < deadline:
                for _ in range(n):
                    await authorizer.authorize(attrs)
                done += n
            rounds.append((time.perf_counter() - t0) / done * 1e6)
        return statistics.median(rounds)

    return trio.run(main)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roles", type=int, default=None, help="Roles and RoleBindings (default 1000, quick 100)")
    parser.add_argument("--seconds", type=float, default=None, help="per round (default 0.5, quick 0.05)")
    parser.add_argument("--repeat", type=int, default=None, help="rounds per figure (default 5, quick 2)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS / "authz.json")
    args = parser.parse_args(argv)
    roles = args.roles if args.roles is not None else (100 if args.quick else 1000)
    seconds = args.seconds if args.seconds is not None else (0.05 if args.quick else 0.5)
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)

    index = RBACIndex()
    t0 = time.perf_counter()
    load(index, roles)
    load_s = time.perf_counter() - t0
    rbac = RBAC(index=index)
    i = roles // 2 + 1  # a user in the middle of the policy
    ns = f"ns-{i % NAMESPACES}"
    user = UserInfo(f"user-{i}", "", (f"team-{i % 40}", "system:authenticated"))
    allowed = Attributes(user, "get", True, "", "v1", "pods", "", ns, "web-1")
    denied = Attributes(user, "get", True, "", "v1", "secrets", "", ns, "db-password")
    anonymous = Attributes(UserInfo("system:anonymous", "", ("system:unauthenticated",)), "get", False,
                           path="/healthz")
    assert rbac.decide(allowed).allowed and not rbac.decide(denied).allowed and rbac.decide(anonymous).allowed
    assert scan_decide(index, allowed) and not scan_decide(index, denied)

    def cold(attrs: Attributes) -> Callable[[], object]:
        def run() -> object:
            index._memo.clear()
            return rbac.decide(attrs)
        return run

    figures = {
        "allowed_warm_us": per_call_us(lambda: rbac.decide(allowed), seconds, repeat),
        "allowed_cold_us": per_call_us(cold(allowed), seconds, repeat),
        "denied_warm_us": per_call_us(lambda: rbac.decide(denied), seconds, repeat),
        "denied_cold_us": per_call_us(cold(denied), seconds, repeat),
        "anonymous_path_us": per_call_us(lambda: rbac.decide(anonymous), seconds, repeat),
        "union_allowed_warm_us": async_per_call_us(Authorizer([rbac]), allowed, seconds, repeat),
        "scan_allowed_us": per_call_us(lambda: scan_decide(index, allowed), seconds, repeat),
        "scan_denied_us": per_call_us(lambda: scan_decide(index, denied), seconds, repeat),
    }
    ratios = {
        "scan_over_index_allowed_cold": figures["scan_allowed_us"] / figures["allowed_cold_us"],
        "scan_over_index_denied_cold": figures["scan_denied_us"] / figures["denied_cold_us"],
    }
    result = {
        "config": {"roles": roles, "role_bindings": roles, "namespaces": NAMESPACES, "seconds": seconds,
                   "repeat": repeat, "python": platform.python_version(), "machine": platform.machine()},
        "load_seconds": load_s,
        "figures": figures,
        "ratios": ratios,
    }
    print(f"RBAC decision cost, {roles} Roles + {roles} RoleBindings over {NAMESPACES} namespaces "
          f"(loaded in {load_s * 1000:.0f} ms)\n")
    print("| decision | µs |")
    print("|---|---|")
    for name, value in figures.items():
        print(f"| {name.removesuffix('_us').replace('_', ' ')} | {value:.2f} |")
    for name, value in ratios.items():
        print(f"| {name.replace('_', ' ')} | {value:.1f}× |")
    write_json(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
