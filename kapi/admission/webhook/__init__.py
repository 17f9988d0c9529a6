"""Admission webhooks (kube's ``apiserver/pkg/admission/plugin/webhook``): the configurations'
webhooks (``source``), one webhook's call and its answer (``call``), and the mutating (in order,
with reinvocation) and validating (in parallel) dispatch (``dispatch``). The plugins are
``kapi.admission.plugins.webhooks``."""
