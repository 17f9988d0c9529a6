"""CEL engines for CRD ``x-kubernetes-validations``: conformance first, then speed (issue 14).

Run ``python bench/bench_cel.py`` from the repository root (``--quick`` for a short run). The
three candidates on the package index are measured in the same process:

- ``cel-python`` (``celpy``, pure Python, lark parser);
- ``common-expression-language`` (``cel``, bindings over the Rust ``cel-interpreter``, untyped);
- ``cel-expr-python`` (``cel_expr_python``, bindings over the C++ cel-cpp with its type checker).

For each: a **conformance table** (expressions with the result CEL's spec and kube's environment
give: int overflow is an error, string/list functions, the macros has/all/exists/exists_one/map/
filter, optional fields, duration/timestamp; an engine passes an entry when its result equals the
expected value, or when an error is expected and it raised or returned one), then for the typical
CRD rules the **compile time** (µs per compile) and **µs per evaluation** with ``self`` (and
``oldSelf``) bound to a small object. An engine missing a function has that entry failed and its
rule timed as "-". Prints Markdown tables and writes JSON (``bench/results/cel.json``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, write_json  # noqa: E402

ERR = object()  # an error is expected

OBJ = {"minReplicas": 1, "replicas": 3, "name": "alpha", "items": [1, 2, 3, 4, 5],
       "hosts": ["a.example.com", "b.example.com"], "spec": {"x": 1}}
OLD = dict(OBJ)

RULES = {
    "min<=replicas": "self.minReplicas <= self.replicas",
    "startsWith": "self.name.startsWith('a')",
    "list all": "self.items.all(i, i > 0)",
    "matches": "self.hosts.all(h, h.matches('^[a-z.]+$'))",
    "transition": "self == oldSelf",
}

CONFORMANCE: list[tuple[str, Any]] = [
    ("1 + 2 * 3", 7),
    ("9223372036854775807 + 1", ERR),
    ("-9223372036854775808 - 1", ERR),
    ("1 / 0", ERR),
    ("'abc'.size()", 3),
    ("'hello'.contains('ell')", True),
    ("'hello'.endsWith('lo')", True),
    ("'abc'.matches('^a.c$')", True),
    ("'ABC'.lowerAscii()", "abc"),
    ("'a,b,c'.split(',')", ["a", "b", "c"]),
    ("['a', 'b'].join('-')", "a-b"),
    ("'  x '.trim()", "x"),
    ("'hello'.substring(1, 3)", "el"),
    ("'hello'.indexOf('l')", 2),
    ("'hello'.replace('l', 'L')", "heLLo"),
    ("[1, 2, 3].size()", 3),
    ("2 in [1, 2, 3]", True),
    ("[1, 2] + [3]", [1, 2, 3]),
    ("has(self.spec)", True),
    ("has(self.nope)", False),
    ("self.items.all(x, x > 0)", True),
    ("self.items.exists(x, x > 4)", True),
    ("self.items.exists_one(x, x > 4)", True),
    ("self.items.map(x, x * 2)", [2, 4, 6, 8, 10]),
    ("self.items.filter(x, x % 2 == 0)", [2, 4]),
    ("self.nope", ERR),
    ("self.?nope.orValue(7)", 7),
    ("self.?spec.x.orValue(0)", 1),
    ("duration('1h') > duration('59m')", True),
    ("duration('90s') == duration('1m30s')", True),
    ("timestamp('2024-01-01T00:00:00Z') < timestamp('2024-06-01T00:00:00Z')", True),
    ("timestamp('2024-01-01T00:00:00Z') + duration('24h') == timestamp('2024-01-02T00:00:00Z')", True),
    ("int('42') + 1", 43),
    ("string(12)", "12"),
    ("type(1) == int", True),
    ("1 == 1.0", ERR),  # kube's type checker: no such overload (the CEL spec's heterogeneous equality is off)
    ("{'a': 1}['a']", 1),
    ("'a' + 1", ERR),
]


def _norm(v: Any) -> Any:
    """A result as plain Python (the engines' own types differ)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {_norm(k): _norm(x) for k, x in v.items()}
    try:
        if hasattr(v, "__iter__") and not isinstance(v, (bytes, str)):
            return [_norm(x) for x in v]
    except Exception:
        pass
    for cast in (bool, int, float, str):
        if isinstance(v, cast):
            return cast(v)
    return v


class Engine:
    name = ""

    def compile(self, expr: str) -> Any:
        raise NotImplementedError

    def run(self, prog: Any, data: dict[str, Any]) -> Any:
        """The result, or ERR for an evaluation error."""
        raise NotImplementedError


class CelPython(Engine):
    name = "cel-python"

    def __init__(self) -> None:
        import celpy
        self.celpy = celpy
        self.env = celpy.Environment()

    def compile(self, expr: str) -> Any:
        return self.env.program(self.env.compile(expr))

    def run(self, prog: Any, data: dict[str, Any]) -> Any:
        act = {k: self.celpy.json_to_cel(v) for k, v in data.items()}
        r = prog.evaluate(act)
        if isinstance(r, (self.celpy.CELEvalError, Exception)):
            return ERR
        return _norm(self._plain(r))

    def _plain(self, r: Any) -> Any:
        t = self.celpy.celtypes
        if isinstance(r, t.BoolType):  # BoolType subclasses int, not bool
            return bool(r)
        if isinstance(r, (list, tuple)):
            return [self._plain(x) for x in r]
        if isinstance(r, dict):
            return {self._plain(k): self._plain(v) for k, v in r.items()}
        return r


class CommonExpressionLanguage(Engine):
    name = "common-expression-language"

    def __init__(self) -> None:
        import cel
        self.cel = cel

    def compile(self, expr: str) -> Any:
        return self.cel.compile(expr)

    def run(self, prog: Any, data: dict[str, Any]) -> Any:
        return _norm(prog.execute(data))


class CelExprPython(Engine):
    name = "cel-expr-python"

    def __init__(self) -> None:
        from cel_expr_python import cel
        from cel_expr_python.ext import ext_optional, ext_strings
        self.cel = cel
        self.env = cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN},
                              extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()])

    def compile(self, expr: str) -> Any:
        return self.env.compile(expr)

    def run(self, prog: Any, data: dict[str, Any]) -> Any:
        v = prog.eval(data=data)
        if v.type() == self.cel.Type.ERROR:
            return ERR
        return _norm(v.plain_value())


def engines() -> list[Engine]:
    out: list[Engine] = []
    for cls in (CelPython, CommonExpressionLanguage, CelExprPython):
        try:
            out.append(cls())
        except ImportError as e:
            print(f"{cls.name}: not installed ({e})", file=sys.stderr)
    return out


def conformance(engine: Engine) -> dict[str, Any]:
    passed, failed = 0, []
    data = {"self": OBJ, "oldSelf": OLD}
    for expr, want in CONFORMANCE:
        try:
            got = engine.run(engine.compile(expr), data)
        except Exception:
            got = ERR
        ok = got is ERR if want is ERR else (got is not ERR and got == want and type(got) is type(want))
        if ok:
            passed += 1
        else:
            failed.append(expr)
    return {"passed": passed, "total": len(CONFORMANCE), "failed": failed}


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - start
        if took >= seconds or n >= 1 << 22:
            return took / n * 1e6
        n *= 4 if took < seconds / 8 else 2


def speed(engine: Engine, seconds: float) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    data = {"self": OBJ, "oldSelf": OLD}
    for label, rule in RULES.items():
        try:
            prog = engine.compile(rule)
            if engine.run(prog, data) is not True:
                raise ValueError("wrong result")
        except Exception:
            out[label] = {"compile_us": None, "eval_us": None}
            continue
        out[label] = {"compile_us": per_call_us(lambda: engine.compile(rule), seconds),
                      "eval_us": per_call_us(lambda: engine.run(prog, data), seconds)}
    return out


def kapi_validate(seconds: float) -> dict[str, float]:
    """µs per ``CompiledRules.validate`` of an object whose spec carries one typical rule (the engine
    plus kapi's walk, cost accounting and activation), and per rule with all five on the node."""
    from kapi.object.cel import compile_rules
    from kapi.object.structural import from_props

    props = {"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"},
             "name": {"type": "string", "maxLength": 63},
             "items": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
             "hosts": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 253}},
             "spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}

    def compiled(rules: list[str]) -> Any:
        return compile_rules(from_props({"type": "object", "properties": {"spec": {
            "type": "object", "properties": props, "x-kubernetes-validations": [{"rule": r} for r in rules]}}}))

    one = compiled([RULES["min<=replicas"]])
    five = compiled(list(RULES.values()))
    obj, old = {"spec": OBJ}, {"spec": OLD}
    assert one.validate(obj, old) == [] and five.validate(obj, old) == []
    return {"one_rule_validate_us": per_call_us(lambda: one.validate(obj, old), seconds),
            "five_rules_validate_us_per_rule": per_call_us(lambda: five.validate(obj, old), seconds) / 5}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short timing rounds")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per timed point")
    ap.add_argument("--output", type=Path, default=RESULTS / "cel.json")
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (0.02 if args.quick else 0.5)
    result: dict[str, Any] = {"config": {"quick": args.quick, "seconds": seconds, "python": platform.python_version()},
                              "engines": {}}
    for engine in engines():
        result["engines"][engine.name] = {"conformance": conformance(engine), "rules": speed(engine, seconds)}
    result["kapi"] = kapi_validate(seconds)
    names = list(result["engines"])
    print("| engine | conformance | failed |\n|---|---|---|")
    for n in names:
        c = result["engines"][n]["conformance"]
        print(f"| {n} | {c['passed']}/{c['total']} | {'; '.join(f'`{x}`' for x in c['failed'])} |")
    print()
    print("| rule | " + " | ".join(f"{n} compile µs | {n} eval µs" for n in names) + " |")
    print("|---|" + "---|---|" * len(names))

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    for label in RULES:
        cells = []
        for n in names:
            r = result["engines"][n]["rules"][label]
            cells += [fmt(r["compile_us"]), fmt(r["eval_us"])]
        print(f"| `{RULES[label]}` | " + " | ".join(cells) + " |")
    # the chosen engine ÷ the slowest, for the typical rule
    typical = {n: result["engines"][n]["rules"]["min<=replicas"]["eval_us"] for n in names}
    timed = {n: v for n, v in typical.items() if v}
    if "cel-expr-python" in timed and timed:
        slowest = max(timed.values())
        result["ratios"] = {"chosen_eval_over_slowest": timed["cel-expr-python"] / slowest}
        print(f"\ncel-expr-python ÷ slowest (µs per eval of the typical rule): "
              f"{result['ratios']['chosen_eval_over_slowest']:.3f}")
    k = result["kapi"]
    print(f"\nkapi CompiledRules.validate: {k['one_rule_validate_us']:.1f} µs for one typical rule, "
          f"{k['five_rules_validate_us_per_rule']:.1f} µs per rule with the five rules on one node")
    write_json(args.output, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
