"""The fuzz target: one real ``kapi serve`` for the session, every request counted and checked.

Issue 10: no request may crash or brick kapi. Each request the fuzzer sends goes through
``Target.send``, which records per group how many were sent and every 5xx, exit, hang (no answer
within client.HANG_SECONDS), dropped connection (closed without an answer), error answer that is
not a metav1.Status, and watch stream that starts wrong (cut off, not event lines, a 5xx ERROR
event), with a reproduction (method, path, headers, body) and the server log's last exception.
A server that exits is restarted (on its own data dir first, which shows whether it is bricked; on
a fresh one if that fails) so the run goes on and reports everything it finds. A watchdog kills the server if its RSS passes
``KAPI_FUZZ_MAX_RSS_MB`` (counted as an exit) so an amplification cannot take the machine down.

Budgets (no timing assertions, only bounds): ``KAPI_FUZZ_SECONDS`` (default 50) is shared
among the groups by weight; ``KAPI_FUZZ_EXAMPLES`` scales each group's ``max_examples``.
The figures are printed at the end of the session and written to ``fuzz-summary.json`` in
pytest's base temp dir (or to ``KAPI_FUZZ_REPORT`` when set).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..e2e.conftest import Server, start_server, stop_server
from .client import Endpoint, NoAnswer, Request, Response, send, status_body_problem, stream_problem

NAMESPACE = "fuzz"
TOTAL_SECONDS = float(os.environ.get("KAPI_FUZZ_SECONDS", "50"))
EXAMPLES_SCALE = float(os.environ.get("KAPI_FUZZ_EXAMPLES", "1"))
MAX_RSS_MB = int(os.environ.get("KAPI_FUZZ_MAX_RSS_MB", "1500"))
#: After this many hangs a group stops sending (each costs the hang timeout).
MAX_HANGS_PER_GROUP = 3

KINDS = ("5xx", "exit", "hang", "dropped", "not-status", "bad-stream")


def rss_mb(pid: int) -> int:
    """The process's resident set size in MB (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    m = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) // 1024 if m else 0


_EXC_LINE = re.compile(r"^[\s|+]*((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Group|Exit|Interrupt)\b.*)$")


def last_exception(log: str) -> str:
    """The last exception line of a log excerpt ("AttributeError: ..."), also inside trio's
    exception-group boxes; "" when there is none."""
    found = ""
    for line in log.splitlines():
        m = _EXC_LINE.match(line)
        if m:
            found = m.group(1)
    return found[:300]


def kube_answers_5xx(req: Request, resp: Response) -> bool:
    """The two 5xx kube-apiserver gives to a well-behaved server too: 504 for a resourceVersion newer
    than the cache reaches within its wait (cacher's TooLargeResourceVersion), and 501 for a
    Transfer-Encoding other than chunked (Go's net/http, RFC 9112 6.1)."""
    if resp.status == 504:
        try:
            causes = (resp.json().get("details") or {}).get("causes") or []
        except ValueError:
            return False
        return any(c.get("reason") == "ResourceVersionTooLarge" for c in causes)
    if resp.status == 501:
        te = [v for k, v in req.headers if (k.lower() if isinstance(k, str) else k.decode().lower()) == "transfer-encoding"]
        return any((v if isinstance(v, str) else v.decode("latin-1")).strip().lower() != "chunked" for v in te)
    return False


def describe_5xx(resp: Response, log: str) -> str:
    """The answer's Status message and the server's logged exception, if any."""
    try:
        message = str(resp.json().get("message"))[:200]
    except ValueError:
        message = resp.body[:200].decode("utf-8", "replace")
    exc = last_exception(log)
    return f"{message} | server log: {exc}" if exc else message


@dataclass
class Finding:
    group: str
    kind: str
    status: int | None
    request: dict[str, Any]
    detail: str
    size: int

    def key(self) -> tuple[Any, ...]:
        # One finding per (group, kind, status, cause): the cause is the server's exception when
        # it logged one, else the detail's first words.
        cause = re.sub(r"0x[0-9a-f]+|\d+", "N", self.detail)[:120]
        return (self.group, self.kind, self.status, self.request["method"], cause)


class Target:
    """The session's server, its figures and its findings."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.generation = 0
        self.sent: Counter[str] = Counter()
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.codes: dict[str, Counter[int]] = defaultdict(Counter)
        self.findings: dict[tuple[Any, ...], Finding] = {}
        self.bricked: list[str] = []
        self.budgets: dict[str, Budget] = {}
        self.recent: deque[dict[str, Any]] = deque(maxlen=3)  # what came just before an exit
        self.killed_for_rss = False
        self.peak_rss_mb = 0
        self.server = self._start(self._fresh_dir())
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch_rss, daemon=True)
        self._watchdog.start()

    # -- the server ----------------------------------------------------------------------------
    def _fresh_dir(self) -> Path:
        self.generation += 1
        return self.base / f"data{self.generation}"

    def _start(self, data_dir: Path) -> Server:
        if getattr(self, "endpoint", None) is not None:
            self.endpoint.close()
        # AlwaysAllow named: anonymous fuzzed requests must reach the handlers, as they did before
        # the default became Node,RBAC (issue 12).
        srv = start_server(data_dir, "--authorization-mode", "AlwaysAllow")
        self.endpoint = Endpoint.from_url(srv.url, str(srv.ca_file))
        self._log_offset = srv.log.stat().st_size if srv.log.exists() else 0
        self.server = srv
        self._bootstrap()
        return srv

    def _bootstrap(self) -> None:
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        for _ in range(50):
            r = send(self.endpoint, Request("POST", "/api/v1/namespaces", [("Content-Type", "application/json")],
                                            body.encode()), self.server.token)
            if isinstance(r, Response) and r.status in (201, 409):
                return
            time.sleep(0.1)
        raise RuntimeError(f"could not create the {NAMESPACE} namespace: {r}")

    def _watch_rss(self) -> None:
        while not self._stop.wait(0.05):
            proc = self.server.proc
            if proc.poll() is not None:
                continue
            mb = rss_mb(proc.pid)
            self.peak_rss_mb = max(self.peak_rss_mb, mb)
            if mb > MAX_RSS_MB:
                self.killed_for_rss = True
                proc.send_signal(signal.SIGKILL)

    def alive(self) -> bool:
        return self.server.proc.poll() is None

    def log_since(self) -> str:
        try:
            with open(self.server.log, "rb") as f:
                f.seek(self._log_offset)
                text = f.read().decode("utf-8", "replace")
                self._log_offset = f.tell()
                return text
        except OSError:
            return ""

    def revive(self) -> str:
        """After an exit: restart on the same data dir (is it bricked?), else on a fresh one."""
        old = self.server
        stop_server(old)
        try:
            self._start(old.data_dir)
            return "restarted on its data dir"
        except Exception as err:  # noqa: BLE001 - the failure is what is reported
            line = str(err).strip().splitlines()
            why = last_exception(str(err)) or (line[-1] if line else "")
            self.bricked.append(f"{old.data_dir.name}: {why}")
        self._start(self._fresh_dir())
        return f"BRICKED: its data dir does not start again ({self.bricked[-1]}); went on with a fresh one"

    def close(self) -> None:
        self._stop.set()
        self._watchdog.join(timeout=2)
        self.endpoint.close()
        stop_server(self.server)

    # -- requests ------------------------------------------------------------------------------
    def limit(self, group: str, spent: "Budget") -> None:
        """From now on ``send`` for ``group`` does nothing once ``spent`` is used up or after
        MAX_HANGS_PER_GROUP hangs."""
        self.budgets[group] = spent

    def closed(self, group: str) -> bool:
        b = self.budgets.get(group)
        return b is not None and (b.spent() or self.counts[group]["hang"] >= MAX_HANGS_PER_GROUP)

    def send(self, group: str, req: Request, timeout: float | None = None) -> Response | NoAnswer | None:
        """Send, count, check; returns the answer for the caller's own assertions (None: not sent,
        the group's budget is spent)."""
        if self.closed(group):
            return None
        answer = send(self.endpoint, req, self.server.token, *(() if timeout is None else (timeout,)))
        if answer is None:
            return None  # the client library would not send it: not a request
        self.sent[group] += 1
        size = len(req.body or b"") + len(str(req.path)) + sum(len(k) + len(v) for k, v in req.headers)
        if isinstance(answer, Response):
            self.codes[group][answer.status] += 1
        if isinstance(answer, NoAnswer) and self.alive():
            try:  # a connection refused or cut: is the process on its way out?
                self.server.proc.wait(timeout=1.0)
            except Exception:  # noqa: BLE001 - still running
                pass
        if not self.alive():
            time.sleep(0.2)
            rss, self.killed_for_rss = self.killed_for_rss, False
            log = self.log_since()
            why = (f"killed by the fuzz watchdog: RSS over {MAX_RSS_MB} MB" if rss else
                   last_exception(log) or f"exit code {self.server.proc.poll()}")
            what = self.revive()
            before = "; requests just before: " + json.dumps(list(self.recent))[:1500] if self.recent else ""
            self._record(group, "exit", None, req, f"{why} [{what}]{before}", size)
            self.recent.clear()
            return answer
        self.recent.append(req.describe(200))
        if isinstance(answer, NoAnswer):
            detail = answer.error
            if answer.hang and not self._answers_readyz():
                detail += " [the server no longer answers /readyz: killed and restarted]"
                self.revive()
            self._record(group, "hang" if answer.hang else "dropped", None, req, detail, size)
            return answer
        if answer.status >= 500 and not kube_answers_5xx(req, answer):
            self._record(group, "5xx", answer.status, req, describe_5xx(answer, self.log_since()), size)
        elif answer.streamed and answer.status < 300:
            problem = stream_problem(req, answer)
            if problem:
                self._record(group, "bad-stream", answer.status, req, problem, size)
        else:
            problem = status_body_problem(req, answer)
            if problem:
                self._record(group, "not-status", answer.status, req, problem, size)
        return answer

    def _answers_readyz(self) -> bool:
        r = send(self.endpoint, Request("GET", "/readyz"), self.server.token, 10.0)
        return isinstance(r, Response) and r.status == 200

    def _record(self, group: str, kind: str, status: int | None, req: Request, detail: str, size: int) -> None:
        self.counts[group][kind] += 1
        f = Finding(group, kind, status, req.describe(), detail, size)
        old = self.findings.get(f.key())
        if old is None or size < old.size:
            self.findings[f.key()] = f

    def group_findings(self, group: str) -> list[Finding]:
        return [f for f in self.findings.values() if f.group == group]

    def hangs(self, group: str) -> int:
        return self.counts[group]["hang"]

    # -- the figures ---------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        groups = {}
        for g in self.sent:
            groups[g] = {"sent": self.sent[g], **{k: self.counts[g][k] for k in KINDS},
                         "codes": dict(sorted(self.codes[g].items()))}
        total = {"sent": sum(self.sent.values()), **{k: sum(c[k] for c in self.counts.values()) for k in KINDS}}
        return {"groups": groups, "total": total, "bricked": self.bricked, "peak_rss_mb": self.peak_rss_mb,
                "findings": [vars(f) for f in self.findings.values()]}


class Budget:
    """A group's share of the fuzz time: ``spent()`` once it is used up (then examples are no-ops)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start: float | None = None

    def spent(self) -> bool:
        now = time.monotonic()
        if self.start is None:
            self.start = now
        return now - self.start > self.seconds


_TARGET: list[Target] = []


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    t = Target(tmp_path_factory.mktemp("fuzz"))
    _TARGET.append(t)
    yield t
    t.close()


def budget(weight: float) -> Budget:
    """A group's time: its weight's share of KAPI_FUZZ_SECONDS (weights sum to about 1)."""
    return Budget(TOTAL_SECONDS * weight)


def examples(n: int) -> int:
    return max(1, int(n * EXAMPLES_SCALE))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _TARGET:
        return
    summary = _TARGET[0].summary()
    out = os.environ.get("KAPI_FUZZ_REPORT") or str(_TARGET[0].base / "fuzz-summary.json")
    Path(out).write_text(json.dumps(summary, indent=1, default=str))
    tr = terminalreporter
    tr.section("kapi fuzz figures (issue 10)")
    tr.write_line(f"{'group':<12}{'sent':>7}" + "".join(f"{k:>11}" for k in KINDS))
    for g, row in summary["groups"].items():
        tr.write_line(f"{g:<12}{row['sent']:>7}" + "".join(f"{row[k]:>11}" for k in KINDS))
    t = summary["total"]
    tr.write_line(f"{'total':<12}{t['sent']:>7}" + "".join(f"{t[k]:>11}" for k in KINDS))
    tr.write_line(f"peak server RSS {summary['peak_rss_mb']} MB; bricked data dirs: {summary['bricked'] or 'none'}")
    for f in summary["findings"]:
        tr.write_line(f"- [{f['group']}] {f['kind']} {f['status'] or ''}: {f['detail'][:200]}")
        tr.write_line(f"    {json.dumps(f['request'])[:600]}")
    tr.write_line(f"figures written to {out}")
