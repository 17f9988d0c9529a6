"""The APIService objects of what kapi serves: kube's autoregister controller (one Local APIService per
built-in group/version, labelled ``kube-aggregator.kubernetes.io/automanaged: onstart``, with the
priorities of kube-apiserver's table) and its crdregistration controller (one per custom resource
group/version, priority 1000/100, labelled ``automanaged: "true"`` and removed when no longer served).

Each is ``Available`` (reason ``Local``, as kube's availability controller says of local services).
``keep_api_services`` syncs at start and whenever the resource table changes. Its writes are the
apiserver's loopback client's (``system:apiserver``), admitted and audited as kube's are.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import orjson
import trio

from kapi import errors
from kapi.controllers.writes import Writer, Writes
from kapi.object import meta
from kapi.object.listopts import ListOptions
from kapi.registry.deletion import DeleteOptions
from kapi.registry.store import Registry, WriteOptions

__all__ = ["PRIORITIES", "desired_api_services", "keep_api_services", "sync_api_services"]

log = logging.getLogger("kapi.apiservices")
Obj = dict[str, Any]
GROUP: Final = "apiregistration.k8s.io"
AUTOMANAGED: Final = "kube-aggregator.kubernetes.io/automanaged"
FIELD_MANAGER: Final = "kube-apiserver"

# kube-apiserver's apiVersionPriorities (cmd/kube-apiserver/app/aggregator.go and
# controlplane/apiserver's DefaultGenericAPIServicePriorities): (groupPriorityMinimum, versionPriority).
PRIORITIES: Final[dict[tuple[str, str], tuple[int, int]]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authentication.k8s.io", "v1beta1"): (17700, 9),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1beta1"): (16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1"): (16700, 9),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}
CRD_PRIORITY: Final = (1000, 100)  # crdregistration: "CRDs should have relatively low priority"


def desired_api_services(registry: Registry) -> dict[str, Obj]:
    """name -> the APIService (spec and labels) every served group/version should have."""
    out: dict[str, Obj] = {}
    for group, versions in registry.table.groups():
        for version in versions:
            builtin = (group, version) in PRIORITIES
            gpm, vp = PRIORITIES.get((group, version), CRD_PRIORITY)
            name = f"{version}.{group}"
            out[name] = {"apiVersion": f"{GROUP}/v1", "kind": "APIService",
                         "metadata": {"name": name, "labels": {AUTOMANAGED: "onstart" if builtin else "true"}},
                         "spec": {"group": group, "version": version, "groupPriorityMinimum": gpm,
                                  "versionPriority": vp}}
    return out


def _available(obj: Obj) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Available":
            return cond.get("status") == "True" and cond.get("reason") == "Local"
    return False


async def sync_api_services(registry: Registry, writer: Writer | None = None) -> None:
    """Create, correct or remove the automanaged APIServices; mark the local ones Available."""
    res = registry.table.get(GROUP, "v1", "apiservices")
    if res is None:
        return
    writer = writer or Writes(registry).apiserver()
    opts = WriteOptions(field_manager=FIELD_MANAGER)
    want = desired_api_services(registry)
    page = await registry.list(res, "", ListOptions())
    have = {o["metadata"]["name"]: o for o in (orjson.loads(item.data) for item in page.items)}
    for name, obj in want.items():
        current = have.get(name)
        try:
            if current is None:
                current = await writer.create(res, "", obj, opts)
            elif (current["metadata"].get("labels") or {}).get(AUTOMANAGED) and current["spec"] != obj["spec"]:
                current["spec"] = obj["spec"]  # an automanaged one is kept as kapi serves it
                current, _ = await writer.update(res, "", name, current, opts)
            if current["spec"].get("service") is None and not _available(current):
                current["status"] = {"conditions": [{
                    "type": "Available", "status": "True", "lastTransitionTime": meta.now_rfc3339(),
                    "reason": "Local", "message": "Local APIServices are always available"}]}
                await writer.update(res, "", name, current, opts, "status")
        except errors.StatusError as err:
            log.warning("apiservice %s: %s", name, err.message)
    for name, obj in have.items():
        if name not in want and (obj["metadata"].get("labels") or {}).get(AUTOMANAGED) == "true":
            try:
                await writer.delete(res, "", name, DeleteOptions())
            except errors.NotFound:
                pass
            except errors.StatusError as err:
                log.warning("apiservice %s: %s", name, err.message)


async def keep_api_services(registry: Registry, writer: Writer | None = None, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                            ) -> None:
    """Sync now, then after every change of the resource table (CRDs served or removed)."""
    changed = trio.Event()

    def on_change(_change: str, _res: Any) -> None:
        changed.set()

    unsubscribe = registry.table.subscribe(on_change)
    try:
        await sync_api_services(registry, writer)
        task_status.started()
        while True:
            await changed.wait()
            changed = trio.Event()
            await trio.sleep(0.1)  # a CRD adds several versions at once
            await sync_api_services(registry, writer)
    finally:
        unsubscribe()
