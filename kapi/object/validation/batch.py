"""batch/v1: jobs and cron jobs (with the cron schedule parser's error texts)."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from types import MappingProxyType

from kapi.errors import Cause
from kapi.object.validation.fields import (FIELD_IMMUTABLE, Obj, _Rendered, _d, _go_map, _i, _immutable,
    _nonnegative, _s, _semantic_equal, field_invalid, field_not_supported, field_required, go_quote,
    unique_causes)
from kapi.object.validation.meta import (_go_selector, _selector_is_empty, _selector_matches,
    _selector_parses, _validate_label_selector)
from kapi.object.validation.names import is_dns1123_label
from kapi.object.validation.pods import _validate_pod_template_spec


_JOB_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")


def _job_spec_common(spec: Obj, path: str) -> list[Cause]:
    """``validateJobSpec``: what Jobs and CronJob job templates share."""
    errs: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        errs.extend(_nonnegative(f"{path}.{key}", spec.get(key)))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(field_not_supported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed")))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(field_required(f"{path}.completions", "when completion mode is Indexed"))
            parallelism = _i(spec.get("parallelism"))
            if parallelism is not None and parallelism > 100000:
                errs.append(field_invalid(f"{path}.parallelism", parallelism,
                                          "must be less than or equal to 100000 when completion mode is Indexed"))
    policy = spec.get("podReplacementPolicy")
    if policy is not None:
        allowed = ("Failed",) if spec.get("podFailurePolicy") is not None else ("Failed", "TerminatingOrFailed")
        if policy not in allowed:
            errs.append(field_not_supported(f"{path}.podReplacementPolicy", policy, allowed))
    errs.extend(_validate_pod_template_spec(spec.get("template"), f"{path}.template"))
    restart = _s(_d(_d(spec.get("template")).get("spec")).get("restartPolicy"))
    rpath = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", ""):
        errs.append(field_required(rpath, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(field_not_supported(rpath, restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(field_invalid(rpath, restart, 'only "Never" is supported when podFailurePolicy is specified'))
    return errs


def _job_spec(spec: Obj) -> list[Cause]:
    """``ValidateJobSpec``: the common part plus the selector."""
    errs = _job_spec_common(spec, "spec")
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field_required("spec.selector"))
    else:
        errs.extend(_validate_label_selector(selector, "spec.selector"))
    labels = _d(_d(spec.get("template")).get("metadata")).get("labels")
    if _selector_parses(selector) and not _selector_is_empty(selector) and not _selector_matches(selector, labels):
        errs.append(field_invalid("spec.template.metadata.labels", _Rendered(_go_map(labels)),
                                  "`selector` does not match template `labels`"))
    return errs


def _has_label(template_md: Obj, key: str, expected: str) -> list[Cause]:
    labels = _d(template_md.get("labels"))
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [field_required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [field_invalid(path, _Rendered(_go_map(labels)), f"must be '{expected}'")]
    return []


@unique_causes
def validate_job(obj: Obj) -> list[Cause]:
    spec, md = _d(obj.get("spec")), _d(obj.get("metadata"))
    errs: list[Cause] = []
    if spec.get("manualSelector") is not True:
        template_md = _d(_d(spec.get("template")).get("metadata"))
        if template_md.get("labels") is None:
            errs.append(field_required("spec.template.metadata.labels"))
        uid, name = _s(md.get("uid")), _s(md.get("name"))
        if not uid:
            errs.append(field_required("metadata.uid"))
        for key, expected in zip(_JOB_LABELS, (uid, name, uid, name)):
            errs.extend(_has_label(template_md, key, expected))
        expected_labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name}
        selector = spec.get("selector")
        if _selector_parses(selector) and not _selector_matches(selector, expected_labels) \
                and not _selector_is_empty(selector):
            errs.append(field_invalid("spec.selector", _go_selector(selector), "`selector` not auto-generated"))
    errs.extend(_job_spec(spec))
    completions = _i(spec.get("completions"))
    if spec.get("completionMode") == "Indexed" and completions and completions > 0:
        hostname = f"{_s(md.get('name'))}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(field_invalid("metadata.name", _s(md.get("name")),
                                      f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


@unique_causes
def validate_job_update(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    errs = _job_spec(spec)
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is not None:
        if not _semantic_equal(spec.get("completions"), old_spec.get("completions")) \
                and spec.get("completions") != spec.get("parallelism"):
            errs.append(field_invalid("spec.completions", spec.get("completions"),
                                      "can only be modified in tandem with spec.parallelism"))
    else:
        errs.extend(_immutable("spec.completions", spec.get("completions"), old_spec.get("completions")))
    errs.extend(_immutable("spec.selector", spec.get("selector"), old_spec.get("selector"),
            _go_selector(spec.get("selector"))))
    template, old_template = _d(spec.get("template")), _d(old_spec.get("template"))
    if old_spec.get("suspend") is True and not _d(old.get("status")).get("startTime"):
        # A suspended Job that never started may change its scheduling directives.
        template = dict(template)
        tspec, old_tspec = dict(_d(template.get("spec"))), dict(_d(old_template.get("spec")))
        for key in ("nodeSelector", "tolerations", "schedulingGates"):
            tspec.pop(key, None)
            old_tspec.pop(key, None)
        for tspec_ in (tspec, old_tspec):
            affinity = dict(_d(tspec_.get("affinity")))
            affinity.pop("nodeAffinity", None)
            tspec_["affinity"] = affinity
        template["spec"], template["metadata"] = tspec, {}
        old_template = dict(old_template, spec=old_tspec, metadata={})
    if not _semantic_equal(template, old_template):
        errs.append(field_invalid("spec.template", _d(spec.get("template")), FIELD_IMMUTABLE))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs.extend(_immutable(f"spec.{key}", spec.get(key), old_spec.get(key)))
    return errs


_CRON_BOUNDS = MappingProxyType({
    "minute": (0, 59, {}), "hour": (0, 23, {}), "dom": (1, 31, {}),
    "month": (1, 12, {m: i + 1 for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}),
    "dow": (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
})
_CRON_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


def _cron_int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise ValueError(f'failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: invalid syntax')
    number = int(expr)
    if number < 0:
        raise ValueError(f"negative number ({number}) not allowed: {expr}")
    return number


def _cron_range(expr: str, lo: int, hi: int, names: Mapping[str, int]) -> None:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = lo, hi
    else:
        start = names.get(low_high[0].lower()) if low_high[0].lower() in names else _cron_int(low_high[0])
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = names[low_high[1].lower()] if low_high[1].lower() in names else _cron_int(low_high[1])
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if len(low_high) == 1:
            end = hi
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < lo:
        raise ValueError(f"beginning of range ({start}) below minimum ({lo}): {expr}")
    if end > hi:
        raise ValueError(f"end of range ({end}) above maximum ({hi}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def _cron_parse_error(schedule: str) -> str:
    """robfig/cron's standard parser error for ``schedule``, or "" when it parses."""
    spec = schedule
    if not spec:
        return "empty spec string"
    try:
        if spec.startswith(("TZ=", "CRON_TZ=")):
            space = spec.find(" ")
            zone = spec[spec.find("=") + 1:space if space >= 0 else len(spec)]
            try:
                zoneinfo.ZoneInfo(zone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                return f"provided bad location {zone}: unknown time zone {zone}"
            spec = spec[space:].strip() if space >= 0 else ""
        if spec.startswith("@"):
            if spec in _CRON_DESCRIPTORS:
                return ""
            if spec.startswith("@every "):
                duration = spec[len("@every "):]
                if not re.fullmatch(r"([0-9]*(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+", duration):
                    return f"failed to parse duration {spec}: time: invalid duration {go_quote(duration)}"
                return ""
            return f"unrecognized descriptor: {spec}"
        fields = spec.split()
        if len(fields) != 5:
            return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
        for value, (lo, hi, names) in zip(fields, _CRON_BOUNDS.values()):
            for expr in [e for e in value.split(",") if e]:
                _cron_range(expr, lo, hi, names)
    except ValueError as exc:
        return str(exc)
    return ""


def _cronjob_spec(spec: Obj, old_spec: Obj | None) -> list[Cause]:
    errs: list[Cause] = []
    schedule = _s(spec.get("schedule"))
    if not schedule:
        errs.append(field_required("spec.schedule"))
    else:
        message = _cron_parse_error(schedule)
        if message:
            errs.append(field_invalid("spec.schedule", schedule, message))
        allow_tz = old_spec is not None and "TZ" in _s(old_spec.get("schedule"))
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            errs.append(field_invalid("spec.schedule", schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
        elif not allow_tz and "TZ" in schedule:
            errs.append(field_invalid("spec.schedule", schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    errs.extend(_nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds")))
    zone = spec.get("timeZone")
    if zone is not None and (old_spec is None or old_spec.get("timeZone") != zone):
        if not _s(zone):
            errs.append(field_invalid("spec.timeZone", _s(zone), "timeZone must be nil or non-empty string"))
        elif _s(zone).lower() == "local":
            errs.append(field_invalid("spec.timeZone", zone, "timeZone must be an explicit time zone as defined in "
                                                              "https://www.iana.org/time-zones"))
        else:
            try:
                zoneinfo.ZoneInfo(_s(zone))
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                errs.append(field_invalid("spec.timeZone", zone, f"unknown time zone {zone}"))
    policy = _s(spec.get("concurrencyPolicy"))
    if not policy:
        errs.append(field_required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        errs.append(field_not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    job_spec = _d(_d(spec.get("jobTemplate")).get("spec"))
    errs.extend(_job_spec_common(job_spec, "spec.jobTemplate.spec"))
    if job_spec.get("selector") is not None:
        errs.append(field_invalid("spec.jobTemplate.spec.selector", _go_selector(job_spec.get("selector")),
                                  "`selector` will be auto-generated"))
    if job_spec.get("manualSelector") is True:
        errs.append(field_not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false")))
    errs.extend(_nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit")))
    errs.extend(_nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit")))
    return errs


@unique_causes
def validate_cron_job(obj: Obj) -> list[Cause]:
    errs = _cronjob_spec(_d(obj.get("spec")), None)
    name = _s(_d(obj.get("metadata")).get("name"))
    # The controller appends an 11-character suffix and Job names are labels (63).
    if len(name) > 52:
        errs.append(field_invalid("metadata.name", name, "must be no more than 52 characters"))
    return errs


@unique_causes
def validate_cron_job_update(new: Obj, old: Obj) -> list[Cause]:
    return _cronjob_spec(_d(new.get("spec")), _d(old.get("spec")))
