"""The scale subresource: the autoscaling/v1 Scale view of a scalable object, read and written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kapi import errors
from kapi.registry.resources import Resource

if TYPE_CHECKING:
    from kapi.registry.store import Registry, WriteOptions

Obj = dict[str, Any]
SCALE_KIND = ("autoscaling", "v1", "Scale")  # what admission sees of a scale subresource write


async def get_scale(reg: Registry, res: Resource, namespace: str, name: str) -> Obj:
    return to_scale(res, await reg.get(res, namespace, name))


async def update_scale(reg: Registry, res: Resource, namespace: str, name: str, scale_mutate: Callable[[Obj], Obj],
                       opts: WriteOptions) -> Obj:
    def mutate(obj: Obj) -> Obj:
        scale = scale_mutate(to_scale(res, obj))
        smd = scale.get("metadata") or {}
        if smd.get("resourceVersion") and smd["resourceVersion"] != obj["metadata"]["resourceVersion"]:
            raise errors.conflict(res.resource, res.group, name, errors.OPTIMISTIC_LOCK_MSG)
        res.strategy.set_replicas(obj, replicas_of(scale, name))
        return obj

    return to_scale(res, await reg.guaranteed_update(res, namespace, name, mutate, opts, "scale"))


def replicas_of(scale: Obj, name: str) -> int:
    """A Scale's spec.replicas, checked (422 as kube's scale validation for a negative one)."""
    spec = scale.get("spec")
    replicas = spec.get("replicas", 0) if isinstance(spec, dict) else 0
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid("Scale", "autoscaling", name, [errors.Cause(
            "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
            "spec.replicas")])
    return replicas


def to_scale(res: Resource, obj: Obj) -> Obj:
    """The autoscaling/v1 Scale view of a scalable object (what counts as replicas is the strategy's)."""
    md = obj["metadata"]
    spec_replicas, status_replicas, selector = res.strategy.scale_of(obj)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in md},
        "spec": {"replicas": spec_replicas},
        "status": {"replicas": status_replicas, "selector": selector},
    }
