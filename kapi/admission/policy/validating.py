"""A ValidatingAdmissionPolicy compiled and evaluated (kube's admission/plugin/policy/validating:
compilePolicy, the validator and the dispatcher's decisions).

``compile_policy`` compiles a policy's variables, matchConditions, validations (with their
messageExpressions) and auditAnnotations once (per generation: the plugin caches it); an expression
that does not compile is kept as its error and answers at evaluation as kube's does ("compilation
error: ..."). ``CompiledPolicy.validate`` gives one (binding, param) evaluation's decisions and audit
annotations, as kube's ``validator.Validate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kapi.admission import cel
from kapi.admission.cel import (MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES, RUNTIME_CEL_COST_BUDGET,
                                RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, Activation, Budget, CelError, Compiled,
                                OutOfBudget, evaluate_or_error)

Obj = dict[str, Any]

ADMIT, DENY = "admit", "deny"
EVAL_ADMIT, EVAL_DENY, EVAL_ERROR = "admit", "deny", "error"
PUBLISH, EXCLUDE, ERROR = "publish", "exclude", "error"
MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024


@dataclass(slots=True)
class Decision:
    """kube's PolicyDecision."""

    action: str
    evaluation: str
    message: str = ""
    reason: str = ""


@dataclass(slots=True)
class AuditAnnotation:
    """kube's PolicyAuditAnnotation."""

    key: str
    action: str
    value: str = ""
    error: str = ""


@dataclass(slots=True)
class ValidateResult:
    decisions: list[Decision] = field(default_factory=list)
    audit_annotations: list[AuditAnnotation] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Validation:
    spec: Obj
    expression: Compiled | CelError
    message_expression: Compiled | CelError | None


@dataclass(slots=True, eq=False)
class CompiledPolicy:
    """One generation of a policy, compiled."""

    policy: Obj
    name: str
    failure_policy: str
    param_kind: Obj | None
    variables: dict[str, Compiled | CelError]
    match_conditions: list[tuple[str, Compiled | CelError]]
    validations: list[Validation]
    audit_annotations: list[tuple[str, str, Compiled | CelError]]
    # the plugin's notes of which request resources its rules match
    rule_cache: dict[tuple[str, ...], str] = field(default_factory=dict)

    @property
    def fail(self) -> bool:
        return self.failure_policy != "Ignore"

    def _error_action(self) -> str:
        return DENY if self.fail else ADMIT

    async def validate(self, act: Activation, act_noauthz: Callable[[], Activation]) -> ValidateResult:
        """kube's validator.Validate for one (binding, param): ``act`` binds the request with the
        authorizer, ``act_noauthz()`` without it (messageExpressions and auditAnnotations)."""
        plain: list[Activation] = []

        def noauthz() -> Activation:
            if not plain:
                plain.append(act_noauthz())
            return plain[0]

        if self.match_conditions:
            err, matches = await self._match(act)
            if err is not None:
                return ValidateResult([Decision(self._error_action(), EVAL_ERROR, err)])
            if not matches:
                return ValidateResult()
        budget = Budget(RUNTIME_CEL_COST_BUDGET)
        results: list[tuple[Any, str | None]] = []  # (value, error) per validation
        try:
            for v in self.validations:
                results.append(await evaluate_or_error(v.expression, act, budget))
        except OutOfBudget as exc:
            return ValidateResult([Decision(self._error_action(), EVAL_ERROR, exc.message)])
        decisions: list[Decision] = []
        message_error = ""
        for v, (value, error) in zip(self.validations, results):
            if error is not None:
                decisions.append(Decision(self._error_action(), EVAL_ERROR, error))
                continue
            if value is True:
                decisions.append(Decision(ADMIT, EVAL_ADMIT))
                continue
            if not message_error and v.message_expression is not None:
                try:
                    message = await _message(v.message_expression, noauthz(), budget)
                except OutOfBudget as exc:
                    message_error = f"failed messageExpression: {exc.message}"
                    message = ""
            else:
                message = ""
            if message_error:
                decisions.append(Decision(self._error_action(), EVAL_ERROR, message_error))
                continue
            if not message and v.spec.get("message"):
                message = str(v.spec["message"]).strip()
            if not message:
                message = f"failed expression: {str(v.spec.get('expression') or '').strip()}"
            decisions.append(Decision(DENY, EVAL_DENY, message, str(v.spec.get("reason") or "Invalid")))
        audit: list[AuditAnnotation] = []
        abudget = Budget(RUNTIME_CEL_COST_BUDGET)
        try:
            for key, text, c in self.audit_annotations:
                audit.append(await self._audit(key, text, c, noauthz(), abudget))
        except OutOfBudget as exc:
            return ValidateResult([Decision(self._error_action(), EVAL_ERROR, exc.message)])
        return ValidateResult(decisions, audit)

    async def _match(self, act: Activation) -> tuple[str | None, bool]:
        """kube's matchconditions.Matcher: (an error under failurePolicy Fail, whether it matches)."""
        budget = Budget(RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)
        errs: list[str] = []
        outcomes: list[Any] = []
        try:
            for _name, c in self.match_conditions:
                value, error = await evaluate_or_error(c, act, budget)
                outcomes.append((value, error))
        except OutOfBudget as exc:
            return (exc.message, False) if self.fail else (None, False)
        for value, error in outcomes:
            if error is not None:
                errs.append(error)
            if value is False:
                return None, False
        if errs:
            if not self.fail:
                return None, False
            return (errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"), False
        return None, True

    async def _audit(self, key: str, text: str, c: Compiled | CelError, act: Activation,
                     budget: Budget) -> AuditAnnotation:
        value, error = await evaluate_or_error(c, act, budget)
        if error is not None:
            return AuditAnnotation(key, ERROR if self.fail else EXCLUDE, error=error)
        if value is None:
            return AuditAnnotation(key, EXCLUDE)
        if isinstance(value, str):
            value = value.strip()
            return AuditAnnotation(key, PUBLISH, value=value) if value else AuditAnnotation(key, EXCLUDE)
        return AuditAnnotation(key, ERROR, error=f"valueExpression '{text}' resulted in unsupported return type: "
                                                  f"{_cel_type(value)}. Return type must be either string or null.")


def _cel_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, bytes):
        return "bytes"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    return type(v).__name__


async def _message(c: Compiled | CelError, act: Activation, budget: Budget) -> str:
    """A messageExpression's message, "" when it fails or is unfit (not a string, too long, multi-line)."""
    value, error = await evaluate_or_error(c, act, budget)
    if error is not None or not isinstance(value, str):
        return ""
    value = value.strip()
    if len(value.encode()) > MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES or "\n" in value:
        return ""
    return value


def _compile(text: str, variables: Any, kind: str, params: bool, authorizer: bool = True) -> Compiled | CelError:
    try:
        return cel.compile_expression(text, variables, kind=kind, params=params, authorizer=authorizer)
    except CelError as exc:
        return exc


def compile_policy(policy: Obj) -> CompiledPolicy:
    """kube's compilePolicy: variables, matchConditions, validations and auditAnnotations compiled with
    ``params`` declared when the policy has a paramKind and ``authorizer`` everywhere but in
    messageExpressions."""
    spec = policy.get("spec") or {}
    param_kind = spec.get("paramKind")
    has_params = param_kind is not None
    variables = cel.compile_variables(
        [(str(v.get("name") or ""), str(v.get("expression") or "")) for v in spec.get("variables") or ()],
        params=has_params, authorizer=True)
    names = variables
    conditions = [(str(m.get("name") or ""), _compile(str(m.get("expression") or ""), names, "bool", has_params))
                  for m in spec.get("matchConditions") or ()]
    validations = []
    for v in spec.get("validations") or ():
        msg = v.get("messageExpression")
        validations.append(Validation(
            spec=v, expression=_compile(str(v.get("expression") or ""), names, "bool", has_params),
            message_expression=_compile(str(msg), names, "string", has_params, authorizer=False) if msg else None))
    audit = [(str(a.get("key") or ""), str(a.get("valueExpression") or ""),
              _compile(str(a.get("valueExpression") or ""), names, "string_or_null", has_params))
             for a in spec.get("auditAnnotations") or ()]
    return CompiledPolicy(policy=policy, name=str((policy.get("metadata") or {}).get("name") or ""),
                          failure_policy=str(spec.get("failurePolicy") or "Fail"), param_kind=param_kind,
                          variables=variables, match_conditions=conditions, validations=validations,
                          audit_annotations=audit)


def compile_errors(policy: Obj) -> list[tuple[str, str, str]]:
    """The expressions of a policy that do not compile, as (field path, expression, kube's detail):
    what kube's validation refuses a policy with (``field.Invalid(path, expression, detail)``). The
    environments are the validation's, which are not all the evaluation's: matchConditions compile
    without the policy's variables, and matchConditions and messageExpressions with ``params``
    declared whether or not the policy has a paramKind."""
    spec = policy.get("spec") or {}
    has_params = spec.get("paramKind") is not None
    out: list[tuple[str, str, str]] = []
    variables: dict[str, Compiled | CelError] = {}
    for i, v in enumerate(spec.get("variables") or ()):
        text = str(v.get("expression") or "")
        c = _compile(text, variables, "any", has_params)
        variables[str(v.get("name") or "")] = c
        if isinstance(c, CelError) and text.strip():
            out.append((f"spec.variables[{i}].expression", text, c.message))
    for i, m in enumerate(spec.get("matchConditions") or ()):
        text = str(m.get("expression") or "").strip()
        c = _compile(text, (), "bool", True)
        if isinstance(c, CelError) and text:
            out.append((f"spec.matchConditions[{i}].expression", text, c.message))
    for i, v in enumerate(spec.get("validations") or ()):
        text = str(v.get("expression") or "")
        c = _compile(text, variables, "bool", has_params)
        if isinstance(c, CelError) and text.strip():
            out.append((f"spec.validations[{i}].expression", text, c.message))
        msg = str(v.get("messageExpression") or "")
        if msg.strip():
            c = _compile(msg, variables, "string", True, authorizer=False)
            if isinstance(c, CelError):
                out.append((f"spec.validations[{i}].messageExpression", msg, c.message))
    for i, a in enumerate(spec.get("auditAnnotations") or ()):
        text = str(a.get("valueExpression") or "")
        c = _compile(text.strip(), variables, "string_or_null", has_params)
        if isinstance(c, CelError) and text.strip():
            out.append((f"spec.auditAnnotations[{i}].valueExpression", text, c.message))
    return out
