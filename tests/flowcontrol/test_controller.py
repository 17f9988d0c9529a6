"""APF's configuration controller (issue 13): classification against kube 1.33's bootstrap
configuration, the levels' limits, Dangling FlowSchemas, live reconfiguration with requests queued,
quiescing levels, borrowing of idle seats, and kube's dropped-requests tracker (Retry-After)."""

from __future__ import annotations

import copy
import logging
from functools import partial
from typing import Any, AsyncIterator, Callable

import pytest
import trio

from kapi.apis import BUILTIN
from kapi.apis import flowcontrolbootstrap as boot
from kapi.apis.flowcontrol import FLOW_SCHEMAS, PRIORITY_LEVEL_CONFIGURATIONS
from kapi.chain.context import new_request_info
from kapi.chain.flowcontrol import CONCURRENCY_LIMIT, Rejected, RequestDump, WorkEstimate
from kapi import errors
from kapi.chain.flowcontrol.controller import FIELD_MANAGER, MEMO_LIMIT, Controller, DroppedRequests
from kapi.metrics import Metrics
from kapi.object.access import UserInfo
from kapi.registry.informer import Informers
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]

ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))
ALICE = UserInfo("alice", groups=("system:authenticated",))
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
KUBELET = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
KCM = UserInfo("system:kube-controller-manager", groups=("system:authenticated",))
SCHEDULER = UserInfo("system:kube-scheduler", groups=("system:authenticated",))
KUBE_SYSTEM_SA = UserInfo("system:serviceaccount:kube-system:replicaset-controller",
                          groups=("system:serviceaccounts", "system:serviceaccounts:kube-system",
                                  "system:authenticated"))
APP_SA = UserInfo("system:serviceaccount:shop:web",
                  groups=("system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"))
WORKER = UserInfo("worker", groups=("system:authenticated",))


class Env:
    def __init__(self, registry: Registry, controller: Controller) -> None:
        self.registry = registry
        self.controller = controller

    async def create_pl(self, name: str, spec: Obj) -> Obj:
        obj = {"apiVersion": boot.API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
               "spec": spec}
        return await self.registry.create(PRIORITY_LEVEL_CONFIGURATIONS, "", obj, WriteOptions())

    async def create_fs(self, name: str, level: str, precedence: int, subjects: list[Obj],
                        method: str | None = "ByUser") -> Obj:
        spec: Obj = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence,
                     "rules": [{"subjects": subjects, "resourceRules": [{
                         "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True,
                         "namespaces": ["*"]}]}]}
        if method:
            spec["distinguisherMethod"] = {"type": method}
        obj = {"apiVersion": boot.API_VERSION, "kind": "FlowSchema", "metadata": {"name": name}, "spec": spec}
        return await self.registry.create(FLOW_SCHEMAS, "", obj, WriteOptions())

    async def update_pl(self, name: str, change: Callable[[Obj], None]) -> None:
        def mutate(obj: Obj) -> Obj:
            change(obj["spec"])
            return obj
        await self.registry.guaranteed_update(PRIORITY_LEVEL_CONFIGURATIONS, "", name, mutate, WriteOptions())

    def start(self, who: UserInfo, path: str = "/api/v1/namespaces/ns/pods", method: str = "GET",
              seats: int = 1) -> Any:
        info = new_request_info(method, path, {})
        cls = self.controller.classify(who, info)
        estimate = WorkEstimate(seats)
        return self.controller.start(cls, estimate, RequestDump(cls.flow_schema, cls.distinguisher, 0.0, None,
                                                                estimate, who.name, info.verb, info.path))


async def eventually(check: Callable[[], Any], tries: int = 500) -> Any:
    for _ in range(tries):
        result = check()
        if result:
            return result
        await trio.sleep(0.01)
    raise AssertionError("condition never held")


async def make_env(nursery: trio.Nursery, objects: list[Obj], server_limit: int = 600,
                   status_writer: Callable[[Registry], Any] | None = None) -> Env:
    """``status_writer``: made from the registry, what the controller writes status with (None: the registry)."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    for obj in objects:
        res = FLOW_SCHEMAS if obj["kind"] == "FlowSchema" else PRIORITY_LEVEL_CONFIGURATIONS
        await registry.create(res, "", copy.deepcopy(obj), WriteOptions())
    informers = Informers(registry)
    controller = Controller(informers, registry, server_concurrency_limit=server_limit, metrics=Metrics())
    await nursery.start(informers.run)
    await nursery.start(partial(controller.run, status_writer=status_writer(registry) if status_writer else None))
    return Env(registry, controller)


BOOTSTRAP = boot.priority_level_configurations() + boot.flow_schemas()


@pytest.fixture
async def bootstrapped(nursery: trio.Nursery) -> AsyncIterator[Env]:
    yield await make_env(nursery, BOOTSTRAP)


def classify(env: Env, who: UserInfo, method: str, path: str) -> tuple[str, str, str]:
    cls = env.controller.classify(who, new_request_info(method, path, {}))
    return cls.flow_schema, cls.priority_level, cls.distinguisher


@pytest.mark.parametrize(("who", "method", "path", "want"), [
    (ADMIN, "DELETE", "/api/v1/namespaces/ns/pods/p", ("exempt", "exempt", "")),
    (ANONYMOUS, "GET", "/healthz", ("probes", "exempt", "")),
    (ALICE, "GET", "/livez", ("probes", "exempt", "")),
    (ALICE, "POST", "/livez", ("global-default", "global-default", "alice")),
    (KCM, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm",
     ("system-leader-election", "leader-election", "system:kube-controller-manager")),
    (KUBE_SYSTEM_SA, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
     ("system-leader-election", "leader-election", KUBE_SYSTEM_SA.name)),
    # leader election on ConfigMaps and Endpoints (kube 1.33's workload-leader-election), but the
    # endpoints controllers' own writes (endpoint-controller, before it)
    (KUBE_SYSTEM_SA, "PUT", "/api/v1/namespaces/kube-system/configmaps/lock",
     ("workload-leader-election", "leader-election", KUBE_SYSTEM_SA.name)),
    (KUBE_SYSTEM_SA, "GET", "/api/v1/namespaces/shop/endpoints/web",
     ("workload-leader-election", "leader-election", KUBE_SYSTEM_SA.name)),
    (KCM, "PUT", "/api/v1/namespaces/shop/endpoints/web", ("endpoint-controller", "workload-high", KCM.name)),
    (UserInfo("system:serviceaccount:kube-system:endpoint-controller",
              groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")),
     "POST", "/api/v1/namespaces/shop/endpoints",
     ("endpoint-controller", "workload-high", "system:serviceaccount:kube-system:endpoint-controller")),
    (KUBE_SYSTEM_SA, "DELETE", "/api/v1/namespaces/kube-system/configmaps/lock",
     ("kube-system-service-accounts", "workload-high", "kube-system")),
    (KUBELET, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
     ("system-node-high", "node-high", "system:node:n1")),
    (KUBELET, "PATCH", "/api/v1/nodes/n1/status", ("system-node-high", "node-high", "system:node:n1")),
    (KUBELET, "GET", "/api/v1/namespaces/ns/pods", ("system-nodes", "system", "system:node:n1")),
    # kube-controller-manager and kube-scheduler share precedence 800: the name decides
    (KCM, "GET", "/apis/apps/v1/namespaces/shop/deployments", ("kube-controller-manager", "workload-high", "shop")),
    (KCM, "GET", "/api/v1/nodes", ("kube-controller-manager", "workload-high", "")),
    (SCHEDULER, "POST", "/api/v1/namespaces/shop/pods/p/binding", ("kube-scheduler", "workload-high", "shop")),
    (KUBE_SYSTEM_SA, "GET", "/api/v1/namespaces/shop/pods",
     ("kube-system-service-accounts", "workload-high", "shop")),
    (APP_SA, "GET", "/api/v1/namespaces/shop/pods", ("service-accounts", "workload-low", APP_SA.name)),
    (ALICE, "GET", "/api/v1/namespaces/ns/pods", ("global-default", "global-default", "alice")),
    (ANONYMOUS, "GET", "/api/v1/namespaces/ns/pods", ("global-default", "global-default", "system:anonymous")),
    (UserInfo("nobody"), "GET", "/version", ("catch-all", "catch-all", "nobody")),  # in neither group
])
async def test_classification_against_the_bootstrap_configuration(bootstrapped: Env, who: UserInfo, method: str,
                                                                  path: str, want: tuple[str, str, str]) -> None:
    assert classify(bootstrapped, who, method, path) == want


async def test_classification_headers_carry_the_objects_uids(bootstrapped: Env) -> None:
    fs = await bootstrapped.registry.get(FLOW_SCHEMAS, "", "global-default")
    pl = await bootstrapped.registry.get(PRIORITY_LEVEL_CONFIGURATIONS, "", "global-default")
    cls = bootstrapped.controller.classify(ALICE, new_request_info("GET", "/api/v1/pods", {}))
    assert cls.flow_schema_uid == fs["metadata"]["uid"] != ""
    assert cls.priority_level_uid == pl["metadata"]["uid"] != ""
    assert dict(cls.headers) == {"X-Kubernetes-PF-FlowSchema-UID": fs["metadata"]["uid"],
                                 "X-Kubernetes-PF-PriorityLevel-UID": pl["metadata"]["uid"]}
    assert not cls.exempt
    assert bootstrapped.controller.classify(ADMIN, new_request_info("GET", "/api/v1/pods", {})).exempt


async def test_memoised_candidates_keep_per_request_answers(bootstrapped: Env) -> None:
    """classify() memoises per user which schemas can match, never the answer's request-dependent parts."""
    ctl = bootstrapped.controller
    for ns in ("a", "b", "a"):
        assert classify(bootstrapped, KCM, "GET", f"/api/v1/namespaces/{ns}/pods")[2] == ns
    assert classify(bootstrapped, ALICE, "GET", "/healthz")[0] == "probes"
    assert classify(bootstrapped, ALICE, "POST", "/healthz")[0] == "global-default"
    for i in range(5000):
        ctl.classify(UserInfo(f"user-{i}", groups=("system:authenticated",)), new_request_info("GET", "/api", {}))
    assert len(ctl._memo) <= MEMO_LIMIT
    assert classify(bootstrapped, UserInfo("user-1", groups=("system:masters",)), "GET", "/api")[0] == "exempt"


async def test_flow_schemas_in_matching_order(bootstrapped: Env) -> None:
    names = [fs.name for fs in bootstrapped.controller.flow_schemas]
    assert names == ["exempt", "probes", "system-leader-election", "endpoint-controller", "workload-leader-election",
                     "system-node-high", "system-nodes",
                     "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts",
                     "service-accounts", "global-default", "catch-all"]


# SEMANTICS §6 at a server concurrency limit of 600: name -> (nominal, lower, max seats)
LIMITS_AT_600 = {"system": (74, 50, 12), "node-high": (98, 73, 15), "leader-election": (25, 25, 4),
                 "workload-high": (98, 49, 15), "workload-low": (245, 24, 37), "global-default": (49, 24, 8),
                 "catch-all": (13, 13, 0), "exempt": (0, 0, 0)}


async def test_limits_of_the_bootstrap_levels(bootstrapped: Env) -> None:
    levels = bootstrapped.controller.priority_levels
    assert set(levels) == set(LIMITS_AT_600)
    for name, (nominal, lower, seats) in LIMITS_AT_600.items():
        level = levels[name]
        assert (level.limits.nominal, level.limits.lower, bootstrapped.controller.max_seats(name)) == \
            (nominal, lower, seats), name
        assert level.limits.upper == nominal + 600  # no borrowingLimitPercent: up to the server's limit
        assert lower <= level.current_limit <= level.limits.upper, name
        assert level.queues.concurrency_limit == level.current_limit, name
    assert bootstrapped.controller.max_seats("no-such-level") == 0
    # the current limits share out the nominal sum (rounding aside)
    limited = [lvl for lvl in levels.values() if not lvl.exempt]
    assert abs(sum(lvl.current_limit for lvl in limited) - sum(lvl.limits.nominal for lvl in limited)) <= len(limited)
    m = bootstrapped.controller.metrics.registry
    assert m.get_sample_value("apiserver_flowcontrol_nominal_limit_seats", {"priority_level": "system"}) == 74
    assert m.get_sample_value("apiserver_flowcontrol_lower_limit_seats", {"priority_level": "node-high"}) == 73
    assert m.get_sample_value("apiserver_flowcontrol_current_limit_seats", {"priority_level": "system"}) == \
        levels["system"].current_limit


async def test_mandatory_configuration_before_any_object(nursery: trio.Nursery) -> None:
    env = await make_env(nursery, [])
    assert classify(env, ADMIN, "GET", "/api/v1/pods") == ("exempt", "exempt", "")
    assert classify(env, ALICE, "GET", "/api/v1/pods") == ("catch-all", "catch-all", "alice")
    assert set(env.controller.priority_levels) == {"exempt", "catch-all"}
    cls = env.controller.classify(ALICE, new_request_info("GET", "/api/v1/pods", {}))
    assert (cls.flow_schema_uid, cls.priority_level_uid) == ("", "")  # imagined objects have none
    # catch-all is a Reject level with the whole server (its shares are all there are): 600 seats, then 429
    tickets = [env.start(ALICE) for _ in range(600)]
    assert all(t.dispatched for t in tickets)
    with pytest.raises(Rejected) as refused:
        env.start(ALICE)
    assert refused.value.reason == CONCURRENCY_LIMIT
    for t in tickets:
        t.finish()


def _dangling(obj: Obj) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == "Dangling"), None)


async def test_dangling_appears_and_clears(nursery: trio.Nursery) -> None:
    env = await make_env(nursery, [])
    await env.create_fs("orphan", "later", 50, [{"kind": "User", "user": {"name": "worker"}}])

    async def condition() -> Obj | None:
        return _dangling(await env.registry.get(FLOW_SCHEMAS, "", "orphan"))

    for _ in range(500):
        cond = await condition()
        if cond:
            break
        await trio.sleep(0.01)
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("True", "NotFound")
    assert cond["message"] == ('This FlowSchema references the PriorityLevelConfiguration object named "later" '
                               'but there is no such object')
    assert cond["lastTransitionTime"].endswith("Z")
    assert classify(env, WORKER, "GET", "/api/v1/pods")[0] == "catch-all"  # a dangling schema is not used

    await env.create_pl("later", {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}})
    for _ in range(500):
        cond = await condition()
        if cond and cond["status"] == "False":
            break
        await trio.sleep(0.01)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Found")
    assert cond["message"] == ('This FlowSchema references the PriorityLevelConfiguration object named "later" '
                               'and it exists')
    assert classify(env, WORKER, "GET", "/api/v1/pods") == ("orphan", "later", "worker")
    # once right, the status is not written again: the resourceVersion stays
    rv = (await env.registry.get(FLOW_SCHEMAS, "", "orphan"))["metadata"]["resourceVersion"]
    await env.update_pl("later", lambda spec: spec["limited"].update(nominalConcurrencyShares=6))
    await eventually(lambda: env.controller.priority_levels["later"].spec.shares == 6)
    await trio.sleep(0.1)
    assert (await env.registry.get(FLOW_SCHEMAS, "", "orphan"))["metadata"]["resourceVersion"] == rv


async def test_status_writes_bounded_per_minute(nursery: trio.Nursery, autojump_clock: Any) -> None:
    """kube's shouldDelayUpdate: after 6 writes of one FlowSchema's status within a minute, the next waits."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    controller = Controller(Informers(registry), registry, server_concurrency_limit=10, metrics=Metrics())
    env = Env(registry, controller)  # run() is not started: the writes below are the only ones
    await env.create_fs("orphan", "later", 50, [{"kind": "User", "user": {"name": "worker"}}])
    fs = await registry.get(FLOW_SCHEMAS, "", "orphan")
    later = {"metadata": {"name": "later"}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}
    versions = []
    for i in range(7):  # the level comes and goes: Dangling flips every time
        controller._digest([later] if i % 2 else [], [fs])
        assert controller._pending_status  # the condition differs from what is stored
        delay = await controller._write_status()
        fs = await registry.get(FLOW_SCHEMAS, "", "orphan")
        versions.append(fs["metadata"]["resourceVersion"])
        await trio.sleep(1)
    assert len(set(versions[:6])) == 6 and versions[6] == versions[5]
    assert _dangling(fs)["status"] == "False"  # the sixth write's (i == 5)
    assert delay is not None and 30 <= delay < 75
    await trio.sleep(60)  # a minute later, it is written again
    controller._digest([], [fs])
    assert await controller._write_status() is None
    assert (await registry.get(FLOW_SCHEMAS, "", "orphan"))["metadata"]["resourceVersion"] != versions[-1]


async def test_status_is_a_forced_apply_by_the_config_consumer(nursery: trio.Nursery) -> None:
    """kube's apply(): ApplyStatus of the Dangling condition alone, fieldManager
    api-priority-and-fairness-config-consumer-v1, force: a Dangling condition another manager applied is
    taken over, the other conditions stay theirs."""
    env = await make_env(nursery, [])
    await env.create_fs("orphan", "later", 50, [{"kind": "User", "user": {"name": "worker"}}])
    await eventually(lambda: env.controller.digests > 1)
    mine = {"apiVersion": boot.API_VERSION, "kind": "FlowSchema", "metadata": {"name": "orphan"},
            "status": {"conditions": [{"type": "Dangling", "status": "Unknown", "reason": "Mine", "message": "m"},
                                      {"type": "Other", "status": "True", "reason": "Mine", "message": "m"}]}}
    await env.registry.apply(FLOW_SCHEMAS, "", "orphan", mine, WriteOptions(field_manager="someone"), force=True,
                             subresource="status")

    async def written() -> Obj | None:
        obj = await env.registry.get(FLOW_SCHEMAS, "", "orphan")
        cond = _dangling(obj)
        return obj if cond and cond["reason"] == "NotFound" else None

    obj = None
    for _ in range(500):
        obj = await written()
        if obj:
            break
        await trio.sleep(0.01)
    assert obj is not None
    assert [(c["type"], c["status"]) for c in obj["status"]["conditions"]] == [("Dangling", "True"),
                                                                              ("Other", "True")]
    managers = {(m["manager"], m["operation"], m.get("subresource")): m for m in obj["metadata"]["managedFields"]}
    consumer = managers[(FIELD_MANAGER, "Apply", "status")]
    assert consumer["fieldsV1"] == {"f:status": {"f:conditions": {'k:{"type":"Dangling"}': {
        ".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}}
    assert managers[("someone", "Apply", "status")]["fieldsV1"] == {"f:status": {"f:conditions": {
        'k:{"type":"Dangling"}': {".": {}, "f:type": {}},  # the key both applied stays shared
        'k:{"type":"Other"}': {".": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}}}}


class RefusingWriter:
    """Refuses the first writes as admission would (a policy, a webhook down) or fails unexpectedly,
    then writes through the registry."""

    def __init__(self, registry: Registry, refusals: list[Exception]) -> None:
        self.registry = registry
        self.refusals = refusals
        self.calls: list[tuple[str, str, bool, str]] = []

    async def apply(self, res: Resource, namespace: str, name: str, config: Obj, opts: WriteOptions, *,
                    force: bool, subresource: str = "") -> tuple[Obj, bool]:
        self.calls.append((name, opts.field_manager or "", force, subresource))
        if self.refusals:
            raise self.refusals.pop(0)
        return await self.registry.apply(res, namespace, name, config, opts, force=force, subresource=subresource)


async def test_refused_status_writes_are_logged_and_retried(nursery: trio.Nursery,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """The status writer the controller is given refuses (a policy's 422, a webhook down's 500, a failure that
    is no API error): each is logged and the write tried again; the controller goes on classifying."""
    caplog.set_level(logging.WARNING, "kapi.chain.flowcontrol")
    writers: list[RefusingWriter] = []

    def refusing(registry: Registry) -> RefusingWriter:
        writers.append(RefusingWriter(registry, [
            errors.invalid("FlowSchema", "flowcontrol.apiserver.k8s.io", "orphan", []),
            errors.InternalError('Internal error occurred: failed calling webhook "down.example.com": '
                                 'connection refused'),
            RuntimeError("unexpected")]))
        return writers[-1]

    env = await make_env(nursery, [], status_writer=refusing)
    writer, = writers
    assert env.controller.status_writer is writer
    await env.create_fs("orphan", "later", 50, [{"kind": "User", "user": {"name": "worker"}}])

    async def condition() -> Obj | None:
        return _dangling(await env.registry.get(FLOW_SCHEMAS, "", "orphan"))

    cond = None
    for _ in range(1000):
        cond = await condition()
        if cond:
            break
        await trio.sleep(0.01)
    assert cond is not None and cond["reason"] == "NotFound"
    assert writer.calls == [("orphan", FIELD_MANAGER, True, "status")] * 4
    failures = [r for r in caplog.records if "failed to set a status.condition for FlowSchema orphan" in r.getMessage()]
    assert len(failures) == 3
    assert "failed calling webhook" in failures[1].getMessage()
    assert failures[2].exc_info is not None  # not an API error: its traceback is logged
    assert classify(env, WORKER, "GET", "/api/v1/pods")[0] == "catch-all"


WORK_LEVEL = {"type": "Limited", "limited": {
    "nominalConcurrencyShares": 10, "lendablePercent": 0,
    "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 2, "queueLengthLimit": 50}}}}


async def test_reconfiguration_keeps_queued_requests(nursery: trio.Nursery) -> None:
    # server limit 15, shares work 10 + catch-all 5: work's nominal (and, lending nothing, current) limit is 10
    env = await make_env(nursery, [], server_limit=15)
    await env.create_pl("work", copy.deepcopy(WORK_LEVEL))
    await env.create_fs("work", "work", 100, [{"kind": "User", "user": {"name": "worker"}}])
    await eventually(lambda: classify(env, WORKER, "GET", "/api/v1/pods")[1] == "work")
    level = env.controller.priority_levels["work"]
    assert level.current_limit == 10
    tickets = [env.start(WORKER) for _ in range(12)]
    assert [t.dispatched for t in tickets].count(True) == 10
    queues = level.queues
    assert queues.dump().waiting == 2

    # a change that leaves the limit alone: the same queue set, the two still waiting
    await env.update_pl("work", lambda spec: spec["limited"]["limitResponse"]["queuing"].update(
        queueLengthLimit=20))
    await eventually(lambda: env.controller.priority_levels["work"].spec.queuing.queue_length_limit == 20)
    assert env.controller.priority_levels["work"].queues is queues
    assert queues.dump().waiting == 2 and queues.dump().rejected == 0

    # more shares (20 of 25): nominal 12, and the two queued requests are dispatched, not lost
    await env.update_pl("work", lambda spec: spec["limited"].update(nominalConcurrencyShares=20))
    await eventually(lambda: env.controller.priority_levels["work"].limits.nominal == 12)
    assert env.controller.priority_levels["work"].queues is queues
    assert all(t.dispatched for t in tickets)
    dump = queues.dump()
    assert (dump.waiting, dump.executing, dump.rejected) == (0, 12, 0)
    for t in tickets:
        t.finish()


async def test_only_spec_changes_reload(nursery: trio.Nursery) -> None:
    """As kube's handlers: a level's metadata change does not reload the configuration, its spec does."""
    env = await make_env(nursery, [])
    await env.create_pl("work", copy.deepcopy(WORK_LEVEL))
    await eventually(lambda: "work" in env.controller.priority_levels)
    await trio.sleep(0.1)
    before = env.controller.digests

    def label(obj: Obj) -> Obj:
        obj["metadata"].setdefault("labels", {})["team"] = "a"
        return obj
    await env.registry.guaranteed_update(PRIORITY_LEVEL_CONFIGURATIONS, "", "work", label, WriteOptions())
    await trio.sleep(0.2)
    assert env.controller.digests == before
    await env.update_pl("work", lambda spec: spec["limited"].update(nominalConcurrencyShares=11))
    await eventually(lambda: env.controller.digests > before)
    assert env.controller.priority_levels["work"].spec.shares == 11


async def test_removed_level_quiesces_until_idle(nursery: trio.Nursery) -> None:
    env = await make_env(nursery, [], server_limit=15)
    await env.create_pl("work", copy.deepcopy(WORK_LEVEL))
    await env.create_fs("work", "work", 100, [{"kind": "User", "user": {"name": "worker"}}])
    await eventually(lambda: classify(env, WORKER, "GET", "/api/v1/pods")[1] == "work")
    ticket = env.start(WORKER)
    assert ticket.dispatched
    await env.registry.delete(PRIORITY_LEVEL_CONFIGURATIONS, "", "work", _delete_options())
    await eventually(lambda: env.controller.priority_levels["work"].quiescing)
    assert classify(env, WORKER, "GET", "/api/v1/pods")[1] == "catch-all"  # its schema dangles now
    assert env.controller.dump()["work"].is_quiescing
    ticket.finish()
    await eventually(lambda: "work" not in env.controller.priority_levels)
    assert "work" not in env.controller.dump()


def _delete_options() -> Any:
    from kapi.registry.deletion import DeleteOptions
    return DeleteOptions()


async def test_borrowing_lends_idle_seats(nursery: trio.Nursery, autojump_clock: Any) -> None:
    # server limit 20; busy and idle 10 shares each, lending half; catch-all 5: nominal 8, 8 and 4
    env = await make_env(nursery, [], server_limit=20)
    for name in ("busy", "idle"):
        spec = copy.deepcopy(WORK_LEVEL)
        spec["limited"]["lendablePercent"] = 50
        await env.create_pl(name, spec)
    await env.create_fs("busy", "busy", 100, [{"kind": "User", "user": {"name": "worker"}}])
    await eventually(lambda: classify(env, WORKER, "GET", "/api/v1/pods")[1] == "busy")
    busy = env.controller.priority_levels["busy"]
    idle = env.controller.priority_levels["idle"]
    assert (busy.limits.nominal, busy.limits.lower, idle.limits.nominal, idle.limits.lower) == (8, 4, 8, 4)
    tickets = [env.start(WORKER) for _ in range(30)]
    before = sum(t.dispatched for t in tickets)
    assert before == busy.current_limit <= busy.limits.nominal
    await trio.sleep(10.5)  # one borrowing adjustment, with busy's demand at 30 seats all along
    assert busy.current_limit > busy.limits.nominal  # it borrows what idle lends
    assert idle.current_limit == idle.limits.lower  # idle keeps only what it may not lend
    assert busy.queues.concurrency_limit == busy.current_limit
    assert sum(t.dispatched for t in tickets) == busy.current_limit > before
    m = env.controller.metrics.registry
    assert m.get_sample_value("apiserver_flowcontrol_demand_seats_high_watermark", {"priority_level": "busy"}) == 30
    assert m.get_sample_value("apiserver_flowcontrol_seat_fair_frac") > 0
    # sampled every second: 30 seats wanted of 8 or more available, so every sample is above 1
    assert m.get_sample_value("apiserver_flowcontrol_demand_seats_count", {"priority_level": "busy"}) >= 10
    assert m.get_sample_value("apiserver_flowcontrol_demand_seats_bucket", {"priority_level": "busy",
                                                                            "le": "1.0"}) == 0
    for t in tickets:
        t.finish()


async def test_level_whose_seat_is_lent_serves_a_request_alone(nursery: trio.Nursery, autojump_clock: Any) -> None:
    """Issue 30: at a server limit of 6 (--max-requests-inflight 4 + mutating 2), global-default has one
    nominal seat and lends it all (lower limit 0). While the exempt level's demand takes the nominal sum,
    every adjustment leaves global-default at 0: a user's request still runs when nothing else does."""
    env = await make_env(nursery, BOOTSTRAP, server_limit=6)
    gd = env.controller.priority_levels["global-default"]
    assert (gd.limits.nominal, gd.limits.lower, env.controller.max_seats("global-default")) == (1, 0, 1)
    admin = [env.start(ADMIN) for _ in range(6)]
    assert all(t.dispatched for t in admin)
    await trio.sleep(10.5)  # one borrowing adjustment with the exempt level's high watermark at 6
    assert gd.current_limit == 0
    alice = env.start(ALICE)
    assert alice.dispatched  # wider than the limit of 0, and nothing else executes in the level
    queued = env.start(ALICE)
    assert not queued.dispatched
    alice.finish()
    assert queued.dispatched
    queued.finish()
    for t in admin:
        t.finish()


BROKEN_LEVELS = [  # kube's queueSetCompleterForPL refusals (validation refuses them too; an old store may not)
    ("work", {"type": "Limited"}),
    ("work", {"type": "Limited", "limited": {}, "exempt": {}}),
    ("work", {"type": "Exempt", "exempt": {}}),  # Exempt under another name than "exempt"
    ("exempt", {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
    ("work", {"type": "Limited", "limited": {"limitResponse": {"type": "Reject", "queuing": {"queues": 2}}}}),
    ("work", {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}),
    ("work", {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": 2, "handSize": 3, "queueLengthLimit": 5}}}}),  # hand larger than the deck
]


@pytest.mark.parametrize(("name", "spec"), BROKEN_LEVELS)
async def test_broken_level_is_ignored(nursery: trio.Nursery, name: str, spec: Obj) -> None:
    env = await make_env(nursery, [])
    fs = {"apiVersion": boot.API_VERSION, "kind": "FlowSchema", "metadata": {"name": "work"},
          "spec": {"priorityLevelConfiguration": {"name": name}, "matchingPrecedence": 100, "rules": [{
              "subjects": [{"kind": "User", "user": {"name": "worker"}}],
              "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True}]}]}}
    good = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}
    if name == "exempt":
        good = {"type": "Exempt", "exempt": {}}
    pl = {"metadata": {"name": name, "uid": "pl-uid"}, "spec": good}
    env.controller._digest([pl], [fs])  # what the informers would hand it
    assert classify(env, WORKER, "GET", "/api/v1/pods") == ("work", name, "")
    pl["spec"] = spec
    env.controller._digest([pl], [fs])
    # the schema dangles (kube judges references against the objects digested, not the imagined ones)
    assert classify(env, WORKER, "GET", "/api/v1/pods")[0] == "catch-all"
    if name == "exempt":  # the mandatory level is kept in its place
        assert env.controller.priority_levels["exempt"].exempt
        return
    assert "work" not in env.controller.priority_levels


# ------------------------------------------------------------------ kube's dropped_requests_tracker_test.go


def test_dropped_requests_tracker() -> None:
    now = [1_700_000_000.0]
    tracker = DroppedRequests(lambda: now[0])
    steps = [(0, 5, 1), (1, 11, 2), (2, 1, 2), (3, 11, 4), (4, 1, 4), (7, 1, 8), (11, 1, 8), (15, 1, 7),
             (17, 1, 6), (21, 14, 5), (22, 1, 10)]
    start = now[0]
    for elapsed, dropped, retry_after in steps:
        now[0] = start + elapsed
        for _ in range(dropped):
            tracker.record("pl")
        assert tracker.retry_after("pl") == retry_after, elapsed


def test_dropped_requests_tracker_per_level() -> None:
    now = [1_700_000_000.0]
    tracker = DroppedRequests(lambda: now[0])
    for i in range(10):
        tracker.record(f"pl-{i}")
    now[0] += 1
    for i in range(10):
        tracker.record(f"pl-{i}")
        assert tracker.retry_after(f"pl-{i}") == 1
    for _ in range(5):
        tracker.record("pl-0")
    now[0] += 1
    for i in range(10):
        tracker.record(f"pl-{i}")
        assert tracker.retry_after(f"pl-{i}") == (2 if i == 0 else 1)
    assert tracker.retry_after("other-pl") == 1


def test_retry_after_caps_at_32() -> None:
    now = [1_700_000_000.0]
    tracker = DroppedRequests(lambda: now[0])
    for _ in range(200):
        for _ in range(200):
            tracker.record("pl")
        now[0] += 1
    tracker.record("pl")
    assert tracker.retry_after("pl") == 32
