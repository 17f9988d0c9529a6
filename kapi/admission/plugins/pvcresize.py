"""PLACEHOLDER: not built yet; its owner replaces this module."""

from __future__ import annotations

from kapi.admission.plugin import Plugin


class PersistentVolumeClaimResize(Plugin):
    name = "PersistentVolumeClaimResize"
    resources = frozenset()  # PLACEHOLDER: acts on nothing yet
