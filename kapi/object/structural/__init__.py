"""Structural schemas of custom resources: apiextensions-apiserver's ``pkg/apiserver/schema``.

A CRD version's ``schema.openAPIV3Schema`` (a JSONSchemaProps dict) is read once into a
``Structural`` tree (``from_props``) when the CRD is served; validation, pruning, defaulting,
unknown-field detection and CEL (``kapi.object.cel``) walk that tree, never the raw dict.

Value validations that are not part of the structure (``allOf``, ``anyOf``, ``oneOf``, ``not``) are
kept as raw JSONSchemaProps dicts in ``ValueValidation``: they may only restate value constraints,
never add fields (kube's structural rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Structural", "ValidationRule", "ValueValidation", "from_props", "validate", "prune", "default",
           "validate_schema", "coerce", "validate_update"]

Props = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ValidationRule:
    """One ``x-kubernetes-validations`` entry (apiextensions ValidationRule)."""

    rule: str
    message: str = ""
    message_expression: str = ""
    reason: str = ""  # FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired, FieldValueDuplicate
    field_path: str = ""
    optional_old_self: bool | None = None


@dataclass(frozen=True, slots=True)
class ValueValidation:
    """The value constraints of one node (kube's ValueValidation); None / () where not given."""

    format: str = ""
    maximum: float | None = None
    exclusive_maximum: bool = False
    minimum: float | None = None
    exclusive_minimum: bool = False
    max_length: int | None = None
    min_length: int | None = None
    pattern: str = ""
    max_items: int | None = None
    min_items: int | None = None
    unique_items: bool = False
    multiple_of: float | None = None
    enum: tuple[Any, ...] | None = None
    max_properties: int | None = None
    min_properties: int | None = None
    required: tuple[str, ...] = ()
    all_of: tuple[Props, ...] = ()
    one_of: tuple[Props, ...] = ()
    any_of: tuple[Props, ...] = ()
    not_: Props | None = None


@dataclass(frozen=True, slots=True)
class Structural:
    """One node of a structural schema (kube's ``structuralschema.Structural``).

    ``type`` is "object", "array", "string", "integer", "number", "boolean" or "" (only where
    ``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields`` allows it).
    ``properties`` for objects with fixed fields; ``additional_properties`` for maps (a schema),
    or True/False when given as a bool; ``items`` for arrays.
    """

    type: str = ""
    description: str = ""
    title: str = ""
    default: Any = None
    has_default: bool = False
    nullable: bool = False
    properties: dict[str, Structural] = field(default_factory=dict)
    additional_properties: Structural | bool | None = None
    items: Structural | None = None
    # Extensions
    preserve_unknown_fields: bool = False
    embedded_resource: bool = False
    int_or_string: bool = False
    list_type: str = ""  # "", "atomic", "set", "map"
    list_map_keys: tuple[str, ...] = ()
    map_type: str = ""  # "", "atomic", "granular"
    validations: tuple[ValidationRule, ...] = ()
    value: ValueValidation = field(default_factory=ValueValidation)
    # The JSONSchemaProps this node was read from (for OpenAPI publication and error messages).
    raw: Props = field(default_factory=dict, repr=False, compare=False)
    # What the structural modules compile from this node once (validators, flags); never part of equality.
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)


def _rules(raw: Any) -> tuple[ValidationRule, ...]:
    out = []
    for r in raw or ():
        if isinstance(r, dict):
            out.append(ValidationRule(
                rule=str(r.get("rule", "")), message=str(r.get("message", "") or ""),
                message_expression=str(r.get("messageExpression", "") or ""), reason=str(r.get("reason", "") or ""),
                field_path=str(r.get("fieldPath", "") or ""), optional_old_self=r.get("optionalOldSelf")))
    return tuple(out)


def _value(p: Props) -> ValueValidation:
    def num(key: str) -> float | None:
        v = p.get(key)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def count(key: str) -> int | None:
        v = p.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def nested(key: str) -> tuple[Props, ...]:
        return tuple(x for x in p.get(key) or () if isinstance(x, dict))

    enum = p.get("enum")
    return ValueValidation(
        format=str(p.get("format", "") or ""), maximum=num("maximum"),
        exclusive_maximum=bool(p.get("exclusiveMaximum")), minimum=num("minimum"),
        exclusive_minimum=bool(p.get("exclusiveMinimum")), max_length=count("maxLength"),
        min_length=count("minLength"), pattern=str(p.get("pattern", "") or ""), max_items=count("maxItems"),
        min_items=count("minItems"), unique_items=bool(p.get("uniqueItems")), multiple_of=num("multipleOf"),
        enum=tuple(enum) if isinstance(enum, list) else None, max_properties=count("maxProperties"),
        min_properties=count("minProperties"), required=tuple(x for x in p.get("required") or () if isinstance(x, str)),
        all_of=nested("allOf"), one_of=nested("oneOf"), any_of=nested("anyOf"),
        not_=p["not"] if isinstance(p.get("not"), dict) else None)


def from_props(p: Props) -> Structural:
    """The structural tree of a JSONSchemaProps dict (already validated as structural by the CRD's
    validation; anything unexpected is read leniently, never raised on)."""
    if not isinstance(p, dict):
        return Structural()
    props = p.get("properties")
    additional = p.get("additionalProperties")
    if isinstance(additional, dict):
        additional_node: Structural | bool | None = from_props(additional)
    elif isinstance(additional, bool):
        additional_node = additional
    else:
        additional_node = None
    items = p.get("items")
    return Structural(
        type=str(p.get("type", "") or ""), description=str(p.get("description", "") or ""),
        title=str(p.get("title", "") or ""), default=p.get("default"), has_default="default" in p,
        nullable=bool(p.get("nullable")),
        properties={k: from_props(v) for k, v in props.items()} if isinstance(props, dict) else {},
        additional_properties=additional_node,
        items=from_props(items) if isinstance(items, dict) else None,
        preserve_unknown_fields=bool(p.get("x-kubernetes-preserve-unknown-fields")),
        embedded_resource=bool(p.get("x-kubernetes-embedded-resource")),
        int_or_string=bool(p.get("x-kubernetes-int-or-string")),
        list_type=str(p.get("x-kubernetes-list-type", "") or ""),
        list_map_keys=tuple(k for k in p.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)),
        map_type=str(p.get("x-kubernetes-map-type", "") or ""),
        validations=_rules(p.get("x-kubernetes-validations")),
        value=_value(p), raw=p)


# The operations on the tree (imported last: they import the dataclasses above).
from kapi.object.structural.validation import validate, validate_update  # noqa: E402
from kapi.object.structural.pruning import prune  # noqa: E402
from kapi.object.structural.defaulting import default  # noqa: E402
from kapi.object.structural.objectmeta import coerce  # noqa: E402
from kapi.object.structural.schema import validate_schema  # noqa: E402
