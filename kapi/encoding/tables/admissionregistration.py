"""Table printers of admissionregistration.k8s.io (``printers.go``)."""

from __future__ import annotations

from typing import Any, Final

from kapi.encoding.tables.base import AGE, NAME, Obj, Printer, as_list, as_map, as_str, column, selector_string, since

_WEBHOOK_COLUMNS: Final = (NAME, column("Webhooks", "integer", "Webhooks indicates the number of webhooks."), AGE)
_POLICY_COLUMNS: Final = (
    NAME,
    column("Validations", "integer", "Validations indicates the number of validation rules."),
    column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE,
)
_BINDING_COLUMNS: Final = (
    NAME,
    column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded "
           "to."),
    column("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
    AGE,
)


def _webhook_row(obj: Obj, now: float) -> list[Any]:
    md = as_map(obj.get("metadata"))
    return [as_str(md.get("name")), len(as_list(obj.get("webhooks"))), since(md.get("creationTimestamp"), now)]


def _policy_row(obj: Obj, now: float) -> list[Any]:
    md, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    param_kind = "<unset>"
    if isinstance(spec.get("paramKind"), dict):
        pk = as_map(spec.get("paramKind"))
        param_kind = f"{as_str(pk.get('apiVersion'))}/{as_str(pk.get('kind'))}"
    return [as_str(md.get("name")), len(as_list(spec.get("validations"))), param_kind,
            since(md.get("creationTimestamp"), now)]


def _binding_row(obj: Obj, now: float) -> list[Any]:
    md, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    param = "<unset>"
    ref = spec.get("paramRef")
    if isinstance(ref, dict):
        if ref.get("name"):
            param = f"{as_str(ref.get('namespace')) or '*'}/{as_str(ref.get('name'))}"
        elif ref.get("selector") is not None:
            param = selector_string(ref.get("selector"))
    return [as_str(md.get("name")), as_str(spec.get("policyName")), param, since(md.get("creationTimestamp"), now)]


WEBHOOK_CONFIGURATION: Final = Printer(_WEBHOOK_COLUMNS, _webhook_row)
VALIDATING_ADMISSION_POLICY: Final = Printer(_POLICY_COLUMNS, _policy_row)
VALIDATING_ADMISSION_POLICY_BINDING: Final = Printer(_BINDING_COLUMNS, _binding_row)

# MutatingAdmissionPolicy(Binding): printers.go's AddHandlers for admissionregistration v1beta1 / v1alpha1.
_MUTATING_POLICY_COLUMNS: Final = (
    NAME,
    column("Mutations", "integer", "Mutation indicates the number of mutations rules."),
    column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE,
)


def _mutating_policy_row(obj: Obj, now: float) -> list[Any]:
    md, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    param_kind = "<unset>"
    if isinstance(spec.get("paramKind"), dict):
        pk = as_map(spec.get("paramKind"))
        param_kind = f"{as_str(pk.get('apiVersion'))}/{as_str(pk.get('kind'))}"
    return [as_str(md.get("name")), len(as_list(spec.get("mutations"))), param_kind,
            since(md.get("creationTimestamp"), now)]


MUTATING_ADMISSION_POLICY: Final = Printer(_MUTATING_POLICY_COLUMNS, _mutating_policy_row)
MUTATING_ADMISSION_POLICY_BINDING: Final = Printer(_BINDING_COLUMNS, _binding_row)
