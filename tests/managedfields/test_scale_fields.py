"""ScaleHandler: managedFields of the scale subresource (kube's scalehandler_test cases)."""

from __future__ import annotations

from typing import Any

from kapi.object.managedfields.scale import ScaleHandler, replicas_path

MAPPINGS = {"apps/v1": ("spec", "replicas"), "apps/v2": ("spec", "not-the-replicas")}
T = "2013-02-03T00:00:00Z"
REPLICAS = {"f:spec": {"f:replicas": {}}}


def entry(manager: str, version: str, fields: dict[str, Any], *, op: str = "Apply", time: str = "",
          subresource: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"manager": manager, "operation": op, "apiVersion": version}
    if time:
        out["time"] = time
    out["fieldsType"] = "FieldsV1"
    out["fieldsV1"] = fields
    if subresource:
        out["subresource"] = subresource
    return out


def test_to_subresource_keeps_only_replicas_owners() -> None:
    parent = [entry("manager-1", "apps/v1", {"f:spec": {"f:another-field": {}}}),
              entry("manager-2", "apps/v1", REPLICAS, time=T)]
    got = ScaleHandler(parent, "apps/v1", MAPPINGS).to_subresource()
    assert got == [entry("manager-2", "autoscaling/v1", REPLICAS, time=T)]


def test_to_subresource_transforms_every_entry_and_keeps_subresource() -> None:
    parent = [entry("manager-1", "apps/v1", REPLICAS), entry("manager-2", "apps/v1", REPLICAS),
              entry("manager-3", "apps/v1", REPLICAS, subresource="scale")]
    got = ScaleHandler(parent, "apps/v1", MAPPINGS).to_subresource()
    assert got == [entry("manager-1", "autoscaling/v1", REPLICAS), entry("manager-2", "autoscaling/v1", REPLICAS),
                   entry("manager-3", "autoscaling/v1", REPLICAS, subresource="scale")]


def test_to_subresource_drops_unknown_versions() -> None:
    assert ScaleHandler([entry("manager-1", "apps/v10", REPLICAS)], "apps/v1", MAPPINGS).to_subresource() == []


def test_to_parent_new_scale_manager_takes_replicas() -> None:
    parent = [entry("manager-1", "apps/v1", {"f:spec": {"f:replicas": {}, "f:selector": {}}}, time=T)]
    scale = [entry("scale-manager", "autoscaling/v1", REPLICAS, op="Update", subresource="scale")]
    got = ScaleHandler(parent, "apps/v1", MAPPINGS).to_parent(scale)
    assert got == [entry("manager-1", "apps/v1", {"f:spec": {"f:selector": {}}}, time=T),
                   entry("scale-manager", "apps/v1", REPLICAS, op="Update", subresource="scale")]


def test_to_parent_keeps_managers_still_owning_replicas_and_drops_emptied_ones() -> None:
    parent = [entry("manager-1", "apps/v1", REPLICAS, time=T), entry("manager-2", "apps/v1", REPLICAS, time=T)]
    scale = [entry("manager-1", "autoscaling/v1", REPLICAS)]
    got = ScaleHandler(parent, "apps/v1", MAPPINGS).to_parent(scale)
    assert got == [entry("manager-1", "apps/v1", REPLICAS, time=T)]


def test_to_parent_keeps_entries_without_replicas_and_drops_unknown_versions() -> None:
    other = entry("manager-1", "apps/v1", {"f:metadata": {"f:labels": {}}})
    parent = [other, entry("manager-2", "apps/v10", REPLICAS)]
    assert ScaleHandler(parent, "apps/v1", MAPPINGS).to_parent([]) == [other]


def test_to_parent_maps_to_the_stored_versions_path() -> None:
    parent = [entry("manager-1", "apps/v2", {"f:spec": {"f:not-the-replicas": {}}})]
    scale = [entry("scale-manager", "autoscaling/v1", REPLICAS, op="Update")]
    got = ScaleHandler(parent, "apps/v2", MAPPINGS).to_parent(scale)
    assert got == [entry("scale-manager", "apps/v2", {"f:spec": {"f:not-the-replicas": {}}}, op="Update")]


def test_crd_spec_replicas_path() -> None:
    assert replicas_path(".spec.size") == ("spec", "size")
    parent = [entry("m", "example.com/v1", {"f:spec": {"f:size": {}}})]
    got = ScaleHandler(parent, "example.com/v1", {"example.com/v1": replicas_path(".spec.size")}).to_subresource()
    assert got == [entry("m", "autoscaling/v1", REPLICAS)]
