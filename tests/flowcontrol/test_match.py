"""FlowSchema matching (kube's rule.go, cases of its match_test.go in spirit) and the concurrency
allocation (kube's conc_alloc.go with conc_alloc_test.go's randomised check) — issue 13."""

from __future__ import annotations

import math
import random

import pytest

from kapi.chain.context import new_request_info
from kapi.chain.flowcontrol.concurrency import (AllocItem, LevelLimits, LevelState, SeatDemand,
                                                 compute_concurrency_allocation, go_round, level_limits, max_seats,
                                                 update_borrowing)
from kapi.chain.flowcontrol.match import compile_flow_schema, request_namespace
from kapi.object.access import UserInfo


def schema(*rules: dict, name: str = "fs", precedence: int = 500, method: str | None = None) -> dict:
    spec: dict = {"priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": precedence,
                  "rules": list(rules)}
    if method:
        spec["distinguisherMethod"] = {"type": method}
    return {"metadata": {"name": name, "uid": "u-" + name}, "spec": spec}


def user(name: str) -> dict:
    return {"kind": "User", "user": {"name": name}}


def group(name: str) -> dict:
    return {"kind": "Group", "group": {"name": name}}


def sa(namespace: str, name: str) -> dict:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": name}}


def resource_rule(verbs=("*",), groups=("*",), resources=("*",), cluster=False, namespaces=("*",)) -> dict:
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources),
            "clusterScope": cluster, "namespaces": list(namespaces)}


def matches(fs: dict, who: UserInfo, method: str, path: str) -> bool:
    m = compile_flow_schema(fs)
    path, _, raw_query = path.partition("?")
    info = new_request_info(method, path, dict(q.split("=") for q in raw_query.split("&")) if raw_query else {})
    return m.matches(who, info, request_namespace(info))


ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
KUBELET = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
SA_DEFAULT = UserInfo("system:serviceaccount:kube-system:default",
                      groups=("system:serviceaccounts", "system:serviceaccounts:kube-system"))


@pytest.mark.parametrize(("subject", "who", "want"), [
    (user("alice"), ALICE, True),
    (user("bob"), ALICE, False),
    (user("*"), ALICE, True),
    (group("devs"), ALICE, True),
    (group("ops"), ALICE, False),
    (group("*"), UserInfo("nobody"), True),
    (group("system:nodes"), KUBELET, True),
    (sa("kube-system", "default"), SA_DEFAULT, True),
    (sa("kube-system", "other"), SA_DEFAULT, False),
    (sa("kube-system", "*"), SA_DEFAULT, True),
    (sa("kube", "*"), SA_DEFAULT, False),  # a namespace prefix is not the namespace
    (sa("kube-system", "*"), UserInfo("kube-system:default"), False),
    (sa("default", "*"), ALICE, False),
    ({"kind": "User"}, ALICE, False),  # no user member: matches nobody, as kube's
    ({"kind": "Robot", "user": {"name": "alice"}}, ALICE, False),
])
def test_subjects(subject: dict, who: UserInfo, want: bool) -> None:
    fs = schema({"subjects": [subject], "resourceRules": [resource_rule(cluster=True)]})
    assert matches(fs, who, "GET", "/api/v1/pods") is want


@pytest.mark.parametrize(("rule", "method", "path", "want"), [
    (resource_rule(), "GET", "/api/v1/namespaces/ns/pods", True),
    (resource_rule(), "GET", "/api/v1/nodes", False),  # cluster-scoped: clusterScope false
    (resource_rule(cluster=True, namespaces=()), "GET", "/api/v1/nodes", True),
    (resource_rule(cluster=True, namespaces=()), "GET", "/api/v1/namespaces/ns/pods", False),
    (resource_rule(verbs=["get"]), "GET", "/api/v1/namespaces/ns/pods/p", True),
    (resource_rule(verbs=["get"]), "GET", "/api/v1/namespaces/ns/pods", False),  # a list
    (resource_rule(verbs=["watch"]), "GET", "/api/v1/namespaces/ns/pods?watch=1", True),
    (resource_rule(verbs=["create"]), "POST", "/api/v1/namespaces/ns/pods", True),
    (resource_rule(groups=["apps"]), "GET", "/apis/apps/v1/namespaces/ns/deployments", True),
    (resource_rule(groups=["apps"]), "GET", "/api/v1/namespaces/ns/pods", False),
    (resource_rule(groups=[""]), "GET", "/api/v1/namespaces/ns/pods", True),
    (resource_rule(resources=["pods"]), "GET", "/api/v1/namespaces/ns/pods/p/status", False),
    (resource_rule(resources=["pods/status"]), "PUT", "/api/v1/namespaces/ns/pods/p/status", True),
    (resource_rule(namespaces=["ns"]), "GET", "/api/v1/namespaces/ns/pods", True),
    (resource_rule(namespaces=["other"]), "GET", "/api/v1/namespaces/ns/pods", False),
    # a namespace's own URL carries the namespace, as kube's RequestInfo does
    (resource_rule(namespaces=["ns"]), "GET", "/api/v1/namespaces/ns", True),
    (resource_rule(cluster=True, namespaces=()), "GET", "/api/v1/namespaces/ns", False),
    (resource_rule(cluster=True, namespaces=()), "GET", "/api/v1/namespaces", True),
    # "*" among other values is a value, not a wildcard (validation forbids the mix; kube's containsString)
    (resource_rule(verbs=["*", "get"]), "GET", "/api/v1/namespaces/ns/pods", False),
    # a resource rule never matches a non-resource request
    (resource_rule(cluster=True), "GET", "/healthz", False),
])
def test_resource_rules(rule: dict, method: str, path: str, want: bool) -> None:
    fs = schema({"subjects": [group("*")], "resourceRules": [rule]})
    assert matches(fs, ALICE, method, path) is want


@pytest.mark.parametrize(("urls", "verbs", "method", "path", "want"), [
    (["/healthz"], ["get"], "GET", "/healthz", True),
    (["/healthz"], ["get"], "GET", "/healthz/etcd", True),  # kube's prefix: "/healthz" + "/"
    (["/healthz"], ["get"], "GET", "/healthzz", False),
    (["/healthz"], ["get"], "POST", "/healthz", False),
    (["/apis/*"], ["*"], "GET", "/apis/apps", True),
    (["/apis/*"], ["*"], "GET", "/apis", False),
    (["*"], ["*"], "GET", "/version", True),
    (["/version"], ["*"], "GET", "/version", True),
    (["/openapi/v2"], ["get"], "GET", "/openapi/v3", False),
])
def test_non_resource_rules(urls: list, verbs: list, method: str, path: str, want: bool) -> None:
    fs = schema({"subjects": [group("*")], "nonResourceRules": [{"verbs": verbs, "nonResourceURLs": urls}]})
    assert matches(fs, ALICE, method, path) is want
    # and a non-resource rule never matches a resource request
    assert not matches(fs, ALICE, method, "/api/v1/namespaces/ns/pods")


def test_any_rule_of_any_subject() -> None:
    fs = schema(
        {"subjects": [user("bob")], "resourceRules": [resource_rule()]},
        {"subjects": [user("carol"), group("devs")], "resourceRules": [
            resource_rule(resources=["secrets"]), resource_rule(resources=["pods"], verbs=["list"])]})
    assert matches(fs, ALICE, "GET", "/api/v1/namespaces/ns/pods")
    assert not matches(fs, ALICE, "GET", "/api/v1/namespaces/ns/pods/p")
    assert not matches(fs, ALICE, "GET", "/api/v1/namespaces/ns/configmaps")
    assert matches(fs, UserInfo("bob"), "GET", "/api/v1/namespaces/ns/configmaps")


def test_compiled_fields_and_distinguisher() -> None:
    m = compile_flow_schema(schema({"subjects": [user("*")]}, name="x", precedence=42, method="ByNamespace"))
    assert (m.name, m.uid, m.matching_precedence, m.priority_level) == ("x", "u-x", 42, "pl")
    assert m.sort_key == (42, "x")
    assert m.distinguisher(ALICE, "ns") == "ns"
    by_user = compile_flow_schema(schema({"subjects": [user("*")]}, method="ByUser"))
    assert by_user.distinguisher(ALICE, "ns") == "alice"
    assert compile_flow_schema(schema({"subjects": [user("*")]})).distinguisher(ALICE, "ns") == ""
    assert compile_flow_schema({"metadata": {"name": "d"}, "spec": {}}).matching_precedence == 1000


# ------------------------------------------------------------------ concurrency (conc_alloc.go)


def test_go_round() -> None:
    assert [go_round(x) for x in (0.5, 1.5, 2.5, -0.5, 24.42, 24.5)] == [1, 2, 3, -1, 24, 25]


def test_allocation_proportional_when_no_bound_matters() -> None:
    allocs, fair = compute_concurrency_allocation(12, [AllocItem(1, 0, 10), AllocItem(2, 0, 10),
                                                       AllocItem(3, 0, 10)])
    assert allocs == pytest.approx([2, 4, 6]) and fair == pytest.approx(2)


def test_allocation_respects_bounds() -> None:
    allocs, fair = compute_concurrency_allocation(10, [AllocItem(1, 0, 10), AllocItem(3, 2, 4)])
    assert allocs == pytest.approx([6, 4]) and fair == pytest.approx(6)
    allocs, _ = compute_concurrency_allocation(10, [AllocItem(5, 5, 20), AllocItem(9, 0, 20)])
    assert allocs == pytest.approx([5, 5])


@pytest.mark.parametrize(("required", "items", "message"), [
    (-1, [], "negative sums"),
    (1, [AllocItem(1, -1, 2)], "negative lower bounds"),
    (1, [AllocItem(1, 2, 3)], "below its lower bound"),
    (1, [AllocItem(2, 2, 1)], "should not be less than the lower bound"),
    (1, [AllocItem(2, 2, 3)], "higher than the required sum"),
    (10, [AllocItem(2, 0, 3)], "lower than the required sum"),
])
def test_allocation_errors(required: int, items: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compute_concurrency_allocation(required, items)


def _partition(rands: random.Random, n: int, x: float) -> list[float]:
    divs = sorted(rands.random() for _ in range(n - 1))
    out, last = [], 0.0
    for div in divs:
        out.append((div - last) * x)
        last = div
    return out + [(1 - last) * x]


def _rel_diff(a: float, b: float) -> float:
    den = max(abs(a), abs(b))
    return 0.0 if den == 0 else abs(a - b) / den


def test_allocation_randomised_as_kube() -> None:
    """kube's TestConcAlloc: random problems; the sum is met and each class is at a bound or fair·target."""
    rands = random.Random(1234567890)
    solved = refused = 0
    for _ in range(3000):
        n = rands.choice([0, 1, 2, 3, 4, 6, 9])
        classes: list[AllocItem] = []
        required = 0
        if n > 0:
            style = rands.randrange(20)
            if style == 0:  # bound from below
                required = rands.randrange(n * 3)
                classes = [AllocItem(x + 2 * rands.random(), x, x + 3 * rands.random())
                           for x in _partition(rands, n, required)]
            elif style == 1:  # bound from above
                required = rands.randrange(n * 3) + 1
                for x in _partition(rands, n, required):
                    lower = x * max(0.0, 1.25 * rands.random() - 1)
                    classes.append(AllocItem(lower + rands.random(), lower, x))
            else:
                for _ in range(n):
                    x = max(0.0, rands.random() * 5 - 1)
                    classes.append(AllocItem(x + 2 * rands.random(), x, x + 3 * rands.random()))
                low = sum(c.lower_bound for c in classes)
                high = sum(c.upper_bound for c in classes)
                required = go_round(low + (high - low) * rands.random())
        while rands.random() < 0.25:
            classes.insert(rands.randrange(len(classes) + 1), AllocItem(0, 0, rands.random() + 0.00001))
        low = sum(c.lower_bound for c in classes)
        high = sum(c.upper_bound for c in classes)
        expect_error = low - required > 1e-10 or required - high > 1e-10
        try:
            allocs, fair = compute_concurrency_allocation(required, classes)
        except ValueError:
            assert expect_error, (required, classes)
            refused += 1
            continue
        assert not expect_error, (required, classes)
        solved += 1
        assert _rel_diff(required, sum(allocs)) <= 1e-10
        for item, got in zip(classes, allocs):
            fair_alloc = fair * max(item.target, 0.001)
            if fair_alloc <= item.lower_bound:
                assert got == item.lower_bound
            elif fair_alloc >= item.upper_bound:
                assert got == item.upper_bound
            else:
                assert _rel_diff(fair_alloc, got) <= 1e-10
    assert solved > 2000 and refused > 0


BOOTSTRAP_LEVELS = [  # name, shares, lendablePercent, handSize (0: Reject) — SEMANTICS §6 at SCL 600
    ("system", 30, 33, 6, 74, 50, 12), ("node-high", 40, 25, 6, 98, 73, 15),
    ("leader-election", 10, 0, 4, 25, 25, 4), ("workload-high", 40, 50, 6, 98, 49, 15),
    ("workload-low", 100, 90, 6, 245, 24, 37), ("global-default", 20, 50, 6, 49, 24, 8),
    ("catch-all", 5, 0, 0, 13, 13, None),
]


@pytest.mark.parametrize(("name", "shares", "lendable", "hand", "nominal", "lower", "seats"), BOOTSTRAP_LEVELS)
def test_bootstrap_limits_at_600(name: str, shares: int, lendable: int, hand: int, nominal: int, lower: int,
                                 seats: int | None) -> None:
    share_sum = sum(level[1] for level in BOOTSTRAP_LEVELS)  # the exempt level's 0 adds nothing
    assert share_sum == 245
    limits = level_limits(600, shares, share_sum, lendable, None)
    assert (limits.nominal, limits.lower, limits.upper) == (nominal, lower, nominal + 600)
    if seats is not None:
        assert max_seats(limits.nominal, hand) == seats
    assert level_limits(600, shares, share_sum, lendable, 50).upper == nominal + go_round(nominal / 2)


def test_max_seats_small_server() -> None:
    assert max_seats(10, 8) == 1  # 10 div 8
    assert max_seats(3, 8) == 1  # never below one
    assert max_seats(1000, 4) == 150  # 15 %


def test_seat_demand_smoothing() -> None:
    d = SeatDemand()
    d.update(10, 2, 14.5, 10)
    assert (d.average, d.stdev, d.high_watermark, d.smoothed) == (10, 2, 15, 12)
    d.update(0, 0, 0, 10)  # demand gone: the smoothed figure decays, it does not drop
    assert d.smoothed == pytest.approx(0.977 * 12)
    d.update(5, float("nan"), 3, 0)  # an empty period changes only the high watermark
    assert d.high_watermark == 3 and d.average == 0


def _level(name: str, nominal: int, lower: int, upper: int, hwm: int, smoothed: float,
           exempt: bool = False) -> LevelState:
    return LevelState(name, exempt, LevelLimits(nominal, lower, upper, nominal - lower), nominal,
                      SeatDemand(high_watermark=hwm, smoothed=smoothed))


def test_borrowing_lends_idle_seats() -> None:
    busy = _level("busy", 50, 25, 100, hwm=100, smoothed=100.0)
    idle = _level("idle", 50, 10, 100, hwm=0, smoothed=0.0)
    out = update_borrowing([busy, idle], 100)
    assert out.current == {"busy": 90, "idle": 10} and not out.backstop
    assert math.isclose(out.fair_frac, 0.9) and busy.target == 100


def test_borrowing_within_bounds_and_exempt_off_the_top() -> None:
    exempt = _level("exempt", 0, 0, 0, hwm=7, smoothed=7, exempt=True)
    a = _level("a", 60, 60, 60, hwm=0, smoothed=0)  # lends nothing, borrows nothing
    b = _level("b", 40, 20, 45, hwm=40, smoothed=80)
    out = update_borrowing([exempt, a, b], 100)
    # 93 left for minimums of 80 (configured) .. 100 (demanded): b gets 20 + 65 % of its 20 more
    assert out.current == {"exempt": 7, "a": 60, "b": 33}
    exempt.demand.high_watermark = 0
    b.limits = LevelLimits(40, 20, 45, 20)
    a.limits = LevelLimits(60, 50, 60, 10)  # a lends 10 it does not use: b borrows up to its upper bound
    assert update_borrowing([exempt, a, b], 100).current == {"exempt": 0, "a": 55, "b": 45}
    # demand everywhere above the nominal limits: each keeps at least its nominal share
    a2 = _level("a", 60, 30, 100, hwm=60, smoothed=90)
    b2 = _level("b", 40, 20, 100, hwm=40, smoothed=90)
    assert update_borrowing([a2, b2], 100).current == {"a": 60, "b": 40}


def test_borrowing_when_exempt_eats_the_server() -> None:
    exempt = _level("exempt", 0, 0, 0, hwm=95, smoothed=95, exempt=True)
    a = _level("a", 60, 30, 100, hwm=60, smoothed=60)
    b = _level("b", 40, 20, 100, hwm=40, smoothed=40)
    assert update_borrowing([exempt, a, b], 100).current == {"exempt": 95, "a": 30, "b": 20}
    exempt.demand.high_watermark = 25  # 75 left for minimums 50..100: shared in proportion
    assert update_borrowing([exempt, a, b], 100).current == {"exempt": 25, "a": 45, "b": 30}
