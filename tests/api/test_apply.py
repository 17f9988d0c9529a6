"""Server-side apply through the app: PATCH application/apply-patch+yaml, as kube-apiserver answers it."""

from __future__ import annotations

from typing import Any

import orjson

from .conftest import Api

APPLY = "application/apply-patch+yaml"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
CMS = "/api/v1/namespaces/default/configmaps"


def deployment(replicas: int = 2, image: str = "nginx:1.25", ports: list[int] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "web", "image": image}
    if ports:
        container["ports"] = [{"containerPort": p} for p in ports]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}}


async def apply(api: Api, path: str, body: Any, manager: str = "mgr", extra: str = "") -> Any:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    r = await api.request("PATCH", f"{path}?fieldManager={manager}{extra}", raw, content_type=APPLY)
    if r.status >= 400:
        print("apply answered", r.status, r.json().get("message"))
    return r


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


async def test_apply_creates_then_noop_keeps_resource_version(api: Api) -> None:
    r = await apply(api, f"{DEPLOYS}/web", deployment())
    assert r.status == 201, r.json()
    obj = r.json()
    entry = managers(obj)[("mgr", "Apply")]
    assert entry["apiVersion"] == "apps/v1" and entry["fieldsType"] == "FieldsV1"
    fields = entry["fieldsV1"]
    assert "f:replicas" in fields["f:spec"] and "f:metadata" not in fields or "f:name" not in fields["f:metadata"]
    assert obj["spec"]["strategy"]["type"] == "RollingUpdate"  # created through the create path: defaulted
    again = await apply(api, f"{DEPLOYS}/web", deployment())
    assert again.status == 200
    assert again.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


async def test_yaml_body(api: Api) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  a: '1'\n"
    r = await apply(api, f"{CMS}/yml", body)
    assert r.status == 201 and r.json()["data"] == {"a": "1"}, r.json()
    bad = await apply(api, f"{CMS}/yml", b"a: [1\n")
    assert bad.status == 400 and bad.json()["message"].startswith("error decoding YAML")


async def test_conflict_names_every_field_and_force_takes_them(api: Api) -> None:
    assert (await apply(api, f"{DEPLOYS}/web", deployment())).status == 201
    other = deployment(replicas=5, image="nginx:1.26")
    r = await apply(api, f"{DEPLOYS}/web", other, manager="other")
    assert r.status == 409
    status = r.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == ('Apply failed with 2 conflicts: conflicts with "mgr":\n- .spec.replicas\n'
                                 '- .spec.template.spec.containers[name="web"].image')
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr"', "field": ".spec.replicas"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr"',
         "field": '.spec.template.spec.containers[name="web"].image'}]
    unchanged = (await api.request("GET", f"{DEPLOYS}/web")).json()
    assert unchanged["spec"]["replicas"] == 2
    forced = await apply(api, f"{DEPLOYS}/web", other, manager="other", extra="&force=true")
    assert forced.status == 200
    obj = forced.json()
    assert obj["spec"]["replicas"] == 5
    mine = managers(obj)[("mgr", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in mine and "f:replicas" in managers(obj)[("other", "Apply")]["fieldsV1"]["f:spec"]


async def test_conflict_with_an_update_manager(api: Api) -> None:
    assert (await apply(api, f"{DEPLOYS}/web", deployment())).status == 201
    r = await api.request("PATCH", f"{DEPLOYS}/web?fieldManager=scaler", {"spec": {"replicas": 7}},
                          content_type="application/merge-patch+json")
    assert r.status == 200
    assert "f:replicas" not in managers(r.json())[("mgr", "Apply")]["fieldsV1"]["f:spec"]
    c = await apply(api, f"{DEPLOYS}/web", deployment(replicas=3))
    assert c.status == 409
    assert c.json()["message"] == ('Apply failed with 1 conflict: conflict with "scaler" using apps/v1: '
                                   ".spec.replicas")
    # applying the value the other manager set is no conflict: it is shared
    shared = await apply(api, f"{DEPLOYS}/web", deployment(replicas=7))
    assert shared.status == 200


async def test_an_update_naming_no_manager_is_recorded_too(api: Api) -> None:
    """No fieldManager: the User-Agent's prefix manages the write; with neither, ``unknown`` does."""
    assert (await apply(api, f"{DEPLOYS}/web", deployment())).status == 201
    for replicas, headers in ((7, {"user-agent": "scaler/v1.2 (linux/amd64)"}), (8, {})):
        r = await api.request("PATCH", f"{DEPLOYS}/web", {"spec": {"replicas": replicas}}, headers=headers,
                              content_type="application/merge-patch+json")
        assert r.status == 200, r.body
    owners = {k for k, e in managers(r.json()).items() if "f:replicas" in e["fieldsV1"].get("f:spec", {})}
    assert owners == {("unknown", "Update")}
    assert ("scaler", "Update") not in managers(r.json())  # it owned only the replicas, taken from it
    c = await apply(api, f"{DEPLOYS}/web", deployment(replicas=3))
    assert c.status == 409 and 'conflict with "unknown" using apps/v1: .spec.replicas' in c.json()["message"]


async def test_dropped_fields_are_removed_unless_owned(api: Api) -> None:
    r = await apply(api, f"{DEPLOYS}/web", deployment(ports=[80, 443]))
    assert [p["containerPort"] for p in r.json()["spec"]["template"]["spec"]["containers"][0]["ports"]] == [80, 443]
    r = await apply(api, f"{DEPLOYS}/web", deployment(ports=[80]))
    assert [p["containerPort"] for p in r.json()["spec"]["template"]["spec"]["containers"][0]["ports"]] == [80]
    # labels: a second applier's key stays when the first drops its own
    assert (await apply(api, f"{CMS}/l", {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "l", "labels": {"a": "1"}}})).status == 201
    two = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "labels": {"b": "2"}}}
    assert (await apply(api, f"{CMS}/l", two, manager="two")).status == 200
    r = await apply(api, f"{CMS}/l", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l"}})
    assert r.json()["metadata"]["labels"] == {"b": "2"}


async def test_two_managers_merge_one_list_map(api: Api) -> None:
    assert (await apply(api, f"{DEPLOYS}/web", deployment())).status == 201
    side = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "web", "env": [{"name": "X", "value": "1"}]},
                {"name": "sidecar", "image": "envoy"}]}}}}
    r = await apply(api, f"{DEPLOYS}/web", side, manager="mesh")
    assert r.status == 200, r.json()
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "sidecar"]
    assert containers[0]["image"] == "nginx:1.25" and containers[0]["env"] == [{"name": "X", "value": "1"}]
    # the first manager re-applies its own manifest: the sidecar and the env var stay (mesh owns them)
    r = await apply(api, f"{DEPLOYS}/web", deployment(image="nginx:1.26"))
    containers = r.json()["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "sidecar"] and containers[0]["image"] == "nginx:1.26"
    assert containers[0]["env"] == [{"name": "X", "value": "1"}]


async def test_option_checks(api: Api) -> None:
    r = await api.request("PATCH", f"{CMS}/x", orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap"}),
                          content_type=APPLY)
    assert r.status == 422
    assert r.json()["message"] == ("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                                   "is required for apply patch")
    await api.create(CMS, {"metadata": {"name": "x"}})
    r = await api.request("PATCH", f"{CMS}/x?force=true", {"data": {"a": "b"}},
                          content_type="application/merge-patch+json")
    assert r.status == 422 and "force: Forbidden: may not be specified for non-apply patch" in r.json()["message"]
    r = await apply(api, f"{CMS}/x", {"apiVersion": "v2", "kind": "ConfigMap"})
    assert r.status == 400 and r.json()["message"] == (
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1")
    r = await apply(api, f"{CMS}/x", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": []}})
    assert r.status == 400 and r.json()["message"] == "metadata.managedFields must be nil"
    r = await apply(api, f"{CMS}/x", {"apiVersion": "v1", "kind": "ConfigMap", "spec": {"a": 1}})
    assert r.status == 400 and "field not declared in schema" in r.json()["message"]


async def test_dry_run_writes_nothing(api: Api) -> None:
    r = await apply(api, f"{CMS}/d", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}},
                    extra="&dryRun=All")
    assert r.status == 201 and r.json()["data"] == {"a": "1"}, r.json()
    assert (await api.request("GET", f"{CMS}/d")).status == 404


async def test_status_subresource_apply(api: Api) -> None:
    assert (await apply(api, f"{DEPLOYS}/web", deployment())).status == 201
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "status": {"observedGeneration": 1, "replicas": 2}}
    r = await apply(api, f"{DEPLOYS}/web/status", status, manager="ctl")
    assert r.status == 200, r.json()
    obj = r.json()
    assert obj["status"]["replicas"] == 2
    entry = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "ctl"][0]
    assert entry["subresource"] == "status" and entry["operation"] == "Apply"
    assert "f:status" in entry["fieldsV1"] and "f:spec" not in entry["fieldsV1"]
    # the main resource ignores status in an apply
    r = await apply(api, f"{DEPLOYS}/web", {**deployment(), "status": {"replicas": 9}})
    assert r.json()["status"]["replicas"] == 2


async def test_update_then_reset_managed_fields(api: Api) -> None:
    assert (await apply(api, f"{CMS}/r", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}})).status == 201
    r = await api.request("PATCH", f"{CMS}/r", {"metadata": {"managedFields": [{}]}},
                          content_type="application/merge-patch+json")
    assert r.status == 200 and "managedFields" not in r.json()["metadata"], r.json()


async def test_client_side_apply_fields_taken_over_by_kubectl(api: Api) -> None:
    last = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u", "namespace": "default"},
            "data": {"a": "1"}}
    created = {"metadata": {"name": "u", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": orjson.dumps(last).decode()}}, "data": {"a": "1"}}
    assert (await api.request("POST", f"{CMS}?fieldManager=kubectl-client-side-apply", created)).status == 201
    changed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}, "data": {"a": "2"}}
    refused = await apply(api, f"{CMS}/u", changed, manager="someone")
    assert refused.status == 409
    r = await apply(api, f"{CMS}/u", changed, manager="kubectl")
    assert r.status == 200, r.json()
    obj = r.json()
    assert obj["data"] == {"a": "2"}
    assert orjson.loads(obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]) == changed
    assert ("kubectl", "Apply") in managers(obj)


async def test_apply_answers_protobuf(api: Api) -> None:
    r = await api.request("PATCH", f"{CMS}/pb?fieldManager=m", orjson.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}), content_type=APPLY,
        headers={"accept": "application/vnd.kubernetes.protobuf"})
    assert r.status == 201
    assert r.headers["content-type"] == "application/vnd.kubernetes.protobuf"
    assert r.body.startswith(b"k8s\x00")


async def test_apply_on_scale_conflicts_then_takes_replicas_from_the_parents_applier(api: Api) -> None:
    assert (await apply(api, f"{DEPLOYS}/web", deployment(replicas=2))).status == 201
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 5}}
    c = await apply(api, f"{DEPLOYS}/web/scale", scale, manager="hpa")
    assert c.status == 409, c.json()
    assert c.json()["message"] == 'Apply failed with 1 conflict: conflict with "mgr": .spec.replicas'
    r = await apply(api, f"{DEPLOYS}/web/scale", scale, manager="hpa", extra="&force=true")
    assert r.status == 200, r.json()
    assert r.json()["kind"] == "Scale" and r.json()["spec"]["replicas"] == 5
    obj = (await api.request("GET", f"{DEPLOYS}/web")).json()
    assert obj["spec"]["replicas"] == 5
    entries = {(e["manager"], e["operation"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}
    hpa = entries[("hpa", "Apply", "scale")]
    assert hpa["apiVersion"] == "apps/v1" and hpa["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries[("mgr", "Apply", "")]["fieldsV1"]["f:spec"]
    # the parent's applier, no longer owning replicas, re-applies without them: nothing is pruned
    again = deployment(replicas=2)
    del again["spec"]["replicas"]
    assert (await apply(api, f"{DEPLOYS}/web", again)).status == 200
    assert (await api.request("GET", f"{DEPLOYS}/web")).json()["spec"]["replicas"] == 5
    # the scale's applier applies the same replicas again: no write
    rv = (await api.request("GET", f"{DEPLOYS}/web")).json()["metadata"]["resourceVersion"]
    same = await apply(api, f"{DEPLOYS}/web/scale", scale, manager="hpa")
    assert same.status == 200 and same.json()["metadata"]["resourceVersion"] == rv


async def test_apply_on_scale_of_a_missing_object_or_in_another_version(api: Api) -> None:
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "none"}, "spec": {"replicas": 1}}
    assert (await apply(api, f"{DEPLOYS}/none/scale", scale)).status == 404
    assert (await apply(api, f"{DEPLOYS}/web", deployment())).status == 201
    wrong = {**scale, "apiVersion": "apps/v1", "metadata": {"name": "web"}}
    r = await apply(api, f"{DEPLOYS}/web/scale", wrong)
    assert r.status == 400 and r.json()["message"] == ("Incorrect version specified in apply patch. Specified patch "
                                                       "version: apps/v1, expected: autoscaling/v1")
    negative = {**scale, "metadata": {"name": "web"}, "spec": {"replicas": -1}}
    assert (await apply(api, f"{DEPLOYS}/web/scale", negative, extra="&force=true")).status == 422


async def test_repeated_keys_in_the_applied_yaml_follow_field_validation(api: Api) -> None:
    """kube's strict decoding of an apply patch: a key repeated in a mapping is 400 under Strict, a
    warning under Warn (the default), nothing under Ignore; the last value is the one applied."""
    path = "/api/v1/namespaces/default/configmaps/dup"
    yaml_body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  a: one\n"
                 b"  b: two\n  a: three\n")
    r = await apply(api, path, yaml_body, extra="&fieldValidation=Strict")
    assert r.status == 400, r.body
    assert r.json()["message"] == ('error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal '
                                   'errors:\n  line 8: key "a" already set in map')
    assert (await api.request("GET", path)).status == 404
    r = await apply(api, path, yaml_body)
    assert r.status == 201, r.body
    assert r.json()["data"] == {"a": "three", "b": "two"}
    assert r.header_values("warning") == ['299 - "line 8: key \\"a\\" already set in map"']
    r = await apply(api, path, yaml_body, extra="&fieldValidation=Ignore")
    assert r.status == 200 and not r.header_values("warning")
    # a JSON body is YAML too: its repeated keys are found on their line, the first one first
    json_body = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup", "name": "dup"},\n' \
                b' "data": {"a": "1", "a": "2"}}'
    r = await apply(api, path, json_body, extra="&fieldValidation=Strict")
    assert r.status == 400
    assert r.json()["message"].endswith('errors:\n  line 1: key "name" already set in map\n'
                                        '  line 2: key "a" already set in map'), r.json()["message"]
    # as in kube, the merge comes first: a conflict is reported before the repeated key
    conflicting = yaml_body.replace(b"three", b"four")
    r = await apply(api, path, conflicting, manager="other", extra="&fieldValidation=Strict")
    assert r.status == 409 and r.json()["message"].startswith("Apply failed with 1 conflict"), r.body
    r = await apply(api, path, conflicting, manager="other", extra="&fieldValidation=Strict&force=true")
    assert r.status == 400 and r.json()["message"].startswith("error strict decoding YAML"), r.body


async def test_write_options_are_validated_as_kube_does(api: Api) -> None:
    """kube's Validate{Create,Update,Patch,Delete}Options: one 422 on the options kind naming each bad one."""
    cms = "/api/v1/namespaces/default/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o"}}
    r = await api.request("POST", f"{cms}?dryRun=Maybe&fieldValidation=Sometimes", cm)
    assert r.status == 422, r.body
    assert r.json()["message"] == ('CreateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: '
                                   '[]string{"Maybe"}: supported values: "All", fieldValidation: Unsupported '
                                   'value: "Sometimes": supported values: "", "Ignore", "Strict", "Warn"]')
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["dryRun", "fieldValidation"]
    assert (await api.request("POST", cms, cm)).status == 201
    r = await api.request("PUT", f"{cms}/o?fieldManager=" + "m" * 129, cm)
    assert r.status == 422
    assert r.json()["message"] == ('UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be '
                                   'more than 128 bytes')
    r = await api.request("PATCH", f"{cms}/o?force=true&fieldManager=a%01b", {},
                          content_type="application/merge-patch+json")
    assert r.json()["message"] == ('PatchOptions.meta.k8s.io "" is invalid: [force: Forbidden: may not be specified '
                                   'for non-apply patch, fieldManager: Invalid value: "a\\x01b": invalid character '
                                   'U+0001 (at position 1)]')
    r = await apply(api, f"{cms}/o", cm, extra="&fieldValidation=Sometimes")
    assert r.status == 422 and r.json()["message"].startswith('PatchOptions.meta.k8s.io "" is invalid: '
                                                              'fieldValidation: Unsupported value: "Sometimes"')
    r = await api.request("DELETE", f"{cms}/o?dryRun=Yes")
    assert r.status == 422
    assert r.json()["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                   '[]string{"Yes"}: supported values: "All"')
    assert (await api.request("GET", f"{cms}/o")).status == 200
    # dryRun is a list: each value counts, a repeated "All" is a dry run
    r = await api.request("POST", f"{cms}?dryRun=All&dryRun=Maybe", {**cm, "metadata": {"name": "p"}})
    assert r.status == 422 and r.json()["details"]["causes"] == [{
        "reason": "FieldValueNotSupported", "field": "dryRun",
        "message": 'Unsupported value: []string{"All", "Maybe"}: supported values: "All"'}]
    r = await api.request("DELETE", f"{cms}/o?dryRun=All&dryRun=All")
    assert r.status == 200 and (await api.request("GET", f"{cms}/o")).status == 200


async def test_managers_of_another_version_are_judged_in_theirs(api: Api) -> None:
    """A manager recorded in autoscaling/v1 owns .spec.targetCPUUtilizationPercentage; an autoscaling/v2
    apply that changes the CPU metric changes that v1 field, so it conflicts with the v1 manager (kube
    compares in each manager's version), and forced, the v1 manager loses the field."""
    v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    hpa = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}}
    r = await api.request("POST", f"{v1}?fieldManager=old-tool", hpa)
    assert r.status == 201, r.body
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
    v2 = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                   "maxReplicas": 5, "metrics": [cpu]}}
    path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h"
    r = await apply(api, path, v2, "new-tool")
    assert r.status == 409, r.body
    message = r.json()["message"]
    assert 'conflict with "old-tool" using autoscaling/v1: .spec.targetCPUUtilizationPercentage' in message, message
    assert "maxReplicas" not in message  # the same value in both versions: shared, not a conflict
    r = await apply(api, path, v2, "new-tool", "&force=true")
    assert r.status == 200, r.body
    entries = {e["manager"]: e for e in r.json()["metadata"]["managedFields"]}
    assert entries["old-tool"]["apiVersion"] == "autoscaling/v1"
    assert "f:targetCPUUtilizationPercentage" not in entries["old-tool"]["fieldsV1"]["f:spec"]
    assert "f:maxReplicas" in entries["old-tool"]["fieldsV1"]["f:spec"]
    got = (await api.request("GET", f"{v1}/h")).json()
    assert got["spec"]["targetCPUUtilizationPercentage"] == 70


async def test_an_update_in_another_version_takes_what_it_changed_in_the_owners_version(api: Api) -> None:
    v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    hpa = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "u"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}}
    assert (await api.request("POST", f"{v1}?fieldManager=old-tool", hpa)).status == 201
    path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/u?fieldManager=editor"
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
    r = await api.request("PATCH", path, {"spec": {"metrics": [cpu]}}, content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    entries = {e["manager"]: e["fieldsV1"]["f:spec"] for e in r.json()["metadata"]["managedFields"]}
    assert "f:targetCPUUtilizationPercentage" not in entries["old-tool"] and "f:maxReplicas" in entries["old-tool"]
    assert "f:metrics" in entries["editor"]
