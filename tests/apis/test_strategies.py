"""Every built-in kind is complete in its strategy, and no kind-specific test is left elsewhere (issue 11)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kapi.apis import BUILTIN
from kapi.encoding.tables import DEFAULT_PRINTER
from kapi.object.validation import RULE_DNS1035_LABEL, RULE_DNS1123_LABEL, RULE_DNS1123_SUBDOMAIN, RULE_PATH_SEGMENT
from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy

KAPI = Path(__file__).resolve().parent.parent.parent / "kapi"
STORED = [r for r in BUILTIN if not r.virtual]
IDS = [r.qualified for r in BUILTIN]

# Kinds kapi prints with Name and Age on purpose (kube has printers for some; kapi has not written them).
DEFAULT_PRINTED = frozenset({
    "endpoints", "persistentvolumeclaims", "persistentvolumes", "statefulsets.apps", "daemonsets.apps",
    "jobs.batch", "cronjobs.batch", "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io", "subjectaccessreviews.authorization.k8s.io",
    "localsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io",
    "selfsubjectreviews.authentication.k8s.io", "tokenreviews.authentication.k8s.io",
    "customresourcedefinitions.apiextensions.k8s.io",
    "limitranges",  # kube has no LimitRange printer either
})
# Stored kinds without validation rules of their own, as in kube-apiserver (or not written in kapi yet).
UNVALIDATED = frozenset({"serviceaccounts"})



def _overrides(strategy: Strategy, hook: str) -> bool:
    return getattr(type(strategy), hook) is not getattr(Strategy, hook)


@pytest.mark.parametrize("res", BUILTIN, ids=IDS)
def test_each_kind_has_its_own_strategy(res: Resource) -> None:
    assert isinstance(res.strategy, Strategy)
    assert type(res.strategy) is not Strategy, f"{res.qualified} uses the bare generic strategy"
    # A hook a kind defines must be one the registry calls (a misspelt hook would be silently unused).
    for cls in type(res.strategy).__mro__:
        if cls is Strategy or cls is object:
            break
        for name in vars(cls):
            if not name.startswith("_"):
                assert hasattr(Strategy, name), f"{cls.__name__}.{name} is not a Strategy hook"


def test_strategies_are_not_shared() -> None:
    assert len({id(r.strategy) for r in BUILTIN}) == len(BUILTIN)
    assert len({(r.group, r.version, r.resource) for r in BUILTIN}) == len(BUILTIN)


@pytest.mark.parametrize("res", BUILTIN, ids=IDS)
def test_printer_is_the_kinds_or_default_on_purpose(res: Resource) -> None:
    printer = res.strategy.printer
    if res.qualified in DEFAULT_PRINTED:
        assert printer is DEFAULT_PRINTER
        return
    assert printer is not DEFAULT_PRINTER, f"{res.qualified} has no table printer"
    names = [c["name"] for c in printer.column_definitions()]
    assert "Name" in names
    cells = printer.cells({"metadata": {"name": "x", "namespace": "ns"}}, 0.0)
    assert len(cells) == len(names)


@pytest.mark.parametrize("res", BUILTIN, ids=IDS)
def test_selectable_fields(res: Resource) -> None:
    fields = res.strategy.field_labels.fields
    assert "metadata.name" in fields
    if res.namespaced:
        assert "metadata.namespace" in fields
    # The values an object offers are the fields a selector may name.
    values = res.strategy.field_values({"metadata": {"name": "x", "namespace": "ns"}}, res.namespaced)
    assert values["metadata.name"] == "x"
    assert set(values) <= fields
    assert ("metadata.namespace" in values) == res.namespaced


@pytest.mark.parametrize("res", BUILTIN, ids=IDS)
def test_name_rule(res: Resource) -> None:
    assert res.strategy.name_rule in (RULE_DNS1123_SUBDOMAIN, RULE_DNS1123_LABEL, RULE_DNS1035_LABEL,
                                      RULE_PATH_SEGMENT)


@pytest.mark.parametrize("res", STORED, ids=[r.qualified for r in STORED])
def test_validation_of_validated_kinds(res: Resource) -> None:
    validated = res.qualified not in UNVALIDATED
    assert _overrides(res.strategy, "validate") == validated
    assert _overrides(res.strategy, "validate_update") == validated


def test_generation_and_create_on_update_as_before() -> None:
    tracked = {r.qualified for r in BUILTIN if r.strategy.tracks_generation}
    assert tracked == {"pods", "persistentvolumeclaims", "deployments.apps", "replicasets.apps",
                       "statefulsets.apps", "daemonsets.apps", "jobs.batch", "cronjobs.batch",
                       "customresourcedefinitions.apiextensions.k8s.io",
                       "flowschemas.flowcontrol.apiserver.k8s.io",
                       "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
                       "replicationcontrollers", "horizontalpodautoscalers.autoscaling",
                       "ingresses.networking.k8s.io", "ingressclasses.networking.k8s.io",
                       "networkpolicies.networking.k8s.io", "poddisruptionbudgets.policy",
                       "endpointslices.discovery.k8s.io",
                       "mutatingwebhookconfigurations.admissionregistration.k8s.io",
                       "validatingwebhookconfigurations.admissionregistration.k8s.io",
                       "validatingadmissionpolicies.admissionregistration.k8s.io",
                       "validatingadmissionpolicybindings.admissionregistration.k8s.io",
                       "mutatingadmissionpolicies.admissionregistration.k8s.io",
                       "mutatingadmissionpolicybindings.admissionregistration.k8s.io"}
    assert {r.qualified for r in BUILTIN if r.strategy.generation_on_annotations} == {"deployments.apps"}
    assert {r.qualified for r in BUILTIN if r.strategy.create_on_update} == {
        "endpoints", "events", "leases.coordination.k8s.io", "events.events.k8s.io",
        "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
        "clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io"}
    # FlowSchemas and PriorityLevelConfigurations: kube's strategies refuse create on update (issue 13).


# ------------------------------------------------------------ no kind tests elsewhere

_NAMES = frozenset({r.resource for r in BUILTIN} | {r.kind for r in BUILTIN})


def _is_kind_expr(node: ast.expr) -> bool:
    """``x.resource``, ``x.kind``, ``resource``, ``kind``, ``x.get("kind")`` or ``x["kind"]``."""
    if isinstance(node, ast.Attribute):
        return node.attr in ("resource", "kind")
    if isinstance(node, ast.Name):
        return node.id in ("resource", "kind")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        arg = node.args[0]
        return isinstance(arg, ast.Constant) and arg.value in ("resource", "kind")
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in ("resource", "kind")
    return False


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def kind_tests(path: Path) -> list[tuple[int, str]]:
    """(line, literal) of each comparison of a resource or kind against a built-in one's name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if not any(_is_kind_expr(o) for o in operands):
            continue
        for o in operands:
            found += [(node.lineno, lit) for lit in _literals(o) if lit in _NAMES]
    return found


def test_the_check_finds_kind_tests(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('if res.resource == "pods" or obj.get("kind") != "Namespace" or kind in ("Pod", "x"):\n'
                      '    pass\nif shape.kind == "struct" or res.resource == "widgets":\n    pass\n')
    assert kind_tests(sample) == [(1, "pods"), (1, "Namespace"), (1, "Pod")]


# Comparisons with a kind's name that are about content, not dispatch on a served resource, each
# with its reason (issue 12): what an impersonation asks to be (kube's ObjectReference kinds), and
# the kind a webhook's answer must be of.
CONTENT_CHECKS = {
    ("chain/impersonation.py", "ServiceAccount"): "the impersonated principal is a service account",
    ("chain/authn/webhook.py", "TokenReview"): "a token webhook must answer a TokenReview",
    ("chain/authz/webhook.py", "SubjectAccessReview"): "an authorization webhook must answer a SubjectAccessReview",
    # API Priority and Fairness (issue 13): a FlowSchema subject's kind; kube's RequestInfo gives a namespace's
    # own URL that namespace; a service-account token request notifies no watcher (kube's mutating estimator).
    ("chain/flowcontrol/match.py", "ServiceAccount"): "a FlowSchema subject of kind ServiceAccount",
    ("chain/flowcontrol/match.py", "namespaces"): "kube's RequestInfo: /api/v1/namespaces/x is in namespace x",
    ("chain/flowcontrol/estimate.py", "serviceaccounts"): "serviceaccounts/token writes no object: no watch widening",
}


def test_no_kind_specific_tests_outside_strategies() -> None:
    offenders = []
    for path in sorted(KAPI.rglob("*.py")):
        rel = path.relative_to(KAPI).as_posix()
        # The strategies; the object layer (a field's kind inside an object, e.g. an RBAC subject's, is
        # content, not dispatch); the HTTP client, a separate program; admission, whose plugins are each
        # about the kinds they admit (kube's plugin/pkg/admission: ServiceAccount acts on pods, ...).
        if rel.startswith(("apis/", "object/", "client/", "admission/")):
            continue
        offenders += [f"kapi/{rel}:{line}: {lit!r}" for line, lit in kind_tests(path)
                      if (rel, lit) not in CONTENT_CHECKS]
    assert not offenders, "kind-specific tests belong in a strategy:\n" + "\n".join(offenders)


def test_registry_and_encoding_do_not_know_the_built_in_kinds() -> None:
    for sub in ("registry", "encoding", "object"):
        for path in sorted((KAPI / sub).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    assert not node.module.startswith("kapi.apis"), f"{path} imports {node.module}"
