"""Pod Security Standards: levels, versions, and a namespace's policy from its labels (kube's
k8s.io/pod-security-admission/api).

A namespace says what it enforces, audits and warns about with the labels
``pod-security.kubernetes.io/<mode>`` (a level: privileged, baseline, restricted) and
``pod-security.kubernetes.io/<mode>-version`` (``latest`` or ``v1.<minor>``); what a label leaves
out comes from the server's defaults (the PodSecurityConfiguration). An invalid label is an error
at namespace admission; at pod admission an invalid enforce level is read as restricted and an
invalid audit or warn level as privileged (kube fails closed for enforce, open for the others).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Mapping

from kapi.errors import Cause
from kapi.object.validation.fields import field_invalid

PRIVILEGED: Final = "privileged"
BASELINE: Final = "baseline"
RESTRICTED: Final = "restricted"
LEVELS: Final = (PRIVILEGED, BASELINE, RESTRICTED)
VERSION_LATEST: Final = "latest"

LABEL_PREFIX: Final = "pod-security.kubernetes.io/"
AUDIT_ANNOTATION_PREFIX: Final = LABEL_PREFIX
ENFORCE_LEVEL_LABEL: Final = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL: Final = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL: Final = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL: Final = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL: Final = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL: Final = LABEL_PREFIX + "warn-version"

EXEMPTION_REASON_ANNOTATION: Final = "exempt"
AUDIT_VIOLATIONS_ANNOTATION: Final = "audit-violations"
ENFORCED_POLICY_ANNOTATION: Final = "enforce-policy"

LEVEL_ERROR: Final = "must be one of " + ", ".join(LEVELS)
VERSION_ERROR: Final = 'must be "latest" or "v1.x"'
_VERSION_RE = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")
_LEVEL_RANK: Final = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}


@dataclass(frozen=True, slots=True, order=True)
class Version:
    """``v<major>.<minor>`` or ``latest`` (newer than every numbered version)."""

    latest: bool = False
    major: int = 0
    minor: int = 0

    def __str__(self) -> str:
        return VERSION_LATEST if self.latest else f"v{self.major}.{self.minor}"

    def older(self, other: Version) -> bool:
        return self < other


LATEST: Final = Version(latest=True)


def version(major: int, minor: int) -> Version:
    return Version(False, major, minor)


class ParseError(ValueError):
    pass


def parse_level(text: str) -> str:
    if text in _LEVEL_RANK:
        return text
    raise ParseError(LEVEL_ERROR)


def parse_version(text: str) -> Version:
    if text == VERSION_LATEST:
        return LATEST
    m = _VERSION_RE.fullmatch(text)
    if m is None:
        raise ParseError(VERSION_ERROR)
    return version(1, int(m.group(1)))


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is less, as, or more restrictive than ``b``."""
    ra, rb = _LEVEL_RANK.get(a, 1), _LEVEL_RANK.get(b, 1)
    return (ra > rb) - (ra < rb)


@dataclass(frozen=True, slots=True)
class LevelVersion:
    level: str
    version: Version

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    def equivalent(self, other: LevelVersion) -> bool:
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


PRIVILEGED_LATEST: Final = LevelVersion(PRIVILEGED, LATEST)


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion = PRIVILEGED_LATEST
    audit: LevelVersion = PRIVILEGED_LATEST
    warn: LevelVersion = PRIVILEGED_LATEST

    def equivalent(self, other: Policy) -> bool:
        return (self.enforce.equivalent(other.enforce) and self.audit.equivalent(other.audit)
                and self.warn.equivalent(other.warn))

    def fully_privileged(self) -> bool:
        return self.enforce.level == PRIVILEGED and self.audit.level == PRIVILEGED and self.warn.level == PRIVILEGED


def _label_error(label: str, value: str, message: str) -> Cause:
    return field_invalid(f"metadata.labels[{label}]", value, message)


def policy_to_evaluate(labels: Mapping[str, str] | None, defaults: Policy) -> tuple[Policy, list[Cause]]:
    """The namespace's policy from its labels over ``defaults``, and the labels' errors (kube's
    ``PolicyToEvaluate``: warn follows an enforce level stricter than it unless warn is labelled)."""
    if not labels:
        return defaults, []
    errs: list[Cause] = []
    enforce_level, enforce_version = defaults.enforce.level, defaults.enforce.version
    audit_level, audit_version = defaults.audit.level, defaults.audit.version
    warn_level, warn_version = defaults.warn.level, defaults.warn.version
    has_enforce_level = has_warn_level = has_warn_version = False

    def level_of(label: str, fallback: str) -> tuple[str, bool]:
        value = labels[label]
        try:
            return parse_level(value), True
        except ParseError as exc:
            errs.append(_label_error(label, value, str(exc)))
            return fallback, False

    def version_of(label: str) -> Version:
        value = labels[label]
        try:
            return parse_version(value)
        except ParseError as exc:
            errs.append(_label_error(label, value, str(exc)))
            return LATEST

    if ENFORCE_LEVEL_LABEL in labels:
        enforce_level, has_enforce_level = level_of(ENFORCE_LEVEL_LABEL, RESTRICTED)
    if ENFORCE_VERSION_LABEL in labels:
        enforce_version = version_of(ENFORCE_VERSION_LABEL)
    if AUDIT_LEVEL_LABEL in labels:
        audit_level, _ = level_of(AUDIT_LEVEL_LABEL, PRIVILEGED)  # fail open for audit
    if AUDIT_VERSION_LABEL in labels:
        audit_version = version_of(AUDIT_VERSION_LABEL)
    if WARN_LEVEL_LABEL in labels:
        has_warn_level = True
        warn_level, _ = level_of(WARN_LEVEL_LABEL, PRIVILEGED)  # fail open for warn
    if WARN_VERSION_LABEL in labels:
        has_warn_version = True
        warn_version = version_of(WARN_VERSION_LABEL)
    if not has_warn_level and has_enforce_level and compare_levels(enforce_level, warn_level) > 0:
        warn_level = enforce_level
        if not has_warn_version:
            warn_version = enforce_version
    return Policy(LevelVersion(enforce_level, enforce_version), LevelVersion(audit_level, audit_version),
                  LevelVersion(warn_level, warn_version)), errs
