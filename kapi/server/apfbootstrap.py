"""API Priority and Fairness's bootstrap configuration kept in the cluster, as kube-apiserver's
``priority-and-fairness-config-producer`` post-start hook keeps it (``pkg/registry/flowcontrol/ensurer``
and ``rest/storage_flowcontrol.go``).

One pass: the suggested PriorityLevelConfigurations then FlowSchemas, the mandatory ones likewise,
then the bootstrap objects no longer in the bootstrap set. Per object:

- missing: created (always, mandatory or suggested, whatever was deleted);
- mandatory: its spec restored and ``apf.kubernetes.io/autoupdate-spec`` set to ``"true"`` whatever
  the operator wrote (but the ``exempt`` level's ``spec.exempt``, which is the operator's);
- suggested: updated only while auto-update is on: the annotation ``"true"``, or, without a boolean
  there, generation 1 (never changed since created); the annotation is then written to say which;
- in the cluster with ``autoupdate-spec: "true"`` but not in the bootstrap set: deleted.

The first pass runs at start, before the first request is served (kube retries it every second for
up to five minutes); then one pass a minute.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio

from kapi import errors
from kapi.apis import flowcontrolbootstrap as bootstrap
from kapi.apis.flowcontrol import FLOW_SCHEMAS, PRIORITY_LEVEL_CONFIGURATIONS
from kapi.controllers.writes import Writer, Writes
from kapi.object.defaults.flowcontrol import default_flow_schema, default_priority_level_configuration
from kapi.object.listopts import ListOptions
from kapi.registry.deletion import DeleteOptions
from kapi.registry.resources import Resource
from kapi.registry.store import Registry, WriteOptions

__all__ = ["BootstrapConfiguration", "ensure_apf_bootstrap", "keep_apf_bootstrap"]

log = logging.getLogger("kapi")
Obj = dict[str, Any]

FIELD_MANAGER = "api-priority-and-fairness-config-producer-v1"
ANNOTATION = bootstrap.AUTO_UPDATE_ANNOTATION
INTERVAL_S = 60.0  # kube's periodic pass
_FIRST_RETRY_S = 1.0  # and its retry of the first pass
_FIRST_DEADLINE_S = 300.0
_WRITE = WriteOptions(field_manager=FIELD_MANAGER)


@dataclass(frozen=True, slots=True)
class BootstrapConfiguration:
    """The objects a pass keeps (kube 1.33's unless a test says otherwise)."""

    mandatory_priority_levels: list[Obj] = field(default_factory=bootstrap.mandatory_priority_level_configurations)
    mandatory_flow_schemas: list[Obj] = field(default_factory=bootstrap.mandatory_flow_schemas)
    suggested_priority_levels: list[Obj] = field(default_factory=bootstrap.suggested_priority_level_configurations)
    suggested_flow_schemas: list[Obj] = field(default_factory=bootstrap.suggested_flow_schemas)


def _parse_bool(value: object) -> bool | None:
    """Go's strconv.ParseBool; None when ``value`` is not one of its spellings."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def _annotations(obj: Obj) -> dict[str, Any]:
    md = obj.get("metadata") or {}
    annotations = md.get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def _should_update_spec(current: Obj) -> bool:
    """shouldUpdateSpec: the annotation's boolean, else whether the spec is still as created (generation 1)."""
    parsed = _parse_bool(_annotations(current).get(ANNOTATION))
    if parsed is not None:
        return parsed
    return (current.get("metadata") or {}).get("generation") == 1


def _should_update_annotation(current: Obj, desired: bool) -> bool:
    return _parse_bool(_annotations(current).get(ANNOTATION)) is not desired


def _pruned(value: object) -> object:
    """``value`` without empty members: absent, null, "", [] and {} compare equal (Semantic.DeepEqual)."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", [], {}, False)}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class _Kind:
    res: Resource
    default: Callable[[Obj, Obj | None], None]

    def wanted_spec(self, boot: Obj, current: Obj) -> Obj:
        """The bootstrap spec as stored (defaulted); the exempt level keeps the cluster's ``spec.exempt``."""
        wanted = copy.deepcopy(boot)
        self.default(wanted, None)
        spec: Obj = wanted["spec"]
        if self.res is PRIORITY_LEVEL_CONFIGURATIONS and boot["metadata"]["name"] == bootstrap.PL_EXEMPT:
            have = (current.get("spec") or {}).get("exempt")
            if isinstance(have, dict) and isinstance(spec.get("exempt"), dict):
                spec["exempt"] = copy.deepcopy(have)
        return spec


_PLC = _Kind(PRIORITY_LEVEL_CONFIGURATIONS, default_priority_level_configuration)
_FS = _Kind(FLOW_SCHEMAS, default_flow_schema)


def revised(current: Obj, boot: Obj, kind: _Kind, *, mandatory: bool) -> Obj | None:
    """kube's ensure strategy (ShouldUpdate / ReviseIfNeeded): the object to write, None when nothing to do."""
    auto_update = mandatory or _should_update_spec(current)
    update_annotation = _should_update_annotation(current, auto_update)
    wanted = kind.wanted_spec(boot, current) if auto_update else None
    spec_changed = wanted is not None and _pruned(wanted) != _pruned(current.get("spec") or {})
    if not (update_annotation or spec_changed):
        return None
    out = copy.deepcopy(current)
    if update_annotation:
        md = out.setdefault("metadata", {})
        annotations = md.get("annotations")
        if not isinstance(annotations, dict):
            annotations = md["annotations"] = {}
        annotations[ANNOTATION] = "true" if auto_update else "false"
    if spec_changed:
        out["spec"] = wanted
    return out


async def _get(registry: Registry, res: Resource, name: str) -> Obj | None:
    try:
        return await registry.get(res, "", name)
    except errors.NotFound:
        return None


async def _ensure_one(registry: Registry, writer: Writer, kind: _Kind, boot: Obj, *, mandatory: bool) -> str:
    """EnsureConfiguration: create if missing, else revise; returns what was done."""
    name = boot["metadata"]["name"]
    while True:
        current = await _get(registry, kind.res, name)
        if current is not None:
            break
        try:
            await writer.create(kind.res, "", copy.deepcopy(boot), _WRITE)
            log.debug("APF bootstrap: created %s %s", kind.res.kind, name)
            return "create"
        except errors.AlreadyExists:
            continue  # created under us: revise that one
    wanted = revised(current, boot, kind, mandatory=mandatory)
    if wanted is None:
        return "none"
    try:
        await writer.update(kind.res, "", name, wanted, _WRITE)
    except (errors.Conflict, errors.NotFound):
        return "retry"  # changed or gone under us: the next pass sees it (kube: "will retry later")
    log.debug("APF bootstrap: updated %s %s", kind.res.kind, name)
    return "update"


async def _remove_unwanted(registry: Registry, writer: Writer, kind: _Kind, boots: list[Obj]) -> list[str]:
    """RemoveUnwantedObjects: delete what carries ``autoupdate-spec: "true"`` but is no bootstrap object."""
    wanted = {b["metadata"]["name"] for b in boots}
    page = await registry.list(kind.res, "", ListOptions())
    removed = []
    for item in page.items:
        obj = orjson.loads(item.data)
        name = str((obj.get("metadata") or {}).get("name") or "")
        if name in wanted or ANNOTATION not in _annotations(obj):
            continue  # a bootstrap object, or the operator's own
        if _parse_bool(_annotations(obj).get(ANNOTATION)) is not True:
            continue  # kept by the operator (or a malformed annotation: left for a human)
        try:
            await writer.delete(kind.res, "", name, DeleteOptions())
        except errors.NotFound:
            pass
        log.debug("APF bootstrap: deleted %s %s (no longer a bootstrap object)", kind.res.kind, name)
        removed.append(name)
    return removed


async def ensure_apf_bootstrap(registry: Registry, config: BootstrapConfiguration | None = None,
                              writer: Writer | None = None) -> dict[str, str]:
    """One pass of kube's ensure(): suggested, then mandatory, then removal of dangling bootstrap
    objects. Returns what was done per ``kind/name`` (create, update, none, retry, delete).

    Raises:
        StatusError: a write failed for a reason other than a race (the caller retries the pass).
    """
    config = config or BootstrapConfiguration()
    writer = writer or Writes(registry).apiserver()  # kube's hook writes through the loopback client
    done: dict[str, str] = {}
    for mandatory, plcs, fss in ((False, config.suggested_priority_levels, config.suggested_flow_schemas),
                                 (True, config.mandatory_priority_levels, config.mandatory_flow_schemas)):
        for kind, boots in ((_PLC, plcs), (_FS, fss)):
            for boot in boots:
                done[f"{kind.res.kind}/{boot['metadata']['name']}"] = await _ensure_one(
                    registry, writer, kind, boot, mandatory=mandatory)
    for kind, boots in ((_FS, config.mandatory_flow_schemas + config.suggested_flow_schemas),
                        (_PLC, config.mandatory_priority_levels + config.suggested_priority_levels)):
        for name in await _remove_unwanted(registry, writer, kind, boots):
            done[f"{kind.res.kind}/{name}"] = "delete"
    return done


async def keep_apf_bootstrap(registry: Registry, config: BootstrapConfiguration | None = None, *,
                             interval_s: float = INTERVAL_S, writer: Writer | None = None,
                             task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """The post-start hook: the first pass (retried each second, for up to five minutes) before
    ``started()``, then one pass every ``interval_s``; a failed pass is logged and tried again."""
    with trio.move_on_after(_FIRST_DEADLINE_S):
        while True:
            try:
                await ensure_apf_bootstrap(registry, config, writer)
                break
            except errors.StatusError as err:
                log.error("APF bootstrap ensurer ran into an error, will retry: %s", err.message)
            await trio.sleep(_FIRST_RETRY_S)
    task_status.started()
    while True:
        await trio.sleep(interval_s)
        try:
            await ensure_apf_bootstrap(registry, config, writer)
        except errors.StatusError as err:
            log.error("APF bootstrap ensurer ran into an error, will retry: %s", err.message)
