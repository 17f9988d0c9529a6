"""The protobuf encoding of ``/openapi/v2`` (gnostic ``openapi.v2.Document``) and its wire writer.

The encoder is checked against message classes the ``protobuf`` runtime builds from
a descriptor written out below, independently of the encoder, from gnostic's
``OpenAPIv2.proto``: parsing must leave no unknown field, re-serialising must give
the same bytes, and mapping the parsed message back to JSON must give the document.
"""

from __future__ import annotations

import struct
import subprocess
from typing import Any

import orjson
import pytest
import yaml
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory, unknown_fields
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from kapi import errors
from kapi.api.openapi import OpenAPIDocuments, ServedResource
from kapi.api.openapi_pb import CONTENT_TYPE, encode_openapi_v2
from kapi.encoding.protowire import (FIXED64, LEN, VARINT, MessageWriter, encode_varint, fields_by_number,
    iter_fields)
from kapi.object.schema import load_builtin
from tests._needs import protoc

# ---------------------------------------------------------------- the schema, from OpenAPIv2.proto
#
# One message per line: `field number type`, `*` marks repeated, a trailing `|`
# marks a member of the message's oneof (gnostic names every oneof "oneof").

_PRIMITIVE_RUN = (
    "type {0} string; format {1} string; items {2} PrimitivesItems; collection_format {3} string; "
    "default {4} Any; maximum {5} double; exclusive_maximum {6} bool; minimum {7} double; "
    "exclusive_minimum {8} bool; max_length {9} int64; min_length {10} int64; pattern {11} string; "
    "max_items {12} int64; min_items {13} int64; unique_items {14} bool; enum {15} *Any; multiple_of {16} double"
)


def _run(first: int) -> str:
    return _PRIMITIVE_RUN.format(*range(first, first + 17))


_QUERY_LIKE = (
    "required 1 bool; in 2 string; description 3 string; name 4 string; allow_empty_value 5 bool; "
    + _run(6) + "; vendor_extension 23 *NamedAny"
)
_PATH_LIKE = "required 1 bool; in 2 string; description 3 string; name 4 string; " + _run(5) + "; vendor_extension 22 *NamedAny"

_MESSAGES = {
    "AdditionalPropertiesItem": "schema 1 Schema |; boolean 2 bool |",
    "Any": "value 1 .google.protobuf.Any; yaml 2 string",
    "ApiKeySecurity": "type 1 string; name 2 string; in 3 string; description 4 string; vendor_extension 5 *NamedAny",
    "BasicAuthenticationSecurity": "type 1 string; description 2 string; vendor_extension 3 *NamedAny",
    "BodyParameter": "description 1 string; name 2 string; in 3 string; required 4 bool; schema 5 Schema; "
    "vendor_extension 6 *NamedAny",
    "Contact": "name 1 string; url 2 string; email 3 string; vendor_extension 4 *NamedAny",
    "Definitions": "additional_properties 1 *NamedSchema",
    "Document": "swagger 1 string; info 2 Info; host 3 string; base_path 4 string; schemes 5 *string; "
    "consumes 6 *string; produces 7 *string; paths 8 Paths; definitions 9 Definitions; "
    "parameters 10 ParameterDefinitions; responses 11 ResponseDefinitions; security 12 *SecurityRequirement; "
    "security_definitions 13 SecurityDefinitions; tags 14 *Tag; external_docs 15 ExternalDocs; "
    "vendor_extension 16 *NamedAny",
    "Examples": "additional_properties 1 *NamedAny",
    "ExternalDocs": "description 1 string; url 2 string; vendor_extension 3 *NamedAny",
    "FileSchema": "format 1 string; title 2 string; description 3 string; default 4 Any; required 5 *string; "
    "type 6 string; read_only 7 bool; external_docs 8 ExternalDocs; example 9 Any; vendor_extension 10 *NamedAny",
    "FormDataParameterSubSchema": _QUERY_LIKE,
    "Header": _run(1) + "; description 18 string; vendor_extension 19 *NamedAny",
    "HeaderParameterSubSchema": _PATH_LIKE,
    "Headers": "additional_properties 1 *NamedHeader",
    "Info": "title 1 string; version 2 string; description 3 string; terms_of_service 4 string; contact 5 Contact; "
    "license 6 License; vendor_extension 7 *NamedAny",
    "ItemsItem": "schema 1 *Schema",
    "JsonReference": "_ref 1 string; description 2 string",
    "License": "name 1 string; url 2 string; vendor_extension 3 *NamedAny",
    "NamedAny": "name 1 string; value 2 Any",
    "NamedHeader": "name 1 string; value 2 Header",
    "NamedParameter": "name 1 string; value 2 Parameter",
    "NamedPathItem": "name 1 string; value 2 PathItem",
    "NamedResponse": "name 1 string; value 2 Response",
    "NamedResponseValue": "name 1 string; value 2 ResponseValue",
    "NamedSchema": "name 1 string; value 2 Schema",
    "NamedSecurityDefinitionsItem": "name 1 string; value 2 SecurityDefinitionsItem",
    "NamedString": "name 1 string; value 2 string",
    "NamedStringArray": "name 1 string; value 2 StringArray",
    "NonBodyParameter": "header_parameter_sub_schema 1 HeaderParameterSubSchema |; "
    "form_data_parameter_sub_schema 2 FormDataParameterSubSchema |; "
    "query_parameter_sub_schema 3 QueryParameterSubSchema |; path_parameter_sub_schema 4 PathParameterSubSchema |",
    "Oauth2AccessCodeSecurity": "type 1 string; flow 2 string; scopes 3 Oauth2Scopes; authorization_url 4 string; "
    "token_url 5 string; description 6 string; vendor_extension 7 *NamedAny",
    "Oauth2ApplicationSecurity": "type 1 string; flow 2 string; scopes 3 Oauth2Scopes; token_url 4 string; "
    "description 5 string; vendor_extension 6 *NamedAny",
    "Oauth2ImplicitSecurity": "type 1 string; flow 2 string; scopes 3 Oauth2Scopes; authorization_url 4 string; "
    "description 5 string; vendor_extension 6 *NamedAny",
    "Oauth2PasswordSecurity": "type 1 string; flow 2 string; scopes 3 Oauth2Scopes; token_url 4 string; "
    "description 5 string; vendor_extension 6 *NamedAny",
    "Oauth2Scopes": "additional_properties 1 *NamedString",
    "Operation": "tags 1 *string; summary 2 string; description 3 string; external_docs 4 ExternalDocs; "
    "operation_id 5 string; produces 6 *string; consumes 7 *string; parameters 8 *ParametersItem; "
    "responses 9 Responses; schemes 10 *string; deprecated 11 bool; security 12 *SecurityRequirement; "
    "vendor_extension 13 *NamedAny",
    "Parameter": "body_parameter 1 BodyParameter |; non_body_parameter 2 NonBodyParameter |",
    "ParameterDefinitions": "additional_properties 1 *NamedParameter",
    "ParametersItem": "parameter 1 Parameter |; json_reference 2 JsonReference |",
    "PathItem": "_ref 1 string; get 2 Operation; put 3 Operation; post 4 Operation; delete 5 Operation; "
    "options 6 Operation; head 7 Operation; patch 8 Operation; parameters 9 *ParametersItem; "
    "vendor_extension 10 *NamedAny",
    "PathParameterSubSchema": _PATH_LIKE,
    "Paths": "vendor_extension 1 *NamedAny; path 2 *NamedPathItem",
    "PrimitivesItems": _run(1) + "; vendor_extension 18 *NamedAny",
    "Properties": "additional_properties 1 *NamedSchema",
    "QueryParameterSubSchema": _QUERY_LIKE,
    "Response": "description 1 string; schema 2 SchemaItem; headers 3 Headers; examples 4 Examples; "
    "vendor_extension 5 *NamedAny",
    "ResponseDefinitions": "additional_properties 1 *NamedResponse",
    "ResponseValue": "response 1 Response |; json_reference 2 JsonReference |",
    "Responses": "response_code 1 *NamedResponseValue; vendor_extension 2 *NamedAny",
    "Schema": "_ref 1 string; format 2 string; title 3 string; description 4 string; default 5 Any; "
    "multiple_of 6 double; maximum 7 double; exclusive_maximum 8 bool; minimum 9 double; "
    "exclusive_minimum 10 bool; max_length 11 int64; min_length 12 int64; pattern 13 string; "
    "max_items 14 int64; min_items 15 int64; unique_items 16 bool; max_properties 17 int64; "
    "min_properties 18 int64; required 19 *string; enum 20 *Any; "
    "additional_properties 21 AdditionalPropertiesItem; type 22 TypeItem; items 23 ItemsItem; "
    "all_of 24 *Schema; properties 25 Properties; discriminator 26 string; read_only 27 bool; xml 28 Xml; "
    "external_docs 29 ExternalDocs; example 30 Any; vendor_extension 31 *NamedAny",
    "SchemaItem": "schema 1 Schema |; file_schema 2 FileSchema |",
    "SecurityDefinitions": "additional_properties 1 *NamedSecurityDefinitionsItem",
    "SecurityDefinitionsItem": "basic_authentication_security 1 BasicAuthenticationSecurity |; "
    "api_key_security 2 ApiKeySecurity |; oauth2_implicit_security 3 Oauth2ImplicitSecurity |; "
    "oauth2_password_security 4 Oauth2PasswordSecurity |; oauth2_application_security 5 Oauth2ApplicationSecurity |; "
    "oauth2_access_code_security 6 Oauth2AccessCodeSecurity |",
    "SecurityRequirement": "additional_properties 1 *NamedStringArray",
    "StringArray": "value 1 *string",
    "Tag": "name 1 string; description 2 string; external_docs 3 ExternalDocs; vendor_extension 4 *NamedAny",
    "TypeItem": "value 1 *string",
    "Xml": "name 1 string; namespace 2 string; prefix 3 string; attribute 4 bool; wrapped 5 bool; "
    "vendor_extension 6 *NamedAny",
}

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": _F.TYPE_STRING, "bool": _F.TYPE_BOOL, "double": _F.TYPE_DOUBLE, "int64": _F.TYPE_INT64}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="openapiv2/OpenAPIv2.proto", package="openapi.v2", syntax="proto3",
        dependency=["google/protobuf/any.proto"],
    )
    for name, spec in _MESSAGES.items():
        msg = fd.message_type.add(name=name)
        for part in spec.split(";"):
            words = part.split()
            fname, number, ftype = words[0], int(words[1]), words[2]
            field = msg.field.add(name=fname, number=number)
            field.label = _F.LABEL_REPEATED if ftype.startswith("*") else _F.LABEL_OPTIONAL
            ftype = ftype.lstrip("*")
            if ftype in _SCALARS:
                field.type = _SCALARS[ftype]
            else:
                field.type = _F.TYPE_MESSAGE
                field.type_name = ftype if ftype.startswith(".") else f".openapi.v2.{ftype}"
            if words[-1] == "|":
                if not msg.oneof_decl:
                    msg.oneof_decl.add(name="oneof")
                field.oneof_index = 0
    return fd


@pytest.fixture(scope="module")
def pb() -> dict[str, type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    any_fd = descriptor_pb2.FileDescriptorProto()
    any_pb2.DESCRIPTOR.CopyToProto(any_fd)
    pool.Add(any_fd)
    pool.Add(_file_descriptor())
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"openapi.v2.{name}")) for name in _MESSAGES}


RESOURCES = (
    ServedResource("", "v1", "pods", "Pod", True, ("status", "binding", "eviction", "log")),
    ServedResource("", "v1", "namespaces", "Namespace", False, ("status", "finalize")),
    ServedResource("apps", "v1", "deployments", "Deployment", True, ("status", "scale")),
)


@pytest.fixture(scope="module")
def kapi_doc() -> dict[str, Any]:
    # Through JSON, as the served document: plain lists and dicts, nothing else.
    return orjson.loads(orjson.dumps(OpenAPIDocuments(load_builtin(), RESOURCES)._build_v2()))


# ---------------------------------------------------------------- helpers


def _unknown_fields(msg: Message, path: str = "Document") -> list[str]:
    """Paths of every field the descriptor did not recognise, anywhere in the tree."""
    found = [f"{path}#{f.field_number}" for f in unknown_fields.UnknownFieldSet(msg)]
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        for i, sub in enumerate(value if field.is_repeated else [value]):
            found += _unknown_fields(sub, f"{path}.{field.name}[{i}]")
    return found


def _json_key(name: str) -> str:
    if name == "_ref":
        return "$ref"
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _to_json(msg: Message) -> Any:
    """The swagger JSON a parsed gnostic message stands for (the compiler's mapping, reversed)."""
    name = msg.DESCRIPTOR.name
    if name == "Any":
        return yaml.safe_load(msg.yaml)  # type: ignore[attr-defined]
    if name == "TypeItem":
        values = list(msg.value)  # type: ignore[attr-defined]
        return values[0] if len(values) == 1 else values
    if name == "StringArray":
        return list(msg.value)  # type: ignore[attr-defined]
    if name == "ItemsItem":
        schemas = [_to_json(s) for s in msg.schema]  # type: ignore[attr-defined]
        return schemas[0] if len(schemas) == 1 else schemas
    if msg.DESCRIPTOR.oneofs:
        member = msg.WhichOneof("oneof")
        assert member is not None, f"{name} has no oneof member set"
        return _value(getattr(msg, member))
    out: dict[str, Any] = {}
    for field, value in msg.ListFields():
        if field.message_type is not None and field.message_type.name.startswith("Named"):
            # Maps and vendor extensions both fold into the enclosing JSON object.
            for pair in value:
                assert pair.name not in out, pair.name
                out[pair.name] = _value(pair.value)
        elif field.is_repeated:
            out[_json_key(field.name)] = [_value(v) for v in value]
        else:
            out[_json_key(field.name)] = _value(value)
    return out


def _value(value: Any) -> Any:
    return _to_json(value) if isinstance(value, Message) else value


def _parse(pb: dict[str, type[Message]], data: bytes) -> Message:
    doc = pb["Document"]()
    doc.ParseFromString(data)
    return doc


# ---------------------------------------------------------------- the kapi document


def test_content_type_is_what_kubectl_asks_for() -> None:
    assert CONTENT_TYPE == "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def test_kapi_document_parses_with_no_unknown_field(pb: dict[str, type[Message]], kapi_doc: dict[str, Any]) -> None:
    data = encode_openapi_v2(kapi_doc)
    doc = _parse(pb, data)
    assert _unknown_fields(doc) == []
    # Fields in number order, defaults left out: what protobuf itself writes, byte for byte.
    assert doc.SerializeToString() == data


def test_kapi_document_round_trips_to_the_json_document(
    pb: dict[str, type[Message]], kapi_doc: dict[str, Any]
) -> None:
    assert _to_json(_parse(pb, encode_openapi_v2(kapi_doc))) == kapi_doc


def test_definitions_reach_pod_properties(pb: dict[str, type[Message]], kapi_doc: dict[str, Any]) -> None:
    doc: Any = _parse(pb, encode_openapi_v2(kapi_doc))
    defs = {d.name: d.value for d in doc.definitions.additional_properties}
    pod = defs["io.k8s.api.core.v1.Pod"]
    assert list(pod.type.value) == ["object"]
    props = {p.name: p.value for p in pod.properties.additional_properties}
    assert props["spec"]._ref == "#/definitions/io.k8s.api.core.v1.PodSpec"
    gvk = {e.name: yaml.safe_load(e.value.yaml) for e in pod.vendor_extension}["x-kubernetes-group-version-kind"]
    assert gvk == [{"group": "", "kind": "Pod", "version": "v1"}]
    spec = {p.name: p.value for p in defs["io.k8s.api.core.v1.PodSpec"].properties.additional_properties}
    containers = spec["containers"]
    assert [s._ref for s in containers.items.schema] == ["#/definitions/io.k8s.api.core.v1.Container"]
    assert {e.name for e in containers.vendor_extension} >= {"x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy"}
    labels = {p.name: p.value for p in defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].properties.additional_properties}["labels"]
    assert labels.additional_properties.WhichOneof("oneof") == "schema"
    assert list(labels.additional_properties.schema.type.value) == ["string"]


def test_patch_declares_field_validation_as_kubectl_checks_it(
    pb: dict[str, type[Message]], kapi_doc: dict[str, Any]
) -> None:
    """kubectl looks for the query parameter on the patch operation tagged with the kind's GVK."""
    doc: Any = _parse(pb, encode_openapi_v2(kapi_doc))
    found = []
    for path in doc.paths.path:
        op = path.value.patch
        if not path.value.HasField("patch"):
            continue
        exts = {e.name: yaml.safe_load(e.value.yaml) for e in op.vendor_extension}
        if exts.get("x-kubernetes-group-version-kind") != {"group": "apps", "kind": "Deployment", "version": "v1"}:
            continue
        query = [p.parameter.non_body_parameter.query_parameter_sub_schema for p in op.parameters]
        found.append((path.name, [q.name for q in query if q.name]))
        body = [p.parameter.body_parameter for p in op.parameters if p.parameter.HasField("body_parameter")]
        assert [(b.name, b.required, b.schema._ref) for b in body] == [
            ("body", True, "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch")
        ]
    paths = dict(found)
    assert "fieldValidation" in paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert "fieldValidation" in paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]


def test_path_level_parameters_and_responses(pb: dict[str, type[Message]], kapi_doc: dict[str, Any]) -> None:
    doc: Any = _parse(pb, encode_openapi_v2(kapi_doc))
    item = {p.name: p.value for p in doc.paths.path}["/api/v1/namespaces/{namespace}/pods/{name}"]
    kinds = [p.parameter.non_body_parameter.WhichOneof("oneof") for p in item.parameters]
    assert kinds == ["path_parameter_sub_schema", "path_parameter_sub_schema", "query_parameter_sub_schema"]
    name = item.parameters[0].parameter.non_body_parameter.path_parameter_sub_schema
    assert (name.name, getattr(name, "in"), name.required, name.type) == ("name", "path", True, "string")
    codes = {r.name: r.value for r in item.get.responses.response_code}
    assert sorted(codes) == ["200", "401"]
    assert codes["200"].response.schema.schema._ref == "#/definitions/io.k8s.api.core.v1.Pod"
    assert codes["401"].response.description == "Unauthorized"
    assert not codes["401"].response.HasField("schema")


def test_security(pb: dict[str, type[Message]], kapi_doc: dict[str, Any]) -> None:
    doc: Any = _parse(pb, encode_openapi_v2(kapi_doc))
    [requirement] = doc.security
    [(name, scopes)] = [(r.name, r.value) for r in requirement.additional_properties]
    assert name == "BearerToken" and list(scopes.value) == []
    [scheme] = doc.security_definitions.additional_properties
    key = scheme.value.api_key_security
    assert (scheme.name, key.type, key.name, getattr(key, "in")) == ("BearerToken", "apiKey", "authorization", "header")


# ---------------------------------------------------------------- the rest of swagger 2.0

FULL = {
    "swagger": "2.0",
    "info": {"title": "t", "version": "1", "description": "d", "termsOfService": "tos",
             "contact": {"name": "n", "url": "u", "email": "e"}, "license": {"name": "Apache"}, "x-info": 1},
    "host": "example.org",
    "basePath": "/base",
    "schemes": ["https"],
    "consumes": ["application/json"],
    "produces": ["application/json", "application/yaml"],
    "paths": {
        "x-paths": {"a": [1, 2]},
        "/things/{id}": {
            "parameters": [
                {"$ref": "#/parameters/shared"},
                {"in": "header", "name": "X-Trace", "type": "string"},
                {"in": "formData", "name": "f", "type": "integer", "allowEmptyValue": True, "maximum": 10,
                 "minimum": -3, "exclusiveMinimum": True, "multipleOf": 0.5},
            ],
            "get": {
                "summary": "s", "deprecated": True, "schemes": ["https"],
                "externalDocs": {"url": "https://example.org/docs"},
                "parameters": [
                    {"in": "query", "name": "q", "type": "array", "collectionFormat": "csv", "enum": ["a", "b"],
                     "default": "a", "maxItems": 3, "minItems": 1, "maxLength": 5, "minLength": 2,
                     "pattern": "^x", "uniqueItems": True,
                     "items": {"type": "string", "format": "byte", "items": {"type": "integer"}, "x-i": True}},
                ],
                "responses": {
                    "200": {"description": "OK", "schema": {"type": "array", "items": {"$ref": "#/definitions/Thing"}},
                            "headers": {"X-Rate": {"type": "integer", "description": "rate"}},
                            "examples": {"application/json": {"k": "v"}}},
                    "404": {"$ref": "#/responses/missing"},
                    "default": {"description": "error"},
                    "x-resp": "r",
                },
                "security": [{"oauth": ["read", "write"]}],
                "x-kubernetes-action": "get",
            },
            "head": {"responses": {"200": {"description": "OK"}}},
            "options": {"responses": {"200": {"description": "OK"}}},
        },
    },
    "definitions": {
        "Thing": {
            "type": "object",
            "title": "A thing",
            "required": ["id", "tags"],
            "discriminator": "kind",
            "properties": {
                "id": {"type": "integer", "format": "int64", "minimum": 1, "maximum": 1e18, "readOnly": True},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10, "minItems": 1},
                "meta": {"type": "object", "additionalProperties": False, "maxProperties": 4, "minProperties": 1},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red", "example": "green"},
                "either": {"type": ["string", "null"]},
                "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                "mixed": {"allOf": [{"$ref": "#/definitions/Base"}, {"description": "more"}]},
                "free": {},
                "xml": {"type": "string", "xml": {"name": "x", "namespace": "ns", "prefix": "p", "attribute": True,
                                                    "wrapped": True}},
                "num": {"type": "number", "multipleOf": 0.25, "exclusiveMaximum": True, "exclusiveMinimum": True,
                        "maxLength": 2, "minLength": 1, "pattern": "[0-9]", "uniqueItems": True},
            },
            "externalDocs": {"description": "more", "url": "https://example.org"},
            "x-kubernetes-group-version-kind": [{"group": "g", "kind": "Thing", "version": "v1"}],
            "x-kubernetes-unions": [{"discriminator": "kind", "fields-to-discriminateBy": {"a": "A"}}],
        },
        "Base": {"description": "base"},
    },
    "parameters": {
        "shared": {"in": "path", "name": "id", "required": True, "type": "string"},
        "payload": {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/Thing"}, "x-p": None},
    },
    "responses": {"missing": {"description": "not found", "schema": {"$ref": "#/definitions/Base"}}},
    "security": [{"key": []}, {"basic": []}],
    "securityDefinitions": {
        "key": {"type": "apiKey", "name": "authorization", "in": "header", "description": "token"},
        "basic": {"type": "basic", "description": "b", "x-b": "y"},
        "implicit": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "https://a", "scopes": {"read": "r"}},
        "password": {"type": "oauth2", "flow": "password", "tokenUrl": "https://t", "scopes": {}},
        "application": {"type": "oauth2", "flow": "application", "tokenUrl": "https://t", "description": "app",
                        "scopes": {"write": "w"}},
        "accessCode": {"type": "oauth2", "flow": "accessCode", "authorizationUrl": "https://a", "tokenUrl": "https://t",
                       "scopes": {"read": "r", "write": "w"}},
    },
    "tags": [{"name": "things", "description": "all things", "externalDocs": {"url": "https://example.org/t"}}],
    "externalDocs": {"url": "https://example.org"},
    "x-top": {"nested": ["a", {"b": 1.5}]},
}


def test_every_swagger_field_round_trips(pb: dict[str, type[Message]]) -> None:
    data = encode_openapi_v2(FULL)
    doc = _parse(pb, data)
    assert _unknown_fields(doc) == []
    assert doc.SerializeToString() == data
    assert _to_json(doc) == FULL


def test_false_additional_properties_is_kept(pb: dict[str, type[Message]]) -> None:
    """``additionalProperties: false`` sets the oneof to false; leaving it out would mean "anything"."""
    doc: Any = _parse(pb, encode_openapi_v2({"definitions": {"Closed": {"additionalProperties": False}}}))
    [closed] = doc.definitions.additional_properties
    assert closed.value.HasField("additional_properties")
    assert closed.value.additional_properties.WhichOneof("oneof") == "boolean"
    assert closed.value.additional_properties.boolean is False


def test_keys_the_proto_lacks_are_dropped_unless_vendor_extensions(pb: dict[str, type[Message]]) -> None:
    src = {
        "swagger": "2.0",
        "openapi": "3.0.0",
        "definitions": {"T": {"type": "object", "nullable": True, "x-kubernetes-preserve-unknown-fields": True}},
        "paths": {"/a": {"get": {"responses": {"200": {"description": "OK"}, "2XX": {"description": "?"}}}},
                  "not-a-path": {}},
    }
    doc = _parse(pb, encode_openapi_v2(src))
    assert _unknown_fields(doc) == []
    assert _to_json(doc) == {
        "swagger": "2.0",
        "definitions": {"T": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "paths": {"/a": {"get": {"responses": {"200": {"description": "OK"}}}}},
    }


def test_zero_numbers_are_left_out_as_proto3_does(pb: dict[str, type[Message]]) -> None:
    """Scalars have no presence in proto3: ``minimum: 0`` reads back as unset, as from kube-apiserver."""
    doc = _parse(pb, encode_openapi_v2({"definitions": {"N": {"type": "integer", "minimum": 0, "maximum": 5}}}))
    assert _to_json(doc) == {"definitions": {"N": {"type": "integer", "maximum": 5}}}


def test_empty_schema_is_present_not_absent(pb: dict[str, type[Message]]) -> None:
    doc: Any = _parse(pb, encode_openapi_v2({"definitions": {"Any": {}}}))
    [entry] = doc.definitions.additional_properties
    assert entry.name == "Any" and entry.HasField("value")


def test_protoc_decode_raw_reads_it(kapi_doc: dict[str, Any]) -> None:
    out = subprocess.run(
        [*protoc(), "--decode_raw"], input=encode_openapi_v2(kapi_doc), capture_output=True, check=True
    ).stdout.decode()
    assert out.startswith('1: "2.0"\n')
    assert '1: "io.k8s.api.core.v1.Pod"' in out
    assert '4: "fieldValidation"' in out


# ---------------------------------------------------------------- the wire writer and reader


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
     (-1, b"\xff" * 9 + b"\x01"), ((1 << 64) - 1, b"\xff" * 9 + b"\x01")],
)
def test_varint(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded


def test_writer_matches_protobuf_for_scalars(pb: dict[str, type[Message]]) -> None:
    ref: Any = pb["QueryParameterSubSchema"](
        required=True, name="n", maximum=-2.5, max_length=-7, min_items=300, unique_items=False
    )
    w = MessageWriter().boolean(1, True).string(4, "n").double(11, -2.5).varint(15, -7).varint(19, 300)
    w.boolean(20, False)  # proto3 leaves defaults out
    assert w.finish() == ref.SerializeToString()


def test_reader_returns_each_wire_type() -> None:
    data = (
        MessageWriter().varint(1, 150).double(2, 1.5).string(3, "hé").message(4, b"").strings(5, ["a", ""])
        .boolean(6, False, always=True).finish()
    )
    assert list(iter_fields(data)) == [
        (1, VARINT, 150), (2, FIXED64, struct.pack("<d", 1.5)), (3, LEN, "hé".encode()), (4, LEN, b""),
        (5, LEN, b"a"), (5, LEN, b""), (6, VARINT, 0),
    ]
    assert fields_by_number(data)[5] == [b"a", b""]


@pytest.mark.parametrize("data", [b"\x08", b"\x08\xff", b"\x12\x05abc", b"\x11\x00", b"\x0b", b"\x00\x01"])
def test_reader_rejects_malformed_input(data: bytes) -> None:
    with pytest.raises(errors.BadRequest):
        list(iter_fields(data))


@given(st.lists(st.tuples(st.integers(1, 2**29 - 1), st.integers(0, 2**64 - 1) | st.binary(max_size=40))))
def test_writer_and_reader_round_trip(fields: list[tuple[int, int | bytes]]) -> None:
    w = MessageWriter()
    for number, value in fields:
        if isinstance(value, int):
            w.varint(number, value, always=True)
        else:
            w.raw(number, value, always=True)
    assert [(n, v) for n, _t, v in iter_fields(w.finish())] == fields
