"""ServiceAccount admission: the default service account, the projected kube-api-access volume in
every container and init container, automountServiceAccountToken (pod over service account), the
service account's imagePullSecrets, a missing service account refused with kube's message, mirror
pods, and enforce-mountable-secrets."""

from __future__ import annotations

import re

import trio

from kapi.admission.plugins.serviceaccount import DEFAULT_API_TOKEN_MOUNT_PATH
from tests.admission.test_pods_support import message, namespace, pod, start_api

EXPECTED_SOURCES = [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                  "fieldPath": "metadata.namespace"}}]}},
]


async def test_default_service_account_and_token_volume(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "shop")
    body = pod("p", {"name": "app", "image": "nginx"}, {"name": "side", "image": "busybox"},
               initContainers=[{"name": "init", "image": "busybox"}])
    reply = await api.create("/api/v1/namespaces/shop/pods", body)
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    [vol] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", vol["name"])
    assert vol["projected"] == {"defaultMode": 420, "sources": EXPECTED_SOURCES}
    mount = {"name": vol["name"], "readOnly": True, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}
    for ctr in spec["containers"] + spec["initContainers"]:
        assert ctr["volumeMounts"] == [mount]
    assert "imagePullSecrets" not in spec
    # an update does not add another volume
    got = (await api.request("GET", "/api/v1/namespaces/shop/pods/p")).json()
    got["metadata"].setdefault("labels", {})["x"] = "y"
    updated = await api.request("PUT", "/api/v1/namespaces/shop/pods/p", got)
    assert updated.status == 200, updated.body
    assert updated.json()["spec"]["volumes"] == [vol]


async def test_existing_mount_path_and_automount(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "shop")
    own = {"name": "mine", "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}
    body = pod("p", {"name": "a", "image": "nginx", "volumeMounts": [own]}, {"name": "b", "image": "nginx"},
               volumes=[{"name": "mine", "emptyDir": {}}])
    spec = (await api.create("/api/v1/namespaces/shop/pods", body)).json()["spec"]
    assert spec["containers"][0]["volumeMounts"] == [own]
    assert spec["containers"][1]["volumeMounts"][0]["mountPath"] == DEFAULT_API_TOKEN_MOUNT_PATH
    assert len(spec["volumes"]) == 2
    # the pod says no
    spec = (await api.create("/api/v1/namespaces/shop/pods", pod("q", automountServiceAccountToken=False))).json()["spec"]
    assert "volumes" not in spec and "volumeMounts" not in spec["containers"][0]
    # the service account says no; the pod's own preference wins
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"},
          "automountServiceAccountToken": False, "imagePullSecrets": [{"name": "regcred"}]}
    assert (await api.create("/api/v1/namespaces/shop/serviceaccounts", sa)).status == 201
    spec = (await api.create("/api/v1/namespaces/shop/pods", pod("r", serviceAccountName="quiet"))).json()["spec"]
    assert "volumes" not in spec
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    spec = (await api.create("/api/v1/namespaces/shop/pods",
                             pod("s", serviceAccountName="quiet", automountServiceAccountToken=True,
                                 imagePullSecrets=[{"name": "own"}]))).json()["spec"]
    assert spec["volumes"][0]["name"].startswith("kube-api-access-")
    assert spec["imagePullSecrets"] == [{"name": "own"}]


async def test_missing_service_account_refused(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "shop")
    reply = await api.create("/api/v1/namespaces/shop/pods", pod("p", serviceAccountName="ghost"))
    assert reply.status == 403
    assert message(reply) == ('pods "p" is forbidden: error looking up service account shop/ghost: '
                              'serviceaccount "ghost" not found')
    assert reply.json()["reason"] == "Forbidden"


async def test_mirror_pods(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "shop")
    mirror = {"kubernetes.io/config.mirror": "abc"}
    body = pod("m")
    body["metadata"]["annotations"] = mirror
    reply = await api.create("/api/v1/namespaces/shop/pods", body)
    assert reply.status == 201, reply.body
    spec = reply.json()["spec"]
    assert "serviceAccountName" not in spec and "volumes" not in spec
    body = pod("m2", serviceAccountName="default")
    body["metadata"]["annotations"] = mirror
    reply = await api.create("/api/v1/namespaces/shop/pods", body)
    assert (reply.status, message(reply)) == (403, 'pods "m2" is forbidden: a mirror pod may not reference '
                                                   "service accounts")
    body = pod("m3", volumes=[{"name": "s", "secret": {"secretName": "top"}}])
    body["metadata"]["annotations"] = mirror
    reply = await api.create("/api/v1/namespaces/shop/pods", body)
    assert (reply.status, message(reply)) == (403, 'pods "m3" is forbidden: a mirror pod may not reference secrets')


async def test_enforce_mountable_secrets(nursery: trio.Nursery) -> None:
    api = await start_api(nursery)
    await namespace(api, "shop")
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
          "secrets": [{"name": "allowed"}]}
    assert (await api.create("/api/v1/namespaces/shop/serviceaccounts", sa)).status == 201
    ok = pod("ok", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "allowed"}}])
    assert (await api.create("/api/v1/namespaces/shop/pods", ok)).status == 201
    bad = pod("bad", serviceAccountName="strict", volumes=[{"name": "s", "secret": {"secretName": "other"}}])
    reply = await api.create("/api/v1/namespaces/shop/pods", bad)
    assert (reply.status, message(reply)) == (403, 'pods "bad" is forbidden: volume with secret.secretName="other" '
                                                   "is not allowed because service account strict does not "
                                                   "reference that secret")
    env = pod("env", {"name": "c", "image": "nginx", "env": [
        {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}, serviceAccountName="strict")
    reply = await api.create("/api/v1/namespaces/shop/pods", env)
    assert message(reply) == ('pods "env" is forbidden: container c with envVar PW referencing '
                              'secret.secretName="other" is not allowed because service account strict does not '
                              "reference that secret")


async def test_disabled_plugin_leaves_pod_alone(nursery: trio.Nursery) -> None:
    api = await start_api(nursery, disable=("ServiceAccount",))
    await namespace(api, "shop")
    reply = await api.create("/api/v1/namespaces/shop/pods", pod("p", serviceAccountName="ghost"))
    assert reply.status == 201, reply.body
    assert "volumes" not in reply.json()["spec"]
    reply = await api.create("/api/v1/namespaces/shop/pods", pod("q"))
    assert "serviceAccountName" not in reply.json()["spec"]


async def test_ephemeral_containers_held_to_mountable_secrets(nursery: trio.Nursery) -> None:
    """The plugin's check of an ephemeralcontainers update (called directly: kapi does not serve the
    subresource yet)."""
    from kapi import errors
    from kapi.admission.plugin import Attributes, Objects, PluginDeps
    from kapi.admission.plugins.serviceaccount import ServiceAccount
    from kapi.object.access import UserInfo
    from kapi.registry.admit import UPDATE, AdmissionRequest

    api = await start_api(nursery)
    await namespace(api, "shop")
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
          "secrets": [{"name": "allowed"}]}
    assert (await api.create("/api/v1/namespaces/shop/serviceaccounts", sa)).status == 201
    plugin = ServiceAccount(PluginDeps(api.registry, Objects(api.registry, None)))
    res = api.registry.table.get("", "v1", "pods")
    assert res is not None

    def attributes(env_from: str) -> Attributes:
        pod = {"metadata": {"name": "p", "namespace": "shop"},
               "spec": {"serviceAccountName": "strict", "containers": [{"name": "c", "image": "nginx"}],
                        "ephemeralContainers": [{"name": "debug", "image": "busybox",
                                                 "envFrom": [{"secretRef": {"name": env_from}}]}]}}
        req = AdmissionRequest(UPDATE, res, "ephemeralcontainers", "shop", "p", pod, pod)
        return Attributes(req, UserInfo("alice"), {}, [])

    await plugin.validate(attributes("allowed"))
    try:
        await plugin.validate(attributes("other"))
    except errors.Forbidden as err:
        assert err.message == ('pods "p" is forbidden: ephemeral container debug with envFrom referencing '
                               'secret.secretName="other" is not allowed because service account strict does not '
                               "reference that secret")
    else:
        raise AssertionError("not refused")


async def test_service_account_from_the_informer(nursery: trio.Nursery) -> None:
    """With the shared informer, a changed service account is seen as changed (the decoded one is
    kept per resourceVersion)."""
    api = await start_api(nursery, informers=True)
    await namespace(api, "shop")
    spec = (await api.create("/api/v1/namespaces/shop/pods", pod("a"))).json()["spec"]
    assert spec["volumes"][0]["name"].startswith("kube-api-access-")
    sa = (await api.request("GET", "/api/v1/namespaces/shop/serviceaccounts/default")).json()
    sa["automountServiceAccountToken"] = False
    assert (await api.request("PUT", "/api/v1/namespaces/shop/serviceaccounts/default", sa)).status == 200
    for i in range(200):
        spec = (await api.create("/api/v1/namespaces/shop/pods", pod(f"b{i}"))).json()["spec"]
        if "volumes" not in spec:
            break
        await trio.sleep(0.01)
    assert "volumes" not in spec
