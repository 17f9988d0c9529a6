"""ResourceQuota's configuration (a ResourceQuotaConfiguration in --admission-control-config-file):
``limitedResources`` make consumption need a covering quota, by resource name (``matchContains``)
or by scope (``matchScopes``), with kube's messages; a configuration kube refuses stops the server."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import yaml

from kapi.admission.chain import AdmissionConfigError, load_configuration
from kapi.admission.plugin import Objects, PluginDeps
from kapi.admission.plugins.resourcequota import ResourceQuota
from kapi.apis import BUILTIN
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.storage.memory import MemoryStorage
from tests.admission.test_quota_admission import NS, create_pod, make_quota, pod, serve_quota_api

CONFIG = {
    "apiVersion": "apiserver.config.k8s.io/v1", "kind": "ResourceQuotaConfiguration",
    "limitedResources": [
        {"resource": "pods", "matchContains": ["requests.memory"]},
        {"resource": "pods", "matchScopes": [{"scopeName": "PriorityClass", "operator": "In",
                                              "values": ["system-cluster-critical"]}]},
    ],
}


def write_config(tmp_path: Path, config: dict) -> Path:
    (tmp_path / "quota.yaml").write_text(yaml.safe_dump(config))
    path = tmp_path / "admission.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                                    "plugins": [{"name": "ResourceQuota", "path": "quota.yaml"}]}))
    return path


async def test_limited_resources_need_a_covering_quota(nursery: trio.Nursery, tmp_path: Path) -> None:
    api = await serve_quota_api(nursery, admission_control_config_file=str(write_config(tmp_path, CONFIG)))
    assert (await create_pod(api, pod("cpu-only", cpu="10m"))).status == 201  # memory not consumed
    r = await create_pod(api, pod("mem", memory="10Mi"))
    assert r.status == 403
    assert r.json()["message"] == 'pods "mem" is forbidden: insufficient quota to consume: requests.memory'
    r = await create_pod(api, pod("critical", priorityClassName="system-cluster-critical"))
    assert r.status == 500
    assert r.json()["message"] == ("insufficient quota to match these scopes: "
                                   "[{PriorityClass In [system-cluster-critical]}]")
    await make_quota(api, "memory", {"requests.memory": "1Gi"})
    assert (await create_pod(api, pod("mem", memory="10Mi"))).status == 201
    await make_quota(api, "critical", {"pods": "10"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["system-cluster-critical"]}]})
    r = await create_pod(api, pod("critical", priorityClassName="system-cluster-critical"))
    assert r.status == 403  # the memory quota now limits every pod's memory: it must say its own
    assert r.json()["message"] == ('pods "critical" is forbidden: failed quota: memory: must specify '
                                   'requests.memory for: app')
    body = pod("critical", memory="1Mi", priorityClassName="system-cluster-critical")
    assert (await create_pod(api, body)).status == 201
    r = await api.request("GET", f"/api/v1/namespaces/{NS}/resourcequotas/critical")
    assert r.json()["status"]["used"] == {"pods": "1"}


@pytest.mark.parametrize("config, message", [
    ({**CONFIG, "limitedResources": [{"matchContains": ["x"]}]}, "limitedResources[0].resource: Required value"),
    ({"apiVersion": "v1", "kind": "Pod"}, "ResourceQuota: unexpected configuration 'v1', kind 'Pod'"),
])
async def test_a_wrong_configuration_is_refused(nursery: trio.Nursery, tmp_path: Path, config: dict,
                                                message: str) -> None:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    configuration = load_configuration(str(write_config(tmp_path, config)))
    with pytest.raises(AdmissionConfigError) as err:
        ResourceQuota(PluginDeps(registry, Objects(registry, None), configuration=configuration))
    assert str(err.value).startswith(message)
