"""Embedded SQLite backend: WAL, one writer thread with group commit, events straight from the commit.

Tables: ``log`` holds every write (the history, until compaction), ``current``
the latest value of each live key (ordered by key, so latest-state lists are
one range scan), ``meta`` the store revision and the compacted revision.
"""

from __future__ import annotations

import builtins
import logging
import os
import queue
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncContextManager, Callable, Literal, TypeVar

import trio

from kapi.errors import (
    KeyExists,
    KeyNotFound,
    RevisionCompacted,
    RevisionConflict,
    StorageError,
    StorageUnavailable,
)
from kapi.storage import _paging
from kapi.storage._errors import opening, sqlite_errors
from kapi.storage._keys import prefix_end, range_start
from kapi.storage._watch import WatchHub
from kapi.storage.base import Event, KeyValue, ListResult, Predicate

if TYPE_CHECKING:
    from kapi.object.listopts import ListOptions

logger = logging.getLogger(__name__)

T = TypeVar("T")

_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS log (
    rev INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    create_rev INTEGER NOT NULL,
    prev_rev INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    value BLOB
);
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS current (
    key TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    create_rev INTEGER NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0), ('compacted', 0);
COMMIT;
"""

# A log row is superseded at R when a newer row of the same key exists at or below R.
_COMPACT_SUPERSEDED = """
DELETE FROM log WHERE rev <= :r AND EXISTS (
    SELECT 1 FROM log AS newer WHERE newer.key = log.key AND newer.rev > log.rev AND newer.rev <= :r
)
"""
# Tombstones at or below R no longer hide anything once the rows they superseded are gone.
_COMPACT_TOMBSTONES = "DELETE FROM log WHERE rev <= :r AND deleted = 1"


@dataclass(frozen=True, slots=True)
class SqliteStatistics:
    """Counters of the writer: committed transactions, write requests handled, open watches."""

    transactions: int
    writes: int
    watchers: int


@dataclass(eq=False, slots=True)
class _Write:
    """One queued write; the writer thread fills ``result`` or ``error``, then ``done`` is set."""

    kind: Literal["create", "update", "delete", "compact"]
    key: str = ""
    value: bytes | None = None
    expected: int | None = None  # for compact: the revision to compact to
    done: trio.Event = field(default_factory=trio.Event)
    result: Any = None
    error: StorageError | None = None


_Deliver = Callable[[list[_Write], list[Event], int, int, bool], None]


class _Writer:
    """The writer thread's state: the write connection, its revision counter, the request queue."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        revision: int,
        compacted: int,
        *,
        group_commit: bool,
        max_batch: int,
        deliver: _Deliver,
    ) -> None:
        self.queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()  # None: stop
        self._conn = conn
        self._revision = revision
        self._compacted = compacted
        self._max_batch = max_batch if group_commit else 1
        self._deliver = deliver

    def loop(self) -> None:
        """Commit queued writes until told to stop; every request queued before the stop is served."""
        try:
            stop = False
            while not stop:
                first = self.queue.get()
                if first is None:
                    break
                # Group commit: whatever queued up while the last transaction ran shares this one.
                batch = [first]
                while len(batch) < self._max_batch:
                    try:
                        nxt = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stop = True
                        break
                    batch.append(nxt)
                self._transact(batch)
        finally:
            self._conn.close()

    def _transact(self, batch: list[_Write]) -> None:
        """Apply ``batch`` in one transaction, each write under its own savepoint."""
        conn = self._conn
        revision, compacted = self._revision, self._compacted
        events: list[Event] = []
        try:
            with sqlite_errors():
                conn.execute("BEGIN IMMEDIATE")
                try:
                    stored = conn.execute("SELECT value FROM meta WHERE name = 'revision'").fetchone()[0]
                    if stored != revision:
                        raise StorageUnavailable("the database was written by another process")
                    for write in batch:
                        conn.execute("SAVEPOINT op")
                        try:
                            with sqlite_errors():
                                if write.kind == "compact":
                                    assert write.expected is not None
                                    compacted = self._compact(min(write.expected, revision), compacted)
                                else:
                                    events.append(self._apply(write, revision + 1))
                                    revision += 1
                        except StorageError as exc:
                            # Only this write fails; the rest of the batch goes on.
                            conn.execute("ROLLBACK TO op")
                            write.error = exc
                        conn.execute("RELEASE op")
                    if revision != self._revision:
                        conn.execute("UPDATE meta SET value = ? WHERE name = 'revision'", (revision,))
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
        except Exception as exc:
            logger.error("sqlite transaction of %d writes failed: %s", len(batch), exc)
            for write in batch:
                # A fresh exception per waiter: one object raised in many tasks grows one traceback.
                write.result = None
                write.error = StorageUnavailable(f"write not committed: {exc}", key=write.key)
                write.error.__cause__ = exc
            self._deliver(batch, [], self._revision, self._compacted, False)
            return
        self._revision, self._compacted = revision, compacted
        self._deliver(batch, events, revision, compacted, True)

    def _apply(self, write: _Write, revision: int) -> Event:
        """Check and perform one create, update or delete at ``revision``."""
        conn, key = self._conn, write.key
        row = conn.execute("SELECT rev, create_rev, value FROM current WHERE key = ?", (key,)).fetchone()
        if write.kind == "create":
            if row is not None:
                raise KeyExists(f"key {key!r} already exists", key=key, revision=row[0])
            assert write.value is not None
            conn.execute(
                "INSERT INTO log (rev, key, create_rev, prev_rev, deleted, value) VALUES (?, ?, ?, 0, 0, ?)",
                (revision, key, revision, write.value),
            )
            conn.execute(
                "INSERT INTO current (key, rev, create_rev, value) VALUES (?, ?, ?, ?)",
                (key, revision, revision, write.value),
            )
            write.result = revision
            return Event("ADDED", key, write.value, None, revision, revision, 0)
        if row is None:
            raise KeyNotFound(f"key {key!r} not found", key=key)
        old_revision, create_revision, old_value = row
        if write.expected is not None and old_revision != write.expected:
            raise RevisionConflict(
                f"key {key!r} is at revision {old_revision}, not {write.expected}", key=key, revision=old_revision,
                current=KeyValue(key, old_value, old_revision, create_revision),
            )
        if write.kind == "update":
            assert write.value is not None
            conn.execute(
                "INSERT INTO log (rev, key, create_rev, prev_rev, deleted, value) VALUES (?, ?, ?, ?, 0, ?)",
                (revision, key, create_revision, old_revision, write.value),
            )
            conn.execute("UPDATE current SET rev = ?, value = ? WHERE key = ?", (revision, write.value, key))
            write.result = revision
            return Event("MODIFIED", key, write.value, old_value, revision, create_revision, old_revision)
        conn.execute(
            "INSERT INTO log (rev, key, create_rev, prev_rev, deleted, value) VALUES (?, ?, ?, ?, 1, NULL)",
            (revision, key, create_revision, old_revision),
        )
        conn.execute("DELETE FROM current WHERE key = ?", (key,))
        write.result = (revision, KeyValue(key, old_value, old_revision, create_revision))
        return Event("DELETED", key, None, old_value, revision, create_revision, old_revision)

    def _compact(self, target: int, compacted: int) -> int:
        """Delete history at and below ``target``; return the new compacted revision."""
        if target <= compacted:
            return compacted
        self._conn.execute(_COMPACT_SUPERSEDED, {"r": target})
        self._conn.execute(_COMPACT_TOMBSTONES, {"r": target})
        self._conn.execute("UPDATE meta SET value = ? WHERE name = 'compacted'", (target,))
        return target


class SqliteStorage:
    """The ``Storage`` protocol on one SQLite file, served by one process.

    Writes are acknowledged only after their transaction's COMMIT (WAL,
    ``synchronous=FULL``) returned, so a killed process loses no acknowledged
    write. Reads run on pooled connections in worker threads.
    """

    def __init__(
        self,
        path: str,
        *,
        group_commit: bool = True,
        max_batch: int = 512,
        watch_buffer: int = 1000,
        read_pool: int = 8,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._path = path
        self._group_commit = group_commit
        self._max_batch = max_batch
        self._read_pool = read_pool
        self._writer: _Writer | None = None
        self._idle: list[sqlite3.Connection] = []
        self._point_conn: sqlite3.Connection | None = None  # the event loop's own, for single-key reads
        self._revision = 0
        self._compacted = 0
        self._transactions = 0
        self._writes = 0
        self._hub = WatchHub(
            buffer=watch_buffer,
            read_history=self._read_history,
            current=lambda: self._revision,
            compacted=self.compacted_revision,
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the file, run the writer thread and serve until cancelled."""
        if self._writer is not None:
            raise RuntimeError("SqliteStorage.run() is already running")
        conn, self._revision, self._compacted = await trio.to_thread.run_sync(self._open_writer)
        token = trio.lowlevel.current_trio_token()

        def deliver(batch: list[_Write], events: list[Event], revision: int, compacted: int, ok: bool) -> None:
            try:
                token.run_sync_soon(self._on_commit, batch, events, revision, compacted, ok)
            except trio.RunFinishedError:
                pass  # nobody is left to wait for the results

        writer = _Writer(
            conn,
            self._revision,
            self._compacted,
            group_commit=self._group_commit,
            max_batch=self._max_batch,
            deliver=deliver,
        )
        thread = threading.Thread(target=writer.loop, name="kapi-sqlite-writer", daemon=True)
        thread.start()
        self._writer = writer
        try:
            async with trio.open_nursery() as nursery:
                self._hub.start(nursery)
                try:
                    task_status.started()
                    await trio.sleep_forever()
                finally:
                    self._hub.stop()
        finally:
            # New writes are refused from here on, so the stop marker is the last request queued.
            self._writer = None
            idle, self._idle = self._idle, []
            if self._point_conn is not None:
                self._point_conn.close()
                self._point_conn = None
            with trio.move_on_after(30) as scope:
                scope.shield = True
                # Readers first: the writer's connection, closing last, checkpoints the WAL.
                await trio.to_thread.run_sync(_close_all, idle, abandon_on_cancel=True)
                writer.queue.put(None)
                await trio.to_thread.run_sync(thread.join, abandon_on_cancel=True)

    # ------------------------------------------------------------ writes

    async def create(self, key: str, value: bytes) -> int:
        """Create ``key``; return the new revision."""
        result: int = await self._submit(_Write("create", key, value))
        return result

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        """Replace ``key`` at ``expected_revision``; return the new revision."""
        result: int = await self._submit(_Write("update", key, value, expected_revision))
        return result

    async def delete(self, key: str, expected_revision: int | None = None) -> tuple[int, KeyValue]:
        """Delete ``key`` (at ``expected_revision`` when given)."""
        result: tuple[int, KeyValue] = await self._submit(_Write("delete", key, None, expected_revision))
        return result

    async def compact(self, revision: int) -> None:
        """Forget history at and below ``revision`` (clamped to the current revision)."""
        await self._submit(_Write("compact", expected=revision))

    # ------------------------------------------------------------- reads

    async def get(self, key: str) -> KeyValue:
        """The latest value of ``key``.

        One primary-key lookup takes microseconds and WAL readers never wait for the
        writer, so it runs on the event loop: a thread hop would cost ten times more.
        """
        await trio.lowlevel.checkpoint()
        if self._writer is None:
            raise StorageUnavailable("storage is not running")
        if self._point_conn is None:
            with sqlite_errors():
                conn = sqlite3.connect(self._path, isolation_level=None)
                conn.execute("PRAGMA query_only = 1")
                conn.execute("PRAGMA busy_timeout = 100")  # WAL readers are only busy during recovery
            self._point_conn = conn
        with sqlite_errors():
            found = _get(self._point_conn, key)
        if found is None:
            raise KeyNotFound(f"key {key!r} not found", key=key)
        return found

    async def list(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        start: str | None = None,
        limit: int | None = None,
    ) -> ListResult[KeyValue]:
        """Keys under ``prefix`` from ``start`` on, at the latest or a historical revision."""
        return await self._read(_list, range_start(prefix, start), prefix_end(prefix), revision, limit)

    async def get_list(self, prefix: str, opts: ListOptions, pred: Predicate[T]) -> ListResult[T]:
        """A LIST by the API's rules over this backend's range reads."""
        return await _paging.get_list(self, prefix, opts, pred)

    async def count(self, prefix: str) -> int:
        """How many keys live under ``prefix`` now."""
        return await self._read(_count, prefix, prefix_end(prefix))

    def watch(self, prefix: str, from_revision: int) -> AsyncContextManager[trio.MemoryReceiveChannel[Event]]:
        """Events under ``prefix`` after ``from_revision``: history from the log, then live."""
        return self._hub.watch(prefix, from_revision)

    def request_progress(self) -> None:
        """Every live watch gets a PROGRESS event at the current revision."""
        self._hub.request_progress()

    @property
    def consistent_reads_from_cache(self) -> bool:
        """Always: a PROGRESS marker is ordered with this backend's events."""
        return True

    async def current_revision(self) -> int:
        """The latest revision whose commit has been handed to trio."""
        await trio.lowlevel.checkpoint()
        return self._revision

    def compacted_revision(self) -> int:
        """The highest revision compacted away."""
        return self._compacted

    def statistics(self) -> SqliteStatistics:
        """Transaction and write counters since construction."""
        return SqliteStatistics(self._transactions, self._writes, self._hub.subscribers)

    # ----------------------------------------------------------- helpers

    async def _submit(self, write: _Write) -> Any:
        """Queue ``write`` for the writer thread and wait for its commit."""
        await trio.lowlevel.checkpoint_if_cancelled()
        writer = self._writer
        if writer is None:
            raise StorageUnavailable("storage is not running", key=write.key)
        writer.queue.put(write)
        # A caller cancelled here may still see its write committed, as with any remote store.
        await write.done.wait()
        if write.error is not None:
            raise write.error
        return write.result

    def _on_commit(
        self, batch: builtins.list[_Write], events: builtins.list[Event], revision: int, compacted: int, ok: bool
    ) -> None:
        """In trio: publish a finished transaction, then wake its writers."""
        self._transactions += ok
        self._writes += len(batch)
        self._revision = max(self._revision, revision)
        self._compacted = max(self._compacted, compacted)
        self._hub.dispatch(events)
        for write in batch:
            write.done.set()

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in a worker thread inside one read transaction (a snapshot)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._writer is None:
            raise StorageUnavailable("storage is not running")
        idle = self._idle.pop() if self._idle else None
        conn, outcome = await trio.to_thread.run_sync(self._read_in_thread, idle, fn, args)
        if self._writer is not None and len(self._idle) < self._read_pool:
            self._idle.append(conn)
        else:
            conn.close()  # only after shutdown or with a full pool; other connections keep the WAL open
        if isinstance(outcome, StorageError):
            raise outcome
        return outcome

    def _read_in_thread(
        self, conn: sqlite3.Connection | None, fn: Callable[..., T], args: tuple[Any, ...]
    ) -> tuple[sqlite3.Connection, T | StorageError]:
        """In a worker thread: the connection back for the pool, and the result or the storage error."""
        try:
            with sqlite_errors():
                if conn is None:
                    conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
                    conn.execute("PRAGMA busy_timeout = 5000")
                    conn.execute("PRAGMA query_only = 1")
                conn.execute("BEGIN")
                try:
                    return conn, fn(conn, *args)
                except StorageError as exc:
                    return conn, exc
                finally:
                    conn.execute("ROLLBACK")
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    async def _read_history(self, prefix: str, after: int, upto: int, limit: int) -> builtins.list[Event]:
        return await self._read(_history, prefix, after, upto, limit)

    def _open_writer(self) -> tuple[sqlite3.Connection, int, int]:
        """In a worker thread: open the write connection, create the schema, load the revisions."""
        with opening(self._path):
            _restrict(self._path)
            return self._open_writer_connection()

    def _open_writer_connection(self) -> tuple[sqlite3.Connection, int, int]:
        with sqlite_errors():
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA busy_timeout = 5000")
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StorageUnavailable(f"cannot put {self._path} in WAL mode (journal mode {mode})")
                # FULL: the WAL is fsynced at every commit, so an acknowledged write survives a crash.
                conn.execute("PRAGMA synchronous = FULL")
                conn.executescript(_SCHEMA)
                meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
            except BaseException:
                conn.close()
                raise
        return conn, int(meta["revision"]), int(meta["compacted"])


# ------------------------------------------------ reads (worker threads, in a read transaction)


def _restrict(path: str) -> None:
    """The database holds Secrets: its file, WAL and shared-memory index are 0600 (SQLite gives the
    WAL and -shm the database file's mode), made so before SQLite first creates the file."""
    if path == ":memory:" or path.startswith("file:"):
        return
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for name in (path, path + "-wal", path + "-shm"):
        try:
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)
        except FileNotFoundError:
            pass


def _close_all(conns: list[sqlite3.Connection]) -> None:
    for conn in conns:
        conn.close()


def _key_range(column: str, low: str, high: str | None) -> tuple[str, tuple[object, ...]]:
    """SQL condition and parameters for ``low <= column < high``."""
    if high is None:
        return f"{column} >= ?", (low,)
    return f"{column} >= ? AND {column} < ?", (low, high)


def _meta(conn: sqlite3.Connection) -> tuple[int, int]:
    """The store revision and the compacted revision of this snapshot."""
    meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
    return int(meta["revision"]), int(meta["compacted"])


def _get(conn: sqlite3.Connection, key: str) -> KeyValue | None:
    row = conn.execute("SELECT key, value, rev, create_rev FROM current WHERE key = ?", (key,)).fetchone()
    return None if row is None else KeyValue(*row)


def _count(conn: sqlite3.Connection, prefix: str, high: str | None) -> int:
    where, params = _key_range("key", prefix, high)
    return int(conn.execute(f"SELECT COUNT(*) FROM current WHERE {where}", params).fetchone()[0])


def _list(conn: sqlite3.Connection, low: str, high: str | None, revision: int | None, limit: int | None) -> ListResult[KeyValue]:
    current, compacted = _meta(conn)
    if revision is not None and compacted > 0 and revision <= compacted:
        raise RevisionCompacted(
            f"revision {revision} has been compacted (compacted revision {compacted})", revision=compacted
        )
    n = limit if limit is not None and limit > 0 else -1  # LIMIT -1: no limit
    if revision is None or revision >= current:
        where, params = _key_range("key", low, high)
        page_sql = f"SELECT key, value, rev, create_rev FROM current WHERE {where} ORDER BY key LIMIT ?"
        count_sql = f"SELECT COUNT(*) FROM current WHERE {where}"
        at = current
    else:
        # State at R: the newest row of each key at or below R, unless it is a tombstone.
        where, params = _key_range("key", low, high)
        params = (*params, revision)
        newest = f"SELECT MAX(rev) AS rev FROM log WHERE {where} AND rev <= ? GROUP BY key"
        joined = f"({newest}) AS m JOIN log AS l ON l.rev = m.rev WHERE l.deleted = 0"
        page_sql = f"SELECT l.key, l.value, l.rev, l.create_rev FROM {joined} ORDER BY l.key LIMIT ?"
        count_sql = f"SELECT COUNT(*) FROM {joined}"
        at = revision
    items = [KeyValue(*row) for row in conn.execute(page_sql, (*params, n))]
    if n < 0 or len(items) < n:
        return ListResult(items, at)
    remaining = int(conn.execute(count_sql, params).fetchone()[0]) - len(items)
    return ListResult(items, at, more=remaining > 0, remaining=remaining)


def _history(conn: sqlite3.Connection, prefix: str, after: int, upto: int, limit: int) -> list[Event]:
    _, compacted = _meta(conn)
    if after < compacted:
        raise RevisionCompacted(f"revision {after} has been compacted", revision=compacted)
    where, params = _key_range("l.key", prefix, prefix_end(prefix))
    rows = conn.execute(
        "SELECT l.rev, l.key, l.create_rev, l.prev_rev, l.deleted, l.value, p.value"
        " FROM log AS l LEFT JOIN log AS p ON p.rev = l.prev_rev"
        f" WHERE l.rev > ? AND l.rev <= ? AND {where} ORDER BY l.rev LIMIT ?",
        (after, upto, *params, limit),
    )
    events: list[Event] = []
    for rev, key, create_rev, prev_rev, deleted, value, prev_value in rows:
        if deleted:
            events.append(Event("DELETED", key, None, prev_value, rev, create_rev, prev_rev))
        elif prev_rev == 0:
            events.append(Event("ADDED", key, value, None, rev, create_rev, 0))
        else:
            events.append(Event("MODIFIED", key, value, prev_value, rev, create_rev, prev_rev))
    return events
