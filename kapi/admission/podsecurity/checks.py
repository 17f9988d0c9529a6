"""The Pod Security Standards' checks (kube's k8s.io/pod-security-admission/policy, as of 1.33).

Each check looks at a pod's metadata and spec (dicts, as the API serves a v1 Pod) and answers
allowed, or a reason ("allowPrivilegeEscalation != false") and a detail naming what is wrong
(``container "x" must set securityContext.allowPrivilegeEscalation=false``). A check has one
implementation per policy version it changed in; ``Evaluator`` lays them out for every version
from v1.0 to the newest any check names (``latest`` and later versions evaluate as that one), the
baseline checks for baseline, and for restricted the restricted ones plus the baseline ones they
do not override, in kube's order (baseline IDs sorted, then restricted IDs sorted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Iterator, Mapping

from kapi.admission.podsecurity.api import BASELINE, PRIVILEGED, RESTRICTED, LevelVersion, Version, version
from kapi.object.validation.fields import go_quote

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CheckResult:
    allowed: bool
    reason: str = ""
    detail: str = ""


ALLOWED: Final = CheckResult(True)
CheckFn = Callable[[Obj, Obj], CheckResult]


@dataclass(frozen=True, slots=True)
class VersionedCheck:
    minimum: Version
    check: CheckFn
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    level: str
    versions: tuple[VersionedCheck, ...]


UNKNOWN_FORBIDDEN_REASON: Final = "unknown forbidden reason"


@dataclass(slots=True)
class AggregateResult:
    """Every failed check's reason and detail (kube's ``AggregateCheckResult``)."""

    reasons: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def forbidden_reason(self) -> str:
        return ", ".join(self.reasons)

    def forbidden_detail(self) -> str:
        return ", ".join(f"{r} ({d})" if d else r for r, d in zip(self.reasons, self.details))


def aggregate(results: list[CheckResult]) -> AggregateResult:
    out = AggregateResult()
    for r in results:
        if not r.allowed:
            out.reasons.append(r.reason or UNKNOWN_FORBIDDEN_REASON)
            out.details.append(r.detail)
    return out


# ------------------------------------------------------------------ helpers


def _d(value: Any) -> Obj | None:
    return value if isinstance(value, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def containers(spec: Obj) -> Iterator[Obj]:
    """initContainers, containers, then ephemeralContainers (kube's ``visitContainers``)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            if isinstance(c, dict):
                yield c


def _name(c: Obj) -> str:
    n = c.get("name")
    return n if isinstance(n, str) else ""


def _sc(c: Obj) -> Obj | None:
    return _d(c.get("securityContext"))


def _pod_sc(spec: Obj) -> Obj | None:
    return _d(spec.get("securityContext"))


def join_quote(items: list[str]) -> str:
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _containers_phrase(names: list[str]) -> str:
    return f"{pluralize('container', 'containers', len(names))} {join_quote(names)}"


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _windows(spec: Obj) -> bool:
    os_ = _d(spec.get("os"))
    return os_ is not None and os_.get("name") == "windows"


def _annotations(meta: Obj) -> Mapping[str, Any]:
    return _d(meta.get("annotations")) or {}


# ------------------------------------------------------------------ baseline


def _privileged_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad = [_name(c) for c in containers(spec) if (_sc(c) or {}).get("privileged") is True]
    if bad:
        return CheckResult(False, "privileged",
                           f"{_containers_phrase(bad)} must not set securityContext.privileged=true")
    return ALLOWED


def _host_namespaces_1_0(meta: Obj, spec: Obj) -> CheckResult:
    found = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    if found:
        return CheckResult(False, "host namespaces", ", ".join(found))
    return ALLOWED


def _host_path_volumes_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad = [_str(v.get("name")) for v in _list(spec.get("volumes"))
           if isinstance(v, dict) and v.get("hostPath") is not None]
    if bad:
        return CheckResult(False, "hostPath volumes", f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)}")
    return ALLOWED


def _host_ports_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    ports: set[str] = set()
    for c in containers(spec):
        valid = True
        for p in _list(c.get("ports")):
            hp = p.get("hostPort") if isinstance(p, dict) else None
            if isinstance(hp, int) and not isinstance(hp, bool) and hp != 0:
                valid = False
                ports.add(str(hp))
        if not valid:
            bad.append(_name(c))
    if bad:
        return CheckResult(False, "hostPort", (
            f"{_containers_phrase(bad)} {pluralize('uses', 'use', len(bad))} "
            f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}"))
    return ALLOWED


_CAPABILITIES_ALLOWED_1_0: Final = frozenset((
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
    "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"))
CAPABILITIES_BASELINE: Final = "capabilities_baseline"


def _capabilities_baseline_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    caps: set[str] = set()
    for c in containers(spec):
        cap = _d((_sc(c) or {}).get("capabilities"))
        if cap is None:
            continue
        valid = True
        for add in _list(cap.get("add")):
            if _str(add) not in _CAPABILITIES_ALLOWED_1_0:
                valid = False
                caps.add(_str(add))
        if not valid:
            bad.append(_name(c))
    if bad:
        return CheckResult(False, "non-default capabilities", (
            f"{_containers_phrase(bad)} must not include {join_quote(sorted(caps))} in "
            "securityContext.capabilities.add"))
    return ALLOWED


_APPARMOR_ANNOTATION_PREFIX: Final = "container.apparmor.security.beta.kubernetes.io/"


def _apparmor_type_allowed(profile: Obj) -> bool:
    return profile.get("type") in ("RuntimeDefault", "Localhost")


def _apparmor_profile_1_0(meta: Obj, spec: Obj) -> CheckResult:
    setters: list[str] = []
    values: set[str] = set()
    psc = _pod_sc(spec)
    profile = _d((psc or {}).get("appArmorProfile"))
    if profile is not None and not _apparmor_type_allowed(profile):
        setters.append("pod")
        values.add(_str(profile.get("type")))
    bad: list[str] = []
    for c in containers(spec):
        profile = _d((_sc(c) or {}).get("appArmorProfile"))
        if profile is not None and not _apparmor_type_allowed(profile):
            bad.append(_name(c))
            values.add(_str(profile.get("type")))
    if bad:
        setters.append(_containers_phrase(bad))
    forbidden = []
    for k, v in _annotations(meta).items():
        v = _str(v)
        if k.startswith(_APPARMOR_ANNOTATION_PREFIX) and not (
                not v or v == "runtime/default" or v.startswith("localhost/")):
            forbidden.append(f"{k}={go_quote(v)}")
    value_list = sorted(values)
    if forbidden:
        value_list += sorted(forbidden)
        setters.append(pluralize("annotation", "annotations", len(forbidden)))
    if setters:
        return CheckResult(
            False, pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(value_list)),
            f"{' and '.join(setters)} must not set AppArmor profile type to {join_quote(value_list)}")
    return ALLOWED


_SELINUX_TYPES_1_0: Final = frozenset(("", "container_t", "container_init_t", "container_kvm_t"))
_SELINUX_TYPES_1_31: Final = _SELINUX_TYPES_1_0 | {"container_engine_t"}


def _selinux_options(spec: Obj, allowed: frozenset[str]) -> CheckResult:
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: Obj) -> bool:
        ok = True
        t = _str(opts.get("type"))
        if t not in allowed:
            ok = False
            bad_types.add(t)
        for k in ("user", "role"):
            if _str(opts.get(k)):
                ok = False
                flags[k] = True
        return ok

    setters: list[str] = []
    opts = _d((_pod_sc(spec) or {}).get("seLinuxOptions"))
    if opts is not None and not valid(opts):
        setters.append("pod")
    bad = []
    for c in containers(spec):
        opts = _d((_sc(c) or {}).get("seLinuxOptions"))
        if opts is not None and not valid(opts):
            bad.append(_name(c))
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        data = []
        if bad_types:
            data.append(f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}")
        if flags["user"]:
            data.append("user may not be set")
        if flags["role"]:
            data.append("role may not be set")
        return CheckResult(False, "seLinuxOptions", (
            f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}"))
    return ALLOWED


def _selinux_options_1_0(meta: Obj, spec: Obj) -> CheckResult:
    return _selinux_options(spec, _SELINUX_TYPES_1_0)


def _selinux_options_1_31(meta: Obj, spec: Obj) -> CheckResult:
    return _selinux_options(spec, _SELINUX_TYPES_1_31)


def _proc_mount_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for c in containers(spec):
        pm = (_sc(c) or {}).get("procMount")
        if pm is None:
            continue
        if pm != "Default":
            bad.append(_name(c))
            types.add(_str(pm))
    if bad:
        return CheckResult(False, "procMount", (
            f"{_containers_phrase(bad)} must not set securityContext.procMount to {join_quote(sorted(types))}"))
    return ALLOWED


SECCOMP_POD_ANNOTATION: Final = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX: Final = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_BASELINE: Final = "seccompProfile_baseline"


def _valid_seccomp(profile: Obj) -> bool:
    return profile.get("type") in ("Localhost", "RuntimeDefault")


def _valid_seccomp_annotation(value: str) -> bool:
    return value in ("runtime/default", "docker/default") or value.startswith("localhost/")


def _seccomp_baseline_1_0(meta: Obj, spec: Obj) -> CheckResult:
    annotations = _annotations(meta)
    forbidden: set[str] = set()
    if SECCOMP_POD_ANNOTATION in annotations:
        v = _str(annotations[SECCOMP_POD_ANNOTATION])
        if not _valid_seccomp_annotation(v):
            forbidden.add(f"{SECCOMP_POD_ANNOTATION}={go_quote(v)}")
    for c in containers(spec):
        key = SECCOMP_CONTAINER_ANNOTATION_PREFIX + _name(c)
        if key in annotations:
            v = _str(annotations[key])
            if not _valid_seccomp_annotation(v):
                forbidden.add(f"{key}={go_quote(v)}")
    if forbidden:
        return CheckResult(False, "seccompProfile", (
            f"forbidden {pluralize('annotation', 'annotations', len(forbidden))} {', '.join(sorted(forbidden))}"))
    return ALLOWED


def _seccomp_baseline_1_19(meta: Obj, spec: Obj) -> CheckResult:
    setters: list[str] = []
    values: set[str] = set()
    profile = _d((_pod_sc(spec) or {}).get("seccompProfile"))
    if profile is not None and not _valid_seccomp(profile):
        setters.append("pod")
        values.add(_str(profile.get("type")))
    bad = []
    for c in containers(spec):
        profile = _d((_sc(c) or {}).get("seccompProfile"))
        if profile is not None and not _valid_seccomp(profile):
            bad.append(_name(c))
            values.add(_str(profile.get("type")))
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return CheckResult(False, "seccompProfile", (
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
            f"{join_quote(sorted(values))}"))
    return ALLOWED


_SYSCTLS_1_0: Final = frozenset(("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                                 "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"))
_SYSCTLS_1_27: Final = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
_SYSCTLS_1_29: Final = _SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                        "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
_SYSCTLS_1_32: Final = _SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def _sysctls_with(allowed: frozenset[str]) -> CheckFn:
    def check(meta: Obj, spec: Obj) -> CheckResult:
        bad = []
        for s in _list((_pod_sc(spec) or {}).get("sysctls")):
            name = _str(s.get("name")) if isinstance(s, dict) else ""
            if name not in allowed:
                bad.append(name)
        if bad:
            return CheckResult(False, "forbidden sysctls", ", ".join(bad))
        return ALLOWED
    return check


def _windows_host_process_1_0(meta: Obj, spec: Obj) -> CheckResult:
    def host_process(sc: Obj | None) -> bool:
        return _d((sc or {}).get("windowsOptions")) is not None and sc["windowsOptions"].get("hostProcess") is True

    bad = [_name(c) for c in containers(spec) if host_process(_sc(c))]
    setters = ["pod"] if host_process(_pod_sc(spec)) else []
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return CheckResult(False, "hostProcess", (
            f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true"))
    return ALLOWED


# ------------------------------------------------------------------ restricted


def _allow_privilege_escalation_1_8(meta: Obj, spec: Obj) -> CheckResult:
    bad = [_name(c) for c in containers(spec) if (_sc(c) or {}).get("allowPrivilegeEscalation") is not False]
    if bad:
        return CheckResult(False, "allowPrivilegeEscalation != false", (
            f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false"))
    return ALLOWED


def _except_windows(check: CheckFn) -> CheckFn:
    """From v1.25 a pod whose spec.os.name is windows passes (its validation forbids the field)."""
    def windows_exempt(meta: Obj, spec: Obj) -> CheckResult:
        return ALLOWED if _windows(spec) else check(meta, spec)
    return windows_exempt


def _capabilities_restricted_1_22(meta: Obj, spec: Obj) -> CheckResult:
    missing_drop: list[str] = []
    adding: list[str] = []
    caps: set[str] = set()
    for c in containers(spec):
        cap = _d((_sc(c) or {}).get("capabilities"))
        if cap is None:
            missing_drop.append(_name(c))
            continue
        if "ALL" not in _list(cap.get("drop")):
            missing_drop.append(_name(c))
        added_forbidden = False
        for add in _list(cap.get("add")):
            if add != "NET_BIND_SERVICE":
                added_forbidden = True
                caps.add(_str(add))
        if added_forbidden:
            adding.append(_name(c))
    details = []
    if missing_drop:
        details.append(f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_containers_phrase(adding)} must not include {join_quote(sorted(caps))} in "
                       "securityContext.capabilities.add")
    if details:
        return CheckResult(False, "unrestricted capabilities", "; ".join(details))
    return ALLOWED


_ALLOWED_VOLUME_SOURCES: Final = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                                  "persistentVolumeClaim", "projected", "secret")
_RESTRICTED_VOLUME_SOURCES: Final = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")
HOST_PATH_VOLUMES: Final = "hostPathVolumes"


def _restricted_volumes_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for v in _list(spec.get("volumes")):
        if not isinstance(v, dict):
            continue
        if any(v.get(k) is not None for k in _ALLOWED_VOLUME_SOURCES):
            continue
        bad.append(_str(v.get("name")))
        types.add(next((k for k in _RESTRICTED_VOLUME_SOURCES if v.get(k) is not None), "unknown"))
    if bad:
        return CheckResult(False, "restricted volume types", (
            f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)} {pluralize('uses', 'use', len(bad))} "
            f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
            f"{join_quote(sorted(types))}"))
    return ALLOWED


def _run_as_non_root_1_0(meta: Obj, spec: Obj) -> CheckResult:
    setters: list[str] = []
    pod_non_root = False
    psc = _pod_sc(spec)
    if psc is not None and psc.get("runAsNonRoot") is not None:
        if psc.get("runAsNonRoot") is False:
            setters.append("pod")
        else:
            pod_non_root = True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in containers(spec):
        sc = _sc(c)
        if sc is not None and sc.get("runAsNonRoot") is not None:
            if sc.get("runAsNonRoot") is False:
                explicit.append(_name(c))
        elif not pod_non_root:
            implicit.append(_name(c))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return CheckResult(False, "runAsNonRoot != true",
                           f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false")
    if implicit:
        return CheckResult(False, "runAsNonRoot != true",
                           f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true")
    return ALLOWED


def _is_zero(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _run_as_user_1_23(meta: Obj, spec: Obj) -> CheckResult:
    setters = ["pod"] if _is_zero((_pod_sc(spec) or {}).get("runAsUser")) else []
    bad = [_name(c) for c in containers(spec) if _is_zero((_sc(c) or {}).get("runAsUser"))]
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return CheckResult(False, "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")
    return ALLOWED


def _seccomp_restricted_1_19(meta: Obj, spec: Obj) -> CheckResult:
    setters: list[str] = []
    values: set[str] = set()
    pod_set = False
    profile = _d((_pod_sc(spec) or {}).get("seccompProfile"))
    if profile is not None:
        if not _valid_seccomp(profile):
            setters.append("pod")
            values.add(_str(profile.get("type")))
        else:
            pod_set = True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in containers(spec):
        profile = _d((_sc(c) or {}).get("seccompProfile"))
        if profile is not None:
            if not _valid_seccomp(profile):
                explicit.append(_name(c))
                values.add(_str(profile.get("type")))
        elif not pod_set:
            implicit.append(_name(c))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return CheckResult(False, "seccompProfile", (
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
            f"{join_quote(sorted(values))}"))
    if implicit:
        return CheckResult(False, "seccompProfile", (
            f'pod or {_containers_phrase(implicit)} must set securityContext.seccompProfile.type to '
            '"RuntimeDefault" or "Localhost"'))
    return ALLOWED


# ------------------------------------------------------------------ the registry

V = version
DEFAULT_CHECKS: Final[tuple[Check, ...]] = (
    Check("allowPrivilegeEscalation", RESTRICTED, (
        VersionedCheck(V(1, 8), _allow_privilege_escalation_1_8),
        VersionedCheck(V(1, 25), _except_windows(_allow_privilege_escalation_1_8)))),
    Check("appArmorProfile", BASELINE, (VersionedCheck(V(1, 0), _apparmor_profile_1_0),)),
    Check(CAPABILITIES_BASELINE, BASELINE, (VersionedCheck(V(1, 0), _capabilities_baseline_1_0),)),
    Check("capabilities_restricted", RESTRICTED, (
        VersionedCheck(V(1, 22), _capabilities_restricted_1_22, (CAPABILITIES_BASELINE,)),
        VersionedCheck(V(1, 25), _except_windows(_capabilities_restricted_1_22), (CAPABILITIES_BASELINE,)))),
    Check("hostNamespaces", BASELINE, (VersionedCheck(V(1, 0), _host_namespaces_1_0),)),
    Check(HOST_PATH_VOLUMES, BASELINE, (VersionedCheck(V(1, 0), _host_path_volumes_1_0),)),
    Check("hostPorts", BASELINE, (VersionedCheck(V(1, 0), _host_ports_1_0),)),
    Check("privileged", BASELINE, (VersionedCheck(V(1, 0), _privileged_1_0),)),
    Check("procMount", BASELINE, (VersionedCheck(V(1, 0), _proc_mount_1_0),)),
    Check("restrictedVolumes", RESTRICTED, (
        VersionedCheck(V(1, 0), _restricted_volumes_1_0, (HOST_PATH_VOLUMES,)),)),
    Check("runAsNonRoot", RESTRICTED, (VersionedCheck(V(1, 0), _run_as_non_root_1_0),)),
    Check("runAsUser", RESTRICTED, (VersionedCheck(V(1, 23), _run_as_user_1_23),)),
    Check("seLinuxOptions", BASELINE, (
        VersionedCheck(V(1, 0), _selinux_options_1_0),
        VersionedCheck(V(1, 31), _selinux_options_1_31))),
    Check(SECCOMP_BASELINE, BASELINE, (
        VersionedCheck(V(1, 0), _seccomp_baseline_1_0),
        VersionedCheck(V(1, 19), _seccomp_baseline_1_19))),
    Check("seccompProfile_restricted", RESTRICTED, (
        VersionedCheck(V(1, 19), _seccomp_restricted_1_19, (SECCOMP_BASELINE,)),
        VersionedCheck(V(1, 25), _except_windows(_seccomp_restricted_1_19), (SECCOMP_BASELINE,)))),
    Check("sysctls", BASELINE, (
        VersionedCheck(V(1, 0), _sysctls_with(_SYSCTLS_1_0)),
        VersionedCheck(V(1, 27), _sysctls_with(_SYSCTLS_1_27)),
        VersionedCheck(V(1, 29), _sysctls_with(_SYSCTLS_1_29)),
        VersionedCheck(V(1, 32), _sysctls_with(_SYSCTLS_1_32)))),
    Check("windowsHostProcess", BASELINE, (VersionedCheck(V(1, 0), _windows_host_process_1_0),)),
)


def _next_minor(v: Version) -> Version:
    return v if v.latest else version(v.major, v.minor + 1)


# The checks a pod in a user namespace (spec.hostUsers: false) passes when the
# UserNamespacesPodSecurityStandards feature gate is on (off by default in 1.33).
RELAXED_FOR_USER_NAMESPACES: Final = frozenset(("procMount", "runAsNonRoot", "runAsUser"))


def _relaxed(check: CheckFn) -> CheckFn:
    def user_namespace_exempt(meta: Obj, spec: Obj) -> CheckResult:
        return ALLOWED if spec.get("hostUsers") is False else check(meta, spec)
    return user_namespace_exempt


class Evaluator:
    """The checks of every level and version, laid out once (kube's ``checkRegistry``).
    ``relax_user_namespace_pods``: the UserNamespacesPodSecurityStandards feature gate."""

    def __init__(self, checks: tuple[Check, ...] = DEFAULT_CHECKS, *, relax_user_namespace_pods: bool = False) -> None:
        _validate(checks)
        if relax_user_namespace_pods:
            checks = tuple(Check(c.id, c.level, tuple(VersionedCheck(vc.minimum, _relaxed(vc.check), vc.overrides)
                                                      for vc in c.versions))
                           if c.id in RELAXED_FOR_USER_NAMESPACES else c for c in checks)
        self.max_version = max(c.versions[-1].minimum for c in checks)
        self.baseline: dict[Version, tuple[CheckFn, ...]] = {}
        self.restricted: dict[Version, tuple[CheckFn, ...]] = {}
        self.ids: dict[tuple[str, Version], tuple[str, ...]] = {}
        ordered = sorted(c.id for c in checks if c.level == BASELINE) + \
            sorted(c.id for c in checks if c.level == RESTRICTED)
        by_level: dict[str, dict[Version, dict[str, VersionedCheck]]] = {BASELINE: {}, RESTRICTED: {}}
        for c in checks:
            for i, vc in enumerate(c.versions):
                end = c.versions[i + 1].minimum if i + 1 < len(c.versions) else _next_minor(self.max_version)
                v = vc.minimum
                while v < end:
                    by_level[c.level].setdefault(v, {})[c.id] = vc
                    v = _next_minor(v)
        v = version(1, 0)
        while v < _next_minor(self.max_version):
            restricted = dict(by_level[RESTRICTED].get(v, {}))
            overridden = {o for vc in restricted.values() for o in vc.overrides}
            baseline = by_level[BASELINE].get(v, {})
            for cid, vc in baseline.items():
                if cid not in overridden:
                    restricted[cid] = vc
            for level, table, found in ((BASELINE, self.baseline, baseline), (RESTRICTED, self.restricted, restricted)):
                ids = tuple(cid for cid in ordered if cid in found)
                table[v] = tuple(found[cid].check for cid in ids)
                self.ids[(level, v)] = ids
            v = _next_minor(v)

    def _effective(self, lv: LevelVersion) -> Version:
        return self.max_version if self.max_version < lv.version else lv.version

    def check_ids(self, lv: LevelVersion) -> tuple[str, ...]:
        """The IDs of the checks ``lv`` runs, in order."""
        if lv.level == PRIVILEGED:
            return ()
        return self.ids.get((lv.level, self._effective(lv)), ())

    def evaluate(self, lv: LevelVersion, meta: Obj | None, spec: Obj | None) -> list[CheckResult]:
        if lv.level == PRIVILEGED:
            return []
        table = self.baseline if lv.level == BASELINE else self.restricted
        meta, spec = meta or {}, spec or {}
        return [check(meta, spec) for check in table.get(self._effective(lv), ())]

    def aggregate(self, lv: LevelVersion, meta: Obj | None, spec: Obj | None) -> AggregateResult:
        return aggregate(self.evaluate(lv, meta, spec))


def _validate(checks: tuple[Check, ...]) -> None:
    """kube's ``validateChecks``: unique IDs, a known level, strictly increasing numbered versions,
    overrides only from restricted checks of baseline ones."""
    levels: dict[str, str] = {}
    for c in checks:
        if c.id in levels:
            raise ValueError(f"multiple checks registered for ID {c.id}")
        levels[c.id] = c.level
        if c.level not in (BASELINE, RESTRICTED):
            raise ValueError(f"check {c.id}: invalid level {c.level}")
        if not c.versions:
            raise ValueError(f"check {c.id}: empty")
        last = None
        for vc in c.versions:
            if vc.minimum.latest:
                raise ValueError(f"check {c.id}: version cannot be 'latest'")
            if last is not None and not last < vc.minimum:
                raise ValueError(f"check {c.id}: versions must be strictly increasing")
            last = vc.minimum
    for c in checks:
        for vc in c.versions:
            if vc.overrides and c.level != RESTRICTED:
                raise ValueError(f"check {c.id}: only restricted checks may set overrides")
            for o in vc.overrides:
                if levels.get(o, BASELINE) != BASELINE:
                    raise ValueError(f"check {c.id}: overrides {levels[o]} check {o}")
