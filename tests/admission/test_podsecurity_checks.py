"""The Pod Security Standards' checks one by one, with kube's reasons and details, and how the
evaluator lays them out per level and version (which checks run at v1.0, v1.8, v1.19, v1.22,
v1.25, latest; overrides; a version newer than any check evaluates as latest)."""

from __future__ import annotations

from typing import Any

import pytest

from kapi.admission.podsecurity.api import BASELINE, LATEST, PRIVILEGED, RESTRICTED, LevelVersion, version
from kapi.admission.podsecurity.checks import (DEFAULT_CHECKS, Check, CheckResult, Evaluator, VersionedCheck,
                                              aggregate)

Obj = dict[str, Any]
EV = Evaluator()


def run(check_id: str, spec: Obj, meta: Obj | None = None, at: tuple[int, int] | None = None) -> CheckResult:
    """One check (at the version ``at``, else its newest) against a pod."""
    check = next(c for c in DEFAULT_CHECKS if c.id == check_id)
    chosen = check.versions[-1]
    if at is not None:
        chosen = [vc for vc in check.versions if vc.minimum <= version(*at)][-1]
    return chosen.check(meta or {}, spec)


def ctr(name: str, **sc: Any) -> Obj:
    out: Obj = {"name": name, "image": "nginx"}
    if sc:
        out["securityContext"] = sc
    return out


def restricted_ctr(name: str, **extra: Any) -> Obj:
    sc = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
          "seccompProfile": {"type": "RuntimeDefault"}}
    sc.update(extra)
    return {"name": name, "image": "nginx", "securityContext": sc}


# ------------------------------------------------------------------ baseline checks


def test_privileged() -> None:
    assert run("privileged", {"containers": [ctr("a", privileged=False), ctr("b")]}).allowed
    r = run("privileged", {"containers": [ctr("a", privileged=True)], "initContainers": [ctr("i", privileged=True)]})
    assert (r.allowed, r.reason) == (False, "privileged")
    # init containers first, then containers (kube's visitContainers)
    assert r.detail == 'containers "i", "a" must not set securityContext.privileged=true'
    r = run("privileged", {"ephemeralContainers": [ctr("e", privileged=True)]})
    assert r.detail == 'container "e" must not set securityContext.privileged=true'


def test_host_namespaces() -> None:
    assert run("hostNamespaces", {"hostNetwork": False}).allowed
    r = run("hostNamespaces", {"hostIPC": True, "hostNetwork": True, "hostPID": True})
    assert (r.reason, r.detail) == ("host namespaces", "hostNetwork=true, hostPID=true, hostIPC=true")


def test_host_path_volumes() -> None:
    assert run("hostPathVolumes", {"volumes": [{"name": "e", "emptyDir": {}}]}).allowed
    r = run("hostPathVolumes", {"volumes": [{"name": "a", "hostPath": {"path": "/"}}]})
    assert (r.reason, r.detail) == ("hostPath volumes", 'volume "a"')
    r = run("hostPathVolumes", {"volumes": [{"name": "a", "hostPath": {"path": "/"}},
                                            {"name": "b", "hostPath": {"path": "/x"}}]})
    assert r.detail == 'volumes "a", "b"'


def test_host_ports() -> None:
    assert run("hostPorts", {"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 0}]}]}).allowed
    r = run("hostPorts", {"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}]}]})
    assert (r.reason, r.detail) == ("hostPort", 'container "a" uses hostPort 8080')
    r = run("hostPorts", {"containers": [{"name": "a", "ports": [{"hostPort": 9}, {"hostPort": 10}]},
                                         {"name": "b", "ports": [{"hostPort": 8080}]}]})
    # the ports sorted as strings, as kube's sets.String
    assert r.detail == 'containers "a", "b" use hostPorts 10, 8080, 9'


def test_capabilities_baseline() -> None:
    ok = {"containers": [ctr("a", capabilities={"add": ["NET_BIND_SERVICE", "CHOWN", "KILL"], "drop": ["ALL"]})]}
    assert run("capabilities_baseline", ok).allowed
    r = run("capabilities_baseline", {"containers": [ctr("a", capabilities={"add": ["SYS_ADMIN", "CHOWN"]}),
                                                     ctr("b", capabilities={"add": ["NET_RAW", "SYS_ADMIN"]}),
                                                     ctr("c", capabilities={})]})
    assert (r.reason, r.detail) == ("non-default capabilities", 'containers "a", "b" must not include "NET_RAW", '
                                    '"SYS_ADMIN" in securityContext.capabilities.add')


def test_apparmor() -> None:
    assert run("appArmorProfile", {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}).allowed
    assert run("appArmorProfile", {}, {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/a": "localhost/x",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": ""}}).allowed
    r = run("appArmorProfile", {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})
    assert (r.reason, r.detail) == ("forbidden AppArmor profile",
                                    'pod must not set AppArmor profile type to "Unconfined"')
    r = run("appArmorProfile", {
        "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
        "containers": [ctr("a", appArmorProfile={"type": "Unconfined"}),
                       ctr("b", appArmorProfile={"type": "Localhost", "localhostProfile": "p"})]},
        {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}})
    assert r.reason == "forbidden AppArmor profiles"
    # joinQuote wraps without escaping: the annotation's own quotes stay as they are
    assert r.detail == ('pod and container "a" and annotation must not set AppArmor profile type to "Unconfined", '
                        '"container.apparmor.security.beta.kubernetes.io/a="unconfined""')


def test_selinux_options() -> None:
    ok = {"securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0:c1"}},
          "containers": [ctr("a", seLinuxOptions={"type": "container_init_t"})]}
    assert run("seLinuxOptions", ok).allowed
    r = run("seLinuxOptions", {"securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "root"}},
                               "containers": [ctr("a", seLinuxOptions={"role": "r", "type": "bad_t"}),
                                              ctr("b", seLinuxOptions={"type": "container_t"})]})
    assert (r.reason, r.detail) == ("seLinuxOptions", 'pod and container "a" set forbidden '
                                    'securityContext.seLinuxOptions: types "bad_t", "spc_t"; user may not be set; '
                                    'role may not be set')
    engine = {"containers": [ctr("a", seLinuxOptions={"type": "container_engine_t"})]}
    assert run("seLinuxOptions", engine).allowed  # v1.31+
    r = run("seLinuxOptions", engine, at=(1, 30))
    assert r.detail == 'container "a" set forbidden securityContext.seLinuxOptions: type "container_engine_t"'


def test_proc_mount() -> None:
    assert run("procMount", {"containers": [ctr("a", procMount="Default"), ctr("b")]}).allowed
    r = run("procMount", {"containers": [ctr("a", procMount="Unmasked")], "hostUsers": False})
    assert (r.reason, r.detail) == ("procMount", 'container "a" must not set securityContext.procMount to "Unmasked"')


def test_seccomp_baseline() -> None:
    assert run("seccompProfile_baseline", {"securityContext": {"seccompProfile": {"type": "Localhost"}}}).allowed
    assert run("seccompProfile_baseline", {"containers": [ctr("a")]}).allowed  # unset is fine in baseline
    r = run("seccompProfile_baseline", {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
                                        "containers": [ctr("a", seccompProfile={"type": "Unconfined"})]})
    assert (r.reason, r.detail) == ("seccompProfile", 'pod and container "a" must not set '
                                    'securityContext.seccompProfile.type to "Unconfined"')


def test_seccomp_baseline_annotations_before_1_19() -> None:
    meta = {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                            "container.seccomp.security.alpha.kubernetes.io/a": "docker/default",
                            "container.seccomp.security.alpha.kubernetes.io/b": "bogus"}}
    spec = {"containers": [ctr("a"), ctr("b")]}
    r = run("seccompProfile_baseline", spec, meta, at=(1, 18))
    assert (r.reason, r.detail) == ("seccompProfile", 'forbidden annotations '
                                    'container.seccomp.security.alpha.kubernetes.io/b="bogus", '
                                    'seccomp.security.alpha.kubernetes.io/pod="unconfined"')
    assert run("seccompProfile_baseline", spec, meta).allowed  # v1.19+ reads the fields only


def test_sysctls_by_version() -> None:
    spec = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"},
                                            {"name": "kernel.msgmax", "value": "1"},
                                            {"name": "net.ipv4.ip_local_reserved_ports", "value": "1"}]}}
    r = run("sysctls", spec)
    assert (r.reason, r.detail) == ("forbidden sysctls", "kernel.msgmax")
    assert run("sysctls", spec, at=(1, 31)).detail == "net.ipv4.tcp_rmem, kernel.msgmax"
    assert run("sysctls", spec, at=(1, 26)).detail == ("net.ipv4.tcp_rmem, kernel.msgmax, "
                                                       "net.ipv4.ip_local_reserved_ports")
    keepalive = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "1"}]}}
    assert run("sysctls", keepalive, at=(1, 29)).allowed
    assert not run("sysctls", keepalive, at=(1, 28)).allowed


def test_windows_host_process() -> None:
    assert run("windowsHostProcess", {"securityContext": {"windowsOptions": {"hostProcess": False}}}).allowed
    r = run("windowsHostProcess", {"securityContext": {"windowsOptions": {"hostProcess": True}},
                                   "containers": [ctr("a", windowsOptions={"hostProcess": True}), ctr("b")]})
    assert (r.reason, r.detail) == ("hostProcess", 'pod and container "a" must not set '
                                    'securityContext.windowsOptions.hostProcess=true')


# ------------------------------------------------------------------ restricted checks


def test_allow_privilege_escalation() -> None:
    assert run("allowPrivilegeEscalation", {"containers": [ctr("a", allowPrivilegeEscalation=False)]}).allowed
    r = run("allowPrivilegeEscalation", {"containers": [ctr("a"), ctr("b", allowPrivilegeEscalation=True),
                                                        ctr("c", allowPrivilegeEscalation=False)]})
    assert (r.reason, r.detail) == ("allowPrivilegeEscalation != false", 'containers "a", "b" must set '
                                    'securityContext.allowPrivilegeEscalation=false')
    windows = {"os": {"name": "windows"}, "containers": [ctr("a")]}
    assert run("allowPrivilegeEscalation", windows).allowed  # v1.25+
    assert not run("allowPrivilegeEscalation", windows, at=(1, 24)).allowed


def test_capabilities_restricted() -> None:
    ok = {"containers": [ctr("a", capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})]}
    assert run("capabilities_restricted", ok).allowed
    r = run("capabilities_restricted", {"containers": [ctr("a"), ctr("b", capabilities={"drop": ["NET_RAW"]}),
                                                       ctr("c", capabilities={"drop": ["ALL"], "add": ["SYS_TIME",
                                                                                                       "CHOWN"]})]})
    assert r.reason == "unrestricted capabilities"
    assert r.detail == ('containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; container "c" must '
                        'not include "CHOWN", "SYS_TIME" in securityContext.capabilities.add')
    assert run("capabilities_restricted", {"os": {"name": "windows"}, "containers": [ctr("a")]}).allowed


def test_restricted_volumes() -> None:
    ok = [{"name": n, k: {}} for n, k in (("a", "configMap"), ("b", "csi"), ("c", "downwardAPI"), ("d", "emptyDir"),
                                          ("e", "ephemeral"), ("f", "image"), ("g", "persistentVolumeClaim"),
                                          ("h", "projected"), ("i", "secret"))]
    assert run("restrictedVolumes", {"volumes": ok}).allowed
    r = run("restrictedVolumes", {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]})
    assert (r.reason, r.detail) == ("restricted volume types", 'volume "h" uses restricted volume type "hostPath"')
    r = run("restrictedVolumes", {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}},
                                              {"name": "g", "gitRepo": {"repository": "r"}},
                                              {"name": "x"}, {"name": "ok", "secret": {"secretName": "s"}}]})
    assert r.detail == 'volumes "n", "g", "x" use restricted volume types "gitRepo", "nfs", "unknown"'


def test_run_as_non_root() -> None:
    assert run("runAsNonRoot", {"securityContext": {"runAsNonRoot": True}, "containers": [ctr("a")]}).allowed
    assert run("runAsNonRoot", {"containers": [ctr("a", runAsNonRoot=True)]}).allowed
    r = run("runAsNonRoot", {"containers": [ctr("a"), ctr("b", runAsNonRoot=True)]})
    assert (r.reason, r.detail) == ("runAsNonRoot != true", 'pod or container "a" must set '
                                    'securityContext.runAsNonRoot=true')
    r = run("runAsNonRoot", {"securityContext": {"runAsNonRoot": False},
                             "containers": [ctr("a", runAsNonRoot=False), ctr("b")]})
    # explicit false wins over the implicit ones
    assert r.detail == 'pod and container "a" must not set securityContext.runAsNonRoot=false'
    r = run("runAsNonRoot", {"securityContext": {"runAsNonRoot": True}, "containers": [ctr("a", runAsNonRoot=False)]})
    assert r.detail == 'container "a" must not set securityContext.runAsNonRoot=false'


def test_run_as_user() -> None:
    assert run("runAsUser", {"securityContext": {"runAsUser": 1000}, "containers": [ctr("a", runAsUser=1)]}).allowed
    r = run("runAsUser", {"securityContext": {"runAsUser": 0}, "containers": [ctr("a", runAsUser=0), ctr("b")]})
    assert (r.reason, r.detail) == ("runAsUser=0", 'pod and container "a" must not set runAsUser=0')


def test_seccomp_restricted() -> None:
    assert run("seccompProfile_restricted", {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                                             "containers": [ctr("a")]}).allowed
    r = run("seccompProfile_restricted", {"containers": [ctr("a"), ctr("b", seccompProfile={"type": "Localhost"})]})
    assert (r.reason, r.detail) == ("seccompProfile", 'pod or container "a" must set '
                                    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    r = run("seccompProfile_restricted", {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
                                          "containers": [ctr("a")]})
    assert r.detail == 'pod must not set securityContext.seccompProfile.type to "Unconfined"'
    assert run("seccompProfile_restricted", {"os": {"name": "windows"}, "containers": [ctr("a")]}).allowed


# ------------------------------------------------------------------ the evaluator


BASELINE_IDS = ("appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts",
                "privileged", "procMount", "seLinuxOptions", "seccompProfile_baseline", "sysctls",
                "windowsHostProcess")


def test_layout_by_level_and_version() -> None:
    assert EV.max_version == version(1, 32)
    assert EV.check_ids(LevelVersion(PRIVILEGED, LATEST)) == ()
    assert EV.check_ids(LevelVersion(BASELINE, LATEST)) == BASELINE_IDS
    assert EV.check_ids(LevelVersion(BASELINE, version(1, 0))) == BASELINE_IDS
    latest = EV.check_ids(LevelVersion(RESTRICTED, LATEST))
    assert latest == ("appArmorProfile", "hostNamespaces", "hostPorts", "privileged", "procMount", "seLinuxOptions",
                      "sysctls", "windowsHostProcess", "allowPrivilegeEscalation", "capabilities_restricted",
                      "restrictedVolumes", "runAsNonRoot", "runAsUser", "seccompProfile_restricted")
    # v1.0: no allowPrivilegeEscalation (1.8), seccomp restricted (1.19), capabilities (1.22), runAsUser (1.23)
    assert EV.check_ids(LevelVersion(RESTRICTED, version(1, 0))) == (
        "appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPorts", "privileged", "procMount",
        "seLinuxOptions", "seccompProfile_baseline", "sysctls", "windowsHostProcess", "restrictedVolumes",
        "runAsNonRoot")
    v18 = EV.check_ids(LevelVersion(RESTRICTED, version(1, 18)))
    assert "allowPrivilegeEscalation" in v18 and "seccompProfile_baseline" in v18
    v19 = EV.check_ids(LevelVersion(RESTRICTED, version(1, 19)))
    assert "seccompProfile_restricted" in v19 and "seccompProfile_baseline" not in v19
    v22 = EV.check_ids(LevelVersion(RESTRICTED, version(1, 22)))
    assert "capabilities_restricted" in v22 and "capabilities_baseline" not in v22 and "runAsUser" not in v22
    assert "runAsUser" in EV.check_ids(LevelVersion(RESTRICTED, version(1, 23)))
    # versions past the newest check (v1.33, v1.99) evaluate as v1.32
    assert EV.check_ids(LevelVersion(RESTRICTED, version(1, 99))) == latest


def test_evaluate_restricted_pod_message() -> None:
    spec = {"containers": [ctr("c")]}
    r = EV.aggregate(LevelVersion(RESTRICTED, LATEST), {}, spec)
    assert not r.allowed
    assert r.forbidden_reason() == ("allowPrivilegeEscalation != false, unrestricted capabilities, "
                                    "runAsNonRoot != true, seccompProfile")
    assert r.forbidden_detail() == (
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")')
    assert EV.aggregate(LevelVersion(RESTRICTED, LATEST), {}, {"containers": [restricted_ctr("c")]}).allowed
    assert EV.aggregate(LevelVersion(BASELINE, LATEST), {}, spec).allowed
    # at v1.7 only runAsNonRoot of those applied
    r = EV.aggregate(LevelVersion(RESTRICTED, version(1, 7)), {}, spec)
    assert r.forbidden_reason() == "runAsNonRoot != true"


def test_aggregate_empty_reason_and_detail() -> None:
    r = aggregate([CheckResult(False), CheckResult(True), CheckResult(False, "x", "")])
    assert r.forbidden_reason() == "unknown forbidden reason, x"
    assert r.forbidden_detail() == "unknown forbidden reason, x"


def test_relaxed_for_user_namespaces() -> None:
    spec = {"hostUsers": False, "securityContext": {"runAsUser": 0},
            "containers": [restricted_ctr("c", runAsNonRoot=False, procMount="Unmasked")]}
    assert not EV.aggregate(LevelVersion(RESTRICTED, LATEST), {}, spec).allowed
    assert Evaluator(relax_user_namespace_pods=True).aggregate(LevelVersion(RESTRICTED, LATEST), {}, spec).allowed


@pytest.mark.parametrize(("checks", "message"), [
    ((Check("a", BASELINE, (VersionedCheck(version(1, 0), lambda m, s: CheckResult(True)),)),) * 2,
     "multiple checks registered for ID a"),
    ((Check("a", BASELINE, ()),), "check a: empty"),
    ((Check("a", BASELINE, (VersionedCheck(version(1, 2), lambda m, s: CheckResult(True)),
                            VersionedCheck(version(1, 1), lambda m, s: CheckResult(True)))),),
     "check a: versions must be strictly increasing"),
    ((Check("a", BASELINE, (VersionedCheck(version(1, 0), lambda m, s: CheckResult(True), ("b",)),)),),
     "check a: only restricted checks may set overrides"),
])
def test_registry_validation(checks: tuple[Check, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Evaluator(checks)
