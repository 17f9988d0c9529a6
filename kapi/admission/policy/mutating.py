"""A MutatingAdmissionPolicy compiled and applied (kube's admission/plugin/policy/mutating: compilePolicy,
the patchers of ``patch/`` and the dispatcher's errors).

``compile_policy`` compiles a policy's variables, matchConditions and mutations once (per generation:
the plugin caches it); an expression that does not compile is kept as its error and fails the policy
as its failurePolicy says. Mutations are of two kinds:

- **ApplyConfiguration**: an expression returning ``Object{...}`` (nested ``Object.spec{...}``,
  ``Object.spec.template{...}``, ...), merged into the object as server-side apply merges
  (``kapi.object.managedfields.merge``); atomic lists, maps and structs may not be set
  ("may not mutate atomic arrays, maps or structs"), each initializer's type name must match its
  field path ("expected type name ... to match field path ...");
- **JSONPatch**: an expression returning a list of ``JSONPatch{op, path, from, value}``, applied in
  order (``kapi.object.patch``); a failed ``test`` leaves the object as it was.

kube's CEL declares ``Object`` and ``JSONPatch`` as types of its mutation library; cel-cpp's Python
bindings have no such dynamic types, so an initializer is rewritten before compilation into a map
literal carrying its type name under ``TYPE_KEY`` (checked, then dropped, from the result), and
``jsonpatch.escapeKey(s)`` into the equivalent string replacements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from kapi import errors
from kapi.admission import cel
from kapi.admission.cel import RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, Activation, Budget, CelError, Compiled, \
    EvalError, OutOfBudget, evaluate_or_error
from kapi.object import patch as jsonpatch
from kapi.object.managedfields.merge import MergeError, atomic_paths, merge, type_errors
from kapi.object.schema import Schema

Obj = dict[str, Any]
APPLY_CONFIGURATION, JSON_PATCH = "ApplyConfiguration", "JSONPatch"
TYPE_KEY = "__kapi.cel.object.type"


class PatchError(Exception):
    """A mutation that could not be applied (kube's patcher errors; the dispatcher's config errors)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ----------------------------------------------------------------- the initializer rewrite

_TOKEN = re.compile(r"""[rR]?[bB]?'''.*?'''|[rR]?[bB]?\"\"\".*?\"\"\"|[rRbB]{0,2}'(?:[^'\\\n]|\\.)*'"""
                    r"""|[rRbB]{0,2}"(?:[^"\\\n]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[uU]?"""
                    r"""|\s+|.""", re.S)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _next(tokens: list[str], i: int) -> int:
    """The index of the first token after ``i`` that is not white space (len(tokens) when none)."""
    i += 1
    while i < len(tokens) and tokens[i].isspace():
        i += 1
    return i


def _at(tokens: list[str], i: int) -> str:
    return tokens[i] if i < len(tokens) else ""


def _last(out: list[str]) -> str:
    for t in reversed(out):
        if not t.isspace():
            return t
    return ""


def _closing(tokens: list[str], i: int) -> int:
    """The index of the bracket closing the one at ``i``."""
    depth = 0
    for k in range(i, len(tokens)):
        if tokens[k] in ("(", "[", "{"):
            depth += 1
        elif tokens[k] in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return k
    return len(tokens)


class _Piece(str):
    """A piece of a rewritten expression and the offset in the original text it comes from."""

    at: int
    orig: bool


def _piece(text: str, at: int, orig: bool = False) -> _Piece:
    p = _Piece(text)
    p.at, p.orig = at, orig
    return p


def _escape_key_calls(tokens: list[_Piece]) -> list[_Piece]:
    """``jsonpatch.escapeKey(x)`` → ``(x).replace("~", "~0").replace("/", "~1")`` (RFC 6901)."""
    out: list[_Piece] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == "jsonpatch" and _last(out) != ".":
            dot = _next(tokens, i)
            fn = _next(tokens, dot)
            paren = _next(tokens, fn)
            if _at(tokens, dot) == "." and _at(tokens, fn) == "escapeKey" and _at(tokens, paren) == "(":
                close = _closing(tokens, paren)
                out.append(_piece("(", tokens[i].at))
                out.extend(_escape_key_calls(tokens[paren + 1:close]))
                end = tokens[close].at if close < len(tokens) else tokens[-1].at
                out.append(_piece(")", end))
                out.append(_piece('.replace("~", "~0").replace("/", "~1")', end))
                i = close + 1
                continue
        out.append(tokens[i])
        i += 1
    return out


def rewrite(text: str) -> str:
    """``Object.spec{replicas: 1}`` → ``{"<TYPE_KEY>": "Object.spec", "replicas": 1}`` (and JSONPatch{...})."""
    return rewrite_mapped(text)[0]


def rewrite_mapped(text: str) -> tuple[str, list[int]]:
    """``rewrite``, and for each character of the result the offset in ``text`` it comes from."""
    tokens = _escape_key_calls([_piece(m.group(), m.start(), True) for m in _TOKEN.finditer(text)])
    out: list[_Piece] = []
    frames: list[str] = []  # per open bracket: "init" (an initializer: field names are quoted) or "other"
    expect_field = False
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.isspace():
            out.append(t)
            i += 1
            continue
        if expect_field:
            if t == "?":
                out.append(t)
                i += 1
                continue
            expect_field = False
            if _IDENT.fullmatch(t):
                out += [_piece('"', t.at), t, _piece('"', t.at + len(t) - 1)]
                i += 1
                continue
        if t in ("Object", "JSONPatch") and _last(out) != ".":
            name, j = [str(t)], _next(tokens, i)
            while t == "Object" and _at(tokens, j) == "." and _IDENT.fullmatch(_at(tokens, _next(tokens, j))):
                field_at = _next(tokens, j)
                name.append(str(tokens[field_at]))
                j = _next(tokens, field_at)
            if _at(tokens, j) == "{":
                frames.append("init")
                empty = _at(tokens, _next(tokens, j)) == "}"
                out.append(_piece("{" + f'"{TYPE_KEY}": "{".".join(name)}"' + ("" if empty else ", "), t.at))
                expect_field = not empty
                i = j + 1
                continue
        if t in ("(", "[", "{"):
            frames.append("other")
        elif t in (")", "]", "}"):
            if frames:
                frames.pop()
        elif t == "," and frames and frames[-1] == "init":
            expect_field = True
        out.append(t)
        i += 1
    offsets = [p.at + k if p.orig else p.at for p in out for k in range(len(p))]
    return "".join(out), offsets


_ERROR_AT = re.compile(r"<input>:(\d+):(\d+): (.*)\n \| .*\n \| [.]*\^")


def _remap(message: str, original: str, rewritten: str, offsets: list[int]) -> str:
    """A compile error of the rewritten text with the original's positions and source line."""
    if rewritten == original or not offsets:
        return message
    starts = [0]
    for line in rewritten.split("\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    olines = original.split("\n")

    def fix(m: re.Match[str]) -> str:
        line, col = int(m.group(1)), int(m.group(2))
        pos = starts[min(line, len(starts)) - 1] + col - 1
        at = offsets[min(max(pos, 0), len(offsets) - 1)]
        oline = original.count("\n", 0, at)
        ocol = at - (original.rfind("\n", 0, at) + 1)
        return f"<input>:{oline + 1}:{ocol + 1}: {m.group(3)}\n | {olines[oline]}\n | {'.' * ocol}^"

    return _ERROR_AT.sub(fix, message)


def _type_check(value: Any, path: str) -> None:
    """kube's CheckTypeNamesMatchFieldPathNames: a nested initializer's type name is its field path."""
    if isinstance(value, dict):
        name = value.get(TYPE_KEY)
        if name is not None and name != path:
            raise PatchError(f"type mismatch: expected type name {_q(str(name))} to match field path {_q(path)}")
        for k, v in value.items():
            if k != TYPE_KEY:
                _type_check(v, f"{path}.{k}")
    elif isinstance(value, list):
        for v in value:
            _type_check(v, path)


def _q(s: str) -> str:
    return orjson.dumps(s).decode()


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != TYPE_KEY}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


# ----------------------------------------------------------------- compilation


@dataclass(slots=True, eq=False)
class Mutation:
    patch_type: str
    expression: Compiled | CelError


@dataclass(slots=True, eq=False)
class CompiledPolicy:
    """One policy's compiled expressions (kube's PolicyEvaluator)."""

    name: str
    fail: bool
    reinvoke: bool
    has_params: bool
    variables: dict[str, Compiled | CelError]
    match_conditions: list[tuple[str, Compiled | CelError]]
    mutations: list[Mutation] = field(default_factory=list)

    async def match(self, act: Activation) -> tuple[str | None, bool]:
        """kube's matchconditions.Matcher: (an error, whether it matches); an error is the policy's
        failure (the dispatcher applies the failurePolicy)."""
        if not self.match_conditions:
            return None, True
        budget = Budget(RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)
        errs: list[str] = []
        try:
            for _name, c in self.match_conditions:
                value, error = await evaluate_or_error(c, act, budget)
                if error is not None:
                    errs.append(error)
                elif value is False:
                    return None, False
        except OutOfBudget as exc:
            return exc.message, False
        if errs:
            return (errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"), False
        return None, True

    async def apply(self, index: int, act: Activation, obj: Obj, schema: Schema, gvk: tuple[str, str, str],
                    budget: Budget) -> Obj:
        """Mutation ``index`` applied to ``obj`` (a new object; ``obj`` unchanged). Raises PatchError."""
        m = self.mutations[index]
        if isinstance(m.expression, CelError):
            raise PatchError(m.expression.message)
        try:
            value = await m.expression.evaluate_async(act, budget)
        except (EvalError, OutOfBudget) as exc:
            raise PatchError(exc.message) from None
        if m.patch_type == APPLY_CONFIGURATION:
            return _apply_configuration(value, obj, schema, gvk)
        return _json_patch(value, obj, schema, gvk)


def _apply_configuration(value: Any, obj: Obj, schema: Schema, gvk: tuple[str, str, str]) -> Obj:
    if not isinstance(value, dict) or value.get(TYPE_KEY) != "Object":
        raise PatchError(f"unsupported return type from ApplyConfiguration expression: {_cel_type(value)}")
    _type_check(value, "Object")
    patch = _strip(value)
    patch["apiVersion"], patch["kind"] = obj.get("apiVersion"), obj.get("kind")
    problems = type_errors(schema, gvk, patch)
    if problems:
        detail = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
        raise PatchError(f"error applying patch: failed to convert patch object to typed object: {detail}")
    atomics = atomic_paths(schema, gvk, patch)
    if atomics:
        raise PatchError("error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or "
                         f"structs: {', '.join(atomics)}")
    try:
        return merge(schema, gvk, obj, patch)
    except MergeError as exc:
        raise PatchError(f"error applying patch: failed to merge patch: {exc}") from None


def _json_patch(value: Any, obj: Obj, schema: Schema | None = None, gvk: tuple[str, str, str] | None = None) -> Obj:
    if not isinstance(value, list):
        raise PatchError("type mismatch: JSONPatchType.expression should evaluate to array")
    ops: list[Obj] = []
    for item in value:
        if not isinstance(item, dict) or item.get(TYPE_KEY) != "JSONPatch":
            raise PatchError("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch")
        for k, v in item.items():
            if k not in (TYPE_KEY, "op", "path", "from", "value"):
                raise PatchError(f"type mismatch: JSONPatch has no field {_q(k)}")
            if k == "value":
                _type_check(v, "Object") if isinstance(v, dict) and TYPE_KEY in v and v[TYPE_KEY] == "Object" \
                    else None
        op: Obj = {"op": str(item.get("op") or ""), "path": str(item.get("path") or "")}
        if item.get("from"):
            op["from"] = str(item["from"])
        if "value" in item and item["value"] is not None:
            op["value"] = _strip(item["value"])
        ops.append(op)
    try:
        out = jsonpatch.apply_json_patch(obj, ops)
    except errors.StatusError as exc:
        cause = str(exc.__cause__) if exc.__cause__ is not None else exc.message
        if cause.endswith("test failed"):  # a failed test operation: the patch is not applied
            return obj
        raise PatchError(f"JSONPath: {cause}") from None
    if not isinstance(out, dict):
        raise PatchError("JSONPath: the patched object is not an object")
    if schema is not None and gvk is not None and schema.type_for(*gvk) is not None:
        # kube decodes the patched JSON strictly into the typed object: an unknown field is an internal error
        unknown = [p.split(": ", 1)[0].lstrip(".") for p in type_errors(schema, gvk, out)
                   if p.endswith(": field not declared in schema")]
        if unknown:
            raise errors.InternalError("Internal error occurred: strict decoding error: "
                                       + ", ".join(f"unknown field {_q(u)}" for u in unknown))
    return out


def _cel_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    return "null_type"


def compile_mutation(m: Obj, *, variables: Any = (), params: bool = True) -> Mutation:
    """One mutation's expression compiled (ApplyConfiguration: an Object; JSONPatch: a list of JSONPatch)."""
    patch_type = str(m.get("patchType") or "")
    holder = m.get("applyConfiguration") if patch_type == APPLY_CONFIGURATION else m.get("jsonPatch")
    text = str((holder or {}).get("expression") or "")
    rewritten, offsets = rewrite_mapped(text)
    try:
        compiled = cel.compile_expression(rewritten, variables, kind="any", params=params)
        if patch_type == APPLY_CONFIGURATION and not compiled.output.startswith("map"):
            raise CelError(f"must evaluate to Object but got {compiled.output}")
        if patch_type == JSON_PATCH and not compiled.output.startswith("list"):
            raise CelError(f"must evaluate to list(JSONPatch) but got {compiled.output}")
        compiled.text = text  # errors quote the expression as written
        return Mutation(patch_type, compiled)
    except CelError as exc:
        return Mutation(patch_type, CelError(_remap(exc.message, text, rewritten, offsets)))


def compile_policy(policy: Obj) -> CompiledPolicy:
    """kube's compilePolicy: variables, matchConditions and mutations compiled with the policy's
    declarations (``params`` only with a paramKind)."""
    spec = policy.get("spec") or {}
    has_params = spec.get("paramKind") is not None
    variables = cel.compile_variables(
        [(str(v.get("name") or ""), str(v.get("expression") or "")) for v in spec.get("variables") or ()],
        params=has_params)
    conditions: list[tuple[str, Compiled | CelError]] = []
    for m in spec.get("matchConditions") or ():
        try:
            conditions.append((str(m.get("name") or ""), cel.compile_expression(
                str(m.get("expression") or ""), (), kind="bool", params=has_params)))
        except CelError as exc:
            conditions.append((str(m.get("name") or ""), exc))
    mutations = [compile_mutation(m, variables=variables.keys(), params=has_params)
                 for m in spec.get("mutations") or ()]
    return CompiledPolicy(name=str((policy.get("metadata") or {}).get("name") or ""),
                          fail=spec.get("failurePolicy", "Fail") != "Ignore",
                          reinvoke=spec.get("reinvocationPolicy") == "IfNeeded", has_params=has_params,
                          variables=variables, match_conditions=conditions, mutations=mutations)


def expression_errors(spec: Obj) -> list[tuple[str, str, str]]:
    """The expressions of a policy spec that do not compile, as kube's validation reports them:
    (field path, expression, "compilation failed: ..." / "must evaluate to ...")."""
    out: list[tuple[str, str, str]] = []
    has_params = spec.get("paramKind") is not None
    specs = [(str(v.get("name") or ""), str(v.get("expression") or "")) for v in _dicts(spec.get("variables"))]
    variables = cel.compile_variables(specs, params=has_params)
    for i, (name, text) in enumerate(specs):
        v = variables.get(name)
        if isinstance(v, CelError) and text.strip():
            out.append((f"spec.variables[{i}].expression", text, v.message))
    for i, m in enumerate(_dicts(spec.get("matchConditions"))):
        text = str(m.get("expression") or "")
        if not text.strip():
            continue
        try:
            cel.compile_expression(text, (), kind="bool", params=has_params)
        except CelError as exc:
            out.append((f"spec.matchConditions[{i}].expression", text, exc.message))
    for i, m in enumerate(_dicts(spec.get("mutations"))):
        field_name = {APPLY_CONFIGURATION: "applyConfiguration", JSON_PATCH: "jsonPatch"}.get(str(m.get("patchType")))
        holder = m.get(field_name) if field_name else None
        text = str(holder.get("expression") or "") if isinstance(holder, dict) else ""
        if not text.strip():
            continue
        compiled = compile_mutation(m, variables=variables.keys(), params=has_params)
        if isinstance(compiled.expression, CelError):
            out.append((f"spec.mutations[{i}].{field_name}.expression", text.strip(), compiled.expression.message))
    return out


def _dicts(value: Any) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

