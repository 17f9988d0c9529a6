"""The swagger 2.0 document as the gnostic ``openapi.v2.Document`` protobuf message.

kubectl and client-go ask for ``/openapi/v2`` as
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``. kube-apiserver
builds that body by running gnostic's compiler over its JSON document; this module
does the same mapping for the subset of swagger 2.0 kapi emits, with the field
numbers of gnostic's ``openapiv2/OpenAPIv2.proto``:

- JSON maps become repeated ``Named*`` messages (``name = 1``, ``value = 2``) in
  document order;
- ``x-`` keys become ``repeated NamedAny vendor_extension`` whose ``Any.yaml``
  (field 2) holds the value as text;
- other keys the proto has no field for are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from kapi.encoding.protowire import MessageWriter

__all__ = ["CONTENT_TYPE", "encode_openapi_v2"]

CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_JSON = dict[str, Any]
_Encoder = Callable[[Any], bytes | None]


def encode_openapi_v2(doc: dict[str, Any]) -> bytes:
    """The gnostic ``openapi.v2.Document`` encoding of a swagger 2.0 dict."""
    w = MessageWriter()
    w.string(1, _str(doc.get("swagger")))
    w.message(2, _info(doc.get("info")))
    w.string(3, _str(doc.get("host")))
    w.string(4, _str(doc.get("basePath")))
    w.strings(5, _str_list(doc.get("schemes")))
    w.strings(6, _str_list(doc.get("consumes")))
    w.strings(7, _str_list(doc.get("produces")))
    w.message(8, _paths(doc.get("paths")))
    w.message(9, _named_wrapper(doc.get("definitions"), _schema))
    w.message(10, _named_wrapper(doc.get("parameters"), _parameter))
    w.message(11, _named_wrapper(doc.get("responses"), _response))
    w.messages(12, _each(doc.get("security"), _security_requirement))
    w.message(13, _named_wrapper(doc.get("securityDefinitions"), _security_definitions_item))
    w.messages(14, _each(doc.get("tags"), _tag))
    w.message(15, _external_docs(doc.get("externalDocs")))
    w.messages(16, _vendor_extensions(doc))
    return w.finish()


# ---------------------------------------------------------------- plumbing


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _int(value: Any) -> int:
    # JSON numbers like 5.0 still fill int64 fields; bools are not numbers here.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def _bool(value: Any) -> bool:
    return value is True


def _each(values: Any, encode: _Encoder) -> list[bytes]:
    """Encode every element of a JSON list, skipping those that do not fit."""
    if not isinstance(values, list):
        return []
    return [b for b in map(encode, values) if b is not None]


def _named(pairs: Iterable[tuple[str, bytes | None]]) -> list[bytes]:
    """``Named*`` messages: name = 1, value = 2."""
    out = []
    for name, value in pairs:
        if value is not None:
            out.append(MessageWriter().string(1, name).message(2, value).finish())
    return out


def _named_wrapper(obj: Any, encode: _Encoder) -> bytes | None:
    """A map wrapper message: ``repeated Named* additional_properties = 1``."""
    if not isinstance(obj, dict):
        return None
    return MessageWriter().messages(1, _named((k, encode(v)) for k, v in obj.items())).finish()


def _any(value: Any) -> bytes:
    """``Any{yaml = 2}``: JSON text, which YAML readers accept as flow style."""
    text = orjson.dumps(value).decode() + "\n"
    return MessageWriter().string(2, text).finish()


def _vendor_extensions(obj: Any) -> list[bytes]:
    """The ``x-`` keys of a JSON object as ``NamedAny`` messages."""
    if not isinstance(obj, dict):
        return []
    return _named((k, _any(v)) for k, v in obj.items() if k.startswith("x-"))


def _external_docs(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().string(1, _str(obj.get("description"))).string(2, _str(obj.get("url")))
    return w.messages(3, _vendor_extensions(obj)).finish()


# ---------------------------------------------------------------- info and tags


def _info(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    w.string(1, _str(obj.get("title")))
    w.string(2, _str(obj.get("version")))
    w.string(3, _str(obj.get("description")))
    w.string(4, _str(obj.get("termsOfService")))
    w.message(5, _contact(obj.get("contact")))
    w.message(6, _license(obj.get("license")))
    w.messages(7, _vendor_extensions(obj))
    return w.finish()


def _contact(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().string(1, _str(obj.get("name"))).string(2, _str(obj.get("url")))
    return w.string(3, _str(obj.get("email"))).messages(4, _vendor_extensions(obj)).finish()


def _license(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().string(1, _str(obj.get("name"))).string(2, _str(obj.get("url")))
    return w.messages(3, _vendor_extensions(obj)).finish()


def _tag(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().string(1, _str(obj.get("name"))).string(2, _str(obj.get("description")))
    return w.message(3, _external_docs(obj.get("externalDocs"))).messages(4, _vendor_extensions(obj)).finish()


# ---------------------------------------------------------------- schemas


def _schema(obj: Any) -> bytes | None:
    """``Schema``; ``type`` and ``items`` take a single value or a list, as in JSON."""
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    w.string(1, _str(obj.get("$ref")))
    w.string(2, _str(obj.get("format")))
    w.string(3, _str(obj.get("title")))
    w.string(4, _str(obj.get("description")))
    if "default" in obj:
        w.message(5, _any(obj["default"]))
    w.double(6, _float(obj.get("multipleOf")))
    w.double(7, _float(obj.get("maximum")))
    w.boolean(8, _bool(obj.get("exclusiveMaximum")))
    w.double(9, _float(obj.get("minimum")))
    w.boolean(10, _bool(obj.get("exclusiveMinimum")))
    w.varint(11, _int(obj.get("maxLength")))
    w.varint(12, _int(obj.get("minLength")))
    w.string(13, _str(obj.get("pattern")))
    w.varint(14, _int(obj.get("maxItems")))
    w.varint(15, _int(obj.get("minItems")))
    w.boolean(16, _bool(obj.get("uniqueItems")))
    w.varint(17, _int(obj.get("maxProperties")))
    w.varint(18, _int(obj.get("minProperties")))
    w.strings(19, _str_list(obj.get("required")))
    w.messages(20, _each(obj.get("enum"), _any))
    w.message(21, _additional_properties(obj.get("additionalProperties")))
    if "type" in obj:
        w.message(22, MessageWriter().strings(1, _str_list(obj["type"])).finish())
    if "items" in obj:
        items = obj["items"] if isinstance(obj["items"], list) else [obj["items"]]
        w.message(23, MessageWriter().messages(1, _each(items, _schema)).finish())
    w.messages(24, _each(obj.get("allOf"), _schema))
    w.message(25, _named_wrapper(obj.get("properties"), _schema))
    w.string(26, _str(obj.get("discriminator")))
    w.boolean(27, _bool(obj.get("readOnly")))
    w.message(28, _xml(obj.get("xml")))
    w.message(29, _external_docs(obj.get("externalDocs")))
    if "example" in obj:
        w.message(30, _any(obj["example"]))
    w.messages(31, _vendor_extensions(obj))
    return w.finish()


def _additional_properties(value: Any) -> bytes | None:
    """``AdditionalPropertiesItem``: oneof schema = 1 | boolean = 2."""
    if isinstance(value, bool):
        # A set oneof member is written even when false: `false` is the point.
        return MessageWriter().boolean(2, value, always=True).finish()
    sub = _schema(value)
    return None if sub is None else MessageWriter().message(1, sub).finish()


def _xml(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    w.string(1, _str(obj.get("name"))).string(2, _str(obj.get("namespace"))).string(3, _str(obj.get("prefix")))
    w.boolean(4, _bool(obj.get("attribute"))).boolean(5, _bool(obj.get("wrapped")))
    return w.messages(6, _vendor_extensions(obj)).finish()


# ---------------------------------------------------------------- paths and operations


_METHODS = (("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("options", 6), ("head", 7), ("patch", 8))


def _paths(obj: Any) -> bytes | None:
    """``Paths``: vendor_extension = 1, then one ``NamedPathItem`` per ``/`` key."""
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().messages(1, _vendor_extensions(obj))
    w.messages(2, _named((k, _path_item(v)) for k, v in obj.items() if k.startswith("/")))
    return w.finish()


def _path_item(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().string(1, _str(obj.get("$ref")))
    for method, number in _METHODS:
        w.message(number, _operation(obj.get(method)))
    w.messages(9, _each(obj.get("parameters"), _parameters_item))
    return w.messages(10, _vendor_extensions(obj)).finish()


def _operation(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    w.strings(1, _str_list(obj.get("tags")))
    w.string(2, _str(obj.get("summary")))
    w.string(3, _str(obj.get("description")))
    w.message(4, _external_docs(obj.get("externalDocs")))
    w.string(5, _str(obj.get("operationId")))
    w.strings(6, _str_list(obj.get("produces")))
    w.strings(7, _str_list(obj.get("consumes")))
    w.messages(8, _each(obj.get("parameters"), _parameters_item))
    w.message(9, _responses(obj.get("responses")))
    w.strings(10, _str_list(obj.get("schemes")))
    w.boolean(11, _bool(obj.get("deprecated")))
    w.messages(12, _each(obj.get("security"), _security_requirement))
    w.messages(13, _vendor_extensions(obj))
    return w.finish()


def _json_reference(obj: _JSON) -> bytes:
    return MessageWriter().string(1, _str(obj.get("$ref"))).string(2, _str(obj.get("description"))).finish()


def _parameters_item(obj: Any) -> bytes | None:
    """``ParametersItem``: oneof parameter = 1 | json_reference = 2."""
    if not isinstance(obj, dict):
        return None
    if "$ref" in obj:
        return MessageWriter().message(2, _json_reference(obj)).finish()
    param = _parameter(obj)
    return None if param is None else MessageWriter().message(1, param).finish()


# Where each non-body location sits in the NonBodyParameter oneof, and the field
# number of its `type`: query and formData have allow_empty_value = 5 before it.
_NON_BODY = {"header": (1, 5), "formData": (2, 6), "query": (3, 6), "path": (4, 5)}


def _parameter(obj: Any) -> bytes | None:
    """``Parameter``: oneof body_parameter = 1 | non_body_parameter = 2."""
    if not isinstance(obj, dict):
        return None
    where = obj.get("in")
    if where == "body":
        w = MessageWriter()
        w.string(1, _str(obj.get("description")))
        w.string(2, _str(obj.get("name")))
        w.string(3, "body")
        w.boolean(4, _bool(obj.get("required")))
        w.message(5, _schema(obj.get("schema")))
        w.messages(6, _vendor_extensions(obj))
        return MessageWriter().message(1, w.finish()).finish()
    if not isinstance(where, str) or where not in _NON_BODY:
        return None
    choice, first = _NON_BODY[where]
    w = MessageWriter()
    w.boolean(1, _bool(obj.get("required")))
    w.string(2, where)
    w.string(3, _str(obj.get("description")))
    w.string(4, _str(obj.get("name")))
    if first == 6:
        w.boolean(5, _bool(obj.get("allowEmptyValue")))
    _primitive_fields(w, obj, first)
    w.messages(first + 17, _vendor_extensions(obj))
    sub = MessageWriter().message(choice, w.finish()).finish()
    return MessageWriter().message(2, sub).finish()


def _primitive_fields(w: MessageWriter, obj: _JSON, first: int) -> None:
    """The run of fields from ``type`` to ``multipleOf`` shared by the non-body parameter,
    ``PrimitivesItems`` and ``Header`` messages; ``type`` is field ``first``."""
    w.string(first, _str(obj.get("type")))
    w.string(first + 1, _str(obj.get("format")))
    w.message(first + 2, _primitives_items(obj.get("items")))
    w.string(first + 3, _str(obj.get("collectionFormat")))
    if "default" in obj:
        w.message(first + 4, _any(obj["default"]))
    w.double(first + 5, _float(obj.get("maximum")))
    w.boolean(first + 6, _bool(obj.get("exclusiveMaximum")))
    w.double(first + 7, _float(obj.get("minimum")))
    w.boolean(first + 8, _bool(obj.get("exclusiveMinimum")))
    w.varint(first + 9, _int(obj.get("maxLength")))
    w.varint(first + 10, _int(obj.get("minLength")))
    w.string(first + 11, _str(obj.get("pattern")))
    w.varint(first + 12, _int(obj.get("maxItems")))
    w.varint(first + 13, _int(obj.get("minItems")))
    w.boolean(first + 14, _bool(obj.get("uniqueItems")))
    w.messages(first + 15, _each(obj.get("enum"), _any))
    w.double(first + 16, _float(obj.get("multipleOf")))


def _primitives_items(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    _primitive_fields(w, obj, 1)
    return w.messages(18, _vendor_extensions(obj)).finish()


def _header(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    _primitive_fields(w, obj, 1)
    w.string(18, _str(obj.get("description")))
    return w.messages(19, _vendor_extensions(obj)).finish()


# ---------------------------------------------------------------- responses


def _is_response_code(key: str) -> bool:
    return key == "default" or (len(key) == 3 and key.isdigit())


def _responses(obj: Any) -> bytes | None:
    """``Responses``: one ``NamedResponseValue`` per status code, then extensions."""
    if not isinstance(obj, dict):
        return None
    w = MessageWriter()
    w.messages(1, _named((k, _response_value(v)) for k, v in obj.items() if _is_response_code(k)))
    return w.messages(2, _vendor_extensions(obj)).finish()


def _response_value(obj: Any) -> bytes | None:
    """``ResponseValue``: oneof response = 1 | json_reference = 2."""
    if not isinstance(obj, dict):
        return None
    if "$ref" in obj:
        return MessageWriter().message(2, _json_reference(obj)).finish()
    response = _response(obj)
    return None if response is None else MessageWriter().message(1, response).finish()


def _response(obj: Any) -> bytes | None:
    if not isinstance(obj, dict):
        return None
    w = MessageWriter().string(1, _str(obj.get("description")))
    schema = _schema(obj.get("schema"))
    if schema is not None:
        # SchemaItem: oneof schema = 1 | file_schema = 2; kapi never serves files.
        w.message(2, MessageWriter().message(1, schema).finish())
    w.message(3, _named_wrapper(obj.get("headers"), _header))
    w.message(4, _named_wrapper(obj.get("examples"), _any))
    return w.messages(5, _vendor_extensions(obj)).finish()


# ---------------------------------------------------------------- security


def _security_requirement(obj: Any) -> bytes | None:
    """``SecurityRequirement``: ``NamedStringArray`` per scheme, scopes in ``StringArray.value``."""
    if not isinstance(obj, dict):
        return None
    scopes = ((k, MessageWriter().strings(1, _str_list(v)).finish()) for k, v in obj.items())
    return MessageWriter().messages(1, _named(scopes)).finish()


# OAuth2 flows: (oneof field, has authorization_url, has token_url).
_OAUTH2 = {
    "implicit": (3, True, False),
    "password": (4, False, True),
    "application": (5, False, True),
    "accessCode": (6, True, True),
}


def _security_definitions_item(obj: Any) -> bytes | None:
    """``SecurityDefinitionsItem``: the oneof member chosen by ``type`` (and OAuth2 ``flow``)."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    w = MessageWriter().string(1, _str(kind))
    if kind == "basic":
        w.string(2, _str(obj.get("description"))).messages(3, _vendor_extensions(obj))
        choice = 1
    elif kind == "apiKey":
        w.string(2, _str(obj.get("name"))).string(3, _str(obj.get("in")))
        w.string(4, _str(obj.get("description"))).messages(5, _vendor_extensions(obj))
        choice = 2
    elif kind == "oauth2" and obj.get("flow") in _OAUTH2:
        choice, has_auth_url, has_token_url = _OAUTH2[obj["flow"]]
        w.string(2, obj["flow"])
        w.message(3, _named_wrapper(obj.get("scopes"), _scope))
        number = 4
        for present, key in ((has_auth_url, "authorizationUrl"), (has_token_url, "tokenUrl")):
            if present:
                w.string(number, _str(obj.get(key)))
                number += 1
        w.string(number, _str(obj.get("description"))).messages(number + 1, _vendor_extensions(obj))
    else:
        return None
    return MessageWriter().message(choice, w.finish()).finish()


def _scope(value: Any) -> bytes | None:
    """Raw string for ``NamedString.value``: _named writes it as a length-delimited field."""
    return value.encode() if isinstance(value, str) else None
