"""What each backend's driver errors become in kapi's ``StorageError`` tree, in one place.

Backends wrap every driver call in one of these context managers, so a driver exception
never leaves ``kapi.storage``; the original is kept as ``__cause__`` (``raise ... from exc``).

=============================  =======================
sqlite3.IntegrityError         KeyExists
any other sqlite3.Error        StorageUnavailable
OSError while opening a store  StorageUnavailable
=============================  =======================
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator

from kapi.errors import KeyExists, StorageUnavailable


@contextmanager
def sqlite_errors() -> Iterator[None]:
    """Turn ``sqlite3`` exceptions into ``StorageError`` at the backend's edge."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise KeyExists(f"sqlite: {exc}") from exc
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"sqlite: {exc}") from exc


@contextmanager
def opening(path: str) -> Iterator[None]:
    """A store that cannot be opened at ``path`` is ``StorageUnavailable`` naming it."""
    try:
        yield
    except StorageUnavailable as exc:
        raise StorageUnavailable(f"cannot open {path}: {str(exc).removeprefix('sqlite: ')}") from exc
    except OSError as exc:
        raise StorageUnavailable(f"cannot open {path}: {exc.strerror or exc}") from exc
