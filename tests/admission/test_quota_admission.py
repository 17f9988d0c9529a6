"""ResourceQuota admission and the ResourceQuota controller through the API: the controller fills a
new quota's status; creates past ``hard`` are refused with kube's 403 "exceeded quota" message and
pods lacking what a quota limits with "failed quota: ... must specify"; each admitted create is
charged to ``status.used`` at once, dry runs are not; deleting objects gives usage back; scoped
quotas count only their pods; services' node ports and load balancers, claims per storage class,
``count/<resource>.<group>`` and the legacy names are counted; concurrent creates never exceed a quota."""

from __future__ import annotations

import re
from typing import Any, AsyncIterator

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.resourcequota import ResourceQuotaController
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]
NS = "default"


async def serve_quota_api(nursery: trio.Nursery, **config: Any) -> Api:
    """The app with its informers, admission (the default plugins) and the quota controller running."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",), **config), registry,
                    TOKEN, Health(ready=True), informers)
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    controller = ResourceQuotaController(registry, informers, resync_s=3600)
    await nursery.start(informers.run)
    assert app.handlers.admission is not None
    await nursery.start(app.handlers.admission.run)
    await nursery.start(controller.run)
    return Api(app, registry)


@pytest.fixture
async def api(nursery: trio.Nursery) -> AsyncIterator[Api]:
    yield await serve_quota_api(nursery)


async def make_quota(api: Api, name: str, hard: dict[str, str], ns: str = NS, **spec: Any) -> Obj:
    """Create a quota and wait for the controller's first status (what admission needs to enforce it)."""
    r = await api.create(f"/api/v1/namespaces/{ns}/resourcequotas",
                         {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
                          "spec": {"hard": hard, **spec}})
    assert r.status == 201, r.body
    return await wait_status(api, name, lambda st: set((st.get("used") or {})) == set(hard), ns)


async def wait_status(api: Api, name: str, cond: Any, ns: str = NS) -> Obj:
    with trio.fail_after(10):
        while True:
            r = await api.request("GET", f"/api/v1/namespaces/{ns}/resourcequotas/{name}")
            st = r.json().get("status") or {}
            if st.get("hard") is not None and cond(st):
                return r.json()
            await trio.sleep(0.01)


async def used(api: Api, name: str, ns: str = NS) -> dict[str, str]:
    r = await api.request("GET", f"/api/v1/namespaces/{ns}/resourcequotas/{name}")
    return dict(r.json()["status"]["used"])


def pod(name: str, *, cpu: str | None = None, memory: str | None = None, lim_cpu: str | None = None,
        lim_memory: str | None = None, **spec: Any) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    limits = {k: v for k, v in (("cpu", lim_cpu), ("memory", lim_memory)) if v}
    res = {**({"requests": requests} if requests else {}), **({"limits": limits} if limits else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": res}], **spec}}


async def create_pod(api: Api, body: Obj, ns: str = NS, query: str = "") -> Any:
    return await api.create(f"/api/v1/namespaces/{ns}/pods{query}", body)


async def test_controller_fills_status_of_a_new_quota(api: Api) -> None:
    for i in range(2):
        r = await api.create(f"/api/v1/namespaces/{NS}/configmaps",
                             {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}"}})
        assert r.status == 201
    q = await make_quota(api, "q", {"configmaps": "10", "count/configmaps": "10", "pods": "1000m", "cpu": "2"})
    assert q["status"]["hard"] == {"configmaps": "10", "count/configmaps": "10", "cpu": "2", "pods": "1"}
    # kube-root-ca.crt is a ConfigMap of the namespace too (the namespace controller's)
    cms = len((await api.request("GET", f"/api/v1/namespaces/{NS}/configmaps")).json()["items"])
    assert cms >= 2
    assert q["status"]["used"] == {"configmaps": str(cms), "count/configmaps": str(cms), "cpu": "0", "pods": "0"}


async def test_pods_exceeding_quota_are_refused_with_kubes_message(api: Api) -> None:
    await make_quota(api, "compute", {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"})
    r = await create_pod(api, pod("a", cpu="500m", memory="512Mi"))
    assert r.status == 201, r.body
    assert await used(api, "compute") == {"pods": "1", "requests.cpu": "500m", "requests.memory": "512Mi"}
    r = await create_pod(api, pod("b", cpu="600m", memory="256Mi"))
    assert r.status == 403
    body = r.json()
    assert body["reason"] == "Forbidden"
    assert body["message"] == ('pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, '
                               'used: requests.cpu=500m, limited: requests.cpu=1')
    assert body["details"] == {"name": "b", "kind": "pods"}
    r = await create_pod(api, pod("c", cpu="500m", memory="512Mi"))
    assert r.status == 201
    assert await used(api, "compute") == {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}
    r = await create_pod(api, pod("d", cpu="1m", memory="1Mi"))
    assert r.status == 403
    assert r.json()["message"] == (
        'pods "d" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=1m,requests.memory=1Mi, '
        'used: pods=2,requests.cpu=1,requests.memory=1Gi, limited: pods=2,requests.cpu=1,requests.memory=1Gi')


async def test_pod_without_required_resources_is_refused(api: Api) -> None:
    await make_quota(api, "compute", {"limits.cpu": "4", "limits.memory": "4Gi", "pods": "10"})
    body = pod("nolimits", cpu="100m")
    body["spec"]["containers"].append({"name": "side", "image": "busybox",
                                       "resources": {"limits": {"memory": "64Mi"}}})
    r = await create_pod(api, body)
    assert r.status == 403
    assert r.json()["message"] == ('pods "nolimits" is forbidden: failed quota: compute: must specify '
                                   'limits.cpu for: app,side; limits.memory for: app')
    r = await create_pod(api, pod("ok", lim_cpu="1", lim_memory="1Gi"))  # requests default to the limits
    assert r.status == 201, r.body
    assert await used(api, "compute") == {"limits.cpu": "1", "limits.memory": "1Gi", "pods": "1"}


async def test_generated_name_in_message_and_dry_run_not_charged(api: Api) -> None:
    await make_quota(api, "q", {"pods": "1"})
    r = await create_pod(api, pod("dry"), query="?dryRun=All")
    assert r.status == 201
    assert await used(api, "q") == {"pods": "0"}
    r = await create_pod(api, pod("one"))
    assert r.status == 201
    gen = pod("")
    gen["metadata"] = {"generateName": "web-"}
    r = await create_pod(api, gen)
    assert r.status == 403
    # validating admission runs after the name is generated: the message names the pod (as kube's)
    assert re.fullmatch(r'pods "web-[a-z0-9]{5}" is forbidden: exceeded quota: q, requested: pods=1, '
                        r'used: pods=1, limited: pods=1', r.json()["message"])
    r = await create_pod(api, pod("dry2"), query="?dryRun=All")
    assert r.status == 403  # a dry run is checked all the same


async def test_deleting_gives_usage_back(api: Api) -> None:
    await make_quota(api, "q", {"pods": "1", "count/pods": "1"})
    assert (await create_pod(api, pod("a"))).status == 201
    assert (await create_pod(api, pod("b"))).status == 403
    r = await api.request("DELETE", f"/api/v1/namespaces/{NS}/pods/a?gracePeriodSeconds=0")
    assert r.status == 200, r.body
    await wait_status(api, "q", lambda st: st["used"] == {"count/pods": "0", "pods": "0"})
    assert (await create_pod(api, pod("b"))).status == 201


async def test_terminal_pods_free_compute_but_keep_count(api: Api) -> None:
    await make_quota(api, "q", {"pods": "1", "count/pods": "5"})
    assert (await create_pod(api, pod("a"))).status == 201
    r = await api.request("GET", f"/api/v1/namespaces/{NS}/pods/a")
    done = r.json()
    done["status"] = {"phase": "Succeeded"}
    r = await api.request("PUT", f"/api/v1/namespaces/{NS}/pods/a/status", done)
    assert r.status == 200, r.body
    await wait_status(api, "q", lambda st: st["used"] == {"count/pods": "1", "pods": "0"})
    assert (await create_pod(api, pod("b"))).status == 201


async def test_scoped_quotas(api: Api) -> None:
    await make_quota(api, "besteffort", {"pods": "1"}, scopes=["BestEffort"])
    await make_quota(api, "terminating", {"pods": "1"}, scopes=["Terminating"])
    await make_quota(api, "prio", {"pods": "1"},
                     scopeSelector={"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In",
                                                          "values": ["system-cluster-critical"]}]})
    assert (await create_pod(api, pod("be1"))).status == 201
    r = await create_pod(api, pod("be2"))
    assert r.status == 403 and "exceeded quota: besteffort" in r.json()["message"]
    assert (await create_pod(api, pod("burst1", cpu="10m"))).status == 201
    assert (await create_pod(api, pod("burst2", cpu="10m"))).status == 201  # not BestEffort: not counted
    assert (await create_pod(api, pod("term1", cpu="10m", activeDeadlineSeconds=60))).status == 201
    r = await create_pod(api, pod("term2", cpu="10m", activeDeadlineSeconds=60))
    assert r.status == 403 and "exceeded quota: terminating" in r.json()["message"]
    assert await used(api, "besteffort") == {"pods": "1"}
    assert await used(api, "terminating") == {"pods": "1"}
    assert await used(api, "prio") == {"pods": "0"}
    # the controller's recount agrees with what admission charged
    r = await api.request("GET", f"/api/v1/namespaces/{NS}/resourcequotas/besteffort")
    quota = r.json()
    quota["spec"]["hard"]["pods"] = "3"
    assert (await api.request("PUT", f"/api/v1/namespaces/{NS}/resourcequotas/besteffort", quota)).status == 200
    await wait_status(api, "besteffort", lambda st: st["hard"] == {"pods": "3"} and st["used"] == {"pods": "1"})
    assert (await create_pod(api, pod("be2"))).status == 201


async def test_services_node_ports_and_load_balancers(api: Api) -> None:
    await make_quota(api, "svc", {"services": "5", "services.nodeports": "2", "services.loadbalancers": "0"})

    def svc(name: str, kind: str, ports: int) -> Obj:
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                "spec": {"type": kind, "ports": [{"name": f"p{i}", "port": 80 + i} for i in range(ports)]}}

    assert (await api.create(f"/api/v1/namespaces/{NS}/services", svc("np", "NodePort", 2))).status == 201
    r = await api.create(f"/api/v1/namespaces/{NS}/services", svc("np2", "NodePort", 1))
    assert r.status == 403
    assert r.json()["message"] == ('services "np2" is forbidden: exceeded quota: svc, requested: '
                                   'services.nodeports=1, used: services.nodeports=2, limited: services.nodeports=2')
    r = await api.create(f"/api/v1/namespaces/{NS}/services", svc("lb", "LoadBalancer", 1))
    assert r.status == 403 and "requested: services.loadbalancers=1,services.nodeports=1, " in r.json()["message"]
    assert (await api.create(f"/api/v1/namespaces/{NS}/services", svc("cip", "ClusterIP", 1))).status == 201
    assert await used(api, "svc") == {"services": "2", "services.loadbalancers": "0", "services.nodeports": "2"}
    # an update is charged by its difference: ClusterIP → NodePort takes a node port more
    r = await api.request("GET", f"/api/v1/namespaces/{NS}/services/cip")
    up = r.json()
    up["spec"]["type"] = "NodePort"
    r = await api.request("PUT", f"/api/v1/namespaces/{NS}/services/cip", up)
    assert r.status == 403
    assert r.json()["message"].startswith('services "cip" is forbidden: exceeded quota: svc, requested: '
                                          'services.nodeports=1')


async def test_claims_per_storage_class(api: Api) -> None:
    await make_quota(api, "storage", {"requests.storage": "10Gi", "persistentvolumeclaims": "5",
                                      "gold.storageclass.storage.k8s.io/requests.storage": "3Gi"})

    def claim(name: str, size: str, cls: str) -> Obj:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                         "resources": {"requests": {"storage": size}}}}

    path = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"
    assert (await api.create(path, claim("g1", "2Gi", "gold"))).status == 201, "g1"
    r = await api.create(path, claim("g2", "2Gi", "gold"))
    assert r.status == 403
    assert r.json()["message"] == (
        'persistentvolumeclaims "g2" is forbidden: exceeded quota: storage, requested: '
        'gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: gold.storageclass.storage.k8s.io/'
        'requests.storage=2Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=3Gi')
    assert (await api.create(path, claim("s1", "5Gi", "silver"))).status == 201
    assert await used(api, "storage") == {"gold.storageclass.storage.k8s.io/requests.storage": "2Gi",
                                          "persistentvolumeclaims": "2", "requests.storage": "7Gi"}


async def test_object_counts_of_any_resource(api: Api) -> None:
    await make_quota(api, "counts", {"count/deployments.apps": "1", "secrets": "1", "count/jobs.batch": "0"})

    def deployment(name: str) -> Obj:
        labels = {"app": name}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels},
                                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}

    path = f"/apis/apps/v1/namespaces/{NS}/deployments"
    assert (await api.create(path, deployment("d1"))).status == 201
    r = await api.create(path, deployment("d2"))
    assert r.status == 403
    assert r.json()["message"] == ('deployments.apps "d2" is forbidden: exceeded quota: counts, requested: '
                                   'count/deployments.apps=1, used: count/deployments.apps=1, '
                                   'limited: count/deployments.apps=1')
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "stringData": {"a": "b"}}
    assert (await api.create(f"/api/v1/namespaces/{NS}/secrets", secret)).status == 201
    r = await api.create(f"/api/v1/namespaces/{NS}/secrets", {**secret, "metadata": {"name": "s2"}})
    assert r.status == 403 and "requested: secrets=1, used: secrets=1, limited: secrets=1" in r.json()["message"]
    # an update is not counted
    r = await api.request("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/d1")
    d1 = r.json()
    d1["metadata"]["labels"] = {"x": "y"}
    assert (await api.request("PUT", f"/apis/apps/v1/namespaces/{NS}/deployments/d1", d1)).status == 200
    # deleting the deployment gives its count back (the controller follows deployments for this quota)
    r = await api.request("DELETE", f"/apis/apps/v1/namespaces/{NS}/deployments/d1")
    assert r.status == 200
    await wait_status(api, "counts", lambda st: st["used"]["count/deployments.apps"] == "0")
    assert (await api.create(path, deployment("d2"))).status == 201


async def test_other_namespaces_and_ignored_resources_are_not_counted(api: Api) -> None:
    r = await api.create(f"/api/v1/namespaces/{NS}/resourcequotas",
                         {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                          "spec": {"hard": {"pods": "0", "count/events": "0"}}})
    assert r.status == 201
    # events are not quota-ed: nothing measures them, so no usage is shown for them (as kube's)
    q = await wait_status(api, "q", lambda st: "pods" in (st.get("used") or {}))
    assert q["status"]["used"] == {"pods": "0"}
    assert q["status"]["hard"] == {"count/events": "0", "pods": "0"}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    assert (await api.create("/api/v1/namespaces", ns)).status == 201
    with trio.fail_after(10):  # its default ServiceAccount (the namespace controller's), which pods need
        while (await api.request("GET", "/api/v1/namespaces/other/serviceaccounts/default")).status != 200:
            await trio.sleep(0.01)
    assert (await create_pod(api, pod("free"), ns="other")).status == 201
    assert (await create_pod(api, pod("nope"))).status == 403
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"name": "x"},
          "reason": "R", "message": "m"}
    assert (await api.create(f"/api/v1/namespaces/{NS}/events", ev)).status == 201


async def test_concurrent_creates_never_exceed_the_quota(api: Api) -> None:
    await make_quota(api, "q", {"count/configmaps": "5"})
    r = await api.request("GET", f"/api/v1/namespaces/{NS}/resourcequotas/q")
    already = int(r.json()["status"]["used"]["count/configmaps"])
    codes: list[int] = []

    async def one(i: int) -> None:
        r = await api.create(f"/api/v1/namespaces/{NS}/configmaps",
                             {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
        codes.append(r.status)

    async with trio.open_nursery() as n:
        for i in range(12):
            n.start_soon(one, i)
    assert codes.count(201) == 5 - already
    assert codes.count(403) == 12 - (5 - already)
    assert await used(api, "q") == {"count/configmaps": "5"}


async def test_status_unknown_before_the_controller_syncs(api: Api) -> None:
    # A quota whose status names a hard limit without usage (as one written by hand) refuses until synced.
    r = await api.create(f"/api/v1/namespaces/{NS}/resourcequotas",
                         {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                          "spec": {"hard": {"pods": "5", "requests.cpu": "1"}}})
    assert r.status == 201
    q = await wait_status(api, "q", lambda st: "pods" in (st.get("used") or {}))
    from kapi.admission.plugin import Attributes
    from kapi.admission.plugins.resourcequota import QuotaRefused, check_request
    from kapi.admission.quota.evaluators import PodEvaluator
    from kapi.object.access import UserInfo
    from kapi.registry.admit import CREATE, AdmissionRequest
    q["status"]["used"] = {"pods": "0"}
    res = api.registry.table.get("", "v1", "pods")
    assert res is not None
    a = Attributes(AdmissionRequest(CREATE, res, "", NS, "p", pod("p", cpu="1m"), None), UserInfo("u"), {}, [])
    with pytest.raises(QuotaRefused) as refused:
        check_request([q], a, PodEvaluator())
    assert refused.value.error.message == ('pods "p" is forbidden: status unknown for quota: q, resources: '
                                           'pods,requests.cpu')


async def test_concurrent_creates_are_charged_in_batches(api: Api) -> None:
    await make_quota(api, "q", {"count/secrets": "100"})
    before = int((await used(api, "q"))["count/secrets"])
    writes: list[str] = []
    inner = api.registry.update

    async def update(res: Any, namespace: str, name: str, obj: Obj, opts: Any, subresource: str = "") -> Any:
        if res.resource == "resourcequotas" and subresource == "status":
            writes.append(name)
        return await inner(res, namespace, name, obj, opts, subresource)

    api.registry.update = update  # type: ignore[method-assign]
    codes: list[int] = []

    async def one(i: int) -> None:
        r = await api.create(f"/api/v1/namespaces/{NS}/secrets",
                             {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s{i}"}})
        codes.append(r.status)

    async with trio.open_nursery() as n:
        for i in range(16):
            n.start_soon(one, i)
    assert codes == [201] * 16
    assert await used(api, "q") == {"count/secrets": str(before + 16)}
    # one write per batch: the requests that came while one was written were charged together
    assert 0 < writes.count("q") < 16, writes
