"""Shared parts of the HTTP benchmarks: server processes, a bare hypercorn baseline, a load generator.

``python bench/_common.py bare --certfile C --keyfile K --url-file F`` runs the
bare baseline server on its own (the benchmarks start it that way).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import multiprocessing
import os
import queue
import secrets
import signal
import ssl
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
NAME_PLACEHOLDER = b"@NAME@"

# The bare server answers with bodies of about the size of a small ConfigMap.
BARE_GET_BODY = (b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bench-get","namespace":"default",'
                 b'"resourceVersion":"1"},"data":{"key":"value"}}')
BARE_LIST_PATH = "/bench-list"  # with --list-bytes: a large pre-built list body, as a LIST of many pods
BARE_LIST_CHUNK = 1 << 20  # sent in chunks of this size, as kapi sends list bodies
BARE_CREATED_BODY = (b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"created","namespace":"default",'
                     b'"resourceVersion":"2"},"data":{"key":"value"}}')


# ---------------------------------------------------------------- server processes


@dataclass
class Server:
    """A running server process and how to reach it."""

    proc: subprocess.Popen[bytes]
    url: str
    ca_file: Path
    token: str
    log: Path
    ready_s: float  # seconds from process start to the first "ok" from /readyz

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that verifies the server against its CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """One HTTPS request with the bearer token; returns (status, body)."""
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server process has used so far."""
        return process_cpu_seconds(self.proc.pid)


def process_rss_bytes(pid: int) -> int:
    """Resident set size of one process (VmRSS), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of one process, from /proc."""
    # The command name (field 2) may hold spaces, so split after its closing parenthesis.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time all cores have spent busy since boot (steal included: it was not ours to use)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _readyz_ok(url: str) -> bool:
    """Whether ``url/readyz`` answers 200 ``ok`` right now."""
    # Readiness is polled without verifying the certificate: on a first start the CA
    # is only written by the server itself, and only the timing matters here.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url + "/readyz", context=ctx, timeout=5) as resp:
            return resp.status == 200 and resp.read().strip() == b"ok"
    except (OSError, urllib.error.URLError):
        return False


def _wait(proc: subprocess.Popen[bytes], log: Path, deadline: float, done: Callable[[], bool]) -> None:
    """Poll ``done`` every few milliseconds; raise if the process dies or the deadline passes."""
    while not done():
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"server did not become ready in time:\n{log.read_text()[-4000:]}")
        time.sleep(0.005)


def _read_kubeconfig(path: Path) -> dict[str, Any] | None:
    """The kubeconfig, or None while it is missing or still being written."""
    import yaml

    try:
        cfg = yaml.safe_load(path.read_text())
        cfg["clusters"][0]["cluster"]["server"]  # noqa: B018 - fails on a half-written file
        return cfg
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return None


def start_kapi(data_dir: Path, *flags: str, timeout_s: float = 300.0, env: dict[str, str] | None = None) -> Server:
    """Start ``kapi serve`` on a free port and return once /readyz answers ok (``env``: its whole environment)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    kubeconfig = data_dir / "admin.kubeconfig"
    kubeconfig.unlink(missing_ok=True)  # a restart must not read the previous run's port
    log = data_dir / f"server-{time.time_ns()}.log"
    cmd = [sys.executable, "-m", "kapi", "serve", "--data-dir", str(data_dir), "--secure-port", "0",
           "--shutdown-delay-duration", "0", "--log-level", "warning", *flags]
    with open(log, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = started + timeout_s
    holder: dict[str, Any] = {}

    def have_kubeconfig() -> bool:
        cfg = _read_kubeconfig(kubeconfig)
        if cfg is not None:
            holder["cfg"] = cfg
        return cfg is not None

    _wait(proc, log, deadline, have_kubeconfig)
    url = holder["cfg"]["clusters"][0]["cluster"]["server"]
    _wait(proc, log, deadline, partial(_readyz_ok, url))
    ready_s = time.monotonic() - started
    return Server(proc, url, data_dir / "pki" / "ca.crt", holder["cfg"]["users"][0]["user"]["token"], log, ready_s)


def start_bare(certfile: Path, keyfile: Path, ca_file: Path, work_dir: Path, timeout_s: float = 60.0,
               list_bytes: int = 0) -> Server:
    """Start the bare hypercorn baseline in its own process, with the given certificate and key.

    With ``list_bytes``, GET ``BARE_LIST_PATH`` answers a pre-built JSON body of that size.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    url_file = work_dir / "url"
    url_file.unlink(missing_ok=True)
    log = work_dir / "bare.log"
    cmd = [sys.executable, str(Path(__file__).resolve()), "bare", "--certfile", str(certfile),
           "--keyfile", str(keyfile), "--url-file", str(url_file), "--list-bytes", str(list_bytes)]
    with open(log, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    deadline = started + timeout_s
    _wait(proc, log, deadline, url_file.exists)
    url = url_file.read_text().strip()
    _wait(proc, log, deadline, partial(_readyz_ok, url))
    return Server(proc, url, ca_file, "unused", log, time.monotonic() - started)


def stop(server: Server) -> int:
    """SIGTERM, then SIGKILL after 15 s; returns the exit code (a server that died on its own shows its log)."""
    if server.proc.poll() is not None:
        print(f"server {server.url} had exited with {server.proc.returncode}; its log ends:\n"
              f"{server.log.read_text()[-4000:]}", file=sys.stderr)
    else:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
    return server.proc.returncode


# ---------------------------------------------------------------- the bare baseline server


async def lifespan(receive: Callable[[], Awaitable[dict[str, Any]]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """An ASGI app's lifespan protocol: start-up and shutdown, each acknowledged."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def bare_app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """ASGI app: fixed JSON for GET, 201 and a small JSON for POST, ``ok`` for /readyz."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    if scope["type"] != "http":
        return
    # Read the whole body, as a real server must before answering.
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    if scope["path"] == "/readyz":
        status, body, ctype = 200, b"ok", b"text/plain; charset=utf-8"
    elif scope["method"] == "POST":
        status, body, ctype = 201, BARE_CREATED_BODY, b"application/json"
    else:
        status, body, ctype = 200, BARE_GET_BODY, b"application/json"
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def big_body(size: int) -> list[bytes]:
    """A JSON list body of exactly ``size`` bytes (pods from the fixture), cut into chunks of about a megabyte."""
    item = json.dumps(json.loads((REPO / "tests" / "fixtures" / "pod.json").read_text()),
                      separators=(",", ":")).encode()
    head, tail = b'{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[', b"]}"
    room = max(0, size - len(head) - len(tail))
    items = b",".join([item] * (room // (len(item) + 1) + 1))[:room]
    body = head + items + tail
    return [body[i:i + BARE_LIST_CHUNK] for i in range(0, len(body), BARE_LIST_CHUNK)]


def make_bare_list_app(chunks: list[bytes]) -> Callable[..., Awaitable[None]]:
    """``bare_app``, plus GET ``BARE_LIST_PATH`` streaming ``chunks`` as kapi streams a large LIST."""
    async def app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                  send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope["path"] != BARE_LIST_PATH:
            await bare_app(scope, receive, send)
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        # No content-length: chunked, as kapi sends its list bodies.
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


async def _serve_bare(certfile: str, keyfile: str, url_file: str, list_bytes: int = 0) -> None:
    """Serve ``bare_app`` with the HTTP settings kapi uses, until SIGTERM/SIGINT."""
    await serve_app(make_bare_list_app(big_body(list_bytes)) if list_bytes else bare_app, certfile, keyfile, url_file)


async def serve_app(app: Any, certfile: str, keyfile: str, url_file: str) -> None:
    """Serve an ASGI app over TLS with the HTTP settings kapi uses, until SIGTERM/SIGINT; its URL is
    written to ``url_file`` once it listens."""
    import trio
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio import serve

    conf = HypercornConfig()
    conf.bind = ["127.0.0.1:0"]
    conf.certfile, conf.keyfile = certfile, keyfile
    conf.alpn_protocols = ["h2", "http/1.1"]
    conf.keep_alive_max_requests = 1_000_000
    conf.accesslog = None
    conf.h2_max_concurrent_streams = 1000
    stopping = trio.Event()

    async def on_signal() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                stopping.set()
                return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_signal)
        binds = await nursery.start(partial(serve, app, conf, shutdown_trigger=stopping.wait))
        tmp = Path(url_file + ".tmp")
        tmp.write_text(binds[0])
        tmp.rename(url_file)  # atomic: the parent never reads half a URL


# ---------------------------------------------------------------- the load generator


@dataclass(frozen=True, slots=True)
class Load:
    """What to send: one request shape, from ``concurrency`` keep-alive connections over ``processes``."""

    url: str
    path: str
    ca_file: str
    token: str
    method: str = "GET"
    body: bytes | None = None  # NAME_PLACEHOLDER, if present, becomes a unique name per request
    expect: int = 200
    concurrency: int = 1
    processes: int = 1
    duration_s: float = 5.0
    total: int | None = None  # stop after this many requests instead of after duration_s
    name_prefix: str = "bench"
    warmup_requests: int = 3  # per connection, before the measured window


@dataclass(slots=True)
class LoadResult:
    """One measured point."""

    requests: int
    errors: int
    seconds: float
    rate: float
    p50_ms: float
    p99_ms: float
    client_cpu_pct: float  # all client processes together, percent of one core
    server_cpu_pct: float  # the server process, percent of one core
    other_cpu_pct: float  # everything else on the machine meanwhile: other work skews the figures
    concurrency: int
    processes: int
    first_error: str = ""

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict, rounded for reading."""
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


@dataclass(slots=True)
class _WorkerResult:
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    latencies: list[float] = field(default_factory=list)
    first_error: str = ""


def _split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal non-negative integers."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


async def _drive(load: Load, worker: int, connections: int, quota: int | None, out: Any,
                 go: Any) -> _WorkerResult:
    """One client process: ``connections`` tasks, each on its own keep-alive connection."""
    import httpx
    import trio

    result = _WorkerResult()
    ctx = ssl.create_default_context(cafile=load.ca_file)
    headers = {"Authorization": f"Bearer {load.token}", "Accept": "application/json",
               "Content-Type": "application/json"}
    # One client per connection: a single httpx pool holding many connections costs the
    # client more CPU per request the more connections it holds (measured: 64 connections
    # in one pool gave a fifth of the rate of 16), which would measure the client, not the server.
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    counter = 0
    remaining = [quota]

    def next_body() -> bytes | None:
        nonlocal counter
        counter += 1
        if load.body is None or NAME_PLACEHOLDER not in load.body:
            return load.body
        name = f"{load.name_prefix}-{worker}-{counter}".encode()
        return load.body.replace(NAME_PLACEHOLDER, name)

    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(httpx.AsyncClient(
            base_url=load.url, verify=ctx, http2=False, limits=limits, headers=headers, timeout=120))
            for _ in range(connections)]

        async def one(client: httpx.AsyncClient, record: bool) -> None:
            started = time.perf_counter()
            try:
                resp = await client.request(load.method, load.path, content=next_body())
                ok, detail = resp.status_code == load.expect, f"{resp.status_code} {resp.text[:300]}"
            except httpx.HTTPError as err:
                ok, detail = False, repr(err)
            if not record:
                return
            if ok:
                result.requests += 1
                result.latencies.append(time.perf_counter() - started)
            else:
                result.errors += 1
                result.first_error = result.first_error or detail

        async def warm(client: httpx.AsyncClient) -> None:
            for _ in range(load.warmup_requests):
                await one(client, False)

        async with trio.open_nursery() as nursery:  # opens every connection before the window
            for client in clients:
                nursery.start_soon(warm, client)
        out.put((worker, "ready"))
        await trio.to_thread.run_sync(go.wait)

        cpu0, t0 = time.process_time(), time.perf_counter()
        deadline = t0 + load.duration_s

        async def loop(client: httpx.AsyncClient) -> None:
            while True:
                if remaining[0] is not None:
                    if remaining[0] <= 0:
                        return
                    remaining[0] -= 1
                elif time.perf_counter() >= deadline:
                    return
                await one(client, True)

        async with trio.open_nursery() as nursery:
            for client in clients:
                nursery.start_soon(loop, client)
        result.seconds = time.perf_counter() - t0
        result.cpu_s = time.process_time() - cpu0
    return result


def _worker_main(load: Load, worker: int, connections: int, quota: int | None, out: Any, go: Any) -> None:
    """Entry point of a client process."""
    import trio

    try:
        out.put((worker, trio.run(_drive, load, worker, connections, quota, out, go)))
    except BaseException as err:  # the parent must hear of it instead of waiting forever
        out.put((worker, RuntimeError(f"client {worker}: {err!r}")))
        raise


def _collect(out: Any, procs: list[Any], timeout_s: float) -> Any:
    """The next message from the client processes; raise if one died or none came in time."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            _, got = out.get(timeout=0.5)
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a client process died") from None
            if time.monotonic() > deadline:
                raise RuntimeError("the client processes did not answer in time") from None
            continue
        if isinstance(got, BaseException):
            raise RuntimeError(f"a client process failed: {got!r}")
        return got


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def run_load(load: Load, server_pid: int | None = None) -> LoadResult:
    """Run one load point from ``load.processes`` client processes; measure rate, latency and CPU."""
    processes = max(1, min(load.processes, load.concurrency))
    # A fresh tag per run keeps created names unique when the same load runs again.
    load = dataclasses.replace(load, name_prefix=f"{load.name_prefix}-{secrets.token_hex(3)}")
    ctx = multiprocessing.get_context("spawn")  # a clean interpreter per client, no inherited state
    out, go = ctx.Queue(), ctx.Event()
    connections = _split(load.concurrency, processes)
    quotas: list[int | None] = (_split(load.total, processes) if load.total is not None
                                else [None] * processes)
    procs = [ctx.Process(target=_worker_main, args=(load, i, connections[i], quotas[i], out, go), daemon=True)
             for i in range(processes)]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            _collect(out, procs, 300)  # every client has its connections open
        go.set()
        server_cpu0, busy0 = (process_cpu_seconds(server_pid) if server_pid else 0.0), machine_busy_seconds()
        t0 = time.perf_counter()
        limit = load.duration_s + 600 if load.total is None else 3600
        results: list[_WorkerResult] = [_collect(out, procs, limit) for _ in procs]
        wall = time.perf_counter() - t0
        server_cpu = (process_cpu_seconds(server_pid) - server_cpu0) if server_pid else 0.0
        busy = machine_busy_seconds() - busy0
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    seconds = max(r.seconds for r in results)
    latencies = sorted(x for r in results for x in r.latencies)
    requests = sum(r.requests for r in results)
    # Each client's own window is the accurate one; the sum of per-client rates is the total rate.
    rate = sum(r.requests / r.seconds for r in results if r.seconds)
    return LoadResult(
        requests=requests,
        errors=sum(r.errors for r in results),
        seconds=seconds,
        rate=rate,
        p50_ms=_percentile(latencies, 0.50) * 1000,
        p99_ms=_percentile(latencies, 0.99) * 1000,
        client_cpu_pct=100 * sum(r.cpu_s for r in results) / seconds if seconds else 0.0,
        server_cpu_pct=100 * server_cpu / wall if wall else 0.0,
        other_cpu_pct=(max(0.0, 100 * (busy - server_cpu - sum(r.cpu_s for r in results)) / wall)
                       if wall else 0.0),
        concurrency=load.concurrency,
        processes=processes,
        first_error=next((r.first_error for r in results if r.first_error), ""),
    )


def configmap_body(name: str | bytes = NAME_PLACEHOLDER) -> bytes:
    """A small ConfigMap for POST; the name placeholder is replaced per request."""
    text = name.decode() if isinstance(name, bytes) else name
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": text},
                       "data": {"key": "value"}}, separators=(",", ":")).encode()


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write the results file (creating its folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def best_rate(fn: Callable[[], object], seconds: float, repeat: int) -> float:
    """Calls per second of ``fn``, the best of ``repeat`` timed rounds of about ``seconds``."""
    n = 1
    while True:  # size a round
        start = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - start
        if took > seconds / 4:
            break
        n *= 2
    per_round = max(1, int(n * seconds / took))
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(per_round):
            fn()
        best = max(best, per_round / (time.perf_counter() - start))
    return best


def median(values: list[float]) -> float:
    """The median, 0 for no values."""
    return statistics.median(values) if values else 0.0


def main(argv: list[str] | None = None) -> int:
    """``bare``: run the baseline server (the benchmarks start it as a separate process)."""
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    bare = sub.add_parser("bare", help="run the bare hypercorn baseline server")
    bare.add_argument("--certfile", required=True)
    bare.add_argument("--keyfile", required=True)
    bare.add_argument("--url-file", required=True, help="the bound https URL is written here once listening")
    bare.add_argument("--list-bytes", type=int, default=0, help=f"serve a JSON body of this size at {BARE_LIST_PATH}")
    args = parser.parse_args(argv)
    import trio

    trio.run(_serve_bare, args.certfile, args.keyfile, args.url_file, args.list_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
