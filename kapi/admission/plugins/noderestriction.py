"""PLACEHOLDER: not built yet; its owner replaces this module."""

from __future__ import annotations

from kapi.admission.plugin import Plugin


class NodeRestriction(Plugin):
    name = "NodeRestriction"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet
