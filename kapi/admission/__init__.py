"""Admission: the plugins a write passes after authorization, mutating then validating
(kube-apiserver's admission chain; see ``chain`` for the order, ``plugin`` for a plugin's view)."""
