"""Generate ``kapi/object/schema/proto_numbers.json.gz`` from Kubernetes' ``generated.proto`` files.

Development-time tool. Kubernetes' protobuf wire format uses the field numbers that
go-to-protobuf assigned in the ``generated.proto`` files of k8s.io/api,
k8s.io/apimachinery and k8s.io/apiextensions-apiserver. This tool parses those files
(a directory of them, fetched by hand; they are not part of kapi) and writes the facts
kapi needs in kapi's own format (see ``kapi/object/schema/__init__.py``)::

    {"format": 1, "source": "...",
     "messages": {"k8s.io.api.core.v1.PodSpec": {
         "json_type_name": "io.k8s.api.core.v1.PodSpec",   # null when kapi has no such type
         "json": "time",                                     # only for special JSON forms
         "inline": ["volumeSource"],                         # only when present
         "fields": {JSON NAME: [number, type, label, (map key type, map value type)]}}}}

``type`` is a scalar (``string``, ``int32``, ``int64``, ``bool``, ``bytes``, ``double``),
a full message name, or ``map``; ``label`` is ``optional``, ``repeated`` or ``map``.
Fields are keyed by their JSON name (the Go json tag); fields of an ``inline`` message
(a Go ``json:",inline"`` struct) and fields of messages with a special JSON form are
keyed by their proto name.

Usage: ``python tools/gen_proto_numbers.py PROTO_DIR [--out PATH] [--report]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Numbers never change once assigned, so files newer than the v1.33 JSON schema are fine.
SOURCE = "Kubernetes v1.35/v1.36-era generated.proto of k8s.io/api, apimachinery, apiextensions-apiserver"

REPO = Path(__file__).resolve().parent.parent
SCHEMA_FILE = REPO / "kapi" / "schema" / "builtin.json.gz"
OUT_FILE = REPO / "kapi" / "schema" / "proto_numbers.json.gz"

SCALARS = frozenset(
    {
        "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
        "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
    }
)

_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_CRD = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."

# Messages whose JSON form is not an object with the message's fields: the encoder
# must convert them specially, so the data names the conversion.
SPECIAL_JSON: dict[str, str] = {
    _META + "Time": "time",  # RFC 3339 seconds <-> {seconds, nanos}
    _META + "MicroTime": "microtime",  # RFC 3339 microseconds <-> {seconds, nanos}
    _META + "Timestamp": "time",
    _META + "Duration": "duration",  # Go duration string <-> nanoseconds
    _META + "FieldsV1": "raw",  # any JSON <-> its bytes
    _META + "Verbs": "list",  # JSON array <-> repeated items
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "raw",
    "k8s.io.apimachinery.pkg.runtime.Unknown": "unknown",  # the envelope of every object
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",  # type 0=int 1=string
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",  # canonical string
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": "quantity",
    "k8s.io.api.authentication.v1.ExtraValue": "list",
    "k8s.io.api.authorization.v1.ExtraValue": "list",
    "k8s.io.api.certificates.v1.ExtraValue": "list",
    _CRD + "JSON": "raw",
    _CRD + "JSONSchemaPropsOrArray": "schema-or-array",
    _CRD + "JSONSchemaPropsOrBool": "schema-or-bool",
    _CRD + "JSONSchemaPropsOrStringArray": "schema-or-string-array",
}

# Go structs embedded with json:",inline": their fields appear flat in JSON but
# nested in one message field on the wire.
INLINE: frozenset[tuple[str, str]] = frozenset(
    {
        ("k8s.io.api.core.v1.ConfigMapEnvSource", "localObjectReference"),
        ("k8s.io.api.core.v1.ConfigMapKeySelector", "localObjectReference"),
        ("k8s.io.api.core.v1.ConfigMapProjection", "localObjectReference"),
        ("k8s.io.api.core.v1.ConfigMapVolumeSource", "localObjectReference"),
        ("k8s.io.api.core.v1.SecretEnvSource", "localObjectReference"),
        ("k8s.io.api.core.v1.SecretKeySelector", "localObjectReference"),
        ("k8s.io.api.core.v1.SecretProjection", "localObjectReference"),
        ("k8s.io.api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
        ("k8s.io.api.core.v1.Volume", "volumeSource"),
        ("k8s.io.api.core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
        ("k8s.io.api.core.v1.Probe", "handler"),
        ("k8s.io.api.networking.v1.IngressRule", "ingressRuleValue"),
        ("k8s.io.api.admissionregistration.v1.RuleWithOperations", "rule"),
        ("k8s.io.api.admissionregistration.v1.NamedRuleWithOperations", "ruleWithOperations"),
        ("k8s.io.api.admissionregistration.v1beta1.NamedRuleWithOperations", "ruleWithOperations"),
        ("k8s.io.api.admissionregistration.v1alpha1.NamedRuleWithOperations", "ruleWithOperations"),
    }
)

# Proto field names that are not the JSON name (JSON names that are not proto identifiers).
RENAMES: dict[tuple[str, str], str] = {
    (_CRD + "JSONSchemaProps", "ref"): "$ref",
    (_CRD + "JSONSchemaProps", "schema"): "$schema",
    (_CRD + "JSONSchemaProps", "xKubernetesPreserveUnknownFields"): "x-kubernetes-preserve-unknown-fields",
    (_CRD + "JSONSchemaProps", "xKubernetesEmbeddedResource"): "x-kubernetes-embedded-resource",
    (_CRD + "JSONSchemaProps", "xKubernetesIntOrString"): "x-kubernetes-int-or-string",
    (_CRD + "JSONSchemaProps", "xKubernetesListMapKeys"): "x-kubernetes-list-map-keys",
    (_CRD + "JSONSchemaProps", "xKubernetesListType"): "x-kubernetes-list-type",
    (_CRD + "JSONSchemaProps", "xKubernetesMapType"): "x-kubernetes-map-type",
    (_CRD + "JSONSchemaProps", "xKubernetesValidations"): "x-kubernetes-validations",
}


@dataclass
class ProtoField:
    """One field as written in the .proto text (type not yet resolved)."""

    name: str
    number: int
    type: str
    label: str
    key: str = ""


@dataclass
class ProtoMessage:
    """One message block."""

    name: str
    package: str
    fields: list[ProtoField] = field(default_factory=list)


# ------------------------------------------------------------------ parsing

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PACKAGE = re.compile(r"\bpackage\s+([\w.]+)\s*;")
_MESSAGE = re.compile(r"\bmessage\s+(\w+)\s*\{")
_FIELD = re.compile(r"^(optional|repeated|required)\s+(\.?[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(?:\[[^\]]*\])?\s*;$")
_MAP = re.compile(r"^map\s*<\s*(\w+)\s*,\s*(\.?[\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*(?:\[[^\]]*\])?\s*;$")


def parse_proto(text: str) -> list[ProtoMessage]:
    """The messages of one .proto file (proto2 as go-to-protobuf writes it: no nesting)."""
    text = _COMMENT.sub("", text)
    pkg = _PACKAGE.search(text)
    package = pkg.group(1) if pkg else ""
    messages: list[ProtoMessage] = []
    pos = 0
    while (m := _MESSAGE.search(text, pos)) is not None:
        end = text.find("}", m.end())
        if end < 0:
            raise ValueError(f"message {m.group(1)}: no closing brace")
        body = text[m.end() : end]
        if _MESSAGE.search(body) or "{" in body:
            raise ValueError(f"message {m.group(1)}: nested blocks are not supported")
        msg = ProtoMessage(m.group(1), package)
        for stmt in (s.strip() + ";" for s in body.split(";") if s.strip()):
            stmt = " ".join(stmt.split())
            if f := _FIELD.match(stmt):
                msg.fields.append(ProtoField(f.group(3), int(f.group(4)), f.group(2), f.group(1)))
            elif f := _MAP.match(stmt):
                msg.fields.append(ProtoField(f.group(3), int(f.group(4)), f.group(2), "map", f.group(1)))
            elif not stmt.startswith(("option ", "reserved ")):
                raise ValueError(f"message {msg.name}: cannot parse {stmt!r}")
        numbers = [f.number for f in msg.fields]
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"message {msg.name}: a field number is used twice")
        messages.append(msg)
        pos = end + 1
    return messages


def parse_dir(directory: Path) -> dict[str, ProtoMessage]:
    """Every message of every ``*.proto`` file under ``directory``, by full name."""
    out: dict[str, ProtoMessage] = {}
    for path in sorted(directory.rglob("*.proto")):
        for msg in parse_proto(path.read_text(encoding="utf-8")):
            full = f"{msg.package}.{msg.name}" if msg.package else msg.name
            if full in out:
                raise ValueError(f"{path}: message {full} defined twice")
            out[full] = msg
    return out


def resolve(type_name: str, package: str, known: Iterable[str]) -> str:
    """A field's type as a scalar name or a full message name (proto scoping rules)."""
    if type_name in SCALARS:
        return type_name
    names = set(known)
    if type_name.startswith("."):
        candidates = [type_name[1:]]
    else:
        parts = package.split(".") if package else []
        candidates = [".".join([*parts[:i], type_name]) for i in range(len(parts), -1, -1)]
    for candidate in candidates:
        if candidate in names:
            return candidate
    raise ValueError(f"unknown type {type_name!r} (in package {package})")


# ------------------------------------------------------------------ mapping to kapi's schema


def json_type_name(message: str) -> str:
    """The OpenAPI definition name of a proto message (``k8s.io.api...`` -> ``io.k8s.api...``)."""
    name = "io.k8s." + message.removeprefix("k8s.io.")
    name = name.replace("apiextensions_apiserver", "apiextensions-apiserver")
    return name.replace("kube_aggregator", "kube-aggregator")


def _json_name(msg_name: str, proto_name: str, json_fields: dict[str, Any]) -> str | None:
    """The JSON field a proto field carries, or None when the JSON schema has no such field."""
    renamed = RENAMES.get((msg_name, proto_name))
    if renamed is not None:
        return renamed
    if proto_name in json_fields:
        return proto_name
    # go-to-protobuf spells a few names differently from the json tag (``uID`` for ``uid``).
    folded = [f for f in json_fields if f.lower() == proto_name.lower()]
    return folded[0] if len(folded) == 1 else None


def build(
    messages: dict[str, ProtoMessage], schema_types: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The data file and a list of notes (proto fields kapi's JSON schema does not have)."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    for full, msg in sorted(messages.items()):
        jname = json_type_name(full)
        jtype = schema_types.get(jname)
        special = SPECIAL_JSON.get(full)
        json_fields: dict[str, Any] = (jtype or {}).get("fields", {}) if special is None else {}
        fields: dict[str, list[Any]] = {}
        inline: list[str] = []
        for f in sorted(msg.fields, key=lambda f: f.number):
            ftype = resolve(f.type, msg.package, messages)
            entry: list[Any] = [f.number, ftype, f.label]
            if f.label == "map":
                entry = [f.number, "map", "map", f.key, ftype]
            key = f.name
            if (full, f.name) in INLINE:
                inline.append(f.name)
            elif special is None and jtype is not None:
                found = _json_name(full, f.name, json_fields)
                if found is None:
                    notes.append(f"{full}.{f.name} = {f.number}: not in kapi's JSON schema of {jname}")
                else:
                    key = found
            if key in fields:
                raise ValueError(f"{full}: two fields map to JSON name {key!r}")
            fields[key] = entry
        record: dict[str, Any] = {"json_type_name": jname if jtype is not None else None, "fields": fields}
        if special is not None:
            record["json"] = special
        if inline:
            record["inline"] = inline
        out[full] = record
    missing = {name for name, _ in INLINE if name not in out} | {n for n in SPECIAL_JSON if n not in out}
    if missing:
        raise ValueError(f"special messages not found in the .proto files: {sorted(set(missing))}")
    return {"format": 1, "source": SOURCE, "messages": out}, notes


def coverage_gaps(data: dict[str, Any], schema_types: dict[str, Any]) -> list[str]:
    """JSON fields of kapi's schema types that no proto field carries, as ``type.field``."""
    messages = data["messages"]
    by_json = {m["json_type_name"]: name for name, m in messages.items() if m["json_type_name"]}

    def carried(msg_name: str) -> set[str]:
        msg = messages[msg_name]
        names = set(msg["fields"]) - set(msg.get("inline", ()))
        for inline in msg.get("inline", ()):
            names |= carried(msg["fields"][inline][1])
        return names

    gaps: list[str] = []
    for tname, t in sorted(schema_types.items()):
        jfields = t.get("fields", {})
        if tname not in by_json:
            if jfields:
                gaps.append(f"{tname}: no protobuf message")
            continue
        have = carried(by_json[tname])
        for fname in jfields:
            # apiVersion/kind travel in the runtime.Unknown envelope, not in the message.
            if fname not in have and fname not in ("apiVersion", "kind"):
                gaps.append(f"{tname}.{fname}")
    return gaps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("proto_dir", type=Path, help="directory of generated.proto files")
    parser.add_argument("--out", type=Path, default=OUT_FILE)
    parser.add_argument("--report", action="store_true", help="print unmatched fields and gaps")
    args = parser.parse_args(argv)
    schema_types = json.loads(gzip.decompress(SCHEMA_FILE.read_bytes()))["types"]
    data, notes = build(parse_dir(args.proto_dir), schema_types)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0 keeps the output byte-identical across runs.
    args.out.write_bytes(gzip.compress(blob, compresslevel=9, mtime=0))
    print(f"wrote {args.out} ({len(data['messages'])} messages, {args.out.stat().st_size} bytes)")
    if args.report:
        for note in notes:
            print("proto only:", note)
        for gap in coverage_gaps(data, schema_types):
            print("gap:", gap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
