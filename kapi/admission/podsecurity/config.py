"""The PodSecurity plugin's configuration: a PodSecurityConfiguration
(pod-security.admission.config.k8s.io/v1, v1beta1 or v1alpha1) given in the admission
configuration file, as kube loads, defaults and validates it.

``defaults`` sets each mode's level and version for namespaces whose labels leave it out
(privileged and latest when unset); ``exemptions`` lists the usernames, namespaces and runtime
classes whose pods are never checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from kapi.admission.podsecurity.api import (LevelVersion, ParseError, Policy, parse_level, parse_version)
from kapi.errors import Cause, aggregate_messages
from kapi.object.validation.fields import field_duplicate, field_invalid
from kapi.object.validation.names import is_dns1123_label, is_dns1123_subdomain

Obj = dict[str, Any]
GROUP: Final = "pod-security.admission.config.k8s.io"
VERSIONS: Final = ("v1", "v1beta1", "v1alpha1")
KIND: Final = "PodSecurityConfiguration"
_MODES: Final = ("enforce", "audit", "warn")


class ConfigurationError(ValueError):
    """The configuration cannot be used; the message is kube's."""


@dataclass(frozen=True, slots=True)
class Configuration:
    defaults: Policy = Policy()
    usernames: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    runtime_classes: frozenset[str] = frozenset()


def _strings(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{path}: must be a list of strings")
    return list(value)


def load(doc: Obj | None) -> Configuration:
    """The configuration from the plugin's entry (None or empty: kube's defaults)."""
    if not doc:
        return Configuration()
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    group, _, ver = str(api_version or "").rpartition("/")
    if kind != KIND or group != GROUP or ver not in VERSIONS:
        raise ConfigurationError(f'no kind "{kind}" is registered for version "{api_version}" in scheme '
                                 '"k8s.io/pod-security-admission/admission/api/scheme/scheme.go:28"')
    raw_defaults = doc.get("defaults") or {}
    exemptions = doc.get("exemptions") or {}
    if not isinstance(raw_defaults, dict) or not isinstance(exemptions, dict):
        raise ConfigurationError("defaults and exemptions must be objects")
    defaults: dict[str, str] = {}
    for mode in _MODES:
        for key, fallback in ((mode, "privileged"), (f"{mode}-version", "latest")):
            value = raw_defaults.get(key)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(f"defaults.{key}: must be a string")
            defaults[key] = value or fallback  # kube's SetDefaults_PodSecurityDefaults
    # CompleteConfiguration's ToPolicy comes first: "PodSecurity configuration error: enforce: ..."
    problems: list[str] = []
    levels: dict[str, LevelVersion] = {}
    for mode in _MODES:
        level = version = None
        try:
            level = parse_level(defaults[mode])
        except ParseError as exc:
            problems.append(f"{mode}: {exc}")
        try:
            version = parse_version(defaults[f"{mode}-version"])
        except ParseError as exc:
            problems.append(f"{mode}-version: {exc}")
        if level is not None and version is not None:
            levels[mode] = LevelVersion(level, version)
    if problems:
        raise ConfigurationError(f"PodSecurity configuration error: {aggregate_messages(problems)}")
    usernames = _strings(exemptions.get("usernames"), "exemptions.usernames")
    namespaces = _strings(exemptions.get("namespaces"), "exemptions.namespaces")
    runtime_classes = _strings(exemptions.get("runtimeClasses"), "exemptions.runtimeClasses")
    errs: list[Cause] = []
    errs += _unique(namespaces, "exemptions.namespaces", is_dns1123_label)
    errs += _unique(runtime_classes, "exemptions.runtimeClasses", is_dns1123_subdomain)
    errs += _unique(usernames, "exemptions.usernames", lambda u: ["username must not be empty"] if u == "" else [])
    if errs:
        raise ConfigurationError("PodSecurity invalid: " + aggregate_messages(
            [f"{c.field}: {c.message}" for c in errs]))
    return Configuration(Policy(levels["enforce"], levels["audit"], levels["warn"]), frozenset(usernames),
                         frozenset(namespaces), frozenset(runtime_classes))


def _unique(values: list[str], path: str, check: Any) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, v in enumerate(values):
        messages = check(v)
        if messages:
            errs.append(field_invalid(f"{path}[{i}]", v, ", ".join(messages)))
        elif v in seen:
            errs.append(field_duplicate(f"{path}[{i}]", v))
        else:
            seen.add(v)
    return errs
