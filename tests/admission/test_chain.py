"""The chain: kube 1.33's default set and order, the flags' errors, the configuration file, and a
request's admission (mutating in order, reinvoked once when asked, then validating; only plugins
interested in the operation and resource are called)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from kapi.admission.chain import (DEFAULT_ON, ORDER, AdmissionChain, AdmissionConfigError, enabled_plugins,
                                  load_configuration)
from kapi.admission.plugin import Attributes, Objects, Plugin, PluginDeps
from kapi.apis import BUILTIN
from kapi.object.access import UserInfo
from kapi.registry.admit import CREATE, DELETE, AdmissionRequest
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]


def test_the_default_set_in_kubes_order() -> None:
    names = enabled_plugins()
    assert set(names) == DEFAULT_ON
    assert names == sorted(names, key=ORDER.index)
    assert names[0] == "NamespaceLifecycle" and names[-1] == "ResourceQuota"
    assert names[-4:] == ["MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
                          "ResourceQuota"]


def test_enable_and_disable() -> None:
    names = enabled_plugins(["AlwaysPullImages", "NodeRestriction"], ["ServiceAccount", "PodSecurity"])
    assert "ServiceAccount" not in names and "PodSecurity" not in names
    # kube's order, whatever the order given: NodeRestriction before AlwaysPullImages
    assert names.index("LimitRanger") < names.index("NodeRestriction") < names.index("AlwaysPullImages") \
        < names.index("Priority")
    assert enabled_plugins((), sorted(DEFAULT_ON)) == []


@pytest.mark.parametrize("enable, disable, message", [
    (["Foo"], [], 'enable-admission-plugins plugin "Foo" is unknown'),
    ([], ["Bar"], 'disable-admission-plugins plugin "Bar" is unknown'),
    (["Priority", "AlwaysDeny"], ["AlwaysDeny", "Priority"],
     "[AlwaysDeny Priority] in enable-admission-plugins and disable-admission-plugins overlapped"),
    (["EventRateLimit"], [], "admission plugins EventRateLimit are not available in kapi"),
])
def test_flag_errors(enable: list[str], disable: list[str], message: str) -> None:
    with pytest.raises(AdmissionConfigError) as caught:
        enabled_plugins(enable, disable)
    assert str(caught.value) == message


def test_configuration_inline_and_by_path(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ps.yaml").write_text("apiVersion: pod-security.admission.config.k8s.io/v1\n"
                                              "kind: PodSecurityConfiguration\ndefaults: {enforce: baseline}\n")
    path = tmp_path / "admission.yaml"
    path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
                    "- name: PodSecurity\n  path: sub/ps.yaml\n"
                    "- name: ResourceQuota\n  configuration: {kind: ResourceQuotaConfiguration}\n")
    config = load_configuration(str(path))
    assert config["PodSecurity"]["defaults"] == {"enforce": "baseline"}
    assert config["ResourceQuota"] == {"kind": "ResourceQuotaConfiguration"}
    assert load_configuration("") == {}
    path.write_text("kind: Something\n")
    with pytest.raises(AdmissionConfigError, match="not an AdmissionConfiguration"):
        load_configuration(str(path))
    with pytest.raises(AdmissionConfigError, match="failed to read admission control configuration"):
        load_configuration(str(tmp_path / "missing.yaml"))


class Recorder(Plugin):
    """Records its calls; ``mark`` is written into the object's labels when it mutates."""

    resources = frozenset((("", "configmaps"),))
    operations = frozenset((CREATE,))
    calls: list[str]

    def __init__(self, deps: PluginDeps, name: str, calls: list[str], *, reinvoke: bool = False) -> None:
        super().__init__(deps)
        self.label = name
        self.calls = calls
        self.ask_reinvoke = reinvoke

    async def admit(self, a: Attributes) -> None:
        self.calls.append(f"admit {self.label}{' again' if a.is_reinvoke else ''}")
        assert a.obj is not None
        a.obj.setdefault("metadata", {}).setdefault("labels", {})[self.label] = "x"
        if self.ask_reinvoke and not a.is_reinvoke:
            a.reinvoke = True

    async def validate(self, a: Attributes) -> None:
        self.calls.append(f"validate {self.label}")
        assert a.obj is not None and set(a.obj["metadata"]["labels"]) == {"one", "two"}
        a.warn(f"seen by {self.label}")
        a.annotate(f"{self.label}/k", "v")


async def test_a_requests_admission(nursery: trio.Nursery) -> None:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    deps = PluginDeps(registry, Objects(registry, None))
    calls: list[str] = []
    chain = AdmissionChain([Recorder(deps, "one", calls), Recorder(deps, "two", calls, reinvoke=True)])
    res = registry.table.get("", "v1", "configmaps")
    assert res is not None
    warnings: list[str] = []
    annotations: dict[str, str] = {}
    admission = chain.bind(UserInfo("alice"), warnings, annotations.__setitem__, {"dryRun": "All"})
    req = AdmissionRequest(CREATE, res, "", "default", "c", {"metadata": {"name": "c"}}, None, True)
    assert admission.changes(CREATE, res) and not admission.changes(DELETE, res)
    await admission.mutate(req)
    await admission.validate(req)
    assert calls == ["admit one", "admit two", "admit one again", "admit two again", "validate one", "validate two"]
    assert warnings == ["seen by one", "seen by two"] and annotations == {"one/k": "v", "two/k": "v"}
    assert admission.options(CREATE) == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}
    # Not interested in DELETE, nor in other resources: not called.
    calls.clear()
    secrets = registry.table.get("", "v1", "secrets")
    assert secrets is not None
    await admission.mutate(AdmissionRequest(DELETE, res, "", "default", "c", None, {}, False))
    await admission.validate(AdmissionRequest(CREATE, secrets, "", "default", "s", {"metadata": {}}, None, False))
    assert calls == []
