"""Nodes and what their pods reference: a kubelet's identity (kube's nodeidentifier) and the secrets,
configmaps and claims a pod spec names (kube's podutil.VisitPodSecretNames / VisitPodConfigmapNames,
pvutil). Shared by the Node authorizer and NodeRestriction admission; no I/O."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from kapi.object.access import UserInfo

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
NODE_LEASE_NAMESPACE = "kube-node-lease"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """kube's nodeidentifier.NodeIdentity: (node name, is a node); a node's name may be empty (unknown)."""
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.name[len(NODE_USER_PREFIX):], True


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, dict):
                yield c


def _ref_name(obj: Any, key: str = "name") -> str:
    return obj.get(key) or "" if isinstance(obj, dict) else ""


def pod_secret_names(spec: Mapping[str, Any]) -> list[str]:
    """Every secret a pod spec names: imagePullSecrets, containers' envFrom and env, volumes."""
    names = [_ref_name(ref) for ref in spec.get("imagePullSecrets") or ()]
    for c in _containers(spec):
        names += [_ref_name(e.get("secretRef")) for e in c.get("envFrom") or () if isinstance(e, dict)]
        names += [_ref_name((e.get("valueFrom") or {}).get("secretKeyRef")) for e in c.get("env") or ()
                  if isinstance(e, dict)]
    for vol in spec.get("volumes") or ():
        if not isinstance(vol, dict):
            continue
        for kind, key in _VOLUME_SECRETS:  # one source per volume: kube's switch takes the first set
            source = vol.get(kind)
            if isinstance(source, dict):
                if kind == "projected":
                    names += [_ref_name(s.get("secret")) for s in source.get("sources") or () if isinstance(s, dict)]
                elif key == "secretName":
                    names.append(source.get("secretName") or "")
                else:
                    names.append(_ref_name(source.get(key)))
                break
    return [n for n in names if n]


# The volume sources of kube's VisitPodSecretNames switch, in its order, with their secret field.
_VOLUME_SECRETS = (("azureFile", "secretName"), ("cephfs", "secretRef"), ("cinder", "secretRef"),
                   ("flexVolume", "secretRef"), ("projected", ""), ("rbd", "secretRef"), ("secret", "secretName"),
                   ("scaleIO", "secretRef"), ("iscsi", "secretRef"), ("storageos", "secretRef"),
                   ("csi", "nodePublishSecretRef"))


def pod_configmap_names(spec: Mapping[str, Any]) -> list[str]:
    """Every configmap a pod spec names: containers' envFrom and env, configMap and projected volumes."""
    names: list[str] = []
    for c in _containers(spec):
        names += [_ref_name(e.get("configMapRef")) for e in c.get("envFrom") or () if isinstance(e, dict)]
        names += [_ref_name((e.get("valueFrom") or {}).get("configMapKeyRef")) for e in c.get("env") or ()
                  if isinstance(e, dict)]
    for vol in spec.get("volumes") or ():
        if not isinstance(vol, dict):
            continue
        if isinstance(vol.get("projected"), dict):
            names += [_ref_name(s.get("configMap")) for s in vol["projected"].get("sources") or ()
                      if isinstance(s, dict)]
        elif isinstance(vol.get("configMap"), dict):
            names.append(_ref_name(vol["configMap"]))
    return [n for n in names if n]


def pod_claim_names(pod_name: str, spec: Mapping[str, Any]) -> list[str]:
    """The PVCs a pod uses: persistentVolumeClaim volumes, and ``<pod>-<volume>`` for ephemeral ones."""
    names = []
    for vol in spec.get("volumes") or ():
        if not isinstance(vol, dict):
            continue
        if isinstance(vol.get("persistentVolumeClaim"), dict):
            names.append(vol["persistentVolumeClaim"].get("claimName") or "")
        elif isinstance(vol.get("ephemeral"), dict):
            names.append(f"{pod_name}-{vol.get('name', '')}")
    return [n for n in names if n]


def pod_resource_claim_names(pod: Mapping[str, Any]) -> list[str]:
    """kube's resourceclaim.Name per pod claim: its resourceClaimName, or the one its status names for a template."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    generated = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()
                 if isinstance(s, dict)}
    names = []
    for claim in spec.get("resourceClaims") or ():
        if not isinstance(claim, dict):
            continue
        if claim.get("resourceClaimName"):
            names.append(claim["resourceClaimName"])
        elif claim.get("resourceClaimTemplateName") and generated.get(claim.get("name")):
            names.append(generated[claim["name"]])
    ext = status.get("extendedResourceClaimStatus")
    if isinstance(ext, dict) and ext.get("resourceClaimName"):
        names.append(ext["resourceClaimName"])
    return names


def pv_secret_names(spec: Mapping[str, Any], claim_namespace: str) -> list[tuple[str, str]]:
    """kube's pvutil.VisitPVSecretNames, the kubelet-visible ones: (namespace, name) of each secret a PV names."""
    out: list[tuple[str, str]] = []

    def ref(source: Mapping[str, Any], key: str, default_ns: str) -> None:
        r = source.get(key)
        if isinstance(r, dict) and r.get("name"):
            out.append((r.get("namespace") or default_ns, r["name"]))

    if isinstance(spec.get("azureFile"), dict):
        source = spec["azureFile"]
        if source.get("secretName"):
            out.append((source.get("secretNamespace") or claim_namespace, source["secretName"]))
    elif isinstance(spec.get("cephfs"), dict):
        ref(spec["cephfs"], "secretRef", claim_namespace)
    elif isinstance(spec.get("cinder"), dict):
        ref(spec["cinder"], "secretRef", "")
    elif isinstance(spec.get("flexVolume"), dict):
        ref(spec["flexVolume"], "secretRef", claim_namespace)
    elif isinstance(spec.get("rbd"), dict):
        ref(spec["rbd"], "secretRef", claim_namespace)
    elif isinstance(spec.get("scaleIO"), dict):
        ref(spec["scaleIO"], "secretRef", claim_namespace)
    elif isinstance(spec.get("iscsi"), dict):
        ref(spec["iscsi"], "secretRef", claim_namespace)
    elif isinstance(spec.get("storageos"), dict):
        ref(spec["storageos"], "secretRef", "")
    elif isinstance(spec.get("csi"), dict):
        # controllerPublish/ControllerExpand secrets are for controllers, not the kubelet.
        for key in ("nodePublishSecretRef", "nodeStageSecretRef", "nodeExpandSecretRef"):
            ref(spec["csi"], key, "")
    return out
