"""certificates.k8s.io/v1 CertificateSigningRequests (kube's pkg/registry/certificates/certificates).

Cluster scoped. On create the requester's name, uid, groups and extra are written into
``spec.username``/``uid``/``groups``/``extra`` (whatever the body said). The spec is never changed by an
update (it stays as created). The ``approval`` subresource writes only ``status.conditions`` (Approved,
Denied); the ``status`` subresource writes the certificate and the other conditions, the Approved and
Denied ones keeping their old values (validation refuses adding or removing them). Conditions get their
``lastUpdateTime``/``lastTransitionTime`` filled.
Approved CSRs of ``kubernetes.io/kube-apiserver-client`` are signed by ``kapi.controllers.csrsigning``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from kapi.encoding.tables import certificates as tables
from kapi.errors import Cause
from kapi.object import meta
from kapi.object.selectors import META_FIELDS, FieldLabels
from kapi.object.validation.certificates import validate_csr, validate_csr_status_update, validate_csr_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy, status_only

if TYPE_CHECKING:
    from kapi.registry.store import WriteOptions

GROUP: Final = "certificates.k8s.io"
KUBE_APISERVER_CLIENT: Final = "kubernetes.io/kube-apiserver-client"


def _conditions(obj: Obj) -> list[Any]:
    conds = (obj.get("status") or {}).get("conditions")
    return conds if isinstance(conds, list) else []


def _populate_condition_timestamps(new: Obj, old: Obj) -> None:
    """populateConditionTimestamps: unset times are now, or the old condition's transition time."""
    now = meta.now_rfc3339()
    old_by_type = {c.get("type"): c for c in _conditions(old) if isinstance(c, dict)}
    for cond in _conditions(new):
        if not isinstance(cond, dict):
            continue
        if not cond.get("lastUpdateTime"):
            cond["lastUpdateTime"] = now
        if not cond.get("lastTransitionTime"):
            before = old_by_type.get(cond.get("type"))
            if before and before.get("status") == cond.get("status") and before.get("lastTransitionTime"):
                cond["lastTransitionTime"] = before["lastTransitionTime"]
            else:
                cond["lastTransitionTime"] = now


def _preserve_condition_instances(new: Obj, old: Obj, kind: str) -> None:
    """preserveConditionInstances: when new has as many conditions of ``kind`` as old, each takes the
    old one's value, in new's places."""
    old_ones = [c for c in _conditions(old) if isinstance(c, dict) and c.get("type") == kind]
    conds = _conditions(new)
    places = [i for i, c in enumerate(conds) if isinstance(c, dict) and c.get("type") == kind]
    if len(places) == len(old_ones):
        for i, before in zip(places, old_ones):
            conds[i] = copy.deepcopy(before)


class CertificateSigningRequestStrategy(Strategy):
    field_labels = FieldLabels(META_FIELDS | {"spec.signerName"})
    reset_fields = (("spec",), ("status",))
    status_reset_fields = (("spec",), ("status", "conditions"))
    printer = tables.CERTIFICATE_SIGNING_REQUEST

    def reset_fields_of(self, has_status: bool, subresource: str) -> tuple[tuple[str, ...], ...]:
        if subresource == "approval":
            return (("spec",), ("status", "certificate"))
        return super().reset_fields_of(has_status, subresource)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_csr(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_csr_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_csr_status_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"spec.signerName": str((obj.get("spec") or {}).get("signerName") or "")}

    def prepare_for_create(self, res: Resource, obj: Obj) -> None:
        super().prepare_for_create(res, obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):  # the requester's identity is written in authorize_write
            for k in ("username", "uid", "groups", "extra"):
                spec.pop(k, None)

    def prepare_for_update(self, res: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
        if subresource == "status":
            out = status_only(new, old)
            # Approved and Denied conditions are the approval subresource's: as many instances as before
            # keep their old values in place; added or removed ones are refused by validation.
            for kind in ("Approved", "Denied"):
                _preserve_condition_instances(out, old, kind)
            _populate_condition_timestamps(out, old)
            return out
        new["spec"] = copy.deepcopy(old.get("spec"))
        status = copy.deepcopy(old.get("status"))
        if subresource == "approval":
            conditions = (new.get("status") or {}).get("conditions")
            status = status if isinstance(status, dict) else {}
            if conditions:
                status["conditions"] = conditions
            else:
                status.pop("conditions", None)
        if status:
            new["status"] = status
        else:
            new.pop("status", None)
        if subresource == "approval":
            _populate_condition_timestamps(new, old)
        self.next_generation(new, old, subresource)
        return new

    async def authorize_write(self, new: Obj, old: Obj | None, opts: WriteOptions) -> None:
        if old is not None or opts.requester is None:
            return
        user, spec = opts.requester, new.setdefault("spec", {})
        if user.name:
            spec["username"] = user.name
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}


CERTIFICATE_SIGNING_REQUESTS: Final = Resource(
    group=GROUP, version="v1", resource="certificatesigningrequests", kind="CertificateSigningRequest",
    namespaced=False, short_names=("csr",), subresources=("approval", "status"),
    strategy=CertificateSigningRequestStrategy())
