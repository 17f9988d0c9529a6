"""The audit.k8s.io/v1 Policy: read and validated as kube's policy reader, evaluated as its checker.

The first rule that matches a request decides its level, the stages it omits and whether managed
fields are dropped from logged objects; a request no rule matches is not audited (level None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from kapi.object.access import UserInfo

NONE, METADATA, REQUEST, REQUEST_RESPONSE = "None", "Metadata", "Request", "RequestResponse"
LEVELS = (NONE, METADATA, REQUEST, REQUEST_RESPONSE)
_RANK = {level: i for i, level in enumerate(LEVELS)}
REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC = (
    "RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
STAGES = (REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC)
API_VERSION = "audit.k8s.io/v1"

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def at_least(level: str, floor: str) -> bool:
    """``level`` is ``floor`` or more detailed (kube's !level.Less(floor))."""
    return _RANK[level] >= _RANK[floor]


class PolicyError(ValueError):
    """A policy file kube-apiserver would refuse to start with; the message says why."""


@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestAuditConfig:
    """What the policy decided for one request (kube's RequestAuditConfig)."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


@dataclass(frozen=True, slots=True)
class Rule:
    """One PolicyRule; empty lists match everything, as kube's."""

    level: str
    users: frozenset[str] = frozenset()
    user_groups: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()
    resources: tuple[GroupResources, ...] = ()
    namespaces: frozenset[str] = frozenset()
    non_resource_urls: tuple[str, ...] = ()
    config: RequestAuditConfig = RequestAuditConfig(NONE)  # level with the policy's stages merged in

    def matches(self, user: UserInfo | None, info: Any) -> bool:
        """kube's ruleMatches; ``info`` is the request's RequestInfo (kapi.chain.context)."""
        if self.users and (user is None or user.name not in self.users):
            return False
        if self.user_groups and (user is None or self.user_groups.isdisjoint(user.groups)):
            return False
        if self.verbs and info.verb not in self.verbs:
            return False
        if self.namespaces or self.resources:
            return self._matches_resource(info)
        if self.non_resource_urls:
            return not info.is_resource and any(_path_matches(info.path, spec) for spec in self.non_resource_urls)
        return True

    def _matches_resource(self, info: Any) -> bool:
        if not info.is_resource:
            return False
        if self.namespaces and info.namespace not in self.namespaces:  # cluster-scoped: ""
            return False
        if not self.resources:
            return True
        resource, subresource = info.resource, info.subresource
        combined = f"{resource}/{subresource}" if subresource else resource
        for gr in self.resources:
            if gr.group != info.group:
                continue
            if not gr.resources:
                return True
            if gr.resource_names and info.name not in gr.resource_names:
                continue
            for res in gr.resources:
                if res == combined or res == "*":
                    return True
                if subresource and res.startswith("*/") and subresource == res.lstrip("*/"):
                    return True
                if res.endswith("/*") and resource == res.rstrip("/*"):
                    return True
        return False


def _path_matches(path: str, spec: str) -> bool:
    return spec == "*" or spec == path or spec.endswith("*") and path.startswith(spec.rstrip("*"))


@dataclass(frozen=True, slots=True)
class Policy:
    """A read policy: its rules in order (each with the policy's omitStages merged in, as kube's evaluator)."""

    rules: tuple[Rule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def evaluate(self, user: UserInfo | None, info: Any) -> RequestAuditConfig:
        """kube's EvaluatePolicyRule: the first matching rule's level and stages, else level None."""
        for rule in self.rules:
            if rule.matches(user, info):
                return rule.config
        return RequestAuditConfig(NONE, self.omit_stages, self.omit_managed_fields)


def _strings(value: Any, path: str, errs: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errs.append(f"{path}: Invalid value: must be a list of strings")
        return ()
    return tuple(value)


def _stages(value: Any, path: str, errs: list[str]) -> frozenset[str]:
    stages = _strings(value, path, errs)
    for i, stage in enumerate(stages):
        if stage not in STAGES:
            errs.append(f'{path}[{i}]: Invalid value: "{stage}": allowed stages are {",".join(STAGES)}')
    return frozenset(stages)


def _rule(raw: Any, path: str, policy_stages: frozenset[str], policy_omit_mf: bool, errs: list[str]) -> Rule | None:
    if not isinstance(raw, dict):
        errs.append(f"{path}: Invalid value: must be an object")
        return None
    level = raw.get("level", "")
    if level == "" or level is None:
        errs.append(f"{path}.level: Required value")
    elif level not in LEVELS:
        errs.append(f'{path}.level: Unsupported value: "{level}": supported values: '
                    + ", ".join(f'"{v}"' for v in LEVELS))
    urls = _strings(raw.get("nonResourceURLs"), f"{path}.nonResourceURLs", errs)
    for i, url in enumerate(urls):
        if url == "*":
            continue
        if not url.startswith("/"):
            errs.append(f'{path}.nonResourceURLs[{i}]: Invalid value: "{url}": non-resource URL rules must begin '
                        "with a '/' character")
        if url and "*" in url[:-1]:
            errs.append(f'{path}.nonResourceURLs[{i}]: Invalid value: "{url}": non-resource URL wildcards \'*\' '
                        "must be the final character of the rule")
    resources: list[GroupResources] = []
    raw_resources = raw.get("resources") or []
    if not isinstance(raw_resources, list):
        errs.append(f"{path}.resources: Invalid value: must be a list")
        raw_resources = []
    for gr in raw_resources:
        if not isinstance(gr, dict):
            errs.append(f"{path}.resources: Invalid value: must be a list of objects")
            continue
        group = gr.get("group") or ""
        if not isinstance(group, str):
            errs.append(f"{path}.resources.group: Invalid value: must be a string")
            group = ""
        if group and (len(group) > 253 or not _DNS_SUBDOMAIN.fullmatch(group)):
            errs.append(f'{path}.resources.group: Invalid value: "{group}": a lowercase RFC 1123 subdomain must '
                        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
                        "an alphanumeric character")
        names = _strings(gr.get("resourceNames"), f"{path}.resources.resourceNames", errs)
        res = _strings(gr.get("resources"), f"{path}.resources.resources", errs)
        if names and not res:
            errs.append(f"{path}.resources.resourceNames: Invalid value: {list(names)}: using resourceNames "
                        "requires at least one resource")
        resources.append(GroupResources(group, res, names))
    namespaces = _strings(raw.get("namespaces"), f"{path}.namespaces", errs)
    if urls and (resources or namespaces):
        errs.append(f"{path}.nonResourceURLs: Invalid value: {list(urls)}: rules cannot apply to both regular "
                    "resources and non-resource URLs")
    stages = _stages(raw.get("omitStages"), f"{path}.omitStages", errs)
    omit_mf = raw.get("omitManagedFields")
    if omit_mf is not None and not isinstance(omit_mf, bool):
        errs.append(f"{path}.omitManagedFields: Invalid value: must be a boolean")
        omit_mf = None
    if level not in LEVELS:
        return None
    config = RequestAuditConfig(level, stages | policy_stages, policy_omit_mf if omit_mf is None else omit_mf)
    return Rule(level, frozenset(_strings(raw.get("users"), "", [])),
                frozenset(_strings(raw.get("userGroups"), "", [])), frozenset(_strings(raw.get("verbs"), "", [])),
                tuple(resources), frozenset(namespaces), urls, config)


def parse_policy(doc: Any) -> Policy:
    """A Policy from its decoded document; ``PolicyError`` with kube's field errors when it is not valid."""
    if not isinstance(doc, dict):
        raise PolicyError("failed decoding: the policy is not an object")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != "Policy":
        raise PolicyError(f"unknown group version field {doc.get('apiVersion', '')}, Kind={doc.get('kind', '')} "
                          f"in policy (want apiVersion {API_VERSION}, kind Policy)")
    errs: list[str] = []
    policy_stages = _stages(doc.get("omitStages"), "omitStages", errs)
    omit_mf = doc.get("omitManagedFields", False)
    if not isinstance(omit_mf, bool):
        errs.append("omitManagedFields: Invalid value: must be a boolean")
        omit_mf = False
    raw_rules = doc.get("rules") or []
    if not isinstance(raw_rules, list):
        errs.append("rules: Invalid value: must be a list")
        raw_rules = []
    rules = [_rule(r, f"rules[{i}]", policy_stages, omit_mf, errs) for i, r in enumerate(raw_rules)]
    if errs:
        raise PolicyError("[" + ", ".join(errs) + "]" if len(errs) > 1 else errs[0])
    if not rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    return Policy(tuple(r for r in rules if r is not None), policy_stages, omit_mf)


def load_policy(path: str) -> Policy:
    """Read ``--audit-policy-file`` (YAML or JSON); ``PolicyError`` naming the file when it cannot be used."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise PolicyError(f'failed to read file path "{path}": {exc.strerror or exc}') from None
    try:
        doc = orjson.loads(data) if data.lstrip()[:1] == b"{" else yaml.safe_load(data)
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise PolicyError(f"failed decoding: {exc}: from file {path}") from None
    try:
        return parse_policy(doc)
    except PolicyError as exc:
        raise PolicyError(f"{exc}: from file {path}") from None
