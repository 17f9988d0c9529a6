"""The example controller in examples/ runs as documented against a real kapi serve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from kapi.client import CONFIGMAPS, NAMESPACES, ApiError, Client, load_kubeconfig
from tests.e2e.conftest import start_server, stop_server

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "replicate_configmaps.py"


async def eventually(check: Any, timeout_s: float = 30.0) -> None:
    """Poll ``check`` (async, returns a message or None) until it passes; fail with its last message."""
    message = None
    with trio.move_on_after(timeout_s):
        while (message := await check()) is not None:
            await trio.sleep(0.1)
        return
    pytest.fail(f"never happened: {message}")


async def test_replicate_configmaps_example(tmp_path: Path) -> None:
    srv = await trio.to_thread.run_sync(start_server, tmp_path / "kapi")
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--kubeconfig", str(srv.kubeconfig),
                             "--source", "default"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        async with Client(load_kubeconfig(srv.kubeconfig)) as client:
            for ns in ("team-a", "team-b"):
                await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "1"},
                                             "metadata": {"name": "shared", "namespace": "default",
                                                          "labels": {"kapi.example/replicate": "true"}}})
            await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "x"},
                                             "metadata": {"name": "private", "namespace": "default"}})

            async def copies(name: str) -> dict[str, Any]:
                found = {}
                for ns in ("team-a", "team-b", "kube-system"):
                    try:
                        found[ns] = (await client.get(CONFIGMAPS, name, ns)).get("data")
                    except ApiError as exc:
                        assert exc.code == 404
                return found

            async def copied(data: dict[str, str]) -> str | None:
                got = await copies("shared")
                want = {"team-a": data, "team-b": data, "kube-system": data}
                return None if got == want else f"copies {got}, want {want}"

            await eventually(lambda: copied({"k": "1"}))
            # A namespace made later gets its copy too; a change of the source reaches every copy.
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}})
            await eventually(lambda: _has(client, "team-c", "shared"))
            await client.patch(CONFIGMAPS, "shared", {"data": {"k": "2"}}, "default")
            await eventually(lambda: copied({"k": "2"}))
            assert await copies("private") == {}
            # The source goes: so do its copies.
            await client.delete(CONFIGMAPS, "shared", "default")

            async def gone() -> str | None:
                got = await copies("shared")
                return None if not got else f"copies left: {got}"

            await eventually(gone)
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
    finally:
        proc.terminate()
        out = proc.communicate(timeout=10)[0].decode()
        stop_server(srv)
    assert "synced:" in out, out


async def _has(client: Client, ns: str, name: str) -> str | None:
    try:
        await client.get(CONFIGMAPS, name, ns)
        return None
    except ApiError as exc:
        return f"{ns}/{name}: {exc.code}"
