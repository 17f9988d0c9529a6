"""The PodSecurity plugin on its own: the audit annotations it records
(pod-security.kubernetes.io/enforce-policy, audit-violations, exempt, error), subresources
(ephemeralcontainers evaluated, binding/status ignored), a missing namespace, and a cached
policy following label changes."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi import errors
from kapi.admission.plugin import Attributes, Objects, PluginDeps
from kapi.admission.plugins.podsecurity import PodSecurity
from kapi.apis import BUILTIN
from kapi.object.access import UserInfo
from kapi.registry.admit import CREATE, UPDATE, AdmissionRequest
from kapi.registry.resources import Resource, ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.storage.memory import MemoryStorage

Obj = dict[str, Any]
P = "pod-security.kubernetes.io/"


class Setup:
    def __init__(self, registry: Registry, configuration: Obj | None = None) -> None:
        self.registry = registry
        conf = {"PodSecurity": configuration} if configuration is not None else {}
        self.plugin = PodSecurity(PluginDeps(registry, Objects(registry, None), configuration=conf))

    def res(self, group: str, resource: str) -> Resource:
        return next(r for r in self.registry.table.resources if r.group == group and r.resource == resource)

    async def namespace(self, name: str, **labels: str) -> None:
        await self.registry.create(self.res("", "namespaces"), "", {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {P + k.replace("_", "-"): v for k, v in labels.items()}}},
            WriteOptions())

    async def run(self, operation: str, group: str, resource: str, namespace: str, name: str, obj: Obj | None,
                  old: Obj | None = None, subresource: str = "", user: str = "someone",
                  ) -> tuple[list[str], dict[str, str], errors.StatusError | None]:
        warnings: list[str] = []
        annotations: dict[str, str] = {}
        req = AdmissionRequest(operation, self.res(group, resource), subresource, namespace, name, obj, old)
        a = Attributes(req, UserInfo(user), {}, warnings, annotations.__setitem__)
        try:
            await self.plugin.validate(a)
        except errors.StatusError as exc:
            return warnings, annotations, exc
        return warnings, annotations, None


@pytest.fixture
async def setup(nursery: trio.Nursery) -> Setup:
    storage = MemoryStorage()
    await nursery.start(storage.run)
    return Setup(Registry(storage, ResourceTable(BUILTIN)))


def pod(name: str, **sc: Any) -> Obj:
    ctr: Obj = {"name": "c", "image": "nginx"}
    if sc:
        ctr["securityContext"] = sc
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "n"},
            "spec": {"containers": [ctr]}}


async def test_audit_annotations(setup: Setup) -> None:
    await setup.namespace("n", enforce="baseline", audit="restricted", audit_version="v1.24")
    warnings, annotations, err = await setup.run(CREATE, "", "pods", "n", "p", pod("p"))
    assert err is None and warnings == []
    assert annotations == {
        P + "enforce-policy": "baseline:latest",
        P + "audit-violations": (
            'would violate PodSecurity "restricted:v1.24": allowPrivilegeEscalation != false (container "c" must set '
            'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set '
            'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set '
            'securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set '
            'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
    }
    # a refused pod still carries both annotations
    warnings, annotations, err = await setup.run(CREATE, "", "pods", "n", "q", pod("q", privileged=True))
    assert isinstance(err, errors.Forbidden) and err.code == 403
    assert annotations[P + "enforce-policy"] == "baseline:latest"
    assert annotations[P + "audit-violations"].startswith(
        'would violate PodSecurity "restricted:v1.24": privileged (container "c" must not set '
        'securityContext.privileged=true), allowPrivilegeEscalation != false')


async def test_privileged_namespace_annotation(setup: Setup) -> None:
    await setup.namespace("n", enforce="privileged", enforce_version="v1.20")
    _, annotations, err = await setup.run(CREATE, "", "pods", "n", "p", pod("p", privileged=True))
    assert err is None
    assert annotations == {P + "enforce-policy": "privileged:latest"}  # kube names the shared response's policy


async def test_exemption_annotations(setup: Setup) -> None:
    s = Setup(setup.registry, {"apiVersion": "pod-security.admission.config.k8s.io/v1",
                               "kind": "PodSecurityConfiguration",
                               "exemptions": {"usernames": ["ops"], "namespaces": ["sys"],
                                              "runtimeClasses": ["kata"]}})
    await s.namespace("n", enforce="restricted")
    await s.namespace("sys", enforce="restricted")
    bad = pod("p", privileged=True)
    assert (await s.run(CREATE, "", "pods", "sys", "p", bad))[1:] == ({P + "exempt": "namespace"}, None)
    assert (await s.run(CREATE, "", "pods", "n", "p", bad, user="ops"))[1:] == ({P + "exempt": "user"}, None)
    kata = pod("p", privileged=True)
    kata["spec"]["runtimeClassName"] = "kata"
    assert (await s.run(CREATE, "", "pods", "n", "p", kata))[1:] == ({P + "exempt": "runtimeClass"}, None)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"template": {"spec": kata["spec"]}}}
    assert (await s.run(CREATE, "apps", "deployments", "n", "d", deployment))[1] == {P + "exempt": "runtimeClass"}
    assert (await s.run(CREATE, "apps", "deployments", "sys", "d", deployment))[1] == {P + "exempt": "namespace"}


async def test_invalid_labels_annotated_as_error(setup: Setup) -> None:
    await setup.namespace("n", enforce="strict", warn="baseline")
    warnings, annotations, err = await setup.run(CREATE, "", "pods", "n", "p", pod("p"))
    assert isinstance(err, errors.Forbidden)
    assert 'violates PodSecurity "restricted:latest"' in err.message
    assert annotations[P + "error"] == (f'Failed to parse policy: metadata.labels[{P}enforce]: Invalid value: '
                                        '"strict": must be one of privileged, baseline, restricted')
    assert annotations[P + "enforce-policy"] == "restricted:latest"


async def test_subresources(setup: Setup) -> None:
    await setup.namespace("n", enforce="baseline")
    old = pod("p")
    new = pod("p")
    new["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "busybox",
                                           "securityContext": {"privileged": True}}]
    _, _, err = await setup.run(UPDATE, "", "pods", "n", "p", new, old, subresource="ephemeralcontainers")
    assert err is not None and err.message == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "debug" must not '
        'set securityContext.privileged=true)')
    # the same ephemeral container again (image unchanged): not significant
    assert (await setup.run(UPDATE, "", "pods", "n", "p", new, new, subresource="ephemeralcontainers"))[2] is None
    for sub in ("status", "binding", "eviction"):
        assert (await setup.run(UPDATE, "", "pods", "n", "p", new, old, subresource=sub)) == ([], {}, None)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "node"}}
    assert (await setup.run(CREATE, "", "pods", "n", "p", binding, subresource="binding"))[2] is None
    # an unknown subresource whose body is not a pod: kube's "failed to decode pod"
    _, annotations, err = await setup.run(CREATE, "", "pods", "n", "p", binding, subresource="other")
    assert isinstance(err, errors.BadRequest) and err.message == "failed to decode pod"
    assert annotations == {P + "error": "failed to decode pod"}


async def test_missing_namespace(setup: Setup) -> None:
    _, annotations, err = await setup.run(CREATE, "", "pods", "gone", "p", pod("p"))
    assert isinstance(err, errors.InternalError) and err.code == 500
    assert err.message == 'Internal error occurred: failed to lookup namespace "gone"'
    assert annotations[P + "error"].startswith('Internal error occurred: failed to lookup namespace "gone"')
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}
    warnings, annotations, err = await setup.run(CREATE, "apps", "deployments", "gone", "d", deployment)
    assert err is None and warnings == []
    assert annotations[P + "error"].startswith('failed to lookup namespace "gone"')


async def test_replication_controller_without_template(setup: Setup) -> None:
    await setup.namespace("n", warn="restricted")
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"}, "spec": {"replicas": 0}}
    assert await setup.run(CREATE, "", "replicationcontrollers", "n", "rc", rc) == ([], {}, None)
    rc["spec"]["template"] = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    warnings, _, _ = await setup.run(CREATE, "", "replicationcontrollers", "n", "rc", rc)
    assert len(warnings) == 1 and warnings[0].startswith('would violate PodSecurity "restricted:latest"')


async def test_exempt_namespace_labelled(setup: Setup) -> None:
    s = Setup(setup.registry, {"apiVersion": "pod-security.admission.config.k8s.io/v1",
                               "kind": "PodSecurityConfiguration", "exemptions": {"namespaces": ["sys"]}})
    labelled = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "sys", "labels": {P + "enforce": "restricted", P + "warn": "baseline"}}}
    expected = ['namespace "sys" is exempt from Pod Security, and the policy '
                '(enforce=restricted:latest, warn=baseline:latest) will be ignored']
    # kube's create handler sets a namespace create's namespace to its name
    assert (await s.run(CREATE, "", "namespaces", "", "sys", labelled))[0] == expected
    old = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sys"}}
    warnings, _, err = await s.run(UPDATE, "", "namespaces", "", "sys", labelled, old)
    assert err is None and warnings == expected
    # labels equivalent to the defaults (privileged) warn of nothing
    plain = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "sys", "labels": {P + "enforce": "privileged", P + "warn-version": "v1.2"}}}
    assert (await s.run(CREATE, "", "namespaces", "", "sys", plain))[0] == []


async def test_metrics(setup: Setup) -> None:
    metrics = setup.registry.metrics.registry

    def value(name: str, **labels: str) -> float:
        return metrics.get_sample_value(name, labels) or 0.0

    await setup.namespace("open")
    await setup.namespace("n", enforce="baseline", warn="restricted", warn_version="v1.40")
    await setup.run(CREATE, "", "pods", "open", "p", pod("p"))
    assert value("pod_security_evaluations_total", decision="allow", policy_level="privileged",
                 policy_version="latest", mode="enforce", request_operation="create", resource="pod",
                 subresource="") == 1
    await setup.run(CREATE, "", "pods", "n", "p", pod("p"))
    assert value("pod_security_evaluations_total", decision="allow", policy_level="baseline", policy_version="latest",
                 mode="enforce", request_operation="create", resource="pod", subresource="") == 1
    # a version newer than the server's is "future"
    assert value("pod_security_evaluations_total", decision="deny", policy_level="restricted",
                 policy_version="future", mode="warn", request_operation="create", resource="pod",
                 subresource="") == 1
    await setup.run(CREATE, "", "pods", "n", "q", pod("q", privileged=True))
    assert value("pod_security_evaluations_total", decision="deny", policy_level="baseline", policy_version="latest",
                 mode="enforce", request_operation="create", resource="pod", subresource="") == 1
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    await setup.run(UPDATE, "apps", "deployments", "n", "d", deployment, deployment)
    assert value("pod_security_evaluations_total", decision="deny", policy_level="restricted",
                 policy_version="future", mode="warn", request_operation="update", resource="controller",
                 subresource="") == 1
    await setup.run(CREATE, "", "pods", "gone", "p", pod("p"))
    assert value("pod_security_errors_total", fatal="true", request_operation="create", resource="pod",
                 subresource="") == 1
    s = Setup(setup.registry, {"apiVersion": "pod-security.admission.config.k8s.io/v1",
                               "kind": "PodSecurityConfiguration", "exemptions": {"usernames": ["ops"]}})
    await s.run(CREATE, "", "pods", "n", "p", pod("p"), user="ops")
    assert value("pod_security_exemptions_total", request_operation="create", resource="pod", subresource="") == 1


async def test_existing_pods_time_limit_and_checkpoints(setup: Setup) -> None:
    from kapi.admission.podsecurity.api import BASELINE, LATEST, LevelVersion
    adm = setup.plugin.admission
    pods = [pod(f"p{i:03}", privileged=True) for i in range(250)]
    order: list[str] = []

    async def other() -> None:
        order.append("other request")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        got = await adm.evaluate_pods_in_namespace("n", LevelVersion(BASELINE, LATEST), pods)
        order.append("evaluated")
    # the evaluation let other tasks run between its batches
    assert order == ["other request", "evaluated"]
    assert got == ['existing pods in namespace "n" violate the new PodSecurity enforce level "baseline:latest"',
                   "p000 (and 249 other pods): privileged"]
    adm.pod_check_timeout = -1.0  # the deadline has passed once the first pod is checked
    got = await adm.evaluate_pods_in_namespace("n", LevelVersion(BASELINE, LATEST), pods)
    assert got == ["new PodSecurity enforce level only checked against the first 1 of 250 existing pods",
                   'existing pods in namespace "n" violate the new PodSecurity enforce level "baseline:latest"',
                   "p000: privileged"]
