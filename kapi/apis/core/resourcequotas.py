"""core/v1 ResourceQuotas: resource names and quantities validated as kube's; status by its subresource.

The ResourceQuota admission plugin (kapi.admission) enforces them and charges ``status.used``; the
ResourceQuota controller (kapi.controllers.resourcequota) keeps ``status.hard`` and ``status.used`` current.
"""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import quota as tables
from kapi.errors import Cause
from kapi.object.validation.quota import (validate_resource_quota, validate_resource_quota_status_update,
    validate_resource_quota_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class ResourceQuotaStrategy(Strategy):
    printer = tables.RESOURCE_QUOTA

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_resource_quota(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_resource_quota_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_resource_quota_status_update(new, old)


RESOURCE_QUOTAS: Final = Resource(group="", version="v1", resource="resourcequotas", kind="ResourceQuota",
                                  short_names=("quota",), subresources=("status",), strategy=ResourceQuotaStrategy())
