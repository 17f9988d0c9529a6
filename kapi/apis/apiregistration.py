"""apiregistration.k8s.io/v1 APIServices: one per served group/version (``v1.apps``, ``v1.`` for the
core group), kept by ``kapi.server.apiservices`` as kube's autoregister and crdregistration controllers
keep them. A ``spec.service`` of nil is Local (served by kapi itself). kapi does not proxy to other
servers: an APIService naming a service is stored and validated, its group is not served.
"""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import apiregistration as tables
from kapi.errors import Cause
from kapi.object.validation.apiregistration import (validate_api_service, validate_api_service_status_update,
    validate_api_service_update)
from kapi.object.validation.names import RULE_PATH_SEGMENT
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

GROUP: Final = "apiregistration.k8s.io"


class APIServiceStrategy(Strategy):
    name_rule = RULE_PATH_SEGMENT
    status_keeps_metadata = ("labels", "annotations", "finalizers", "ownerReferences")
    status_reset_fields = (("spec",), ("metadata",))
    printer = tables.API_SERVICE

    def default(self, obj: Obj, old: Obj | None) -> None:
        service = (obj.get("spec") or {}).get("service") if isinstance(obj.get("spec"), dict) else None
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_api_service(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_api_service_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_api_service_status_update(new, old)


API_SERVICES: Final = Resource(group=GROUP, version="v1", resource="apiservices", kind="APIService",
                               namespaced=False, categories=("api-extensions",), subresources=("status",),
                               strategy=APIServiceStrategy())
