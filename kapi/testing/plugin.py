"""The pytest plugin ``kapi`` (entry point ``pytest11``): real kapi servers as fixtures.

- ``kapi_server``: a ``kapi.testing.Server`` for the session (one per xdist worker), started the
  first time a test asks for it; ``--kapi-flag=FLAG`` (repeatable) and the ``kapi_flags`` ini
  option add ``kapi serve`` flags.
- ``kapi_namespace``: the name of a fresh namespace, deleted after the test.
- ``kapi_kubeconfig``: the admin kubeconfig's path, with ``KUBECONFIG`` set to it while the test runs.
- ``@pytest.mark.kapi_fresh(*flags)``: the test gets a server of its own (the session's flags and
  these), started before it and stopped after it; the fixtures above refer to that one.

Nothing starts unless a test uses a fixture: loaded into every pytest run where kapi is installed,
the plugin costs a hook call per test.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kapi.testing.server import Server, ServerError

FRESH = "kapi_fresh"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kapi", "kapi API server for tests (kapi.testing)")
    group.addoption("--kapi-flag", action="append", default=[], dest="kapi_flags", metavar="FLAG",
                    help="a `kapi serve` flag for the kapi_server fixture's server, with `=`: "
                         "--kapi-flag=--audit-log-path=/tmp/audit.log (repeatable)")
    parser.addini("kapi_flags", type="args", default=[],
                  help="`kapi serve` flags for the kapi_server fixture's server (before --kapi-flag's)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{FRESH}(*flags): give the test a kapi server of its own, started with the session's "
                   "flags and these; kapi_server, kapi_namespace and kapi_kubeconfig refer to it")


def _flags(config: pytest.Config) -> list[str]:
    return [*config.getini("kapi_flags"), *config.getoption("kapi_flags")]


@pytest.fixture(scope="session")
def kapi_server(pytestconfig: pytest.Config) -> Iterator[Server]:
    """A kapi server for the session (one per xdist worker); in a ``kapi_fresh`` test, the test's own."""
    with Server(*_flags(pytestconfig)) as server:
        yield server


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A ``kapi_fresh`` test that uses the server takes its own, unstarted, in place of the session's
    (parametrized directly: every fixture of the test that asks for ``kapi_server`` gets that one);
    ``_kapi_fresh`` starts it."""
    marker = metafunc.definition.get_closest_marker(FRESH)
    if marker is None or "kapi_server" not in metafunc.fixturenames:
        return
    server = Server(*_flags(metafunc.config), *(str(a) for a in marker.args))
    metafunc.parametrize("kapi_server", [server], ids=[FRESH])


@pytest.fixture(autouse=True)
def _kapi_fresh(request: pytest.FixtureRequest) -> Iterator[None]:
    """Start a ``kapi_fresh`` test's own server before it, stop it after it; nothing for other tests."""
    if request.node.get_closest_marker(FRESH) is None or "kapi_server" not in request.fixturenames:
        yield
        return
    server = request.getfixturevalue("kapi_server")
    assert isinstance(server, Server)
    with server:
        yield


def _namespace_name(test: str) -> str:
    """``t-<the test's name as a DNS label>-<random>``, at most 63 characters."""
    stem = re.sub(r"[^a-z0-9]+", "-", test.lower()).strip("-")[:40].rstrip("-")
    return f"t-{stem}-{uuid.uuid4().hex[:8]}" if stem else f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kapi_namespace(kapi_server: Server, request: pytest.FixtureRequest) -> Iterator[str]:
    """The name of a namespace made for this test; deleted after it (not waited for)."""
    name = _namespace_name(request.node.name)
    status, body = kapi_server.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    if status != 201:
        raise ServerError(f"creating namespace {name} answered {status}: {body}")
    yield name
    status, body = kapi_server.request("DELETE", f"/api/v1/namespaces/{name}")
    if status not in (200, 202, 404):
        raise ServerError(f"deleting namespace {name} answered {status}: {body}")


@pytest.fixture
def kapi_kubeconfig(kapi_server: Server, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The admin kubeconfig's path; ``KUBECONFIG`` names it while the test runs (restored after).

    The ``kubernetes`` package reads ``KUBECONFIG`` once, when it is imported: if it is imported
    already, its default kubeconfig location is the same path while the test runs.
    """
    path = kapi_server.kubeconfig
    monkeypatch.setenv("KUBECONFIG", str(path))
    for name in ("kubernetes.config.kube_config", "kubernetes.config"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "KUBE_CONFIG_DEFAULT_LOCATION"):
            monkeypatch.setattr(module, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    return path
