"""Generate ``kapi/object/schema/builtin.json.gz`` from Kubernetes' published type definitions.

Development-time tool: reads the JSON-schema rendering of the Kubernetes v1.33
OpenAPI definitions shipped by the ``kubernetes-validate`` package and writes the
types kapi serves in kapi's own compact format (see ``kapi/object/schema/__init__.py``).
The runtime never imports ``kubernetes_validate``; the generated file is committed.

Usage: ``python tools/gen_schema.py [--out PATH]``
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

SOURCE_VERSION = "v1.33.0"
SOURCE_FILE = f"kubernetes-json-schema/{SOURCE_VERSION}-local/_definitions.json"
# Kinds served ahead of SOURCE_VERSION, read from a later release's definitions (with what they
# reach that the first source lacks): MutatingAdmissionPolicy, beta in v1.34.
LATER_VERSION = "v1.34.0"
LATER_FILE = f"kubernetes-json-schema/{LATER_VERSION}-local/_definitions.json"
LATER_ROOTS: tuple[str, ...] = tuple(
    f"io.k8s.api.admissionregistration.{version}.{kind}"
    for version in ("v1beta1", "v1alpha1")
    for kind in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyList", "MutatingAdmissionPolicyBinding",
                 "MutatingAdmissionPolicyBindingList")
)
REF_PREFIX = "#/$defs/"

# Whole group-versions kapi serves: every kind they publish is a root.
SERVED_GROUP_VERSIONS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "v1"),
        ("apps", "v1"),
        ("batch", "v1"),
        ("coordination.k8s.io", "v1"),
        ("events.k8s.io", "v1"),
        ("rbac.authorization.k8s.io", "v1"),
        ("apiextensions.k8s.io", "v1"),
        ("flowcontrol.apiserver.k8s.io", "v1"),
        ("authorization.k8s.io", "v1"),
        ("authentication.k8s.io", "v1"),
        # issue 14, built-in groups A
        ("networking.k8s.io", "v1"),
        ("policy", "v1"),
        ("storage.k8s.io", "v1"),
        ("discovery.k8s.io", "v1"),
        ("scheduling.k8s.io", "v1"),
        ("node.k8s.io", "v1"),
        # issue 14, built-in groups B
        ("autoscaling", "v1"),
        ("autoscaling", "v2"),
        ("certificates.k8s.io", "v1"),
        ("admissionregistration.k8s.io", "v1"),
        ("apiregistration.k8s.io", "v1"),
    }
)

# Single kinds from group-versions kapi does not serve whole: subresource bodies
# (deployments/scale, pods/eviction) and discovery/version documents.
EXTRA_ROOTS: tuple[str, ...] = (
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.api.policy.v1.Eviction",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.version.Info",
)

# Definitions that hold arbitrary JSON: unknown-field checks never descend into them.
FREE_FORM: dict[str, str] = {
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "object",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "object",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": "object",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "any",
}

# The JSON-schema rendering drops the descriptions of the two oneOf scalars.
SCALARS: dict[str, tuple[str, str]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": (
        "int-or-string",
        "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
        "marshalling and unmarshalling, it produces or consumes the inner type.  This allows "
        "you to have, for example, a JSON field that can accept a name or number.",
    ),
    "io.k8s.apimachinery.pkg.api.resource.Quantity": (
        "quantity",
        "Quantity is a fixed-point representation of a number. It provides convenient "
        "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() "
        "accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= "
        "<signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in "
        "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | "
        "<digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | "
        ".<digits> <sign>            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | "
        "<sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> "
        "<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; "
        "See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | "
        "k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the "
        "capitalization.)\n\n<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> "
        "```\n\nNo matter which of the three exponent forms is used, no quantity may represent "
        "a number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. "
        "Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded "
        "up to 1m.) This may be extended in the future if we require larger or smaller "
        "quantities.\n\nWhen a Quantity is parsed from a string, it will remember the type of "
        "suffix it had, and will use the same type again when it is serialized.\n\nBefore "
        "serializing, Quantity will be put in \"canonical form\". This means that "
        "Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease "
        "in Mantissa) such that:\n\n- No precision is lost - No fractional digits will be "
        "emitted - The exponent (or suffix) is as large as possible.\n\nThe sign will be "
        "omitted unless the number is negative.\n\nExamples:\n\n- 1.5 will be serialized as "
        "\"1500m\" - 1.5Gi will be serialized as \"1536Mi\"\n\nNote that the quantity will NEVER "
        "be internally represented by a floating point number. That is the whole point of this "
        "exercise.\n\nNon-canonical values will still parse as long as they are well formed, "
        "but will be re-emitted in their canonical form. (So always use canonical form, or "
        "don't use quantities for data that won't be written to disk.)\n\nThis format is "
        "intended to make it difficult to use these numbers without writing some sort of "
        "special handling code in the hopes that that will cause implementors to also use a "
        "fixed point implementation.",
    ),
}

_TYPE_META = {
    "apiVersion": {
        "type": "string",
        "description": (
            "APIVersion defines the versioned schema of this representation of an object. "
            "Servers should convert recognized schemas to the latest internal value, and may "
            "reject unrecognized values. More info: https://git.k8s.io/community/contributors/"
            "devel/sig-architecture/api-conventions.md#resources"
        ),
    },
    "kind": {
        "type": "string",
        "description": (
            "Kind is a string value representing the REST resource this object represents. "
            "Servers may infer this from the endpoint the client submits requests to. Cannot be "
            "updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
            "sig-architecture/api-conventions.md#types-kinds"
        ),
    },
}

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def _meta_k8s_io_types() -> dict[str, dict[str, Any]]:
    """meta.k8s.io/v1 kinds kube-apiserver serves but does not publish in OpenAPI."""

    def ref(name: str, description: str) -> dict[str, Any]:
        return {"ref": name, "description": description}

    def kind(name: str, description: str, fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
        out = {
            "type": "object",
            "description": description,
            "gvk": [["meta.k8s.io", "v1", name]],
            "published": False,
            "fields": {**_TYPE_META, **fields},
        }
        out.update(extra)
        return out

    string = {"type": "string"}
    return {
        _META + "Table": kind(
            "Table",
            "Table is a tabular representation of a set of API resources. The server transforms "
            "the object into a set of preferred columns for quickly reviewing the objects.",
            {
                "metadata": ref(_META + "ListMeta", "Standard list metadata."),
                "columnDefinitions": {
                    "type": "array",
                    "items": {"ref": _META + "TableColumnDefinition"},
                    "list_type": "atomic",
                    "description": "columnDefinitions describes each column in the returned items array.",
                },
                "rows": {
                    "type": "array",
                    "items": {"ref": _META + "TableRow"},
                    "list_type": "atomic",
                    "description": "rows is the list of items in the table.",
                },
            },
            required=["columnDefinitions", "rows"],
        ),
        _META + "TableColumnDefinition": {
            "type": "object",
            "description": "TableColumnDefinition contains information about a column returned in the Table.",
            "published": False,
            "required": ["name", "type", "format", "description", "priority"],
            "fields": {
                "name": {**string, "description": "name is a human readable name for the column."},
                "type": {**string, "description": "type is an OpenAPI type definition for this column."},
                "format": {**string, "description": "format is an optional OpenAPI type modifier for this column."},
                "description": {**string, "description": "description is a human readable description of this column."},
                "priority": {
                    "type": "integer",
                    "format": "int32",
                    "description": "priority is an integer defining the relative importance of this column compared to others.",
                },
            },
        },
        _META + "TableRow": {
            "type": "object",
            "description": "TableRow is an individual row in a table.",
            "published": False,
            "required": ["cells"],
            "fields": {
                "cells": {
                    "type": "array",
                    "items": {"type": "any"},
                    "list_type": "atomic",
                    "description": "cells will be as wide as the column definitions array.",
                },
                "conditions": {
                    "type": "array",
                    "items": {"ref": _META + "TableRowCondition"},
                    "list_type": "atomic",
                    "description": "conditions describe additional status of a row that are relevant for a human user.",
                },
                "object": ref(
                    "io.k8s.apimachinery.pkg.runtime.RawExtension",
                    "This field contains the requested additional information about each object.",
                ),
            },
        },
        _META + "TableRowCondition": {
            "type": "object",
            "description": "TableRowCondition allows a row to be marked with additional information.",
            "published": False,
            "required": ["type", "status"],
            "fields": {
                "type": {**string, "description": "Type of row condition."},
                "status": {**string, "description": "Status of the condition, one of True, False, Unknown."},
                "reason": {**string, "description": "(brief) machine readable reason for the condition's last transition."},
                "message": {**string, "description": "Human readable message indicating details about last transition."},
            },
        },
        _META + "PartialObjectMetadata": kind(
            "PartialObjectMetadata",
            "PartialObjectMetadata is a generic representation of any object with ObjectMeta.",
            {"metadata": ref(_META + "ObjectMeta", "Standard object's metadata.")},
        ),
        _META + "PartialObjectMetadataList": kind(
            "PartialObjectMetadataList",
            "PartialObjectMetadataList contains a list of objects containing only their metadata",
            {
                "metadata": ref(_META + "ListMeta", "Standard list metadata."),
                "items": {
                    "type": "array",
                    "items": {"ref": _META + "PartialObjectMetadata"},
                    "description": "items contains each of the included items.",
                },
            },
            required=["items"],
        ),
    }


def source_path(file: str = SOURCE_FILE) -> Path:
    """Where the installed kubernetes-validate package keeps the v1.33 (or ``file``'s) definitions."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or spec.origin is None:
        raise SystemExit("kubernetes-validate is not installed (it is a development dependency)")
    return Path(spec.origin).parent / file


def _ref_name(ref: str) -> str:
    if not ref.startswith(REF_PREFIX):
        raise ValueError(f"unexpected $ref {ref!r}")
    return ref[len(REF_PREFIX) :]


def _json_type(value: Any) -> str | None:
    """The one non-null JSON type of a schema ``type`` entry (the rendering adds "null")."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    kinds = [t for t in value if t != "null"]
    if len(kinds) != 1:
        raise ValueError(f"ambiguous type {value!r}")
    return str(kinds[0])


def _refs(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.add(_ref_name(value))
            else:
                found |= _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _refs(value)
    return found


def _gvks(definition: dict[str, Any]) -> list[list[str]]:
    return [[g["group"], g["version"], g["kind"]] for g in definition.get("x-kubernetes-group-version-kind", ())]


def roots(defs: dict[str, Any]) -> set[str]:
    """Definitions whose kinds kapi serves, plus the explicit extras."""
    out = set(EXTRA_ROOTS)
    for name, definition in defs.items():
        if any((g, v) in SERVED_GROUP_VERSIONS for g, v, _ in _gvks(definition)):
            out.add(name)
    return out


def reachable(defs: dict[str, Any], start: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_refs(defs[name]) - seen)
    return seen


def convert_shape(prop: dict[str, Any], *, where: str) -> dict[str, Any]:
    """One property (or items / additionalProperties) schema in kapi's shape format."""
    out: dict[str, Any] = {}
    if "$ref" in prop:
        out["ref"] = _ref_name(prop["$ref"])
    else:
        kind = _json_type(prop.get("type"))
        if kind is None:
            raise ValueError(f"{where}: property without type or $ref: {prop!r}")
        out["type"] = kind
        if "format" in prop:
            out["format"] = prop["format"]
        if kind == "array":
            out["items"] = convert_shape(prop["items"], where=where + "[]")
        elif kind == "object":
            extra = prop.get("additionalProperties")
            if not isinstance(extra, dict):
                raise ValueError(f"{where}: object property without additionalProperties")
            out["values"] = convert_shape(extra, where=where + "{}")
    if prop.get("description"):
        out["description"] = prop["description"]
    for src, dst in (
        ("x-kubernetes-patch-merge-key", "merge_key"),
        ("x-kubernetes-patch-strategy", "patch_strategy"),
        ("x-kubernetes-list-type", "list_type"),
        ("x-kubernetes-list-map-keys", "list_map_keys"),
        ("x-kubernetes-map-type", "map_type"),
    ):
        if src in prop:
            out[dst] = prop[src]
    return out


def convert_type(name: str, definition: dict[str, Any]) -> dict[str, Any]:
    """One definition in kapi's type format."""
    out: dict[str, Any] = {}
    if name in SCALARS:
        out["type"], out["description"] = SCALARS[name]
        return out
    if name in FREE_FORM:
        out["type"] = FREE_FORM[name]
        out["preserve_unknown"] = True
    else:
        out["type"] = _json_type(definition.get("type")) or "any"
    if "format" in definition:
        out["format"] = definition["format"]
    if definition.get("description"):
        out["description"] = definition["description"]
    gvks = _gvks(definition)
    if gvks:
        out["gvk"] = gvks
    if definition.get("required"):
        out["required"] = list(definition["required"])
    if "x-kubernetes-map-type" in definition:
        out["map_type"] = definition["x-kubernetes-map-type"]
    if "x-kubernetes-unions" in definition:
        out["unions"] = definition["x-kubernetes-unions"]
    props = definition.get("properties")
    if props is not None and name not in FREE_FORM:
        fields: dict[str, Any] = {}
        for field_name, prop in props.items():
            if field_name in ("apiVersion", "kind") and "enum" in prop:
                # The rendering pins apiVersion/kind with an enum; the published schema does not.
                prop = {k: v for k, v in prop.items() if k != "enum"}
            fields[field_name] = convert_shape(prop, where=f"{name}.{field_name}")
        out["fields"] = fields
    return out


def build(defs: dict[str, Any], later: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole data file: every reachable definition, converted, sorted by name; ``later``: a
    later release's definitions, for ``LATER_ROOTS`` and what they reach that ``defs`` does not give."""
    names = reachable(defs, roots(defs))
    types = {name: convert_type(name, defs[name]) for name in sorted(names)}
    if later is not None:
        for name in sorted(reachable(later, set(LATER_ROOTS)) - names):
            types[name] = convert_type(name, later[name])
    types.update(_meta_k8s_io_types())
    missing = {
        ref
        for t in types.values()
        for ref in _refs_in_converted(t)
        if ref not in types
    }
    if missing:
        raise ValueError(f"dangling references: {sorted(missing)}")
    return {
        "format": 1,
        "source": f"kubernetes {SOURCE_VERSION} OpenAPI definitions"
                  + (f" (MutatingAdmissionPolicy from {LATER_VERSION})" if later is not None else ""),
        "types": dict(sorted(types.items())),
    }


def _refs_in_converted(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            if key == "ref" and isinstance(sub, str):
                found.add(sub)
            else:
                found |= _refs_in_converted(sub)
    elif isinstance(value, list):
        for sub in value:
            found |= _refs_in_converted(sub)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = Path(__file__).resolve().parent.parent / "kapi" / "object" / "schema" / "builtin.json.gz"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    defs = json.loads(source_path().read_text())["$defs"]
    later = json.loads(source_path(LATER_FILE).read_text())["$defs"]
    data = build(defs, later)
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0 keeps the output byte-identical between runs.
    args.out.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    print(f"{args.out}: {len(data['types'])} types, {len(raw)} bytes JSON, {args.out.stat().st_size} bytes gzipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
