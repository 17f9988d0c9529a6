"""Admission policies (kube's admission/plugin/policy): what ValidatingAdmissionPolicy and
MutatingAdmissionPolicy share (``generic``: their source, params), the validating policy's
compilation and evaluation (``validating``), and the type checking of policies against the schemas
of the kinds they match (``typecheck``)."""
