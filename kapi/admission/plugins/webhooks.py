"""PLACEHOLDER: not built yet; its owner replaces this module."""

from __future__ import annotations

from kapi.admission.plugin import Plugin


class MutatingAdmissionWebhook(Plugin):
    name = "MutatingAdmissionWebhook"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet


class ValidatingAdmissionWebhook(Plugin):
    name = "ValidatingAdmissionWebhook"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet
