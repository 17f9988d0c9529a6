"""coordination.k8s.io/v1: Leases (PUT creates, as leader election expects)."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import coordination as tables
from kapi.errors import Cause
from kapi.object.validation import validate_lease, validate_lease_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class LeaseStrategy(Strategy):
    create_on_update = True
    printer = tables.LEASE

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_lease(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_lease_update(new, old)


LEASES: Final = Resource(group="coordination.k8s.io", version="v1", resource="leases", kind="Lease",
                         strategy=LeaseStrategy())
