"""Pod Security admission's decisions (kube's k8s.io/pod-security-admission/admission).

``validate_pod`` evaluates a pod against its namespace's enforce, audit and warn levels: a
violation of enforce refuses it (403 ``pods "x" is forbidden: violates PodSecurity
"restricted:latest": ...``), of audit adds the ``audit-violations`` audit annotation, of warn a
warning (``would violate PodSecurity "baseline:latest": ...``). ``validate_pod_controller`` does
the same for the pod template of a workload (deployments, jobs, ...) with audit and warn only.
``validate_namespace`` checks the namespace's labels (422 when invalid) and, when an update makes
the enforce level stricter, warns about the existing pods that would not be admitted now.

The results are ``Response`` values; the plugin turns them into errors, warnings and audit
annotations (prefixed ``pod-security.kubernetes.io/``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Final, Sequence

import trio

from kapi import errors
from kapi.admission.podsecurity import api
from kapi.admission.podsecurity.api import LevelVersion, Policy
from kapi.admission.podsecurity.checks import AggregateResult, Evaluator
from kapi.admission.podsecurity.config import Configuration
from kapi.admission.podsecurity.metrics import Recorder, Request
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]
PodLister = Callable[[str], Awaitable[Sequence[Obj]]]

ALLOW: Final = "allow"
DENY: Final = "deny"
ENFORCE: Final = "enforce"
AUDIT: Final = "audit"
WARN: Final = "warn"

NAMESPACE_MAX_PODS_TO_CHECK: Final = 3000
NAMESPACE_POD_CHECK_TIMEOUT: Final = 1.0  # seconds
_PODS_PER_CHECKPOINT: Final = 100

# Pod subresources whose writes cannot change the pod spec; any other is evaluated as a pod.
IGNORED_POD_SUBRESOURCES: Final = frozenset(("exec", "attach", "binding", "eviction", "log", "portforward",
                                             "proxy", "status"))

# The resources that embed a pod template, and where it is.
POD_CONTROLLERS: Final[dict[tuple[str, str], tuple[str, ...] | None]] = {
    ("", "replicationcontrollers"): ("spec", "template"),  # a pointer: may be absent
    ("", "podtemplates"): None,
    ("apps", "replicasets"): None, ("apps", "deployments"): None, ("apps", "statefulsets"): None,
    ("apps", "daemonsets"): None, ("batch", "jobs"): None, ("batch", "cronjobs"): None,
}


@dataclass(slots=True)
class Response:
    """kube's AdmissionResponse, as far as the plugin uses it."""

    allowed: bool = True
    error: errors.StatusError | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


def _allowed(**annotations: str) -> Response:
    return Response(audit_annotations=dict(annotations))


def _denied(error: errors.StatusError, detail: str | None = None) -> Response:
    """kube's ``errorResponse``: the status, and its message (with the cause) as the ``error`` annotation."""
    message = f"{error.message}: {detail}" if detail else error.message
    return Response(False, error, audit_annotations={"error": message})


def _bad_request(message: str) -> Response:
    return _denied(errors.BadRequest(message))


def _meta(obj: Obj | None) -> Obj:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, dict) else {}


def _labels(obj: Obj | None) -> dict[str, str]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def _spec(obj: Obj | None) -> Obj:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def pod_template(group: str, resource: str, obj: Obj) -> tuple[Obj, Obj] | None:
    """(metadata, spec) of a controller's pod template; None when it has none (kube's ``ExtractPodSpec``)."""
    if group == "" and resource == "podtemplates":
        template = obj.get("template")
    elif group == "batch" and resource == "cronjobs":
        template = _spec(_spec(obj).get("jobTemplate")).get("template")
    else:
        template = _spec(obj).get("template")
        if template is None and resource == "replicationcontrollers":
            return None
    template = template if isinstance(template, dict) else {}
    return _meta(template), _spec(template)


def _significant_pod_update(pod: Obj, old: Obj) -> bool:
    """Whether an update changes what the checks see (kube: containers added or removed, an image changed)."""
    new_spec, old_spec = _spec(pod), _spec(old)
    for key in ("containers", "initContainers"):
        new_list, old_list = _items(new_spec.get(key)), _items(old_spec.get(key))
        if len(new_list) != len(old_list):
            return True
        if any(n.get("image") != o.get("image") for n, o in zip(new_list, old_list)):
            return True
    old_ephemeral = {c.get("name"): c for c in _items(old_spec.get("ephemeralContainers"))}
    for c in _items(new_spec.get("ephemeralContainers")):
        before = old_ephemeral.get(c.get("name"))
        if before is None or before.get("image") != c.get("image"):
            return True
    return False


def _items(value: Any) -> list[Obj]:
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def _runtime_class(spec: Obj) -> str:
    rc = spec.get("runtimeClassName")
    return rc if isinstance(rc, str) else ""


class PodSecurityAdmission:
    """The decisions, given the configuration and the checks."""

    def __init__(self, configuration: Configuration, evaluator: Evaluator | None = None,
                 recorder: Recorder | None = None) -> None:
        self.configuration = configuration
        self.evaluator = evaluator or Evaluator()
        self.recorder = recorder or Recorder(None)
        self.default_policy = configuration.defaults
        self.max_pods_to_check = NAMESPACE_MAX_PODS_TO_CHECK
        self.pod_check_timeout = NAMESPACE_POD_CHECK_TIMEOUT
        self._policies: dict[tuple[tuple[str, str], ...], tuple[Policy, list[errors.Cause]]] = {}

    # ------------------------------------------------------------- policy

    def policy_to_evaluate(self, labels: dict[str, str]) -> tuple[Policy, list[errors.Cause]]:
        """The namespace's policy and label errors, kept by the labels that decide them."""
        key = tuple(sorted((k, v) for k, v in labels.items() if k.startswith(api.LABEL_PREFIX)
                           and isinstance(v, str)))
        found = self._policies.get(key)
        if found is None:
            if len(self._policies) > 1000:
                self._policies.clear()
            found = self._policies[key] = api.policy_to_evaluate(dict(key), self.default_policy)
        return found

    def exempt_namespace(self, namespace: str) -> bool:
        return bool(namespace) and namespace in self.configuration.namespaces

    def exempt_user(self, username: str) -> bool:
        return bool(username) and username in self.configuration.usernames

    def exempt_runtime_class(self, runtime_class: str) -> bool:
        return bool(runtime_class) and runtime_class in self.configuration.runtime_classes

    # ------------------------------------------------------------- namespaces

    async def validate_namespace(self, operation: str, namespace_attr: str, subresource: str, obj: Obj | None,
                                 old: Obj | None, list_pods: PodLister) -> Response:
        """A namespace create or update. ``namespace_attr`` is the request's namespace (kube's
        requests on a namespace carry its own name); ``list_pods`` reads the namespace's pods (only
        when the enforce level tightens)."""
        if subresource:
            return _allowed()
        if not isinstance(obj, dict):
            return _bad_request("failed to decode namespace")
        name = str(_meta(obj).get("name") or "")
        labels = _labels(obj)
        new_policy, new_errs = self.policy_to_evaluate(labels)
        if operation == CREATE:
            if new_errs:
                return Response(False, errors.invalid("Namespace", "", name, list(new_errs)))
            if self.exempt_namespace(namespace_attr):
                warning = self.exempt_namespace_warning(name, new_policy, labels)
                if warning:
                    return Response(warnings=[warning])
            return _allowed()
        if operation != UPDATE:
            return _allowed()
        if not isinstance(old, dict):
            return _bad_request("failed to decode  old namespace")
        old_policy, old_errs = self.policy_to_evaluate(_labels(old))
        if new_errs and (not old_errs or new_errs != old_errs):
            return Response(False, errors.invalid("Namespace", "", name, list(new_errs)))
        if new_policy.enforce == old_policy.enforce or new_policy.enforce.level == api.PRIVILEGED:
            return _allowed()
        if new_policy.enforce.version == old_policy.enforce.version and \
                api.compare_levels(new_policy.enforce.level, old_policy.enforce.level) < 1:
            return _allowed()
        if self.exempt_namespace(namespace_attr):
            warning = self.exempt_namespace_warning(name, new_policy, labels)
            return Response(warnings=[warning]) if warning else _allowed()
        try:
            pods = await list_pods(name)
        except Exception:  # noqa: BLE001 - kube answers with a warning, whatever went wrong
            return Response(warnings=["failed to list pods while checking new PodSecurity enforce level"])
        return Response(warnings=await self.evaluate_pods_in_namespace(name, new_policy.enforce, pods))

    async def evaluate_pods_in_namespace(self, namespace: str, enforce: LevelVersion,
                                         pods: Sequence[Obj]) -> list[str]:
        """Warnings for the existing pods ``enforce`` would refuse: one per distinct set of reasons,
        naming the first pod (by name) and how many others share it (kube's limits: 3000 pods, 1 s).
        Other requests run between batches of pods."""
        deadline = time.monotonic() + self.pod_check_timeout
        prioritized = self._prioritize(pods)
        total = len(prioritized)
        prioritized = prioritized[:self.max_pods_to_check]
        checked = len(prioritized)
        order: list[str] = []
        counts: dict[str, list[Any]] = {}  # warning -> [first pod name, count]
        for i, pod in enumerate(prioritized):
            r = self.evaluator.aggregate(enforce, _meta(pod), _spec(pod))
            if not r.allowed:
                warning = r.forbidden_reason()
                pod_name = str(_meta(pod).get("name") or "")
                c = counts.get(warning)
                if c is None:
                    counts[warning] = [pod_name, 1]
                    order.append(warning)
                else:
                    if pod_name < c[0]:
                        c[0] = pod_name
                    c[1] += 1
            if time.monotonic() > deadline:
                checked = i + 1
                break
            if i % _PODS_PER_CHECKPOINT == _PODS_PER_CHECKPOINT - 1:
                await trio.lowlevel.checkpoint()
        warnings = []
        if checked < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first {checked} of {total} "
                            "existing pods")
        if order:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                            f'"{enforce}"')
        decorated = []
        for warning in order:
            first, count = counts[warning]
            if count == 1:
                decorated.append(f"{first}: {warning}")
            elif count == 2:
                decorated.append(f"{first} (and 1 other pod): {warning}")
            else:
                decorated.append(f"{first} (and {count - 1} other pods): {warning}")
        return warnings + sorted(decorated)

    def _prioritize(self, pods: Sequence[Obj]) -> list[Obj]:
        """Pods of exempt runtime classes left out; one pod per controller first, its siblings after."""
        first: list[Obj] = []
        duplicates: list[Obj] = []
        seen: set[str] = set()
        for pod in pods:
            if self.exempt_runtime_class(_runtime_class(_spec(pod))):
                continue
            controller = next((r for r in _meta(pod).get("ownerReferences") or []
                               if isinstance(r, dict) and r.get("controller") is True), None)
            if controller is None:
                first.append(pod)
                continue
            uid = str(controller.get("uid") or "")
            if uid in seen:
                duplicates.append(pod)
                continue
            first.append(pod)
            seen.add(uid)
        return first + duplicates

    def exempt_namespace_warning(self, namespace: str, policy: Policy, labels: dict[str, str]) -> str:
        if policy.fully_privileged() or policy.equivalent(self.default_policy):
            return ""
        parts = []
        for mode, lv in (("enforce", policy.enforce), ("audit", policy.audit), ("warn", policy.warn)):
            labelled = (api.LABEL_PREFIX + mode) in labels or (api.LABEL_PREFIX + mode + "-version") in labels
            if lv.level != api.PRIVILEGED and labelled:
                parts.append(f"{mode}={lv}")
        return (f'namespace "{namespace}" is exempt from Pod Security, and the policy ({", ".join(parts)}) '
                "will be ignored")

    # ------------------------------------------------------------- pods

    def pod_preamble(self, req: Request, namespace: str, username: str) -> Response | None:
        """The exemptions decided before the namespace is read (kube: namespace, then user)."""
        if self.exempt_namespace(namespace):
            self.recorder.exemption(req)
            return _allowed(**{api.EXEMPTION_REASON_ANNOTATION: "namespace"})
        if self.exempt_user(username):
            self.recorder.exemption(req)
            return _allowed(**{api.EXEMPTION_REASON_ANNOTATION: "user"})
        return None

    def validate_pod(self, req: Request, name: str, namespace: str, username: str,
                     namespace_labels: dict[str, str] | None, obj: Obj | None, old: Obj | None) -> Response:
        """A pod create or update (``namespace_labels`` None: the namespace could not be read)."""
        if req.subresource in IGNORED_POD_SUBRESOURCES:
            return _allowed()
        exempt = self.pod_preamble(req, namespace, username)
        if exempt is not None:
            return exempt
        if namespace_labels is None:
            self.recorder.error(True, req)
            message = f'failed to lookup namespace "{namespace}"'
            err = errors.InternalError(f"Internal error occurred: {message}", causes=[errors.Cause(message=message)])
            return _denied(err, f'namespaces "{namespace}" not found')
        policy, policy_errs = self.policy_to_evaluate(namespace_labels)
        if not policy_errs and policy.fully_privileged():
            self.recorder.evaluation(ALLOW, policy.enforce, ENFORCE, req)
            return _allowed(**{api.ENFORCED_POLICY_ANNOTATION: str(api.PRIVILEGED_LATEST)})
        if not isinstance(obj, dict) or obj.get("kind") not in (None, "Pod"):
            self.recorder.error(True, req)
            return _bad_request("failed to decode pod")
        if req.operation == UPDATE:
            if not isinstance(old, dict) or old.get("kind") not in (None, "Pod"):
                self.recorder.error(True, req)
                return _bad_request("failed to decode old pod")
            if not _significant_pod_update(obj, old):
                return _allowed()
        return self.evaluate_pod(req, policy, policy_errs, _meta(obj), _spec(obj), name, enforce=True)

    def validate_pod_controller(self, req: Request, namespace: str, username: str,
                                namespace_labels: dict[str, str] | None, obj: Obj | None) -> Response:
        """A pod controller's create or update: its template against audit and warn."""
        if req.subresource:
            return _allowed()
        exempt = self.pod_preamble(req, namespace, username)
        if exempt is not None:
            return exempt
        if namespace_labels is None:
            self.recorder.error(True, req)
            return _allowed(error=f'failed to lookup namespace "{namespace}": namespaces "{namespace}" not found')
        policy, policy_errs = self.policy_to_evaluate(namespace_labels)
        if not policy_errs and policy.warn.level == api.PRIVILEGED and policy.audit.level == api.PRIVILEGED:
            return _allowed()
        if not isinstance(obj, dict):
            self.recorder.error(True, req)
            return _allowed(error="failed to decode object")
        template = pod_template(req.group, req.resource, obj)
        if template is None:
            return _allowed()
        return self.evaluate_pod(req, policy, policy_errs, template[0], template[1], "", enforce=False)

    def evaluate_pod(self, req: Request, policy: Policy, policy_errs: list[errors.Cause], meta: Obj, spec: Obj,
                     name: str, *, enforce: bool) -> Response:
        """kube's ``EvaluatePod``: enforce (pods only), audit, then warn, each level evaluated once."""
        if self.exempt_runtime_class(_runtime_class(spec)):
            self.recorder.exemption(req)
            return _allowed(**{api.EXEMPTION_REASON_ANNOTATION: "runtimeClass"})
        annotations: dict[str, str] = {}
        if policy_errs:
            annotations["error"] = "Failed to parse policy: " + errors.aggregate_messages(
                [f"{c.field}: {c.message}" for c in policy_errs])
            self.recorder.error(False, req)
        cached: dict[LevelVersion, AggregateResult] = {}
        response = Response()
        if enforce:
            annotations[api.ENFORCED_POLICY_ANNOTATION] = str(policy.enforce)
            result = self.evaluator.aggregate(policy.enforce, meta, spec)
            if not result.allowed:
                reason = f'violates PodSecurity "{policy.enforce}": {result.forbidden_detail()}'
                what = f'{req.resource} "{name}"' if name else req.resource
                response = Response(False, errors.Forbidden(f"{what} is forbidden: {reason}", name=name,
                                                             group=req.group, kind=req.resource))
                self.recorder.evaluation(DENY, policy.enforce, ENFORCE, req)
            else:
                self.recorder.evaluation(ALLOW, policy.enforce, ENFORCE, req)
            cached[policy.enforce] = result
        audit = cached.get(policy.audit)
        if audit is None:
            audit = cached[policy.audit] = self.evaluator.aggregate(policy.audit, meta, spec)
        if not audit.allowed:
            annotations[api.AUDIT_VIOLATIONS_ANNOTATION] = (
                f'would violate PodSecurity "{policy.audit}": {audit.forbidden_detail()}')
            self.recorder.evaluation(DENY, policy.audit, AUDIT, req)
        if response.allowed:
            warn = cached.get(policy.warn)
            if warn is None:
                warn = self.evaluator.aggregate(policy.warn, meta, spec)
            if not warn.allowed:
                response.warnings.append(f'would violate PodSecurity "{policy.warn}": {warn.forbidden_detail()}')
                self.recorder.evaluation(DENY, policy.warn, WARN, req)
        response.audit_annotations = annotations
        return response
