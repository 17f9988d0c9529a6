"""AlwaysPullImages (kube's plugin/pkg/admission/alwayspullimages), off by default.

Every container, init container and ephemeral container of a pod created, or updated with an image
it did not have, gets ``imagePullPolicy: Always``, so that a node pulls (and checks the pull
secret of) each image rather than running one another pod pulled. Validation refuses a pod a later
mutation left with another policy.
"""

from __future__ import annotations

from typing import Any, Iterator

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin, forbidden
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]
_KEYS = ("initContainers", "containers", "ephemeralContainers")


def _containers(pod: object) -> Iterator[tuple[str, Obj]]:
    """(path, container) for each container of the pod (kube's VisitContainersWithPath order)."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return
    for key in _KEYS:
        ctrs = spec.get(key)
        if isinstance(ctrs, list):
            for i, ctr in enumerate(ctrs):
                if isinstance(ctr, dict):
                    yield f"spec.{key}[{i}]", ctr


def _no_new_images(a: Attributes) -> bool:
    if a.operation != UPDATE or not isinstance(a.old, dict):
        return False
    old = {c.get("image") for _, c in _containers(a.old)}
    return all(c.get("image") in old for _, c in _containers(a.obj))


class AlwaysPullImages(Plugin):
    name = "AlwaysPullImages"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"),))

    def _ignored(self, a: Attributes) -> bool:
        return bool(a.subresource) or not isinstance(a.obj, dict) or _no_new_images(a)

    async def admit(self, a: Attributes) -> None:
        if self._ignored(a):
            return
        for _, ctr in _containers(a.obj):
            ctr["imagePullPolicy"] = "Always"

    async def validate(self, a: Attributes) -> None:
        if self._ignored(a):
            return
        reasons = [f'{path}.imagePullPolicy: Unsupported value: "{ctr.get("imagePullPolicy", "")}": supported '
                   'values: "Always"' for path, ctr in _containers(a.obj) if ctr.get("imagePullPolicy") != "Always"]
        if len(reasons) == 1:
            raise forbidden(a, reasons[0])
        if reasons:
            # kube aggregates the plugin's Forbidden errors: no longer a status, answered as a 500
            raise errors.StatusError(errors.aggregate_messages([forbidden(a, r).message for r in reasons]),
                                     reason="", code=500)


__all__ = ["AlwaysPullImages"]
