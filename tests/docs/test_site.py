"""The documentation site builds with ``mkdocs build --strict``: a broken link or anchor, a page
missing from the nav, a snippet that is not there or a docstring mkdocstrings cannot read fails it.

Marked ``e2e`` so that it runs once, in the first pass of the test command (the second pass leaves
out ``e2e``); it starts no server, but builds the whole site (a few seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs._tools import ROOT

pytestmark = pytest.mark.e2e


def test_site_builds_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "site" / "reference" / "client" / "index.html").is_file()
    client = (tmp_path / "site" / "reference" / "client" / "index.html").read_text()
    assert 'id="kapi.client.Client"' in client and 'id="kapi.client.SharedInformerFactory"' in client
