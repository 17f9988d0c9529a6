"""policy/v1: PodDisruptionBudgets (with status)."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import policy as tables
from kapi.errors import Cause
from kapi.object.validation.policy import (validate_pod_disruption_budget,
    validate_pod_disruption_budget_status_update, validate_pod_disruption_budget_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class PodDisruptionBudgetStrategy(Strategy):
    tracks_generation = True
    printer = tables.POD_DISRUPTION_BUDGET

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_pod_disruption_budget(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_pod_disruption_budget_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_pod_disruption_budget_status_update(new, old)


POD_DISRUPTION_BUDGETS: Final = Resource(group="policy", version="v1", resource="poddisruptionbudgets",
                                         kind="PodDisruptionBudget", short_names=("pdb",), subresources=("status",),
                                         strategy=PodDisruptionBudgetStrategy())
