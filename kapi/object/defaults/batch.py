"""batch/v1: jobs (with the generated selector) and cron jobs."""

from __future__ import annotations

from kapi.object.defaults.fields import Obj, _dicts, _obj, _unset, defaulter
from kapi.object.defaults.pods import _default_template


@defaulter
def default_job(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    template = _obj(spec, "template")
    md = _obj(obj, "metadata")
    template_md = template.get("metadata") if isinstance(template.get("metadata"), dict) else None
    template_labels = template_md.get("labels") if template_md is not None else None
    # Go shares the map: a Job without labels ends up with its template's, generated ones included.
    share_labels = isinstance(template_labels, dict) and not md.get("labels")
    if _unset(spec, "completionMode"):
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    failure_policy = spec.get("podFailurePolicy")
    if isinstance(failure_policy, dict):
        for rule in _dicts(failure_policy.get("rules")):
            for pattern in _dicts(rule.get("onPodConditions")):
                if _unset(pattern, "status"):
                    pattern["status"] = "True"
    if _unset(spec, "podReplacementPolicy"):
        spec["podReplacementPolicy"] = "Failed" if failure_policy is not None else "TerminatingOrFailed"
    _default_template(spec)
    if share_labels:
        md["labels"] = dict(_obj(_obj(template, "metadata"), "labels"))


def generate_job_selector(obj: Obj) -> None:
    """kube's Job PrepareForCreate: the selector and template labels of the job's uid and name, unless
    ``spec.manualSelector``. Job labels that are the template's (Go's defaulting shares the map) get them too."""
    spec = _obj(obj, "spec")
    if spec.get("manualSelector") is True:
        return
    template = _obj(spec, "template")
    md = _obj(obj, "metadata")
    name, uid = str(md.get("name", "")), str(md.get("uid", ""))
    labels = _obj(_obj(template, "metadata"), "labels")
    shared = bool(labels) and md.get("labels") == labels
    for key, value in (("batch.kubernetes.io/controller-uid", uid), ("batch.kubernetes.io/job-name", name),
                       ("controller-uid", uid), ("job-name", name)):
        # a conflicting label set by the user is left for validation to reject
        labels.setdefault(key, value)
    if shared:
        md["labels"] = dict(labels)
    match_labels = _obj(_obj(spec, "selector"), "matchLabels")
    match_labels.setdefault("batch.kubernetes.io/controller-uid", uid)


@defaulter
def default_cron_job(obj: Obj, old: Obj | None) -> None:
    spec = _obj(obj, "spec")
    if _unset(spec, "concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        _default_template(_obj(job_template, "spec"))
