"""The admission chain: the enabled plugins in kube 1.33's order, run for one request's writes.

``enabled_plugins`` reads --enable-admission-plugins / --disable-admission-plugins against kube's
default set (``DEFAULT_ON``) and order (``ORDER``); ``build_chain`` makes the plugins;
``AdmissionChain.bind`` gives a request's ``Admission`` (the registry's protocol), which runs the
mutating plugins (and once more when one asks to be reinvoked), then, after the registry's
validation, the validating ones. Which plugins act on an (operation, group, resource) is worked
out once and kept, so a write no plugin cares about costs a dictionary lookup.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import trio
import yaml

from kapi.admission.plugin import Attributes, Plugin, PluginDeps
from kapi.object.access import UserInfo
from kapi.registry.admit import CREATE, DELETE, AdmissionRequest
from kapi.registry.resources import Resource

Obj = dict[str, Any]

# kube 1.33's AllOrderedPlugins (pkg/kubeapiserver/options/plugins.go): the order plugins run in.
ORDER: tuple[str, ...] = (
    "AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists",
    "LimitPodHardAntiAffinityTopology", "LimitRanger", "ServiceAccount", "NodeRestriction",
    "TaintNodesByCondition", "AlwaysPullImages", "ImagePolicyWebhook", "PodSecurity", "PodNodeSelector",
    "Priority", "DefaultTolerationSeconds", "PodTolerationRestriction", "EventRateLimit",
    "ExtendedResourceToleration", "DefaultStorageClass", "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize", "RuntimeClass",
    "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction",
    "DefaultIngressClass", "DenyServiceExternalIPs", "PodTopologyLabels",
    # webhook, resourcequota, and deny plugins go at the end
    "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook", "ResourceQuota", "AlwaysDeny",
)

# kube 1.33's default-on set (DefaultOffAdmissionPlugins' complement).
DEFAULT_ON: frozenset[str] = frozenset((
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "DefaultStorageClass", "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
    "StorageObjectInUseProtection", "Priority", "TaintNodesByCondition", "RuntimeClass", "CertificateApproval",
    "CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
    "PodSecurity", "PodTopologyLabels", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy",
))

# Where each plugin kapi has lives: "module:Class" under kapi.admission.plugins (imported when enabled).
BUILT: dict[str, str] = {
    "AlwaysAdmit": "always:AlwaysAdmit",
    "AlwaysDeny": "always:AlwaysDeny",
    "NamespaceAutoProvision": "namespace:NamespaceAutoProvision",
    "NamespaceLifecycle": "namespace:NamespaceLifecycle",
    "NamespaceExists": "namespace:NamespaceExists",
    "LimitPodHardAntiAffinityTopology": "antiaffinity:LimitPodHardAntiAffinityTopology",
    "LimitRanger": "limitranger:LimitRanger",
    "ServiceAccount": "serviceaccount:ServiceAccount",
    "NodeRestriction": "noderestriction:NodeRestriction",
    "TaintNodesByCondition": "nodetaint:TaintNodesByCondition",
    "AlwaysPullImages": "alwayspullimages:AlwaysPullImages",
    "PodSecurity": "podsecurity:PodSecurity",
    "PodNodeSelector": "podnodeselector:PodNodeSelector",
    "Priority": "priority:Priority",
    "DefaultTolerationSeconds": "defaulttolerationseconds:DefaultTolerationSeconds",
    "PodTolerationRestriction": "podtolerationrestriction:PodTolerationRestriction",
    "ExtendedResourceToleration": "extendedresourcetoleration:ExtendedResourceToleration",
    "DefaultStorageClass": "defaultstorageclass:DefaultStorageClass",
    "StorageObjectInUseProtection": "storageprotection:StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement": "ownerreferences:OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize": "pvcresize:PersistentVolumeClaimResize",
    "RuntimeClass": "runtimeclass:RuntimeClass",
    "CertificateApproval": "certificates:CertificateApproval",
    "CertificateSigning": "certificates:CertificateSigning",
    "ClusterTrustBundleAttest": "certificates:ClusterTrustBundleAttest",
    "CertificateSubjectRestriction": "certificates:CertificateSubjectRestriction",
    "DefaultIngressClass": "defaultingressclass:DefaultIngressClass",
    "DenyServiceExternalIPs": "denyserviceexternalips:DenyServiceExternalIPs",
    "PodTopologyLabels": "podtopologylabels:PodTopologyLabels",
    "MutatingAdmissionPolicy": "mutatingpolicy:MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook": "webhooks:MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy": "validatingpolicy:ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook": "webhooks:ValidatingAdmissionWebhook",
    "ResourceQuota": "resourcequota:ResourceQuota",
}


class AdmissionConfigError(ValueError):
    """The admission flags or configuration file are wrong: the server does not start (the message says why)."""


def enabled_plugins(enable: Iterable[str] = (), disable: Iterable[str] = ()) -> list[str]:
    """The plugins to run, in ``ORDER``: kube's default set, plus ``enable``, minus ``disable``.

    Raises ``AdmissionConfigError`` with kube's messages for an unknown name, an overlap, or a
    plugin kube has that kapi does not build.
    """
    enable, disable = list(enable), list(disable)
    problems = [f'enable-admission-plugins plugin "{n}" is unknown' for n in enable if n not in ORDER]
    problems += [f'disable-admission-plugins plugin "{n}" is unknown' for n in disable if n not in ORDER]
    overlap = sorted(set(enable) & set(disable))
    if overlap:
        problems.append(f"[{' '.join(overlap)}] in enable-admission-plugins and disable-admission-plugins overlapped")
    if problems:
        raise AdmissionConfigError(", ".join(problems))
    wanted = (DEFAULT_ON | set(enable)) - set(disable)
    unbuilt = [n for n in enable if n not in BUILT]
    if unbuilt:
        raise AdmissionConfigError(f"admission plugins {', '.join(unbuilt)} are not available in kapi")
    return [n for n in ORDER if n in wanted and n in BUILT]


def plugin_class(name: str) -> type[Plugin]:
    module, _, cls = BUILT[name].partition(":")
    found: type[Plugin] = getattr(importlib.import_module(f"kapi.admission.plugins.{module}"), cls)
    return found


def load_configuration(path: str) -> dict[str, Obj]:
    """--admission-control-config-file: each plugin's configuration by name (an AdmissionConfiguration,
    apiserver.config.k8s.io/v1 or v1alpha1; a plugin's ``path`` is read relative to the file)."""
    if not path:
        return {}
    origin = Path(path)
    try:
        doc = yaml.safe_load(origin.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise AdmissionConfigError(f"failed to read admission control configuration from {path!r} [{exc}]") from None
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionConfiguration":
        raise AdmissionConfigError(f"{path}: not an AdmissionConfiguration (apiserver.config.k8s.io/v1)")
    out: dict[str, Obj] = {}
    for entry in doc.get("plugins") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise AdmissionConfigError(f"{path}: each plugins entry needs a name")
        config = entry.get("configuration")
        if config is None and entry.get("path"):
            file = Path(entry["path"])
            file = file if file.is_absolute() else origin.parent / file
            try:
                config = yaml.safe_load(file.read_text())
            except (OSError, yaml.YAMLError) as exc:
                raise AdmissionConfigError(f"couldn't open admission plugin configuration {str(file)!r}: {exc}") from None
        if config is not None and not isinstance(config, dict):
            raise AdmissionConfigError(f"{path}: the configuration of {entry['name']} is not an object")
        out[entry["name"]] = config or {}
    return out


def build_chain(names: Iterable[str], deps: PluginDeps) -> AdmissionChain:
    """The plugins ``names`` (in the order given) built with ``deps``."""
    return AdmissionChain([plugin_class(n)(deps) for n in names])


Annotate = Callable[[str, str], None]


class AdmissionChain:
    """The server's plugins; ``bind`` one request to get the ``Admission`` its writes carry."""

    def __init__(self, plugins: list[Plugin]) -> None:
        self.plugins = plugins
        self._mutating = [p for p in plugins if p.mutating]
        self._validating = [p for p in plugins if p.validating]
        self._for: dict[tuple[str, str, str], tuple[tuple[Plugin, ...], tuple[Plugin, ...]]] = {}

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.plugins]

    def plugins_for(self, operation: str, group: str, resource: str) -> tuple[tuple[Plugin, ...], tuple[Plugin, ...]]:
        """(mutating, validating) plugins interested in ``operation`` on ``group``/``resource``."""
        key = (operation, group, resource)
        found = self._for.get(key)
        if found is None:
            if len(self._for) > 10_000:  # resources come and go (CRDs): keep the table bounded
                self._for.clear()
            found = self._for[key] = (
                tuple(p for p in self._mutating if p.interested(operation, group, resource)),
                tuple(p for p in self._validating if p.interested(operation, group, resource)))
        return found

    def bind(self, user: UserInfo, warnings: list[str], annotate: Annotate = lambda k, v: None,
             query: Mapping[str, str] | None = None, delete_options: Obj | None = None) -> RequestAdmission:
        """The admission of one request: its user, where its warnings and audit annotations go, and
        what its options were (the query; a DELETE's DeleteOptions body)."""
        return RequestAdmission(self, user, warnings, annotate, dict(query or {}), delete_options)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Every plugin's background work; ``started()`` once each can answer."""
        async with trio.open_nursery() as nursery:
            for p in self.plugins:
                await nursery.start(p.run)
            task_status.started()


class RequestAdmission:
    """One request's admission (the registry's ``Admission``): the chain's plugins for its writes."""

    __slots__ = ("chain", "user", "warnings", "annotate", "query", "delete_options")

    def __init__(self, chain: AdmissionChain, user: UserInfo, warnings: list[str], annotate: Annotate,
                 query: dict[str, str], delete_options: Obj | None) -> None:
        self.chain = chain
        self.user = user
        self.warnings = warnings
        self.annotate = annotate
        self.query = query
        self.delete_options = delete_options

    def options(self, operation: str) -> Obj:
        """The request's options as kube hands them to webhooks: CreateOptions, UpdateOptions or DeleteOptions."""
        if operation == DELETE:
            out: Obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
            out.update({k: v for k, v in (self.delete_options or {}).items() if k not in ("kind", "apiVersion")})
            if self.query.get("dryRun") and "dryRun" not in out:
                out["dryRun"] = [self.query["dryRun"]]
            return out
        out = {"kind": "CreateOptions" if operation == CREATE else "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
        if self.query.get("dryRun"):
            out["dryRun"] = [self.query["dryRun"]]
        if self.query.get("fieldManager"):
            out["fieldManager"] = self.query["fieldManager"]
        if self.query.get("fieldValidation"):
            out["fieldValidation"] = self.query["fieldValidation"]
        return out

    def _attributes(self, req: AdmissionRequest) -> Attributes:
        return Attributes(req, self.user, self.options(req.operation), self.warnings, self.annotate)

    def changes(self, operation: str, res: Resource) -> bool:
        mutating, _ = self.chain.plugins_for(operation, res.group, res.resource)
        return any(p.changing() for p in mutating)

    async def mutate(self, req: AdmissionRequest) -> None:
        mutating, _ = self.chain.plugins_for(req.operation, req.resource.group, req.resource.resource)
        if not mutating:
            return
        a = self._attributes(req)
        for p in mutating:
            await p.admit(a)
        if a.reinvoke:  # kube's reinvoker: every plugin once more; webhooks and policies pick their own
            a.is_reinvoke = True
            a.reinvoke = False
            for p in mutating:
                await p.admit(a)

    async def validate(self, req: AdmissionRequest) -> None:
        _, validating = self.chain.plugins_for(req.operation, req.resource.group, req.resource.resource)
        if not validating:
            return
        a = self._attributes(req)
        for p in validating:
            await p.validate(a)

