"""NodeRestriction (kube's plugin/pkg/admission/noderestriction, kube 1.33): what a kubelet
(``system:node:<name>`` in ``system:nodes``) may write, beyond what the Node authorizer lets it reach.

- pods: create only mirror pods (the ``kubernetes.io/config.mirror`` annotation) bound to itself, owned
  by its own Node (one controller reference with the Node's uid, no blockOwnerDeletion) and
  referencing no service account, secret, configmap, ClusterTrustBundle or claim; delete only pods
  bound to itself; ``pods/status`` only of its pods and without changing labels or resource claim
  statuses; ``pods/eviction`` only of its pods; other pod subresources are refused;
- nodes: only its own Node; not created with a configSource nor given a new one; its taints left as
  they are; no ``node-restriction.kubernetes.io/`` label and no kubernetes.io / k8s.io label other
  than the kubelet's own (hostname, zone, region, instance type, os, arch, ``kubelet.kubernetes.io/``,
  ``node.kubernetes.io/``) set, changed or removed;
- persistentvolumeclaims: only ``status``, and only its capacity, conditions and allocated resources;
- serviceaccounts/token: only tokens bound to a pod (with its uid) scheduled on itself, for 0 or 1
  audiences, an audience a volume of the pod uses (a projected serviceAccountToken source, or a CSI
  driver's tokenRequests, inline or through a claim's volume) or one the authorizer lets the node
  ``request-serviceaccounts-token-audience`` (ServiceAccountNodeAudienceRestriction, beta in 1.33);
- leases: only in ``kube-node-lease``, named as itself; csinodes: named as itself;
- certificatesigningrequests: a kubelet-serving or kubelet client CSR only with
  ``CN=system:node:<name>`` (AllowInsecureKubeletCertificateSigningRequests off).

A user in ``system:nodes`` whose name has no node in it is refused everything. Everyone else passes.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from kapi import errors
from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.object.nodes import MIRROR_POD_ANNOTATION, NODE_LEASE_NAMESPACE, node_identity, \
    pod_configmap_names, pod_secret_names
from kapi.object.access import Attributes as AccessAttributes
from kapi.registry.admit import CREATE, DELETE, UPDATE

Obj = dict[str, Any]

LABEL_NAMESPACE_NODE_RESTRICTION: Final = "node-restriction.kubernetes.io"
KUBELET_LABELS: Final = frozenset((
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os",
    "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "node.kubernetes.io/windows-build",
))
KUBELET_LABEL_NAMESPACES: Final = ("kubelet.kubernetes.io", "node.kubernetes.io")
KUBELET_SERVING_SIGNER: Final = "kubernetes.io/kubelet-serving"
KUBELET_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client-kubelet"
AUDIENCE_VERB: Final = "request-serviceaccounts-token-audience"

_RESOURCES: Final = frozenset((
    ("", "pods"), ("", "nodes"), ("", "persistentvolumeclaims"), ("", "serviceaccounts"),
    ("coordination.k8s.io", "leases"), ("storage.k8s.io", "csinodes"), ("resource.k8s.io", "resourceslices"),
    ("certificates.k8s.io", "certificatesigningrequests"),
))


def _d(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _label_namespace(key: str) -> str:
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def _under(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_label(key: str) -> bool:
    """kube's kubeletapis.IsKubeletLabel: a label the kubelet sets on its own Node."""
    if key in KUBELET_LABELS:
        return True
    namespace = _label_namespace(key)
    return any(_under(namespace, ns) for ns in KUBELET_LABEL_NAMESPACES)


def forbidden_labels(modified: set[str]) -> list[str]:
    """The labels of ``modified`` a node may not set, change or remove, sorted (kube's sets.String.List)."""
    out = set()
    for key in modified:
        namespace = _label_namespace(key)
        if _under(namespace, LABEL_NAMESPACE_NODE_RESTRICTION):
            out.add(key)
        if (_under(namespace, "kubernetes.io") or _under(namespace, "k8s.io")) and not is_kubelet_label(key):
            out.add(key)
    return sorted(out)


def _labels(obj: object) -> dict[str, Any]:
    return _d(_d(_d(obj).get("metadata")).get("labels"))


def modified_labels(new: dict[str, Any], old: dict[str, Any]) -> set[str]:
    return {k for k in set(new) | set(old) if k not in new or k not in old or new[k] != old[k]}


def _claim_statuses(pod: object) -> list[tuple[object, object]]:
    return [(_d(s).get("name"), _d(s).get("resourceClaimName")) for s in _l(_d(_d(pod).get("status"))
                                                                                .get("resourceClaimStatuses"))]


def _without_status_fields(pvc: Obj) -> Obj:
    out = copy.deepcopy(pvc)
    md = _d(out.get("metadata"))
    md.pop("resourceVersion", None)
    md.pop("managedFields", None)
    status = out.get("status")
    if isinstance(status, dict):
        for key in ("capacity", "conditions", "allocatedResourceStatuses", "allocatedResources"):
            status.pop(key, None)
        if not status:
            out.pop("status")
    return out


def _diff(old: object, new: object, path: str = "") -> list[str]:
    """Where two JSON values differ, as ``path: old -> new`` lines."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new)):
            out += _diff(old.get(key), new.get(key), f"{path}.{key}")
        return out
    if old == new:
        return []
    return [f"{path or '.'}: {json.dumps(old, sort_keys=True)} -> {json.dumps(new, sort_keys=True)}"]


class NodeRestriction(Plugin):
    name = "NodeRestriction"
    operations = frozenset((CREATE, UPDATE, DELETE))
    resources = _RESOURCES

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        for group, resource in (("", "pods"), ("", "nodes"), ("", "persistentvolumeclaims"),
                                ("", "persistentvolumes"), ("storage.k8s.io", "csidrivers")):
            deps.objects.watch(group, resource)

    async def admit(self, a: Attributes) -> None:
        node, is_node = node_identity(a.user)
        if not is_node:
            return
        if not node:
            raise forbidden(a, f'could not determine node from user "{a.user.name}"')
        key = (a.group, a.plural)
        if key == ("", "pods"):
            if a.subresource == "":
                await self._pod(node, a)
            elif a.subresource == "status":
                self._pod_status(node, a)
            elif a.subresource == "eviction":
                await self._pod_eviction(node, a)
            else:
                raise forbidden(a, f'unexpected pod subresource "{a.subresource}", only \'status\' and '
                                "'eviction' are allowed")
        elif key == ("", "nodes"):
            self._node(node, a)
        elif key == ("", "persistentvolumeclaims"):
            if a.subresource != "status":
                raise forbidden(a, "may only update PVC status")
            self._pvc_status(node, a)
        elif key == ("", "serviceaccounts"):
            await self._service_account(node, a)
        elif key == ("coordination.k8s.io", "leases"):
            self._lease(node, a)
        elif key == ("storage.k8s.io", "csinodes"):
            self._named_as_node(node, a, "can only access CSINode with the same name as the requesting node")
        elif key == ("resource.k8s.io", "resourceslices"):
            self._resource_slice(node, a)
        elif key == ("certificates.k8s.io", "certificatesigningrequests"):
            self._csr(node, a)

    # ------------------------------------------------------------------ pods

    async def _get_pod(self, a: Attributes, name: str) -> Obj:
        pod = await self.deps.objects.get("", "pods", a.namespace, name)
        if pod is None:
            raise errors.not_found("pods", "", name)
        return pod

    async def _pod(self, node: str, a: Attributes) -> None:
        if a.operation == CREATE:
            await self._pod_create(node, a)
        elif a.operation == DELETE:
            pod = await self._get_pod(a, a.name)
            if _d(pod.get("spec")).get("nodeName") != node:
                raise forbidden(a, f'node "{node}" can only delete pods with spec.nodeName set to itself')
        else:
            raise forbidden(a, f'unexpected operation "{a.operation}", node "{node}" can only create and delete '
                            "mirror pods")

    async def _pod_create(self, node: str, a: Attributes) -> None:
        pod = _d(a.obj)
        md, spec = _d(pod.get("metadata")), _d(pod.get("spec"))
        if MIRROR_POD_ANNOTATION not in _d(md.get("annotations")):
            raise forbidden(a, f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can only '
                            "create mirror pods")
        if spec.get("nodeName") != node:
            raise forbidden(a, f'node "{node}" can only create pods with spec.nodeName set to itself')
        owners = _l(md.get("ownerReferences"))
        if len(owners) > 1:
            raise forbidden(a, f'node "{node}" can only create pods with a single owner reference set to itself')
        if not owners:
            raise forbidden(a, f'node "{node}" can only create pods with an owner reference set to itself')
        owner = _d(owners[0])
        if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
            raise forbidden(a, f'node "{node}" can only create pods with an owner reference set to itself')
        if owner.get("controller") is not True:
            raise forbidden(a, f'node "{node}" can only create pods with a controller owner reference set to itself')
        if owner.get("blockOwnerDeletion") is True:
            raise forbidden(a, f'node "{node}" must not set blockOwnerDeletion on an owner reference')
        node_obj = await self.deps.objects.get("", "nodes", "", node)
        if node_obj is None:
            raise errors.not_found("nodes", "", node)
        uid = str(_d(node_obj.get("metadata")).get("uid") or "")
        if str(owner.get("uid") or "") != uid:
            raise forbidden(a, f"node {node} UID mismatch: expected {owner.get('uid') or ''} got {uid}")
        if spec.get("serviceAccountName"):
            raise forbidden(a, f'node "{node}" can not create pods that reference a service account')
        if pod_secret_names(spec):
            raise forbidden(a, f'node "{node}" can not create pods that reference secrets')
        if pod_configmap_names(spec):
            raise forbidden(a, f'node "{node}" can not create pods that reference configmaps')
        volumes = [_d(v) for v in _l(spec.get("volumes"))]
        for vol in volumes:
            if any("clusterTrustBundle" in _d(src) for src in _l(_d(vol.get("projected")).get("sources"))):
                raise forbidden(a, f'node "{node}" can not create pods that reference clustertrustbundles')
        if any(vol.get("persistentVolumeClaim") is not None for vol in volumes):
            raise forbidden(a, f'node "{node}" can not create pods that reference persistentvolumeclaims')

    def _pod_status(self, node: str, a: Attributes) -> None:
        if a.operation != UPDATE:
            raise forbidden(a, f'unexpected operation "{a.operation}"')
        if _d(_d(a.old).get("spec")).get("nodeName") != node:
            raise forbidden(a, f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
        if _labels(a.old) != _labels(a.obj):
            raise forbidden(a, f'node "{node}" cannot update labels through pod status')
        if _claim_statuses(a.old) != _claim_statuses(a.obj):
            raise forbidden(a, f'node "{node}" cannot update resource claim statues')

    async def _pod_eviction(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE:
            raise forbidden(a, f"unexpected operation {a.operation}")
        name = a.name or str(_d(_d(a.obj).get("metadata")).get("name") or "")
        if not name:
            raise forbidden(a, "could not determine pod from request data")
        pod = await self._get_pod(a, name)
        if _d(pod.get("spec")).get("nodeName") != node:
            raise forbidden(a, f"node {node} can only evict pods with spec.nodeName set to itself")

    # ----------------------------------------------------------------- nodes

    def _node(self, node: str, a: Attributes) -> None:
        requested = a.name
        if a.operation == CREATE and not requested:
            requested = str(_d(_d(a.obj).get("metadata")).get("name") or "")
        if requested != node:
            raise forbidden(a, f'node "{node}" is not allowed to modify node "{requested}"')
        if a.operation == CREATE:
            spec = _d(_d(a.obj).get("spec"))
            if spec.get("configSource") is not None:
                raise forbidden(a, f'node "{node}" is not allowed to create pods with a non-nil configSource')
            bad = forbidden_labels(modified_labels(_labels(a.obj), {}))
            if bad:
                raise forbidden(a, f'node "{node}" is not allowed to set the following labels: {", ".join(bad)}')
        elif a.operation == UPDATE:
            spec, old_spec = _d(_d(a.obj).get("spec")), _d(_d(a.old).get("spec"))
            if spec.get("configSource") is not None and spec.get("configSource") != old_spec.get("configSource"):
                raise forbidden(a, f'node "{node}" is not allowed to update configSource to a new non-nil '
                                "configSource")
            if (spec.get("taints") or []) != (old_spec.get("taints") or []):  # Semantic: nil equals empty
                raise forbidden(a, f'node "{node}" is not allowed to modify taints')
            bad = forbidden_labels(modified_labels(_labels(a.obj), _labels(a.old)))
            if bad:
                raise forbidden(a, f"is not allowed to modify labels: {', '.join(bad)}")

    # ---------------------------------------------------------------- claims

    def _pvc_status(self, node: str, a: Attributes) -> None:
        if a.operation != UPDATE:
            raise forbidden(a, f'unexpected operation "{a.operation}"')
        old, new = _without_status_fields(_d(a.old)), _without_status_fields(_d(a.obj))
        if old != new:
            raise forbidden(a, f'node "{node}" is not allowed to update fields other than status.quantity and '
                            f"status.conditions: {'; '.join(_diff(old, new))}")

    # ------------------------------------------------------- service accounts

    async def _service_account(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource != "token":
            return
        spec = _d(_d(a.obj).get("spec"))
        ref = spec.get("boundObjectRef")
        if not isinstance(ref, dict) or ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or \
                not ref.get("name"):
            raise forbidden(a, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise forbidden(a, "node requested token with a pod binding without a uid")
        pod = await self._get_pod(a, str(ref["name"]))
        if str(ref["uid"]) != str(_d(pod.get("metadata")).get("uid") or ""):
            raise forbidden(a, f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
                            "record. The object might have been deleted and then recreated")
        if _d(pod.get("spec")).get("nodeName") != node:
            raise forbidden(a, "node requested token bound to a pod scheduled on a different node")
        audiences = _l(spec.get("audiences"))
        if len(audiences) > 1:
            raise forbidden(a, "node may only request 0 or 1 audiences")
        audience = str(audiences[0]) if audiences else ""
        if await self._pod_references_audience(pod, audience):
            return
        if await self._may_request_audience(a, audience):
            return
        raise forbidden(a, f'audience "{audience}" not found in pod spec volume, system:node:{node} is not '
                        "authorized to request tokens for this audience")

    async def _may_request_audience(self, a: Attributes, audience: str) -> bool:
        access = self.deps.access
        if access is None:
            return True
        decision = await access.authorize(AccessAttributes(
            user=a.user, verb=AUDIENCE_VERB, group="", resource=audience, namespace=a.namespace, name=a.name))
        return decision.allowed

    async def _pod_references_audience(self, pod: Obj, audience: str) -> bool:
        md, spec = _d(pod.get("metadata")), _d(pod.get("spec"))
        namespace, pod_name = str(md.get("namespace") or ""), str(md.get("name") or "")
        for vol in (_d(v) for v in _l(spec.get("volumes"))):
            for src in _l(_d(vol.get("projected")).get("sources")):
                sat = _d(src).get("serviceAccountToken")
                if isinstance(sat, dict) and str(sat.get("audience") or "") == audience:
                    return True
            driver = ""
            if isinstance(vol.get("ephemeral"), dict) and vol["ephemeral"].get("volumeClaimTemplate") is not None:
                driver = await self._claim_driver(namespace, f"{pod_name}-{vol.get('name', '')}")
            elif isinstance(vol.get("persistentVolumeClaim"), dict):
                driver = await self._claim_driver(namespace, str(vol["persistentVolumeClaim"].get("claimName") or ""))
            elif isinstance(vol.get("csi"), dict):
                driver = str(vol["csi"].get("driver") or "")
            if driver:
                csidriver = await self.deps.objects.get("storage.k8s.io", "csidrivers", "", driver)
                if csidriver is not None and any(
                        str(_d(t).get("audience") or "") == audience
                        for t in _l(_d(csidriver.get("spec")).get("tokenRequests"))):
                    return True
        return False

    async def _claim_driver(self, namespace: str, claim: str) -> str:
        pvc = await self.deps.objects.get("", "persistentvolumeclaims", namespace, claim) if claim else None
        if pvc is None:
            return ""
        volume = str(_d(pvc.get("spec")).get("volumeName") or "")
        pv = await self.deps.objects.get("", "persistentvolumes", "", volume) if volume else None
        if pv is None:
            return ""
        return str(_d(_d(pv.get("spec")).get("csi")).get("driver") or "")

    # ------------------------------------------------ leases, csinodes, slices

    def _lease(self, node: str, a: Attributes) -> None:
        if a.namespace != NODE_LEASE_NAMESPACE:
            raise forbidden(a, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        self._named_as_node(node, a, "can only access node lease with the same name as the requesting node")

    def _named_as_node(self, node: str, a: Attributes, message: str) -> None:
        if a.operation == CREATE:
            name = str(_d(_d(a.obj).get("metadata")).get("name") or "")
        else:
            name = a.name
        if name != node:
            raise forbidden(a, message)

    def _resource_slice(self, node: str, a: Attributes) -> None:
        if a.operation == CREATE:
            if _d(_d(a.obj).get("spec")).get("nodeName") != node:
                raise forbidden(a, "can only create ResourceSlice with the same NodeName as the requesting node")

    def _csr(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource:
            return
        spec = _d(_d(a.obj).get("spec"))
        if spec.get("signerName") not in (KUBELET_SERVING_SIGNER, KUBELET_CLIENT_SIGNER):
            return
        from kapi.admission.plugins.certificates import parse_csr
        try:
            csr = parse_csr(spec.get("request"))
        except ValueError as exc:
            raise forbidden(a, f"unable to parse csr: {exc}") from None
        from cryptography.x509.oid import NameOID
        cns = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        cn = str(cns[0].value) if cns else ""
        if cn != f"system:node:{node}":
            raise forbidden(a, f"can only create a node CSR with CN=system:node:{node}")

    async def validate(self, a: Attributes) -> None:
        # A ResourceSlice's deletion is judged on the stored object, which only the validating step
        # sees (kube's DeleteCollection checks each object so).
        if a.operation != DELETE or (a.group, a.plural) != ("resource.k8s.io", "resourceslices"):
            return
        node, is_node = node_identity(a.user)
        if is_node and node and isinstance(a.old, dict) and _d(a.old.get("spec")).get("nodeName") != node:
            raise forbidden(a, "can only delete ResourceSlice with the same NodeName as the requesting node")


__all__ = ["NodeRestriction", "forbidden_labels", "is_kubelet_label"]
