"""PodSecurity (kube's plugin/pkg/admission/security/podsecurity over k8s.io/pod-security-admission).

Validating, for creates and updates of pods, namespaces and the resources that embed a pod
template (replicationcontrollers, podtemplates, replicasets, deployments, statefulsets,
daemonsets, jobs, cronjobs). Namespaces choose their levels with the
``pod-security.kubernetes.io/{enforce,audit,warn}[-version]`` labels; the defaults and exemptions
come from a PodSecurityConfiguration in --admission-control-config-file. A pod violating the
enforce level is refused (403), audit violations are recorded as the
``pod-security.kubernetes.io/audit-violations`` audit annotation, warn violations answered as
warnings; pod templates are checked against audit and warn only. Namespaces and pods are read from
the shared informers; a namespace's labels are kept by its resourceVersion, so a pod's admission
decodes its namespace once per change, not once per pod.
"""

from __future__ import annotations

from typing import Any, Sequence

from kapi.admission.chain import AdmissionConfigError
from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.admission.podsecurity import api, config
from kapi.admission.podsecurity.admission import (IGNORED_POD_SUBRESOURCES, POD_CONTROLLERS, PodSecurityAdmission,
                                                  Response)
from kapi.admission.podsecurity.metrics import Request, recorder_for
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]
_LABELS_KEPT = 10_000


class PodSecurity(Plugin):
    name = "PodSecurity"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset({("", "pods"), ("", "namespaces"), *POD_CONTROLLERS})

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        try:
            configuration = config.load(deps.configuration.get(self.name))
        except config.ConfigurationError as exc:
            raise AdmissionConfigError(str(exc)) from None
        metrics = getattr(deps.registry, "metrics", None)
        self.admission = PodSecurityAdmission(configuration,
                                              recorder=recorder_for(getattr(metrics, "registry", None)))
        self._namespaces = deps.objects.watch("", "namespaces")
        deps.objects.watch("", "pods")
        self._labels: dict[str, tuple[int, dict[str, str]]] = {}  # namespace -> (resourceVersion, labels)

    async def validate(self, a: Attributes) -> None:
        req = Request(a.operation, a.group, a.plural, a.subresource)
        if a.group == "" and a.plural == "namespaces":
            # kube's requests on a namespace carry its own name as their namespace (a create's too)
            namespace = a.namespace or a.name or str(((a.obj or {}).get("metadata") or {}).get("name") or "")
            response = await self.admission.validate_namespace(a.operation, namespace, a.subresource, a.obj, a.old,
                                                               self._list_pods)
        elif a.group == "" and a.plural == "pods":
            if a.subresource in IGNORED_POD_SUBRESOURCES:
                return
            response = self.admission.pod_preamble(req, a.namespace, a.user.name) or self.admission.validate_pod(
                req, a.name, a.namespace, a.user.name, await self._namespace_labels(a.namespace), a.obj, a.old)
        else:
            if a.subresource:
                return
            response = self.admission.pod_preamble(req, a.namespace, a.user.name) or \
                self.admission.validate_pod_controller(req, a.namespace, a.user.name,
                                                       await self._namespace_labels(a.namespace), a.obj)
        _apply(a, response)

    async def _namespace_labels(self, name: str) -> dict[str, str] | None:
        """The namespace's labels (None: no such namespace), from the informer's copy when it has one."""
        inf = self._namespaces
        if inf is not None and inf.has_synced:
            item = inf.item("", name)
            if item is not None:
                rv = item.resource_version
                kept = self._labels.get(name)
                if kept is not None and kept[0] == rv:
                    return kept[1]
                labels = _labels(item.metadata())
                if len(self._labels) >= _LABELS_KEPT:
                    self._labels.clear()
                self._labels[name] = (rv, labels)
                return labels
        ns = await self.deps.objects.get("", "namespaces", "", name)
        return None if ns is None else _labels(ns.get("metadata"))

    async def _list_pods(self, namespace: str) -> Sequence[Obj]:
        return await self.deps.objects.list("", "pods", namespace)


def _labels(metadata: Any) -> dict[str, str]:
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, dict) else {}


def _apply(a: Attributes, response: Response) -> None:
    """The response as kube's plugin hands it on: warnings, prefixed audit annotations, the error."""
    for w in response.warnings:
        a.warn(w)
    for key, value in response.audit_annotations.items():
        a.annotate(api.AUDIT_ANNOTATION_PREFIX + key, value)
    if not response.allowed and response.error is not None:
        raise response.error
