"""PLACEHOLDER: not built yet; its owner replaces this module."""

from __future__ import annotations

from kapi.admission.plugin import Plugin


class AlwaysAdmit(Plugin):
    name = "AlwaysAdmit"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet


class AlwaysDeny(Plugin):
    name = "AlwaysDeny"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet
