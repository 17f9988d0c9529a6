"""CEL validation rules of custom resources (``x-kubernetes-validations``), as apiextensions-apiserver's
``pkg/apiserver/schema/cel`` runs them, on the cel-expr-python engine (cel-cpp; chosen by
``bench/bench_cel.py``: the only candidate passing the whole conformance table, and the fastest).

Object layer: no I/O. Every rule of a CRD version's ``Structural`` schema is compiled once
(``compile_rules``, cached per schema node); ``CompiledRules.validate(obj, old)`` walks an object
with the schema and evaluates each node's rules with ``self`` bound to the node's value (and
``oldSelf`` to the old object's correlated value for transition rules). ``rule_errors`` gives the
causes a CRD create/update is refused with (compile errors, message checks, fieldPath, cost).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from kapi.errors import Cause
from kapi.object.cel import _cost
from kapi.object.cel._env import env, is_error, rewrite
from kapi.object.structural import Structural, ValidationRule
from kapi.object.validation.fields import (REASON_DUPLICATE, REASON_FORBIDDEN, REASON_INVALID, REASON_REQUIRED,
                                           _Rendered, field_duplicate, field_forbidden, field_invalid,
                                           field_not_supported, field_required, go_quote)

__all__ = ["CelError", "CompiledRules", "compile_rules", "evaluate", "rule_errors", "PER_CALL_LIMIT", "RUNTIME_CEL_COST_BUDGET",
           "STATIC_ESTIMATED_COST_LIMIT", "STATIC_ESTIMATED_CRD_COST_LIMIT"]

# k8s.io/apiserver/pkg/apis/cel/config.go
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000

SUPPORTED_REASONS = (REASON_DUPLICATE, REASON_FORBIDDEN, REASON_INVALID, REASON_REQUIRED)
BUDGET_EXCEEDED = "validation failed due to running out of cost budget, no further validation rules will be run"

_CHEAP = 1000
_OLD_SELF = re.compile(r"\boldSelf\b")
_NEWLINES = re.compile(r"[\n\r]+")


def _strip_status(text: str) -> str:
    """cel-cpp's status text as cel-go's issues/errors read (no ``INVALID_ARGUMENT: `` code, no suffix)."""
    text = re.sub(r"^[A-Z_]+: ", "", text)
    return re.sub(r" \[[A-Z_]+\]$", "", text)


def _go_rule(r: ValidationRule) -> _Rendered:
    """The rule as Go's ``%#v`` prints an ``apiextensions.ValidationRule``."""
    reason = "(*apiextensions.FieldValueErrorReason)(nil)" if not r.reason else \
        "(*apiextensions.FieldValueErrorReason)(0xc000a1c000)"
    old = "(*bool)(nil)" if r.optional_old_self is None else "(*bool)(0xc000a1c008)"
    return _Rendered(f"apiextensions.ValidationRule{{Rule:{go_quote(r.rule)}, Message:{go_quote(r.message)}, "
                     f"MessageExpression:{go_quote(r.message_expression)}, Reason:{reason}, "
                     f"FieldPath:{go_quote(r.field_path)}, OptionalOldSelf:{old}}}")


def _rule_error_string(r: ValidationRule) -> str:
    return r.rule.strip()


def _message_or_default(r: ValidationRule) -> str:
    return r.message if r.message else f"failed rule: {_rule_error_string(r)}"


# ----------------------------------------------------------------- field paths


def _field_path_segments(fp: str) -> list[tuple[str, str]] | None:
    """``.a.b['c'][1]`` as (kind, value) segments: ("child", "a"), ("key", "c"), ("index", "1"); None if invalid."""
    out: list[tuple[str, str]] = []
    i = 0
    if not fp.startswith((".", "[")):
        return None
    while i < len(fp):
        if fp[i] == ".":
            m = re.match(r"\.([A-Za-z_][A-Za-z0-9_\-]*)", fp[i:])
            if not m:
                return None
            out.append(("child", m.group(1)))
            i += m.end()
        elif fp[i] == "[":
            m = re.match(r"\[(?:'((?:[^'\\]|\\.)*)'|(\d+))\]", fp[i:])
            if not m:
                return None
            out.append(("key", m.group(1)) if m.group(1) is not None else ("index", m.group(2)))
            i += m.end()
        else:
            return None
    return out


def _field_path_valid(s: Structural, fp: str) -> bool:
    segs = _field_path_segments(fp)
    if segs is None:
        return False
    node: Structural | None = s
    for kind, val in segs:
        if node is None:
            return False
        if kind == "index":
            if node.type != "array" or node.items is None:
                return False
            node = node.items
        elif val in node.properties:
            node = node.properties[val]
        elif isinstance(node.additional_properties, Structural):
            node = node.additional_properties
        elif node.preserve_unknown_fields or node.additional_properties is True:
            node = None if kind == "child" else None
            return True
        else:
            return False
    return True


def _join(path: str, fp: str) -> str:
    segs = _field_path_segments(fp) or []
    out = path
    for kind, val in segs:
        if kind == "child":
            out = f"{out}.{val}" if out else val
        else:
            out = f"{out}[{val}]"
    return out


# ----------------------------------------------------------------- compilation


@dataclass(slots=True)
class _Rule:
    rule: ValidationRule
    index: int
    program: Any = None
    transition: bool = False
    message_program: Any = None
    cost: int = 0
    message_cost: int = 0


@dataclass(slots=True)
class _Node:
    schema: Structural
    rules: list[_Rule] = field(default_factory=list)
    properties: dict[str, _Node] = field(default_factory=dict)
    additional: _Node | None = None
    items: _Node | None = None


def _compile_text(text: str) -> tuple[Any, str]:
    try:
        return env().compile(rewrite(text)), ""
    except RuntimeError as e:
        return None, _strip_status(str(e))


def _ret(program: Any) -> str:
    return program.return_type().name()


class CompiledRules:
    """The compiled rules of one schema (a CRD version's ``openAPIV3Schema``)."""

    def __init__(self, schema: Structural, path: str) -> None:
        self.schema = schema
        self.path = path
        self.errors: list[Cause] = []
        self.total_cost = 0
        self._costs: list[tuple[int, str]] = []
        self._numbers: dict[int, bool] = {}
        self.root = self._compile(schema, path, _cost.root_cardinality())
        if self.total_cost > STATIC_ESTIMATED_CRD_COST_LIMIT:
            # kube reports the (at most 4) most expensive contributors, then the total
            for _cost_, fpath in sorted(self._costs, key=lambda c: -c[0])[:4]:
                self.errors.append(field_forbidden(fpath, "contributed to estimated rule cost total exceeding "
                                                          "cost limit for entire OpenAPIv3 schema"))
            self.errors.append(field_forbidden(path, _cost.cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                self.total_cost, STATIC_ESTIMATED_CRD_COST_LIMIT)))

    def _has_numbers(self, s: Structural) -> bool:
        got = self._numbers.get(id(s))
        if got is None:
            got = self._numbers[id(s)] = _has_number(s)
        return got

    @property
    def empty(self) -> bool:
        return self.root is None

    def _compile(self, s: Structural, path: str, cardinality: int) -> _Node | None:
        node = _Node(schema=s)
        vpath = _seg(path, "x-kubernetes-validations")
        for i, r in enumerate(s.validations):
            compiled = self._compile_rule(s, r, i, f"{vpath}[{i}]", cardinality)
            if compiled is not None:
                node.rules.append(compiled)
        for name, child in s.properties.items():
            c = self._compile(child, _seg(path, f"properties[{name}]"), cardinality)
            if c is not None:
                node.properties[name] = c
        if isinstance(s.additional_properties, Structural):
            node.additional = self._compile(s.additional_properties, _seg(path, "additionalProperties"),
                                            cardinality * _cost.max_cardinality(s))
        if s.items is not None:
            node.items = self._compile(s.items, _seg(path, "items"), cardinality * _cost.max_cardinality(s))
        if not node.rules and not node.properties and node.additional is None and node.items is None:
            return None
        return node

    def _compile_rule(self, s: Structural, r: ValidationRule, i: int, rpath: str, cardinality: int) -> _Rule | None:
        errs = self.errors
        ok = True
        if not r.rule.strip():
            errs.append(field_required(f"{rpath}.rule", "rule is not specified"))
            return None
        if r.message and not r.message.strip():
            errs.append(field_invalid(f"{rpath}.message", r.message, "message must be non-empty if specified"))
        if _NEWLINES.search(r.message):
            errs.append(field_invalid(f"{rpath}.message", r.message, "message must not contain line breaks"))
        if _NEWLINES.search(r.rule) and not r.message:
            errs.append(field_required(f"{rpath}.message", "message must be specified if rule contains line breaks"))
        if r.message_expression and not r.message_expression.strip():
            errs.append(field_required(f"{rpath}.messageExpression",
                                       "messageExpression must be non-empty if specified"))
        if r.reason and r.reason not in SUPPORTED_REASONS:
            errs.append(field_not_supported(f"{rpath}.reason", r.reason, SUPPORTED_REASONS))
        if r.field_path and not _field_path_valid(s, r.field_path):
            errs.append(field_invalid(f"{rpath}.fieldPath", r.field_path, "fieldPath must be a valid path"))
        transition = bool(_OLD_SELF.search(r.rule))
        if r.optional_old_self is not None and not transition:
            errs.append(field_invalid(f"{rpath}.optionalOldSelf", r.optional_old_self,
                                      "may not be set if oldSelf is not used in rule"))
        program, err = _compile_text(r.rule)
        if program is None:
            errs.append(field_invalid(f"{rpath}.rule", _go_rule(r), "compilation failed: " + err))
            return None
        undefined = _undefined_fields(r.rule, s, optional_old=bool(r.optional_old_self), root=s is self.schema)
        if undefined:
            errs.append(field_invalid(f"{rpath}.rule", _go_rule(r), "compilation failed: " + undefined))
            return None
        if _ret(program) not in ("bool", "dyn", "DYN", "BOOL") or _chain_type(r.rule, s) not in ("", "boolean"):
            errs.append(field_invalid(f"{rpath}.rule", _go_rule(r), "cel expression must evaluate to a bool"))
            ok = False
        if transition and r.optional_old_self:
            program, err = _compile_text("cel.bind(oldSelf, __hasOldSelf ? optional.of(__oldSelf) : optional.none(), "
                                         f"({r.rule}\n))")
            if program is None:
                errs.append(field_invalid(f"{rpath}.rule", _go_rule(r), "compilation failed: " + err))
                return None
        out = _Rule(rule=r, index=i, program=program, transition=transition)
        if r.message_expression.strip():
            mp, err = _compile_text(r.message_expression)
            if mp is not None and transition and r.optional_old_self:  # oldSelf is an optional there too
                mp, err = _compile_text("cel.bind(oldSelf, __hasOldSelf ? optional.of(__oldSelf) : optional.none(), "
                                        f"({r.message_expression}\n))")
            if mp is None:
                errs.append(field_invalid(f"{rpath}.messageExpression", _go_rule(r),
                                          "messageExpression compilation failed: " + err))
                ok = False
            elif _ret(mp) not in ("string", "dyn", "DYN", "STRING"):
                errs.append(field_invalid(f"{rpath}.messageExpression", _go_rule(r), "must evaluate to a string"))
                ok = False
            else:
                out.message_program = mp
                out.message_cost = _cost.estimate(r.message_expression, s)
        out.cost = _cost.estimate(r.rule, s)
        if out.cost > STATIC_ESTIMATED_COST_LIMIT:
            errs.append(field_forbidden(f"{rpath}.rule", _cost.cost_error_message(
                "estimated rule cost", out.cost, STATIC_ESTIMATED_COST_LIMIT)))
            ok = False
        if out.message_cost > STATIC_ESTIMATED_COST_LIMIT:
            errs.append(field_forbidden(f"{rpath}.messageExpression", _cost.cost_error_message(
                "estimated messageExpression cost", out.message_cost, STATIC_ESTIMATED_COST_LIMIT)))
            ok = False
        total = _cost.saturating_mul(out.cost, cardinality)
        mtotal = _cost.saturating_mul(out.message_cost, cardinality)
        self.total_cost = _cost.saturating_add(self.total_cost, _cost.saturating_add(total, mtotal))
        self._costs.append((total, f"{rpath}.rule"))
        if out.message_cost:
            self._costs.append((mtotal, f"{rpath}.messageExpression"))
        return out if ok else None

    # ------------------------------------------------------------- validation

    def validate(self, obj: Any, old: Any = None, path: str = "") -> list[Cause]:
        """The causes ``obj`` fails this schema's rules with (``old``: the object before an update,
        None on create). ``path`` is the field path of ``obj`` (kube's is nil: "<nil>" at the root)."""
        if self.root is None:
            return []
        out: list[Cause] = []
        budget = [RUNTIME_CEL_COST_BUDGET]
        self._walk(self.root, obj, old, old is not None, path, out, budget)
        return out

    def _walk(self, node: _Node, value: Any, old: Any, has_old: bool, path: str, out: list[Cause],
              budget: list[int]) -> bool:
        """False once the budget ran out (no further rules)."""
        if value is None:
            return True
        s = node.schema
        for r in node.rules:
            if not self._eval(r, s, value, old, has_old, path, out, budget):
                return False
        if isinstance(value, dict):
            oldd = old if has_old and isinstance(old, dict) else None
            for name, child in node.properties.items():
                if name in value:
                    if not self._walk(child, value[name], oldd.get(name) if oldd else None,
                                      oldd is not None and name in oldd, _child(path, name), out, budget):
                        return False
            if node.additional is not None:
                for k, v in value.items():
                    if not self._walk(node.additional, v, oldd.get(k) if oldd else None,
                                      oldd is not None and k in oldd, f"{path or '<nil>'}[{k}]", out, budget):
                        return False
        elif isinstance(value, list) and node.items is not None:
            olds = _correlate(s, old if has_old else None)
            for i, v in enumerate(value):
                o, ho = olds(v) if olds else (None, False)
                if not self._walk(node.items, v, o, ho, f"{path or '<nil>'}[{i}]", out, budget):
                    return False
        return True

    def _eval(self, r: _Rule, s: Structural, value: Any, old: Any, has_old: bool, path: str, out: list[Cause],
              budget: list[int]) -> bool:
        rule = r.rule
        if r.transition and not has_old and not rule.optional_old_self:
            return True  # a transition rule runs only on update, where the old value exists
        # a cheap rule is charged its static estimate (never below its actual cost: the object has
        # passed the schema's size limits); an expensive one is measured on the object
        cost = r.cost if r.cost <= _CHEAP else _cost.runtime(rule.rule, value, old)
        fpath = path or "<nil>"
        if cost > PER_CALL_LIMIT:
            out.append(_call_limit(fpath, s, rule))
            return False
        budget[0] -= cost
        if budget[0] < 0:
            out.append(field_invalid(fpath, s.type, BUDGET_EXCEEDED))
            return False
        if self._has_numbers(s):
            value, old = _doubles(value, s), _doubles(old, s)
        data = {"self": value, "oldSelf": old, "__oldSelf": old, "__hasOldSelf": has_old}
        try:
            result = r.program.eval(data=data)
        except RuntimeError:  # cel-cpp's own iteration budget
            out.append(_call_limit(fpath, s, rule))
            return False
        if is_error(result):
            msg = _eval_error(str(result.value()))
            if msg.startswith("no such overload") or msg.startswith("No matching overloads"):
                out.append(field_invalid(fpath, s.type, f"'{msg}': call arguments did not match a supported "
                                         f"operator, function or macro signature for rule: {_rule_error_string(rule)}"))
            else:
                out.append(field_invalid(fpath, s.type, f"{msg} evaluating rule: {_rule_error_string(rule)}"))
            return True
        if result.value() is True:
            return True
        detail = _message_or_default(rule)
        if r.message_program is not None:
            m = r.message_program.eval(data=data)
            if not is_error(m):
                text = m.value()
                if isinstance(text, str) and text.strip() and not _NEWLINES.search(text):
                    detail = text
        target = _join(path, rule.field_path) if rule.field_path else fpath
        reason = rule.reason or REASON_INVALID
        if reason == REASON_FORBIDDEN:
            out.append(field_forbidden(target, detail))
        elif reason == REASON_REQUIRED:
            out.append(field_required(target, detail))
        elif reason == REASON_DUPLICATE:
            out.append(field_duplicate(target, s.type))
        else:
            out.append(field_invalid(target, s.type, detail))
        return True


_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                       "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"})
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def escape(name: str) -> str:
    """A property name as CEL rules select it (kube's ``__dash__``, ``__dot__``, ``__slash__``,
    ``__underscores__`` and ``__<keyword>__`` escapes); unchanged if it cannot be escaped."""
    if name in _RESERVED:
        return f"__{name}__"
    out = name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__") \
        .replace("/", "__slash__")
    return out if _IDENT.match(out) else name


_SCAN = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[A-Za-z_][A-Za-z0-9_]*|\S")


def _closed(s: Structural) -> bool:
    """An object whose fields are exactly its properties (selecting another is a compile error)."""
    return (s.type == "object" and not s.preserve_unknown_fields and not s.embedded_resource
            and not isinstance(s.additional_properties, Structural) and s.additional_properties is not True)


_CHAIN = re.compile(r"^\s*self((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*$")


def _chain_type(text: str, s: Structural) -> str:
    """The schema type of a rule that is only ``self.a.b`` ("" when not such a chain, or unknown)."""
    m = _CHAIN.match(text)
    if not m:
        return ""
    node = s
    for name in [x.strip() for x in m.group(1).split(".") if x.strip()]:
        by_name = {escape(k): v for k, v in node.properties.items()}
        if name not in by_name:
            return ""
        node = by_name[name]
    return node.type if not node.int_or_string else ""


def _undefined_fields(text: str, s: Structural, optional_old: bool, root: bool = False) -> str:
    """cel-go's ``undefined field 'x'`` issues for ``self.x`` chains the schema has no field for."""
    toks = [(m.group(0), m.start()) for m in _SCAN.finditer(text)]
    issues = []
    roots = ("self",) if optional_old else ("self", "oldSelf")
    for i, (t, _pos) in enumerate(toks):
        if t not in roots or (i > 0 and toks[i - 1][0] == "."):
            continue
        node: Structural | None = s
        j = i + 1
        while node is not None and j + 1 < len(toks) and toks[j][0] == "." and _IDENT.match(toks[j + 1][0]):
            if j + 2 < len(toks) and toks[j + 2][0] == "(":
                break  # a member function
            name = toks[j + 1][0]
            if not _closed(node):
                break
            by_name = {escape(k): v for k, v in node.properties.items()}
            if node is s and root and name in ("apiVersion", "kind", "metadata") and name not in by_name:
                break  # the root of a custom resource always has them (kube adds them to its type)
            if name not in by_name:
                line_start = text.rfind("\n", 0, toks[j][1]) + 1
                line_end = text.find("\n", toks[j][1])
                line = text[line_start:line_end if line_end >= 0 else len(text)]
                col = toks[j][1] - line_start
                row = text.count("\n", 0, toks[j][1]) + 1
                issues.append(f"ERROR: <input>:{row}:{col + 1}: undefined field '{name}'\n | {line}\n | "
                              + "." * col + "^")
                break
            node = by_name[name]
            j += 2
    return "\n".join(issues)


def _has_number(s: Structural) -> bool:
    """Whether values under ``s`` need converting for CEL (number fields, escaped property names)."""
    if s.type == "number":
        return True
    if any(escape(k) != k for k in s.properties):
        return True
    if any(_has_number(c) for c in s.properties.values()):
        return True
    if isinstance(s.additional_properties, Structural) and _has_number(s.additional_properties):
        return True
    return s.items is not None and _has_number(s.items)


def _doubles(v: Any, s: Structural) -> Any:
    """``v`` with the integers of ``number`` nodes as floats (kube declares them double)."""
    if s.type == "number":
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v
    if isinstance(v, dict):
        add = s.additional_properties if isinstance(s.additional_properties, Structural) else None
        out = {}
        for k, x in v.items():
            c = s.properties.get(k)
            key = escape(k) if c is not None else k
            c = c or add
            out[key] = _doubles(x, c) if c is not None and _has_number(c) else x
        return out
    if isinstance(v, list) and s.items is not None:
        return [_doubles(x, s.items) for x in v]
    return v


def _call_limit(fpath: str, s: Structural, rule: ValidationRule) -> Cause:
    return field_invalid(fpath, s.type, "'operation cancelled: actual cost limit exceeded': no further validation "
                         "rules will be run due to call cost exceeds limit for rule: " + _rule_error_string(rule))


def _seg(path: str, seg: str) -> str:
    return f"{path}.{seg}" if path else seg


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _eval_error(text: str) -> str:
    text = _strip_status(text)
    m = re.match(r'Key not found in map : "?(.*?)"?$', text)
    if m:
        return f"no such key: {m.group(1)}"
    return text


def _correlate(s: Structural, old: Any) -> Any:
    """For a list's items: the old item of a new one (map lists by their keys, set lists by value)."""
    if not isinstance(old, list):
        return None
    if s.list_type == "map" and s.list_map_keys:
        keys = s.list_map_keys
        index = {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, dict)}

        def by_key(v: Any) -> tuple[Any, bool]:
            if not isinstance(v, dict):
                return None, False
            k = tuple(v.get(k) for k in keys)
            return (index[k], True) if k in index else (None, False)
        return by_key
    if s.list_type == "set":
        def by_value(v: Any) -> tuple[Any, bool]:
            return (v, True) if v in old else (None, False)
        return by_value
    return None


# ----------------------------------------------------------------- API


class CelError(Exception):
    """An expression that does not compile, or whose evaluation is an error (the message is kube's text)."""


def evaluate(expr: str, self_value: Any = None, old_self: Any = None) -> Any:
    """The value of ``expr`` in kube's environment, as plain Python (for one-off use: no caching)."""
    program, err = _compile_text(expr)
    if program is None:
        raise CelError(err)
    try:
        v = program.eval(data={"self": self_value, "oldSelf": old_self, "__oldSelf": old_self,
                               "__hasOldSelf": old_self is not None})
    except RuntimeError as e:
        raise CelError(_strip_status(str(e))) from None
    if is_error(v):
        raise CelError(_eval_error(str(v.value())))
    return v.plain_value()

_cache: OrderedDict[tuple[int, str], tuple[Structural, CompiledRules]] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 512


def compile_rules(s: Structural, path: str = "") -> CompiledRules:
    """The compiled rules of schema ``s`` (once per schema object; ``path`` names the schema in
    CRD-validation causes, e.g. ``spec.versions[0].schema.openAPIV3Schema``). Rules that fail to
    compile are left out (``rule_errors`` reports them)."""
    key = (id(s), path)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is s:
            _cache.move_to_end(key)
            return hit[1]
    compiled = CompiledRules(s, path)
    with _cache_lock:
        _cache[key] = (s, compiled)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def rule_errors(s: Structural, path: str = "") -> list[Cause]:
    """The causes a CRD with schema ``s`` at ``path`` is refused with for its x-kubernetes-validations."""
    return list(compile_rules(s, path).errors)
