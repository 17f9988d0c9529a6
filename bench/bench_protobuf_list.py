"""LIST of N realistic pods from the watch cache: JSON against protobuf, bytes and time.

Run ``python bench/bench_protobuf_list.py`` from the repository root (100,000
pods; ``--quick`` for 2,000). One ``kapi serve`` (sqlite) is loaded through the
API with the pods of ``bench_cache.py`` (the realistic pod fixture, each with its
own name, node and labels). Then, over one kept-alive HTTPS connection, a client
that only counts bytes reads LIST of everything at resourceVersion=0: once as
JSON (a warm-up), once as protobuf (the first: the server encodes every pod's
message), then JSON and protobuf (cached messages) interleaved ``--repeat``
times. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import ssl
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import RESULTS, Server, process_rss_bytes, start_kapi, stop, write_json  # noqa: E402
from _workload import Layout, Target, load_pods  # noqa: E402

JSON_TYPE = "application/json"
PROTOBUF_TYPE = "application/vnd.kubernetes.protobuf"
EVERYTHING = "/api/v1/pods?resourceVersion=0"


# ---------------------------------------------------------------- a client that counts bytes


@dataclass(slots=True)
class Fetched:
    """One response read to its end: status, body bytes (framing excluded), seconds, the body if kept."""

    status: int
    content_type: str
    body_bytes: int
    seconds: float
    body: bytes = b""


class KeptAlive:
    """One HTTP/1.1 TLS connection; GETs read into one reused buffer, so the client costs little per byte."""

    def __init__(self, target: Target) -> None:
        host, port = target.host_port()
        self.host, self.port, self.token = host, port, target.token
        self.ctx = ssl.create_default_context(cafile=target.ca_file)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.buf = bytearray(1 << 20)
        self.pending = b""  # bytes read past the end of the previous response (there should be none)
        self.sock = self._connect()

    def _connect(self) -> ssl.SSLSocket:
        raw = socket.create_connection((self.host, self.port))
        return self.ctx.wrap_socket(raw, server_hostname=self.host)

    def reopen(self) -> None:
        """A fresh connection: the server closes one left idle for a few seconds (its keep-alive timeout)."""
        self.sock.close()
        self.sock = self._connect()

    def close(self) -> None:
        self.sock.close()

    def get(self, path: str, accept: str, *, keep: bool = False) -> Fetched:
        """GET ``path`` and read the whole body (Content-Length or chunked); the body only if ``keep``."""
        request = (f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                   f"Authorization: Bearer {self.token}\r\nAccept: {accept}\r\n\r\n").encode()
        view = memoryview(self.buf)
        started = time.perf_counter()
        self.sock.sendall(request)
        head = self.pending
        while b"\r\n\r\n" not in head:
            n = self.sock.recv_into(self.buf)
            if not n:
                raise RuntimeError(f"GET {path}: the connection closed before the response head")
            head += bytes(view[:n])
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        body = _Body(keep)
        if "content-length" in headers:
            body.length_left = int(headers["content-length"])
            body.chunked = False
        else:
            if headers.get("transfer-encoding", "").lower() != "chunked":
                raise RuntimeError(f"GET {path}: neither Content-Length nor chunked: {headers}")
        tail = body.feed(memoryview(rest))
        while not body.done:
            n = self.sock.recv_into(self.buf)
            if not n:
                raise RuntimeError(f"GET {path}: the connection closed inside the body")
            tail = body.feed(view[:n])
        seconds = time.perf_counter() - started
        self.pending = bytes(tail)
        if self.pending:
            raise RuntimeError(f"GET {path}: {len(self.pending)} bytes past the end of the response")
        return Fetched(status, headers.get("content-type", ""), body.total, seconds, b"".join(body.kept))


class _Body:
    """The body of one response, fed as it arrives: counts its bytes and, if asked, keeps them."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.kept: list[bytes] = []
        self.total = 0
        self.chunked = True
        self.length_left = 0  # Content-Length left, or data left in the current chunk
        self.skip = 0  # the CRLF after a chunk's data
        self.line = b""  # a chunk-size line (or trailer line) read so far
        self.last_chunk = False  # the zero-size chunk was seen: trailer lines up to an empty one
        self.done = False

    def feed(self, data: memoryview) -> memoryview:
        """Consume ``data``; return what lies past the end of the body."""
        pos, end = 0, len(data)
        if not self.chunked:
            take = min(self.length_left, end)
            self._data(data[:take])
            self.length_left -= take
            self.done = self.length_left == 0
            return data[take:]
        while pos < end and not self.done:
            if self.length_left:
                take = min(self.length_left, end - pos)
                self._data(data[pos:pos + take])
                self.length_left -= take
                pos += take
                if not self.length_left:
                    self.skip = 2
            elif self.skip:
                take = min(self.skip, end - pos)
                self.skip -= take
                pos += take
            else:
                at = bytes(data[pos:min(end, pos + 64)]).find(b"\n")  # a size line is short
                if at < 0:
                    self.line += bytes(data[pos:min(end, pos + 64)])
                    pos = min(end, pos + 64)
                    continue
                line = (self.line + bytes(data[pos:pos + at])).strip()
                self.line = b""
                pos += at + 1
                if self.last_chunk:
                    self.done = not line
                    continue
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.last_chunk = True
                self.length_left = size
        return data[pos:]

    def _data(self, part: memoryview) -> None:
        self.total += len(part)
        if self.keep:
            self.kept.append(bytes(part))


# ---------------------------------------------------------------- checks on the bodies


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def protobuf_items(body: bytes) -> tuple[str, int]:
    """The kind in the envelope and the number of items (field 2) of the list message, by walking its fields."""
    from kapi.encoding import protobuf

    _, kind, raw = protobuf.unwrap(body)
    count = pos = 0
    while pos < len(raw):
        key, pos = _varint(raw, pos)
        if key & 7 != 2:
            raise RuntimeError(f"unexpected wire type {key & 7} in the list message")
        size, pos = _varint(raw, pos)
        pos += size
        count += (key >> 3) == 2
    if pos != len(raw):
        raise RuntimeError("the list message ends inside a field")
    return kind, count


def json_names(body: bytes) -> list[str]:
    """The names of the items of a JSON list body."""
    import orjson  # a tenth of the time of json for a body of hundreds of megabytes

    return [item["metadata"]["name"] for item in orjson.loads(body)["items"]]


def verify_decode(body: bytes, names: list[str]) -> dict[str, Any]:
    """Decode the whole protobuf list with the schema; its items must be the JSON list's pods, in order."""
    from kapi.encoding import protobuf
    from kapi.object.schema import load_builtin

    started = time.perf_counter()
    decoded = protobuf.decode_object(load_builtin(), body)
    seconds = time.perf_counter() - started
    got = [item["metadata"]["name"] for item in decoded["items"]]
    if decoded["kind"] != "PodList" or got != names:
        raise RuntimeError(f"protobuf LIST decoded to {decoded['kind']} with {len(got)} items, "
                           f"not the JSON list's {len(names)} pods")
    return {"items": len(got), "decode_s": round(seconds, 2)}


# ---------------------------------------------------------------- the run


def fetch(conn: KeptAlive, accept: str, *, keep: bool = False) -> Fetched:
    """LIST everything at rv=0 as ``accept``; raise unless 200 in that media type."""
    got = conn.get(EVERYTHING, accept, keep=keep)
    if got.status != 200 or not got.content_type.startswith(accept):
        raise RuntimeError(f"LIST as {accept}: {got.status} {got.content_type} {got.body[:300]!r}")
    return got


def measure(server: Server, layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    """JSON warm-up, the first protobuf LIST, then JSON and cached protobuf interleaved."""
    conn = KeptAlive(Target.of(server))
    try:
        warm = fetch(conn, JSON_TYPE, keep=True)
        names = json_names(warm.body)
        if len(names) != layout.pods:
            raise RuntimeError(f"the JSON LIST returned {len(names)} pods, not {layout.pods}")
        del warm
        conn.reopen()  # the names took seconds to read at 100,000 pods
        rss_before = process_rss_bytes(server.proc.pid)
        first = fetch(conn, PROTOBUF_TYPE, keep=True)
        rss_after = process_rss_bytes(server.proc.pid)
        kind, items = protobuf_items(first.body)
        if (kind, items) != ("PodList", layout.pods):
            raise RuntimeError(f"the protobuf LIST is a {kind} of {items} items, not {layout.pods} pods")
        check: dict[str, Any] = {"items_counted": items}
        if layout.pods <= args.decode_limit:
            check.update(verify_decode(first.body, names))
        else:
            check["decode"] = f"skipped: more than {args.decode_limit} pods"
        first_body = first.body
        first.body = b""
        conn.reopen()
        # Interleaved, so that drift on the machine touches both formats alike.
        js: list[Fetched] = []
        pb: list[Fetched] = []
        for _ in range(args.repeat):
            js.append(fetch(conn, JSON_TYPE))
            pb.append(fetch(conn, PROTOBUF_TYPE, keep=len(pb) == 0))
        if pb[0].body != first_body:
            raise RuntimeError("the cached protobuf LIST differs from the first")
        pb[0].body = b""
    finally:
        conn.close()
    json_s = statistics.median(f.seconds for f in js)
    pb_s = statistics.median(f.seconds for f in pb)
    json_bytes, pb_bytes = js[0].body_bytes, first.body_bytes
    return {
        "items": layout.pods,
        "json": {"bytes": json_bytes, "bytes_per_pod": round(json_bytes / layout.pods, 1),
                 "seconds": [round(f.seconds, 4) for f in js], "median_s": round(json_s, 4),
                 "mb_per_s": round(json_bytes / json_s / 1e6, 1)},
        "protobuf_first": {"bytes": pb_bytes, "seconds": round(first.seconds, 4),
                           "mb_per_s": round(pb_bytes / first.seconds / 1e6, 1),
                           "rss_growth": rss_after - rss_before},
        "protobuf_cached": {"bytes": pb[0].body_bytes, "bytes_per_pod": round(pb[0].body_bytes / layout.pods, 1),
                            "seconds": [round(f.seconds, 4) for f in pb], "median_s": round(pb_s, 4),
                            "mb_per_s": round(pb[0].body_bytes / pb_s / 1e6, 1)},
        "ratios": {"protobuf_over_json_bytes": round(pb_bytes / json_bytes, 3),
                   "cached_protobuf_over_json_s": round(pb_s / json_s, 3),
                   "first_over_cached_protobuf_s": round(first.seconds / pb_s, 2)},
        "check": check,
    }


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    layout = Layout(args.pods, args.nodes, args.namespaces)
    server = start_kapi(root / "kapi", "--storage-backend", "sqlite", timeout_s=600)
    try:
        for k in range(layout.namespaces):
            status, body = server.request("POST", "/api/v1/namespaces", json.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{k}"}}).encode())
            if status != 201:
                raise RuntimeError(f"creating ns-{k}: {status} {body[:300]!r}")
        print(f"loading {layout.pods} pods ...", flush=True)
        load = load_pods(server, layout, args.clients, args.concurrency)
        print(f"  {load['creates_per_s']:.0f} creates/s in {load['seconds']:.0f} s", flush=True)
        return {"load": load, "list": measure(server, layout, args)}
    finally:
        stop(server)


def table(r: dict[str, Any]) -> list[str]:
    """The Markdown table of one run."""
    lst = r["list"]
    js, first, cached, ratio = lst["json"], lst["protobuf_first"], lst["protobuf_cached"], lst["ratios"]
    n = lst["items"]
    return [
        f"| LIST {n} pods, rv=0 | bytes | bytes/pod | time (median) | MB/s |",
        "|---|---:|---:|---:|---:|",
        f"| JSON | {js['bytes'] / 1e6:.1f} MB | {js['bytes_per_pod']:.0f} | {js['median_s'] * 1000:.0f} ms | "
        f"{js['mb_per_s']:.0f} |",
        f"| protobuf, first (encodes every pod) | {first['bytes'] / 1e6:.1f} MB | {first['bytes'] / n:.0f} | "
        f"{first['seconds'] * 1000:.0f} ms (once) | {first['mb_per_s']:.0f} |",
        f"| protobuf, cached messages | {cached['bytes'] / 1e6:.1f} MB | {cached['bytes_per_pod']:.0f} | "
        f"{cached['median_s'] * 1000:.0f} ms | {cached['mb_per_s']:.0f} |",
        "",
        "| ratio | figure |",
        "|---|---:|",
        f"| protobuf bytes ÷ JSON bytes | {ratio['protobuf_over_json_bytes']:.3f} |",
        f"| protobuf (cached) time ÷ JSON time | {ratio['cached_protobuf_over_json_s']:.3f} |",
        f"| first ÷ cached protobuf time | {ratio['first_over_cached_protobuf_s']:.2f} |",
        f"| server RSS growth over the first protobuf LIST | {first['rss_growth'] / 1e6:.0f} MB "
        f"({first['rss_growth'] / n:.0f} B/pod) |",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=None, help="pods to hold (default 100000, 2000 with --quick)")
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--clients", type=int, default=2, help="client processes while loading")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent creates while loading, in all")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved JSON and cached protobuf LISTs")
    parser.add_argument("--decode-limit", type=int, default=2000,
                        help="decode the whole protobuf list with the schema only up to this many pods")
    parser.add_argument("--quick", action="store_true", help="2,000 pods")
    parser.add_argument("--dir", default=None, help="where the temporary data directory goes")
    parser.add_argument("--output", type=Path, default=RESULTS / "protobuf_list.json", help="JSON results file")
    args = parser.parse_args(argv)
    args.pods = args.pods if args.pods is not None else (2000 if args.quick else 100_000)
    if args.pods < 1 or args.repeat < 1:
        parser.error("need --pods ≥ 1 and --repeat ≥ 1")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kapi-bench-pblist-", dir=args.dir) as tmp:
        result = run(args, Path(tmp))
    result = {"config": {"pods": args.pods, "nodes": args.nodes, "namespaces": args.namespaces,
                         "repeat": args.repeat, "quick": args.quick, "cpus": os.cpu_count(),
                         "python": platform.python_version(),
                         "client": "HTTP/1.1, one kept-alive TLS connection, body bytes counted"},
              **result, "elapsed_s": round(time.monotonic() - started, 1)}
    write_json(args.output, result)
    print()
    print("\n".join(table(result)))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
