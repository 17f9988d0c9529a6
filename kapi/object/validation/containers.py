"""Containers and volumes of a pod spec: volumes and their sources, ports, env, mounts, probes,
lifecycle handlers, security context, init containers, tolerations (kube's core validation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kapi.errors import Cause
from kapi.object.validation.fields import (Obj, _d, _i, _l, _nonnegative, _s, field_duplicate,
    field_forbidden, field_invalid, field_not_found, field_not_supported, field_required)
from kapi.object.validation.names import (RULE_DNS1123_SUBDOMAIN, _inclusive_range, is_config_map_key,
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value, is_valid_port_name,
    is_valid_port_num, validate_name)
from kapi.object.validation.quantity import _validate_resources


_PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
_VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs",
    "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte",
    "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk",
    "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)
# kube-apiserver reports a few sources under odd names; keep them for identical paths.
_VOLUME_SOURCE_PATHS = MappingProxyType({"downwardAPI": "downwarAPI", "cephfs": "cephFS"})
_ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                    "status.podIPs")
_DOWNWARD_CONVERTIBLE = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"})


def _validate_volumes(volumes: list[Any], path: str) -> tuple[dict[str, Obj], list[Cause]]:
    errs: list[Cause] = []
    known: dict[str, Obj] = {}
    for i, vol in enumerate(volumes):
        vol = _d(vol)
        p = f"{path}[{i}]"
        name = _s(vol.get("name"))
        el = _validate_volume_source(vol, p)
        if not name:
            el.append(field_required(f"{p}.name"))
        else:
            el.extend(field_invalid(f"{p}.name", name, m) for m in is_dns1123_label(name))
        if name in known:
            el.append(field_duplicate(f"{p}.name", name))
        if el:
            errs.extend(el)
        else:
            known[name] = vol
    return known, errs


def _validate_volume_source(vol: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    count = 0
    for key in _VOLUME_SOURCES:
        source = vol.get(key)
        if source is None:
            continue
        if count:
            errs.append(field_forbidden(f"{path}.{_VOLUME_SOURCE_PATHS.get(key, key)}",
                                        "may not specify more than 1 volume type"))
            continue
        count += 1
        src, p = _d(source), f"{path}.{key}"
        if key == "hostPath":
            host_path = _s(src.get("path"))
            if not host_path:
                errs.append(field_required(f"{p}.path"))
            else:
                errs.extend(_no_backsteps(host_path, f"{p}.path"))
        elif key == "secret":
            if not _s(src.get("secretName")):
                errs.append(field_required(f"{p}.secretName"))
        elif key == "configMap":
            if not _s(src.get("name")):
                errs.append(field_required(f"{p}.name"))
        elif key == "persistentVolumeClaim":
            if not _s(src.get("claimName")):
                errs.append(field_required(f"{p}.claimName"))
        elif key == "nfs":
            if not _s(src.get("server")):
                errs.append(field_required(f"{p}.server"))
            if not _s(src.get("path")):
                errs.append(field_required(f"{p}.path"))
            elif not _s(src.get("path")).startswith("/"):
                errs.append(field_invalid(f"{p}.path", _s(src.get("path")), "must be an absolute path"))
        elif key == "csi":
            if not _s(src.get("driver")):
                errs.append(field_required(f"{p}.driver"))
    if count == 0:
        errs.append(field_required(path, "must specify a volume type"))
    return errs


def _no_backsteps(target: str, path: str) -> list[Cause]:
    if ".." in target.replace("\\", "/").split("/"):
        return [field_invalid(path, target, "must not contain '..'")]
    return []


def _local_descending_path(target: str, path: str) -> list[Cause]:
    errs = []
    if target.startswith("/"):
        errs.append(field_invalid(path, target, "must be a relative path"))
    return errs + _no_backsteps(target, path)


def _validate_port_num_or_name(value: object, path: str) -> list[Cause]:
    if isinstance(value, str):
        return [field_invalid(path, value, m) for m in is_valid_port_name(value)]
    port = _i(value)
    if port is None:
        return [field_invalid(path, value, "must be an integer or a port name")]
    return [field_invalid(path, port, m) for m in is_valid_port_num(port)]


def _validate_container_ports(ports: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = _d(port)
        p = f"{path}[{i}]"
        name = _s(port.get("name"))
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs.extend(field_invalid(f"{p}.name", name, m) for m in msgs)
            elif name in names:
                errs.append(field_duplicate(f"{p}.name", name))
            else:
                names.add(name)
        container_port = _i(port.get("containerPort")) or 0
        if container_port == 0:
            errs.append(field_required(f"{p}.containerPort"))
        else:
            errs.extend(field_invalid(f"{p}.containerPort", container_port, m)
                        for m in is_valid_port_num(container_port))
        host_port = _i(port.get("hostPort")) or 0
        if host_port:
            errs.extend(field_invalid(f"{p}.hostPort", host_port, m) for m in is_valid_port_num(host_port))
        errs.extend(_validate_protocol(port.get("protocol"), f"{p}.protocol"))
    return errs


def _validate_protocol(protocol: object, path: str) -> list[Cause]:
    proto = _s(protocol)
    if not proto:
        return [field_required(path)]
    if proto not in _PORT_PROTOCOLS:
        return [field_not_supported(path, proto, _PORT_PROTOCOLS)]
    return []


def _validate_env(env: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, var in enumerate(env):
        var = _d(var)
        p = f"{path}[{i}]"
        name = _s(var.get("name"))
        if not name:
            errs.append(field_required(f"{p}.name"))
        elif any(not (0x20 <= ord(c) < 0x7F) or c == "=" for c in name):
            errs.append(field_invalid(f"{p}.name", name, "a valid environment variable name must consist "
                                                          "only of printable ASCII characters other than '='"))
        errs.extend(_validate_env_value_from(var, f"{p}.valueFrom"))
    return errs


def _validate_env_value_from(var: Obj, path: str) -> list[Cause]:
    source = var.get("valueFrom")
    if not isinstance(source, dict):
        return []
    errs: list[Cause] = []
    count = 0
    if isinstance(source.get("fieldRef"), dict):
        count += 1
        errs.extend(_validate_field_ref(source["fieldRef"], f"{path}.fieldRef"))
    if isinstance(source.get("resourceFieldRef"), dict):
        count += 1
        if not _s(source["resourceFieldRef"].get("resource")):
            errs.append(field_required(f"{path}.resourceFieldRef.resource"))
    for key in ("configMapKeyRef", "secretKeyRef"):
        ref = source.get(key)
        if isinstance(ref, dict):
            count += 1
            name = _s(ref.get("name"))
            errs.extend(field_invalid(f"{path}.{key}.name", name, m) for m in is_dns1123_subdomain(name))
            ref_key = _s(ref.get("key"))
            if not ref_key:
                errs.append(field_required(f"{path}.{key}.key"))
            else:
                errs.extend(field_invalid(f"{path}.{key}.key", ref_key, m) for m in is_config_map_key(ref_key))
    if count == 0:
        errs.append(field_invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                            "`configMapKeyRef` or `secretKeyRef`"))
    elif _s(var.get("value")):
        errs.append(field_invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(field_invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_field_ref(ref: Obj, path: str) -> list[Cause]:
    if not _s(ref.get("apiVersion")):
        return [field_required(f"{path}.apiVersion")]
    field_path = _s(ref.get("fieldPath"))
    if not field_path:
        return [field_required(f"{path}.fieldPath")]
    m = re.fullmatch(r"(.+)\['(.*)'\]", field_path)
    base, subscript = (m.group(1), m.group(2)) if m else (field_path, None)
    if base not in _DOWNWARD_CONVERTIBLE:
        return [field_invalid(f"{path}.fieldPath", field_path,
                              f"error converting fieldPath: field label not supported: {base}")]
    if subscript is not None:
        if base == "metadata.annotations":
            return [field_invalid(path, subscript.lower(), e) for e in is_qualified_name(subscript.lower())]
        if base == "metadata.labels":
            return [field_invalid(path, subscript, e) for e in is_qualified_name(subscript)]
        return [field_invalid(path, base, "does not support subscript")]
    if base not in _ENV_FIELD_PATHS:
        return [field_not_supported(f"{path}.fieldPath", base, sorted(_ENV_FIELD_PATHS))]
    return []


def _validate_env_from(sources: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, source in enumerate(sources):
        source = _d(source)
        p = f"{path}[{i}]"
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if isinstance(ref, dict):
                count += 1
                name = _s(ref.get("name"))
                if not name:
                    errs.append(field_required(f"{p}.{key}.name"))
                else:
                    errs.extend(field_invalid(f"{p}.{key}.name", name, m)
                                for m in validate_name(RULE_DNS1123_SUBDOMAIN, name, prefix=True))
        if count == 0:
            errs.append(field_invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(field_invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_volume_mounts(mounts: list[Any], volumes: Mapping[str, Obj], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, mount in enumerate(mounts):
        mount = _d(mount)
        p = f"{path}[{i}]"
        name, mount_path = _s(mount.get("name")), _s(mount.get("mountPath"))
        if not name:
            errs.append(field_required(f"{p}.name"))
        if name not in volumes:
            errs.append(field_not_found(f"{p}.name", name))
        if not mount_path:
            errs.append(field_required(f"{p}.mountPath"))
        if mount_path in seen:
            errs.append(field_invalid(f"{p}.mountPath", mount_path, "must be unique"))
        seen.add(mount_path)
        sub_path, sub_expr = _s(mount.get("subPath")), _s(mount.get("subPathExpr"))
        # kube-apiserver reports these two without the mount's index.
        if sub_path:
            errs.extend(_local_descending_path(sub_path, f"{path}.subPath"))
        if sub_expr:
            if sub_path:
                errs.append(field_invalid(f"{p}.subPathExpr", sub_expr,
                        "subPathExpr and subPath are mutually exclusive"))
            errs.extend(_local_descending_path(sub_expr, f"{path}.subPathExpr"))
    return errs


def _validate_pull_policy(policy: object, path: str) -> list[Cause]:
    value = _s(policy)
    if value in ("Always", "IfNotPresent", "Never"):
        return []
    if not value:
        return [field_required(path)]
    return [field_not_supported(path, value, ("Always", "IfNotPresent", "Never"))]


_HANDLER_KEYS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")


def _validate_handler(handler: Obj, path: str) -> list[Cause]:
    errs: list[Cause] = []
    count = 0
    for key in _HANDLER_KEYS:
        action = handler.get(key)
        if not isinstance(action, dict):
            continue
        if count:
            errs.append(field_forbidden(f"{path}.{key}", "may not specify more than 1 handler type"))
            continue
        count += 1
        if key == "exec" and not _l(action.get("command")):
            errs.append(field_required(f"{path}.exec.command"))
        elif key in ("httpGet", "tcpSocket"):
            if "port" not in action or action.get("port") in (None, "", 0):
                errs.append(field_required(f"{path}.{key}.port"))
            else:
                errs.extend(_validate_port_num_or_name(action.get("port"), f"{path}.{key}.port"))
            if key == "httpGet":
                scheme = _s(action.get("scheme"))
                if scheme not in ("HTTP", "HTTPS"):
                    errs.append(field_not_supported(f"{path}.httpGet.scheme", scheme, ("HTTP", "HTTPS")))
        elif key == "grpc":
            port = _i(action.get("port")) or 0
            errs.extend(field_invalid(f"{path}.grpc.port", port, m) for m in is_valid_port_num(port))
    if count == 0:
        errs.append(field_required(path, "must specify a handler type"))
    return errs


def _validate_probe(probe: object, path: str, *, single_success: bool) -> list[Cause]:
    if not isinstance(probe, dict):
        return []
    errs = _validate_handler(probe, path)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs.extend(_nonnegative(f"{path}.{key}", probe.get(key)))
    grace = _i(probe.get("terminationGracePeriodSeconds"))
    if grace is not None and grace <= 0:
        errs.append(field_invalid(f"{path}.terminationGracePeriodSeconds", grace, "must be greater than 0"))
    success = _i(probe.get("successThreshold"))
    if single_success and success != 1:
        errs.append(field_invalid(f"{path}.successThreshold", success if success is not None else 0, "must be 1"))
    return errs


def _validate_lifecycle(lifecycle: object, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in ("postStart", "preStop"):
        handler = _d(lifecycle).get(key)
        if isinstance(handler, dict):
            errs.extend(_validate_handler(handler, f"{path}.{key}"))
    return errs


def _validate_security_context(sc: object, path: str) -> list[Cause]:
    ctx = _d(sc)
    errs: list[Cause] = []
    for key in ("runAsUser", "runAsGroup"):
        value = _i(ctx.get(key))
        if value is not None and not 0 <= value <= 0xFFFFFFFF:
            errs.append(field_invalid(f"{path}.{key}", value, _inclusive_range(0, 0xFFFFFFFF)))
    if ctx.get("allowPrivilegeEscalation") is False and ctx.get("privileged") is True:
        errs.append(field_invalid(path, ctx, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
    return errs


def _validate_container_common(ctr: Obj, volumes: Mapping[str, Obj], path: str) -> list[Cause]:
    errs: list[Cause] = []
    name = _s(ctr.get("name"))
    if not name:
        errs.append(field_required(f"{path}.name"))
    else:
        errs.extend(field_invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
    if not _s(ctr.get("image")):
        errs.append(field_required(f"{path}.image"))
    policy = _s(ctr.get("terminationMessagePolicy"))
    if not policy:
        errs.append(field_required(f"{path}.terminationMessagePolicy"))
    elif policy not in ("File", "FallbackToLogsOnError"):
        errs.append(field_not_supported(f"{path}.terminationMessagePolicy", policy, ("File", "FallbackToLogsOnError")))
    errs.extend(_validate_container_ports(_l(ctr.get("ports")), f"{path}.ports"))
    errs.extend(_validate_env(_l(ctr.get("env")), f"{path}.env"))
    errs.extend(_validate_env_from(_l(ctr.get("envFrom")), f"{path}.envFrom"))
    errs.extend(_validate_volume_mounts(_l(ctr.get("volumeMounts")), volumes, f"{path}.volumeMounts"))
    errs.extend(_validate_pull_policy(ctr.get("imagePullPolicy"), f"{path}.imagePullPolicy"))
    errs.extend(_validate_resources(ctr.get("resources"), f"{path}.resources"))
    errs.extend(_validate_security_context(ctr.get("securityContext"), f"{path}.securityContext"))
    return errs


def _host_port_conflicts(containers: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for ci, ctr in enumerate(containers):
        for pi, port in enumerate(_l(_d(ctr).get("ports"))):
            port = _d(port)
            host_port = _i(port.get("hostPort")) or 0
            if not host_port:
                continue
            key = f"{_s(port.get('hostIP'))}/{_s(port.get('protocol'))}/{host_port}"
            if key in seen:
                errs.append(field_duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return errs


def _validate_containers(containers: list[Any], volumes: Mapping[str, Obj], path: str) -> list[Cause]:
    if not containers:
        return [field_required(path)]
    errs: list[Cause] = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        ctr = _d(ctr)
        p = f"{path}[{i}]"
        errs.extend(_validate_container_common(ctr, volumes, p))
        name = _s(ctr.get("name"))
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        else:
            names.add(name)
        if isinstance(ctr.get("lifecycle"), dict):
            errs.extend(_validate_lifecycle(ctr["lifecycle"], f"{p}.lifecycle"))
        errs.extend(_validate_probe(ctr.get("livenessProbe"), f"{p}.livenessProbe", single_success=True))
        errs.extend(_validate_probe(ctr.get("readinessProbe"), f"{p}.readinessProbe", single_success=False))
        errs.extend(_validate_probe(ctr.get("startupProbe"), f"{p}.startupProbe", single_success=True))
        if ctr.get("restartPolicy") is not None:
            errs.append(field_forbidden(f"{p}.restartPolicy", "may not be set for non-init containers"))
    errs.extend(_host_port_conflicts(containers, path))
    return errs


def _validate_init_containers(inits: list[Any], regular: list[Any], volumes: Mapping[str, Obj],
                              path: str) -> list[Cause]:
    errs: list[Cause] = []
    names = {_s(_d(c).get("name")) for c in regular}
    for i, ctr in enumerate(inits):
        ctr = _d(ctr)
        p = f"{path}[{i}]"
        errs.extend(_validate_container_common(ctr, volumes, p))
        restart = ctr.get("restartPolicy")
        if restart is not None and restart != "Always":
            errs.append(field_not_supported(f"{p}.restartPolicy", restart, ("Always",)))
        name = _s(ctr.get("name"))
        if name in names:
            errs.append(field_duplicate(f"{p}.name", name))
        elif name:
            names.add(name)
        errs.extend(_host_port_conflicts([ctr], path))
        if restart == "Always":
            if isinstance(ctr.get("lifecycle"), dict):
                errs.extend(_validate_lifecycle(ctr["lifecycle"], f"{p}.lifecycle"))
            errs.extend(_validate_probe(ctr.get("livenessProbe"), f"{p}.livenessProbe", single_success=True))
            errs.extend(_validate_probe(ctr.get("readinessProbe"), f"{p}.readinessProbe", single_success=False))
            errs.extend(_validate_probe(ctr.get("startupProbe"), f"{p}.startupProbe", single_success=True))
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(key) is not None:
                    errs.append(field_forbidden(f"{p}.{key}", "may not be set for init containers without "
                                                              "restartPolicy=Always"))
    return errs


def _validate_tolerations(tolerations: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, tol in enumerate(tolerations):
        tol = _d(tol)
        p = f"{path}[{i}]"
        key, operator, value, effect = (_s(tol.get("key")), _s(tol.get("operator")), _s(tol.get("value")),
                                        _s(tol.get("effect")))
        if key:
            errs.extend(field_invalid(f"{p}.key", key, m) for m in is_qualified_name(key))
        if not key and operator != "Exists":
            errs.append(field_invalid(f"{p}.operator", operator,
                                      "operator must be Exists when `key` is empty, which means \"match all "
                                      "values and all keys\""))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(field_invalid(f"{p}.effect", effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(field_invalid(f"{p}.operator", value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(field_invalid(f"{p}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(field_not_supported(f"{p}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(field_not_supported(f"{p}.effect", effect, ("NoSchedule", "PreferNoSchedule", "NoExecute")))
    return errs
