"""The built-in schema table and unknown-field detection."""

from __future__ import annotations

import copy
import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from kapi.object.schema import GVK, load_builtin, unknown_fields
from tests._needs import require

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent.parent
POD = GVK("", "v1", "Pod")


@pytest.fixture(scope="module")
def pod() -> dict[str, Any]:
    return json.loads((FIXTURES / "pod.json").read_text())


def test_pod_containers_merge_by_name() -> None:
    spec = load_builtin().type("io.k8s.api.core.v1.PodSpec")
    containers = spec.field("containers")
    assert containers is not None
    assert containers.type == "array"
    assert containers.merge_key == "name"
    assert containers.patch_strategy == "merge"
    assert containers.list_type == "map"
    assert containers.list_map_keys == ("name",)
    assert containers.required
    assert containers.items is not None and containers.items.ref == "io.k8s.api.core.v1.Container"


def test_container_requires_name() -> None:
    container = load_builtin().type("io.k8s.api.core.v1.Container")
    assert "name" in container.required
    name = container.field("name")
    assert name is not None and name.required and name.type == "string"
    image = container.field("image")
    assert image is not None and not image.required


def test_service_ports_merge_by_port() -> None:
    ports = load_builtin().type("io.k8s.api.core.v1.ServiceSpec").field("ports")
    assert ports is not None
    assert (ports.merge_key, ports.patch_strategy) == ("port", "merge")
    assert ports.list_map_keys == ("port", "protocol")


def test_tolerations_are_atomic_and_volumes_retain_keys() -> None:
    spec = load_builtin().type("io.k8s.api.core.v1.PodSpec")
    tolerations = spec.field("tolerations")
    assert tolerations is not None
    assert tolerations.list_type == "atomic" and not tolerations.merge_key
    volumes = spec.field("volumes")
    assert volumes is not None and volumes.patch_strategies == {"merge", "retainKeys"}


def test_type_for_gvk_and_formats() -> None:
    schema = load_builtin()
    pod = schema.type_for("", "v1", "Pod")
    assert pod is not None and pod.name == "io.k8s.api.core.v1.Pod"
    assert GVK("", "v1", "Pod") in pod.gvks
    deployment = schema.type_for("apps", "v1", "Deployment")
    assert deployment is not None
    replicas = schema.type("io.k8s.api.apps.v1.DeploymentSpec").field("replicas")
    assert replicas is not None and (replicas.type, replicas.format) == ("integer", "int32")
    assert schema.type_for("autoscaling", "v1", "Scale") is not None
    assert schema.type_for("meta.k8s.io", "v1", "Table") is not None
    assert schema.type_for("apps", "v1", "NoSuchKind") is None
    meta = schema.type("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    created = meta.field("creationTimestamp")
    assert created is not None and created.type == "string"
    assert schema.type("io.k8s.apimachinery.pkg.apis.meta.v1.Time").format == "date-time"
    labels = meta.field("labels")
    assert labels is not None and labels.type == "object"
    assert labels.values is not None and labels.values.type == "string"
    port = schema.type("io.k8s.api.core.v1.ServicePort").field("targetPort")
    assert port is not None and port.type == "int-or-string"
    limits = schema.type("io.k8s.api.core.v1.ResourceRequirements").field("limits")
    assert limits is not None and limits.values is not None and limits.values.type == "quantity"
    assert schema.type("io.k8s.apimachinery.pkg.runtime.RawExtension").preserve_unknown
    secret_data = schema.type("io.k8s.api.core.v1.Secret").field("data")
    assert secret_data is not None and secret_data.values is not None
    assert secret_data.values.format == "byte"


def test_descriptions_are_kept() -> None:
    pod = load_builtin().type("io.k8s.api.core.v1.Pod")
    assert pod.description.startswith("Pod is a collection of containers")
    spec = pod.field("spec")
    assert spec is not None and "desired behavior" in spec.description


def test_only_served_groups_are_included() -> None:
    names = {t.name for t in load_builtin()}
    assert "io.k8s.api.core.v1.Pod" in names
    assert "io.k8s.api.flowcontrol.v1.FlowSchema" in names
    assert "io.k8s.api.networking.v1.Ingress" in names  # served since issue 14
    assert "io.k8s.api.resource.v1beta1.ResourceClaim" not in names
    assert "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler" in names  # served since issue 14 (builtins B)
    assert "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService" in names
    assert "io.k8s.api.storagemigration.v1alpha1.StorageVersionMigration" not in names


def test_extended_schema_leaves_builtin_alone() -> None:
    from kapi.object.schema import TypeDef

    base = load_builtin()
    extra = TypeDef(name="com.example.v1.Widget", type="object", gvks=(GVK("example.com", "v1", "Widget"),))
    bigger = base.extended([extra])
    assert bigger.type_for("example.com", "v1", "Widget") is extra
    assert base.type_for("example.com", "v1", "Widget") is None
    assert len(bigger) == len(base) + 1


def test_fixture_pod_has_no_unknown_fields(pod: dict[str, Any]) -> None:
    assert unknown_fields(load_builtin(), POD, pod) == []


def test_unknown_fields_paths(pod: dict[str, Any]) -> None:
    bad = copy.deepcopy(pod)
    bad["spec"]["containers"][0]["foo"] = 1
    bad["spec"]["bogus"] = True
    bad["metadata"]["nope"] = "x"
    bad["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"  # map key: fine
    bad["status"]["conditions"][0]["extra"] = 1
    assert unknown_fields(load_builtin(), POD, bad) == [
        "metadata.nope",
        "spec.containers[0].foo",
        "spec.bogus",
        "status.conditions[0].extra",
    ]


def test_unknown_fields_skips_free_form_and_unknown_kinds(pod: dict[str, Any]) -> None:
    schema = load_builtin()
    # managedFields[].fieldsV1 holds arbitrary JSON.
    assert pod["metadata"]["managedFields"][0]["fieldsV1"]
    assert unknown_fields(schema, POD, {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}}) == []
    assert unknown_fields(schema, ("example.com", "v1", "Widget"), {"anything": 1}) == []
    crd_like = {"spec": {"versions": [{"schema": {"openAPIV3Schema": {"whatever": {"x": 1}}}}]}}
    assert unknown_fields(schema, ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), crd_like) == [
        "spec.versions[0].schema.openAPIV3Schema.whatever"
    ]
    event = {"type": "ADDED", "object": {"kind": "Pod", "surprise": 1}}
    assert unknown_fields(schema, ("", "v1", "WatchEvent"), event) == []


def test_generated_file_is_gzipped_json() -> None:
    blob = (ROOT / "kapi" / "object" / "schema" / "builtin.json.gz").read_bytes()
    data = json.loads(gzip.decompress(blob))
    assert data["format"] == 1
    assert "io.k8s.api.core.v1.Pod" in data["types"]


def test_generator_reproduces_committed_file(tmp_path: Path) -> None:
    require(importlib.util.find_spec("kubernetes_validate"),
            "kubernetes-validate (tools/gen_schema.py's source) is not installed: pip install -e '.[test]'")
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "tools" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    out = tmp_path / "builtin.json.gz"
    assert gen.main(["--out", str(out)]) == 0
    committed = gzip.decompress((ROOT / "kapi" / "object" / "schema" / "builtin.json.gz").read_bytes())
    assert gzip.decompress(out.read_bytes()) == committed
