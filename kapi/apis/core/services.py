"""Services: DNS-1035 names, stored under ``services/specs``, a ClusterIP allocated on create."""

from __future__ import annotations

import ipaddress
import random
from typing import Final

from kapi import errors
from kapi.encoding import codec
from kapi.encoding.tables import core as tables
from kapi.object.defaults import default_service, fill_service_ip_families
from kapi.object.selectors import META_FIELDS, FieldLabels, text_value
from kapi.object.validation import RULE_DNS1035_LABEL, validate_service, validate_service_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Allocation, Obj, Strategy

SERVICE_CIDR: Final = ipaddress.ip_network("10.96.0.0/12")


class ServiceStrategy(Strategy):
    name_rule = RULE_DNS1035_LABEL
    delete_returns_object = True
    field_labels = FieldLabels(META_FIELDS | {"spec.clusterIP", "spec.type"}, converts=True)
    printer = tables.SERVICE

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_service(obj, old)

    def prepare_named(self, obj: Obj) -> None:
        """kube's service REST fills a create's IP families before validation, after its managedFields."""
        fill_service_ip_families(obj)

    def validate(self, obj: Obj) -> list[errors.Cause]:
        return validate_service(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[errors.Cause]:
        return validate_service_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        spec = obj.get("spec") or {}
        return {"spec.clusterIP": text_value(spec.get("clusterIP")), "spec.type": text_value(spec.get("type"))}

    async def before_create(self, obj: Obj, alloc: Allocation) -> None:
        """Allocate the ClusterIP: the one asked for if free and in range, else a random free one."""
        spec = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return
        wanted = spec.get("clusterIP")
        if wanted == "None":
            spec["clusterIPs"] = ["None"]
            return
        async with alloc.lock:
            used = _cluster_ips(await alloc.stored_values())
            if wanted:
                try:
                    ip = ipaddress.ip_address(wanted)
                except ValueError:
                    ip = None
                if ip is None or ip not in SERVICE_CIDR:
                    raise errors.invalid("Service", "", obj["metadata"]["name"], [errors.Cause(
                        "FieldValueInvalid", f'Invalid value: "{wanted}": failed to allocate IP {wanted}: '
                        f"the provided IP ({wanted}) is not in the valid range. The range of valid IPs is "
                        f"{SERVICE_CIDR}", "spec.clusterIPs")])
                if str(ip) in used:
                    raise errors.invalid("Service", "", obj["metadata"]["name"], [errors.Cause(
                        "FieldValueInvalid", f'Invalid value: ["{wanted}"]: failed to allocate IP {wanted}: '
                        "provided IP is already allocated", "spec.clusterIPs")])
                chosen = str(ip)
            else:
                hosts = SERVICE_CIDR.num_addresses - 2
                for _ in range(64):
                    candidate = str(SERVICE_CIDR.network_address + random.randint(11, hosts))
                    if candidate not in used:
                        break
                chosen = candidate
        spec["clusterIP"] = chosen
        spec["clusterIPs"] = [chosen]


def _cluster_ips(values: list[bytes]) -> set[str]:
    """The ClusterIPs the stored Services hold (a corrupt one holds none)."""
    used = set()
    for value in values:
        try:
            spec = codec.decode_value(value).get("spec")
        except codec.CorruptObject:
            continue
        ip = spec.get("clusterIP") if isinstance(spec, dict) else None
        if ip and isinstance(ip, str):
            used.add(ip)
    return used


SERVICES: Final = Resource(
    group="", version="v1", resource="services", kind="Service", short_names=("svc",), categories=("all",),
    subresources=("status",), storage_prefix="services/specs",
    verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
    strategy=ServiceStrategy())
