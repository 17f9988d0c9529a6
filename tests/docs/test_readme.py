"""The README's tour runs as written: every ``sh`` and ``python`` block between its tour markers, in
order, in one shell, in a directory whose ``kapi-data`` is a running ``kapi serve``'s, with kubectl
1.33 as ``kubectl`` and this interpreter's ``kapi`` and ``python`` first on PATH. docs/getting-started.md
includes the same section, so the site's tour is this one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs._tools import ROOT
from tests.e2e.conftest import kubectl_binary, start_server, stop_server

pytestmark = pytest.mark.e2e


def tour_script(readme: str) -> str:
    """The tour's blocks as one bash script: sh blocks as they are, python blocks through ``python -``."""
    start, end = "<!-- --8<-- [start:tour] -->", "<!-- --8<-- [end:tour] -->"
    assert readme.count(start) == 1 and readme.count(end) == 1, "the README's tour markers"
    tour = readme[readme.index(start):readme.index(end)]
    blocks = re.findall(r"^```(sh|python)\n(.*?)^```$", tour, flags=re.S | re.M)
    assert [lang for lang, _ in blocks].count("python") >= 2 and len(blocks) >= 5, blocks
    parts = ["set -euo pipefail"]
    for n, (lang, body) in enumerate(blocks):
        parts.append(f"echo '--- block {n} ({lang})'")
        parts.append(body if lang == "sh" else f"python - <<'KAPI_TOUR_PY'\n{body}KAPI_TOUR_PY\n")
    return "\n".join(parts) + "\n"


def test_readme_tour_runs(tmp_path: Path) -> None:
    script = tour_script((ROOT / "README.md").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(kubectl_binary("1.33"))
    server = start_server(tmp_path / "kapi-data")
    try:
        env = {**os.environ, "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                                                      os.environ.get("PATH", "")])}
        env.pop("KUBECONFIG", None)
        proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
    finally:
        stop_server(server)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the README's tour failed:\n{out}\n--- server log\n{server.log.read_text()}"
    # What the tour's comments say the reader sees.
    assert "{'mode': 'fast'}" in proc.stdout, out
    assert "['settings']" in proc.stdout, out
    assert "add first {'color': 'blue', 'replicas': 1}" in proc.stdout, out
    assert "['demo/first']" in proc.stdout, out
    assert re.search(r"first\s+blue\s+1", proc.stdout), out
    assert "alice" in proc.stdout and "developers" in proc.stdout, out
    assert re.search(r"^settings\s", proc.stdout.split("--- block 4")[-1], flags=re.M), out
