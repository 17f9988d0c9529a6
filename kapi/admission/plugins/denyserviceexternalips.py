"""DenyServiceExternalIPs (kube's plugin/pkg/admission/network/denyserviceexternalips; off by default):
a Service may not gain ``spec.externalIPs``. A create with any is refused; an update may keep or drop
the addresses it had, never add one."""

from __future__ import annotations

from kapi.admission.plugin import Attributes, Plugin, forbidden
from kapi.registry.admit import CREATE, UPDATE


def _external_ips(svc: object) -> list[object]:
    spec = svc.get("spec") if isinstance(svc, dict) else None
    ips = spec.get("externalIPs") if isinstance(spec, dict) else None
    return ips if isinstance(ips, list) else []


class DenyServiceExternalIPs(Plugin):
    name = "DenyServiceExternalIPs"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "services"),))

    async def validate(self, a: Attributes) -> None:
        if a.subresource:
            return
        new = _external_ips(a.obj)
        if not new:
            return
        if a.old is not None:
            old = set(map(str, _external_ips(a.old)))
            if all(str(ip) in old for ip in new):
                return
        raise forbidden(a, "Use of external IPs is denied by admission control")


__all__ = ["DenyServiceExternalIPs"]
