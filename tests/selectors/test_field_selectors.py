"""Field selector parsing, escaping, errors and per-kind field values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kapi.errors import BadRequest
from kapi.apis import BUILTIN
from kapi.object.selectors import FieldLabels, FieldRequirement, parse_field_selector
from kapi.registry.strategy import Strategy

META = {"metadata.name", "metadata.namespace"}
POD = json.loads((Path(__file__).parent.parent / "fixtures" / "pod.json").read_text())


def strategy(kind: str) -> Strategy:
    """The strategy of the served built-in kind (the first one of that name: core before events.k8s.io)."""
    return next(r.strategy for r in BUILTIN if r.kind == kind)


def labels(kind: str) -> FieldLabels:
    return strategy(kind).field_labels


def selectable_fields(kind: str) -> frozenset[str]:
    return labels(kind).fields


def field_values(kind: str, obj: dict[str, Any], namespaced: bool) -> dict[str, str]:
    return strategy(kind).field_values(obj, namespaced)


def test_operators_and_and() -> None:
    sel = parse_field_selector("metadata.name=a,metadata.namespace!=b", META)
    assert sel.requirements == (
        FieldRequirement("metadata.name", "=", "a"),
        FieldRequirement("metadata.namespace", "!=", "b"),
    )
    assert sel.matches({"metadata.name": "a", "metadata.namespace": "c"})
    assert not sel.matches({"metadata.name": "a", "metadata.namespace": "b"})
    assert parse_field_selector("metadata.name==a", META).exact_value("metadata.name") == "a"


def test_missing_field_reads_as_empty() -> None:
    assert parse_field_selector("metadata.namespace=", META).matches({"metadata.name": "x"})
    assert parse_field_selector("metadata.namespace!=x", META).matches({})


def test_escapes_round_trip() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b\=c\\d", META)
    assert sel.requirements[0].value == "a,b=c\\d"
    assert str(sel) == r"metadata.name=a\,b\=c\\d"
    assert parse_field_selector(str(sel), META) == sel


def test_empty_terms_are_skipped() -> None:
    assert parse_field_selector("", META).empty
    assert parse_field_selector(",metadata.name=a,", META).exact_value("metadata.name") == "a"
    assert parse_field_selector("metadata.name!=a", META).exact_value("metadata.name") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope", "invalid selector: 'nope'; can't understand 'nope'"),
        ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
        ("spec.x=1", '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ],
)
def test_errors_default_kind(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_field_selector(text, META)
    assert info.value.message == message


def test_unknown_field_messages_per_kind() -> None:
    with pytest.raises(BadRequest, match=r"^field label not supported: spec\.x$"):
        parse_field_selector("spec.x=1", selectable_fields("Pod"), labels=labels("Pod"))
    with pytest.raises(BadRequest, match=r"^field label not supported: spec\.x$"):
        parse_field_selector("spec.x=1", {"metadata.name", "type"})
    with pytest.raises(BadRequest) as info:
        parse_field_selector("spec.x=1", selectable_fields("Job"), labels=labels("Job"))
    assert info.value.message == 'field label "spec.x" not supported for batchv1.Job'
    with pytest.raises(BadRequest, match="is not a known field selector"):
        parse_field_selector("spec.x=1", selectable_fields("ConfigMap"), labels=labels("ConfigMap"))
    # Node and Namespace list their fields themselves and leave out metadata.namespace.
    with pytest.raises(BadRequest, match="field label not supported: metadata.namespace"):
        parse_field_selector("metadata.namespace=a", selectable_fields("Node"), labels=labels("Node"))


def test_pod_spec_host_alias() -> None:
    sel = parse_field_selector("spec.host=node-3", selectable_fields("Pod"), labels=labels("Pod"))
    assert sel.exact_value("spec.nodeName") == "node-3"


def test_pod_field_values() -> None:
    values = field_values("Pod", POD, namespaced=True)
    assert values["metadata.name"] == "cache-0-ad76507bdc-43f83"
    assert values["metadata.namespace"] == "ns-3"
    assert values["spec.nodeName"] == "node-3"
    assert values["status.phase"] == "Running"
    assert values["status.podIP"] == "10.0.0.3"
    assert values["spec.hostNetwork"] == "false"
    assert values["status.nominatedNodeName"] == ""
    sel = parse_field_selector("spec.nodeName=node-3,status.phase!=Failed", selectable_fields("Pod"), labels=labels("Pod"))
    assert sel.matches(values)


def test_pod_ip_prefers_pod_ips_and_host_network() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"hostNetwork": True},
           "status": {"podIP": "1.1.1.1", "podIPs": [{"ip": "2.2.2.2"}]}}
    values = field_values("Pod", pod, namespaced=True)
    assert values["status.podIP"] == "2.2.2.2"
    assert values["spec.hostNetwork"] == "true"
    pod["status"] = {"podIP": "1.1.1.1"}
    assert field_values("Pod", pod, namespaced=True)["status.podIP"] == "1.1.1.1"


def test_event_and_secret_and_others() -> None:
    event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u1"},
        "reason": "Started", "type": "Normal", "source": {"component": "kubelet", "host": "n1"},
        "reportingComponent": "kubelet",
    }
    values = field_values("Event", event, namespaced=True)
    assert values["involvedObject.kind"] == "Pod"
    assert values["involvedObject.uid"] == "u1"
    assert values["involvedObject.fieldPath"] == ""
    assert values["source"] == "kubelet"
    assert values["reportingComponent"] == "kubelet"
    secret = {"metadata": {"name": "s", "namespace": "ns"}, "type": "kubernetes.io/tls"}
    assert field_values("Secret", secret, namespaced=True)["type"] == "kubernetes.io/tls"
    ns = {"metadata": {"name": "ns"}, "status": {"phase": "Active"}}
    assert field_values("Namespace", ns, namespaced=False) == {"metadata.name": "ns", "status.phase": "Active"}
    rs = {"metadata": {"name": "r", "namespace": "x"}, "status": {"replicas": 3}}
    assert field_values("ReplicaSet", rs, namespaced=True)["status.replicas"] == "3"
    job = {"metadata": {"name": "j", "namespace": "x"}, "status": {}}
    assert field_values("Job", job, namespaced=True)["status.successful"] == "0"
    node = {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}
    assert field_values("Node", node, namespaced=False)["spec.unschedulable"] == "true"
