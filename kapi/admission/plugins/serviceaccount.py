"""ServiceAccount (kube's plugin/pkg/admission/serviceaccount).

On a pod's create it sets ``spec.serviceAccountName`` to ``default`` when none is named, refuses a
pod whose service account does not exist (403 ``error looking up service account <ns>/<name>:
serviceaccount "<name>" not found``; the ``default`` one is looked up a few times, as the namespace
controller makes it a moment after the namespace), and, unless the pod or its service account sets
``automountServiceAccountToken: false``, adds the projected ``kube-api-access-<5 random>`` volume
(a bound service account token of 3607 seconds, the ``kube-root-ca.crt`` ConfigMap's ``ca.crt``, and
the pod's namespace) mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every
init container and container that mounts nothing there already. A pod without imagePullSecrets gets
its service account's. Mirror pods (the ``kubernetes.io/config.mirror`` annotation) are left as they
are but may not name a service account, reference secrets, or project service account tokens. A
service account annotated ``kubernetes.io/enforce-mountable-secrets: "true"`` limits the secrets its
pods (and their ephemeral containers, added later) may use to those it lists.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Final

import trio

from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.errors import CorruptObject
from kapi.object.nodes import MIRROR_POD_ANNOTATION, pod_secret_names
from kapi.registry.admit import CREATE, UPDATE

Obj = dict[str, Any]

DEFAULT_SERVICE_ACCOUNT_NAME: Final = "default"
ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: Final = "kubernetes.io/enforce-mountable-secrets"
DEFAULT_API_TOKEN_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_VOLUME_NAME: Final = "kube-api-access"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 seconds, so that kube-apiserver can
# tell the tokens it extends (--service-account-extend-token-expiration) from those asked for
WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: Final = 3607
PROJECTED_DEFAULT_MODE: Final = 0o644
# names.SimpleNameGenerator's alphabet (no vowels, no look-alikes)
_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
_DEFAULT_LOOKUPS: Final = 10  # the default service account is made by a controller: kube retries it
_DECODED_CACHE_SIZE: Final = 10_000


def generate_suffix(n: int = 5) -> str:
    return "".join(random.choice(_ALPHANUMS) for _ in range(n))


def token_volume_source() -> Obj:
    """kube's ``TokenVolumeSource``: the projection of a ``kube-api-access-*`` volume."""
    return {
        "defaultMode": PROJECTED_DEFAULT_MODE,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    }


def _dicts(value: object) -> list[Obj]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _d(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _is_mirror(pod: Obj) -> bool:
    return MIRROR_POD_ANNOTATION in _d(_d(pod.get("metadata")).get("annotations"))


def should_automount(sa: Obj, pod: Obj) -> bool:
    """The pod's ``automountServiceAccountToken`` wins, then the service account's; true by default."""
    mine = _d(pod.get("spec")).get("automountServiceAccountToken")
    if isinstance(mine, bool):
        return mine
    theirs = sa.get("automountServiceAccountToken")
    if isinstance(theirs, bool):
        return theirs
    return True


def _enforce_mountable_secrets(sa: Obj) -> bool:
    value = _d(_d(sa.get("metadata")).get("annotations")).get(ENFORCE_MOUNTABLE_SECRETS_ANNOTATION)
    return isinstance(value, str) and value.lower() in ("1", "t", "true")  # strconv.ParseBool


class ServiceAccount(Plugin):
    name = "ServiceAccount"
    operations = frozenset((CREATE, UPDATE))
    resources = frozenset((("", "pods"),))

    def __init__(self, deps: PluginDeps, *, generate_name: Callable[[str], str] | None = None) -> None:
        super().__init__(deps)
        self.generate_name = generate_name or (lambda prefix: prefix + generate_suffix())
        self.retry_interval_s = (random.randrange(100) + 100) / 1000
        self._decoded: dict[str, tuple[int, Obj]] = {}
        deps.objects.watch("", "serviceaccounts")

    @staticmethod
    def _ignored(a: Attributes) -> bool:
        return a.subresource not in ("", "ephemeralcontainers") or not isinstance(a.obj, dict)

    def _from_informer(self, namespace: str, name: str) -> Obj | None:
        """The informer's ServiceAccount, decoded once per resourceVersion (the plugin only reads it)."""
        inf = self.deps.objects.watch("", "serviceaccounts")
        if inf is None or not inf.has_synced:
            return None
        item = inf.item(namespace, name)
        if item is None:
            return None
        rv = item.resource_version
        cached = self._decoded.get(item.key)
        if cached is not None and cached[0] == rv:
            return cached[1]
        try:
            obj = item.object()
        except CorruptObject:
            return None
        if len(self._decoded) >= _DECODED_CACHE_SIZE:
            self._decoded.clear()
        self._decoded[item.key] = (rv, obj)
        return obj

    async def service_account(self, namespace: str, name: str) -> Obj | None:
        """The pod's ServiceAccount, from the informer, else storage (the default one a few times)."""
        found = self._from_informer(namespace, name)
        if found is not None:
            return found
        attempts = _DEFAULT_LOOKUPS if name == DEFAULT_SERVICE_ACCOUNT_NAME else 1
        for i in range(attempts):
            if i:
                await trio.sleep(self.retry_interval_s)
            found = await self.deps.objects.get("", "serviceaccounts", namespace, name)
            if found is not None:
                return found
        return None

    async def _lookup(self, a: Attributes, name: str) -> Obj:
        sa = await self.service_account(a.namespace, name)
        if sa is None:
            raise forbidden(a, f"error looking up service account {a.namespace}/{name}: "
                            f'serviceaccount "{name}" not found')
        return sa

    async def admit(self, a: Attributes) -> None:
        if self._ignored(a) or a.operation != CREATE:
            return  # pods are mutated on create only
        pod = a.obj
        assert pod is not None
        if _is_mirror(pod):
            # the kubelet deletes a mirror pod whose spec it did not write: checked, not changed
            await self.validate(a)
            return
        spec = pod.setdefault("spec", {})
        if not isinstance(spec.get("serviceAccountName"), str) or not spec["serviceAccountName"]:
            spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT_NAME
        spec["serviceAccount"] = spec["serviceAccountName"]  # v1's deprecated alias follows it
        sa = await self._lookup(a, spec["serviceAccountName"])
        if should_automount(sa, pod):
            self._mount_token(spec)
        if not spec.get("imagePullSecrets"):
            pulls = [{"name": ref.get("name", "")} for ref in _dicts(sa.get("imagePullSecrets"))]
            if pulls:
                spec["imagePullSecrets"] = pulls
            else:
                spec.pop("imagePullSecrets", None)
        await self.validate(a)  # as kube's Admit ends

    def _mount_token(self, spec: Obj) -> None:
        volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
        volume_name = ""
        for vol in _dicts(volumes):
            if str(vol.get("name", "")).startswith(SERVICE_ACCOUNT_VOLUME_NAME + "-"):
                volume_name = str(vol["name"])
                break
        has_volume = bool(volume_name)
        if not volume_name:
            volume_name = self.generate_name(SERVICE_ACCOUNT_VOLUME_NAME + "-")
        needs_volume = False
        for key in ("initContainers", "containers"):
            for ctr in _dicts(spec.get(key)):
                mounts = ctr.get("volumeMounts") if isinstance(ctr.get("volumeMounts"), list) else []
                if any(m.get("mountPath") == DEFAULT_API_TOKEN_MOUNT_PATH for m in _dicts(mounts)):
                    continue  # a mount of its own there keeps the token out
                ctr["volumeMounts"] = mounts + [{"name": volume_name, "readOnly": True,
                                                 "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}]
                needs_volume = True
        if needs_volume and not has_volume:
            spec["volumes"] = volumes + [{"name": volume_name, "projected": token_volume_source()}]

    async def validate(self, a: Attributes) -> None:
        if self._ignored(a):
            return
        pod = a.obj
        assert pod is not None
        spec = _d(pod.get("spec"))
        pod_name = str(_d(pod.get("metadata")).get("name") or "")
        if a.operation == UPDATE and a.subresource == "ephemeralcontainers":
            await self._validate_ephemeral(a, spec, pod_name)
            return
        if a.operation != CREATE:
            return
        if _is_mirror(pod):
            if spec.get("serviceAccountName"):
                raise forbidden(a, "a mirror pod may not reference service accounts")
            if pod_secret_names(spec):
                raise forbidden(a, "a mirror pod may not reference secrets")
            for vol in _dicts(spec.get("volumes")):
                if any("serviceAccountToken" in s for s in _dicts(_d(vol.get("projected")).get("sources"))):
                    raise forbidden(a, "a mirror pod may not use ServiceAccountToken volume projections")
            return
        name = spec.get("serviceAccountName")
        if not name:
            raise forbidden(a, f"no service account specified for pod {a.namespace}/{pod_name}")
        sa = await self._lookup(a, str(name))
        if _enforce_mountable_secrets(sa):
            reason = limit_secret_references(sa, spec)
            if reason:
                raise forbidden(a, reason)

    async def _validate_ephemeral(self, a: Attributes, spec: Obj, pod_name: str) -> None:
        name = spec.get("serviceAccountName")
        if not name:
            raise forbidden(a, f"no service account specified for pod {a.namespace}/{pod_name}")
        sa = await self._lookup(a, str(name))
        if not _enforce_mountable_secrets(sa):
            return
        mountable = {str(s.get("name")) for s in _dicts(sa.get("secrets"))}
        sa_name = _d(sa.get("metadata")).get("name", "")
        for ctr in _dicts(spec.get("ephemeralContainers")):
            reason = _container_secret_reason(ctr, "ephemeral container", mountable, sa_name)
            if reason:
                raise forbidden(a, reason)


def _container_secret_reason(ctr: Obj, what: str, mountable: set[str], sa_name: str) -> str:
    for env in _dicts(ctr.get("env")):
        ref = _d(_d(env.get("valueFrom")).get("secretKeyRef"))
        if ref and ref.get("name") not in mountable:
            return (f'{what} {ctr.get("name", "")} with envVar {env.get("name", "")} referencing '
                    f'secret.secretName="{ref.get("name", "")}" is not allowed because service account {sa_name} '
                    "does not reference that secret")
    for env_from in _dicts(ctr.get("envFrom")):
        ref = _d(env_from.get("secretRef"))
        if ref and ref.get("name") not in mountable:
            return (f'{what} {ctr.get("name", "")} with envFrom referencing secret.secretName="{ref.get("name", "")}" '
                    f"is not allowed because service account {sa_name} does not reference that secret")
    return ""


def limit_secret_references(sa: Obj, spec: Obj) -> str:
    """Why the pod may not use a secret its service account does not list ("" if it may)."""
    mountable = {str(s.get("name")) for s in _dicts(sa.get("secrets"))}
    sa_name = str(_d(sa.get("metadata")).get("name", ""))
    for vol in _dicts(spec.get("volumes")):
        secret = vol.get("secret")
        if isinstance(secret, dict) and secret.get("secretName", "") not in mountable:
            return (f'volume with secret.secretName="{secret.get("secretName", "")}" is not allowed because '
                    f"service account {sa_name} does not reference that secret")
    for key, what in (("initContainers", "init container"), ("containers", "container")):
        for ctr in _dicts(spec.get(key)):
            reason = _container_secret_reason(ctr, what, mountable, sa_name)
            if reason:
                return reason
    pulls = {str(s.get("name")) for s in _dicts(sa.get("imagePullSecrets"))}
    for i, ref in enumerate(_dicts(spec.get("imagePullSecrets"))):
        if ref.get("name") not in pulls:
            return (f'imagePullSecrets[{i}].name="{ref.get("name", "")}" is not allowed because service account '
                    f"{sa_name} does not reference that imagePullSecret")
    return ""


__all__ = ["DEFAULT_API_TOKEN_MOUNT_PATH", "ServiceAccount", "limit_secret_references", "should_automount",
           "token_volume_source"]
