"""PLACEHOLDER: not built yet; its owner replaces this module."""

from __future__ import annotations

from kapi.admission.plugin import Plugin


class CertificateApproval(Plugin):
    name = "CertificateApproval"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet


class CertificateSigning(Plugin):
    name = "CertificateSigning"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet


class ClusterTrustBundleAttest(Plugin):
    name = "ClusterTrustBundleAttest"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet


class CertificateSubjectRestriction(Plugin):
    name = "CertificateSubjectRestriction"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet
