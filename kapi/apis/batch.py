"""batch/v1: Jobs and CronJobs."""

from __future__ import annotations

from typing import Final

from kapi.errors import Cause
from kapi.object.defaults import default_cron_job, default_job
from kapi.object.defaults.batch import generate_job_selector
from kapi.object.selectors import META_FIELDS, FieldLabels, int_value
from kapi.object.validation import validate_cron_job, validate_cron_job_update, validate_job, validate_job_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

_ALL = ("all",)


class JobStrategy(Strategy):
    tracks_generation = True
    field_labels = FieldLabels(META_FIELDS | {"status.successful"}, converts=True,
                               unknown_message="field label {q} not supported for batchv1.Job")

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_job(obj, old)

    def prepare_named(self, obj: Obj) -> None:
        generate_job_selector(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_job(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_job_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"status.successful": int_value((obj.get("status") or {}).get("succeeded"))}


class CronJobStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_cron_job(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_cron_job(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_cron_job_update(new, old)


JOBS: Final = Resource(group="batch", version="v1", resource="jobs", kind="Job", categories=_ALL,
                       subresources=("status",), strategy=JobStrategy())
CRON_JOBS: Final = Resource(group="batch", version="v1", resource="cronjobs", kind="CronJob", short_names=("cj",),
                            categories=_ALL, subresources=("status",), strategy=CronJobStrategy())
