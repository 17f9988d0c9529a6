"""Label and field selectors: parsing, matching and canonical strings, as kube-apiserver.

Label selectors follow apimachinery ``pkg/labels/selector.go`` (lexer, parser,
validation and error texts); field selectors follow ``pkg/fields/selector.go``
plus the per-kind field label conversions of the built-in API groups.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kapi.errors import BadRequest
from kapi.object.validation import go_quote, is_qualified_name, is_valid_label_value

__all__ = [
    "FIELD_SELECTORS",
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "field_values",
    "label_selector_from_spec",
    "new_requirement",
    "parse_field_selector",
    "parse_label_selector",
    "selectable_fields",
]

def _invalid(path: str, value: str, detail: str) -> str:
    """field.Invalid(...).Error() for a string value."""
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


def _aggregate(errs: list[str]) -> str:
    """ErrorList.ToAggregate().Error(): deduplicated, bracketed when several."""
    seen: list[str] = []
    for e in errs:
        if e not in seen:
            seen.append(e)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")


def _parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64), None on error."""
    if not _INT64_RE.fullmatch(s):
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None


# -------------------------------------------------------------- label selector

# selection.Operator values, as the Go code spells them.
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
IN: Final = "in"
NOT_IN: Final = "notin"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement: key, operator (selection.Operator string) and values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Requirement.Matches."""
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            have = _parse_int64(labels[self.key])
            want = _parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        out = ("!" if self.operator == DOES_NOT_EXIST else "") + self.key
        if self.operator in (EXISTS, DOES_NOT_EXIST):
            return out
        sep = {EQUALS: "=", DOUBLE_EQUALS: "==", NOT_EQUALS: "!=", IN: " in ",
               NOT_IN: " notin ", GREATER_THAN: ">", LESS_THAN: "<"}[self.operator]
        vals = ",".join(sorted(self.values)) if len(self.values) != 1 else self.values[0]
        if self.operator in (IN, NOT_IN):
            vals = f"({vals})"
        return out + sep + vals


def new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """labels.NewRequirement: validate and build one requirement.

    Raises:
        BadRequest: with the aggregated field errors as the message.
    """
    errs: list[str] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(_invalid("key", key, "; ".join(key_errs)))
    if operator in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            shown = ", ".join(go_quote(v) for v in values)
            errs.append(f"values: Invalid value: []string{{{shown}}}: "
                        "for 'Gt', 'Lt' operators, exactly one value is required")
        for i, v in enumerate(values):
            if _parse_int64(v) is None:
                errs.append(_invalid(f"values[{i}]", v,
                                     "for 'Gt', 'Lt' operators, the value must be an integer"))
    elif operator in (IN, NOT_IN) and not values:
        errs.append("values: Invalid value: []string{}: "
                    "for 'in', 'notin' operators, values set can't be empty")
    for i, v in enumerate(values):
        value_errs = is_valid_label_value(v)
        if value_errs:
            errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(value_errs)))
    if errs:
        raise BadRequest(_aggregate(errs))
    return Requirement(key, operator, tuple(values))


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """AND of label requirements, sorted by key as the parser leaves them."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when every requirement matches."""
        return all(r.matches(labels) for r in self.requirements)

    def exact_value(self, key: str) -> str | None:
        """RequiresExactMatch: the one value the first requirement on ``key`` demands."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# Tokens of the label selector lexer.
_ERROR, _END, _CLOSE_PAR, _COMMA, _NOT, _DOUBLE_EQ, _EQ, _GT, _IDENT, _IN, _LT, _NEQ, _NOTIN, _OPEN_PAR = range(14)

_STRING_TO_TOKEN: Final = {
    ")": _CLOSE_PAR, ",": _COMMA, "!": _NOT, "==": _DOUBLE_EQ, "=": _EQ, ">": _GT,
    "in": _IN, "<": _LT, "!=": _NEQ, "notin": _NOTIN, "(": _OPEN_PAR,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")


class _Lexer:
    """Port of labels.Lexer; a NUL character reads as end of input, as in Go."""

    def __init__(self, s: str) -> None:
        self.s = s
        self.pos = 0

    def _read(self) -> str:
        if self.pos < len(self.s):
            ch = self.s[self.pos]
            self.pos += 1
            return ch
        return "\0"

    def _unread(self) -> None:
        self.pos -= 1

    def _scan_id_or_keyword(self) -> tuple[int, str]:
        buf = []
        while True:
            ch = self._read()
            if ch == "\0":
                break
            if ch in _SPECIAL or ch in _WHITESPACE:
                self._unread()
                break
            buf.append(ch)
        s = "".join(buf)
        return _STRING_TO_TOKEN.get(s, _IDENT), s

    def _scan_special(self) -> tuple[int, str]:
        last: tuple[int, str] | None = None
        buf = ""
        while True:
            ch = self._read()
            if ch == "\0":
                break
            if ch in _SPECIAL:
                buf += ch
                if buf in _STRING_TO_TOKEN:
                    last = (_STRING_TO_TOKEN[buf], buf)
                elif last is not None:
                    self._unread()
                    break
            else:
                self._unread()
                break
        if last is None:
            return _ERROR, f"error expected: keyword found '{buf}'"
        return last

    def lex(self) -> tuple[int, str]:
        ch = self._read()
        while ch in _WHITESPACE:
            ch = self._read()
        if ch == "\0":
            return _END, ""
        self._unread()
        if ch in _SPECIAL:
            return self._scan_special()
        return self._scan_id_or_keyword()


class _ParseError(Exception):
    """A parser error carrying kube-apiserver's message text."""


class _Parser:
    """Port of labels.Parser."""

    def __init__(self, text: str) -> None:
        lexer = _Lexer(text)
        self.items: list[tuple[int, str]] = []
        while True:
            tok = lexer.lex()
            self.items.append(tok)
            if tok[0] == _END:
                break
        self.pos = 0

    def _lookahead(self, values: bool = True) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_IN, _NOTIN):
            tok = _IDENT
        return tok, lit

    def _consume(self, values: bool = True) -> tuple[int, str]:
        tok = self._lookahead(values)
        self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._lookahead()
            if tok in (_IDENT, _NOT):
                try:
                    reqs.append(self._requirement())
                except (_ParseError, BadRequest) as exc:
                    raise _ParseError(f"unable to parse requirement: {exc}") from None
                tok, lit = self._consume()
                if tok == _END:
                    return reqs
                if tok == _COMMA:
                    tok2, lit2 = self._lookahead()
                    if tok2 not in (_IDENT, _NOT):
                        raise _ParseError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise _ParseError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _END:
                return reqs
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        operator = ""
        tok, lit = self._consume()
        if tok == _NOT:
            operator = DOES_NOT_EXIST
            tok, lit = self._consume()
        if tok != _IDENT:
            raise _ParseError(f"found '{lit}', expected: identifier")
        key_errs = is_qualified_name(lit)
        if key_errs:
            # The parser validates with a nil field path, which prints as "<nil>".
            raise _ParseError(_invalid("<nil>", lit, "; ".join(key_errs)))
        key = lit
        if self._lookahead()[0] in (_END, _COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(key, operator, [])
        operator = self._operator()
        if operator in (IN, NOT_IN):
            values = self._values()
        else:
            values = self._exact_value()
        return new_requirement(key, operator, sorted(values))

    def _operator(self) -> str:
        tok, lit = self._consume(values=False)
        ops = {_IN: IN, _EQ: EQUALS, _DOUBLE_EQ: DOUBLE_EQUALS, _GT: GREATER_THAN,
               _LT: LESS_THAN, _NOTIN: NOT_IN, _NEQ: NOT_EQUALS}
        if tok not in ops:
            raise _ParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return ops[tok]

    def _values(self) -> set[str]:
        tok, lit = self._consume()
        if tok != _OPEN_PAR:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self._lookahead()
        if tok in (_IDENT, _COMMA):
            s = self._identifiers()
            if self._consume()[0] != _CLOSE_PAR:
                # Go reports the literal seen before the list, a quirk kept on purpose.
                raise _ParseError(f"found '{lit}', expected: ')'")
            return s
        if tok == _CLOSE_PAR:
            self._consume()
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def _identifiers(self) -> set[str]:
        s: set[str] = set()
        while True:
            tok, lit = self._consume()
            if tok == _IDENT:
                s.add(lit)
                tok2, lit2 = self._lookahead()
                if tok2 == _COMMA:
                    continue
                if tok2 == _CLOSE_PAR:
                    return s
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not s:
                    s.add("")  # "(,"
                tok2 = self._lookahead()[0]
                if tok2 == _CLOSE_PAR:
                    s.add("")  # ",)"
                    return s
                if tok2 == _COMMA:
                    self._consume()
                    s.add("")  # ",,"
                continue
            raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._lookahead()[0] in (_END, _COMMA):
            return {""}
        tok, lit = self._consume()
        if tok == _IDENT:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """labels.Parse.

    Raises:
        BadRequest: the parser's message, as kube-apiserver answers a bad ``labelSelector``.
    """
    try:
        reqs = _Parser(text).parse()
    except _ParseError as exc:
        raise BadRequest(str(exc)) from None
    # Stable sort by key: Go's sort.Sort keeps small inputs in order too.
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


def label_selector_from_spec(spec: Mapping[str, Any] | None) -> LabelSelector | None:
    """metav1.LabelSelectorAsSelector; None for a nil selector (selects nothing).

    Raises:
        BadRequest: for an invalid key, value or operator.
    """
    if spec is None:
        return None
    reqs = [new_requirement(k, EQUALS, [v]) for k, v in (spec.get("matchLabels") or {}).items()]
    ops = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
    for expr in spec.get("matchExpressions") or ():
        op = ops.get(expr.get("operator", ""))
        if op is None:
            raise BadRequest(f"{go_quote(expr.get('operator', ''))} is not a valid label selector operator")
        reqs.append(new_requirement(expr.get("key", ""), op, list(expr.get("values") or ())))
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


# -------------------------------------------------------------- field selector


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One field term: ``field=value`` (operator "=") or ``field!=value`` ("!=")."""

    field: str
    operator: str
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        """A missing field reads as the empty string, as fields.Set.Get."""
        have = fields.get(self.field, "")
        return have == self.value if self.operator == "=" else have != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{_escape_field_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """AND of field terms, in the parser's (sorted term text) order."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing."""
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True when every term matches."""
        return all(r.matches(fields) for r in self.requirements)

    def exact_value(self, field: str) -> str | None:
        """RequiresExactMatch: the value of the first ``field=value`` term."""
        for r in self.requirements:
            if r.field == field and r.operator == "=":
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _escape_field_value(s: str) -> str:
    return s.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _split_terms(text: str) -> list[str]:
    """Split on commas not escaped by a backslash."""
    if not text:
        return []
    terms, start, in_slash = [], 0, False
    for i, ch in enumerate(text):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    # The first operator occurrence splits; "!=" and "==" are tried before "=".
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def _unescape_field_value(s: str) -> str:
    if not any(c in s for c in "\\,="):
        return s
    out, in_slash = [], False
    for ch in s:
        if in_slash:
            if ch not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Go formats the rune with %v, which prints its code point.
            raise BadRequest(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


_META_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})

# Extra selectable fields per kind (beyond metadata.name / metadata.namespace).
FIELD_SELECTORS: Final[Mapping[str, tuple[str, ...]]] = {
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
            "status.podIPs", "status.nominatedNodeName"),
    "Node": ("spec.unschedulable",),
    "Event": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
              "involvedObject.uid", "involvedObject.apiVersion",
              "involvedObject.resourceVersion", "involvedObject.fieldPath",
              "reason", "reportingComponent", "source", "type"),
    "Secret": ("type",),
    "Namespace": ("status.phase",),
    "Service": ("spec.clusterIP", "spec.type"),
    "ReplicaSet": ("status.replicas",),
    "ReplicationController": ("status.replicas",),
    "Job": ("status.successful",),
    "CertificateSigningRequest": ("spec.signerName",),
    "ClusterTrustBundle": ("spec.signerName",),
}

# Kinds whose field label conversion lists every allowed field itself (so some
# drop metadata.namespace) and answers unknown fields with its own message.
_CONVERSION_ALLOWED: Final[Mapping[str, frozenset[str]]] = {
    "Pod": _META_FIELDS | frozenset(FIELD_SELECTORS["Pod"]),
    "Node": frozenset({"metadata.name", "spec.unschedulable"}),
    "ReplicationController": _META_FIELDS | {"status.replicas"},
    "Event": _META_FIELDS | frozenset(FIELD_SELECTORS["Event"]),
    "Namespace": frozenset({"metadata.name", "status.phase"}),
    "Secret": _META_FIELDS | {"type"},
    "Service": _META_FIELDS | {"spec.clusterIP", "spec.type"},
    "Job": _META_FIELDS | {"status.successful"},
    "CertificateSigningRequest": frozenset({"metadata.name", "spec.signerName"}),
    "ClusterTrustBundle": frozenset({"metadata.name", "spec.signerName"}),
}
_UNKNOWN_FIELD_MESSAGE: Final[Mapping[str, str]] = {
    "Job": "field label {q} not supported for batchv1.Job",
}
# Old clients send spec.host; the Pod conversion renames it.
_FIELD_ALIASES: Final[Mapping[str, Mapping[str, str]]] = {"Pod": {"spec.host": "spec.nodeName"}}


def selectable_fields(kind: str) -> frozenset[str]:
    """The field names a field selector may use for ``kind``."""
    if kind in _CONVERSION_ALLOWED:
        return _CONVERSION_ALLOWED[kind]
    return _META_FIELDS | frozenset(FIELD_SELECTORS.get(kind, ()))


def _unknown_field(field: str, kind: str | None, allowed: Collection[str]) -> BadRequest:
    if kind is not None and kind in _UNKNOWN_FIELD_MESSAGE:
        return BadRequest(_UNKNOWN_FIELD_MESSAGE[kind].format(q=go_quote(field)))
    if (kind is not None and kind in _CONVERSION_ALLOWED) or (
        kind is None and not set(allowed) <= _META_FIELDS
    ):
        return BadRequest(f"field label not supported: {field}")
    return BadRequest(
        f'{go_quote(field)} is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def parse_field_selector(
    text: str, allowed: Collection[str], *, kind: str | None = None
) -> FieldSelector:
    """fields.ParseSelector followed by the kind's field label conversion.

    ``kind`` picks kube-apiserver's message for an unknown field; without it the
    message follows ``allowed`` (metadata only → the default conversion's text).

    Raises:
        BadRequest: malformed selector or a field not in ``allowed``.
    """
    terms = sorted(_split_terms(text))
    parsed: list[FieldRequirement] = []
    for term in terms:
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        lhs, op, rhs = split
        parsed.append(FieldRequirement(lhs, "!=" if op == "!=" else "=", _unescape_field_value(rhs)))
    aliases = _FIELD_ALIASES.get(kind or "", {})
    out = []
    for req in parsed:
        field = aliases.get(req.field, req.field)
        if field not in allowed and req.field not in aliases:
            raise _unknown_field(req.field, kind, allowed)
        out.append(FieldRequirement(field, req.operator, req.value))
    return FieldSelector(tuple(out))


# ------------------------------------------------------------- field values


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _bool(value: Any) -> str:
    return "true" if value is True else "false"


def _int(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


def field_values(kind: str, obj: Mapping[str, Any], namespaced: bool) -> dict[str, str]:
    """The selectable field set of an object, each value as its string (fields.Set)."""
    meta = obj.get("metadata") or {}
    out = {"metadata.name": _s(meta.get("name"))}
    if namespaced:
        out["metadata.namespace"] = _s(meta.get("namespace"))
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if kind == "Pod":
        pod_ips = status.get("podIPs") or []
        pod_ip = _s(_get(pod_ips[0], "ip")) if pod_ips else _s(status.get("podIP"))
        out.update({
            "spec.nodeName": _s(spec.get("nodeName")),
            "spec.restartPolicy": _s(spec.get("restartPolicy")),
            "spec.schedulerName": _s(spec.get("schedulerName")),
            "spec.serviceAccountName": _s(spec.get("serviceAccountName")),
            "spec.hostNetwork": _bool(spec.get("hostNetwork")),
            "status.phase": _s(status.get("phase")),
            "status.podIP": pod_ip,
            "status.nominatedNodeName": _s(status.get("nominatedNodeName")),
        })
    elif kind == "Node":
        out["spec.unschedulable"] = _bool(spec.get("unschedulable"))
    elif kind == "Event":
        inv = obj.get("involvedObject") or {}
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            out[f"involvedObject.{f}"] = _s(inv.get(f))
        out["reason"] = _s(obj.get("reason"))
        out["reportingComponent"] = _s(obj.get("reportingComponent"))
        out["source"] = _s(_get(obj, "source", "component"))
        out["type"] = _s(obj.get("type"))
    elif kind == "Secret":
        out["type"] = _s(obj.get("type"))
    elif kind == "Namespace":
        out["status.phase"] = _s(status.get("phase"))
    elif kind == "Service":
        out["spec.clusterIP"] = _s(spec.get("clusterIP"))
        out["spec.type"] = _s(spec.get("type"))
    elif kind in ("ReplicaSet", "ReplicationController"):
        out["status.replicas"] = _int(status.get("replicas"))
    elif kind == "Job":
        out["status.successful"] = _int(status.get("succeeded"))
    elif kind in ("CertificateSigningRequest", "ClusterTrustBundle"):
        out["spec.signerName"] = _s(spec.get("signerName"))
    return out
