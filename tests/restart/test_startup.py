"""Issue 10: a server that cannot start says why in one line; files holding data or keys are private.

Each case runs ``python -m kapi serve`` as a user would and reads what it printed.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest

from tests._needs import require

from ..e2e.conftest import start_server, stop_server
from .conftest import configmap, cm_key, stored, write_objects

pytestmark = pytest.mark.e2e


def serve(*args: str, timeout_s: float = 60, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *launcher, "-m", "kapi", "serve", *args], capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL)


# Root reads any directory through two capabilities, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH. This
# launcher drops both from the bounding set (so that exec cannot give them back) and execs Python with
# the rest of its arguments: root then obeys a directory's mode as its owner would, uid and files
# unchanged (a user such as nobody could not reach the interpreter or the checkout everywhere).
_CANNOT_DROP = 97
_WITHOUT_DAC_OVERRIDE = (
    "-c",
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH\n"
    "    if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP\n"
    "        print(f'cannot drop capability {cap}: {os.strerror(ctypes.get_errno())}', file=sys.stderr)\n"
    f"        sys.exit({_CANNOT_DROP})\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n",
)


def assert_one_line_failure(proc: subprocess.CompletedProcess[str], *wanted: str) -> str:
    """Non-zero exit, one line on stderr that holds every ``wanted`` text, no traceback."""
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode != 0, out
    assert "Traceback" not in out, out
    lines = out.splitlines()
    assert len(lines) == 1, out
    for text in wanted:
        assert text in lines[0], out
    return lines[0]


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        proc = serve("--data-dir", str(tmp_path / "d"), "--secure-port", str(port))
    assert_one_line_failure(proc, f"127.0.0.1:{port}", "in use")


def test_data_dir_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "d"
    path.write_text("not a directory")
    assert_one_line_failure(serve("--data-dir", str(path), "--secure-port", "0"), str(path), "not a directory")


def test_unreadable_data_dir(tmp_path: Path) -> None:
    path = tmp_path / "d"
    path.mkdir(mode=0o000)
    launcher = _WITHOUT_DAC_OVERRIDE if os.geteuid() == 0 else ()
    try:
        proc = serve("--data-dir", str(path), "--secure-port", "0", launcher=launcher)
    finally:
        path.chmod(0o700)
    require(proc.returncode != _CANNOT_DROP or not launcher,
            f"running as root, and the capabilities that let root read any directory cannot be dropped "
            f"({proc.stderr.strip()})")
    assert_one_line_failure(proc, str(path))


def test_data_dir_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    path = tmp_path / "f" / "d"
    assert_one_line_failure(serve("--data-dir", str(path), "--secure-port", "0"), str(path))


def test_corrupt_database_file(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "kapi.db").write_bytes(b"this is not an sqlite database at all, " * 100)
    assert_one_line_failure(serve("--data-dir", str(data), "--secure-port", "0"), "kapi.db", "not a database")


def test_corrupt_certificates(tmp_path: Path) -> None:
    pki = tmp_path / "d" / "pki"
    pki.mkdir(parents=True)
    (pki / "ca.crt").write_text("junk")
    (pki / "ca.key").write_text("junk")
    assert_one_line_failure(serve("--data-dir", str(tmp_path / "d"), "--secure-port", "0"), "pki")


@pytest.mark.parametrize("flags,wanted", [
    (["--secure-port", "x"], "--secure-port"),
    (["--secure-port", "70000"], "--secure-port"),
    (["--default-watch-cache-size", "-1"], "--default-watch-cache-size"),
    (["--shutdown-timeout", "5q"], "--shutdown-timeout"),
    (["--storage-backend", "etcd9"], "--storage-backend"),
    (["--authorization-mode", "Bogus"], "Bogus"),
])
def test_bad_flag_values(tmp_path: Path, flags: list[str], wanted: str) -> None:
    assert_one_line_failure(serve("--data-dir", str(tmp_path / "d"), *flags), wanted)


def test_corrupt_objects_do_not_stop_the_server(tmp_path: Path) -> None:
    """Issue 10 defect 2: objects that killed the watch cache and the collector at every start."""
    data = tmp_path / "d"
    data.mkdir()
    bad = {
        "labels": configmap("labels", labels=["a"]),
        "owners-int": configmap("owners-int", ownerReferences=1),
        "owners-true": configmap("owners-true", ownerReferences=True),
        "finalizers": configmap("finalizers", finalizers=1),
    }
    write_objects(data / "kapi.db", [stored(configmap("good")), *(stored(o) for o in bad.values()),
                                     (cm_key("blob"), b"\xc1 not msgpack"),
                                     (cm_key("a-list"), msgpack.packb([1, 2])),
                                     # Objects the start-up itself reads and writes, corrupt too.
                                     ("/registry/namespaces/default", msgpack.packb({"metadata": {
                                         "name": "default", "labels": ["x"]}})),
                                     ("/registry/services/specs/default/kubernetes", b"\xc1"),
                                     ("/registry/services/endpoints/default/kubernetes", msgpack.packb(7))])
    server = start_server(data)
    try:
        assert server.request("GET", "/readyz")[0] == 200
        for path in ("/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps?limit=2",
                     "/api/v1/configmaps?resourceVersion=0"):
            status, _, body = server.request("GET", path)
            assert status == 200, body
            assert b'"good"' in body and b'"labels"' not in body and b'"blob"' not in body
        status, _, body = server.request("GET", "/api/v1/namespaces/default/configmaps/labels")
        assert status == 500 and b'"kind":"Status"' in body and b"corrupt object" in body
        log = server.log.read_text()
        for name in (*bad, "blob", "a-list"):
            assert cm_key(name) in log
        # Issue 10 defect 6: a watch of events (served from storage) with a bad selector is a 400.
        status, _, body = server.request("GET", "/api/v1/namespaces/default/events?watch=1&labelSelector=a+in+(")
        assert status == 400, body
    finally:
        assert stop_server(server) == 0
    server = start_server(data)  # and again: the restart is not bricked either
    try:
        assert server.request("GET", "/readyz")[0] == 200
    finally:
        stop_server(server)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_files_and_directories(tmp_path: Path) -> None:
    """Issue 10 defect 10: kapi.db was 0644, the data dir and pki/ 0755."""
    data = tmp_path / "new"
    old_umask = os.umask(0o022)
    try:
        # kapi makes the directory itself here (start_server would make it first).
        proc = subprocess.Popen([sys.executable, "-m", "kapi", "serve", "--data-dir", str(data), "--secure-port", "0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not (data / "admin.kubeconfig").exists():
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            assert mode(data) == 0o700
            assert mode(data / "pki") == 0o700
            for name in ("kapi.db", "kapi.db-wal", "kapi.db-shm", "admin.kubeconfig"):
                if (data / name).exists() or name == "kapi.db":
                    assert mode(data / name) == 0o600, name
            for path in (data / "pki").iterdir():
                if path.suffix in (".key", ".token"):
                    assert mode(path) == 0o600, path
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0
        # A data dir from an earlier (looser) run is tightened at start.
        os.chmod(data, 0o755)
        os.chmod(data / "pki", 0o755)
        for path in [data / "kapi.db", data / "admin.kubeconfig", *(data / "pki").glob("*.key"),
                     data / "pki" / "admin.token"]:
            os.chmod(path, 0o644)
        server = start_server(data)
        try:
            assert mode(data) == 0o700 and mode(data / "pki") == 0o700
            assert mode(data / "kapi.db") == 0o600 and mode(data / "admin.kubeconfig") == 0o600
            assert mode(data / "kapi.db-wal") == 0o600  # open while serving
            for path in (data / "pki").iterdir():
                assert mode(path) == (0o600 if path.suffix in (".key", ".token") else 0o644), path
        finally:
            stop_server(server)
    finally:
        os.umask(old_umask)


def test_an_existing_foreign_directory_keeps_its_mode(tmp_path: Path) -> None:
    """A directory that holds no kapi state is not kapi's to change (it may be shared)."""
    data = tmp_path / "shared"
    data.mkdir()
    os.chmod(data, 0o755)
    server = start_server(data, "--storage-backend", "memory")
    try:
        assert mode(data) == 0o755
        assert mode(data / "pki") == 0o700
    finally:
        stop_server(server)
