"""What admission policies of both kinds share (kube's admission/plugin/policy/generic): the source of
policies and their bindings (the shared informers, else the registry), and the parameters a binding's
``paramRef`` selects (``CollectParams``), with kube's configuration errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import trio

from kapi import errors
from kapi.admission.plugin import Attributes, Objects
from kapi.object.selectors import label_selector_from_spec
from kapi.registry.resources import Resource, ResourceTable

Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
# kube's isPolicyResource: policies never judge writes of policies or bindings
POLICY_RESOURCES = frozenset(("validatingadmissionpolicies", "validatingadmissionpolicybindings",
                              "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"))
PARAM_SYNC_WAIT_S = 1.0  # kube waits this long for a param informer's first list


class ConfigError(Exception):
    """A policy or binding that cannot be applied (kube's ConfigurationError / CollectParams errors)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_policy_resource(a: Attributes) -> bool:
    return a.group == GROUP and a.plural in POLICY_RESOURCES


def gvk_string(group: str, version: str, kind: str) -> str:
    """schema.GroupVersionKind's String(): ``apps/v1, Kind=Deployment`` (``/v1, Kind=ConfigMap``)."""
    return f"{group}/{version}, Kind={kind}"


def parse_api_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion; raises ConfigError as kube's ``unexpected GroupVersion string``."""
    if not api_version:
        return "", ""
    if api_version.count("/") == 0:
        return "", api_version
    if api_version.count("/") == 1:
        group, version = api_version.split("/")
        return group, version
    raise ConfigError(f"unexpected GroupVersion string: {api_version}")


def param_kind_string(pk: Obj) -> str:
    """The generated String() of a ParamKind, as kube's messages print it."""
    return f"&ParamKind{{APIVersion:{pk.get('apiVersion') or ''},Kind:{pk.get('kind') or ''},}}"


def param_resource(table: ResourceTable, param_kind: Obj) -> Resource:
    """The served resource of a policy's paramKind; ConfigError as kube's policy source words it."""
    try:
        group, version = parse_api_version(str(param_kind.get("apiVersion") or ""))
    except ConfigError as exc:
        raise ConfigError(f"failed to parse paramKind.apiVersion: {exc.message}") from None
    kind = str(param_kind.get("kind") or "")
    for res in table.resources:
        if res.group == group and res.version == version and res.kind == kind and not res.virtual:
            return res
    raise ConfigError(f"failed to find resource referenced by paramKind: '{gvk_string(group, version, kind)}'")


def with_type_meta(obj: Obj, param_kind: Obj) -> Obj:
    """kube's wrappedParam: a param without apiVersion/kind gets the paramKind's."""
    if obj.get("apiVersion") and obj.get("kind"):
        return obj
    return {**obj, "apiVersion": param_kind.get("apiVersion"), "kind": param_kind.get("kind")}


async def collect_params(objects: Objects, param_kind: Obj | None, res: Resource | None, param_ref: Obj | None,
                         namespace: str) -> list[Obj | None]:
    """kube's ``CollectParams``: the params a binding evaluates its policy with ([None]: once without
    params; []: none found and parameterNotFoundAction Allow). Raises ConfigError."""
    if param_kind is None or param_ref is None:
        return [None]
    if res is None:
        raise ConfigError(f"paramKind kind `{param_kind_string(param_kind)}` not known")
    ref_ns = str(param_ref.get("namespace") or "")
    ns = ""
    if res.namespaced:
        ns = ref_ns or namespace
        if not ns:
            raise ConfigError("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
    inf = objects.watch(res.group, res.resource)
    if inf is not None and not inf.has_synced:
        with trio.move_on_after(PARAM_SYNC_WAIT_S):
            await inf.wait_for_sync()
        if not inf.has_synced:
            raise ConfigError(f"paramKind kind `{param_kind_string(param_kind)}` not yet synced to use for admission")
    if ref_ns and not res.namespaced:
        raise ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
    name = str(param_ref.get("name") or "")
    selector = param_ref.get("selector")
    params: list[Obj | None]
    if name:
        if selector is not None:
            raise ConfigError("paramRef.name and paramRef.selector are mutually exclusive")
        found = await objects.get(res.group, res.resource, ns, name)
        params = [with_type_meta(found, param_kind)] if found is not None else []
    elif selector is not None:
        try:
            sel = label_selector_from_spec(selector)
        except errors.StatusError as exc:
            raise ConfigError(exc.message) from None
        listed = await objects.list(res.group, res.resource, ns)
        params = [with_type_meta(o, param_kind) for o in listed
                  if sel is not None and sel.matches(((o.get("metadata") or {}).get("labels") or {}))]
    else:
        raise ConfigError("one of name or selector must be provided")
    if not params and param_ref.get("parameterNotFoundAction") == "Deny":
        raise ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return params


@dataclass
class PolicySource:
    """The policies of one kind and their bindings, from the shared informers once synced (a change
    marks the snapshot stale; it is rebuilt on the next request), else listed from the registry."""

    objects: Objects
    policies: str  # the policy resource's plural
    bindings: str
    _snapshot: list[tuple[Obj, list[Obj]]] | None = None
    _watched: bool = False
    _hooks: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pinf = self.objects.watch(GROUP, self.policies)
        self._binf = self.objects.watch(GROUP, self.bindings)
        for inf in (self._pinf, self._binf):
            if inf is not None:
                inf.add_handler(on_add=lambda _i: self._stale(), on_update=lambda _o, _n: self._stale(),
                                on_delete=lambda _i: self._stale())

    def on_change(self, hook: Callable[[], None]) -> None:
        self._hooks.append(hook)

    def _stale(self) -> None:
        self._snapshot = None
        for hook in self._hooks:
            hook()

    @property
    def informed(self) -> bool:
        return (self._pinf is not None and self._binf is not None and self._pinf.has_synced
                and self._binf.has_synced)

    @property
    def idle(self) -> bool:
        """No bound policy, as the synced informers showed at the last request (nothing changed since)."""
        return self.informed and self._snapshot is not None and not self._snapshot

    async def hooks(self) -> list[tuple[Obj, list[Obj]]]:
        """(policy, its bindings) for every policy with at least one binding, by policy name."""
        if self.informed and self._snapshot is not None:
            return self._snapshot
        if self.informed:
            assert self._pinf is not None and self._binf is not None
            policies, bindings = self._pinf.list(), self._binf.list()
        else:
            policies = await self.objects.list(GROUP, self.policies)
            bindings = await self.objects.list(GROUP, self.bindings)
        by_policy: dict[str, list[Obj]] = {}
        for b in sorted(bindings, key=lambda o: str((o.get("metadata") or {}).get("name") or "")):
            pname = str((b.get("spec") or {}).get("policyName") or "")
            by_policy.setdefault(pname, []).append(b)
        out = []
        for p in sorted(policies, key=lambda o: str((o.get("metadata") or {}).get("name") or "")):
            name = str((p.get("metadata") or {}).get("name") or "")
            if name in by_policy:
                out.append((p, by_policy[name]))
        if self.informed:
            self._snapshot = out
        return out
