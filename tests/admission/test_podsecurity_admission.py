"""PodSecurity through the API: pods refused by the enforce level with kube's message, warnings for
the warn level, pod templates of workloads warned about but never refused, namespace labels
validated (422), the existing pods' warnings when a namespace's enforce level tightens, updates
that do not change images skipped, and the PodSecurityConfiguration's defaults and exemptions
from --admission-control-config-file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from kapi.api.app import Health
from kapi.apis import BUILTIN
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry, WriteOptions
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import FatalError, build_app
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]
P = "pod-security.kubernetes.io/"
RESTRICTED_SC = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                 "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_LATEST_DETAIL = (
    'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
    'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")')


async def start(nursery: trio.Nursery, tmp_path: Path | None = None, psa: Obj | None = None) -> Api:
    """An API with kube's default plugins but ServiceAccount (these pods need no token volume), and
    ``psa`` as the PodSecurityConfiguration of an admission configuration file."""
    config: dict[str, Any] = {}
    if psa is not None:
        assert tmp_path is not None
        path = tmp_path / "admission.yaml"
        path.write_text(json.dumps({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                                    "plugins": [{"name": "PodSecurity", "configuration": psa}]}))
        config["admission_control_config_file"] = str(path)
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                           disable_admission_plugins=("ServiceAccount",), **config), registry, TOKEN,
                    Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    return Api(app, registry)


def psa_config(**fields: Any) -> Obj:
    return {"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", **fields}


def pod(name: str, *, sc: Obj | None = None, image: str = "nginx", **spec: Any) -> Obj:
    ctr: Obj = {"name": "c", "image": image}
    if sc is not None:
        ctr["securityContext"] = sc
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [ctr], **spec}}


async def ns(api: Api, name: str, **labels: str) -> Any:
    return await api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name, "labels": {P + k.replace("_", "-"): v
                                                                                         for k, v in labels.items()}}})


async def relabel(api: Api, name: str, **labels: str | None) -> Any:
    got = (await api.request("GET", f"/api/v1/namespaces/{name}")).json()
    current = got["metadata"].setdefault("labels", {})
    for k, v in labels.items():
        key = P + k.replace("_", "-")
        if v is None:
            current.pop(key, None)
        else:
            current[key] = v
    return await api.request("PUT", f"/api/v1/namespaces/{name}", got)


def warnings(reply: Any) -> list[str]:
    """The Warning headers' texts (``299 - "text"``)."""
    return [json.loads(v[len("299 - "):]) for v in reply.header_values("warning")]


async def test_enforce_restricted_refuses_with_kubes_message(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    assert (await ns(api, "r", enforce="restricted")).status == 201
    reply = await api.create("/api/v1/namespaces/r/pods", pod("p"))
    assert reply.status == 403
    body = reply.json()
    assert body["message"] == (f'pods "p" is forbidden: violates PodSecurity "restricted:latest": '
                               f'{RESTRICTED_LATEST_DETAIL}')
    assert (body["reason"], body["details"]) == ("Forbidden", {"name": "p", "kind": "pods"})
    assert warnings(reply) == []  # no warning on a refused request
    # a dry run is refused the same way
    dry = await api.create("/api/v1/namespaces/r/pods?dryRun=All", pod("p"))
    assert dry.status == 403 and dry.json()["message"] == body["message"]
    ok = await api.create("/api/v1/namespaces/r/pods", pod("p", sc=RESTRICTED_SC))
    assert ok.status == 201, ok.body
    assert warnings(ok) == []
    # a generated name is the one the message gives
    gen = pod("", sc={"privileged": True})
    gen["metadata"] = {"generateName": "web-"}
    reply = await api.create("/api/v1/namespaces/r/pods", gen)
    assert reply.status == 403
    assert reply.json()["message"].startswith('pods "web-')


async def test_baseline_enforce_and_restricted_warn(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    await ns(api, "b", enforce="baseline", warn="restricted")
    reply = await api.create("/api/v1/namespaces/b/pods", pod("priv", sc={"privileged": True}, hostNetwork=True))
    assert reply.status == 403
    assert reply.json()["message"] == (
        'pods "priv" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), '
        'privileged (container "c" must not set securityContext.privileged=true)')
    assert warnings(reply) == []
    reply = await api.create("/api/v1/namespaces/b/pods", pod("plain"))
    assert reply.status == 201
    assert warnings(reply) == [f'would violate PodSecurity "restricted:latest": {RESTRICTED_LATEST_DETAIL}']


async def test_warn_follows_enforce_and_versions(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    # restricted at v1.22: runAsUser=0 is allowed (that check came in v1.23); warn follows enforce's version
    await ns(api, "old", enforce="restricted", enforce_version="v1.22")
    root = {**RESTRICTED_SC, "runAsUser": 0}
    reply = await api.create("/api/v1/namespaces/old/pods", pod("root", sc=root))
    assert reply.status == 201, reply.body
    assert warnings(reply) == []
    await ns(api, "new", enforce="restricted", enforce_version="v1.23")
    reply = await api.create("/api/v1/namespaces/new/pods", pod("root", sc=root))
    assert reply.json()["message"] == ('pods "root" is forbidden: violates PodSecurity "restricted:v1.23": '
                                       'runAsUser=0 (container "c" must not set runAsUser=0)')
    # a version past every check evaluates as latest but is named as labelled
    await ns(api, "future", enforce="restricted", enforce_version="v1.99")
    reply = await api.create("/api/v1/namespaces/future/pods", pod("p"))
    assert reply.json()["message"] == (f'pods "p" is forbidden: violates PodSecurity "restricted:v1.99": '
                                       f'{RESTRICTED_LATEST_DETAIL}')


async def test_namespace_labels_validated(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    reply = await ns(api, "bad", enforce="strict", warn_version="1.2")
    assert reply.status == 422
    body = reply.json()
    assert body["message"] == (
        f'Namespace "bad" is invalid: [metadata.labels[{P}enforce]: Invalid value: "strict": must be one of '
        f'privileged, baseline, restricted, metadata.labels[{P}warn-version]: Invalid value: "1.2": must be '
        '"latest" or "v1.x"]')
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Namespace"
    assert [c["field"] for c in body["details"]["causes"]] == [f"metadata.labels[{P}enforce]",
                                                               f"metadata.labels[{P}warn-version]"]
    assert (await ns(api, "good", audit="baseline")).status == 201
    reply = await relabel(api, "good", audit="everything")
    assert reply.status == 422
    assert reply.json()["message"] == (f'Namespace "good" is invalid: metadata.labels[{P}audit]: Invalid value: '
                                       '"everything": must be one of privileged, baseline, restricted')


async def test_namespace_already_invalid_may_be_updated(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    res = next(r for r in api.registry.table.resources if r.group == "" and r.resource == "namespaces")
    # stored before the labels were checked (no admission on the registry's own writes)
    await api.registry.create(res, "", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": "legacy", "labels": {P + "enforce": "strict"}}},
                              WriteOptions())
    got = (await api.request("GET", "/api/v1/namespaces/legacy")).json()
    got["metadata"]["labels"]["team"] = "a"
    reply = await api.request("PUT", "/api/v1/namespaces/legacy", got)
    assert reply.status == 200, reply.body  # the same errors as before: allowed
    # its pods are held to restricted (an invalid enforce level fails closed)
    reply = await api.create("/api/v1/namespaces/legacy/pods", pod("p"))
    assert reply.status == 403
    assert 'violates PodSecurity "restricted:latest"' in reply.json()["message"]
    # another invalid value changes the errors: refused
    reply = await relabel(api, "legacy", enforce="stricter")
    assert reply.status == 422


async def test_pod_controllers_warn_but_are_not_refused(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    await ns(api, "w", enforce="restricted", warn="baseline")
    template = {"metadata": {"labels": {"app": "a"}},
                "spec": {"hostPID": True, "containers": [{"name": "c", "image": "x",
                                                           "securityContext": {"privileged": True}}]}}
    expected = ('would violate PodSecurity "baseline:latest": host namespaces (hostPID=true), privileged '
                '(container "c" must not set securityContext.privileged=true)')
    bodies = {
        "/apis/apps/v1/namespaces/w/deployments": {"apiVersion": "apps/v1", "kind": "Deployment",
                                                   "metadata": {"name": "d"},
                                                   "spec": {"selector": {"matchLabels": {"app": "a"}},
                                                            "template": template}},
        "/apis/apps/v1/namespaces/w/daemonsets": {"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                  "metadata": {"name": "ds"},
                                                  "spec": {"selector": {"matchLabels": {"app": "a"}},
                                                           "template": template}},
        "/apis/batch/v1/namespaces/w/cronjobs": {
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                "metadata": {}, "spec": {**template["spec"], "restartPolicy": "Never"}}}}}},
        "/api/v1/namespaces/w/replicationcontrollers": {"apiVersion": "v1", "kind": "ReplicationController",
                                                        "metadata": {"name": "rc"},
                                                        "spec": {"selector": {"app": "a"}, "template": template}},
        "/apis/batch/v1/namespaces/w/jobs": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                                             "spec": {"template": {"metadata": {},
                                                                   "spec": {**template["spec"],
                                                                            "restartPolicy": "Never"}}}},
    }
    for path, body in bodies.items():
        reply = await api.create(path, body)
        assert reply.status == 201, (path, reply.body)
        assert warnings(reply) == [expected], path
    # an update of the deployment is evaluated again
    got = (await api.request("GET", "/apis/apps/v1/namespaces/w/deployments/d")).json()
    got["spec"]["replicas"] = 3
    reply = await api.request("PUT", "/apis/apps/v1/namespaces/w/deployments/d", got)
    assert reply.status == 200 and warnings(reply) == [expected]
    # subresources (scale) are not
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d", "namespace": "w"},
             "spec": {"replicas": 1}}
    reply = await api.request("PUT", "/apis/apps/v1/namespaces/w/deployments/d/scale", scale)
    assert reply.status == 200, reply.body
    assert warnings(reply) == []
    # a namespace with privileged audit and warn: no evaluation of templates
    await ns(api, "quiet", enforce="restricted", warn="privileged")
    path = "/apis/apps/v1/namespaces/quiet/deployments"
    body = dict(bodies["/apis/apps/v1/namespaces/w/deployments"])
    reply = await api.create(path, body)
    assert reply.status == 201 and warnings(reply) == []


async def test_pod_updates_only_evaluated_when_images_change(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    await ns(api, "u")
    assert (await api.create("/api/v1/namespaces/u/pods", pod("p", sc={"privileged": True}))).status == 201
    assert (await relabel(api, "u", enforce="baseline")).status == 200
    got = (await api.request("GET", "/api/v1/namespaces/u/pods/p")).json()
    got["metadata"]["labels"] = {"x": "y"}
    reply = await api.request("PUT", "/api/v1/namespaces/u/pods/p", got)
    assert reply.status == 200, reply.body  # nothing PodSecurity looks at changed
    got = reply.json()
    got["spec"]["containers"][0]["image"] = "nginx:2"
    reply = await api.request("PUT", "/api/v1/namespaces/u/pods/p", got)
    assert reply.status == 403
    assert reply.json()["message"] == ('pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged '
                                       '(container "c" must not set securityContext.privileged=true)')
    # the status subresource is never evaluated
    status = (await api.request("GET", "/api/v1/namespaces/u/pods/p")).json()
    status["status"] = {"phase": "Running"}
    reply = await api.request("PUT", "/api/v1/namespaces/u/pods/p/status", status)
    assert reply.status == 200, reply.body


async def test_tightening_enforce_warns_about_existing_pods(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    await ns(api, "t")
    for name, body in (("zeta", pod("zeta", sc={"privileged": True})),
                       ("alpha", pod("alpha", sc={"privileged": True})),
                       ("beta", pod("beta", sc={"privileged": True})),
                       ("net", pod("net", hostNetwork=True)),
                       ("fine", pod("fine"))):
        assert (await api.create("/api/v1/namespaces/t/pods", body)).status == 201, name
    reply = await relabel(api, "t", enforce="baseline")
    assert reply.status == 200
    assert warnings(reply) == [
        'existing pods in namespace "t" violate the new PodSecurity enforce level "baseline:latest"',
        "alpha (and 2 other pods): privileged",
        "net: host namespaces",
    ]
    # to restricted: every pod fails, on reasons (not details)
    reply = await relabel(api, "t", enforce="restricted")
    assert warnings(reply) == [
        'existing pods in namespace "t" violate the new PodSecurity enforce level "restricted:latest"',
        "alpha (and 2 other pods): privileged, allowPrivilegeEscalation != false, unrestricted capabilities, "
        "runAsNonRoot != true, seccompProfile",
        "fine: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
        "net: host namespaces, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, "
        "seccompProfile",
    ]
    # relaxing, keeping, or privileged: no evaluation
    assert warnings(await relabel(api, "t", enforce="baseline")) == []
    assert warnings(await relabel(api, "t", audit="restricted")) == []
    assert warnings(await relabel(api, "t", enforce="privileged")) == []
    # a new version at the same level is evaluated
    assert warnings(await relabel(api, "t", enforce="baseline", enforce_version="v1.30"))[0] == (
        'existing pods in namespace "t" violate the new PodSecurity enforce level "baseline:v1.30"')


async def test_existing_pods_limit_and_controllers_first(nursery: trio.Nursery) -> None:
    api = await start(nursery)
    await ns(api, "many")
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-1", "controller": True}
    for i in range(4):
        body = pod(f"rs-{i}", sc={"privileged": True})
        body["metadata"]["ownerReferences"] = [owner]
        assert (await api.create("/api/v1/namespaces/many/pods", body)).status == 201
    assert (await api.create("/api/v1/namespaces/many/pods", pod("solo", hostIPC=True))).status == 201
    plugin = next(p for p in api.app.handlers.admission.plugins if p.name == "PodSecurity")
    plugin.admission.max_pods_to_check = 2
    reply = await relabel(api, "many", enforce="baseline")
    # one pod of the replica set first, then the pods without a controller: both kinds of violation seen
    assert warnings(reply) == [
        "new PodSecurity enforce level only checked against the first 2 of 5 existing pods",
        'existing pods in namespace "many" violate the new PodSecurity enforce level "baseline:latest"',
        "rs-0: privileged",
        "solo: host namespaces",
    ]


async def test_configuration_defaults_and_exemptions(nursery: trio.Nursery, tmp_path: Path) -> None:
    api = await start(nursery, tmp_path, psa_config(
        defaults={"enforce": "baseline", "audit": "restricted", "warn": "restricted"},
        exemptions={"namespaces": ["free"], "usernames": ["kapi-admin-not"], "runtimeClasses": ["kata"]}))
    await ns(api, "plain")
    reply = await api.create("/api/v1/namespaces/plain/pods", pod("p", sc={"privileged": True}))
    assert reply.status == 403
    assert reply.json()["message"].startswith(
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged')
    reply = await api.create("/api/v1/namespaces/plain/pods", pod("q"))
    assert reply.status == 201
    assert warnings(reply) == [f'would violate PodSecurity "restricted:latest": {RESTRICTED_LATEST_DETAIL}']
    # a label says otherwise
    await ns(api, "open", enforce="privileged", warn="privileged")
    reply = await api.create("/api/v1/namespaces/open/pods", pod("p", sc={"privileged": True}))
    assert reply.status == 201 and warnings(reply) == []
    # an exempt runtime class (the RuntimeClass plugin wants it to exist)
    rc = await api.create("/apis/node.k8s.io/v1/runtimeclasses", {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata"})
    assert rc.status == 201, rc.body
    reply = await api.create("/api/v1/namespaces/plain/pods", pod("k", sc={"privileged": True},
                                                                  runtimeClassName="kata"))
    assert reply.status == 201, reply.body
    assert warnings(reply) == []
    # an exempt namespace
    reply = await ns(api, "free", warn="baseline")
    assert reply.status == 201
    assert warnings(reply) == ['namespace "free" is exempt from Pod Security, and the policy '
                               '(warn=baseline:latest) will be ignored']
    reply = await api.create("/api/v1/namespaces/free/pods", pod("p", sc={"privileged": True}))
    assert reply.status == 201 and warnings(reply) == []
    reply = await relabel(api, "free", enforce="restricted")
    assert reply.status == 200
    assert warnings(reply) == ['namespace "free" is exempt from Pod Security, and the policy '
                               '(enforce=restricted:latest, warn=baseline:latest) will be ignored']


async def test_exempt_user(nursery: trio.Nursery, tmp_path: Path) -> None:
    api = await start(nursery, tmp_path, psa_config(exemptions={"usernames": ["kapi-admin"]}))
    await ns(api, "r", enforce="restricted")
    reply = await api.create("/api/v1/namespaces/r/pods", pod("p", sc={"privileged": True}))
    assert reply.status == 201, reply.body


@pytest.mark.parametrize(("psa", "message"), [
    (psa_config(defaults={"enforce": "strict"}),
     "PodSecurity configuration error: enforce: must be one of privileged, baseline, restricted"),
    (psa_config(exemptions={"usernames": [""]}),
     'PodSecurity invalid: exemptions.usernames[0]: Invalid value: "": username must not be empty'),
    ({"apiVersion": "pod-security.admission.config.k8s.io/v2", "kind": "PodSecurityConfiguration"},
     'no kind "PodSecurityConfiguration" is registered for version "pod-security.admission.config.k8s.io/v2"'),
])
async def test_bad_configuration_stops_the_server(nursery: trio.Nursery, tmp_path: Path, psa: Obj,
                                                  message: str) -> None:
    with pytest.raises(FatalError) as exc:
        await start(nursery, tmp_path, psa)
    assert message in str(exc.value)


async def test_restricted_pod_with_the_service_account_volume(nursery: trio.Nursery) -> None:
    """With every default plugin: the projected kube-api-access volume ServiceAccount adds is one
    restricted allows."""
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)), registry, TOKEN,
                    Health(ready=True))
    namespaces = NamespaceController(registry)
    await bootstrap(registry, namespaces)
    await nursery.start(namespaces.run)
    api = Api(app, registry)
    await ns(api, "sa", enforce="restricted")
    for _ in range(300):
        if (await api.request("GET", "/api/v1/namespaces/sa/serviceaccounts/default")).status == 200:
            break
        await trio.sleep(0.01)
    reply = await api.create("/api/v1/namespaces/sa/pods", pod("p", sc=RESTRICTED_SC))
    assert reply.status == 201, reply.body
    assert any("projected" in v for v in reply.json()["spec"].get("volumes", []))
    reply = await api.create("/api/v1/namespaces/sa/pods", pod("h", sc=RESTRICTED_SC,
                                                               volumes=[{"name": "h", "hostPath": {"path": "/"}}]))
    assert reply.status == 403
    assert reply.json()["message"] == ('pods "h" is forbidden: violates PodSecurity "restricted:latest": restricted '
                                       'volume types (volume "h" uses restricted volume type "hostPath")')
