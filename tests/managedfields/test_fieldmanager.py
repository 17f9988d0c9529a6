"""The apply field manager pipeline (kube's fieldmanager_test, conflict_test and lastapplied cases)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kapi import errors
from kapi.object.managedfields.fieldmanager import LAST_APPLIED_ANNOTATION, apply_managed_fields, conflict_error
from kapi.object.managedfields.update import update_managed_fields
from kapi.object.schema import Schema, load_builtin

DEPLOY = ("apps", "v1", "Deployment")
POD = ("", "v1", "Pod")
T1, T2, T3 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"


@pytest.fixture(scope="module")
def schema() -> Schema:
    return load_builtin()


def apply(schema: Schema, gvk: Any, live: Any, config: dict[str, Any], manager: str, *, force: bool = False,
          now: str = T1) -> dict[str, Any]:
    return apply_managed_fields(schema, gvk, live, copy.deepcopy(config), manager=manager, force=force, now=now)


def update(schema: Schema, gvk: Any, live: Any, new: dict[str, Any], manager: str, now: str = T1) -> dict[str, Any]:
    out = copy.deepcopy(new)
    entries = update_managed_fields(schema, gvk, live, out, manager=manager, now=now)
    out.setdefault("metadata", {})["managedFields"] = entries
    if not entries:
        del out["metadata"]["managedFields"]
    return out


def deployment(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "deployment"}, "spec": spec}


def test_update_then_apply_conflicts(schema: Schema) -> None:
    live = update(schema, DEPLOY, None, deployment(replicas=3), "fieldmanager_test")
    with pytest.raises(errors.Conflict) as exc:
        apply(schema, DEPLOY, live, deployment(replicas=101), "fieldmanager_conflict")
    status = exc.value.to_status()
    assert status["code"] == 409 and status["reason"] == "Conflict"
    assert status["message"] == ('Apply failed with 1 conflict: conflict with "fieldmanager_test" using apps/v1: '
                                 ".spec.replicas")
    assert status["details"] == {"causes": [{"reason": "FieldManagerConflict",
                                             "message": 'conflict with "fieldmanager_test" using apps/v1',
                                             "field": ".spec.replicas"}]}


def test_force_takes_ownership(schema: Schema) -> None:
    live = update(schema, DEPLOY, None, deployment(replicas=3), "writer")
    out = apply(schema, DEPLOY, live, deployment(replicas=101), "applier", force=True)
    assert out["spec"]["replicas"] == 101
    managers = {e["manager"]: e for e in out["metadata"]["managedFields"]}
    assert managers["applier"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "writer" not in managers


def test_several_conflicts_grouped_by_manager(schema: Schema) -> None:
    live = apply(schema, DEPLOY, None, deployment(replicas=3, paused=True), "b-applier")
    live = update(schema, DEPLOY, live, {**live, "spec": {**live["spec"], "minReadySeconds": 5}}, "a-writer")
    with pytest.raises(errors.Conflict) as exc:
        apply(schema, DEPLOY, live, deployment(replicas=4, paused=False, minReadySeconds=6), "c")
    assert exc.value.message == ('Apply failed with 3 conflicts: conflicts with "a-writer" using apps/v1:\n'
                                 "- .spec.minReadySeconds\n"
                                 'conflicts with "b-applier":\n- .spec.paused\n- .spec.replicas')
    assert [c.field for c in exc.value.causes] == [".spec.minReadySeconds", ".spec.paused", ".spec.replicas"]


def test_apply_strips_identity_metadata_but_not_labels(schema: Schema) -> None:
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "b", "labels": {"a": "b"}}}
    out = apply(schema, POD, None, config, "fieldmanager_test")
    (entry,) = out["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:metadata": {"f:labels": {"f:a": {}}}}
    assert entry["operation"] == "Apply" and entry["apiVersion"] == "v1" and entry["time"] == T1


def test_version_check(schema: Schema) -> None:
    apply(schema, DEPLOY, None, {"apiVersion": "apps/v1", "kind": "Deployment"}, "fieldmanager_test")
    for config in ({"apiVersion": "apps/v1beta1", "kind": "Deployment"}, {}):
        with pytest.raises(errors.BadRequest):
            apply(schema, DEPLOY, None, config, "fieldmanager_test")


def test_apply_fails_with_managed_fields(schema: Schema) -> None:
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"managedFields": [{"manager": "test"}]}}
    with pytest.raises(errors.BadRequest, match="metadata.managedFields must be nil"):
        apply(schema, POD, None, config, "fieldmanager_test")


def test_no_op_apply_leaves_managed_fields(schema: Schema) -> None:
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}
    live = apply(schema, POD, None, config, "fieldmanager_test_apply", now=T1)
    other = apply(schema, POD, live, config, "fieldmanager_test_apply_other", now=T2)
    assert other != live  # a new manager's entry, though the object did not change
    again = apply(schema, POD, other, config, "fieldmanager_test_apply", force=True, now=T3)
    assert again == other


def test_reset_managed_fields_with_empty_item(schema: Schema) -> None:
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}
    live = apply(schema, POD, None, config, "fieldmanager_test_apply")
    for reset in ([], [{}]):
        new = {**config, "metadata": {**config["metadata"], "managedFields": reset, "uid": "u"}}
        assert update_managed_fields(schema, POD, live, new, manager="update_manager", now=T2) == []


def test_update_after_apply_moves_ownership(schema: Schema) -> None:
    live = apply(schema, DEPLOY, None, deployment(replicas=3, paused=True), "applier")
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 5
    out = update(schema, DEPLOY, live, new, "writer", now=T2)
    managers = {e["manager"]: e["fieldsV1"] for e in out["metadata"]["managedFields"]}
    assert managers == {"applier": {"f:spec": {"f:paused": {}}}, "writer": {"f:spec": {"f:replicas": {}}}}


def test_client_side_apply_upgrade(schema: Schema) -> None:
    csa = deployment(replicas=100)
    csa["metadata"]["labels"] = {"app": "my-app"}
    created = copy.deepcopy(csa)
    created["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: orjson.dumps(csa).decode()}
    live = update(schema, DEPLOY, None, created, "kubectl-client-side-apply")
    ssa = deployment(replicas=8)
    ssa["metadata"]["labels"] = {"app": "my-app-v2"}
    with pytest.raises(errors.Conflict):
        apply(schema, DEPLOY, live, ssa, "someone-else")
    out = apply(schema, DEPLOY, live, ssa, "kubectl")
    assert out["spec"]["replicas"] == 8 and out["metadata"]["labels"] == {"app": "my-app-v2"}
    assert "my-app-v2" in out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]


def test_client_side_apply_upgrade_with_invalid_annotation_conflicts(schema: Schema) -> None:
    created = deployment(replicas=1)
    created["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "invalid-object"}
    live = update(schema, DEPLOY, None, created, "kubectl-client-side-apply-test")
    with pytest.raises(errors.Conflict):
        apply(schema, DEPLOY, live, deployment(replicas=100), "kubectl")
    out = apply(schema, DEPLOY, live, deployment(replicas=100), "kubectl", force=True)
    assert out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] != "invalid-object"


def test_conflict_error_prints_subresource() -> None:
    from kapi.object.managedfields.entries import ManagerKey
    from kapi.object.managedfields.fieldpath import make_path
    from kapi.object.managedfields.updater import Conflict, Conflicts

    owner = ManagerKey("ctl", "Update", "v1", "scale")
    err = conflict_error(Conflicts([Conflict(owner, make_path(("spec", "replicas")))]))
    assert err.message == ('Apply failed with 1 conflict: conflict with "ctl" with subresource "scale" using v1: '
                           ".spec.replicas")


def test_apply_conflict_helper() -> None:
    cause = errors.Cause("FieldManagerConflict", 'conflict with "m"', ".spec")
    status = errors.apply_conflict([cause], "Apply failed with 1 conflict").to_status()
    assert status["code"] == 409 and status["details"] == {"causes": [cause.to_dict()]}


def test_untracked_object_fields_go_to_before_first_apply(schema: Schema) -> None:
    live = deployment(replicas=100)
    live["metadata"]["labels"] = {"app": "my-app"}
    out = apply(schema, DEPLOY, live, deployment(replicas=100), "test_server_side_apply_without_upgrade", now=T2)
    entries = out["metadata"]["managedFields"]
    assert [e["manager"] for e in entries] == ["test_server_side_apply_without_upgrade", "before-first-apply"]
    assert entries[1]["operation"] == "Update" and entries[1]["time"] == T2
    # Applying the same replicas shares them: both managers own .spec.replicas.
    assert entries[1]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}}}
    with pytest.raises(errors.Conflict, match='conflict with "before-first-apply" using apps/v1'):
        apply(schema, DEPLOY, live, {**deployment(), "metadata": {"name": "deployment", "labels": {"app": "x"}}}, "m")


def test_last_applied_is_go_encoded(schema: Schema) -> None:
    created = deployment(replicas=1)
    created["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{}"}
    live = update(schema, DEPLOY, None, created, "kubectl-client-side-apply")
    config = {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "deployment", "labels": {"a": "<b>"}}}
    out = apply(schema, DEPLOY, live, config, "kubectl", force=True)
    assert out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"a":"\\u003cb\\u003e"},'
        '"name":"deployment"}}\n')
