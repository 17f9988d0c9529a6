"""The protobuf field-number table of the built-in types, and its join with the JSON schema."""

from __future__ import annotations

import pytest

from kapi.object.schema import ProtoField, ProtoMessage, Schema, TypeDef, load_builtin, load_proto_messages

CORE = "k8s.io.api.core.v1."
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
RUNTIME = "k8s.io.apimachinery.pkg.runtime."
CRD = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."

# kapi types without a protobuf message, and why.
NO_MESSAGE: dict[str, str] = {
    # meta.k8s.io Table is +protobuf=false in Kubernetes: kube-apiserver serves Tables
    # only as JSON or YAML, so there are no numbers to record.
    "io.k8s.apimachinery.pkg.apis.meta.v1.Table": "no protobuf form in Kubernetes",
    "io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition": "no protobuf form in Kubernetes",
    "io.k8s.apimachinery.pkg.apis.meta.v1.TableRow": "no protobuf form in Kubernetes",
    "io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition": "no protobuf form in Kubernetes",
    # /version answers JSON only.
    "io.k8s.apimachinery.pkg.version.Info": "JSON-only document",
}

SCALARS = {"string", "int32", "int64", "bool", "bytes", "double"}


@pytest.fixture(scope="module")
def messages() -> dict[str, ProtoMessage]:
    return dict(load_proto_messages())


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_builtin()


def numbers(msg: ProtoMessage) -> dict[str, int]:
    return {name: f.number for name, f in msg.fields.items()}


def test_table_loads(messages: dict[str, ProtoMessage]) -> None:
    assert len(messages) > 400
    assert all(isinstance(m, ProtoMessage) and m.name == name for name, m in messages.items())
    assert messages[CORE + "Pod"].json_type_name == "io.k8s.api.core.v1.Pod"


def test_well_known_object_numbers(messages: dict[str, ProtoMessage]) -> None:
    assert numbers(messages[CORE + "Pod"]) == {"metadata": 1, "spec": 2, "status": 3}
    assert numbers(messages[META + "ObjectMeta"]) == {
        "name": 1, "generateName": 2, "namespace": 3, "selfLink": 4, "uid": 5,
        "resourceVersion": 6, "generation": 7, "creationTimestamp": 8, "deletionTimestamp": 9,
        "deletionGracePeriodSeconds": 10, "labels": 11, "annotations": 12, "ownerReferences": 13,
        "finalizers": 14, "managedFields": 17,
    }  # fmt: skip
    listmeta = numbers(messages[META + "ListMeta"])
    assert {k: listmeta[k] for k in ("selfLink", "resourceVersion", "continue", "remainingItemCount")} == {
        "selfLink": 1, "resourceVersion": 2, "continue": 3, "remainingItemCount": 4,
    }  # fmt: skip
    container = messages[CORE + "Container"].fields
    assert (container["name"].number, container["image"].number) == (1, 2)
    assert numbers(messages[META + "Status"]) == {
        "metadata": 1, "status": 2, "message": 3, "reason": 4, "details": 5, "code": 6,
    }  # fmt: skip
    assert numbers(messages[META + "WatchEvent"]) == {"type": 1, "object": 2}


def test_field_types_and_labels(messages: dict[str, ProtoMessage]) -> None:
    spec = messages[CORE + "PodSpec"].fields
    assert spec["containers"] == ProtoField(2, CORE + "Container", "repeated")
    assert spec["nodeSelector"] == ProtoField(7, "map", "map", "string", "string")
    assert spec["overhead"].value == "k8s.io.apimachinery.pkg.api.resource.Quantity"
    binary = messages[CORE + "ConfigMap"].fields["binaryData"]
    assert binary == ProtoField(3, "map", "map", "string", "bytes")
    meta = messages[META + "ObjectMeta"].fields
    assert meta["creationTimestamp"] == ProtoField(8, META + "Time", "optional")
    assert meta["labels"] == ProtoField(11, "map", "map", "string", "string")


def test_runtime_envelope(messages: dict[str, ProtoMessage]) -> None:
    unknown = messages[RUNTIME + "Unknown"]
    assert unknown.json == "unknown"
    assert unknown.fields == {
        "typeMeta": ProtoField(1, RUNTIME + "TypeMeta", "optional"),
        "raw": ProtoField(2, "bytes", "optional"),
        "contentEncoding": ProtoField(3, "string", "optional"),
        "contentType": ProtoField(4, "string", "optional"),
    }
    assert numbers(messages[RUNTIME + "TypeMeta"]) == {"apiVersion": 1, "kind": 2}
    assert messages[RUNTIME + "RawExtension"].fields == {"raw": ProtoField(1, "bytes", "optional")}


def test_special_kubernetes_types(messages: dict[str, ProtoMessage]) -> None:
    timestamp = {"seconds": ProtoField(1, "int64", "optional"), "nanos": ProtoField(2, "int32", "optional")}
    assert (messages[META + "Time"].json, messages[META + "Time"].fields) == ("time", timestamp)
    micro = messages[META + "MicroTime"]
    assert (micro.json, micro.fields) == ("microtime", timestamp)
    assert messages[META + "Duration"].fields == {"duration": ProtoField(1, "int64", "optional")}
    intstr = messages["k8s.io.apimachinery.pkg.util.intstr.IntOrString"]
    assert intstr.json == "int-or-string"
    assert intstr.fields == {
        "type": ProtoField(1, "int64", "optional"),
        "intVal": ProtoField(2, "int32", "optional"),
        "strVal": ProtoField(3, "string", "optional"),
    }
    quantity = messages["k8s.io.apimachinery.pkg.api.resource.Quantity"]
    assert (quantity.json, quantity.fields) == ("quantity", {"string": ProtoField(1, "string", "optional")})
    assert messages[META + "FieldsV1"].fields == {"Raw": ProtoField(1, "bytes", "optional")}
    assert messages[META + "Verbs"].json == "list"
    extra = messages["k8s.io.api.authentication.v1.ExtraValue"]
    assert (extra.json, extra.fields) == ("list", {"items": ProtoField(1, "string", "repeated")})


def test_json_names_that_differ_from_proto_names(messages: dict[str, ProtoMessage]) -> None:
    props = messages[CRD + "JSONSchemaProps"].fields
    assert props["$ref"].number == 3
    assert props["$schema"].number == 2
    assert props["x-kubernetes-preserve-unknown-fields"] == ProtoField(38, "bool", "optional")
    assert props["maximum"].type == "double"
    assert "ref" not in props
    # go-to-protobuf named this field uID; its JSON name is uid.
    assert messages["k8s.io.api.authentication.v1.BoundObjectReference"].fields["uid"].number == 4


def test_inline_messages(messages: dict[str, ProtoMessage]) -> None:
    volume = messages[CORE + "Volume"]
    assert volume.inline == ("volumeSource",)
    assert volume.fields["volumeSource"] == ProtoField(2, CORE + "VolumeSource", "optional")
    assert messages[CORE + "VolumeSource"].fields["emptyDir"].number == 2
    assert messages[CORE + "EphemeralContainer"].inline == ("ephemeralContainerCommon",)
    assert messages[CORE + "SecretKeySelector"].inline == ("localObjectReference",)
    assert messages[CORE + "Probe"].inline == ("handler",)


def test_every_reference_resolves(messages: dict[str, ProtoMessage]) -> None:
    for msg in messages.values():
        seen: set[int] = set()
        for name, f in msg.fields.items():
            assert f.number > 0 and f.number not in seen, (msg.name, name)
            seen.add(f.number)
            target = f.value if f.label == "map" else f.type
            assert target in SCALARS or target in messages, (msg.name, name, target)
            if f.label == "map":
                assert f.type == "map" and f.key == "string", (msg.name, name)
            else:
                assert f.label in ("optional", "repeated"), (msg.name, name)
        for name in msg.inline:
            assert msg.fields[name].type in messages, (msg.name, name)


def test_load_builtin_fills_numbers(schema: Schema) -> None:
    pod = schema.type("io.k8s.api.core.v1.Pod")
    assert pod.proto == CORE + "Pod"
    assert [pod.fields[n].proto for n in ("metadata", "spec", "status")] == [1, 2, 3]
    assert pod.fields["apiVersion"].proto is None  # carried by the runtime.Unknown envelope
    meta = schema.type("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    assert meta.proto == META + "ObjectMeta"
    assert meta.fields["managedFields"].proto == 17
    assert schema.type("io.k8s.api.apps.v1.DeploymentSpec").fields["template"].proto == 3
    # A field that JSON shows flat but the wire nests in an inline message has no own number.
    assert schema.type("io.k8s.api.core.v1.Volume").fields["emptyDir"].proto is None
    assert schema.type("io.k8s.apimachinery.pkg.apis.meta.v1.Table").proto == ""


def _carried(messages: dict[str, ProtoMessage], msg: ProtoMessage) -> set[str]:
    """JSON field names a message carries, following inline messages."""
    names = set(msg.fields) - set(msg.inline)
    for name in msg.inline:
        names |= _carried(messages, messages[msg.fields[name].type])
    return names


def _gaps(schema: Schema, messages: dict[str, ProtoMessage]) -> list[str]:
    gaps: list[str] = []
    for t in schema:
        if not t.proto:
            if t.fields and t.name not in NO_MESSAGE:
                gaps.append(f"{t.name}: no message")
            continue
        have = _carried(messages, messages[t.proto])
        gaps.extend(f"{t.name}.{f}" for f in t.fields if f not in have and f not in ("apiVersion", "kind"))
    return sorted(gaps)


def test_every_json_field_of_the_served_types_has_a_number(
    schema: Schema, messages: dict[str, ProtoMessage]
) -> None:
    assert _gaps(schema, messages) == []
    assert all(schema.get(name) is not None and not schema.type(name).proto for name in NO_MESSAGE)


def test_every_served_kind_has_a_message(schema: Schema) -> None:
    missing = {t.name for _, t in schema.kinds() if not t.proto}
    assert missing == {"io.k8s.apimachinery.pkg.apis.meta.v1.Table"}


def test_coverage_check_finds_a_missing_number(schema: Schema, messages: dict[str, ProtoMessage]) -> None:
    pod = messages[CORE + "PodSpec"]
    cut = dict(messages)
    fields = {k: v for k, v in pod.fields.items() if k != "nodeName"}
    cut[pod.name] = ProtoMessage(pod.name, pod.json_type_name, fields=fields)
    assert _gaps(schema, cut) == ["io.k8s.api.core.v1.PodSpec.nodeName"]
    pod_fields = schema.type("io.k8s.api.core.v1.Pod").fields
    orphan = TypeDef(name="com.example.v1.Widget", type="object", fields=pod_fields)
    assert _gaps(schema.extended([orphan]), messages) == ["com.example.v1.Widget: no message"]
