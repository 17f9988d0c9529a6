"""PodTopologyLabels (kube's plugin/pkg/admission/podtopologylabels).

In kube 1.33 it is behind the PodTopologyLabelsAdmission feature gate (alpha, off): on by default
in the plugin list, it copies nothing. kapi serves 1.33's defaults, so it is accepted and inert.
"""

from __future__ import annotations

from kapi.admission.plugin import Plugin


class PodTopologyLabels(Plugin):
    name = "PodTopologyLabels"
    resources = frozenset()  # the feature gate is off in kube 1.33: it acts on nothing


__all__ = ["PodTopologyLabels"]
