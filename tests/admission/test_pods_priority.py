"""Priority and DefaultTolerationSeconds: priorityClassName resolved to priority and preemptionPolicy,
the global default class, the system classes, kube's refusals; the not-ready/unreachable
tolerations with the flags' seconds, not added when covered."""

from __future__ import annotations

from typing import Any

import trio

from tests.admission.test_pods_support import message, namespace, pod, start_api

Obj = dict[str, Any]


def priority_class(name: str, value: int, **kw: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **kw}


PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


async def test_priority_from_class_and_defaults(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "p")
    spec = (await api.create("/api/v1/namespaces/p/pods", pod("none"))).json()["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in spec
    assert (await api.create(PCS, priority_class("high", 1000, preemptionPolicy="Never"))).status == 201
    spec = (await api.create("/api/v1/namespaces/p/pods", pod("hi", priorityClassName="high"))).json()["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    spec = (await api.create("/api/v1/namespaces/p/pods",
                             pod("crit", priorityClassName="system-node-critical"))).json()["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (2000001000, "PreemptLowerPriority")
    # a global default class is given to pods naming none
    assert (await api.create(PCS, priority_class("normal", 10, globalDefault=True))).status == 201
    spec = (await api.create("/api/v1/namespaces/p/pods", pod("dflt"))).json()["spec"]
    assert (spec["priorityClassName"], spec["priority"]) == ("normal", 10)
    # the priority is kept on update
    got = (await api.request("GET", "/api/v1/namespaces/p/pods/hi")).json()
    del got["spec"]["priority"]
    updated = await api.request("PUT", "/api/v1/namespaces/p/pods/hi", got)
    assert updated.status == 200, updated.body
    assert updated.json()["spec"]["priority"] == 1000


async def test_priority_refusals(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "p")
    reply = await api.create("/api/v1/namespaces/p/pods", pod("x", priorityClassName="nope"))
    assert (reply.status, message(reply)) == (403, 'pods "x" is forbidden: no PriorityClass with name nope was found')
    await api.create(PCS, priority_class("high", 1000))
    reply = await api.create("/api/v1/namespaces/p/pods", pod("y", priorityClassName="high", priority=5))
    assert (reply.status, message(reply)) == (
        403, 'pods "y" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority '
             "admission controller computed 1000 from the given PriorityClass name")
    reply = await api.create("/api/v1/namespaces/p/pods", pod("z", priorityClassName="high", preemptionPolicy="Never"))
    assert message(reply) == ('pods "z" is forbidden: the string value of PreemptionPolicy (Never) must not be '
                              "provided in pod spec; priority admission controller computed PreemptLowerPriority "
                              "from the given PriorityClass name")
    assert (await api.create(PCS, priority_class("first", 1, globalDefault=True))).status == 201
    reply = await api.create(PCS, priority_class("second", 2, globalDefault=True))
    assert (reply.status, message(reply)) == (403, 'priorityclasses.scheduling.k8s.io "second" is forbidden: '
                                                   "PriorityClass first is already marked as default. Only one "
                                                   "default can exist")
    # the default itself may be updated
    first = (await api.request("GET", f"{PCS}/first")).json()
    first["description"] = "still the default"
    assert (await api.request("PUT", f"{PCS}/first", first)).status == 200
    high = (await api.request("GET", f"{PCS}/high")).json()
    high["globalDefault"] = True
    assert (await api.request("PUT", f"{PCS}/high", high)).status == 403


async def test_default_tolerations(nursery: trio.Nursery) -> None:
    api = await start_api(nursery, default_not_ready_toleration_seconds=120)
    await namespace(api, "t")
    spec = (await api.create("/api/v1/namespaces/t/pods", pod("p"))).json()["spec"]
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 120},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ]
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    spec = (await api.create("/api/v1/namespaces/t/pods", pod("q", tolerations=[own]))).json()["spec"]
    assert spec["tolerations"] == [own, {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                         "effect": "NoExecute", "tolerationSeconds": 120}]
    spec = (await api.create("/api/v1/namespaces/t/pods", pod("r", tolerations=[{"operator": "Exists"}]))).json()["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]


async def test_disabled_priority_and_tolerations(nursery: trio.Nursery) -> None:
    api = await start_api(nursery, disable=("Priority", "DefaultTolerationSeconds"))
    await namespace(api, "t")
    spec = (await api.create("/api/v1/namespaces/t/pods", pod("p"))).json()["spec"]
    assert not {"priority", "preemptionPolicy", "tolerations"} & set(spec)


async def test_global_default_from_the_informer(nursery: trio.Nursery) -> None:
    """With the shared informer (as ``kapi serve`` runs), the global default class is read from it:
    pods get it once the informer holds it, and a second default is refused."""
    api = await start_api(nursery, informers=True)
    await namespace(api, "p")
    assert (await api.create(PCS, priority_class("normal", 10, globalDefault=True, description="d"))).status == 201
    for i in range(200):
        spec = (await api.create("/api/v1/namespaces/p/pods", pod(f"p{i}"))).json()["spec"]
        if spec.get("priorityClassName") == "normal":
            break
        await trio.sleep(0.01)
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "normal", 10, "PreemptLowerPriority")
    reply = await api.create(PCS, priority_class("other", 20, globalDefault=True))
    assert reply.status == 403
