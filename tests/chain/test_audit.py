"""Audit (issue 12): the audit.k8s.io/v1 policy as kube's checker evaluates it, the events of each stage
through the real app, the log backend's formats and lumberjack rotation (the webhook backend:
test_audit_webhook.py)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import yaml

from kapi.api.app import App, Health
from kapi.apis import BUILTIN
from kapi.chain.audit import Audit, PolicyError, load_policy, parse_policy
from kapi.chain.audit.events import event_string, source_ips
from kapi.chain.audit.log import LogBackend, RotatingFile
from kapi.chain.context import new_request_info
from kapi.config import Config
from kapi.controllers.namespace import NamespaceController
from kapi.object.access import UserInfo
from kapi.registry.resources import ResourceTable
from kapi.registry.store import Registry
from kapi.server.bootstrap import bootstrap
from kapi.server.security import build_audit
from kapi.server.serve import build_app
from kapi.storage.memory import MemoryStorage

TOKEN = "audit-admin-token"
ALICE_TOKEN = "alice-token"
ALICE = UserInfo("alice", "a1", ("devs", "system:authenticated"))
BOB = UserInfo("bob", "b1", ("ops",))


def policy(*rules: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top}


def level(doc: dict[str, Any], method: str, path: str, user: UserInfo | None = ALICE) -> str:
    query = dict(q.split("=", 1) for q in path.partition("?")[2].split("&") if q)
    info = new_request_info(method, path.partition("?")[0], query)
    return parse_policy(doc).evaluate(user, info).level


# ----------------------------------------------------------------------------------------- policy


CM = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize("rule, method, path, user, want", [
    ({"level": "Metadata"}, "GET", CM, ALICE, "Metadata"),
    ({"level": "Request", "users": ["alice"]}, "GET", CM, ALICE, "Request"),
    ({"level": "Request", "users": ["alice"]}, "GET", CM, BOB, "None"),
    ({"level": "Request", "users": ["alice"]}, "GET", CM, None, "None"),  # failed authentication: no user
    ({"level": "Request", "userGroups": ["ops", "x"]}, "GET", CM, BOB, "Request"),
    ({"level": "Request", "userGroups": ["ops"]}, "GET", CM, ALICE, "None"),
    ({"level": "Metadata", "verbs": ["list", "watch"]}, "GET", CM, ALICE, "Metadata"),
    ({"level": "Metadata", "verbs": ["watch"]}, "GET", CM + "?watch=true", ALICE, "Metadata"),
    ({"level": "Metadata", "verbs": ["get"]}, "GET", CM, ALICE, "None"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["configmaps"]}]}, "GET", CM, ALICE, "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "apps"}]}, "GET", CM, ALICE, "None"),
    ({"level": "Metadata", "resources": [{"group": "apps"}]}, "GET", "/apis/apps/v1/deployments", ALICE,
     "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["pods"]}]}, "GET",
     "/api/v1/namespaces/d/pods/p/log", ALICE, "None"),  # a subresource needs resource/sub
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["pods/log"]}]}, "GET",
     "/api/v1/namespaces/d/pods/p/log", ALICE, "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["*/status"]}]}, "PUT",
     "/api/v1/namespaces/d/pods/p/status", ALICE, "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["pods/*"]}]}, "GET",
     "/api/v1/namespaces/d/pods/p/exec", ALICE, "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["*"]}]}, "GET", CM, ALICE, "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["configmaps"], "resourceNames": ["a"]}]},
     "GET", CM + "/a", ALICE, "Metadata"),
    ({"level": "Metadata", "resources": [{"group": "", "resources": ["configmaps"], "resourceNames": ["a"]}]},
     "GET", CM + "/b", ALICE, "None"),
    ({"level": "Metadata", "namespaces": ["default"]}, "GET", CM, ALICE, "Metadata"),
    ({"level": "Metadata", "namespaces": ["kube-system"]}, "GET", CM, ALICE, "None"),
    ({"level": "Metadata", "namespaces": [""]}, "GET", "/api/v1/nodes", ALICE, "Metadata"),  # cluster scope: ""
    ({"level": "Metadata", "namespaces": ["default"]}, "GET", "/healthz", ALICE, "None"),  # not a resource
    ({"level": "Metadata", "nonResourceURLs": ["/healthz*"]}, "GET", "/healthz/ping", ALICE, "Metadata"),
    ({"level": "Metadata", "nonResourceURLs": ["/version"]}, "GET", "/versions", ALICE, "None"),
    ({"level": "Metadata", "nonResourceURLs": ["*"]}, "GET", "/metrics", ALICE, "Metadata"),
    ({"level": "Metadata", "nonResourceURLs": ["*"]}, "GET", CM, ALICE, "None"),  # resources never match
])
def test_a_rule_matches_as_kubes_checker(rule: dict[str, Any], method: str, path: str, user: UserInfo | None,
                                         want: str) -> None:
    assert level(policy(rule), method, path, user) == want


def test_the_first_matching_rule_decides_and_none_matching_is_level_none() -> None:
    doc = policy({"level": "None", "resources": [{"group": "", "resources": ["events"]}]},
                 {"level": "RequestResponse", "resources": [{"group": "", "resources": ["configmaps"]}]},
                 {"level": "Metadata", "verbs": ["get", "list"]})
    assert level(doc, "GET", "/api/v1/namespaces/d/events") == "None"
    assert level(doc, "GET", CM) == "RequestResponse"
    assert level(doc, "GET", "/api/v1/namespaces/d/secrets") == "Metadata"
    assert level(doc, "DELETE", "/api/v1/namespaces/d/secrets/s") == "None"


def test_omit_stages_merge_and_omit_managed_fields_defaults_to_the_policys() -> None:
    doc = policy({"level": "Metadata", "users": ["alice"], "omitStages": ["ResponseComplete"],
                  "omitManagedFields": False},
                 {"level": "Request"}, omitStages=["RequestReceived"], omitManagedFields=True)
    p = parse_policy(doc)
    alice = p.evaluate(ALICE, new_request_info("GET", CM, {}))
    bob = p.evaluate(BOB, new_request_info("GET", CM, {}))
    assert alice.omit_stages == {"RequestReceived", "ResponseComplete"} and not alice.omit_managed_fields
    assert bob.omit_stages == {"RequestReceived"} and bob.omit_managed_fields


@pytest.mark.parametrize("doc, message", [
    (policy(), "loaded illegal policy with 0 rules"),
    (policy({"level": "Everything"}), 'rules[0].level: Unsupported value: "Everything"'),
    (policy({"users": ["a"]}), "rules[0].level: Required value"),
    (policy({"level": "Metadata", "nonResourceURLs": ["/x"], "namespaces": ["d"]}),
     "rules cannot apply to both regular resources and non-resource URLs"),
    (policy({"level": "Metadata", "nonResourceURLs": ["healthz"]}), "must begin with a '/' character"),
    (policy({"level": "Metadata", "nonResourceURLs": ["/a*/b"]}), "must be the final character of the rule"),
    (policy({"level": "Metadata", "resources": [{"group": "apps/v1"}]}), "rules[0].resources.group: Invalid"),
    (policy({"level": "Metadata", "resources": [{"group": "", "resourceNames": ["x"]}]}),
     "using resourceNames requires at least one resource"),
    (policy({"level": "Metadata"}, omitStages=["Done"]), 'omitStages[0]: Invalid value: "Done": allowed stages'),
    ({"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy", "rules": [{"level": "None"}]},
     "unknown group version"),
])
def test_a_policy_kube_refuses_is_refused_with_its_reason(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(doc)
    assert message in str(err.value)


def test_a_policy_file_is_read_as_yaml_and_its_errors_name_the_file(tmp_path: Path) -> None:
    good = tmp_path / "policy.yaml"
    good.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    assert load_policy(str(good)).rules[0].level == "Metadata"
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")
    with pytest.raises(PolicyError, match=f"0 rules: from file {bad}"):
        load_policy(str(bad))
    with pytest.raises(PolicyError, match="failed to read file path"):
        load_policy(str(tmp_path / "absent.yaml"))


def test_source_ips_are_kubes_forwarded_real_then_peer() -> None:
    assert source_ips({}, ("127.0.0.1", 1)) == ["127.0.0.1"]
    assert source_ips({"x-forwarded-for": "10.0.0.1, bogus, 10.0.0.2", "x-real-ip": "10.0.0.1"},
                      ("127.0.0.1", 1)) == ["10.0.0.1", "10.0.0.2", "127.0.0.1"]
    assert source_ips({"x-real-ip": "10.0.0.9"}, ("10.0.0.9", 1)) == ["10.0.0.9"]


# ------------------------------------------------------------------------------------ the app


class Audited:
    """The real app (memory storage) with an audit policy and a log file; ``events()`` reads the log."""

    def __init__(self, app: App, log: Path) -> None:
        self.app = app
        self.log = log
        self.audit: Audit = app.chain.audit  # type: ignore[assignment]

    async def request(self, method: str, path: str, body: Any = None, *, token: str | None = TOKEN,
                      headers: dict[str, str] | None = None, content_type: str = "application/json",
                      watch_for_s: float = 0.0) -> tuple[int, dict[str, str], bytes]:
        path, _, query = path.partition("?")
        raw = body if isinstance(body, bytes) else (orjson.dumps(body) if body is not None else b"")
        hdrs = [(b"content-type", content_type.encode()), (b"user-agent", b"audit-test/1.0")]
        if token:
            hdrs.append((b"authorization", f"Bearer {token}".encode()))
        for k, v in (headers or {}).items():
            hdrs.append((k.lower().encode(), v.encode()))
        scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
                 "query_string": query.encode(), "headers": hdrs, "http_version": "1.1", "scheme": "https",
                 "client": ("127.0.0.1", 40000)}
        sent, out, done = False, [], trio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            if watch_for_s:
                await trio.sleep(watch_for_s)
                return {"type": "http.disconnect"}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            out.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await self.app(scope, receive, send)
        headers_out = {k.decode(): v.decode() for k, v in out[0]["headers"]}
        return out[0]["status"], headers_out, b"".join(m.get("body", b"") for m in out[1:])

    def events(self) -> list[dict[str, Any]]:
        for backend in self.audit.backends:
            backend.flush()  # type: ignore[attr-defined]
        return [orjson.loads(line) for line in self.log.read_bytes().splitlines()]

    def of(self, audit_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["auditID"] == audit_id]


@pytest.fixture
def make_app(nursery: trio.Nursery, tmp_path: Path) -> Any:
    async def make(doc: dict[str, Any], *, fmt: str = "json", modes: tuple[str, ...] = ("AlwaysAllow",),
                   request_timeout_s: float = 60.0) -> Audited:
        storage = MemoryStorage()
        await nursery.start(storage.run)
        registry = Registry(storage, ResourceTable(BUILTIN))
        policy_file = tmp_path / "policy.yaml"
        policy_file.write_text(yaml.safe_dump(doc))
        tokens = tmp_path / "tokens.csv"
        tokens.write_text(f'{ALICE_TOKEN},alice,a1,"devs"\n')
        log = tmp_path / "audit.log"
        config = Config(storage_backend="memory", authorization_mode=modes, token_auth_file=str(tokens),
                        audit_policy_file=str(policy_file), audit_log_path=str(log), audit_log_format=fmt,
                        request_timeout_s=request_timeout_s)
        app = build_app(config, registry, TOKEN, Health(ready=True))
        namespaces = NamespaceController(registry)
        await bootstrap(registry, namespaces)
        await nursery.start(namespaces.run)
        return Audited(app, log)

    return make


SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"},
          "data": {"password": "c3VwZXItc2VjcmV0"}}
SECRETS = "/api/v1/namespaces/default/secrets"


async def test_metadata_events_name_the_request_and_never_hold_a_secrets_data(make_app: Any) -> None:
    """Issue 12: RequestReceived then ResponseComplete under the Audit-ID answered, with kube's fields."""
    srv = await make_app(policy({"level": "Metadata"}))
    code, headers, _ = await srv.request("POST", SECRETS + "?fieldManager=me", SECRET)
    assert code == 201
    events = srv.of(headers["audit-id"])
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseComplete"]
    received, complete = events
    assert received["kind"] == "Event" and received["apiVersion"] == "audit.k8s.io/v1"
    assert received["level"] == "Metadata" and received["verb"] == "create"
    assert received["requestURI"] == SECRETS + "?fieldManager=me"
    assert received["user"] == {"username": "kapi-admin", "uid": "kapi-admin",
                                "groups": ["system:masters", "system:authenticated"]}
    assert received["sourceIPs"] == ["127.0.0.1"] and received["userAgent"] == "audit-test/1.0"
    assert received["objectRef"] == {"resource": "secrets", "namespace": "default", "apiVersion": "v1"}
    assert "responseStatus" not in received and received["stageTimestamp"] == received["requestReceivedTimestamp"]
    # the created object's name completes the reference, as kube's LogRequestObject does
    assert complete["objectRef"] == {"resource": "secrets", "namespace": "default", "name": "s1",
                                     "apiVersion": "v1"}
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert complete["annotations"] == {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}
    assert "requestObject" not in complete and "responseObject" not in complete
    assert b"c3VwZXItc2VjcmV0" not in srv.log.read_bytes()
    code, headers, _ = await srv.request("GET", SECRETS + "/s1")
    assert code == 200
    assert b"c3VwZXItc2VjcmV0" not in srv.log.read_bytes()
    assert [e["stage"] for e in srv.of(headers["audit-id"])] == ["RequestReceived", "ResponseComplete"]
    # kube's audit metrics: events sent, and the level of each request
    metrics = srv.app.metrics.exposition().decode()
    assert "apiserver_audit_event_total 4.0" in metrics
    assert 'apiserver_audit_level_total{level="Metadata"} 2.0' in metrics


async def test_request_and_request_response_levels_log_the_objects(make_app: Any) -> None:
    srv = await make_app(policy({"level": "Request", "verbs": ["create"]}, {"level": "RequestResponse"}))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "v"}}
    _, headers, _ = await srv.request("POST", CM, cm)
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["level"] == "Request" and complete["requestObject"] == cm and "responseObject" not in complete
    _, headers, _ = await srv.request("GET", CM + "/c1")
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["responseObject"]["data"] == {"k": "v"} and "requestObject" not in complete
    assert complete["responseObject"]["metadata"]["managedFields"]  # kept: omitManagedFields is off
    _, headers, _ = await srv.request("GET", CM + "/absent")  # an error: its Status is the response object
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["responseObject"]["kind"] == "Status" and complete["responseObject"]["code"] == 404
    assert complete["responseStatus"]["reason"] == "NotFound"
    _, headers, _ = await srv.request("GET", CM)  # a LIST: streamed, still logged whole
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["responseObject"]["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in complete["responseObject"]["items"]] == ["c1"]
    _, headers, _ = await srv.request("PATCH", CM + "/c1", {"data": {"k": "w"}},
                                      content_type="application/merge-patch+json")
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["requestObject"] == {"data": {"k": "w"}} and complete["responseObject"]["data"] == {"k": "w"}


async def test_omit_managed_fields_and_omit_stages(make_app: Any) -> None:
    srv = await make_app(policy({"level": "RequestResponse", "omitStages": ["RequestReceived"]},
                                omitManagedFields=True))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2"}}
    _, headers, _ = await srv.request("POST", CM, cm)
    events = srv.of(headers["audit-id"])
    assert [e["stage"] for e in events] == ["ResponseComplete"]
    assert "managedFields" not in events[0]["responseObject"]["metadata"]
    _, headers, _ = await srv.request("GET", CM)
    assert all("managedFields" not in i["metadata"] for i in srv.of(headers["audit-id"])[0]["responseObject"]["items"])


async def test_a_refusal_is_audited_with_the_decision_and_the_bounded_status(make_app: Any) -> None:
    srv = await make_app(policy({"level": "Metadata"}), modes=("AlwaysDeny",))
    code, headers, _ = await srv.request("GET", CM + "/x", token=ALICE_TOKEN)
    assert code == 403
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["annotations"] == {"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""}
    status = complete["responseStatus"]
    assert status["code"] == 403 and status["reason"] == "Forbidden" and status["status"] == "Failure"
    assert status["message"].startswith('configmaps "x" is forbidden: User "alice"')
    assert status["metadata"] == {} and status["details"]["name"] == "x"
    code, headers, _ = await srv.request("GET", CM + "/absent")  # the admin: allowed, then 404
    assert code == 404
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["responseStatus"]["reason"] == "NotFound"
    assert complete["annotations"]["authorization.k8s.io/decision"] == "allow"


async def test_impersonation_records_both_users(make_app: Any) -> None:
    """Issue 12: user is the authenticated one, impersonatedUser the one the request was served as."""
    srv = await make_app(policy({"level": "Metadata"}))
    code, headers, _ = await srv.request("GET", CM, headers={"Impersonate-User": "bob", "Impersonate-Group": "ops"})
    assert code == 200
    received, complete = srv.of(headers["audit-id"])
    assert received["user"]["username"] == "kapi-admin" and "impersonatedUser" not in received
    assert complete["user"]["username"] == "kapi-admin"
    assert complete["impersonatedUser"]["username"] == "bob"
    assert "ops" in complete["impersonatedUser"]["groups"]


async def test_a_failed_authentication_is_one_response_started_event(make_app: Any) -> None:
    srv = await make_app(policy({"level": "Metadata"}))
    code, headers, _ = await srv.request("GET", CM, token="not-a-token")
    assert code == 401
    events = srv.of(headers["audit-id"])
    assert [e["stage"] for e in events] == ["ResponseStarted"]
    assert events[0]["user"] == {} and events[0]["responseStatus"]["code"] == 401


async def test_a_watch_has_response_started_then_complete(make_app: Any) -> None:
    srv = await make_app(policy({"level": "Metadata"}))
    code, headers, _ = await srv.request("GET", CM + "?watch=true", watch_for_s=0.2)
    assert code == 200
    events = srv.of(headers["audit-id"])
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert events[0]["verb"] == "watch" and events[1]["responseStatus"] == {"metadata": {}, "code": 200}


async def test_a_crash_below_is_a_panic_event(make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = await make_app(policy({"level": "Metadata"}))

    async def crash(ctx: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(srv.app.handlers, "handle", crash)
    code, headers, _ = await srv.request("GET", CM)
    assert code == 500
    events = srv.of(headers["audit-id"])
    assert [e["stage"] for e in events] == ["RequestReceived", "Panic"]
    assert events[1]["responseStatus"]["message"] == "APIServer panic'd: boom"
    assert events[1]["responseStatus"]["code"] == 500


async def test_level_none_and_no_policy_write_nothing_and_every_answer_has_an_audit_id(
        make_app: Any, nursery: trio.Nursery) -> None:
    srv = await make_app(policy({"level": "None", "users": ["kapi-admin"]}, {"level": "Metadata"}))
    code, headers, _ = await srv.request("GET", CM)
    assert code == 200 and headers["audit-id"] and srv.of(headers["audit-id"]) == []
    _, headers, _ = await srv.request("GET", CM, headers={"Audit-ID": "from-the-client"})
    assert headers["audit-id"] == "from-the-client"
    _, headers, _ = await srv.request("GET", CM, token=ALICE_TOKEN, headers={"Audit-ID": "alices"})
    assert [e["stage"] for e in srv.of("alices")] == ["RequestReceived", "ResponseComplete"]
    # no policy: no audit at all, the ID still answered
    storage = MemoryStorage()
    await nursery.start(storage.run)
    app = build_app(Config(storage_backend="memory", authorization_mode=("AlwaysAllow",)),
                    Registry(storage, ResourceTable(BUILTIN)), TOKEN, Health(ready=True))
    assert app.chain.audit is None
    plain = Audited(app, srv.log)
    code, headers, _ = await plain.request("GET", "/version", token="")
    assert code == 200 and len(headers["audit-id"]) == 36


async def test_the_legacy_format_is_kubes_event_string(make_app: Any) -> None:
    srv = await make_app(policy({"level": "Metadata"}), fmt="legacy")
    _, headers, _ = await srv.request("GET", CM, headers={"Impersonate-User": "bob"})
    srv.audit.backends[0].flush()  # type: ignore[attr-defined]
    lines = [line for line in srv.log.read_text().splitlines() if headers["audit-id"] in line]
    assert len(lines) == 2
    assert f' AUDIT: id="{headers["audit-id"]}" stage="RequestReceived" ip="127.0.0.1" method="list" ' \
           f'user="kapi-admin" groups="\\"system:masters\\",\\"system:authenticated\\"" as="<self>" ' \
           f'asgroups="<lookup>" user-agent="audit-test/1.0" namespace="default" uri="{CM}" ' \
           f'response="<deferred>"' in lines[0]
    assert 'stage="ResponseComplete"' in lines[1] and 'as="bob"' in lines[1] and lines[1].endswith('response="200"')


def test_event_string_without_a_user() -> None:
    ev = {"auditID": "x", "stage": "ResponseStarted", "verb": "get", "requestURI": "/", "user": {},
          "requestReceivedTimestamp": "2026-12-02T02:30:00.120000Z", "responseStatus": {"code": 401}}
    assert event_string(ev) == ('2026-12-02T02:30:00.12Z AUDIT: id="x" stage="ResponseStarted" ip="<unknown>" '
                                'method="get" user="<none>" groups="<none>" as="<self>" asgroups="<lookup>" '
                                'user-agent="" namespace="<none>" uri="/" response="401"')


# ---------------------------------------------------------------------------- log rotation


def test_rotation_follows_lumberjack(tmp_path: Path) -> None:
    """Past maxsize the log becomes name-<UTC time>.ext; maxbackup and maxage prune the backups."""
    clock = [datetime.datetime(2026, 12, 1, 10, 0, 0, 123000, tzinfo=datetime.timezone.utc)]
    path = tmp_path / "logs" / "audit.log"
    f = RotatingFile(str(path), max_size_mb=1, max_backups=2, now=lambda: clock[0])
    f.max_size = 100  # bytes, for the test
    f.ensure()
    assert path.exists() and path.stat().st_mode & 0o777 == 0o600
    for i in range(4):
        f.write(b"x" * 60 + b"\n")
        clock[0] += datetime.timedelta(seconds=1)
    f.close()
    names = sorted(os.listdir(path.parent))
    # four writes of 61 bytes with room for one each: three rotations (at 01, 02, 03 s), the newest two kept
    assert names == ["audit-2026-12-01T10-00-02.123.log", "audit-2026-12-01T10-00-03.123.log", "audit.log"]
    assert path.read_bytes() == b"x" * 60 + b"\n"
    with pytest.raises(OSError, match="exceeds maximum file size"):
        RotatingFile(str(path), 1).write(b"y" * (1024 * 1024 + 1))
    # maxage: a backup older than the days allowed goes at the next rotation
    aged = RotatingFile(str(path), max_size_mb=1, max_age_days=1, now=lambda: clock[0] + datetime.timedelta(days=3))
    aged.max_size = 100
    aged.write(b"z" * 80)  # 61 + 80 > 100: rotates, then prunes what is older than a day
    aged.close()
    assert sorted(os.listdir(path.parent)) == ["audit-2026-12-04T10-00-04.123.log", "audit.log"]


def test_the_log_backend_writes_batches_from_its_task_and_stdout(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    backend = LogBackend(str(tmp_path / "a.log"))
    ev = {"kind": "Event", "auditID": "1"}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(backend.run)
            backend.process_nowait(ev)
            backend.process_nowait(dict(ev, auditID="2"))
            for _ in range(200):
                await trio.sleep(0.01)
                if (tmp_path / "a.log").read_bytes().count(b"\n") == 2:
                    break
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert [orjson.loads(line)["auditID"] for line in (tmp_path / "a.log").read_bytes().splitlines()] == ["1", "2"]
    out = LogBackend("-")
    out.process_nowait(ev)
    out.flush()
    assert orjson.loads(capsys.readouterr().out) == ev
    with pytest.raises(ValueError, match="not in list of known formats"):
        LogBackend(str(tmp_path / "b.log"), "xml")


def test_build_audit_needs_a_policy_and_a_backend(tmp_path: Path) -> None:
    pfile = tmp_path / "p.yaml"
    pfile.write_text(yaml.safe_dump(policy({"level": "Metadata"})))
    assert build_audit(Config(audit_policy_file=str(pfile))) is None
    assert build_audit(Config(audit_log_path=str(tmp_path / "a.log"))) is None
    built = build_audit(Config(audit_policy_file=str(pfile), audit_log_path=str(tmp_path / "a.log")))
    assert built is not None and built.policy.rules[0].level == "Metadata"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(policy({"level": "Lots"})))
    with pytest.raises(ValueError, match="--audit-policy-file: rules"):
        build_audit(Config(audit_policy_file=str(bad), audit_log_path=str(tmp_path / "a.log")))


async def test_json_lines_escape_as_gos_encoder(make_app: Any) -> None:
    """kube's log lines come from Go's encoding/json: & < > in strings are \\u0026 \\u003c \\u003e."""
    srv = await make_app(policy({"level": "Metadata"}))
    _, headers, _ = await srv.request("GET", CM + "?limit=5&labelSelector=a%3Db")
    srv.events()  # flushed
    lines = [line for line in srv.log.read_bytes().splitlines() if headers["audit-id"].encode() in line]
    assert len(lines) == 2 and all(b'?limit=5\\u0026labelSelector=a%3Db"' in line for line in lines)
    assert orjson.loads(lines[0])["requestURI"] == CM + "?limit=5&labelSelector=a%3Db"


async def test_protobuf_bodies_are_logged_as_json(make_app: Any) -> None:
    """client-go sends and asks for protobuf: the event holds the objects as JSON all the same."""
    from kapi.encoding import protobuf
    from kapi.object.schema import load_builtin

    srv = await make_app(policy({"level": "RequestResponse"}))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb"}, "data": {"k": "v"}}
    body = protobuf.encode_object(load_builtin(), cm)
    code, headers, _ = await srv.request("POST", CM, body, content_type="application/vnd.kubernetes.protobuf",
                                         headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert code == 201 and headers["content-type"].startswith("application/vnd.kubernetes.protobuf")
    complete = srv.of(headers["audit-id"])[-1]
    assert complete["requestObject"]["data"] == {"k": "v"} and complete["requestObject"]["kind"] == "ConfigMap"
    assert complete["responseObject"]["metadata"]["name"] == "pb" and complete["responseObject"]["metadata"]["uid"]


async def test_a_request_past_its_deadline_completes_with_the_504_sent(make_app: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    srv = await make_app(policy({"level": "Metadata"}), request_timeout_s=0.2)

    async def slow(ctx: Any) -> Any:
        await trio.sleep(30)

    monkeypatch.setattr(srv.app.handlers, "handle", slow)
    code, headers, _ = await srv.request("GET", CM)
    assert code == 504
    events = srv.of(headers["audit-id"])
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseComplete"]
    assert events[1]["responseStatus"]["code"] == 504
