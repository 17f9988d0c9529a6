"""admissionregistration.k8s.io/v1: MutatingWebhookConfigurations, ValidatingWebhookConfigurations,
ValidatingAdmissionPolicies (status subresource) and ValidatingAdmissionPolicyBindings, all cluster scoped;
v1beta1 (kube 1.34's) and v1alpha1: MutatingAdmissionPolicies and MutatingAdmissionPolicyBindings, stored
as v1beta1 (the two versions have one shape; v1alpha1 is served by converting the apiVersion).

Stored, defaulted and validated as kube's (pkg/registry/admissionregistration); generation moves on
each change of the webhooks or the spec. The admission plugins (kapi.admission) call the webhooks and
evaluate the policies.
"""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import admissionregistration as tables
from kapi.errors import Cause
from kapi.object.defaults.admissionregistration import (default_mutating_admission_policy,
    default_mutating_admission_policy_binding, default_mutating_webhook_configuration,
    default_validating_admission_policy, default_validating_admission_policy_binding,
    default_validating_webhook_configuration)
from kapi.object.validation import admissionregistration as v
from kapi.registry.resources import Resource
from kapi.registry.strategy import RESET_META_FOR_STATUS, Obj, Strategy

GROUP: Final = "admissionregistration.k8s.io"
_API_MACHINERY = ("api-extensions",)


class MutatingWebhookConfigurationStrategy(Strategy):
    tracks_generation = True
    printer = tables.WEBHOOK_CONFIGURATION

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_mutating_webhook_configuration(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_mutating_webhook_configuration(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_mutating_webhook_configuration_update(new, old)


class ValidatingWebhookConfigurationStrategy(Strategy):
    tracks_generation = True
    printer = tables.WEBHOOK_CONFIGURATION

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_validating_webhook_configuration(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_validating_webhook_configuration(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_validating_webhook_configuration_update(new, old)


class ValidatingAdmissionPolicyStrategy(Strategy):
    tracks_generation = True
    status_keeps_metadata = RESET_META_FOR_STATUS
    status_reset_fields = (("spec",), ("metadata",))
    printer = tables.VALIDATING_ADMISSION_POLICY

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_validating_admission_policy(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_validating_admission_policy(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_validating_admission_policy_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_validating_admission_policy_status_update(new, old)


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    tracks_generation = True
    printer = tables.VALIDATING_ADMISSION_POLICY_BINDING

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_validating_admission_policy_binding(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_validating_admission_policy_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_validating_admission_policy_binding_update(new, old)


MUTATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    group=GROUP, version="v1", resource="mutatingwebhookconfigurations", kind="MutatingWebhookConfiguration",
    namespaced=False, categories=_API_MACHINERY, strategy=MutatingWebhookConfigurationStrategy())
VALIDATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    group=GROUP, version="v1", resource="validatingwebhookconfigurations", kind="ValidatingWebhookConfiguration",
    namespaced=False, categories=_API_MACHINERY, strategy=ValidatingWebhookConfigurationStrategy())
VALIDATING_ADMISSION_POLICIES: Final = Resource(
    group=GROUP, version="v1", resource="validatingadmissionpolicies", kind="ValidatingAdmissionPolicy",
    namespaced=False, categories=_API_MACHINERY, subresources=("status",),
    strategy=ValidatingAdmissionPolicyStrategy())
VALIDATING_ADMISSION_POLICY_BINDINGS: Final = Resource(
    group=GROUP, version="v1", resource="validatingadmissionpolicybindings", kind="ValidatingAdmissionPolicyBinding",
    namespaced=False, categories=_API_MACHINERY, strategy=ValidatingAdmissionPolicyBindingStrategy())


# ------------------------------------------------ MutatingAdmissionPolicy (v1beta1 stored, v1alpha1)


def _at_version(obj: Obj, version: str) -> Obj:
    if isinstance(obj, dict) and str(obj.get("apiVersion") or "").startswith(f"{GROUP}/"):
        obj = {**obj, "apiVersion": f"{GROUP}/{version}"}
    return obj


class MutatingAdmissionPolicyStrategy(Strategy):
    tracks_generation = True
    printer = tables.MUTATING_ADMISSION_POLICY

    def __init__(self, version: str = "v1beta1") -> None:
        self.version = version

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_mutating_admission_policy(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_mutating_admission_policy(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_mutating_admission_policy_update(new, old)

    def to_storage(self, obj: Obj) -> Obj:
        return _at_version(obj, "v1beta1") if self.version != "v1beta1" else obj

    def from_storage(self, obj: Obj) -> Obj:
        return _at_version(obj, self.version) if self.version != "v1beta1" else obj


class MutatingAdmissionPolicyBindingStrategy(Strategy):
    tracks_generation = True
    printer = tables.MUTATING_ADMISSION_POLICY_BINDING

    def __init__(self, version: str = "v1beta1") -> None:
        self.version = version

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_mutating_admission_policy_binding(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return v.validate_mutating_admission_policy_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return v.validate_mutating_admission_policy_binding_update(new, old)

    def to_storage(self, obj: Obj) -> Obj:
        return _at_version(obj, "v1beta1") if self.version != "v1beta1" else obj

    def from_storage(self, obj: Obj) -> Obj:
        return _at_version(obj, self.version) if self.version != "v1beta1" else obj


MUTATING_ADMISSION_POLICIES: Final = Resource(
    group=GROUP, version="v1beta1", resource="mutatingadmissionpolicies", kind="MutatingAdmissionPolicy",
    namespaced=False, categories=_API_MACHINERY, strategy=MutatingAdmissionPolicyStrategy())
MUTATING_ADMISSION_POLICY_BINDINGS: Final = Resource(
    group=GROUP, version="v1beta1", resource="mutatingadmissionpolicybindings", kind="MutatingAdmissionPolicyBinding",
    namespaced=False, categories=_API_MACHINERY, strategy=MutatingAdmissionPolicyBindingStrategy())
MUTATING_ADMISSION_POLICIES_V1ALPHA1: Final = Resource(
    group=GROUP, version="v1alpha1", resource="mutatingadmissionpolicies", kind="MutatingAdmissionPolicy",
    namespaced=False, categories=_API_MACHINERY, storage_version="v1beta1",
    strategy=MutatingAdmissionPolicyStrategy("v1alpha1"))
MUTATING_ADMISSION_POLICY_BINDINGS_V1ALPHA1: Final = Resource(
    group=GROUP, version="v1alpha1", resource="mutatingadmissionpolicybindings", kind="MutatingAdmissionPolicyBinding",
    namespaced=False, categories=_API_MACHINERY, storage_version="v1beta1",
    strategy=MutatingAdmissionPolicyBindingStrategy("v1alpha1"))
