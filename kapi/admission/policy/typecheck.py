"""Type checking of ValidatingAdmissionPolicies (kube's policy/validating/typechecking.go): each
validation's expression and messageExpression checked against the schemas of the kinds the policy's
``matchConstraints`` name (at most 10, sorted by group, version and kind; wildcards and subresources
skipped), with ``params`` of the paramKind's schema. What is found goes to the policy's
``status.typeChecking.expressionWarnings`` (the status controller writes it) and never changes what
the policy does.

kube compiles the expression with ``object``/``oldObject``/``params`` declared with the kinds' CEL
types. The CEL engine here types them ``dyn``, so the same issues are found by walking the
expression's selections against the schema: a field a struct type does not have ("undefined field
'x'", at the selecting ".", as cel-go places it), through lists' items and maps' values, and into the
element variables of the comprehension macros (``all``, ``exists``, ``exists_one``, ``map``,
``filter``); and a comparison of a typed scalar field with a literal of another type ("found no
matching overload for '_==_' applied to '(int, string)'"). Expressions that do not compile report
their compiler issues.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from kapi.admission import cel
from kapi.admission.policy.generic import ConfigError, gvk_string, parse_api_version
from kapi.object.schema import FieldDef, Schema, TypeDef
from kapi.object.structural import Structural, from_props
from kapi.registry.resources import ResourceTable

Obj = dict[str, Any]
MAX_TYPES_TO_CHECK = 10
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_MACROS = ("all", "exists", "exists_one", "map", "filter")
_OPS = {"==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_"}
_SCALARS = {"integer": "int", "number": "double", "string": "string", "boolean": "bool"}
_TOKEN = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|[rRbB]?'(?:[^'\\]|\\.)*'|[rRbB]?\"(?:[^\"\\]|\\.)*\""
                    r"|\d+\.\d+(?:[eE][+-]?\d+)?|\d+[uU]?|0x[0-9a-fA-F]+|[A-Za-z_][A-Za-z0-9_]*"
                    r"|==|!=|<=|>=|&&|\|\||\S", re.S)


def types_to_check(policy: Obj, table: ResourceTable) -> list[tuple[str, str, str]]:
    """kube's typesToCheck: the kinds of the resources the policy's resourceRules name."""
    constraints = (policy.get("spec") or {}).get("matchConstraints") or {}
    rules = constraints.get("resourceRules") or []
    found: set[tuple[str, str, str]] = set()
    count = 0
    for rule in rules:
        groups = [str(g) for g in rule.get("apiGroups") or []]
        versions = [str(v) for v in rule.get("apiVersions") or []]
        if not groups or any("*" in g for g in groups) or not versions or any("*" in v for v in versions):
            continue
        resources = [str(r) for r in rule.get("resources") or [] if "*" not in r and "/" not in r]
        if not resources:
            continue
        for g in sorted(groups):
            for v in sorted(versions):
                for r in sorted(resources):
                    res = table.get(g, v, r)
                    if res is None:
                        continue
                    found.add((res.group, res.version, res.kind))
                    count += 1
                    if count == MAX_TYPES_TO_CHECK:
                        return sorted(found)
    return sorted(found)


_S = {"type": "string"}
_GVK = {"type": "object", "properties": {"group": _S, "version": _S, "kind": _S}}
_GVR = {"type": "object", "properties": {"group": _S, "version": _S, "resource": _S}}
_LIST_S = {"type": "array", "items": _S}
# kube's BuildRequestType and BuildNamespaceType (admission/plugin/cel/compile.go)
_REQUEST = {"type": "object", "properties": {
    "kind": _GVK, "resource": _GVR, "subResource": _S, "requestKind": _GVK, "requestResource": _GVR,
    "requestSubResource": _S, "name": _S, "namespace": _S, "operation": _S,
    "userInfo": {"type": "object", "properties": {
        "username": _S, "uid": _S, "groups": _LIST_S,
        "extra": {"type": "object", "additionalProperties": _LIST_S}}},
    "dryRun": {"type": "boolean"}, "options": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
_NAMESPACE = {"type": "object", "properties": {
    "metadata": {"type": "object", "properties": {
        "name": _S, "generateName": _S, "namespace": _S,
        "labels": {"type": "object", "additionalProperties": _S},
        "annotations": {"type": "object", "additionalProperties": _S},
        "UID": _S, "creationTimestamp": _S, "deletionGracePeriodSeconds": {"type": "integer"},
        "deletionTimestamp": _S, "generation": {"type": "integer"}, "resourceVersion": _S,
        "finalizers": _LIST_S}},
    "spec": {"type": "object", "properties": {"finalizers": _LIST_S}},
    "status": {"type": "object", "properties": {
        "conditions": {"type": "array", "items": {"type": "object", "properties": {
            "status": _S, "type": _S, "lastTransitionTime": _S, "message": _S, "reason": _S}}},
        "phase": _S}}}}
_NO_SCHEMA = Schema([])


@functools.cache
def _request_type() -> Structural:
    return from_props(_REQUEST)


@functools.cache
def _namespace_type() -> Structural:
    return from_props(_NAMESPACE)


@dataclass(frozen=True, slots=True)
class _Root:
    """A custom resource's type: its schema, with apiVersion, kind and metadata as every object has them."""

    schema: Structural


def _type_of(gvk: tuple[str, str, str], schema: Schema, table: ResourceTable) -> Any:
    """The schema of a kind: a built-in type, or a custom resource's structural schema (kube's resolver)."""
    t = schema.type_for(*gvk)
    if t is not None:
        return t
    for res in table.resources:
        if (res.group, res.version, res.kind) == gvk:
            st = getattr(res.strategy, "schema", None)
            return _Root(st) if isinstance(st, Structural) else None
    return None


def _param_gvk(policy: Obj) -> tuple[str, str, str] | None:
    pk = (policy.get("spec") or {}).get("paramKind")
    if not pk:
        return None
    try:
        g, v = parse_api_version(str(pk.get("apiVersion") or ""))
    except ConfigError:
        return None
    return (g, v, str(pk.get("kind") or ""))


def check(policy: Obj, schema: Schema, table: ResourceTable) -> list[Obj]:
    """kube's TypeChecker.Check: the ExpressionWarnings of ``policy`` (empty when none)."""
    kinds = [(gvk, t) for gvk in types_to_check(policy, table) if (t := _type_of(gvk, schema, table)) is not None]
    pgvk = _param_gvk(policy)
    ptype = _type_of(pgvk, schema, table) if pgvk is not None else None
    spec = policy.get("spec") or {}
    has_params = spec.get("paramKind") is not None
    variables = [str(v.get("name") or "") for v in spec.get("variables") or ()]
    var_exprs = {str(v.get("name") or ""): str(v.get("expression") or "") for v in spec.get("variables") or ()}
    warnings: list[Obj] = []
    for i, v in enumerate(spec.get("validations") or ()):
        for fname in ("expression", "messageExpression"):
            text = v.get(fname)
            if fname == "messageExpression" and not text:
                continue
            out = []
            for gvk, t in kinds:
                issues = check_expression(str(text or ""), schema, t, ptype, variables, has_params, var_exprs)
                if issues:
                    out.append(f"{gvk_string(*gvk)}: {issues}\n")
            if out:
                warnings.append({"fieldRef": f"spec.validations[{i}].{fname}", "warning": "\n".join(out)})
    return warnings


def _variable_shapes(schema: Schema, env: dict[str, Any], var_exprs: dict[str, str]) -> dict[str, Any]:
    """The types of the variables that are a plain selection (``object.spec``): kube types every
    variable by its expression; these are the ones whose type is a schema's."""
    out: dict[str, Any] = {}
    for name, text in var_exprs.items():
        toks = [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]
        if not toks:
            continue
        w = _Walker(schema, toks, [])
        w.var_shapes = out
        end = w.chain_at(0, len(toks), env)
        if end == len(toks) and w.last_shape is not None:
            out[name] = w.last_shape
    return out


def declared_issues(text: str) -> str:
    """The issues of ``text`` with ``request`` and ``namespaceObject`` of the types kube declares them
    with in every admission expression (so kube's compiler reports them): "" when none."""
    if "request" not in text and "namespaceObject" not in text:
        return ""
    toks = [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]
    found: list[tuple[int, str]] = []
    _Walker(_NO_SCHEMA, toks, found).walk(0, len(toks), {"request": _request_type(),
                                                         "namespaceObject": _namespace_type()})
    return "\n".join(_issue(text, offset, message) for offset, message in sorted(set(found)))


def check_expression(text: str, schema: Schema, obj_type: Any, param_type: Any,
                     variables: list[str], has_params: bool, var_exprs: dict[str, str] | None = None) -> str:
    """The issues of one expression with ``object``/``oldObject`` of ``obj_type`` (cel-go's
    ``Issues.String()``), "" when none."""
    try:
        cel.compile_expression(text, variables, kind="any", params=has_params, authorizer=True)
    except cel.CelError as exc:
        return exc.message.removeprefix("compilation failed: ")
    toks = [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]
    env: dict[str, Any] = {"request": _request_type(), "namespaceObject": _namespace_type()}
    if obj_type is not None:
        env["object"] = env["oldObject"] = obj_type
    if param_type is not None and has_params:
        env["params"] = param_type
    found: list[tuple[int, str]] = []
    walker = _Walker(schema, toks, found)
    walker.var_shapes = _variable_shapes(schema, env, var_exprs or {})
    walker.walk(0, len(toks), env)
    if not found:
        return ""
    found = sorted(set(found))
    return "\n".join(_issue(text, offset, message) for offset, message in found)


def _issue(text: str, offset: int, message: str) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    col = offset - line_start
    line_no = text.count("\n", 0, offset) + 1
    return f"ERROR: <input>:{line_no}:{col + 1}: {message}\n | {line}\n | {'.' * col}^"


Shape = Any  # TypeDef | FieldDef | None (unknown: dyn)


class _Walker:
    def __init__(self, schema: Schema, toks: list[tuple[str, int]], found: list[tuple[int, str]]) -> None:
        self.schema = schema
        self.toks = toks
        self.found = found
        self.var_shapes: dict[str, Any] = {}
        self.last_shape: Shape = None

    def chain_at(self, i: int, end: int, env: dict[str, Any]) -> int:
        """Walk the selection starting at toks[i] (a typed root or ``variables.<typed>``); its end."""
        toks = self.toks
        t = toks[i][0]
        if t in env and (i == 0 or toks[i - 1][0] != "."):
            return self._chain(i + 1, end, env, env[t])
        if t == "variables" and (i == 0 or toks[i - 1][0] != ".") and i + 2 < end and toks[i + 1][0] == "." \
                and toks[i + 2][0] in self.var_shapes and not (i + 3 < end and toks[i + 3][0] == "("):
            return self._chain(i + 3, end, env, self.var_shapes[toks[i + 2][0]])
        return -1

    def _norm(self, s: Shape) -> Shape:
        if isinstance(s, FieldDef) and s.ref:
            return self.schema.resolve(s) or None
        return s

    def _field(self, s: Shape, name: str, dot: int) -> Shape:
        s = self._norm(s)
        if isinstance(s, _Root):
            if name in ("apiVersion", "kind"):
                return Structural(type="string")
            if name == "metadata":
                return self.schema.get(OBJECT_META)
            s = s.schema
        if isinstance(s, Structural):
            if s.type == "object" and not s.preserve_unknown_fields and not s.embedded_resource \
                    and s.additional_properties in (None, False) and s.properties:
                f = s.properties.get(name)
                if f is None:
                    self.found.append((dot, f"undefined field '{name}'"))
                return f
            if isinstance(s.additional_properties, Structural):
                return s.additional_properties
            return None
        if isinstance(s, TypeDef):
            if s.type == "object" and s.is_struct and s.fields:
                f = s.field(name)
                if f is None:
                    self.found.append((dot, f"undefined field '{name}'"))
                return f
            return None
        if isinstance(s, FieldDef):
            if s.type == "object" and s.values is not None:
                return s.values  # a map: the key's value
            return None
        return None

    def _element(self, s: Shape) -> Shape:
        s = self._norm(s)
        if isinstance(s, Structural):
            if s.type == "array":
                return s.items
            if isinstance(s.additional_properties, Structural):
                return Structural(type="string")
            return None
        if isinstance(s, FieldDef):
            if s.type == "array":
                return s.items
            if s.type == "object" and s.values is not None:
                return FieldDef(name="", type="string")  # macros over a map iterate its keys
        return None

    def _index(self, s: Shape) -> Shape:
        s = self._norm(s)
        if isinstance(s, Structural):
            if s.type == "array":
                return s.items
            if isinstance(s.additional_properties, Structural):
                return s.additional_properties
            return None
        if isinstance(s, FieldDef):
            if s.type == "array":
                return s.items
            if s.type == "object" and s.values is not None:
                return s.values
        return None

    def _scalar(self, s: Shape) -> str:
        s = self._norm(s)
        if isinstance(s, Structural):
            return "" if s.int_or_string or s.nullable else _SCALARS.get(s.type, "")
        if isinstance(s, (FieldDef, TypeDef)) and not s.format.startswith("int-or-string"):
            if isinstance(s, FieldDef) and (s.items is not None or s.values is not None):
                return ""
            return _SCALARS.get(s.type, "")
        return ""

    def _close(self, i: int) -> int:
        """The index of the bracket closing toks[i]."""
        depth = 0
        for j in range(i, len(self.toks)):
            t = self.toks[j][0]
            if t in ("(", "[", "{"):
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return j
        return len(self.toks) - 1

    def walk(self, i: int, end: int, env: dict[str, Any]) -> None:
        while i < end:
            nxt = self.chain_at(i, end, env)
            if nxt >= 0:
                i = nxt
                continue
            i += 1

    def _chain(self, j: int, end: int, env: dict[str, Any], shape: Shape) -> int:
        toks = self.toks
        self.last_shape = None
        while j < end:
            t = toks[j][0]
            if t == "." and j + 1 < end and re.match(r"[A-Za-z_]", toks[j + 1][0]):
                name = toks[j + 1][0]
                if j + 2 < end and toks[j + 2][0] == "(":
                    close = self._close(j + 2)
                    args_start = j + 3
                    if (name in _MACROS and args_start + 1 < close and toks[args_start + 1][0] == ","
                            and re.match(r"[A-Za-z_]", toks[args_start][0])):
                        inner = {**env, toks[args_start][0]: self._element(shape)}
                        self.walk(args_start + 2, close, inner)
                    else:
                        self.walk(args_start, close, env)
                    self.last_shape = None
                    return close + 1
                shape = self._field(shape, name, toks[j][1]) if shape is not None else None
                j += 2
                continue
            if t == "[":
                close = self._close(j)
                self.walk(j + 1, close, env)
                shape = self._index(shape) if shape is not None else None
                j = close + 1
                continue
            break
        self.last_shape = shape
        # a comparison with a literal of another type
        if shape is not None and j + 1 < end and toks[j][0] in _OPS:
            left = self._scalar(shape)
            right = _literal(toks[j + 1][0])
            after = toks[j + 2][0] if j + 2 < end else ""
            if left and right and after in ("", ")", "&&", "||", "?", ":", ",", "]", "}") and left != right \
                    and not (left in ("int", "double") and right in ("int", "double", "uint")):
                self.found.append((toks[j][1], f"found no matching overload for '{_OPS[toks[j][0]]}' applied to "
                                               f"'({left}, {right})'"))
        return j


def _literal(tok: str) -> str:
    if tok[:1] in ("'", '"') or (tok[:1] in "rR" and tok[1:2] in ("'", '"')):
        return "string"
    if tok[:1] in "bB" and tok[1:2] in ("'", '"'):
        return "bytes"
    if tok in ("true", "false"):
        return "bool"
    if tok == "null":
        return ""
    if re.fullmatch(r"\d+\.\d+(?:[eE][+-]?\d+)?", tok):
        return "double"
    if re.fullmatch(r"\d+[uU]", tok):
        return "uint"
    if re.fullmatch(r"\d+|0x[0-9a-fA-F]+", tok):
        return "int"
    return ""
