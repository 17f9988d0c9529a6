"""What a write asks of admission: the protocol the registry calls, and what it hands over.

kube-apiserver runs mutating admission before a write's validation and validating admission
after it, both inside the update's retry loop (kube's ``rest.AdmissionToValidateObjectFunc`` and
the update transformers). The registry calls an ``Admission`` given in the write's options at
those points; what it is (the plugins, policies and webhooks of ``kapi.admission``, bound to one
request's user) is above this layer. The server's own writes (start-up objects, controllers) carry one
too, bound to the user kube's client for them is (``kapi.controllers.writes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from kapi.registry.resources import Resource

Obj = dict[str, Any]

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
CONNECT: Final = "CONNECT"


@dataclass(slots=True)
class AdmissionRequest:
    """One write as admission sees it (kube's admission.Attributes, without the requester).

    ``obj`` is the object to write (None for a DELETE; a mutating step may replace it), ``old`` the
    stored one (None for a CREATE). ``kind`` is the group, version and kind of ``obj`` where it is
    not the resource's own (a Scale, a TokenRequest); empty otherwise.
    """

    operation: str
    resource: Resource
    subresource: str
    namespace: str
    name: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool = False
    kind: tuple[str, str, str] = ("", "", "")

    @property
    def gvk(self) -> tuple[str, str, str]:
        """The object's (group, version, kind): ``kind`` if set, else the resource's."""
        if self.kind[2]:
            return self.kind
        return (self.resource.group, self.resource.version, self.resource.kind)


class Admission(Protocol):
    """A request's admission: mutating, then (after the registry's validation) validating."""

    def changes(self, operation: str, res: Resource) -> bool:
        """Whether a mutating step that may change objects acts on ``operation`` of ``res`` now: the
        registry then defaults an update's objects before admission sees them (it costs a defaulting)."""
        ...

    async def mutate(self, req: AdmissionRequest) -> None:
        """Run the mutating plugins, policies and webhooks; may set ``req.obj`` to a changed object.
        Raises a ``StatusError`` to refuse the write."""
        ...

    async def validate(self, req: AdmissionRequest) -> None:
        """Run the validating plugins, policies and webhooks; raises a ``StatusError`` to refuse."""
        ...
