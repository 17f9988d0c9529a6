"""Hypothesis strategies for the fuzz suite (issue 10): objects, YAML, protobuf, selectors, options,
paths, patches and headers, each mostly plausible with a few things wrong.

Bodies are built as Python values and serialised here; what a Python value cannot hold (a lone
surrogate's escape, NaN, 1e400, nesting 100,000 deep, invalid UTF-8) is spliced into the JSON text
through a placeholder.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable
from urllib.parse import quote

from hypothesis import strategies as st

NS = "fuzz"
HOLE = "\x00hole\x00"


@dataclass(frozen=True)
class Kind:
    resource: str
    group_version: str  # "v1" for the core group
    kind: str
    namespaced: bool
    template: Callable[[str], dict[str, Any]]

    def prefix(self) -> str:
        return "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"

    def collection(self, ns: str = NS, watch: bool = False) -> str:
        w = "/watch" if watch else ""
        scope = f"/namespaces/{ns}" if self.namespaced else ""
        return f"{self.prefix()}{w}{scope}/{self.resource}"

    def item(self, name: str, ns: str = NS) -> str:
        return f"{self.collection(ns)}/{name}"


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": {"app": "fuzz", "tier": "a"}, "annotations": {"note": "x"}}


def _pod_spec() -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "busybox", "command": ["sh"], "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "b"}], "resources": {"limits": {"cpu": "100m"}}}],
            "restartPolicy": "Always", "nodeSelector": {"k": "v"}, "tolerations": [{"key": "k", "operator": "Exists"}]}


def _template(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": _pod_spec()}


KINDS: list[Kind] = [
    Kind("configmaps", "v1", "ConfigMap", True,
         lambda n: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(n), "data": {"k": "v"},
                    "binaryData": {"b": "aGVsbG8="}}),
    Kind("secrets", "v1", "Secret", True,
         lambda n: {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(n), "type": "Opaque",
                    "data": {"k": "dg=="}, "stringData": {"s": "v"}}),
    Kind("pods", "v1", "Pod", True,
         lambda n: {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(n), "spec": _pod_spec()}),
    Kind("services", "v1", "Service", True,
         lambda n: {"apiVersion": "v1", "kind": "Service", "metadata": _meta(n),
                    "spec": {"selector": {"app": "fuzz"}, "type": "ClusterIP",
                             "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
    Kind("events", "v1", "Event", True,
         lambda n: {"apiVersion": "v1", "kind": "Event", "metadata": _meta(n), "reason": "R", "message": "m",
                    "type": "Normal", "count": 1, "firstTimestamp": "2026-01-01T00:00:00Z",
                    "lastTimestamp": "2026-01-01T00:00:01Z",
                    "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS}}),
    Kind("serviceaccounts", "v1", "ServiceAccount", True,
         lambda n: {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(n),
                    "secrets": [{"name": "s"}], "automountServiceAccountToken": True}),
    Kind("nodes", "v1", "Node", False,
         lambda n: {"apiVersion": "v1", "kind": "Node", "metadata": _meta(n),
                    "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]},
                    "status": {"capacity": {"cpu": "2", "memory": "1Gi"}}}),
    Kind("deployments", "apps/v1", "Deployment", True,
         lambda n: {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(n),
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "fuzz"}},
                             "template": _template({"app": "fuzz"})}}),
    Kind("jobs", "batch/v1", "Job", True,
         lambda n: {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(n),
                    "spec": {"backoffLimit": 1, "template": {"spec": {**_pod_spec(), "restartPolicy": "Never"}}}}),
    Kind("leases", "coordination.k8s.io/v1", "Lease", True,
         lambda n: {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": _meta(n),
                    "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15, "leaseTransitions": 0,
                             "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z"}}),
    Kind("events", "events.k8s.io/v1", "Event", True,
         lambda n: {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": _meta(n),
                    "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "c/x",
                    "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
                    "regarding": {"kind": "Pod", "name": "p", "namespace": NS}}),
    Kind("roles", "rbac.authorization.k8s.io/v1", "Role", True,
         lambda n: {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(n),
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    Kind("customresourcedefinitions", "apiextensions.k8s.io/v1", "CustomResourceDefinition", False,
         lambda n: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": f"{n}s.fuzz.example.com"},
                    "spec": {"group": "fuzz.example.com", "scope": "Namespaced",
                             "names": {"plural": f"{n}s", "singular": n, "kind": "F" + n.replace("-", "")},
                             "versions": [{"name": "v1", "served": True, "storage": True,
                                           "schema": {"openAPIV3Schema": {"type": "object",
                                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}),
]

# -- scalars and JSON values -------------------------------------------------------------------------

BIG_INTS = [2**31, 2**31 - 1, -2**31 - 1, 2**53 + 1, 2**63 - 1, 2**63, -2**63 - 1, 2**64, 10**30, -10**40]
SURROGATES = ["\ud800", "\udfff", "a\udbffb", "\udc00\ud800"]
#: JSON text no Python value dumps to: spliced in through HOLE.
RAW_JSON = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400", "-0", "0.0000000000000000000001",
            "123456789012345678901234567890123456789", "1" * 400, '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"',
            '"\\x41"', '"\\uZZZZ"', '{"a":1,"a":2}', "[1,]", "{,}", "01", "+1", ".5", "1.", "tru", "nul", "'s'",
            "\"\xff\xfe\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\""]


@lru_cache(maxsize=None)  # one strategy object: hypothesis caches its work per object
def names() -> st.SearchStrategy[str]:
    good = st.from_regex(r"\A[a-z][a-z0-9-]{0,14}[a-z0-9]\Z")
    odd = st.sampled_from(["", "-", "a" * 254, "a" * 64, "A", "a_b", "a.b", "..", ".", "a/b", "%2F", "ü", "a b",
                           "default", "kube-system", "\x00", "a\nb"])
    return st.one_of(good, good, good, odd)


@lru_cache(maxsize=None)  # one strategy object: hypothesis caches its work per object
def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from(BIG_INTS),
        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12), st.sampled_from(SURROGATES),
        st.sampled_from(["", "0", "true", "null", "2026-01-01T00:00:00Z", "2026-13-45T99:99:99Z", "1Gi", "100m",
                         "-1", "NaN", "a" * 300]))


@lru_cache(maxsize=None)  # one strategy object: hypothesis caches its work per object
def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    return st.recursive(scalars(), lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=max_leaves)


def deep(n: int, kind: str) -> str:
    """JSON nested ``n`` levels deep, as text."""
    if kind == "list":
        return "[" * n + "]" * n
    if kind == "map":
        return '{"a":' * n + "1" + "}" * n
    return '{"a":[' * n + "1" + "]}" * n


@lru_cache(maxsize=None)  # one strategy object: hypothesis caches its work per object
def raw_fragments() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(RAW_JSON),
                     st.builds(deep, st.sampled_from([64, 200, 1000, 10_000, 100_000]),
                               st.sampled_from(["list", "map", "mixed"])))


def dumps(value: Any, ascii_: bool = True) -> bytes:
    text = json.dumps(value, ensure_ascii=ascii_, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


# -- objects with things wrong ----------------------------------------------------------------------

META_FIELDS = ["name", "generateName", "namespace", "labels", "annotations", "ownerReferences", "finalizers",
               "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
               "deletionGracePeriodSeconds", "managedFields", "selfLink"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return obj


STRINGS = ["", "a" * 64, "a" * 254, "a" * 10_000, "A", "-a", "a.", "a/b", "x:y", "\u00fc", "\U0001F600", "\t", " ",
           "${x}", "../..", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456+05:30", "1Gi", "-1", "1e3", "0.5m",
           "default", "system:admin", "*", "%00", "\ud800"]


@lru_cache(maxsize=None)
def same_typed() -> dict[type, st.SearchStrategy[Any]]:
    """Values of each JSON type that stay that type but are odd (validation's and storage's turn)."""
    text = st.one_of(st.sampled_from(STRINGS), st.text(max_size=20))
    return {
        str: text,
        bool: st.booleans(),
        int: st.one_of(st.integers(-2**64, 2**64), st.sampled_from(BIG_INTS + [0, -1, 1])),
        float: st.floats(allow_nan=False, allow_infinity=False),
        dict: st.dictionaries(text, text, max_size=4),
        list: st.lists(text, max_size=4),
        type(None): st.none(),
    }


def wrong_objects(kind: Kind, name: str) -> st.SearchStrategy[tuple[bytes, dict[str, Any]]]:
    """A valid-looking object of ``kind`` with 0-3 values swapped for random ones (of any type, or of
    the type they had); its JSON bytes."""
    return mutations(kind.template(name))


@st.composite
def mutations(draw: st.DrawFn, original: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """``original`` (left untouched) with 0-3 values swapped for random ones; its JSON bytes."""
    obj = json.loads(json.dumps(original))
    obj.setdefault("metadata", {})
    raw: str | None = None
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        where = draw(st.sampled_from(["meta", "meta", "any", "any", "new"]))
        if where == "meta":
            path: tuple[Any, ...] = ("metadata", draw(st.sampled_from(META_FIELDS)))
            if draw(st.booleans()) and path[1] in ("labels", "annotations"):
                path += (draw(st.sampled_from(["app", "x", "a/b", "", "k" * 70])),)
            # An earlier swap may have made metadata a non-object: then there is no list inside to reach.
            if draw(st.booleans()) and path[1] in ("ownerReferences", "managedFields") and isinstance(
                    obj.get("metadata"), dict):
                obj["metadata"].setdefault(path[1], [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o",
                                                      "uid": "u", "controller": True}])
                if isinstance(obj["metadata"][path[1]], list) and obj["metadata"][path[1]]:
                    path += (0, draw(st.sampled_from(["apiVersion", "kind", "name", "uid", "controller",
                                                      "blockOwnerDeletion", "fieldsV1", "time", "manager"])))
        elif where == "any":
            path = draw(st.sampled_from(_paths(obj)[1:]))
        else:
            path = (draw(st.sampled_from(["spec", "status", "data", "metadata", "apiVersion", "kind", "x"])),)
        how = draw(st.sampled_from(["raw", "any", "any", "same", "same", "same"]))
        if how == "raw" and raw is None:
            value: Any = HOLE
            raw = draw(raw_fragments())
        elif how == "same":
            try:
                old = _get(obj, path)
            except (KeyError, IndexError, TypeError):
                old = ""
            value = draw(same_typed().get(type(old), same_typed()[str]))
        else:
            value = draw(json_values())
        try:
            obj = _set(obj, path, value)
        except (KeyError, IndexError, TypeError):
            pass
    text = dumps(obj, draw(st.booleans()))
    if raw is not None:
        text = text.replace(dumps(HOLE), raw.encode("utf-8", "surrogatepass"))
    return text, obj


POOL: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", [], {}, [1], {"a": 1}, {"a": "b"}, ["a"], "a" * 300,
                   "\ud800", "2026-01-01T00:00:00Z", "9" * 40] + BIG_INTS + STRINGS


def shuffled(original: dict[str, Any], seed: int) -> bytes:
    """``original`` with 0-3 values (chosen by ``seed``) replaced: by one of another type or one of the
    same type. Drawn from a seed, not from hypothesis, for objects read back from the server (their
    shape changes from run to run, which hypothesis must not see)."""
    import random
    rnd = random.Random(seed)
    obj = json.loads(json.dumps(original))
    for _ in range(rnd.choice([0, 1, 1, 1, 2, 3])):
        paths = _paths(obj)[1:]
        if not paths:
            break
        path = rnd.choice(paths)
        old = _get(obj, path)
        same = [v for v in POOL if type(v) is type(old)]
        value = rnd.choice(same) if same and rnd.random() < 0.5 else rnd.choice(POOL)
        _set(obj, path, copy_json(value))
    return dumps(obj, rnd.random() < 0.5)


def copy_json(v: Any) -> Any:
    return json.loads(json.dumps(v)) if isinstance(v, (dict, list)) else v


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


@lru_cache(maxsize=None)  # one strategy object: hypothesis caches its work per object
def whole_bodies() -> st.SearchStrategy[bytes]:
    """Bodies that are not an object at all: random JSON, truncated JSON, deep nesting, junk bytes."""
    return st.one_of(
        json_values(12).map(dumps),
        raw_fragments().map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.binary(max_size=64),
        st.sampled_from([b"", b" ", b"\n", b"{", b"}", b"[]", b"{}", b"null", b"\xef\xbb\xbf{}", b"{}\n{}", b"{} []",
                         b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}', b"\x00" * 10]),
    )


# -- YAML --------------------------------------------------------------------------------------------

YAML_VALUES = ["!!binary aGVsbG8=", "!!set {a, b}", "2001-12-14t21:59:43.10-05:00", "2002-12-14", "!!timestamp 2001-12-14",
               "!!float .nan", ".inf", "-.inf", "!!int 0x1F", "0o17", "1_000", "0b101", "!!str 1", "!!null ''", "~",
               "!!omap [a: 1, b: 2]", "!!pairs [a: 1, a: 2]", "!!python/object:os.system {}", "!!python/name:os.system ''",
               "!custom x", "!!map {1: a}", "{1: a}", "{true: x}", "{null: x}", "{[a]: b}", "{? {a: b} : c}",
               '"\\ud800"', '"\\U0010FFFF"', '"\\x00"', "*undefined", "&a [1, *a]", "12345678901234567890123456789",
               "[" * 500 + "]" * 500, "{a: " * 300 + "1" + "}" * 300, "!!binary '!!!notbase64'", "!!bool yes", "yes",
               "no", "on", "0x_1", "1e400", "=", "<<", "!!merge <<", "- a", "|\n  block", "'unterminated", "{a: 1",
               "\t"]


YAML_BODY = {
    "ConfigMap": "data:\n  k: {data}\n  k2: v\n",
    "Secret": "stringData:\n  k: {data}\n",
    "Pod": "spec:\n  containers:\n  - name: c\n    image: {data}\n",
    "Lease": "spec:\n  holderIdentity: {data}\n  renewTime: {time}\n  leaseDurationSeconds: {number}\n",
}
YAML_TIMES = ["2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00", "2026-01-01",
              "!!timestamp 2026-01-01", "2026-01-01T00:00:00.5+05:30", "'2026-01-01T00:00:00Z'"]


@st.composite
def yaml_bodies(draw: st.DrawFn, kind: str) -> bytes:
    """A YAML object of ``kind`` (ConfigMap, Secret, Pod, Lease) with tags, timestamps, anchors, aliases,
    odd keys, several documents, in some of its slots; the others hold plain values."""
    api = "coordination.k8s.io/v1" if kind == "Lease" else "v1"

    def slot(plain: str) -> str:
        return draw(st.sampled_from(YAML_VALUES)) if draw(st.integers(0, 2)) == 0 else plain

    name = slot(draw(st.from_regex(r"\Ay[a-z0-9]{1,10}\Z")))
    doc = (f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  labels: {{app: {slot('fuzz')}}}\n"
           f"  annotations: &ann {{note: {slot('x')}}}\n"
           + YAML_BODY[kind].format(data=slot("v"), time=draw(st.sampled_from(YAML_TIMES)), number=slot("15"))
           + f"x-copy: *ann\nx-extra: {slot('e')}\n")
    if draw(st.booleans()):
        # aliases: at most 6**levels expansions (bounded: an unbounded 'billion laughs' is a corpus matter)
        levels, fan = draw(st.integers(1, 4)), draw(st.integers(2, 6))
        lines = ["laughs:", "  l0: &l0 lol"]
        for i in range(1, levels + 1):
            lines.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan) + "]")
        doc += "\n".join(lines) + "\n"
    if draw(st.integers(0, 4)) == 0:
        doc += "<<: {merged: 1}\n"
    if draw(st.integers(0, 3)) == 0:
        doc = doc + "---\n" + draw(st.sampled_from([doc, "", "a: 1\n", "--- !!set {a}\n", "...\n"]))
    if draw(st.integers(0, 6)) == 0:
        doc = draw(st.sampled_from(["", "---\n", "~\n", "[]\n", "- a\n", "!!binary aGVsbG8=\n", "\"\\ud800\"\n",
                                    "\ufeffa: 1\n", "a: b: c\n", "%YAML 9.9\n---\na: 1\n", "%TAG ! tag:x,2000:\n---\n!a 1\n"]))
    body = doc.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 8)) == 0:  # bytes that are not UTF-8 at all
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from([b"\xff", b"\xbe", b"\x00", b"\xed\xa0\x80", b"\xc0\xaf"])) + body[at:]
    return body


# -- protobuf ----------------------------------------------------------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, wire: int, payload: bytes) -> bytes:
    key = _varint((num << 3) | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


@st.composite
def protobuf_messages(draw: st.DrawFn, depth: int = 0) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        num = draw(st.sampled_from([1, 2, 3, 4, 5, 8, 9, 11, 0, 536870911]))
        wire = draw(st.sampled_from([0, 1, 2, 2, 2, 3, 4, 5, 6, 7]))
        if wire == 0:
            payload = _varint(draw(st.integers(0, 2**64 - 1))) if draw(st.booleans()) else b"\xff" * 11
        elif wire == 1:
            payload = draw(st.binary(min_size=8, max_size=8))
        elif wire == 5:
            payload = draw(st.binary(min_size=4, max_size=4))
        elif wire == 2:
            payload = draw(protobuf_messages(depth + 1)) if depth < 3 and draw(st.booleans()) else draw(st.binary(max_size=24))
        else:
            payload = b""
        if wire == 2 and draw(st.integers(0, 6)) == 0:  # a length bigger than what follows
            parts.append(_varint((num << 3) | 2) + _varint(draw(st.sampled_from([len(payload) + 1, 2**31, 2**63]))) + payload)
        else:
            parts.append(_field(num, wire, payload))
    return b"".join(parts)


@st.composite
def protobuf_bodies(draw: st.DrawFn) -> bytes:
    """Garbage in the kube protobuf envelope (magic, runtime.Unknown), or none of it."""
    style = draw(st.sampled_from(["unknown", "unknown", "magic-junk", "junk", "deep"]))
    if style == "junk":
        return draw(st.binary(max_size=80))
    if style == "magic-junk":
        return b"k8s\x00" + draw(st.binary(max_size=80))
    if style == "deep":
        inner = b""
        for _ in range(draw(st.sampled_from([100, 1000, 5000]))):
            inner = _field(1, 2, inner)
        return b"k8s\x00" + _field(2, 2, inner)
    api = draw(st.sampled_from([b"v1", b"apps/v1", b"", b"\xff"]))
    kind = draw(st.sampled_from([b"ConfigMap", b"Pod", b"Secret", b"Status", b"", b"Nope"]))
    type_meta = _field(1, 2, api) + _field(2, 2, kind)
    raw = draw(protobuf_messages())
    return b"k8s\x00" + _field(1, 2, type_meta) + _field(2, 2, raw) + (
        _field(3, 2, draw(st.sampled_from([b"gzip", b"", b"x"]))) if draw(st.booleans()) else b"")


# -- selectors and list options ----------------------------------------------------------------------

SEL_CHARS = "abcz019 =!,()/.-_\\ü\t%*"


@st.composite
def label_selectors(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.text(alphabet=SEL_CHARS, max_size=40))
    terms = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(["app", "tier", "a/b", "example.com/x", "a" * 64, "a" * 300 + "/b", "", "-a",
                                    "a..b", "ü", "a b", "app\x00"]))
        op = draw(st.sampled_from(["=", "==", "!=", " in ", " notin ", "", "!", ">", "<", " gt ", "=="]))
        if op in (" in ", " notin "):
            vals = draw(st.lists(st.sampled_from(["fuzz", "a", "", "b-c", "x" * 70, "(", ")", ","]), max_size=4))
            terms.append(f"{key}{op}({','.join(vals)})" if draw(st.integers(0, 4)) else f"{key}{op}{','.join(vals)}")
        elif op == "!":
            terms.append("!" + key)
        elif op in (">", "<", " gt "):
            terms.append(key + op + draw(st.sampled_from(["1", "-1", "a", "1" * 30, "1.5"])))
        else:
            terms.append(key + op + draw(st.sampled_from(["fuzz", "a", "", "x" * 70, "=", "a,b"])) if op else key)
    return ",".join(terms)


@st.composite
def field_selectors(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.text(alphabet=SEL_CHARS + "=.\\", max_size=40))
    terms = []
    for _ in range(draw(st.integers(1, 3))):
        f = draw(st.sampled_from(["metadata.name", "metadata.namespace", "spec.nodeName", "status.phase",
                                  "involvedObject.kind", "involvedObject.name", "type", "reason", "spec.unknown",
                                  "metadata.labels", "", "a" * 200, "metadata.name.x"]))
        op = draw(st.sampled_from(["=", "==", "!=", " in ", "", "=~"]))
        v = draw(st.sampled_from(["x", "", "fuzz", "a\\,b", "a\\=b", "\\", "a=b", "ü", "x" * 300]))
        terms.append(f + op + v if op else f)
    return ",".join(terms)


NUMBERS = ["0", "1", "-1", "500", "99999999999999999999999", "9" * 400, "-99999999999999999999", "1.5", "1e3", "0x10",
           " 1", "1 ", "+1", "\u0661", "1_000", "", "abc", "NaN", "inf", "9223372036854775807", "9223372036854775808",
           "4294967296", "-9223372036854775809", "007", "%00", "%FF"]


@lru_cache(maxsize=None)  # one strategy object: hypothesis caches its work per object
def numberish() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(NUMBERS), st.integers(-2**80, 2**80).map(str))


@st.composite
def continue_tokens(draw: st.DrawFn) -> str:
    style = draw(st.sampled_from(["json", "json", "b64", "raw"]))
    if style == "raw":
        return draw(st.text(max_size=30))
    if style == "b64":
        return base64.urlsafe_b64encode(draw(st.binary(max_size=40))).decode()
    tok = {"v": draw(st.sampled_from(["meta.k8s.io/v1", "", "x", 1])),
           "rv": draw(st.one_of(st.integers(-2**70, 2**70), st.sampled_from(["1", None, [], 1.5]))),
           "start": draw(st.one_of(st.text(max_size=20), st.sampled_from(["../", "/", "\x00", "a" * 5000, 1, None])))}
    for k in draw(st.sets(st.sampled_from(list(tok)), max_size=2)):
        del tok[k]
    enc = base64.b64encode if draw(st.booleans()) else base64.urlsafe_b64encode
    return enc(dumps(tok)).decode().rstrip("=" if draw(st.booleans()) else "")


BOOLS = ["true", "false", "1", "0", "", "True", "FALSE", "yes", "t", "f", "2", "garbage", "%00"]


def watch_param_true(value: str) -> bool:
    """kube's reading of a bool query parameter (runtime.Convert_Slice_string_To_bool): anything but
    "0" or "false" (any case), the empty string included, is true."""
    return not (value == "0" or value.lower() == "false")


@st.composite
def list_queries(draw: st.DrawFn, watch: bool | None = None) -> tuple[str, bool]:
    """A query string of list/watch options and whether it asks for a watch (so the answer streams)."""
    params: list[tuple[str, str]] = []
    opts = {
        "limit": numberish(), "continue": continue_tokens(),
        # ones the server has reached or that do not parse: a future one waits (kube: ~3 s, then 504),
        # which would spend the group's time waiting
        "resourceVersion": st.sampled_from(["0", "", "1", "2", "abc", "-1", "1.5", "0x1", "\u0661", "01", "9" * 400,
                                            "99999999999999999999999", " 1", "+1", "1_0", "-0"]),
        "resourceVersionMatch": st.sampled_from(["NotOlderThan", "Exact", "", "exact", "Latest", "x"]),
        "timeoutSeconds": numberish(), "sendInitialEvents": st.sampled_from(BOOLS),
        "allowWatchBookmarks": st.sampled_from(BOOLS), "labelSelector": label_selectors(),
        "fieldSelector": field_selectors(), "pretty": st.sampled_from(BOOLS),
        "includeUninitialized": st.sampled_from(BOOLS), "x": st.text(max_size=8),
    }
    for k in draw(st.lists(st.sampled_from(list(opts)), max_size=5)):
        params.append((k, draw(opts[k])))
    is_watch = False
    if watch is None:
        watch = draw(st.integers(0, 3)) == 0
    if watch:
        w = draw(st.sampled_from(["true", "1", "True", "t"]))
        params.append(("watch", w))
        is_watch = True
    elif draw(st.integers(0, 6)) == 0:
        params.append(("watch", draw(st.sampled_from(BOOLS))))
        is_watch = watch_param_true(params[-1][1])
    raw = draw(st.integers(0, 8)) == 0
    q = "&".join(f"{k}={v}" if raw else f"{quote(k, safe='')}={quote(v, safe='', errors='surrogatepass')}"
                 for k, v in params)
    return q, is_watch


# -- paths and methods -------------------------------------------------------------------------------

SEGMENTS = ["api", "apis", "v1", "v2", "watch", "namespaces", NS, "default", "configmaps", "pods", "events", "status",
            "scale", "log", "exec", "attach", "proxy", "portforward", "binding", "eviction", "finalize", "ephemeralcontainers",
            "resize", "token", "approval", "apps", "batch", "fuzz.example.com", "openapi", "version", "healthz", "readyz",
            "livez", "metrics", "x", "cm", "n", ".", "..", "", "%2F", "%2E%2E", "%00", "%zz", "%", "%%", ";", "a;b",
            "~", "ü", "%C3%BC", "%ED%A0%80", "%FF", "a" * 300, "*", "deployments", "nodes", "leases", "discovery",
            "coordination.k8s.io", "apiextensions.k8s.io", "customresourcedefinitions", "%20", "+", "@", "$"]
PREFIXES = ["/api", "/apis", "/api/v1", "/apis/apps/v1", "/api/v1/watch", "/apis/apps/v1/watch", "/api/v1/namespaces/fuzz",
            "/apis/coordination.k8s.io/v1/namespaces/fuzz", "/openapi/v2", "/openapi/v3", "/version", "/healthz",
            "/readyz", "/livez", "/metrics", "", "//", "/apis/fuzz.example.com", "/api/v1/proxy", "/.well-known",
            "/apis/apiextensions.k8s.io/v1", "/api/v1/namespaces/fuzz/pods/p"]
METHODS = ["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT", "PROPFIND",
           "get", "FOO", "G\x00T", "DELETECOLLECTION", "WATCH", "LIST"]


@st.composite
def random_paths(draw: st.DrawFn) -> str:
    segs = draw(st.lists(st.one_of(st.sampled_from(SEGMENTS), st.text(alphabet="az09.-_%~", max_size=6)), max_size=6))
    path = draw(st.sampled_from(PREFIXES)) + "".join("/" + s for s in segs)
    if draw(st.integers(0, 5)) == 0:
        path += "/"
    if draw(st.booleans()):
        path += "?" + draw(list_queries())[0]
    if not path.startswith("/") and draw(st.integers(0, 3)):
        path = "/" + path
    return path


# -- patches -----------------------------------------------------------------------------------------

POINTERS = ["/metadata/labels/a", "/metadata/labels/a~1b", "/metadata/labels/app", "/metadata/annotations/n",
            "/data/k", "/data/new", "/data", "/spec/containers/0/image", "/spec/containers/-", "/spec/containers/0",
            "/spec/containers/9", "/spec/containers/-1", "/spec/containers/99999999999999999999", "/spec/replicas",
            "/metadata/finalizers/0", "/metadata/finalizers/-", "/metadata/finalizers", "/metadata", "/metadata/name",
            "/metadata/namespace", "/metadata/resourceVersion", "/metadata/uid", "/metadata/ownerReferences",
            "/metadata/ownerReferences/0/uid", "/status", "/spec", "", "/", "//", "~2", "/a~", "/kind", "/apiVersion",
            "/metadata/creationTimestamp", "/metadata/managedFields", "/spec/holderIdentity", "a", "/data/k/0"]
OPS = ["add", "remove", "replace", "move", "copy", "test", "ADD", "", "merge", None, 1]


@st.composite
def json_patches(draw: st.DrawFn) -> bytes:
    style = draw(st.sampled_from(["ops", "ops", "ops", "amplify", "junk"]))
    if style == "junk":
        return dumps(draw(json_values(6)))
    if style == "amplify":
        # bounded: 2**doublings copies of a 1 KB string (at most ~16 MB), a corpus case goes further
        doublings = draw(st.integers(1, 14))
        ops: list[Any] = [{"op": "add", "path": "/data/amp", "value": "x" * 1000},
                          {"op": "add", "path": "/metadata/annotations", "value": {}},
                          {"op": "add", "path": "/spec", "value": {"a": ["x" * 1000]}}]
        ops += [{"op": "copy", "from": "/spec/a", "path": "/spec/a/-"} for _ in range(doublings)]
        return dumps(ops)
    ops = []
    for _ in range(draw(st.integers(0, 6))):
        op: dict[str, Any] = {"op": draw(st.sampled_from(OPS)), "path": draw(st.sampled_from(POINTERS))}
        if draw(st.booleans()):
            op["value"] = draw(json_values(4))
        if draw(st.booleans()):
            op["from"] = draw(st.sampled_from(POINTERS))
        if draw(st.integers(0, 8)) == 0:
            op[draw(st.sampled_from(["op", "path", "from"]))] = draw(json_values(2))
        ops.append(op)
    return dumps(ops)


DIRECTIVES = ["$patch", "$retainKeys", "$setElementOrder/containers", "$setElementOrder/finalizers",
              "$deleteFromPrimitiveList/finalizers", "$deleteFromPrimitiveList/args", "$setElementOrder/ports",
              "$setElementOrder/env", "$deleteFromPrimitiveList/command", "$unknown", "$setElementOrder/",
              "$deleteFromPrimitiveList/", "$retainKeys/x"]
PATCH_VALUES = ["replace", "delete", "merge", "deleteall", "", "x"]


@st.composite
def merge_patches(draw: st.DrawFn, strategic: bool) -> bytes:
    """A merge patch (RFC 7386) or a strategic merge patch with directives in odd places."""
    def directive_value() -> Any:
        return draw(st.one_of(st.sampled_from(PATCH_VALUES), json_values(3),
                              st.lists(st.one_of(st.sampled_from(["c", "a", "image", "name"]), st.just({"name": "c"})),
                                       max_size=3)))

    if draw(st.integers(0, 2)) == 0:  # type-correct: labels and annotations set, changed, removed (null)
        text = same_typed()[str]
        change = st.dictionaries(st.one_of(st.sampled_from(["app", "tier", "a/b", "x.io/y"]), text),
                                 st.one_of(st.none(), text), max_size=3)
        good: dict[str, Any] = {"metadata": {"labels": draw(change), "annotations": draw(change)}}
        if strategic and draw(st.booleans()):
            good["metadata"]["$deleteFromPrimitiveList/finalizers"] = draw(st.lists(text, max_size=2))
            good["metadata"]["finalizers"] = draw(st.lists(st.sampled_from(["a.io/f", "x", ""]), max_size=2))
        return dumps(good)
    patch: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for f in draw(st.lists(st.sampled_from(META_FIELDS), max_size=3)):
        meta[f] = draw(json_values(4))
    if draw(st.booleans()):
        meta["labels"] = draw(st.one_of(st.dictionaries(st.sampled_from(["a", "app", "b/c"]),
                                                        st.one_of(st.none(), st.text(max_size=5)), max_size=3),
                                        json_values(3)))
    patch["metadata"] = meta if draw(st.integers(0, 6)) else draw(json_values(3))
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["containers"] = draw(st.lists(st.fixed_dictionaries(
            {"name": st.sampled_from(["c", "d", "", 1]),
             "image": st.one_of(st.just("busybox"), json_values(2))}), max_size=2))
    if draw(st.booleans()):
        spec["replicas"] = draw(st.one_of(st.integers(-2**40, 2**40), json_values(2)))
    if draw(st.booleans()):
        patch["data"] = draw(st.one_of(st.dictionaries(st.text(max_size=4), st.one_of(st.none(), st.text(max_size=4)),
                                                       max_size=3), json_values(3)))
    if strategic:
        for where in draw(st.lists(st.sampled_from(["top", "meta", "spec", "container", "list"]), max_size=4)):
            d = draw(st.sampled_from(DIRECTIVES))
            if where == "top":
                patch[d] = directive_value()
            elif where == "meta" and isinstance(patch["metadata"], dict):
                patch["metadata"][d] = directive_value()
            elif where == "spec":
                spec[d] = directive_value()
            elif where == "container" and spec.get("containers"):
                spec["containers"][0][d] = directive_value()
            elif where == "list":
                spec.setdefault("containers", []).append({"$patch": draw(st.sampled_from(PATCH_VALUES))})
    if spec or draw(st.booleans()):
        patch["spec"] = spec
    if draw(st.integers(0, 8)) == 0:
        return draw(whole_bodies())
    return dumps(patch)


# -- headers -----------------------------------------------------------------------------------------

ACCEPTS = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "*/*", "",
           "application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "application/json;as=Nope;v=v9;g=x",
           "application/vnd.kubernetes.protobuf;stream=watch", "application/json;stream=watch", "text/html",
           "application/json;q=0", "application/*;q=0.5, text/plain;q=1", "a/b/c", ";;;", "application/json;charset=utf-16",
           "application/cbor", "application/apply-patch+yaml", "application/json, application/yaml;q=x",
           "application/json;as=Table;v=v1;g=meta.k8s.io;includeObject=Object", "image/png;q=1e400"]
CONTENT_TYPES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "",
                 "application/json; charset=utf-8", "application/json; charset=utf-16", "application/json;;;",
                 "application/json; charset", "application/json; a=\"b", "text/plain", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/merge-patch+json", "application/json-patch+json",
                 "application/strategic-merge-patch+json", "application/apply-patch+yaml", "APPLICATION/JSON",
                 "application/json\t", "application/cbor", "*/*", "application/", "/json",
                 "application/vnd.kubernetes.protobuf;stream=watch"]
AUTH_VALUES = ["Bearer not-a-valid-token", "Bearer", "Bearer ", "Bearer  {admin}", "Basic YWRtaW46YWRtaW4=", "",
               "bearer {admin}", "Bearer {admin}", "Bearer {admin} extra", "Bearer \x00", "Negotiate x"]


@st.composite
def header_sets(draw: st.DrawFn, admin_token: str) -> tuple[list[tuple[bytes | str, bytes | str]], str]:
    """A list of headers (credentials among them when auth is 'raw') and the auth mode."""
    headers: list[tuple[bytes | str, bytes | str]] = []
    auth = draw(st.sampled_from(["admin", "anonymous", "bad", "raw"]))
    if auth == "raw":
        for _ in range(draw(st.integers(1, 3))):
            headers.append(("Authorization", draw(st.sampled_from(AUTH_VALUES)).replace("{admin}", admin_token)))
    choices = draw(st.lists(st.sampled_from(["accept", "ctype", "impersonate", "huge", "many", "odd", "upgrade",
                                             "h2c", "encoding", "expect", "misc"]), max_size=4, unique=True))
    if "accept" in choices:
        headers.append(("Accept", draw(st.sampled_from(ACCEPTS))))
    if "ctype" in choices:
        headers.append(("Content-Type", draw(st.sampled_from(CONTENT_TYPES))))
    if "impersonate" in choices:
        for h in draw(st.lists(st.sampled_from(["Impersonate-User", "Impersonate-Group", "Impersonate-Uid",
                                                "Impersonate-Extra-scopes", "Impersonate-Extra-%ZZ"]), min_size=1, max_size=3)):
            headers.append((h, draw(st.sampled_from(["system:admin", "", "x", "system:masters", "ü"]))))
    if "huge" in choices:
        size = draw(st.sampled_from([4096, 8192, 16384, 65536, 262144, 1 << 20]))
        headers.append((draw(st.sampled_from(["X-Huge", "Accept", "Authorization", "Cookie"])), "a" * size))
    if "many" in choices:
        headers += [(f"X-H{i}", "v") for i in range(draw(st.sampled_from([100, 500, 2000])))]
    if "odd" in choices:
        headers.append(draw(st.sampled_from([
            (b"X-Nul", b"a\x00b"), (b"X-Del", b"a\x7fb"), (b"X-Latin", b"\xe9\xff"), (b"X Space", b"v"),
            (b"X:Colon", b"v"), (b"", b"empty-name"), (b"X-Fold", b"a\r\n b"), (b"X-Cr", b"a\rb"),
            (b"Host", b"other.example"), (b"Content-Length", b"abc"), (b"Content-Length", b"-1"),
            (b"Transfer-Encoding", b"gzip"), (b"X-Utf8", "ü".encode()), (b"\xff", b"v")])))
    if "upgrade" in choices:
        headers += [("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
                    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                    ("Sec-WebSocket-Protocol", draw(st.sampled_from(["v4.channel.k8s.io", "base64.channel.k8s.io", "x"])))]
    if "h2c" in choices:
        headers += [("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"), ("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA")]
    if "encoding" in choices:
        headers.append((draw(st.sampled_from(["Content-Encoding", "Accept-Encoding"])),
                        draw(st.sampled_from(["gzip", "br", "deflate", "identity", "x", "gzip, gzip"]))))
    if "expect" in choices:
        headers.append(("Expect", draw(st.sampled_from(["100-continue", "x"]))))
    if "misc" in choices:
        headers.append(draw(st.sampled_from([("X-HTTP-Method-Override", "DELETE"), ("X-Forwarded-For", "1.2.3.4"),
                                             ("User-Agent", "a" * 2000), ("If-None-Match", "*"), ("Range", "bytes=0-1"),
                                             ("Audit-ID", "\u00e9"), ("X-Remote-User", "system:admin"),
                                             ("Accept-Language", "*"), ("TE", "trailers")])))
    return headers, auth

