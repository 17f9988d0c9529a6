"""A namespace's policy from its labels over the defaults (kube's PolicyToEvaluate: warn following a
stricter enforce, invalid enforce read as restricted, invalid audit/warn as privileged), version
parsing and ordering, and the PodSecurityConfiguration's loading, defaulting and kube's errors."""

from __future__ import annotations

import pytest

from kapi.admission.podsecurity import api
from kapi.admission.podsecurity.api import (BASELINE, LATEST, PRIVILEGED, RESTRICTED, LevelVersion, Policy,
                                           parse_version, policy_to_evaluate, version)
from kapi.admission.podsecurity.config import ConfigurationError, load

P = api.LABEL_PREFIX


def test_versions() -> None:
    assert parse_version("latest") == LATEST and str(LATEST) == "latest"
    assert parse_version("v1.0") == version(1, 0) and str(parse_version("v1.33")) == "v1.33"
    assert parse_version("v1.100") == version(1, 100)
    for bad in ("1.2", "v1.01", "v2.0", "v1", "v1.x", "Latest", ""):
        with pytest.raises(api.ParseError, match='must be "latest" or "v1.x"'):
            parse_version(bad)
    assert version(1, 9) < version(1, 10) < LATEST
    assert api.compare_levels(RESTRICTED, BASELINE) == 1 and api.compare_levels(PRIVILEGED, BASELINE) == -1
    assert api.compare_levels(BASELINE, BASELINE) == 0


def test_no_labels_is_the_default() -> None:
    default = Policy()
    assert policy_to_evaluate({}, default) == (default, [])
    assert default.fully_privileged() and str(default.enforce) == "privileged:latest"


def test_labels_and_warn_following_enforce() -> None:
    p, errs = policy_to_evaluate({P + "enforce": "baseline", P + "enforce-version": "v1.20"}, Policy())
    assert not errs
    assert p.enforce == LevelVersion(BASELINE, version(1, 20))
    assert p.warn == LevelVersion(BASELINE, version(1, 20))  # follows enforce, version too
    assert p.audit == LevelVersion(PRIVILEGED, LATEST)
    p, _ = policy_to_evaluate({P + "enforce": "restricted", P + "warn-version": "v1.25"}, Policy())
    assert p.warn == LevelVersion(RESTRICTED, version(1, 25))
    p, _ = policy_to_evaluate({P + "enforce": "restricted", P + "warn": "baseline"}, Policy())
    assert p.warn == LevelVersion(BASELINE, LATEST)  # an explicit warn level stays
    # warn is not lowered to follow a laxer enforce
    defaults = Policy(warn=LevelVersion(RESTRICTED, LATEST))
    p, _ = policy_to_evaluate({P + "enforce": "baseline"}, defaults)
    assert p.warn == LevelVersion(RESTRICTED, LATEST)


def test_invalid_labels() -> None:
    p, errs = policy_to_evaluate({P + "enforce": "strict", P + "audit": "x", P + "warn": "y",
                                  P + "audit-version": "1.2"}, Policy())
    assert p.enforce.level == RESTRICTED  # fail closed for enforce
    assert p.audit.level == PRIVILEGED and p.warn.level == PRIVILEGED  # open for audit and warn
    assert [(c.field, c.message) for c in errs] == [
        (f"metadata.labels[{P}enforce]", 'Invalid value: "strict": must be one of privileged, baseline, restricted'),
        (f"metadata.labels[{P}audit]", 'Invalid value: "x": must be one of privileged, baseline, restricted'),
        (f"metadata.labels[{P}audit-version]", 'Invalid value: "1.2": must be "latest" or "v1.x"'),
        (f"metadata.labels[{P}warn]", 'Invalid value: "y": must be one of privileged, baseline, restricted'),
    ]
    assert all(c.reason == "FieldValueInvalid" for c in errs)
    # an invalid enforce level does not pull warn along
    p, _ = policy_to_evaluate({P + "enforce": "strict"}, Policy())
    assert p.warn.level == PRIVILEGED


def test_equivalence() -> None:
    a = LevelVersion(PRIVILEGED, version(1, 2))
    assert a.equivalent(LevelVersion(PRIVILEGED, LATEST))
    assert not LevelVersion(BASELINE, version(1, 2)).equivalent(LevelVersion(BASELINE, LATEST))


def test_configuration_defaults() -> None:
    c = load(None)
    assert c.defaults == Policy() and not c.namespaces and not c.usernames and not c.runtime_classes
    c = load({"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
              "defaults": {"enforce": "baseline", "warn": "restricted", "warn-version": "v1.30"},
              "exemptions": {"usernames": ["admin"], "namespaces": ["kube-system"], "runtimeClasses": ["kata"]}})
    assert c.defaults == Policy(LevelVersion(BASELINE, LATEST), LevelVersion(PRIVILEGED, LATEST),
                                LevelVersion(RESTRICTED, version(1, 30)))
    assert (c.usernames, c.namespaces, c.runtime_classes) == ({"admin"}, {"kube-system"}, {"kata"})
    for v in ("v1beta1", "v1alpha1"):
        assert load({"apiVersion": f"pod-security.admission.config.k8s.io/{v}",
                     "kind": "PodSecurityConfiguration"}).defaults == Policy()


@pytest.mark.parametrize(("doc", "message"), [
    ({"defaults": {"enforce": "strict"}},
     "PodSecurity configuration error: enforce: must be one of privileged, baseline, restricted"),
    ({"defaults": {"enforce": "strict", "audit-version": "1.2"}},
     'PodSecurity configuration error: [enforce: must be one of privileged, baseline, restricted, '
     'audit-version: must be "latest" or "v1.x"]'),
    ({"exemptions": {"namespaces": ["Bad_NS"]}},
     'PodSecurity invalid: exemptions.namespaces[0]: Invalid value: "Bad_NS": a lowercase RFC 1123 label must'),
    ({"exemptions": {"usernames": ["a", "a", ""]}},
     'PodSecurity invalid: [exemptions.usernames[1]: Duplicate value: "a", exemptions.usernames[2]: '
     'Invalid value: "": username must not be empty]'),
    ({"exemptions": {"runtimeClasses": ["x_y"]}},
     'PodSecurity invalid: exemptions.runtimeClasses[0]: Invalid value: "x_y": a lowercase RFC 1123 subdomain'),
])
def test_configuration_errors(doc: dict[str, object], message: str) -> None:
    doc = {"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", **doc}
    with pytest.raises(ConfigurationError) as exc:
        load(doc)
    assert str(exc.value).startswith(message), str(exc.value)


def test_configuration_wrong_kind() -> None:
    with pytest.raises(ConfigurationError, match='no kind "Other" is registered for version '
                                                 '"pod-security.admission.config.k8s.io/v1"'):
        load({"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "Other"})
    with pytest.raises(ConfigurationError, match='for version "v1"'):
        load({"apiVersion": "v1", "kind": "PodSecurityConfiguration"})
