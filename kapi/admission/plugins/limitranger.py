"""LimitRanger (kube's plugin/pkg/admission/limitranger).

For a pod's create, the namespace's LimitRanges' ``Container`` defaults fill in each container's and
init container's missing limits (``default``) and requests (``defaultRequest``), noted in the
``kubernetes.io/limit-ranger`` annotation ("LimitRanger plugin set: cpu, memory request for container
app; ..."). Then every create of a pod and every create or update of a PersistentVolumeClaim is held
to the ``min``, ``max`` and ``maxLimitRequestRatio`` of ``Container`` (each container and init
container), ``Pod`` (the pod's requests and limits: containers summed, init containers at their
peak, sidecars counted) and ``PersistentVolumeClaim`` (its storage request) items; a breach is
403 with kube's message (``maximum cpu usage per Container is 1, but limit is 2``; several:
``[..., ...]``). Pod updates are not checked: containers' resources do not change there.

LimitRanges come from the shared informer; when it holds none for a namespace, a live list of
the namespace is kept for 30 seconds (kube's live-lookup cache), so that a namespace without any
costs no storage read per pod.
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from fractions import Fraction
from typing import Any, Final

from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.encoding import listitems
from kapi.object.defaults import pod_qos_class
from kapi.object.listopts import ListOptions
from kapi.object.validation import parse_quantity
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]

LIMIT_RANGER_ANNOTATION: Final = "kubernetes.io/limit-ranger"
CONTAINER: Final = "Container"
POD: Final = "Pod"
PVC: Final = "PersistentVolumeClaim"
LIVE_TTL_S: Final = 30.0
LIVE_CACHE_SIZE: Final = 10_000
_MAX_MILLI_VALUE: Final = (2**63 - 1) // 1000  # resource.MaxMilliValue


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _dicts(value: object) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _q(value: object) -> Fraction:
    parsed = parse_quantity(value)
    return parsed if parsed is not None else Fraction(0)


def _value(q: Fraction) -> int:
    return math.ceil(q)  # Quantity.Value(): rounded up


def _milli(q: Fraction) -> int:
    return math.ceil(q * 1000)  # Quantity.MilliValue()


BINARY_SI: Final = "BinarySI"
DECIMAL_SI: Final = "DecimalSI"
DECIMAL_EXPONENT: Final = "DecimalExponent"
_DECIMAL_SUFFIX_OF: Final = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX_OF: Final = {10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}
_SUFFIX_RE: Final = re.compile(r"[+-]?[0-9.]+(.*)")


def quantity_format(value: object) -> str:
    """The format a quantity was written in (resource.Quantity's ``Format``), which it prints in."""
    m = _SUFFIX_RE.fullmatch(value.strip()) if isinstance(value, str) else None
    suffix = m.group(1) if m else ""
    if suffix.endswith("i"):
        return BINARY_SI
    if suffix[:1] in ("e", "E"):
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def canonical(amount: Fraction, fmt: str) -> str:
    """Quantity.String(): the canonical text of ``amount`` in ``fmt`` (kube's CanonicalizeBytes)."""
    if amount == 0:
        return "0"
    if fmt == BINARY_SI and (-1024 < amount < 1024 or amount.denominator != 1):
        fmt = DECIMAL_SI  # small or fractional: shown in decimal, not rounded
    if fmt == BINARY_SI:
        n, exp = int(amount), 0
        while exp < 60 and n % 1024 == 0:
            n //= 1024
            exp += 10
        return f"{n}{_BINARY_SUFFIX_OF.get(exp, '')}"
    amount = Fraction(math.ceil(amount * 10**9), 10**9)  # nano precision, rounded up
    for exp in range(18, -12, -3):
        mantissa = amount / Fraction(10) ** exp
        if mantissa.denominator == 1:
            suffix = _DECIMAL_SUFFIX_OF[exp] if fmt == DECIMAL_SI else (f"e{exp}" if exp else "")
            return f"{mantissa.numerator}{suffix}"
    return str(float(amount))  # not reached: at nano precision some mantissa is whole


class Quantity:
    """A quantity: its exact value and the format it prints in (its ``String()`` is canonical)."""

    __slots__ = ("amount", "format")

    def __init__(self, amount: Fraction, fmt: str = DECIMAL_SI) -> None:
        self.amount = amount
        self.format = fmt

    @classmethod
    def of(cls, value: object) -> Quantity:
        return cls(_q(value), quantity_format(value))

    def __str__(self) -> str:
        return canonical(self.amount, self.format)


ResourceList = dict[str, Quantity]


def _resource_list(value: object) -> ResourceList:
    return {str(k): Quantity.of(v) for k, v in _d(value).items()}


def _enforced_values(req: Quantity | None, lim: Quantity | None, enforced: Quantity) -> tuple[int, int, int]:
    """kube's ``requestLimitEnforcedValues``: milli-units when none overflows, else units."""
    zero = Fraction(0)
    r, li, e = (req.amount if req else zero), (lim.amount if lim else zero), enforced.amount
    if _value(r) <= _MAX_MILLI_VALUE and _value(li) <= _MAX_MILLI_VALUE and _value(e) <= _MAX_MILLI_VALUE:
        return _milli(r), _milli(li), _milli(e)
    return _value(r), _value(li), _value(e)


def min_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList,
                   limit: ResourceList) -> str:
    req, lim = request.get(name), limit.get(name)
    observed_req, observed_lim, value = _enforced_values(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if observed_req < value:
        return f"minimum {name} usage per {limit_type} is {enforced}, but request is {req}"
    if lim is not None and observed_lim < value:
        return f"minimum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    return ""


def max_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList,
                   limit: ResourceList) -> str:
    req, lim = request.get(name), limit.get(name)
    observed_req, observed_lim, value = _enforced_values(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"
    if observed_lim > value:
        return f"maximum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    if req is not None and observed_req > value:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return ""


def max_request_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList) -> str:
    req = request.get(name)
    observed_req, _, value = _enforced_values(req, None, enforced)
    if req is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if observed_req > value:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return ""


def ratio_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList,
                     limit: ResourceList) -> str:
    req, lim = request.get(name), limit.get(name)
    observed_req, observed_lim, _ = _enforced_values(req, lim, enforced)
    if req is None or observed_req == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, but no request is specified "
                "or request is 0")
    if lim is None or observed_lim == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, but no limit is specified "
                "or limit is 0")
    observed = observed_lim / observed_req
    display = observed
    maximum = float(_value(enforced.amount))
    if _value(enforced.amount) <= _MAX_MILLI_VALUE:
        observed *= 1000
        maximum = float(_milli(enforced.amount))
    if observed > maximum:
        return f"{name} max limit to request ratio per {limit_type} is {enforced}, but provided ratio is {display:f}"
    return ""


def aggregate(reasons: list[str]) -> str:
    """utilerrors.NewAggregate's message: one as it is; several (deduplicated) in brackets."""
    seen: list[str] = []
    for r in reasons:
        if r and r not in seen:
            seen.append(r)
    if len(seen) <= 1:
        return seen[0] if seen else ""
    return "[" + ", ".join(seen) + "]"


# ------------------------------------------------------------------ defaults


def default_requirements(limit_range: Obj) -> tuple[Obj, Obj]:
    """(requests, limits): the ``defaultRequest`` and ``default`` of the range's Container items."""
    requests: Obj = {}
    limits: Obj = {}
    for item in _dicts(_d(limit_range.get("spec")).get("limits")):
        if item.get("type") == CONTAINER:
            requests.update(_d(item.get("defaultRequest")))
            limits.update(_d(item.get("default")))
    return requests, limits


def _merge_container(ctr: Obj, requests: Obj, limits: Obj, what: str, notes: list[str]) -> None:
    resources = ctr.get("resources")
    if not isinstance(resources, dict):
        resources = ctr["resources"] = {}
    own_limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
    own_requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
    set_limits = [k for k in limits if k not in own_limits]
    set_requests = [k for k in requests if k not in own_requests]
    for k in set_limits:
        own_limits[k] = limits[k]
    for k in set_requests:
        own_requests[k] = requests[k]
    if own_limits:
        resources["limits"] = own_limits
    if own_requests:
        resources["requests"] = own_requests
    name = ctr.get("name", "")
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {what} {name}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {what} {name}")


def merge_pod_resource_requirements(pod: Obj, requests: Obj, limits: Obj) -> bool:
    """kube's ``mergePodResourceRequirements``: the defaults into each container and init container.
    True if it set any."""
    if not requests and not limits:
        return False
    spec = _d(pod.get("spec"))
    notes: list[str] = []
    for ctr in _dicts(spec.get("containers")):
        _merge_container(ctr, requests, limits, "container", notes)
    for ctr in _dicts(spec.get("initContainers")):
        _merge_container(ctr, requests, limits, "init container", notes)
    if notes:
        md = pod.setdefault("metadata", {})
        annotations = md.get("annotations") if isinstance(md.get("annotations"), dict) else {}
        annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
        md["annotations"] = annotations
    return bool(notes)


# ------------------------------------------------------------------ pod totals


def _add(total: ResourceList, items: ResourceList) -> None:
    """addResourceList: a sum keeps the format of the quantity it started from."""
    for k, v in items.items():
        if k in total:
            total[k] = Quantity(total[k].amount + v.amount, total[k].format)
        else:
            total[k] = Quantity(v.amount, v.format)


def _max(total: ResourceList, items: ResourceList) -> None:
    for k, v in items.items():
        if k not in total or v.amount > total[k].amount:
            total[k] = Quantity(v.amount, v.format)


def pod_totals(pod: Obj, key: str) -> ResourceList:
    """kube's ``podRequests`` / ``podLimits`` (``key``: requests or limits): the containers summed,
    restartable init containers (sidecars) added to them, and the largest of the init containers
    (each with the sidecars started before it) where that is more."""
    spec = _d(pod.get("spec"))
    total: ResourceList = {}
    for ctr in _dicts(spec.get("containers")):
        _add(total, _resource_list(_d(ctr.get("resources")).get(key)))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for ctr in _dicts(spec.get("initContainers")):
        own = _resource_list(_d(ctr.get("resources")).get(key))
        if ctr.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            step: ResourceList = {}
            _add(step, own)
            _add(step, sidecars)
            _max(init_peak, step)
    _max(total, init_peak)
    return total


# ------------------------------------------------------------------ checks


def _item_reasons(item: Obj, limit_type: str, requests: ResourceList, limits: ResourceList) -> list[str]:
    out = [min_constraint(limit_type, k, Quantity.of(v), requests, limits) for k, v in _d(item.get("min")).items()]
    out += [max_constraint(limit_type, k, Quantity.of(v), requests, limits) for k, v in _d(item.get("max")).items()]
    out += [ratio_constraint(limit_type, k, Quantity.of(v), requests, limits)
            for k, v in _d(item.get("maxLimitRequestRatio")).items()]
    return out


def pod_validate(limit_range: Obj, pod: Obj) -> str:
    """kube's ``PodValidateLimitFunc``: why the pod breaks the range ("" if it does not)."""
    spec = _d(pod.get("spec"))
    reasons: list[str] = []
    for item in _dicts(_d(limit_range.get("spec")).get("limits")):
        limit_type = item.get("type")
        if limit_type == CONTAINER:
            for key in ("containers", "initContainers"):
                for ctr in _dicts(spec.get(key)):
                    resources = _d(ctr.get("resources"))
                    reasons += _item_reasons(item, CONTAINER, _resource_list(resources.get("requests")),
                                             _resource_list(resources.get("limits")))
        elif limit_type == POD:
            reasons += _item_reasons(item, POD, pod_totals(pod, "requests"), pod_totals(pod, "limits"))
    return aggregate(reasons)


def pvc_validate(limit_range: Obj, pvc: Obj) -> str:
    """kube's ``PersistentVolumeClaimValidateLimitFunc``: min and max of the claim's requests."""
    requests = _resource_list(_d(_d(pvc.get("spec")).get("resources")).get("requests"))
    reasons: list[str] = []
    for item in _dicts(_d(limit_range.get("spec")).get("limits")):
        if item.get("type") == PVC:
            reasons += [min_constraint(PVC, k, Quantity.of(v), requests, {}) for k, v in _d(item.get("min")).items()]
            reasons += [max_request_constraint(PVC, k, Quantity.of(v), requests)
                        for k, v in _d(item.get("max")).items()]
    return aggregate(reasons)


class LimitRanger(Plugin):
    name = "LimitRanger"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"), ("", "persistentvolumeclaims")))

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        self._live: OrderedDict[str, tuple[float, list[Obj]]] = OrderedDict()
        deps.objects.watch("", "limitranges")

    @staticmethod
    def _supports(a: Attributes) -> bool:
        if a.subresource or not isinstance(a.obj, dict):
            return False
        if isinstance(a.old, dict) and _d(a.old.get("metadata")).get("deletionTimestamp"):
            return False  # an object on its way out is not held to the ranges
        if a.plural == "pods":
            # containers' resources cannot change on update: nothing to default or check there
            return a.operation == CREATE
        return True

    async def limit_ranges(self, namespace: str) -> list[Obj]:
        """The namespace's LimitRanges: the informer's, else a live list kept ``LIVE_TTL_S``."""
        inf = self.deps.objects.watch("", "limitranges")
        if inf is not None and inf.has_synced:
            found = inf.list(namespace)
            if found:
                return found
        now = time.monotonic()
        cached = self._live.get(namespace)
        if cached is not None and cached[0] > now:
            return cached[1]
        res = self.deps.objects.resource("", "limitranges")
        items: list[Obj] = []
        if res is not None:
            page = await self.deps.registry.list(res, namespace, ListOptions())
            items = listitems.objects(page.items)
        self._live[namespace] = (now + LIVE_TTL_S, items)
        self._live.move_to_end(namespace)
        while len(self._live) > LIVE_CACHE_SIZE:
            self._live.popitem(last=False)
        return items

    async def admit(self, a: Attributes) -> None:
        if not self._supports(a) or a.plural != "pods":
            return
        assert a.obj is not None
        changed = False
        for lr in await self.limit_ranges(a.namespace):
            requests, limits = default_requirements(lr)
            changed = merge_pod_resource_requirements(a.obj, requests, limits) or changed
        status = a.obj.get("status")
        if changed and isinstance(status, dict) and "qosClass" in status:
            # the pod's QoS class is its resources' (kube computes it when the pod is stored, after admission)
            status["qosClass"] = pod_qos_class(a.obj)

    async def validate(self, a: Attributes) -> None:
        if not self._supports(a):
            return
        assert a.obj is not None
        check = pod_validate if a.plural == "pods" else pvc_validate
        for lr in await self.limit_ranges(a.namespace):
            reason = check(lr, a.obj)
            if reason:
                raise forbidden(a, reason)


__all__ = ["LIMIT_RANGER_ANNOTATION", "LimitRanger", "Quantity", "canonical", "pod_totals", "pod_validate", "pvc_validate"]
