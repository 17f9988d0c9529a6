"""Protobuf against a real ``kapi serve``: kubectl 1.33's protobuf bodies, responses, lists, watch frames."""

from __future__ import annotations

import json
import socket
import ssl
import time
from typing import Any

import pytest

from kapi.encoding import protobuf
from kapi.object.schema import load_builtin

from .conftest import Kubectl, Server

pytestmark = pytest.mark.e2e

PB = "application/vnd.kubernetes.protobuf"


@pytest.fixture(scope="module")
def schema() -> Any:
    return load_builtin()


def _get(kubectl: Kubectl, *args: str, namespace: str) -> dict[str, Any]:
    return json.loads(kubectl.run("get", *args, "-o", "json", namespace=namespace).stdout)  # type: ignore[no-any-return]


def test_kubectl_133_create_subcommands_send_protobuf(kubectl133: Kubectl, namespace: str) -> None:
    k, ns = kubectl133, namespace
    k.run("create", "configmap", "c", "--from-literal=a=1", namespace=ns)
    k.run("create", "secret", "generic", "s", "--from-literal=p=q", namespace=ns)
    k.run("create", "deployment", "d", "--image=nginx:1.27", "--replicas=2", namespace=ns)
    k.run("create", "service", "clusterip", "svc", "--tcp=80:8080", namespace=ns)
    k.run("create", "serviceaccount", "sa1", namespace=ns)
    k.run("create", "role", "r", "--verb=get", "--resource=pods", namespace=ns)
    k.run("create", "rolebinding", "rb", "--role=r", "--user=u", namespace=ns)
    k.run("create", "job", "j", "--image=busybox", namespace=ns)
    k.run("create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", namespace=ns)
    assert _get(k, "cm", "c", namespace=ns)["data"] == {"a": "1"}
    assert _get(k, "secret", "s", namespace=ns)["data"] == {"p": "cQ=="}
    dep = _get(k, "deploy", "d", namespace=ns)
    assert dep["spec"]["replicas"] == 2
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:1.27"
    # Go's always-written zeros of value fields are not shown, as kube-apiserver's JSON does not.
    assert "stdin" not in container and "tty" not in container
    assert "hostNetwork" not in dep["spec"]["template"]["spec"]
    svc = _get(k, "svc", "svc", namespace=ns)
    assert svc["spec"]["ports"][0]["port"] == 80 and svc["spec"]["ports"][0]["targetPort"] == 8080
    assert "nodePort" not in svc["spec"]["ports"][0]
    assert _get(k, "role", "r", namespace=ns)["rules"][0]["verbs"] == ["get"]
    assert _get(k, "rolebinding", "rb", namespace=ns)["subjects"][0]["name"] == "u"
    assert _get(k, "job", "j", namespace=ns)["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    assert _get(k, "cronjob", "cj", namespace=ns)["spec"]["schedule"] == "*/5 * * * *"
    assert _get(k, "sa", "sa1", namespace=ns)["metadata"]["name"] == "sa1"


def test_kubectl_133_create_namespace_and_auth(kubectl133: Kubectl) -> None:
    name = f"pb-{time.monotonic_ns() % 10**9}"
    out = kubectl133.run("create", "namespace", name)
    assert f"namespace/{name} created" in out.stdout
    assert kubectl133.run("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    assert kubectl133.run("auth", "can-i", "delete", "nodes", "--all-namespaces").stdout.strip() == "yes"
    who = kubectl133.run("auth", "whoami", "-o", "json").stdout
    assert json.loads(who)["status"]["userInfo"]["username"] == "kapi-admin"
    kubectl133.run("delete", "namespace", name, "--wait=false")


def test_protobuf_get_and_list_match_json(server: Server, namespace: str, schema: Any) -> None:
    for i in range(3):
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"},
                           "data": {"i": str(i)}}).encode()
        status, _, _ = server.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body,
                                      {"Content-Type": "application/json"})
        assert status == 201
    status, headers, data = server.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/c1",
                                           headers={"Accept": PB})
    assert status == 200 and headers.get("Content-Type", headers.get("content-type", "")).startswith(PB)
    obj = protobuf.decode_object(schema, data)
    _, _, as_json = server.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/c1")
    assert obj == json.loads(as_json)
    for rv in ("0", ""):
        status, headers, data = server.request(
            "GET", f"/api/v1/namespaces/{namespace}/configmaps?resourceVersion={rv}", headers={"Accept": PB})
        assert status == 200
        lst = protobuf.decode_object(schema, data)
        assert lst["kind"] == "ConfigMapList"
        assert sorted(i["metadata"]["name"] for i in lst["items"] if i["metadata"]["name"] != "kube-root-ca.crt") \
            == ["c0", "c1", "c2"]
    # Errors come back as a protobuf Status to a client that prefers protobuf.
    status, headers, data = server.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/nope",
                                           headers={"Accept": PB + ", application/json"})
    assert status == 404 and headers.get("Content-Type", headers.get("content-type", "")).startswith(PB)
    err = protobuf.decode_object(schema, data)
    assert err["kind"] == "Status" and err["reason"] == "NotFound" and err["code"] == 404


def test_protobuf_watch_stream_frame_by_frame(server: Server, namespace: str, schema: Any) -> None:
    """A watch in protobuf: 4-byte big-endian length, then a WatchEvent around an enveloped object."""
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    raw = socket.create_connection((host, int(port)), timeout=20)
    sock = ctx.wrap_socket(raw, server_hostname=host)
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion=0&timeoutSeconds=10"
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {server.token}\r\n"
                 f"Accept: {PB}\r\n\r\n".encode())

    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0]
    assert f"content-type: {PB};stream=watch".encode() in head.lower()
    # The headers come once the watch is open: the writes after them are its events, however slow the
    # machine (a write on a timer could land before the watch began, and be missed by it).
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w1"}}).encode()
    assert server.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body,
                          {"Content-Type": "application/json"})[0] == 201
    assert server.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/w1")[0] == 200
    body = _dechunk_until(sock, rest, lambda b: _frames_seen(b, schema) >= 3)
    events = [(t, protobuf.decode_object(schema, o)) for t, o in protobuf.iter_watch_frames(body)]
    seen = [(t, o["metadata"]["name"]) for t, o in events]
    assert ("ADDED", "w1") in seen and ("DELETED", "w1") in seen
    sock.close()


def _frames_seen(body: bytes, schema: Any) -> int:
    count, pos = 0, 0
    while pos + 4 <= len(body):
        size = int.from_bytes(body[pos:pos + 4], "big")
        if pos + 4 + size > len(body):
            break
        pos += 4 + size
        count += 1
    return count


def _dechunk_until(sock: ssl.SSLSocket, pending: bytes, done: Any) -> bytes:
    """Read a chunked body until ``done(body)``; returns the de-chunked bytes."""
    body = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        while b"\r\n" in pending:
            size_line, _, rest = pending.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if len(rest) < size + 2:
                break
            body += rest[:size]
            pending = rest[size + 2:]
            if size == 0 or done(body):
                return body
        pending += sock.recv(65536)
    raise AssertionError("the watch stream did not bring the expected frames in time")
