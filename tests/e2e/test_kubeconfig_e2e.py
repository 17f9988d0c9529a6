"""``kapi kubeconfig`` against a real server with kubectl 1.33 and 1.27 (issue 12): the minted user is who
the server says it is."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Kubectl, Server, kubectl_binary

pytestmark = pytest.mark.e2e


def mint(server: Server, out: Path, user: str, *groups: str) -> Path:
    """``kapi kubeconfig`` for ``user`` from the server's data directory (its URL read from admin.kubeconfig)."""
    cmd = [sys.executable, "-m", "kapi", "kubeconfig", "--user", user, "--data-dir", str(server.data_dir),
           "--out", str(out)]
    for g in groups:
        cmd += ["--group", g]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return out


def as_user(version: str, server: Server, kubeconfig: Path) -> Kubectl:
    """kubectl ``version`` with ``kubeconfig`` instead of the admin's."""
    binary = kubectl_binary(version)
    return Kubectl(binary, dataclasses.replace(server, kubeconfig=kubeconfig), version)


def test_whoami_is_the_minted_user_and_groups(server: Server, tmp_path: Path) -> None:
    kc = as_user("1.33", server, mint(server, tmp_path / "bob.kubeconfig", "bob", "dev", "ops"))
    review = json.loads(kc.run("auth", "whoami", "-o", "json").stdout)
    info = review["status"]["userInfo"]
    assert info["username"] == "bob"
    assert info["groups"] == ["dev", "ops", "system:authenticated"]
