"""Restart fixtures: data directories written straight into the sqlite file, at any size."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any, Iterable

from kapi.encoding import codec
from kapi.storage.sqlite import _SCHEMA


def configmap(name: str, namespace: str = "default", **md: Any) -> dict[str, Any]:
    """A ConfigMap as kapi stores it (no resourceVersion: the revision is it)."""
    return {"kind": "ConfigMap", "apiVersion": "v1", "data": {"key": f"value of {name}"},
            "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4()),
                         "creationTimestamp": "2026-01-01T00:00:00Z", **md}}


def write_objects(db: Path, objects: Iterable[tuple[str, bytes]]) -> int:
    """Put (key, value) pairs into a kapi sqlite file (created if missing) in one transaction; the revision."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(_SCHEMA)
        rev = int(conn.execute("SELECT value FROM meta WHERE name = 'revision'").fetchone()[0])
        conn.execute("BEGIN IMMEDIATE")
        for key, value in objects:
            rev += 1
            conn.execute("INSERT INTO log (rev, key, create_rev, prev_rev, deleted, value) VALUES (?, ?, ?, 0, 0, ?)",
                         (rev, key, rev, value))
            conn.execute("INSERT INTO current (key, rev, create_rev, value) VALUES (?, ?, ?, ?)",
                         (key, rev, rev, value))
        conn.execute("UPDATE meta SET value = ? WHERE name = 'revision'", (rev,))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return rev


def cm_key(name: str, namespace: str = "default") -> str:
    return f"/registry/configmaps/{namespace}/{name}"


def stored(obj: dict[str, Any]) -> tuple[str, bytes]:
    md = obj["metadata"]
    return cm_key(md["name"], md["namespace"]), codec.encode_value(obj)
