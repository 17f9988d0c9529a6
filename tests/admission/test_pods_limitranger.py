"""LimitRanger: Container defaults (limits and requests, the kubernetes.io/limit-ranger annotation,
the QoS class computed after them), min/max/maxLimitRequestRatio per Container, per Pod (summed,
init containers at their peak) and per PersistentVolumeClaim, with kube's messages; pod updates
unchecked; a range created after a pod in the namespace is seen once the live lookup expires."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import trio

from kapi.admission.plugins.limitranger import BINARY_SI, DECIMAL_SI, Quantity, canonical, pod_totals
from tests.admission.test_pods_support import message, namespace, pod, start_api

Obj = dict[str, Any]


def limit_range(name: str, *items: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(items)}}


async def test_container_defaults_and_annotation(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "lr")
    lr = limit_range("defaults", {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                                  "defaultRequest": {"cpu": "100m"}})
    assert (await api.create("/api/v1/namespaces/lr/limitranges", lr)).status == 201
    body = pod("p", {"name": "app", "image": "nginx", "resources": {"limits": {"memory": "128Mi"}}},
               initContainers=[{"name": "setup", "image": "busybox"}])
    reply = await api.create("/api/v1/namespaces/lr/pods", body)
    assert reply.status == 201, reply.body
    got = reply.json()
    app = got["spec"]["containers"][0]["resources"]
    # the pod's own memory limit stays (and its request defaults to it); the rest from the range
    assert app == {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}
    assert got["spec"]["initContainers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}
    assert got["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app; "
        "cpu, memory request for init container setup; cpu, memory limit for init container setup")
    assert got["status"]["qosClass"] == "Burstable"


async def test_guaranteed_from_defaults(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "lr")
    lr = limit_range("g", {"type": "Container", "default": {"cpu": "1", "memory": "1Gi"}})
    await api.create("/api/v1/namespaces/lr/limitranges", lr)
    got = (await api.create("/api/v1/namespaces/lr/pods", pod("p"))).json()
    assert got["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"},
                                                         "requests": {"cpu": "1", "memory": "1Gi"}}
    assert got["status"]["qosClass"] == "Guaranteed"


async def test_container_min_max_ratio(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "lr")
    lr = limit_range("bounds", {"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1", "memory": "1Gi"},
                                "default": {"cpu": "200m", "memory": "512Mi"},
                                "maxLimitRequestRatio": {"memory": "2"}})
    assert (await api.create("/api/v1/namespaces/lr/limitranges", lr)).status == 201
    # admission reads LimitRanges from its informer, which may trail the create by a moment (as kube's):
    # pods are created until one gets the range's defaults
    with trio.move_on_after(10):
        for i in itertools.count():
            ok = await api.create("/api/v1/namespaces/lr/pods", pod(f"ok-{i}"))
            assert ok.status == 201, ok.body
            if ok.json()["spec"]["containers"][0].get("resources", {}).get("limits", {}).get("cpu") == "200m":
                break
            await trio.sleep(0.02)
    assert ok.json()["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "200m", "memory": "512Mi"}

    async def refused(name: str, resources: Obj) -> str:
        reply = await api.create("/api/v1/namespaces/lr/pods", pod(name, {"name": "c", "image": "nginx",
                                                                           "resources": resources}))
        assert reply.status == 403, reply.body
        assert reply.json()["reason"] == "Forbidden"
        return message(reply)

    assert await refused("big", {"limits": {"cpu": "2"}}) == (
        'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2')
    assert await refused("small", {"requests": {"cpu": "50m"}, "limits": {"cpu": "500m"}}) == (
        'pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m')
    assert await refused("ratio", {"requests": {"memory": "100Mi"}, "limits": {"memory": "500Mi"}}) == (
        'pods "ratio" is forbidden: memory max limit to request ratio per Container is 2, but provided ratio '
        "is 5.000000")
    assert await refused("both", {"requests": {"cpu": "10m", "memory": "100Mi"},
                                  "limits": {"cpu": "3", "memory": "2Gi"}}) == (
        'pods "both" is forbidden: [minimum cpu usage per Container is 100m, but request is 10m, '
        "maximum cpu usage per Container is 1, but limit is 3, maximum memory usage per Container is 1Gi, but "
        "limit is 2Gi, memory max limit to request ratio per Container is 2, but provided ratio is 20.480000]")


async def test_pod_limits(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "lr")
    lr = limit_range("pod", {"type": "Pod", "max": {"cpu": "1"}, "min": {"memory": "200Mi"}})
    await api.create("/api/v1/namespaces/lr/limitranges", lr)
    ctr = {"image": "nginx", "resources": {"limits": {"cpu": "600m", "memory": "64Mi"}}}
    reply = await api.create("/api/v1/namespaces/lr/pods", pod("p", {"name": "a", **ctr}, {"name": "b", **ctr}))
    assert (reply.status, message(reply)) == (403, 'pods "p" is forbidden: [minimum memory usage per Pod is 200Mi, '
                                                   "but request is 128Mi, maximum cpu usage per Pod is 1, but "
                                                   "limit is 1200m]")
    reply = await api.create("/api/v1/namespaces/lr/pods", pod("q", {"name": "a", "image": "nginx"}))
    assert message(reply) == ('pods "q" is forbidden: [minimum memory usage per Pod is 200Mi.  No request is '
                              "specified, maximum cpu usage per Pod is 1.  No limit is specified]")


def test_pod_totals_with_init_containers_and_sidecars() -> None:
    def ctr(cpu: str, **kw: Any) -> Obj:
        return {"name": cpu, "resources": {"requests": {"cpu": cpu}}, **kw}

    p = {"spec": {"containers": [ctr("100m"), ctr("200m")],
                  "initContainers": [ctr("500m"), ctr("50m", restartPolicy="Always"), ctr("260m")]}}
    # containers 300m + sidecar 50m = 350m; init peaks: 500m, then 260m + 50m: the peak 500m wins
    totals = pod_totals(p, "requests")
    assert {k: v.amount for k, v in totals.items()} == {"cpu": Fraction(1, 2)} and str(totals["cpu"]) == "500m"


def test_quantities_print_canonically() -> None:
    assert canonical(Fraction(3, 2), DECIMAL_SI) == "1500m"
    assert canonical(Fraction(2), DECIMAL_SI) == "2"
    assert canonical(Fraction(15000), DECIMAL_SI) == "15k"
    assert canonical(Fraction(1500), DECIMAL_SI) == "1500"
    assert canonical(Fraction(134217728), BINARY_SI) == "128Mi"
    assert canonical(Fraction(1500), BINARY_SI) == "1500"
    assert canonical(Fraction(1, 2), BINARY_SI) == "500m"
    assert [str(Quantity.of(v)) for v in ("0.5", "1.5Gi", "1e3", "1000", 2, "100Mi", "0")] == [
        "500m", "1536Mi", "1e3", "1k", "2", "100Mi", "0"]


async def test_pvc_min_max(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "lr")
    lr = limit_range("storage", {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}})
    await api.create("/api/v1/namespaces/lr/limitranges", lr)

    def claim(name: str, size: str) -> Obj:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}

    assert (await api.create("/api/v1/namespaces/lr/persistentvolumeclaims", claim("ok", "2Gi"))).status == 201
    reply = await api.create("/api/v1/namespaces/lr/persistentvolumeclaims", claim("big", "10Gi"))
    assert (reply.status, message(reply)) == (403, 'persistentvolumeclaims "big" is forbidden: maximum storage usage '
                                                   "per PersistentVolumeClaim is 5Gi, but request is 10Gi")
    reply = await api.create("/api/v1/namespaces/lr/persistentvolumeclaims", claim("tiny", "100Mi"))
    assert message(reply) == ('persistentvolumeclaims "tiny" is forbidden: minimum storage usage per '
                              "PersistentVolumeClaim is 1Gi, but request is 100Mi")


async def test_pvc_updates_checked_from_the_informer(nursery: trio.Nursery) -> None:
    """With the shared informer, a range created after the namespace's first claim applies at once
    (the informer holds it), and a claim's update is held to it too."""
    api = await start_api(nursery, informers=True)
    await namespace(api, "lr")
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "big"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Gi"}}}}
    assert (await api.create("/api/v1/namespaces/lr/persistentvolumeclaims", claim)).status == 201
    lr = limit_range("storage", {"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}})
    assert (await api.create("/api/v1/namespaces/lr/limitranges", lr)).status == 201
    got = (await api.request("GET", "/api/v1/namespaces/lr/persistentvolumeclaims/big")).json()
    got["metadata"]["labels"] = {"team": "a"}
    for _ in range(200):  # until the informer has the range
        reply = await api.request("PUT", "/api/v1/namespaces/lr/persistentvolumeclaims/big", got)
        if reply.status != 200:
            break
        got = reply.json()
        await trio.sleep(0.01)
    assert (reply.status, message(reply)) == (403, 'persistentvolumeclaims "big" is forbidden: maximum storage usage '
                                                   "per PersistentVolumeClaim is 5Gi, but request is 8Gi")


async def test_pod_update_not_checked(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "lr")
    created = await api.create("/api/v1/namespaces/lr/pods", pod("p"))
    assert created.status == 201
    lr = limit_range("late", {"type": "Container", "min": {"cpu": "1"}})
    await api.create("/api/v1/namespaces/lr/limitranges", lr)
    got = created.json()
    got["metadata"]["labels"] = {"a": "b"}
    assert (await api.request("PUT", "/api/v1/namespaces/lr/pods/p", got)).status == 200
