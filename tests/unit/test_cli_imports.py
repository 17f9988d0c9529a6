"""The CLI imports what parsing flags needs and nothing heavy: ``kapi serve`` imports the server
once it has its flags, and ``--help`` or a bad flag answer before that (issue 33)."""

from __future__ import annotations

import subprocess
import sys

# Imported only by the server itself, each tens of milliseconds or more.
HEAVY = ("kapi.server.serve", "kapi.api.app", "kapi.registry.store", "kapi.admission.chain", "kapi.object.cel",
         "kapi.object.structural", "kapi.storage.sqlite", "kapi.storage.etcd3", "kapi.encoding.protobuf",
         "hypercorn", "httpx", "cryptography", "msgpack", "prometheus_client", "yaml", "re2", "grpc",
         "cel_expr_python")


def _modules(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print('\\n'.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return set(out.split())


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_cli_imports_nothing_heavy() -> None:
    assert _heavy(_modules("import kapi.__main__")) == []


def test_parsing_serve_flags_imports_nothing_heavy() -> None:
    modules = _modules("from kapi.__main__ import build_parser, config_from_args\n"
                       "config_from_args(build_parser().parse_args(['serve', '--secure-port', '0']))")
    assert _heavy(modules) == []


def test_the_guard_sees_the_server_import() -> None:
    """The list above names modules the server does import (else the guard would pass vacuously)."""
    modules = _modules("import kapi.server.serve")
    assert {"kapi.server.serve", "kapi.api.app", "kapi.registry.store", "hypercorn", "msgpack"} <= modules
