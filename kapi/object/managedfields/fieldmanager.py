"""kube-apiserver's field manager for server-side apply: the pipeline around ``Updater.apply``.

``apply_managed_fields`` is ``FieldManager.Apply`` with kube's default managers, outermost first:
the version check, the last-applied updater and manager (client-side apply's annotation kept in
step, and its fields taken over without conflict by ``kubectl``), the cap on Update managers, the
manager's identity (an Apply entry per manager and subresource), metadata stripping, the timestamps,
and the structured merge itself. Object layer: no I/O; raises ``kapi.errors`` StatusErrors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kapi.object.managedfields.updater import Converter
from kapi.object.schema import GVK, Schema

__all__ = ["LAST_APPLIED_ANNOTATION", "apply_managed_fields", "conflict_error"]

Obj = dict[str, Any]
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"


def apply_managed_fields(
    schema: Schema,
    gvk: GVK | tuple[str, str, str],
    live: Obj | None,
    config: Obj,
    *,
    manager: str,
    force: bool,
    now: str,
    subresource: str = "",
    reset_fields: Iterable[Sequence[str]] = (),
    converter: Converter | None = None,
) -> Obj:
    """The object a server-side apply of ``config`` by ``manager`` makes of ``live`` (None on create),
    ``metadata.managedFields`` included, as kube's ``FieldManager.Apply`` returns it. When the apply
    changes nothing but managedFields, the result is ``live``'s copy with the new managedFields (equal
    to ``live`` when they did not change either: no write). ``now``: RFC 3339, the applier's new time.

    Raises:
        errors.BadRequest: ``config``'s apiVersion is not the gvk's ("Incorrect version specified in
            apply patch. ..."), it carries ``metadata.managedFields``, or does not fit the schema
            ("failed to create typed patch object (...): ...").
        errors.Conflict: the apply changes fields others own and ``force`` is False (``conflict_error``).
    """
    raise NotImplementedError


def conflict_error(conflicts: Any) -> Any:
    """kube's ``NewConflictError``: 409 with "Apply failed with N conflicts: ..." and one
    FieldManagerConflict cause per conflicting field (``conflicts``: an ``updater.Conflicts``)."""
    raise NotImplementedError

