"""The CEL environment of admission (kube's ``admission/plugin/cel``): what ValidatingAdmissionPolicy,
MutatingAdmissionPolicy and webhooks' ``matchConditions`` compile and evaluate expressions in.

The variables are kube's: ``object``, ``oldObject``, ``request`` (the AdmissionRequest without uid,
object and oldObject), ``namespaceObject`` (the namespace's metadata/spec/status, kube's
``CreateNamespaceObject``), ``params`` (declared only for a policy with ``paramKind``),
``authorizer`` (with ``authorizer.requestResource``) and ``variables`` (a policy's composited
variables, evaluated on first use and once per request). The libraries are those of the custom
resources' CEL (``kapi.object.cel._env``) plus kube's authorizer library.

The engine declares the variables ``dyn``; what kube types is typed here too: each composited
variable has its expression's type (``variables.x`` is compiled as ``variables_x``, a variable of
that type, in an environment made per set of variable types), and ``request`` and
``namespaceObject`` are checked against kube's declared types when compiled (a field they lack does
not compile).

``compile_expression`` gives a ``Compiled`` (or raises ``CelError`` with kube's message: "compilation
failed: ERROR: <input>:1:1: ..." or "must evaluate to bool but got string"); ``activation`` binds a
request; ``Compiled.evaluate`` / ``evaluate_async`` give the value as plain Python or raise
``EvalError`` ("expression '...' resulted in error: ...") / ``OutOfBudget``. Authorizer checks are
asynchronous (the server's authorizer); ``evaluate_async`` resolves the checks an evaluation asks for
and evaluates again with their decisions (expressions are pure, so the result is the same as one
evaluation calling the authorizer inline), each check asked at most once per activation.

Costs follow kube's limits (``k8s.io/apiserver/pkg/apis/cel/config.go``): one expression may cost at
most ``PER_CALL_LIMIT``; an evaluation charges a shared ``Budget`` (a policy's
``RUNTIME_CEL_COST_BUDGET``), estimated on the values as the custom resources' CEL does; an authorizer
check costs 350 000 as kube's library declares.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional

from kapi.object.access import ALLOW, Attributes as AuthzAttributes, UserInfo
from kapi.object.cel import _cost
from kapi.object.cel._env import TAG, _decls, rewrite

if TYPE_CHECKING:
    from kapi.admission.plugin import Attributes
    from kapi.registry.resources import Resource
    from kapi.registry.strategy import Access

__all__ = ["Activation", "Authorizer", "Budget", "CelError", "Compiled", "EvalError", "OutOfBudget",
           "PER_CALL_LIMIT", "RUNTIME_CEL_COST_BUDGET", "RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS",
           "MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES", "activation", "authorizer_value", "compile_expression",
           "namespace_object", "variable_references"]

# k8s.io/apiserver/pkg/apis/cel/config.go
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS = 10_000_000
MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES = 5 * 1024
# k8s.io/apiserver/pkg/cel/library/cost.go: an authorizer check
AUTHZ_CHECK_COST = 350_000

OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

T = cel.Type
_NAMES = ("object", "oldObject", "request", "namespaceObject", "params", "authorizer", "variables")


class CelError(Exception):
    """An expression that does not compile (the message is kube's ``CompilationResult.Error`` detail)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EvalError(CelError):
    """An evaluation that failed: ``expression '<text>' resulted in error: <cel error>``."""


class OutOfBudget(CelError):
    """The shared runtime budget ran out (kube stops evaluating the policy's remaining expressions)."""

    def __init__(self) -> None:
        super().__init__(OUT_OF_BUDGET)


@dataclass(slots=True)
class Budget:
    """A runtime cost budget shared by several evaluations (kube's remainingBudget)."""

    remaining: int = RUNTIME_CEL_COST_BUDGET

    def charge(self, cost: int) -> None:
        if cost > self.remaining:
            self.remaining = -1
            raise OutOfBudget()
        self.remaining -= cost


# ----------------------------------------------------------------- the authorizer library


class _Pending(Exception):
    """An authorizer check whose decision is not known yet (resolved by ``evaluate_async``)."""


_tls = threading.local()


def _state() -> Any:
    return getattr(_tls, "act", None)


def _authz(o: Any, kind: str) -> dict[str, Any]:
    if not isinstance(o, dict) or o.get(TAG) != kind:
        raise ValueError(f"no such overload: expected {kind}")
    return o


def _with(o: Any, kind: str, out_kind: str, **fields: Any) -> dict[str, Any]:
    base = dict(_authz(o, kind))
    base[TAG] = out_kind
    base.update(fields)
    return base


def _check(o: Any, verb: str) -> dict[str, Any]:
    if not isinstance(o, dict) or o.get(TAG) not in ("PathCheck", "ResourceCheck"):
        raise ValueError("no such overload: check")
    key = _check_key(o, verb)
    act = _state()
    if act is None:
        raise ValueError("authorizer not available")
    decision = act.decisions.get(key)
    if decision is None:
        act.pending.add(key)
        raise _Pending("authorizer check pending")
    allowed, reason, error = decision
    return {TAG: "Decision", "allowed": allowed, "reason": reason, "error": error}


def _check_key(o: dict[str, Any], verb: str) -> tuple[Any, ...]:
    user = (o.get("user", ""), tuple(o.get("groups") or ()), o.get("uid", ""))
    if o[TAG] == "PathCheck":
        return (user, verb, False, o.get("path", ""), "", "", "", "", "", "", "")
    return (user, verb, True, "", o.get("group", ""), o.get("resource", ""), o.get("subresource", ""),
            o.get("namespace", ""), o.get("name", ""), o.get("fieldSelector", ""), o.get("labelSelector", ""))


def _service_account(o: Any, namespace: str, name: str) -> dict[str, Any]:
    _authz(o, "Authorizer")
    return {TAG: "Authorizer", "user": f"system:serviceaccount:{namespace}:{name}",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"], "uid": ""}


def _authz_decls() -> list[Any]:
    M, S, B = T.Map(T.STRING, T.DYN), T.STRING, T.BOOL
    fd, ov = cel.FunctionDecl, cel.Overload

    def setter(kind: str, out: str, fname: str) -> Any:
        return lambda o, v: _with(o, kind, out, **{fname: v})

    return [
        fd("path", [ov("authorizer_path", M, [M, S], True, impl=setter("Authorizer", "PathCheck", "path"))]),
        fd("group", [ov("authorizer_group", M, [M, S], True, impl=setter("Authorizer", "GroupCheck", "group"))]),
        fd("serviceAccount", [ov("authorizer_serviceaccount", M, [M, S, S], True, impl=_service_account)]),
        fd("resource", [ov("groupcheck_resource", M, [M, S], True,
                           impl=setter("GroupCheck", "ResourceCheck", "resource"))]),
        fd("subresource", [ov("resourcecheck_subresource", M, [M, S], True,
                              impl=setter("ResourceCheck", "ResourceCheck", "subresource"))]),
        fd("namespace", [ov("resourcecheck_namespace", M, [M, S], True,
                            impl=setter("ResourceCheck", "ResourceCheck", "namespace"))]),
        fd("name", [ov("resourcecheck_name", M, [M, S], True, impl=setter("ResourceCheck", "ResourceCheck", "name"))]),
        fd("fieldSelector", [ov("resourcecheck_fieldselector", M, [M, S], True,
                                impl=setter("ResourceCheck", "ResourceCheck", "fieldSelector"))]),
        fd("labelSelector", [ov("resourcecheck_labelselector", M, [M, S], True,
                                impl=setter("ResourceCheck", "ResourceCheck", "labelSelector"))]),
        fd("check", [ov("resourcecheck_check", M, [M, S], True, impl=_check)]),
        fd("allowed", [ov("decision_allowed", B, [M], True, impl=lambda d: bool(_authz(d, "Decision")["allowed"]))]),
        fd("reason", [ov("decision_reason", S, [M], True, impl=lambda d: str(_authz(d, "Decision")["reason"]))]),
        fd("errored", [ov("decision_errored", B, [M], True, impl=lambda d: bool(_authz(d, "Decision")["error"]))]),
        fd("error", [ov("decision_error", S, [M], True, impl=lambda d: str(_authz(d, "Decision")["error"]))]),
    ]


# ----------------------------------------------------------------- environments

_env_lock = threading.Lock()
_envs: dict[tuple[Any, ...], Any] = {}


def _env(params: bool, authorizer: bool) -> Any:
    """One environment per set of declared variables (kube pre-builds one per combination too)."""
    return _env_with(params, authorizer, ())


def _env_with(params: bool, authorizer: bool, typed: tuple[tuple[str, Any], ...]) -> Any:
    """The environment, with a policy's composited variables declared one by one (``variables_<name>``,
    each of its expression's type), as kube types ``variables`` with a field per variable."""
    key = (params, authorizer, tuple((n, t.name()) for n, t in typed))
    e = _envs.get(key)
    if e is None:
        with _env_lock:
            e = _envs.get(key)
            if e is None:
                names = {"object": T.DYN, "oldObject": T.DYN, "request": T.DYN, "namespaceObject": T.DYN,
                         "variables": T.DYN}
                if params:
                    names["params"] = T.DYN
                if authorizer:
                    names["authorizer"] = T.DYN
                for n, t in typed:
                    names[_VAR_PREFIX + n] = t
                if len(_envs) > 1024:
                    _envs.clear()
                e = _envs[key] = cel.NewEnv(variables=names,
                                            extensions=[ext_optional.ExtOptional(), ext_bindings.ExtBindings()],
                                            functions=_decls() + _authz_decls())
    return e


_VAR_PREFIX = "variables_"
_STATUS = re.compile(r"^[A-Z_]+: ")
_STATUS_TAIL = re.compile(r" \[[A-Z_]+\]$")


def _strip(text: str) -> str:
    return _STATUS_TAIL.sub("", _STATUS.sub("", text))


_TYPE_NAMES = {"BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string", "BYTES": "bytes",
               "DYN": "dyn", "NULL": "null_type", "TIMESTAMP": "google.protobuf.Timestamp",
               "DURATION": "google.protobuf.Duration", "ANY": "any", "ERROR": "*error*"}


def type_name(name: str) -> str:
    """cel-cpp's type name as cel-go's ``Type.String()`` writes it (``list(int)``, ``map(string, dyn)``)."""
    name = name.strip()
    m = re.match(r"^(LIST|MAP|TYPE|optional_type)<(.*)>$", name)
    if m:
        outer = {"LIST": "list", "MAP": "map", "TYPE": "type", "optional_type": "optional_type"}[m.group(1)]
        parts, depth, cur = [], 0, ""
        for c in m.group(2):
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            if c == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += c
        parts.append(cur)
        return f"{outer}({', '.join(type_name(p) for p in parts)})"
    return _TYPE_NAMES.get(name, name.lower())


# kinds → the return types kube's ExpressionAccessors accept (ReturnTypes())
_KINDS: dict[str, tuple[str, ...]] = {
    "bool": ("bool",),
    "string": ("string",),
    "string_or_null": ("string", "null_type"),
    "any": (),
}


# ----------------------------------------------------------------- references to variables

_TOKEN = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[A-Za-z_][A-Za-z0-9_]*|\S",
                    re.S)


def _tokens(text: str) -> list[tuple[str, int]]:
    return [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]


def variable_references(text: str) -> tuple[set[str], list[tuple[str, int]], bool]:
    """The composited variables ``text`` names (``variables.x``, ``variables['x']``), where each is
    named (the "." offset), and whether ``variables`` is used otherwise (then all are needed)."""
    toks = _tokens(text)
    names: set[str] = set()
    where: list[tuple[str, int]] = []
    whole = False
    for i, (t, pos) in enumerate(toks):
        if t != "variables" or (i > 0 and toks[i - 1][0] == "."):
            continue
        nxt = toks[i + 1][0] if i + 1 < len(toks) else ""
        if nxt == "." and i + 2 < len(toks) and re.match(r"[A-Za-z_]", toks[i + 2][0]):
            names.add(toks[i + 2][0])
            where.append((toks[i + 2][0], toks[i + 1][1]))
        elif nxt == "[" and i + 3 < len(toks) and toks[i + 2][0][:1] in "'\"" and toks[i + 3][0] == "]":
            key = toks[i + 2][0][1:-1]
            names.add(key)
            where.append((key, toks[i + 1][1]))
        else:
            whole = True
    return names, where, whole


def _caret(text: str, offset: int) -> str:
    """cel-go's issue location: ``<input>:line:col`` and the source line with a caret."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    line_no = text.count("\n", 0, offset) + 1
    col = offset - line_start
    return f"<input>:{line_no}:{col + 1}", f" | {line}\n | {'.' * col}^"


# ----------------------------------------------------------------- compilation


@dataclass(slots=True, eq=False)
class Compiled:
    """One compiled expression: its program, return type and the variables it reads."""

    text: str
    kind: str
    program: Any
    env: Any
    output: str
    ctype: Any
    references: frozenset[str]
    all_variables: bool
    uses_authorizer: bool
    static_cost: int

    def evaluate(self, act: Activation, budget: Budget | None = None) -> Any:
        """The value of the expression as plain Python (no authorizer check not already resolved)."""
        value, pending = self._run(act, budget)
        if pending:
            raise EvalError(f"expression '{self.text}' resulted in error: authorizer check not resolved")
        return value

    async def evaluate_async(self, act: Activation, budget: Budget | None = None) -> Any:
        """The value, with the authorizer checks it makes resolved through the server's authorizer."""
        if act.authorizer is not None and (self.uses_authorizer or (
                (self.references or self.all_variables) and act.uses_authorizer(self))):
            for _ in range(16):
                needs: set[Any] = set()
                for name in act.needed(self):
                    if act.var_pending(name):
                        needs |= act.var_pending(name)
                        act.forget(name)
                if needs:
                    await act.resolve(needs)
                    continue
                try:
                    _, pending = self._run(act, budget, charge=False)
                except EvalError:
                    pending = set(act.last_pending)
                if not pending and not act.pending_for(self):
                    break
                if pending:
                    await act.resolve(pending)
        return self.evaluate(act, budget)

    def _run(self, act: Activation, budget: Budget | None, *, charge: bool = True) -> tuple[Any, set[Any]]:
        data, celact = act.data_for(self, budget)
        cost = self.static_cost if self.static_cost <= 1000 else _runtime_cost(self.text, data)
        if charge:
            if cost > PER_CALL_LIMIT:
                raise EvalError(f"expression '{self.text}' resulted in error: {COST_LIMIT_EXCEEDED}")
            if budget is not None:
                budget.charge(cost)
        prev = _state()
        _tls.act = act
        act.pending = set()
        try:
            try:
                result = self.program.eval(activation=celact)
            except RuntimeError as e:  # cel-cpp's own iteration limit
                raise EvalError(f"expression '{self.text}' resulted in error: {_eval_message(str(e), act)}") from None
        finally:
            _tls.act = prev
        pending, act.pending = act.pending, set()
        act.last_pending = pending
        if result.type() == T.ERROR:
            if pending:
                return None, pending
            raise EvalError(f"expression '{self.text}' resulted in error: {_eval_message(str(result.value()), act)}")
        return _plain(result.plain_value()), pending


async def evaluate_or_error(c: Compiled | CelError, act: Activation, budget: Budget) -> tuple[Any, str | None]:
    """An expression's (value, None), or (None, kube's compile or evaluation error); OutOfBudget
    propagates (kube's ForInput error)."""
    if isinstance(c, CelError):
        return None, f"compilation error: {c.message}"
    try:
        return await c.evaluate_async(act, budget), None
    except OutOfBudget:
        raise
    except EvalError as exc:
        return None, exc.message


def _runtime_cost(text: str, data: dict[str, Any]) -> int:
    env = {k: ("value", v) for k, v in data.items()}
    total = _cost._cost(list(_cost._tokens(text)), env)
    return _cost.saturating_add(total, AUTHZ_CHECK_COST * len(re.findall(r"\.\s*check\s*\(", text)))


_MACRO_CALL = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(")


def _static_cost(text: str) -> int:
    """The cost charged without looking at the values: one unit a token (and the authorizer's checks)
    for an expression without comprehensions; above the cheap limit (measured on the values) with them."""
    base = len(_cost._tokens(text)) if not _MACRO_CALL.search(text) else 1001
    return _cost.saturating_add(base, AUTHZ_CHECK_COST * len(re.findall(r"\.\s*check\s*\(", text)))


def _plain(v: Any) -> Any:
    """A CEL value as JSON-like Python (kube's opaque values as their text)."""
    if isinstance(v, dict):
        if TAG in v:
            return v.get("v", v)
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


# cel-cpp names the whole qualified reference; cel-go its first segment
_UNDECLARED = re.compile(r"(undeclared reference to '[A-Za-z_][A-Za-z0-9_]*)\.[^']*'")
_NO_VALUE = re.compile(r'No value with name "variables_(.*)" found in Activation')
_KEY_NOT_FOUND = re.compile(r'Key not found in map : "?(.*?)"?$')


def _eval_message(text: str, act: Activation | None = None) -> str:
    """cel-cpp's evaluation error as cel-go words it."""
    text = _strip(text)
    m = _KEY_NOT_FOUND.match(text)
    if m:
        key = m.group(1)
        if act is not None and key in act.var_errors:
            return act.var_errors[key]
        return f"no such key: {key}"
    m = _NO_VALUE.match(text)
    if m and act is not None and m.group(1) in act.var_errors:
        return act.var_errors[m.group(1)]
    m = re.match(r"Index error: index=(-?\d+) size=(\d+)", text)
    if m:
        return f"index out of range: {m.group(1)}"
    m = re.match(r"No matching overloads found : (.*)$", text)
    if m:
        return f"no such overload: {m.group(1)}"
    if text.startswith("Iteration budget exceeded"):
        return COST_LIMIT_EXCEEDED  # cel-cpp's comprehension limit, met before kube's per-call cost
    if text.startswith("Applying SELECT to non-message type"):
        return "no such key"  # a field read on null
    return text


_TERNARY_NULL = re.compile(r"found no matching overload for '_\?_:_' applied to "
                           r"'\(bool, (?:null_type, ([^()]+)|([^()]+), null_type)\)'")
_NULL = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\bnull\b", re.S)


def _compile_in(env: Any, text: str) -> tuple[Any, str]:
    """The program of ``text`` and its type. cel-go gives ``c ? 'a' : null`` the type of its other
    branch (kube's documented auditAnnotations use it); cel-cpp refuses to join a type with null, so
    such an expression is compiled with its nulls as ``dyn(null)`` and typed as cel-go types it."""
    try:
        program = env.compile(text)
    except RuntimeError as e:
        m = _TERNARY_NULL.search(_strip(str(e)))
        if not m:
            raise
        other = (m.group(1) or m.group(2)).strip()
        lifted = _NULL.sub(lambda t: "dyn(null)" if t.group(0) == "null" else t.group(0), text)
        try:
            program = env.compile(lifted)
        except RuntimeError:
            raise e from None
        return program, other
    return program, type_name(program.return_type().name())


def compile_expression(text: str, variables: Iterable[str] | Mapping[str, Compiled | CelError] = (), *,
                       kind: str = "bool", params: bool = True, authorizer: bool = True) -> Compiled:
    """Compile ``text`` in the admission environment: ``variables`` are the composited variables it may
    read (``variables.<name>``), ``params``/``authorizer`` whether those are declared (kube declares
    ``params`` only for a policy with paramKind, ``authorizer`` not in messageExpressions), ``kind``
    the return type required ("bool", "string", "string_or_null", "any"). Raises ``CelError``."""
    declared = dict(variables) if isinstance(variables, Mapping) else {n: None for n in variables}
    refs, where, whole = variable_references(text)
    source = list(text)
    typed: dict[str, Any] = {}
    for name, offset in where:
        if name not in declared:
            loc, src = _caret(text, offset)
            raise CelError(f"compilation failed: ERROR: {loc}: undefined field '{name}'\n{src}")
        if text[offset] == ".":  # variables.x → variables_x (same length: issue columns stay kube's)
            source[offset] = "_"
            v = declared[name]
            typed[name] = v.ctype if isinstance(v, Compiled) else T.DYN
    try:
        env = _env_with(params, authorizer, tuple(sorted(typed.items(), key=lambda kv: kv[0])))
        program, output = _compile_in(env, rewrite("".join(source)))
    except RuntimeError as e:
        raise CelError("compilation failed: " + _UNDECLARED.sub(r"\1'", _strip(str(e)))) from None
    from kapi.admission.policy.typecheck import declared_issues
    issues = declared_issues(text)
    if issues:
        raise CelError("compilation failed: " + issues)
    wanted = _KINDS.get(kind, ())
    if wanted and output not in wanted:
        if len(wanted) == 1:
            raise CelError(f"must evaluate to {wanted[0]} but got {output}")
        raise CelError(f"must evaluate to one of [{' '.join(wanted)}] but got {output}")
    return Compiled(text=text, kind=kind, program=program, env=env, output=output, ctype=program.return_type(),
                    references=frozenset(refs),
                    all_variables=whole, uses_authorizer=authorizer and "authorizer" in text,
                    static_cost=_static_cost(text))


# ----------------------------------------------------------------- activations


@dataclass(slots=True, eq=False)
class Authorizer:
    """The ``authorizer`` variable: who asks (the request's user) and the server's authorizer."""

    access: Access | None
    user: UserInfo
    # authorizer.requestResource: the request's group, resource, subresource, namespace and name
    request_resource: dict[str, str] | None = None

    def value(self) -> dict[str, Any]:
        base = {TAG: "Authorizer", "user": self.user.name, "groups": list(self.user.groups), "uid": self.user.uid}
        if self.request_resource is not None:
            base["requestResource"] = {**base, TAG: "ResourceCheck", **self.request_resource}
        return base

    async def decide(self, key: tuple[Any, ...]) -> tuple[bool, str, str]:
        (name, groups, uid), verb, resource_request, path, group, resource, sub, ns, obj_name, fsel, lsel = key
        if self.access is None:
            return True, "", ""
        user = self.user if (name, tuple(groups), uid) == (self.user.name, tuple(self.user.groups), self.user.uid) \
            else UserInfo(name=name, uid=uid, groups=tuple(groups))
        attrs = AuthzAttributes(user=user, verb=verb, resource_request=resource_request, group=group,
                                version="*" if resource_request else "", resource=resource, subresource=sub,
                                namespace=ns, name=obj_name, path=path, field_selector=fsel, label_selector=lsel)
        try:
            d = await self.access.authorize(attrs)
        except Exception as e:  # an authorizer that could not decide: the decision carries the error
            return False, "", str(e)
        return d.decision == ALLOW, d.reason, d.error


def authorizer_value(access: Access | None, user: UserInfo, a: Attributes | None = None) -> Authorizer:
    """The CEL ``authorizer`` of a request by ``user`` (``a``: its ``authorizer.requestResource``)."""
    rr = None
    if a is not None:
        rr = {"group": a.group, "resource": a.plural, "subresource": a.subresource, "namespace": a.namespace,
              "name": a.name}
    return Authorizer(access=access, user=user, request_resource=rr)


def namespace_object(ns: dict[str, Any] | None) -> dict[str, Any] | None:
    """kube's ``CreateNamespaceObject``: the namespace's spec, status and part of its metadata."""
    if ns is None:
        return None
    md = ns.get("metadata") or {}
    keep = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
            "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")
    out: dict[str, Any] = {"metadata": {k: md[k] for k in keep if k in md}}
    if "spec" in ns:
        out["spec"] = ns["spec"]
    if "status" in ns:
        out["status"] = ns["status"]
    return out


@dataclass(slots=True, eq=False)
class Activation:
    """One request's bindings; composited variables are evaluated when an expression first needs
    them and kept (with their errors) for the rest of the request."""

    object: Any = None
    oldObject: Any = None
    request: Any = None
    params: Any = None
    namespaceObject: Any = None
    authorizer: Authorizer | None = None
    # the policy's compiled variables in declaration order (a CelError for one that failed to compile)
    variables: dict[str, Compiled | CelError] = field(default_factory=dict)
    var_values: dict[str, Any] = field(default_factory=dict)
    var_errors: dict[str, str] = field(default_factory=dict)
    decisions: dict[tuple[Any, ...], tuple[bool, str, str]] = field(default_factory=dict)
    pending: set[Any] = field(default_factory=set)
    last_pending: set[Any] = field(default_factory=set)
    _var_pending: dict[str, set[Any]] = field(default_factory=dict)
    _base: dict[str, Any] | None = None
    _cel: dict[tuple[Any, ...], tuple[dict[str, Any], Any]] = field(default_factory=dict)

    def base(self) -> dict[str, Any]:
        if self._base is None:
            self._base = {"object": self.object, "oldObject": self.oldObject, "request": self.request,
                          "params": self.params, "namespaceObject": self.namespaceObject,
                          "authorizer": self.authorizer.value() if self.authorizer is not None else None}
        return self._base

    def needed(self, c: Compiled) -> list[str]:
        """The composited variables ``c`` reads, directly or through others, in declaration order."""
        want = set(self.variables) if c.all_variables else set(c.references)
        todo = list(want)
        while todo:
            v = self.variables.get(todo.pop())
            if isinstance(v, Compiled):
                more = set(self.variables) if v.all_variables else set(v.references)
                for m in more - want:
                    want.add(m)
                    todo.append(m)
        return [n for n in self.variables if n in want]

    def uses_authorizer(self, c: Compiled) -> bool:
        return any(isinstance(v, Compiled) and v.uses_authorizer
                   for v in (self.variables.get(n) for n in self.needed(c)))

    def var_pending(self, name: str) -> set[Any]:
        return self._var_pending.get(name, set())

    def forget(self, name: str) -> None:
        self._var_pending.pop(name, None)
        self.var_errors.pop(name, None)
        self.var_values.pop(name, None)

    def pending_for(self, c: Compiled) -> bool:
        return any(self._var_pending.get(n) for n in self.needed(c))

    def data_for(self, c: Compiled, budget: Budget | None) -> tuple[dict[str, Any], Any]:
        """The bindings of ``c`` (its variables evaluated first) and the engine's activation of them:
        one per environment and set of variable values, shared by the expressions of the request."""
        key: tuple[Any, ...] = (id(c.env),)
        if c.references or c.all_variables:
            for name in self.needed(c):
                self._variable(name, budget)
            key += tuple((k, id(v)) for k, v in self.var_values.items())
        hit = self._cel.get(key)
        if hit is not None:
            return hit
        data = dict(self.base())
        data["variables"] = dict(self.var_values)
        for k, v in self.var_values.items():
            data[_VAR_PREFIX + k] = v
        out = self._cel[key] = (data, c.env.Activation(data=data))
        return out

    def _variable(self, name: str, budget: Budget | None) -> None:
        if name in self.var_values or name in self.var_errors:
            return
        v = self.variables[name]
        if isinstance(v, CelError):
            self.var_errors[name] = f"composited variable {_go_quote(name)} fails to compile: {v.message}"
            return
        try:
            value, pending = v._run(self, budget)
        except OutOfBudget:
            raise
        except EvalError as e:
            detail = e.message.split(" resulted in error: ", 1)[-1]
            self.var_errors[name] = f"composited variable {_go_quote(name)} fails to evaluate: {detail}"
            return
        if pending:
            self._var_pending[name] = pending
            self.var_errors[name] = f"composited variable {_go_quote(name)} fails to evaluate: authorizer check pending"
            return
        self.var_values[name] = value

    async def resolve(self, keys: set[Any]) -> None:
        """Ask the authorizer for the checks not decided yet."""
        for key in keys:
            if key not in self.decisions:
                if self.authorizer is None:
                    self.decisions[key] = (False, "", "authorizer not available")
                else:
                    self.decisions[key] = await self.authorizer.decide(key)


def _go_quote(s: str) -> str:
    from kapi.object.validation.fields import go_quote
    return go_quote(s)


def activation(a: Attributes, *, params: Any = None, namespace_obj: dict[str, Any] | None = None,
               authorizer: Authorizer | None = None, variables: dict[str, Compiled | CelError] | None = None,
               matched: Resource | None = None, matched_kind: tuple[str, str, str] | None = None,
               obj: Any = None, old: Any = None, versioned: bool = False) -> Activation:
    """The bindings of request ``a``: ``matched``/``matched_kind`` the equivalent resource a policy
    matched (``request.resource``/``kind``), ``obj``/``old`` the objects at that version when
    ``versioned`` (else the request's own), ``namespace_obj`` the namespace as stored."""
    from kapi.admission.review import admission_request
    req = admission_request(a, "", matched=matched, matched_kind=matched_kind, objects=False)
    req.pop("uid", None)
    return Activation(object=obj if versioned else a.obj, oldObject=old if versioned else a.old, request=req,
                      params=params, namespaceObject=namespace_object(namespace_obj), authorizer=authorizer,
                      variables=dict(variables or {}))


def compile_variables(specs: Iterable[tuple[str, str]], *, params: bool = True,
                      authorizer: bool = True) -> dict[str, Compiled | CelError]:
    """A policy's ``variables`` (name, expression) compiled in order, each seeing the ones before it
    (kube's CompileAndStoreVariables); one that fails is kept as its CelError."""
    out: dict[str, Compiled | CelError] = {}
    for name, expr in specs:
        try:
            out[name] = compile_expression(expr, dict(out), kind="any", params=params, authorizer=authorizer)
        except CelError as e:
            out[name] = e
    return out
