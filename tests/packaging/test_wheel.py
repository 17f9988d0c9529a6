"""Wheels and sdists (issue 31): what ``python -m build`` makes, installed where no C compiler exists.

One build per run (module scope): ``python -m build`` makes the sdist, then the wheel from that
sdist (so a file the sdist lacks fails the wheel), from a copy of the checkout (building writes
egg-info and Cython's C next to the sources; the working tree is left alone). The dependencies of
the fresh venvs come from a wheelhouse filled once by ``pip download --only-binary :all:`` (pip's
cache serves it after the first run); the installs then use ``--no-index`` on it, and
``--only-binary :all:`` so that no dependency is compiled either. A fresh venv never sees this
environment's packages (no ``--system-site-packages``): a dependency missing from the metadata fails.

"No C compiler" is a PATH holding only the fresh venv's ``bin`` (python, pip, kapi), with CC and
friends unset, and the test first asserts that neither the compiler this interpreter's sysconfig
names nor any usual C compiler is reachable from it.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest
import yaml

from kapi import __version__
from kapi.server.serve import KUBE_VERSION
from tests._needs import require_module
from tests.conftest import require_e2e

pytestmark = pytest.mark.e2e
require_module("build")  # the test extra's: PyPA's build frontend

ROOT = Path(__file__).resolve().parents[2]
TWINS = sorted(p.name.removesuffix("_c.pyx") for p in (ROOT / "kapi" / "_fast").glob("*_c.pyx"))
SCHEMA_DATA = sorted(p.name for p in (ROOT / "kapi" / "object" / "schema").glob("*.json.gz"))
# The variables that choose a compiler (distutils' customize_compiler reads them) or kapi's twins, or that
# would point an installed copy back at this environment.
SCRUBBED = ("CC", "CXX", "CPP", "LDSHARED", "LDCXXSHARED", "CFLAGS", "LDFLAGS", "CPPFLAGS", "VIRTUAL_ENV",
            "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "KAPI_NO_EXTENSIONS", "KAPI_REQUIRE_EXTENSIONS")
# Executable names of C compilers: cc, gcc, clang, x86_64-linux-gnu-gcc-13, c99, tcc, icx, ...
COMPILER_NAME = re.compile(r"(^|-)(cc|gcc|clang|c89|c99|tcc|icc|icx|g\+\+|c\+\+|clang\+\+)(-[0-9.]+)?(\.exe)?$")
WARNING = "the compiled twins are not loaded"
WAIT_S = 60  # deadlines against hangs, not timing assertions


@dataclass
class Dists:
    sdist: Path
    wheel: Path
    wheelhouse: Path  # the wheels of kapi's dependencies and of its [build-system] requires


def _run(cmd: list[str | Path], *, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, timeout=timeout, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check and out.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited with {out.returncode}:\n{out.stdout[-8000:]}", pytrace=False)
    return out


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel of the checkout as it is (tracked and untracked files git does not ignore)."""
    work = tmp_path_factory.mktemp("build")
    src = work / "src"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, stdout=subprocess.PIPE).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # not a file deleted from the working tree
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = work / "dist"
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["KAPI_REQUIRE_EXTENSIONS"] = "1"  # the wheel carries the compiled twins: no compiler here fails the build
    _run([sys.executable, "-m", "build", "--outdir", out, src], env=env, cwd=work)
    (sdist,) = out.glob("kapi-*.tar.gz")
    (wheel,) = out.glob("kapi-*.whl")
    build_requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    wheelhouse = work / "wheelhouse"
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--dest", wheelhouse,
          wheel, *build_requires], cwd=work)
    (wheelhouse / wheel.name).unlink(missing_ok=True)  # only the dependencies: kapi itself is installed from dist/
    return Dists(sdist, wheel, wheelhouse)


def no_compiler_env(venv: Path) -> dict[str, str]:
    """The environment of a machine without a C compiler: PATH is the venv's bin, nothing else.

    Asserts it: the compiler (and linker) this interpreter's sysconfig names, which build_ext would
    run, and every executable named like a C compiler are out of reach of that PATH.
    """
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["PATH"] = str(venv / "bin")
    for var in ("CC", "LDSHARED"):
        configured = (sysconfig.get_config_var(var) or "").split()
        assert not configured or shutil.which(configured[0], path=env["PATH"]) is None, (var, configured)
    reachable = [p for d in env["PATH"].split(os.pathsep) if Path(d).is_dir() for p in Path(d).iterdir()
                 if COMPILER_NAME.search(p.name)]
    assert not reachable, f"a C compiler is on the test's PATH: {reachable}"
    return env


def fresh_venv(path: Path) -> Path:
    """A new venv (with pip, without this environment's packages)."""
    _run([sys.executable, "-m", "venv", path], env={k: v for k, v in os.environ.items() if k not in SCRUBBED})
    assert not (path / "bin" / "kapi").exists()
    return path


def pip_install(venv: Path, dists: Dists, target: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``pip install`` of ``target`` into ``venv`` with no C compiler, offline, dependencies from wheels only."""
    return _run([venv / "bin" / "python", "-m", "pip", "install", "--no-index", "--find-links", dists.wheelhouse,
                 "--no-cache-dir", "--only-binary", ":all:", *extra, target],
                env=no_compiler_env(venv), cwd=venv.parent)


def installed(venv: Path, code: str) -> str:
    """What ``code`` prints in the installed copy (run outside the checkout, so that its kapi is not imported)."""
    return _run([venv / "bin" / "python", "-c", code], env=no_compiler_env(venv), cwd=venv.parent).stdout


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    log: Path
    client: httpx.Client


ServeInstalled = Callable[[Path, Path], Running]


@pytest.fixture
def serve_installed() -> Iterator[ServeInstalled]:
    """Starts ``kapi serve`` from a venv (``--secure-port 0``), waits for its kubeconfig, stops it after the test."""
    started: list[Running] = []

    def start(venv: Path, data_dir: Path) -> Running:
        require_e2e("a kapi serve process")
        data_dir.mkdir(parents=True)
        kubeconfig = data_dir / "admin.kubeconfig"
        log = data_dir.parent / f"serve-{uuid.uuid4().hex[:6]}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([venv / "bin" / "kapi", "serve", "--data-dir", data_dir, "--secure-port", "0"],
                                    stdout=out, stderr=subprocess.STDOUT, env=no_compiler_env(venv),
                                    cwd=venv.parent)
        deadline = time.monotonic() + WAIT_S
        while not kubeconfig.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"kapi serve did not become ready (exit {proc.wait()}):\n{log.read_text()}")
            time.sleep(0.05)
        config = yaml.safe_load(kubeconfig.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        client = httpx.Client(base_url=cluster["server"], verify=ctx, timeout=30,
                              headers={"Authorization": f"Bearer {user['token']}"})
        running = Running(proc, log, client)
        started.append(running)
        return running

    yield start
    for running in started:
        running.client.close()
        if running.proc.poll() is None:
            running.proc.send_signal(signal.SIGTERM)
            try:
                running.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                running.proc.kill()
                running.proc.wait()


def smoke(client: httpx.Client) -> None:
    """GET /version; create a ConfigMap and read it back, with the admin kubeconfig's credentials."""
    version = client.get("/version")
    assert version.status_code == 200, version.text
    assert version.json()["gitVersion"].startswith("v1.33.")
    name = f"smoke-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"wheel": "yes"}}
    created = client.post("/api/v1/namespaces/default/configmaps", json=body)
    assert created.status_code == 201, created.text
    got = client.get(f"/api/v1/namespaces/default/configmaps/{name}")
    assert got.status_code == 200, got.text
    assert got.json()["data"] == {"wheel": "yes"}
    assert got.json()["metadata"]["uid"] == created.json()["metadata"]["uid"]


def test_sdist_carries_both_twins_sources_and_data(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for twin in TWINS:
        assert f"kapi/_fast/{twin}_c.pyx" in names
        assert f"kapi/_fast/{twin}_py.py" in names
    for data in SCHEMA_DATA:
        assert f"kapi/object/schema/{data}" in names
    assert {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "kapi/__main__.py"} <= names
    # Cython's C is generated at build time by the Cython [build-system] requires (MANIFEST.in), and
    # nothing built in the checkout is shipped.
    assert not [n for n in names if n.endswith((".c", ".so", ".pyd", ".pyc"))]


def test_wheel_carries_the_compiled_twins_and_the_data(dists: Dists) -> None:
    tag = dists.wheel.name.removesuffix(".whl").split("-")[-3:]
    assert tag[0] == f"cp{sys.version_info.major}{sys.version_info.minor}" and tag[2] != "any", tag
    with zipfile.ZipFile(dists.wheel) as whl:
        names = set(whl.namelist())
        entry_points = next(whl.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    for twin in TWINS:
        assert [n for n in names if re.fullmatch(rf"kapi/_fast/{twin}_c\.[^/]+\.so", n)], twin
        assert f"kapi/_fast/{twin}_py.py" in names
    for data in SCHEMA_DATA:
        assert f"kapi/object/schema/{data}" in names
    assert "kapi = kapi.__main__:main" in entry_points
    assert not [n for n in names if n.endswith((".pyx", ".c"))]


def test_wheel_installed_without_a_compiler_serves(dists: Dists, tmp_path: Path,
                                                   serve_installed: ServeInstalled) -> None:
    venv = fresh_venv(tmp_path / "venv")
    pip_install(venv, dists, dists.wheel)
    version = _run([venv / "bin" / "kapi", "version"], env=no_compiler_env(venv), cwd=tmp_path).stdout
    assert version.splitlines() == [f"kapi {__version__}", f"Kubernetes {KUBE_VERSION['gitVersion']}",
                                    "compiled twins: loaded"], version
    where = installed(venv, "import kapi, kapi._fast as f; print(kapi.__file__); print(f.USING_EXTENSIONS); "
                            "print(f.EventRing.__module__, f.MatchTable.__module__, f.protowire.__file__)")
    kapi_file, using, modules = where.splitlines()
    assert Path(kapi_file).is_relative_to(venv), kapi_file  # the installed copy, not the checkout
    assert using == "True"
    ring, match, protowire = modules.split()
    assert (ring, match) == ("kapi._fast.ring_c", "kapi._fast.match_c") and protowire.endswith(".so"), modules
    running = serve_installed(venv, tmp_path / "data")
    smoke(running.client)
    assert WARNING not in running.log.read_text()


def test_sdist_installed_without_a_compiler_falls_back_to_the_pure_twins(
        dists: Dists, tmp_path: Path, serve_installed: ServeInstalled) -> None:
    venv = fresh_venv(tmp_path / "venv")
    out = pip_install(venv, dists, dists.sdist, "--verbose").stdout  # -v: the build's own output
    assert "WARNING: kapi: no C compiler" in out, out[-8000:]
    assert not list(venv.glob("lib/python*/site-packages/kapi/_fast/*.so"))
    version = _run([venv / "bin" / "kapi", "version"], env=no_compiler_env(venv), cwd=tmp_path).stdout
    assert version.splitlines()[2].startswith("compiled twins: not loaded: not built"), version
    assert installed(venv, "import kapi._fast as f; print(f.USING_EXTENSIONS)").strip() == "False"
    running = serve_installed(venv, tmp_path / "data")
    smoke(running.client)
    log = running.log.read_text()
    assert sum(WARNING in line for line in log.splitlines()) == 1, log
    assert [line for line in log.splitlines() if WARNING in line][0].split()[2] == "WARNING", log


def test_sdist_build_fails_on_a_failing_compiler_and_on_a_required_missing_one(dists: Dists, tmp_path: Path) -> None:
    """The fallback is for an absent compiler only: one that exists and fails fails the build, and
    KAPI_REQUIRE_EXTENSIONS=1 makes an absent one an error."""
    venv = fresh_venv(tmp_path / "venv")
    wheel = [venv / "bin" / "python", "-m", "pip", "wheel", "--no-deps", "--no-index", "--find-links",
             dists.wheelhouse, "--no-cache-dir", "--wheel-dir", tmp_path / "out", dists.sdist]
    env = no_compiler_env(venv) | {"KAPI_REQUIRE_EXTENSIONS": "1"}
    required = _run(wheel, env=env, cwd=tmp_path, check=False)
    assert required.returncode != 0
    assert "no C compiler" in required.stdout and "KAPI_REQUIRE_EXTENSIONS=1 requires" in required.stdout, \
        required.stdout[-8000:]
    fake = tmp_path / "fakecc"
    fake.mkdir()
    (fake / "gcc").write_text("#!/bin/sh\necho 'fakecc: this compiler fails' >&2\nexit 1\n")
    (fake / "gcc").chmod(0o755)
    env = no_compiler_env(venv)
    env["PATH"] += os.pathsep + str(fake)
    env["CC"] = "gcc"  # whatever this interpreter's sysconfig names: the failing one (LDSHARED follows CC)
    failing = _run(wheel, env=env, cwd=tmp_path, check=False)
    assert failing.returncode != 0, failing.stdout[-8000:]
    assert "fakecc: this compiler fails" in failing.stdout, failing.stdout[-8000:]
    assert not list((tmp_path / "out").glob("*.whl"))
