"""RuntimeClass, PodNodeSelector, PodTolerationRestriction, ExtendedResourceToleration,
AlwaysPullImages, LimitPodHardAntiAffinityTopology and PodTopologyLabels, each against kube's
documented behaviour and messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
import yaml

from kapi.admission.plugins.podtolerationrestriction import is_superset, merge_tolerations
from tests.admission.test_pods_support import message, namespace, pod, start_api

Obj = dict[str, Any]
RCS = "/apis/node.k8s.io/v1/runtimeclasses"
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def admission_config(tmp_path: Path, plugins: dict[str, Obj]) -> str:
    path = tmp_path / "admission.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                                    "plugins": [{"name": n, "configuration": c} for n, c in plugins.items()]}))
    return str(path)


async def test_runtime_class_overhead_and_scheduling(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "rc")
    gvisor = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
              "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
              "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                             "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}
    assert (await api.create(RCS, gvisor)).status == 201
    reply = await api.create("/api/v1/namespaces/rc/pods", pod("p", runtimeClassName="gvisor",
                                                               nodeSelector={"zone": "a"}))
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"zone": "a", "sandbox": "gvisor"}
    # DefaultTolerationSeconds runs before RuntimeClass (kube's order)
    assert spec["tolerations"] == DEFAULT_TOLERATIONS + [{"key": "sandbox", "operator": "Exists",
                                                          "effect": "NoSchedule"}]
    reply = await api.create("/api/v1/namespaces/rc/pods", pod("c", runtimeClassName="gvisor",
                                                               nodeSelector={"sandbox": "kata"}))
    assert (reply.status, message(reply)) == (403, 'pods "c" is forbidden: conflict: '
                                                   "runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; "
                                                   "pod.spec.nodeSelector[sandbox] = kata")
    reply = await api.create("/api/v1/namespaces/rc/pods", pod("o", runtimeClassName="gvisor",
                                                               overhead={"cpu": "1"}))
    assert message(reply) == ('pods "o" is forbidden: pod rejected: Pod\'s Overhead doesn\'t match RuntimeClass\'s '
                              "defined Overhead")
    reply = await api.create("/api/v1/namespaces/rc/pods", pod("m", runtimeClassName="missing"))
    assert (reply.status, message(reply)) == (403, 'pods "m" is forbidden: pod rejected: RuntimeClass "missing" '
                                                   "not found")
    reply = await api.create("/api/v1/namespaces/rc/pods", pod("n", overhead={"cpu": "1"}))
    assert message(reply) == ('pods "n" is forbidden: pod rejected: Pod Overhead set without corresponding '
                              "RuntimeClass defined Overhead")


async def test_pod_node_selector(nursery: trio.Nursery, tmp_path: Path) -> None:
    config = admission_config(tmp_path, {"PodNodeSelector": {"podNodeSelectorPluginConfig": {
        "clusterDefaultNodeSelector": "env=prod", "restricted": "env=dev,tier=web"}}})
    api = await start_api(nursery, enable=("PodNodeSelector",), admission_control_config_file=config)
    await namespace(api, "plain")
    spec = (await api.create("/api/v1/namespaces/plain/pods", pod("p"))).json()["spec"]
    assert spec["nodeSelector"] == {"env": "prod"}
    reply = await api.create("/api/v1/namespaces/plain/pods", pod("q", nodeSelector={"env": "dev"}))
    assert (reply.status, message(reply)) == (403, 'pods "q" is forbidden: pod node label selector conflicts with '
                                                   "its namespace node label selector")
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "restricted", "annotations": {"scheduler.alpha.kubernetes.io/node-selector": "env=dev"}}}
    assert (await api.create("/api/v1/namespaces", ns)).status == 201
    await namespace_ready(api, "restricted")
    spec = (await api.create("/api/v1/namespaces/restricted/pods", pod("a", nodeSelector={"tier": "web"}))).json()["spec"]
    assert spec["nodeSelector"] == {"env": "dev", "tier": "web"}
    reply = await api.create("/api/v1/namespaces/restricted/pods", pod("b", nodeSelector={"disk": "ssd"}))
    assert (reply.status, message(reply)) == (403, 'pods "b" is forbidden: pod node label selector labels conflict '
                                                   "with its namespace whitelist")


async def namespace_ready(api: Any, name: str) -> None:
    for _ in range(200):
        if (await api.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")).status == 200:
            return
        await trio.sleep(0.01)
    raise AssertionError(name)


async def test_pod_toleration_restriction(nursery: trio.Nursery, tmp_path: Path) -> None:
    config = admission_config(tmp_path, {"PodTolerationRestriction": {
        "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1", "kind": "Configuration",
        "default": [{"key": "cluster", "operator": "Exists", "effect": "NoSchedule"}]}})
    api = await start_api(nursery, enable=("PodTolerationRestriction",), admission_control_config_file=config)
    await namespace(api, "plain")
    spec = (await api.create("/api/v1/namespaces/plain/pods", pod("p"))).json()["spec"]
    # BestEffort: no memory-pressure toleration; the cluster default added
    assert spec["tolerations"] == DEFAULT_TOLERATIONS + [
        {"key": "cluster", "operator": "Exists", "effect": "NoSchedule"}]
    default = [{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]
    whitelist = default + [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
                           {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                           {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "annotations": {
        "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps(default),
        "scheduler.alpha.kubernetes.io/tolerationsWhitelist": json.dumps(whitelist)}}}
    assert (await api.create("/api/v1/namespaces", ns)).status == 201
    await namespace_ready(api, "team-a")
    burstable = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    reply = await api.create("/api/v1/namespaces/team-a/pods", pod("p", burstable))
    assert reply.status == 201, reply.body
    assert reply.json()["spec"]["tolerations"] == DEFAULT_TOLERATIONS + default + [
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}]
    reply = await api.create("/api/v1/namespaces/team-a/pods", pod("q", tolerations=[
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    assert (reply.status, message(reply)) == (500, "pod tolerations (possibly merged with namespace default "
                                                   "tolerations) conflict with its namespace whitelist")


def test_toleration_merge() -> None:
    everything = {"operator": "Exists"}
    key = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    assert is_superset(everything, key) and not is_superset(key, everything)
    assert merge_tolerations([key], [everything]) == [everything]
    short = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
    long = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100}
    assert merge_tolerations([short], [long]) == [long]
    eq = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    assert merge_tolerations([eq, dict(eq)], []) == [eq]


async def test_extended_resource_toleration(nursery: trio.Nursery) -> None:
    api = await start_api(nursery, enable=("ExtendedResourceToleration",))
    await namespace(api, "x")
    gpu = {"name": "c", "image": "nginx", "resources": {"requests": {"example.com/gpu": "1", "cpu": "1"},
                                                        "limits": {"example.com/gpu": "1"}}}
    init = {"name": "i", "image": "nginx", "resources": {"requests": {"acme.io/fpga": "1"},
                                                         "limits": {"acme.io/fpga": "1"}}}
    spec = (await api.create("/api/v1/namespaces/x/pods", pod("p", gpu, initContainers=[init]))).json()["spec"]
    assert spec["tolerations"][2:] == [{"key": "acme.io/fpga", "operator": "Exists", "effect": "NoSchedule"},
                                       {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    spec = (await api.create("/api/v1/namespaces/x/pods", pod("q"))).json()["spec"]
    assert spec["tolerations"] == DEFAULT_TOLERATIONS


async def test_always_pull_images(nursery: trio.Nursery) -> None:
    api = await start_api(nursery, enable=("AlwaysPullImages",))
    await namespace(api, "x")
    body = pod("p", {"name": "c", "image": "nginx:1.27", "imagePullPolicy": "Never"},
               initContainers=[{"name": "i", "image": "busybox:1", "imagePullPolicy": "IfNotPresent"}])
    spec = (await api.create("/api/v1/namespaces/x/pods", body)).json()["spec"]
    assert [c["imagePullPolicy"] for c in spec["containers"] + spec["initContainers"]] == ["Always", "Always"]


async def test_anti_affinity_topology(nursery: trio.Nursery) -> None:
    api = await start_api(nursery, enable=("LimitPodHardAntiAffinityTopology",))
    await namespace(api, "x")

    def anti(key: str) -> Obj:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": key}]}}

    assert (await api.create("/api/v1/namespaces/x/pods", pod("ok", affinity=anti("kubernetes.io/hostname")))).status \
        == 201
    reply = await api.create("/api/v1/namespaces/x/pods", pod("zone", affinity=anti("topology.kubernetes.io/zone")))
    assert (reply.status, message(reply)) == (
        403, 'pods "zone" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey '
             "topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed")


async def test_pod_topology_labels_inert(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    chain = api.app.handlers.admission
    assert chain is not None and "PodTopologyLabels" in chain.names
    await namespace(api, "x")
    got = (await api.create("/api/v1/namespaces/x/pods", pod("p"))).json()
    assert "labels" not in got["metadata"]
