"""AlwaysAdmit and AlwaysDeny (kube's plugin/pkg/admission/admit and deny; both deprecated there, off
by default): the first admits everything and acts on nothing, the second refuses every write, in its
mutating and its validating step alike, with kube's message."""

from __future__ import annotations

from kapi.admission.plugin import Attributes, Plugin, forbidden

DENIED = "admission control is denying all modifications"


class AlwaysAdmit(Plugin):
    name = "AlwaysAdmit"
    resources = frozenset()  # admits everything: the chain never needs to call it


class AlwaysDeny(Plugin):
    name = "AlwaysDeny"

    async def admit(self, a: Attributes) -> None:
        raise forbidden(a, DENIED)

    async def validate(self, a: Attributes) -> None:
        raise forbidden(a, DENIED)


__all__ = ["AlwaysAdmit", "AlwaysDeny"]
