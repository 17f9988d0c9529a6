"""The log backend: events as lines (json or kube's legacy format) in a file rotated as lumberjack does, or stdout.

Events are queued by the request (no I/O on its path) and written in batches by ``run``, a
background task: one write per batch, never a sync per event. A backup is named
``<name>-<UTC time 2006-01-02T15-04-05.000><ext>``, as kube's log rotation (lumberjack) names it.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import threading
from typing import Any, Callable

import orjson
import trio

from kapi.chain.audit.events import event_string

log = logging.getLogger("kapi.audit")

Obj = dict[str, Any]
MEGABYTE = 1024 * 1024
DEFAULT_MAX_SIZE_MB = 100  # lumberjack's size when --audit-log-maxsize is 0
_BACKUP_TIME = "%Y-%m-%dT%H-%M-%S"
# Past this many queued events the request writes the queue itself: memory stays bounded when the
# writer task lags (or does not run).
MAX_QUEUED = 10_000
INLINE_EVENTS = 64  # a larger batch is written from a worker thread
COALESCE_S = 0.02  # the writer waits this long after waking: one write (and one wake-up) takes what came meanwhile


def _split_ext(filename: str) -> tuple[str, str]:
    """Go's filepath.Ext split of a base name: ("audit", ".log")."""
    dot = filename.rfind(".")
    return (filename[:dot], filename[dot:]) if dot >= 0 else (filename, "")


class RotatingFile:
    """lumberjack.Logger: append to ``path``; past ``max_size`` bytes rename it to a timestamped backup and
    start afresh; keep at most ``max_backups`` backups (0: all) none older than ``max_age_days`` (0: any)."""

    def __init__(self, path: str, max_size_mb: int = 0, max_backups: int = 0, max_age_days: int = 0,
                 now: Callable[[], datetime.datetime] | None = None) -> None:
        self.path = path
        self.max_size = (max_size_mb or DEFAULT_MAX_SIZE_MB) * MEGABYTE
        self.max_backups = max_backups
        self.max_age_days = max_age_days
        self._now = now or (lambda: datetime.datetime.now(datetime.timezone.utc))
        self._fd = -1
        self._size = 0

    def ensure(self) -> None:
        """kube's ensureLogFile: the directory and the file exist (0600) before the server starts."""
        directory = os.path.dirname(self.path) or "."
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.close(fd)

    def write(self, data: bytes) -> None:
        n = len(data)
        if n > self.max_size:
            raise OSError(f"write length {n} exceeds maximum file size {self.max_size}")
        if self._fd < 0:
            self._open_existing_or_new(n)
        elif self._size + n > self.max_size:
            self._rotate()
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += n

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _open_existing_or_new(self, n: int) -> None:
        self._mill()
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            self._open_new()
            return
        if size + n >= self.max_size:
            self._rotate()
            return
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._size = size

    def _rotate(self) -> None:
        self.close()
        self._open_new()
        self._mill()

    def _backup_name(self) -> str:
        directory, filename = os.path.split(self.path)
        prefix, ext = _split_ext(filename)
        now = self._now().astimezone(datetime.timezone.utc)
        stamp = now.strftime(_BACKUP_TIME) + f".{now.microsecond // 1000:03d}"
        return os.path.join(directory, f"{prefix}-{stamp}{ext}")

    def _open_new(self) -> None:
        directory = os.path.dirname(self.path) or "."
        os.makedirs(directory, mode=0o755, exist_ok=True)
        mode = 0o600
        try:
            mode = os.stat(self.path).st_mode & 0o777
            os.rename(self.path, self._backup_name())
        except FileNotFoundError:
            pass
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, mode)
        self._size = 0

    def backups(self) -> list[tuple[datetime.datetime, str]]:
        """The rotated files beside the log, newest first (lumberjack's oldLogFiles)."""
        directory, filename = os.path.split(self.path)
        prefix, ext = _split_ext(filename)
        prefix += "-"
        out = []
        try:
            names = os.listdir(directory or ".")
        except OSError:
            return []
        for name in names:
            if not name.startswith(prefix) or not name.endswith(ext) or len(name) <= len(prefix) + len(ext):
                continue
            stamp = name[len(prefix):len(name) - len(ext)]
            try:
                when = datetime.datetime.strptime(stamp, _BACKUP_TIME + ".%f").replace(tzinfo=datetime.timezone.utc)
            except ValueError:
                continue
            out.append((when, os.path.join(directory, name)))
        out.sort(reverse=True)
        return out

    def _mill(self) -> None:
        if not self.max_backups and not self.max_age_days:
            return
        files = self.backups()
        remove: list[str] = []
        if self.max_backups and len(files) > self.max_backups:
            remove += [path for _, path in files[self.max_backups:]]
            files = files[:self.max_backups]
        if self.max_age_days:
            cutoff = self._now() - datetime.timedelta(days=self.max_age_days)
            remove += [path for when, path in files if when < cutoff]
        for path in remove:
            try:
                os.remove(path)
            except OSError as exc:
                log.warning("audit log: cannot remove old backup %s: %s", path, exc.strerror or exc)


class _Stdout:
    def write(self, data: bytes) -> None:
        sys.stdout.write(data.decode("utf-8", "replace"))
        sys.stdout.flush()

    def close(self) -> None:
        pass


def encode_line(event: Obj, fmt: str) -> bytes:
    """One event as its log line: kube's JSON encoding, or EventString for ``legacy``."""
    if fmt == "legacy":
        return (event_string(event) + "\n").encode("utf-8", "replace")
    return go_json(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))


def go_json(data: bytes) -> bytes:
    """Go's encoding/json escapes <, > and & (and U+2028, U+2029) in strings, as kube's log lines show
    (``...?limit=500\\u0026watch=1``); outside strings JSON has none of them, so a plain replace is exact."""
    if b"<" in data or b">" in data or b"&" in data:
        data = data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if b"\xe2\x80\xa8" in data or b"\xe2\x80\xa9" in data:
        data = data.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return data


class LogBackend:
    """``--audit-log-path``: queued events written by ``run`` (``-``: to stdout)."""

    name = "log"
    blocking = False
    on_error: Callable[[str, int], None] | None = None

    def __init__(self, path: str, fmt: str = "json", max_age_days: int = 0, max_backups: int = 0,
                 max_size_mb: int = 0) -> None:
        if fmt not in ("json", "legacy"):
            raise ValueError(f'log format "{fmt}" is not in list of known formats (legacy,json)')
        self.format = fmt
        self.out: RotatingFile | _Stdout = (_Stdout() if path == "-"
                                            else RotatingFile(path, max_size_mb, max_backups, max_age_days))
        if isinstance(self.out, RotatingFile):
            self.out.ensure()
        self._queued: list[Obj] = []
        self._wake = trio.Event()
        self._lock = threading.Lock()  # the writer's thread and a request's overflow write share the file
        self.dropped = 0

    def process_nowait(self, event: Obj) -> bool:
        """Queue ``event`` (a stage's dict, not changed afterwards); the writer task wakes for it."""
        self._queued.append(event)
        if len(self._queued) >= MAX_QUEUED:
            self.flush()
        elif not self._wake.is_set():
            self._wake.set()
        return True

    async def process(self, event: Obj) -> bool:
        return self.process_nowait(event)

    def flush(self) -> None:
        """Write what is queued now (the writer does this in batches; tests and shutdown call it)."""
        batch, self._queued = self._queued, []
        if batch:
            self._write(batch)

    def _write(self, batch: list[Obj]) -> None:
        fmt = self.format
        try:
            data = b"".join(encode_line(ev, fmt) for ev in batch)
            with self._lock:
                self.out.write(data)
        except (OSError, TypeError, ValueError) as exc:  # a full disk, an unwritable file: logged, not fatal
            self.dropped += len(batch)
            log.error("audit log: %d events not written: %s", len(batch), getattr(exc, "strerror", None) or exc)
            if self.on_error is not None:
                self.on_error(self.name, len(batch))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write queued events in batches until cancelled; then write what is left."""
        task_status.started()
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                await trio.sleep(COALESCE_S)
                batch, self._queued = self._queued, []
                if len(batch) > INLINE_EVENTS:
                    await trio.to_thread.run_sync(self._write, batch)
                elif batch:
                    # A few events' lines go to the page cache in one write, well under a thread
                    # hand-off's cost (which, per batch, had made audit cost a fifth of a GET).
                    self._write(batch)
        finally:
            self.flush()
            self.out.close()
