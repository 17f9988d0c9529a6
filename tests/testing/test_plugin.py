"""The pytest plugin ``kapi`` (kapi.testing.plugin), run by pytester in inner pytest sessions: its
fixtures, ``--kapi-flag``, the ``kapi_fresh`` marker, and that it starts nothing unless asked."""

from __future__ import annotations

import json

import pytest

from kapi.testing import Server

from .conftest import gone

pytest_plugins = ["pytester"]

INNER = '''
import json, os, ssl, urllib.error, urllib.request
from pathlib import Path

import pytest

SEEN = Path(__file__).with_name("seen.jsonl")


def record(**what):
    with SEEN.open("a") as out:
        out.write(json.dumps(what) + "\\n")


def anonymous(url):
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url + "/readyz", context=ctx) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        with err:
            return err.code


def test_shared(kapi_server, kapi_namespace, kapi_kubeconfig):
    assert os.environ["KUBECONFIG"] == str(kapi_kubeconfig) == str(kapi_server.kubeconfig)
    assert kapi_server.request("GET", f"/api/v1/namespaces/{kapi_namespace}")[0] == 200
    assert kapi_namespace.startswith("t-test-shared-") and len(kapi_namespace) <= 63
    assert anonymous(kapi_server.url) == 401  # --kapi-flag=--anonymous-auth=false
    record(test="shared", url=kapi_server.url, pid=kapi_server.pid, namespace=kapi_namespace)


@pytest.fixture
def made_in(kapi_server):
    return kapi_server.url  # a fixture of the test's gets the test's server too


@pytest.mark.kapi_fresh("--anonymous-auth=true")
def test_fresh(kapi_server, kapi_namespace, kapi_kubeconfig, made_in):
    assert made_in == kapi_server.url
    assert os.environ["KUBECONFIG"] == str(kapi_kubeconfig) == str(kapi_server.kubeconfig)
    assert kapi_server.request("GET", f"/api/v1/namespaces/{kapi_namespace}")[0] == 200
    assert anonymous(kapi_server.url) == 200  # the marker's flag, after the session's
    record(test="fresh", url=kapi_server.url, pid=kapi_server.pid, namespace=kapi_namespace)


def test_after(kapi_server):
    assert "KUBECONFIG" not in os.environ  # restored
    seen = [json.loads(line) for line in SEEN.read_text().splitlines()]
    shared, fresh = seen
    assert kapi_server.url == shared["url"] != fresh["url"]  # the session's server again
    assert not kapi_server.running or kapi_server.pid == shared["pid"]
    status, ns = kapi_server.request("GET", f"/api/v1/namespaces/{shared['namespace']}")
    assert status == 404 or ns["metadata"].get("deletionTimestamp")  # deleted after its test
'''


@pytest.mark.e2e
def test_fixtures_flags_and_fresh(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-v", "-p", "no:cacheprovider", "--strict-markers",
                                "--kapi-flag=--anonymous-auth=false")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_inner.py::test_fresh?kapi_fresh? PASSED*"])  # the id the marker adds
    seen = [json.loads(line) for line in (pytester.path / "seen.jsonl").read_text().splitlines()]
    assert [s["test"] for s in seen] == ["shared", "fresh"]
    for s in seen:  # both servers stopped by the end of the session
        assert gone(s["pid"]), s


def test_nothing_starts_unless_asked(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded by its entry point into every run; a run that uses no kapi fixture starts no server
    (kapi's own suite is such a run), even with the marker on a test that uses none."""

    def refuse(self: Server) -> Server:
        raise AssertionError("a server was started")

    monkeypatch.setattr(Server, "start", refuse)
    pytester.makepyfile(test_plain='''
        import pytest

        def test_plain(request):
            assert request.config.pluginmanager.has_plugin("kapi")

        @pytest.mark.kapi_fresh
        def test_marked_without_fixtures(tmp_path):
            pass
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=2)

    result = pytester.runpytest("-p", "no:cacheprovider", "--fixtures")
    result.stdout.fnmatch_lines(["*kapi_server*session scope*", "*kapi_namespace*", "*kapi_kubeconfig*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.kapi_fresh(*flags)*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--help")
    result.stdout.fnmatch_lines(["*--kapi-flag=FLAG*"])
