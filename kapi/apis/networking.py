"""networking.k8s.io/v1: Ingresses (with status), IngressClasses and NetworkPolicies."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import networking as tables
from kapi.errors import Cause
from kapi.object.defaults.networking import default_ingress_class, default_network_policy
from kapi.object.validation.networking import (validate_ingress, validate_ingress_class,
    validate_ingress_class_update, validate_ingress_status_update, validate_ingress_update,
    validate_network_policy, validate_network_policy_update)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

GROUP: Final = "networking.k8s.io"


class IngressStrategy(Strategy):
    tracks_generation = True
    printer = tables.INGRESS

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_ingress(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_ingress_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_ingress_status_update(new, old)


class IngressClassStrategy(Strategy):
    tracks_generation = True
    printer = tables.INGRESS_CLASS

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_ingress_class(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_ingress_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_ingress_class_update(new, old)


class NetworkPolicyStrategy(Strategy):
    tracks_generation = True
    printer = tables.NETWORK_POLICY

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_network_policy(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_network_policy(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_network_policy_update(new, old)


INGRESSES: Final = Resource(group=GROUP, version="v1", resource="ingresses", kind="Ingress", short_names=("ing",),
                            subresources=("status",), strategy=IngressStrategy())
INGRESS_CLASSES: Final = Resource(group=GROUP, version="v1", resource="ingressclasses", kind="IngressClass",
                                  namespaced=False, strategy=IngressClassStrategy())
NETWORK_POLICIES: Final = Resource(group=GROUP, version="v1", resource="networkpolicies", kind="NetworkPolicy",
                                   short_names=("netpol",), strategy=NetworkPolicyStrategy())
