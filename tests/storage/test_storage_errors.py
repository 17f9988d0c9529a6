"""Driver errors become kapi's StorageError in one place, kapi.storage._errors (issue 11)."""

from __future__ import annotations

import sqlite3

import pytest

from kapi import errors
from kapi.storage._errors import opening, sqlite_errors


@pytest.mark.parametrize("raised,expected", [
    (sqlite3.IntegrityError("UNIQUE constraint failed"), errors.KeyExists),
    (sqlite3.OperationalError("database is locked"), errors.StorageUnavailable),
    (sqlite3.DatabaseError("file is not a database"), errors.StorageUnavailable),
])
def test_sqlite_errors_map_to_storage_errors(raised: Exception, expected: type[errors.StorageError]) -> None:
    with pytest.raises(expected) as info:
        with sqlite_errors():
            raise raised
    assert type(info.value) is expected
    assert info.value.__cause__ is raised and str(raised) in str(info.value)


def test_other_exceptions_pass_through() -> None:
    with pytest.raises(KeyError):
        with sqlite_errors():
            raise KeyError("not a driver error")


def test_a_store_that_cannot_be_opened_is_unavailable_naming_its_path() -> None:
    with pytest.raises(errors.StorageUnavailable, match="cannot open /nowhere/db: Permission denied"):
        with opening("/nowhere/db"):
            raise PermissionError(13, "Permission denied")
    with pytest.raises(errors.StorageUnavailable, match="^cannot open /x: disk I/O error$"):
        with opening("/x"):
            with sqlite_errors():
                raise sqlite3.OperationalError("disk I/O error")
