"""Label and field selectors: parsing, matching and canonical strings, as kube-apiserver.

Label selectors follow apimachinery ``pkg/labels/selector.go`` (lexer, parser,
validation and error texts); field selectors follow ``pkg/fields/selector.go``
and its field label conversion, whose per-kind part (a ``FieldLabels`` and the
field values) each kind's strategy holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from kapi.errors import BadRequest, aggregate_messages
from kapi.object.validation import go_quote, is_qualified_name, is_valid_label_value

__all__ = [
    "META_FIELDS",
    "FieldLabels",
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "bool_value",
    "int_value",
    "label_selector_from_spec",
    "meta_field_values",
    "new_requirement",
    "parse_field_selector",
    "parse_label_selector",
    "text_value",
    "value_at",
]

def _invalid(path: str, value: str, detail: str) -> str:
    """field.Invalid(...).Error() for a string value."""
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


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
        raise BadRequest(aggregate_messages(errs))
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


META_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True, slots=True)
class FieldLabels:
    """The fields a kind's field selectors may name, as the kind's field label conversion has them.

    A kind's strategy holds its own; the default is kube's default conversion (metadata only).
    """

    fields: frozenset[str] = META_FIELDS
    # The kind has a conversion func of its own, which lists every allowed field itself (so some
    # drop metadata.namespace) and answers an unknown field "field label not supported".
    converts: bool = False
    unknown_message: str = ""  # a message of its own for an unknown field; {q} is the quoted field
    aliases: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # old name -> field


def _unknown_field(name: str, labels: FieldLabels | None, allowed: Collection[str]) -> BadRequest:
    if labels is not None and labels.unknown_message:
        return BadRequest(labels.unknown_message.format(q=go_quote(name)))
    if (labels is not None and labels.converts) or (labels is None and not set(allowed) <= META_FIELDS):
        return BadRequest(f"field label not supported: {name}")
    return BadRequest(
        f'{go_quote(name)} is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def parse_field_terms(text: str) -> FieldSelector:
    """fields.ParseSelector alone, without a kind's field label conversion: any field name is kept
    (what authorization reads of a request's selector, kube's AuthorizeWithSelectors).

    Raises:
        BadRequest: malformed selector.
    """
    parsed: list[FieldRequirement] = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        lhs, op, rhs = split
        parsed.append(FieldRequirement(lhs, "!=" if op == "!=" else "=", _unescape_field_value(rhs)))
    return FieldSelector(tuple(parsed))


def parse_field_selector(
    text: str, allowed: Collection[str], *, labels: FieldLabels | None = None
) -> FieldSelector:
    """fields.ParseSelector followed by the kind's field label conversion.

    ``labels`` (the kind's) gives kube-apiserver's message for an unknown field and the
    old field names it renames; without it the message follows ``allowed`` (metadata only
    → the default conversion's text).

    Raises:
        BadRequest: malformed selector or a field not in ``allowed``.
    """
    parsed = parse_field_terms(text).requirements
    aliases = labels.aliases if labels is not None else {}
    out = []
    for req in parsed:
        name = aliases.get(req.field, req.field)
        if name not in allowed and req.field not in aliases:
            raise _unknown_field(req.field, labels, allowed)
        out.append(FieldRequirement(name, req.operator, req.value))
    return FieldSelector(tuple(out))


# ------------------------------------------------------------- field values
# A kind's strategy makes its field set (fields.Set) from these.


def value_at(obj: Mapping[str, Any], *path: str) -> Any:
    """The value at ``path`` under nested mappings, None where one is missing."""
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def text_value(value: Any) -> str:
    """A string field's selectable value ("" when unset or not a string)."""
    return value if isinstance(value, str) else ""


def bool_value(value: Any) -> str:
    """A bool field's selectable value, as Go's strconv.FormatBool."""
    return "true" if value is True else "false"


def int_value(value: Any) -> str:
    """An integer field's selectable value ("0" when unset)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


def meta_field_values(obj: Mapping[str, Any], namespaced: bool) -> dict[str, str]:
    """metadata.name (and metadata.namespace of a namespaced kind): every kind's selectable fields."""
    md = obj.get("metadata") or {}
    out = {"metadata.name": text_value(md.get("name"))}
    if namespaced:
        out["metadata.namespace"] = text_value(md.get("namespace"))
    return out


def format_label_selector(selector: Mapping[str, Any]) -> str:
    """A LabelSelector as its string form (a Scale's status.selector): terms sorted, comma-joined."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{expr['key']} in ({values})")
        elif op == "NotIn":
            parts.append(f"{expr['key']} notin ({values})")
        elif op == "Exists":
            parts.append(expr["key"])
        elif op == "DoesNotExist":
            parts.append(f"!{expr['key']}")
    return ",".join(sorted(parts))
