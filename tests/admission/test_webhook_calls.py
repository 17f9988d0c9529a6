"""Admission webhooks against a real HTTPS webhook on 127.0.0.1: what the AdmissionReview carries,
allowing, denying (the webhook's message and code), JSON patch mutation, failurePolicy Fail and
Ignore with the webhook down, time-outs, dry-run and side effects, warnings and audit annotations,
and the checks kube makes of an answer."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, AsyncIterator

import orjson
import pytest
import trio

from kapi import errors
from tests.admission.test_webhook_support import (USER, AdmissionServer, Env, allow, cm, deny, new_server,
                                                  patch_of, rule, start_env, webhook)

Obj = dict[str, Any]
VWC, MWC = "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"


@pytest.fixture
async def env(nursery: trio.Nursery) -> AsyncIterator[Env]:
    yield await start_env(nursery)


@pytest.fixture
def server(tmp_path: Path) -> AsyncIterator[AdmissionServer]:
    s = new_server(tmp_path)
    yield s
    s.stop()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_validating_webhook_sees_kubes_admission_review(env: Env, server: AdmissionServer) -> None:
    await env.configure(VWC, "check", [webhook("check.example.com", server, "/validate")])
    made = await env.create_cm(cm("one", k="v"))
    (seen,) = server.seen
    assert seen.path == "/validate?timeout=10s"  # client-go's Request.Timeout
    review = seen.review
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    req = review["request"]
    assert req["uid"]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
    assert (req["name"], req["namespace"], req["operation"]) == ("one", "app", "CREATE")
    assert req["userInfo"] == {"username": "alice", "uid": "uid-a", "groups": ["devs", "system:authenticated"]}
    assert req["object"]["data"] == {"k": "v"} and req["object"]["metadata"]["uid"] == made["metadata"]["uid"]
    assert req["oldObject"] is None and req["dryRun"] is False
    assert req["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert "subResource" not in req

    # an update carries the old object; a delete only the old one, with DeleteOptions
    cms = env.res("", "configmaps")
    await env.registry.guaranteed_update(cms, "app", "one", lambda o: {**o, "data": {"k": "w"}}, env.opts())
    update = server.seen[-1].review["request"]
    assert update["operation"] == "UPDATE" and update["oldObject"]["data"] == {"k": "v"}
    assert update["object"]["data"] == {"k": "w"} and update["options"]["kind"] == "UpdateOptions"
    await env.registry.delete(cms, "app", "one", env.delete_opts())
    gone = server.seen[-1].review["request"]
    assert gone["operation"] == "DELETE" and gone["object"] is None and gone["oldObject"]["data"] == {"k": "w"}
    assert gone["options"]["kind"] == "DeleteOptions"


async def test_a_denial_carries_the_webhooks_message_and_code(env: Env, server: AdmissionServer) -> None:
    def handler(path: str, review: Obj) -> tuple[int, Any]:
        name = review["request"]["name"]
        if name == "coded":
            return deny(review, "no configmaps here", 403, warnings=["think again"])
        if name == "reasoned":
            return 200, {**allow(review)[1], "response": {"uid": review["request"]["uid"], "allowed": False,
                                                          "status": {"reason": "NotWanted"}}}
        if name == "bare":
            return deny(review)
        if name == "low":
            return deny(review, "low code", 200)
        return allow(review)

    server.handler = handler
    await env.configure(VWC, "deny", [webhook("deny.example.com", server)])
    with pytest.raises(errors.StatusError) as caught:
        await env.create_cm(cm("coded"))
    assert caught.value.code == 403
    assert caught.value.message == 'admission webhook "deny.example.com" denied the request: no configmaps here'
    assert env.warnings == ["think again"]
    with pytest.raises(errors.StatusError) as caught:
        await env.create_cm(cm("reasoned"))
    assert caught.value.code == 400 and caught.value.reason == "NotWanted"
    assert caught.value.message == 'admission webhook "deny.example.com" denied the request: NotWanted'
    with pytest.raises(errors.StatusError) as caught:
        await env.create_cm(cm("bare"))
    assert caught.value.message == 'admission webhook "deny.example.com" denied the request without explanation'
    assert caught.value.to_status()["status"] == "Failure" and "reason" not in caught.value.to_status()
    with pytest.raises(errors.StatusError) as caught:
        await env.create_cm(cm("low"))
    assert caught.value.code == 400  # never less than 400 with a refusal
    await env.create_cm(cm("fine"))
    assert env.registry.table.get("", "v1", "configmaps") is not None


async def test_a_mutating_webhook_patches_the_object(env: Env, server: AdmissionServer) -> None:
    def handler(path: str, review: Obj) -> tuple[int, Any]:
        ops = [{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}},
               {"op": "add", "path": "/data/added", "value": "<by webhook>"}]
        return allow(review, patchType="JSONPatch", patch=patch_of(ops), warnings=["patched you"],
                     auditAnnotations={"decision": "labelled"})

    server.handler = handler
    await env.configure(MWC, "mutate", [webhook("label.example.com", server, "/mutate")])
    made = await env.create_cm(cm("m", k="v"))
    assert made["metadata"]["labels"] == {"patched": "yes"}
    assert made["data"] == {"k": "v", "added": "<by webhook>"}
    stored = await env.registry.get(env.res("", "configmaps"), "app", "m")
    assert stored["metadata"]["labels"] == {"patched": "yes"}
    assert env.warnings == ["patched you"]
    assert env.annotations["label.example.com/decision"] == "labelled"
    assert env.annotations["mutation.webhook.admission.k8s.io/round_0_index_0"] == \
        '{"configuration":"mutate","webhook":"label.example.com","mutated":true}'
    assert env.annotations["patch.webhook.admission.k8s.io/round_0_index_0"] == (
        '{"configuration":"mutate","webhook":"label.example.com","patch":[{"op":"add","path":"/metadata/labels",'
        '"value":{"patched":"yes"}},{"op":"add","path":"/data/added","value":"\\u003cby webhook\\u003e"}],'
        '"patchType":"JSONPatch"}')


async def test_patches_kube_refuses(env: Env, server: AdmissionServer) -> None:
    answers: dict[str, Any] = {}

    def handler(path: str, review: Obj) -> tuple[int, Any]:
        return allow(review, **answers[review["request"]["name"]])

    server.handler = handler
    await env.configure(MWC, "mutate", [webhook("m.example.com", server)])
    answers["failing"] = {"patchType": "JSONPatch",
                          "patch": patch_of([{"op": "test", "path": "/data/k", "value": "other"}])}
    with pytest.raises(errors.InternalError) as caught:
        await env.create_cm(cm("failing", k="v"))
    assert caught.value.message == "Internal error occurred: testing value /data/k failed: test failed"
    answers["untyped"] = {"patch": patch_of([{"op": "add", "path": "/data/x", "value": "1"}])}
    with pytest.raises(errors.InternalError) as caught:
        await env.create_cm(cm("untyped"))
    assert caught.value.message == ('Internal error occurred: failed calling webhook "m.example.com": received invalid '
                                    'webhook response: webhook returned response.patch but not response.patchType')
    answers["empty"] = {"patchType": "JSONPatch", "patch": patch_of([])}
    assert "labels" not in (await env.create_cm(cm("empty")))["metadata"]
    assert env.annotations["mutation.webhook.admission.k8s.io/round_0_index_0"].endswith('"mutated":false}')


async def test_failure_policy_with_the_webhook_down(env: Env) -> None:
    port = closed_port()
    url = f"https://127.0.0.1:{port}/validate"
    await env.configure(VWC, "down", [webhook("down.example.com", None, url=url)])
    with pytest.raises(errors.InternalError) as caught:
        await env.create_cm(cm("one"))
    assert caught.value.code == 500
    assert caught.value.message == (
        f'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: '
        f'Post "{url}?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused')
    assert caught.value.to_status()["details"]["causes"] == [{"message": caught.value.message.split(": ", 1)[1]}]

    await env.configure(VWC, "down", [webhook("down.example.com", None, url=url, failurePolicy="Ignore")])
    await env.create_cm(cm("two"))
    assert env.annotations == {"failed-open.validating.webhook.admission.k8s.io/round_0_index_0": "down.example.com"}

    await env.configure(MWC, "down", [webhook("first.example.com", None, url=url, failurePolicy="Ignore"),
                                      webhook("second.example.com", None, url=url, failurePolicy="Ignore")])
    await env.create_cm(cm("three"))
    assert env.annotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_1"] == "second.example.com"
    await env.configure(MWC, "down", [webhook("first.example.com", None, url=url)])
    with pytest.raises(errors.InternalError) as caught:
        await env.create_cm(cm("four"))
    assert 'failed calling webhook "first.example.com": failed to call webhook: Post' in caught.value.message


async def test_a_webhook_with_a_certificate_of_another_ca(env: Env, server: AdmissionServer, tmp_path: Path) -> None:
    other = new_server(tmp_path / "other", label="other-ca")
    try:
        hook = webhook("tls.example.com", server)
        hook["clientConfig"]["caBundle"] = other.ca_bundle
        await env.configure(VWC, "tls", [hook])
        with pytest.raises(errors.InternalError) as caught:
            await env.create_cm(cm("one"))
        assert caught.value.message.endswith(
            f'Post "{server.base}/?timeout=10s": tls: failed to verify certificate: x509: certificate signed by '
            f'unknown authority')
        assert not server.seen
    finally:
        other.stop()


async def test_a_webhook_that_does_not_answer_in_time(env: Env, server: AdmissionServer) -> None:
    server.delay_s = 1.5
    await env.configure(VWC, "slow", [webhook("slow.example.com", server, timeoutSeconds=1)])
    with pytest.raises(errors.InternalError) as caught:
        await env.create_cm(cm("one"))
    assert caught.value.message == (
        f'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
        f'Post "{server.base}/?timeout=1s": context deadline exceeded')
    await env.configure(VWC, "slow", [webhook("slow.example.com", server, timeoutSeconds=1, failurePolicy="Ignore")])
    await env.create_cm(cm("two"))
    assert env.annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"] == "slow.example.com"


async def test_dry_run_goes_only_to_webhooks_without_side_effects(env: Env, server: AdmissionServer) -> None:
    await env.configure_raw(VWC, "effects", [webhook("some.example.com", server, sideEffects="Some")])
    with pytest.raises(errors.BadRequest) as caught:
        await env.create_cm(cm("one"), dry_run=True)
    assert caught.value.message == 'admission webhook "some.example.com" does not support dry run'
    assert not server.seen
    await env.create_cm(cm("real"))  # not a dry run: called
    assert len(server.seen) == 1

    # NoneOnDryRun is called, told it is a dry run; failurePolicy Ignore does not excuse side effects
    await env.configure_raw(VWC, "effects", [webhook("none.example.com", server, sideEffects="NoneOnDryRun"),
                                         webhook("unknown.example.com", server, sideEffects="Unknown",
                                                 failurePolicy="Ignore")])
    with pytest.raises(errors.BadRequest) as caught:
        await env.create_cm(cm("two"), dry_run=True)
    assert caught.value.message == 'admission webhook "unknown.example.com" does not support dry run'
    dry = server.seen[-1].review["request"]
    assert dry["dryRun"] is True and dry["options"]["dryRun"] == ["All"]
    await env.configure_raw(VWC, "effects", [webhook("none.example.com", server, sideEffects="NoneOnDryRun")])
    await env.create_cm(cm("three"), dry_run=True)
    with pytest.raises(errors.NotFound):
        await env.registry.get(env.res("", "configmaps"), "app", "three")


async def test_answers_kube_does_not_accept(env: Env, server: AdmissionServer) -> None:
    bodies: dict[str, Any] = {}

    def handler(path: str, review: Obj) -> tuple[int, Any]:
        made = bodies[review["request"]["name"]]
        return made(review) if callable(made) else made

    server.handler = handler
    await env.configure(VWC, "odd", [webhook("odd.example.com", server)])
    cases = {
        "nouid": (lambda r: (200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": {"uid": "other", "allowed": True}}),
                  'received invalid webhook response: expected response.uid="{uid}", got "other"'),
        "nokind": (lambda r: (200, {"response": {"uid": r["request"]["uid"], "allowed": True}}),
                   "received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
                   "Kind=AdmissionReview, got /, Kind="),
        "noresponse": ((200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
                       "received invalid webhook response: webhook response was absent"),
        "patching": (lambda r: allow(r, patchType="JSONPatch", patch=patch_of([])),
                     "received invalid webhook response: validating webhook may not return response.patch"),
        "broken": ((500, b"oops"), 'failed to call webhook: an error on the server ("oops") has prevented the '
                                   'request from succeeding'),
    }
    for name, (body, expected) in cases.items():
        bodies[name] = body
        with pytest.raises(errors.InternalError) as caught:
            await env.create_cm(cm(name))
        uid = server.seen[-1].review["request"]["uid"]
        assert caught.value.message == \
            f'Internal error occurred: failed calling webhook "odd.example.com": {expected.format(uid=uid)}'


async def test_admission_review_v1beta1(env: Env, server: AdmissionServer) -> None:
    def handler(path: str, review: Obj) -> tuple[int, Any]:
        # v1beta1 answers were never checked for uid or kind; a patch is a JSON patch
        return 200, {"response": {"allowed": True,
                                  "patch": patch_of([{"op": "add", "path": "/data", "value": {"b": "1"}}])}}

    server.handler = handler
    await env.configure(MWC, "beta", [webhook("beta.example.com", server, admissionReviewVersions=["v1beta1", "v1"])])
    made = await env.create_cm(cm("one"))
    assert server.seen[0].review["apiVersion"] == "admission.k8s.io/v1beta1"
    assert made["data"] == {"b": "1"}
    await env.configure_raw(MWC, "beta", [webhook("beta.example.com", server, admissionReviewVersions=["v2"])])
    with pytest.raises(errors.InternalError) as caught:
        await env.create_cm(cm("two"))
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "beta.example.com": could not create admission objects: '
        'webhook does not accept known AdmissionReview versions (v1, v1beta1)')


async def test_mutating_webhooks_in_order_with_reinvocation(env: Env, server: AdmissionServer) -> None:
    def handler(path: str, review: Obj) -> tuple[int, Any]:
        obj = review["request"]["object"]
        labels = dict(obj["metadata"].get("labels") or {})
        key = path.split("?")[0].strip("/")
        if key == "first":  # adds first=<labels it saw>; called again when a later webhook changed the object
            labels["first"] = str(len(labels))
        elif key == "second":
            labels["second"] = "x"
        return allow(review, patchType="JSONPatch",
                     patch=patch_of([{"op": "replace" if "labels" in obj["metadata"] else "add",
                                      "path": "/metadata/labels", "value": labels}]))

    server.handler = handler
    await env.configure(MWC, "a", [webhook("first.example.com", server, "/first", reinvocationPolicy="IfNeeded"),
                                   webhook("second.example.com", server, "/second")])
    made = await env.create_cm(cm("one"))
    assert [s.path.split("?")[0] for s in server.seen] == ["/first", "/second", "/first"]
    assert made["metadata"]["labels"] == {"first": "2", "second": "x"}
    assert env.annotations["mutation.webhook.admission.k8s.io/round_1_index_0"].endswith('"mutated":true}')

    # Never: called once
    server.seen.clear()
    await env.configure(MWC, "a", [webhook("first.example.com", server, "/first"),
                                   webhook("second.example.com", server, "/second")])
    made = await env.create_cm(cm("two"))
    assert [s.path.split("?")[0] for s in server.seen] == ["/first", "/second"]
    assert made["metadata"]["labels"] == {"first": "0", "second": "x"}


async def test_validating_webhooks_are_called_in_parallel(env: Env, server: AdmissionServer) -> None:
    import threading
    barrier = threading.Barrier(3, timeout=10)  # three webhooks meet only if they are called together

    def handler(path: str, review: Obj) -> tuple[int, Any]:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return deny(review, "called one after the other")
        if path.startswith("/b"):
            return deny(review, "b says no")
        return allow(review)

    server.handler = handler
    await env.configure(VWC, "p", [webhook("a.example.com", server, "/a"), webhook("b.example.com", server, "/b"),
                                   webhook("c.example.com", server, "/c")])
    with pytest.raises(errors.StatusError) as caught:
        await env.create_cm(cm("one"))
    assert caught.value.message == 'admission webhook "b.example.com" denied the request: b says no'
    assert len(server.seen) == 3


async def test_clients_are_kept_and_closed_when_the_configuration_changes(env: Env, server: AdmissionServer) -> None:
    await env.configure(VWC, "keep", [webhook("keep.example.com", server)])
    plugin = next(p for p in env.chain.plugins if p.name == "ValidatingAdmissionWebhook")
    source = plugin.source  # type: ignore[attr-defined]
    await env.create_cm(cm("one"))
    (first,) = [c for _, c in source._clients.values()]
    await env.create_cm(cm("two"))
    assert [c for _, c in source._clients.values()] == [first]
    assert first._client is not None  # the connection pool is open
    await env.configure(VWC, "keep", [webhook("keep.example.com", server, "/moved")])
    await env.create_cm(cm("three"))
    (second,) = [c for _, c in source._clients.values()]
    assert second is not first
    with trio.fail_after(20):
        while first._client is not None:
            await trio.sleep(0.01)  # closed by the plugin's background task
    await env.unconfigure(VWC, "keep")
    await env.create_cm(cm("four"))
    assert not source._clients
    assert [s.path.split("?")[0] for s in server.seen] == ["/", "/", "/moved"]


async def test_webhook_configurations_and_policies_are_never_sent_to_webhooks(env: Env,
                                                                              server: AdmissionServer) -> None:
    await env.configure(VWC, "all", [webhook("all.example.com", server, rules=[rule(["*"], groups=["*"])],
                                             failurePolicy="Fail")])
    server.handler = lambda path, review: deny(review, "nothing passes")
    await env.configure(MWC, "other", [webhook("x.example.com", server)])  # not refused
    assert not server.seen
    with pytest.raises(errors.StatusError):
        await env.create_cm(cm("one"))
    assert len(server.seen) == 1


async def test_users_and_patch_serialisation_in_the_review(env: Env, server: AdmissionServer) -> None:
    await env.configure(VWC, "u", [webhook("u.example.com", server)])
    await env.create_cm(cm("one"), user=USER)
    review = server.seen[0].review
    # the body is JSON a Go webhook decodes: object is the full ConfigMap
    assert orjson.loads(orjson.dumps(review))["request"]["object"]["kind"] == "ConfigMap"


async def test_credentials_from_the_webhook_admission_configuration(nursery: trio.Nursery, tmp_path: Path) -> None:
    import base64

    import yaml

    from kapi.admission.chain import AdmissionConfigError, build_chain
    from kapi.admission.plugin import Objects, PluginDeps
    from kapi.admission.webhook.auth import resolver_from
    server = new_server(tmp_path, client_certs=True)
    try:
        assert server.server is not None
        port = server.server.server_address[1]
        kubeconfig = tmp_path / "webhooks.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [
            {"name": f"127.0.0.1:{port}", "user": {
                "client-certificate-data": base64.b64encode(server.pki.client_cert).decode(),
                "client-key-data": base64.b64encode(server.pki.client_key).decode()}},
            {"name": "*", "user": {"token": "default-token"}},
        ]}))
        config = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                  "kubeConfigFile": str(kubeconfig)}
        env = await start_env(nursery, configuration={"ValidatingAdmissionWebhook": config})
        await env.configure(VWC, "auth", [webhook("auth.example.com", server)])
        await env.create_cm(cm("one"))
        assert server.seen[0].client_cn == "kube-apiserver"  # the client certificate of the kubeconfig's user
        assert "authorization" not in server.seen[0].headers

        # another host: the "*" user's token
        resolver = resolver_from(config, "ValidatingAdmissionWebhook")
        assert resolver.for_target("hook.app.svc:443").headers == (("Authorization", "Bearer default-token"),)
        assert resolver.for_target(f"127.0.0.1:{port}").cert_pem == server.pki.client_cert

        registry = env.registry
        with pytest.raises(AdmissionConfigError) as caught:
            build_chain(["ValidatingAdmissionWebhook"], PluginDeps(registry, Objects(registry, None), configuration={
                "ValidatingAdmissionWebhook": {**config, "kubeConfigFile": "relative.kubeconfig"}}))
        assert str(caught.value) == ('ValidatingAdmissionWebhook: kubeConfigFile: Invalid value: "relative.kubeconfig": '
                                     'must be an absolute file path')
    finally:
        server.stop()


def test_credentials_lookup_order() -> None:
    from kapi.admission.webhook.auth import AuthInfoResolver, Credentials
    users = {n: Credentials(n) for n in ("a.b.svc:8443", "*.b.svc:8443", "c.b.svc", "*.svc", "*")}
    r = AuthInfoResolver(users)
    assert r.for_target("a.b.svc:8443").name == "a.b.svc:8443"
    assert r.for_target("x.b.svc:8443").name == "*.b.svc:8443"
    assert r.for_target("c.b.svc:443").name == "c.b.svc"  # :443 looked up without the port too
    assert r.for_target("d.e.svc:443").name == "*.svc"
    assert r.for_target("d.e.svc:9443").name == "*"
    assert AuthInfoResolver().for_target("x:1").name == ""


async def test_an_ifneeded_webhook_is_reinvoked_after_a_later_plugin_changed_the_object(
        nursery: trio.Nursery, server: AdmissionServer) -> None:
    from kapi.admission.chain import AdmissionChain
    from kapi.admission.plugin import Attributes, Plugin

    class Relabel(Plugin):
        """A plugin after the webhooks that changes the object in the first round only."""

        name = "Relabel"

        async def admit(self, a: Attributes) -> None:
            if not a.is_reinvoke and a.obj is not None and a.obj["metadata"]["name"] == "changed-later":
                a.obj["metadata"].setdefault("labels", {})["later"] = "yes"

    def handler(path: str, review: Obj) -> tuple[int, Any]:
        labels = dict(review["request"]["object"]["metadata"].get("labels") or {})
        labels["hook"] = str(int(labels.get("hook", "0")) + 1)
        return allow(review, patchType="JSONPatch",
                     patch=patch_of([{"op": "add", "path": "/metadata/labels", "value": labels}]))

    server.handler = handler
    env = await start_env(nursery)
    env.chain = AdmissionChain([*env.chain.plugins, Relabel(env.chain.plugins[0].deps)])
    await env.configure(MWC, "again", [webhook("again.example.com", server, reinvocationPolicy="IfNeeded")])
    made = await env.create_cm(cm("changed-later"))
    assert len(server.seen) == 2  # called again: the object changed since its call
    assert made["metadata"]["labels"] == {"hook": "2", "later": "yes"}
    server.seen.clear()
    made = await env.create_cm(cm("unchanged-later"))
    assert len(server.seen) == 1  # its own change alone does not call it again
    assert made["metadata"]["labels"] == {"hook": "1"}


async def test_not_ready_until_the_configurations_are_read(nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from kapi.admission.chain import build_chain
    from kapi.admission.plugin import Objects, PluginDeps
    from kapi.admission.webhook import source as source_module
    from kapi.apis import BUILTIN
    from kapi.registry.informer import Informers
    from kapi.registry.resources import ResourceTable
    from kapi.registry.store import Registry, WriteOptions
    from kapi.storage.memory import MemoryStorage

    monkeypatch.setattr(source_module, "READY_WAIT_S", 0.05)
    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    informers = Informers(registry)  # never run: never synced
    chain = build_chain(["ValidatingAdmissionWebhook"], PluginDeps(registry, Objects(registry, informers)))
    cms = registry.table.get("", "v1", "configmaps")
    assert cms is not None
    with pytest.raises(errors.Forbidden) as caught:
        await registry.create(cms, "app", cm("x"), WriteOptions(admission=chain.bind(USER, [])))
    assert caught.value.message == 'configmaps "x" is forbidden: not yet ready to handle request'


async def test_kubes_webhook_metrics(env: Env, server: AdmissionServer) -> None:
    server.handler = lambda path, review: deny(review, "no", 403) if path.startswith("/deny") else allow(review)
    down = f"https://127.0.0.1:{closed_port()}/"
    await env.configure(VWC, "m", [webhook("ok.example.com", server, "/ok"),
                                   webhook("open.example.com", None, url=down, failurePolicy="Ignore")])
    await env.create_cm(cm("one"))
    await env.configure(VWC, "m", [webhook("deny.example.com", server, "/deny")])
    with pytest.raises(errors.StatusError):
        await env.create_cm(cm("two"))
    text = env.registry.metrics.exposition().decode()
    for line in (
        'apiserver_admission_webhook_fail_open_count{name="open.example.com",type="validating"} 1.0',
        'apiserver_admission_webhook_request_total{code="200",name="ok.example.com",operation="CREATE",'
        'rejected="false",type="validating"} 1.0',
        'apiserver_admission_webhook_rejection_count{error_type="no_error",name="deny.example.com",'
        'operation="CREATE",rejection_code="403",type="validating"} 1.0',
        'apiserver_admission_webhook_request_total{code="403",name="deny.example.com",operation="CREATE",'
        'rejected="true",type="validating"} 1.0',
    ):
        assert line in text, line
    assert 'apiserver_admission_webhook_admission_duration_seconds_count{name="ok.example.com",operation="CREATE",' \
           'rejected="false",type="validating"} 1.0' in text


async def test_without_informers_or_background_task(nursery: trio.Nursery, server: AdmissionServer) -> None:
    """Read from the registry on each request (no informers), old clients closed by the next request."""
    from kapi.admission.chain import build_chain
    from kapi.admission.plugin import Objects, PluginDeps
    from kapi.apis import BUILTIN
    from kapi.registry.resources import ResourceTable
    from kapi.registry.store import Registry, WriteOptions
    from kapi.storage.memory import MemoryStorage
    from tests.admission.test_webhook_support import configuration, factory

    storage = MemoryStorage()
    await nursery.start(storage.run)
    registry = Registry(storage, ResourceTable(BUILTIN))
    chain = build_chain(["ValidatingAdmissionWebhook"], PluginDeps(registry, Objects(registry, None),
                                                                   client_factory=factory))
    source = chain.plugins[0].source  # type: ignore[attr-defined]
    cms, vwcs = registry.table.get("", "v1", "configmaps"), registry.table.get(
        "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    assert cms is not None and vwcs is not None
    ns = registry.table.get("", "v1", "namespaces")
    assert ns is not None
    await registry.create(ns, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
                          WriteOptions())
    await registry.create(vwcs, "", configuration(VWC, "c", [webhook("a.example.com", server, "/a")]), WriteOptions())
    await registry.create(cms, "app", cm("one"), WriteOptions(admission=chain.bind(USER, [])))
    (first,) = [c for _, c in source._clients.values()]
    stored = await registry.get(vwcs, "", "c")
    stored["webhooks"][0]["clientConfig"]["url"] = server.base + "/b"
    await registry.update(vwcs, "", "c", stored, WriteOptions())
    await registry.create(cms, "app", cm("two"), WriteOptions(admission=chain.bind(USER, [])))
    assert first._client is None  # closed
    assert [s.path.split("?")[0] for s in server.seen] == ["/a", "/b"]
    for _, c in source._clients.values():
        await c.aclose()


def test_the_url_posted_to() -> None:
    from kapi.admission.webhook.source import _host_port, _with_timeout
    assert _with_timeout("https://127.0.0.1:9443", 10) == "https://127.0.0.1:9443/?timeout=10s"  # client-go's "/"
    assert _with_timeout("https://hook.example.com/admit?mode=x", 3) == "https://hook.example.com/admit?mode=x&timeout=3s"
    assert _host_port("https://hook.example.com/admit") == "hook.example.com:443"
    assert _host_port("https://[::1]:8443/") == "[::1]:8443"
