"""The server's own writes pass admission and audit as kube's controllers' requests do (issue 30, item 7):
a ValidatingAdmissionPolicy refuses the garbage collector's delete of a dependent, which stays while the
collector retries; a MutatingAdmissionPolicy sees the namespace controller's ServiceAccount; the audit log
holds the controllers' writes under their users; under an in-process ``serve()``, APF's FlowSchema status
write is the loopback client's server-side apply, refused by a policy as ``system:apiserver`` and tried again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import trio
import yaml

from kapi.api.app import Health
from kapi.config import Config
from kapi.controllers.garbagecollector import GarbageCollector
from kapi.controllers.namespace import NamespaceController
from kapi.controllers.writes import Writes
from kapi.registry.informer import Informers
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.serve import Server, build_app, serve
from kapi.apis import BUILTIN
from kapi.storage.memory import MemoryStorage
from tests.api.conftest import TOKEN, Api

Obj = dict[str, Any]
AR = "/apis/admissionregistration.k8s.io"
CMS = "/api/v1/namespaces/default/configmaps"
GC_USER = "system:serviceaccount:kube-system:generic-garbage-collector"


@pytest.fixture
async def audited(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[Api, Path]]:
    """An app with its admission, audit at Metadata to a file, and the controllers writing through both."""
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    log = tmp_path / "audit.log"
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",),
                           audit_policy_file=str(policy), audit_log_path=str(log)),
                    registry, TOKEN, Health(ready=True), informers)
    assert app.handlers.admission is not None and app.chain.audit is not None
    writes = Writes(registry, app.handlers.admission, app.chain.audit)
    namespaces = NamespaceController(registry, writes=writes)
    await nursery.start(informers.run)
    await nursery.start(app.handlers.admission.run)
    await nursery.start(app.chain.audit.run)
    await bootstrap(registry, namespaces, writes.apiserver())
    await nursery.start(namespaces.run)
    await nursery.start(GarbageCollector(registry, writes).run)
    yield Api(app, registry), log


def events(log: Path) -> list[Obj]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def wait_for(check: Any, what: str, tries: int = 1000) -> Any:
    for _ in range(tries):
        got = await check()
        if got:
            return got
        await trio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


KEEP_POLICY = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": "keep"},
               "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                                "operations": ["DELETE"],
                                                                "resources": ["configmaps"]}]},
                        "validations": [{"expression": "!has(oldObject.metadata.labels) || "
                                                       "!('keep' in oldObject.metadata.labels)",
                                         "messageExpression": "'kept, ' + request.userInfo.username"}]}}
KEEP_BINDING = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "keep"}, "spec": {"policyName": "keep", "validationActions": ["Deny"]}}


async def test_policy_refuses_the_collectors_delete_and_it_retries(audited: tuple[Api, Path]) -> None:
    api, log = audited
    assert (await api.create(f"{AR}/v1/validatingadmissionpolicies", KEEP_POLICY)).status == 201
    assert (await api.create(f"{AR}/v1/validatingadmissionpolicybindings", KEEP_BINDING)).status == 201
    probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "labels": {"keep": "1"}}}
    assert (await api.create(CMS, probe)).status == 201

    async def policy_active() -> bool:  # the policy has reached the informers
        return (await api.request("DELETE", f"{CMS}/probe?dryRun=All")).status == 422

    await wait_for(policy_active, "the policy")
    owner = (await api.create(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})).json()
    dep = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "dep", "labels": {"keep": "1"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]}}
    assert (await api.create(CMS, dep)).status == 201
    assert (await api.request("DELETE", f"{CMS}/owner")).status == 200

    def refused() -> list[Obj]:
        return [e for e in events(log) if e["stage"] == "ResponseComplete" and e["verb"] == "delete"
                and e["user"]["username"] == GC_USER and (e.get("objectRef") or {}).get("name") == "dep"
                and e["responseStatus"]["code"] == 422]

    async def refused_twice() -> bool:  # refused, and tried again
        return len(refused()) >= 2

    await wait_for(refused_twice, "the collector's refused deletes")
    assert (await api.request("GET", f"{CMS}/dep")).status == 200
    assert f"kept, {GC_USER}" in refused()[0]["responseStatus"]["message"]
    assert refused()[0]["user"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                              "system:authenticated"]
    assert refused()[0]["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "dep",
                                         "apiVersion": "v1"}

    # The policy gone, the collector's next try deletes the dependent.
    assert (await api.request("DELETE", f"{AR}/v1/validatingadmissionpolicybindings/keep")).status == 200

    async def gone() -> bool:
        return (await api.request("GET", f"{CMS}/dep")).status == 404

    await wait_for(gone, "the dependent's deletion", tries=6000)

    async def deleted_event() -> bool:
        return any(e["stage"] == "ResponseComplete" and e["verb"] == "delete" and e["user"]["username"] == GC_USER
                   and e["objectRef"].get("name") == "dep" and e["responseStatus"]["code"] == 200 for e in events(log))

    await wait_for(deleted_event, "the audit event of the delete")


MAP = {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
       "metadata": {"name": "mark"},
       "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                        "operations": ["CREATE"], "resources": ["serviceaccounts"]}]},
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": "Object{metadata: Object.metadata{labels: {\"made-by\": request.userInfo.username == "
                                  "'system:serviceaccount:kube-system:service-account-controller' ? 'sa-controller' "
                                  ": 'other'}}}"}}]}}
MAP_BINDING = {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
               "metadata": {"name": "mark"}, "spec": {"policyName": "mark"}}


async def test_mutating_policy_sees_the_namespace_controllers_writes(audited: tuple[Api, Path]) -> None:
    api, log = audited
    assert (await api.create(f"{AR}/v1beta1/mutatingadmissionpolicies", MAP)).status == 201
    assert (await api.create(f"{AR}/v1beta1/mutatingadmissionpolicybindings", MAP_BINDING)).status == 201
    probe = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "probe"}}

    async def policy_active() -> bool:
        r = await api.request("POST", "/api/v1/namespaces/default/serviceaccounts?dryRun=All", probe)
        return bool(r.status == 201 and (r.json()["metadata"].get("labels") or {}).get("made-by"))

    await wait_for(policy_active, "the mutating policy")
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "marked"}}
    assert (await api.create("/api/v1/namespaces", ns)).status == 201

    async def default_sa() -> Obj | None:
        r = await api.request("GET", "/api/v1/namespaces/marked/serviceaccounts/default")
        return r.json() if r.status == 200 else None

    sa = await wait_for(default_sa, "the default ServiceAccount")
    assert sa["metadata"]["labels"] == {"made-by": "sa-controller"}

    # The namespace's deletion: the controller empties it as namespace-controller, audited.
    assert (await api.request("DELETE", "/api/v1/namespaces/marked")).status == 200

    async def ns_gone() -> bool:
        return (await api.request("GET", "/api/v1/namespaces/marked")).status == 404

    await wait_for(ns_gone, "the namespace's removal", tries=3000)
    def verbs() -> set[tuple[str, str, str]]:
        return {(e["verb"], e["objectRef"].get("resource", ""), e["objectRef"].get("subresource", ""))
                for e in events(log) if e["stage"] == "ResponseComplete"
                and e["user"]["username"] == "system:serviceaccount:kube-system:namespace-controller"
                and "marked" in (e["objectRef"].get("namespace"), e["objectRef"].get("name"))}

    async def finalized() -> bool:  # the audit log is written behind the requests
        return ("update", "namespaces", "finalize") in verbs()

    await wait_for(finalized, "the audit event of the finalize")
    assert ("deletecollection", "serviceaccounts", "") in verbs()
    created = [e for e in events(log) if e["stage"] == "ResponseComplete" and e["verb"] == "create"
               and e["objectRef"].get("namespace") == "marked" and e["objectRef"]["resource"] == "serviceaccounts"]
    assert [e["user"]["username"] for e in created] == ["system:serviceaccount:kube-system:service-account-controller"]
    assert created[0]["userAgent"].startswith("kube-controller-manager/")


FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
APF_MANAGER = "api-priority-and-fairness-config-consumer-v1"


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[tuple[Api, Path, str]]:
    """A whole in-process server (``serve()``: its wiring of the writers) with audit at Metadata to a file;
    the API called in process with the admin token."""
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    log = tmp_path / "audit.log"
    config = Config(data_dir=str(tmp_path / "data"), storage_backend="memory", secure_port=0, watch_cache=False,
                    audit_policy_file=str(policy), audit_log_path=str(log))
    server: Server = await nursery.start(serve, config)
    kubeconfig = yaml.safe_load((tmp_path / "data" / "admin.kubeconfig").read_text())
    yield Api(server.app, server.registry), log, kubeconfig["users"][0]["user"]["token"]


HOLD_POLICY = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": "hold-status"},
               "spec": {"matchConstraints": {"resourceRules": [{
                   "apiGroups": ["flowcontrol.apiserver.k8s.io"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                   "resources": ["flowschemas/status"]}]},
                        "validations": [{"expression": "!has(object.metadata.labels) || "
                                                       "!('hold' in object.metadata.labels)",
                                         "messageExpression": "'held, ' + request.userInfo.username"}]}}
HOLD_BINDING = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "hold-status"}, "spec": {"policyName": "hold-status",
                                                              "validationActions": ["Deny"]}}


def flow_schema(name: str, level: str) -> Obj:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name, "labels": {"hold": "1"}},
            "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 9000,
                     "rules": [{"subjects": [{"kind": "User", "user": {"name": "nobody"}}],
                                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/nowhere"]}]}]}}


def dangling(obj: Obj) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == "Dangling"), None)


async def test_apf_status_write_is_the_apiservers_admitted_and_audited_apply(
        served: tuple[Api, Path, str]) -> None:
    """kube's apf_controller writes a FlowSchema's Dangling condition through the loopback client: a
    policy sees (and refuses) it as system:apiserver, the refusal is audited and the write tried again;
    once let through it is a server-side apply (a patch of the status) by the config consumer."""
    api, log, token = served

    async def get(name: str) -> Obj:
        reply = await api.request("GET", f"{FC}/flowschemas/{name}", token=token)
        assert reply.status == 200
        return reply.json()

    # A held FlowSchema whose status is right before the policy exists (a probe of the policy).
    assert (await api.create(f"{FC}/flowschemas", flow_schema("probe", "global-default"), token=token)).status == 201

    async def probe_found() -> bool:
        return (dangling(await get("probe")) or {}).get("reason") == "Found"

    await wait_for(probe_found, "the probe's Dangling=False condition", tries=3000)
    assert (await api.create(f"{AR}/v1/validatingadmissionpolicies", HOLD_POLICY, token=token)).status == 201
    assert (await api.create(f"{AR}/v1/validatingadmissionpolicybindings", HOLD_BINDING, token=token)).status == 201

    async def policy_active() -> bool:
        patch = {"status": {"conditions": [{"type": "Probe", "status": "True"}]}}
        reply = await api.request("PATCH", f"{FC}/flowschemas/probe/status?dryRun=All", patch, token=token,
                                  content_type="application/merge-patch+json")
        return reply.status == 422

    await wait_for(policy_active, "the policy")

    # A dangling FlowSchema: the controller's writes of its condition are refused, audited, retried.
    assert (await api.create(f"{FC}/flowschemas", flow_schema("orphan", "missing"), token=token)).status == 201

    def writes(code: int) -> list[Obj]:
        return [e for e in events(log) if e["stage"] == "ResponseComplete" and e["verb"] == "patch"
                and e["user"]["username"] == "system:apiserver" and e["objectRef"].get("name") == "orphan"
                and e["responseStatus"]["code"] == code]

    async def refused_twice() -> bool:
        return len(writes(422)) >= 2

    await wait_for(refused_twice, "the controller's refused status writes", tries=3000)
    assert dangling(await get("orphan")) is None
    refused = writes(422)[0]
    assert "held, system:apiserver" in refused["responseStatus"]["message"]
    assert refused["objectRef"] == {"resource": "flowschemas", "name": "orphan",
                                    "apiGroup": "flowcontrol.apiserver.k8s.io", "apiVersion": "v1",
                                    "subresource": "status"}
    assert refused["user"]["groups"] == ["system:authenticated", "system:masters"]
    assert refused["userAgent"].startswith("kube-apiserver/")
    assert refused["requestURI"] == f"{FC}/flowschemas/orphan/status"

    # The policy gone, a later try writes the condition (kube's per-minute bound may hold it up to 74 s).
    assert (await api.request("DELETE", f"{AR}/v1/validatingadmissionpolicybindings/hold-status",
                              token=token)).status == 200

    async def written() -> Obj | None:
        obj = await get("orphan")
        return obj if dangling(obj) else None

    obj = await wait_for(written, "the Dangling condition", tries=9000)
    cond = dangling(obj)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "NotFound")
    assert [(m["manager"], m["operation"], m.get("subresource")) for m in obj["metadata"]["managedFields"]
            if m["manager"] == APF_MANAGER] == [(APF_MANAGER, "Apply", "status")]

    async def audited_write() -> bool:  # the audit log is written behind the requests
        return bool(writes(200))

    await wait_for(audited_write, "the audit event of the status write")
