"""The Node authorization mode: what a kubelet may read and write, from a graph of the pods bound to it.

kube's ``plugin/pkg/auth/authorizer/node`` (with AuthorizeNodeWithSelectors, on in 1.33). A
request is a node's when its user is ``system:node:<name>`` in group ``system:nodes``; every other
user gets NoOpinion (RBAC decides). For a node:

- secrets and configmaps: get, list or watch of one named object that a pod bound to the node
  references (volumes incl. projected ones, env, envFrom, imagePullSecrets; secrets of the PVs
  of its claims); persistentvolumeclaims (get; update/patch of ``status``) and persistentvolumes
  (get) the pods use; resourceclaims and volumeattachments (get) tied to the node;
  serviceaccounts: ``create`` of the ``token`` subresource of a pod's service account;
- nodes: get/list/watch of its own Node only (by name, or a list with ``metadata.name=<own>``),
  create/update/patch (NodeRestriction limits these to its own), update/patch of ``status``;
- pods: get of its pods, list/watch with ``spec.nodeName=<own>`` (or of one pod of its own),
  create/delete (mirror pods), update/patch of ``status``, create of ``eviction``;
- leases in ``kube-node-lease`` named as the node; csinodes named as the node;
- anything else: kube's static node rules (``system:node``'s), else NoOpinion.

A refusal is NoOpinion with kube's reason, so that RBAC may still allow it. The graph is kept
from the shared pods and persistentvolumes informers (and volumeattachments when served), each
pod decoded once per change that matters; edges point towards nodes:
``node <- pod <- {secret, configmap, pvc, serviceaccount, resourceclaim}``, ``pvc <- pv <- secret``,
``node <- volumeattachment``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from kapi import errors
from kapi.apis.rbacpolicy import cluster_roles
from kapi.object.access import ALLOW, NO_OPINION, Attributes, Decision, Rules, UserInfo
from kapi.object.rbac import rules_allow
from kapi.object.nodes import (MIRROR_POD_ANNOTATION, NODE_LEASE_NAMESPACE, node_identity, pod_claim_names, pod_configmap_names, pod_resource_claim_names,
                               pod_secret_names, pv_secret_names)
from kapi.object.selectors import parse_field_terms


CONFIGMAP, NODE, POD, PVC, PV, SECRET, SERVICE_ACCOUNT, RESOURCE_CLAIM, VOLUME_ATTACHMENT, SLICE = (
    "configmap", "node", "pod", "pvc", "pv", "secret", "serviceAccount", "resourceclaim", "volumeattachment",
    "resourceslice")

Vertex = tuple[str, str, str]  # (type, namespace, name)


def node_rules() -> tuple[Mapping[str, Any], ...]:
    """kube's bootstrappolicy.NodeRules(): the static rules the Node authorizer applies to whatever it does not
    subdivide, which are the bootstrap policy's system:node ClusterRole's rules (one source for both)."""
    role = next(r for r in cluster_roles() if r["metadata"]["name"] == "system:node")
    return tuple(role["rules"])


# ---------------------------------------------------------------------------------------------
# The graph


@dataclass
class Graph:
    """Vertices and edges pointing towards nodes; an edge's destination is the node it leads to, if known.

    ``dest_count[v][node]`` counts v's edges that lead to ``node`` (kube's destination edge index,
    kept for every vertex here), so most checks are one lookup; a path through a PV needs a walk.
    """

    out: dict[Vertex, dict[Vertex, Vertex | None]] = field(default_factory=dict)
    into: dict[Vertex, set[Vertex]] = field(default_factory=dict)
    dest_count: dict[Vertex, dict[Vertex, int]] = field(default_factory=dict)

    def has(self, v: Vertex) -> bool:
        return v in self.out

    def _vertex(self, v: Vertex) -> Vertex:
        if v not in self.out:
            self.out[v] = {}
            self.into[v] = set()
        return v

    def _degree(self, v: Vertex) -> int:
        return len(self.out.get(v, ())) + len(self.into.get(v, ()))

    def add_edge(self, src: Vertex, dst: Vertex, dest: Vertex | None) -> None:
        self._vertex(src)
        self._vertex(dst)
        if dst in self.out[src]:
            return
        self.out[src][dst] = dest
        self.into[dst].add(src)
        if dest is not None:
            counts = self.dest_count.setdefault(src, {})
            counts[dest] = counts.get(dest, 0) + 1

    def _drop_edge(self, src: Vertex, dst: Vertex) -> None:
        dest = self.out[src].pop(dst)
        self.into[dst].discard(src)
        if dest is not None:
            counts = self.dest_count[src]
            counts[dest] -= 1
            if not counts[dest]:
                del counts[dest]
                if not counts:
                    del self.dest_count[src]

    def _remove(self, v: Vertex) -> None:
        del self.out[v]
        del self.into[v]
        self.dest_count.pop(v, None)

    def delete_vertex(self, v: Vertex) -> None:
        """Remove ``v`` and its edges, and every neighbour left without edges (kube's deleteVertexLocked)."""
        if v not in self.out:
            return
        neighbours = set(self.out[v]) | self.into[v]
        for dst in list(self.out[v]):
            self._drop_edge(v, dst)
        for src in list(self.into[v]):
            self._drop_edge(src, v)
        self._remove(v)
        for n in neighbours:
            if n in self.out and not self._degree(n):
                self._remove(n)

    def has_path(self, start: Vertex, node: Vertex) -> bool:
        """A directed path from ``start`` to ``node`` that takes no edge leading to another node."""
        if self.dest_count.get(start, {}).get(node):
            return True
        seen, stack = {start}, [start]
        while stack:
            v = stack.pop()
            for nxt, dest in self.out.get(v, {}).items():
                if dest is not None and dest != node:
                    continue  # leads to another node
                if nxt == node:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    # ------------------------------------------------------------------ kube's Add*/Delete*

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """kube's AddPod (only for a pod bound to a node): pod -> node, and what it references -> pod."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        ns, name, node_name = meta.get("namespace", ""), meta.get("name", ""), spec.get("nodeName", "")
        pod_v = (POD, ns, name)
        self.delete_vertex(pod_v)
        node_v = (NODE, "", node_name)
        self.add_edge(pod_v, node_v, node_v)
        # A mirror pod (a static pod the kubelet reports) gets no edges beyond its node: a node must
        # not grant itself other objects by creating a pod.
        if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
            return
        if spec.get("serviceAccountName"):
            self.add_edge((SERVICE_ACCOUNT, ns, spec["serviceAccountName"]), pod_v, node_v)
        for secret in pod_secret_names(spec):
            self.add_edge((SECRET, ns, secret), pod_v, node_v)
        for configmap in pod_configmap_names(spec):
            self.add_edge((CONFIGMAP, ns, configmap), pod_v, node_v)
        for claim in pod_claim_names(name, spec):
            self.add_edge((PVC, ns, claim), pod_v, node_v)
        for claim in pod_resource_claim_names(pod):
            self.add_edge((RESOURCE_CLAIM, ns, claim), pod_v, node_v)

    def delete_pod(self, namespace: str, name: str) -> None:
        self.delete_vertex((POD, namespace, name))

    def add_pv(self, pv: Mapping[str, Any]) -> None:
        """kube's AddPV: pv -> its claim (no known node yet), the kubelet-visible secrets -> pv."""
        name = (pv.get("metadata") or {}).get("name", "")
        pv_v = (PV, "", name)
        self.delete_vertex(pv_v)
        spec = pv.get("spec") or {}
        ref = spec.get("claimRef")
        if not isinstance(ref, dict):
            return
        self.add_edge(pv_v, (PVC, ref.get("namespace", ""), ref.get("name", "")), None)
        for ns, secret in pv_secret_names(spec, ref.get("namespace", "")):
            self.add_edge((SECRET, ns, secret), pv_v, None)

    def delete_pv(self, name: str) -> None:
        self.delete_vertex((PV, "", name))

    def add_volume_attachment(self, name: str, node_name: str) -> None:
        va_v = (VOLUME_ATTACHMENT, "", name)
        self.delete_vertex(va_v)
        if node_name:
            node_v = (NODE, "", node_name)
            self.add_edge(va_v, node_v, node_v)

    def delete_volume_attachment(self, name: str) -> None:
        self.delete_vertex((VOLUME_ATTACHMENT, "", name))


# ---------------------------------------------------------------------------------------------
# The mode


class NodeAuthorizer:
    """The ``Node`` mode: kube's NodeAuthorizer over a Graph fed from the shared informers."""

    name = "Node"

    def __init__(self, informers: Any | None = None, graph: Graph | None = None,
                 rules: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.graph = graph or Graph()
        self.node_rules = tuple(rules) if rules is not None else node_rules()
        self._bound: dict[tuple[str, str], tuple[str, str]] = {}  # pod (ns, name) -> (node, uid) in the graph
        if informers is not None:
            self.watch(informers)

    # ------------------------------------------------------------------ the graph populator

    def watch(self, informers: Any) -> None:
        """Feed the graph from the pods and persistentvolumes informers (volumeattachments when served)."""
        pods = informers.informer("", "pods")
        pods.add_handler(lambda item: self.put_pod(item.object()), lambda _old, new: self._pod_updated(new),
                         lambda item: self.remove_pod(item.namespace, item.name))
        pvs = informers.informer("", "persistentvolumes")
        pvs.add_handler(lambda item: self.graph.add_pv(item.object()),
                        lambda _old, new: self.graph.add_pv(new.object()),
                        lambda item: self.graph.delete_pv(item.name))
        try:
            attachments = informers.informer("storage.k8s.io", "volumeattachments")
        except KeyError:  # not served: no attachment grants anything
            return
        attachments.add_handler(lambda item: self._put_attachment(item.object()),
                                lambda _old, new: self._put_attachment(new.object()),
                                lambda item: self.graph.delete_volume_attachment(item.name))

    def put_pod(self, pod: Mapping[str, Any]) -> None:
        """kube's graphPopulator.updatePod: a bound pod enters the graph, again only when its node or uid changed
        (what a pod references cannot change once it is bound)."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        node_name = spec.get("nodeName") or ""
        if not node_name:
            return
        seen = (node_name, meta.get("uid", ""))
        if self._bound.get(key) == seen:
            return
        self._bound[key] = seen
        self.graph.add_pod(pod)

    def _pod_updated(self, new: Any) -> None:
        """A pod already in the graph with the same uid is left alone without decoding its spec: a bound pod's
        node cannot change (most pod updates are status updates of bound pods)."""
        bound = self._bound.get((new.namespace, new.name))
        if bound is not None and (new.metadata() or {}).get("uid", "") == bound[1]:
            return
        self.put_pod(new.object())

    def remove_pod(self, namespace: str, name: str) -> None:
        if self._bound.pop((namespace, name), None) is not None:
            self.graph.delete_pod(namespace, name)

    def _put_attachment(self, va: Mapping[str, Any]) -> None:
        self.graph.add_volume_attachment((va.get("metadata") or {}).get("name", ""),
                                         (va.get("spec") or {}).get("nodeName") or "")

    # ------------------------------------------------------------------ decisions

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        if node_identity(user)[1]:
            return Rules(incomplete=True, evaluation_error="node authorizer does not support user rule resolution")
        return Rules()

    async def authorize(self, attrs: Attributes) -> Decision:
        return self.decide(attrs)

    def decide(self, attrs: Attributes) -> Decision:
        """kube's NodeAuthorizer.Authorize."""
        node_name, is_node = node_identity(attrs.user)
        if not is_node:
            return _NO_OPINION
        if not node_name:
            return Decision(NO_OPINION, f'unknown node for user "{attrs.user.name}"')
        if attrs.resource_request:
            handler = _SUBDIVIDED.get((attrs.group, attrs.resource))
            if handler is not None:
                return handler(self, node_name, attrs)
        if rules_allow(self.node_rules, attrs):
            return _ALLOW
        return _NO_OPINION

    def _status_update(self, node: str, vtype: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("update", "patch"):
            return Decision(NO_OPINION, "can only get/update/patch this type")
        if attrs.subresource != "status":
            return Decision(NO_OPINION, "can only update status subresource")
        return self._related(node, vtype, attrs)

    def _get(self, node: str, vtype: str, attrs: Attributes) -> Decision:
        if attrs.verb != "get":
            return Decision(NO_OPINION, "can only get individual resources of this type")
        if attrs.subresource:
            return Decision(NO_OPINION, "cannot get subresource")
        return self._related(node, vtype, attrs)

    def _read_namespaced(self, node: str, vtype: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "list", "watch"):
            return Decision(NO_OPINION, "can only read resources of this type")
        if attrs.subresource:
            return Decision(NO_OPINION, "cannot read subresource")
        if not attrs.namespace:
            return Decision(NO_OPINION, "can only read namespaced object of this type")
        return self._related(node, vtype, attrs)

    def _related(self, node: str, vtype: str, attrs: Attributes) -> Decision:
        if not attrs.name:
            return Decision(NO_OPINION, "No Object name found")
        return self._path(node, vtype, attrs)

    def _path(self, node: str, vtype: str, attrs: Attributes) -> Decision:
        node_v, start = (NODE, "", node), (vtype, attrs.namespace, attrs.name)
        if self.graph.has(node_v) and self.graph.has(start) and self.graph.has_path(start, node_v):
            return _ALLOW
        return Decision(NO_OPINION, f"no relationship found between node '{node}' and this object")

    def _pvc(self, node: str, attrs: Attributes) -> Decision:
        if attrs.subresource == "status":
            return self._status_update(node, PVC, attrs)
        return self._get(node, PVC, attrs)

    def _create_token(self, node: str, attrs: Attributes) -> Decision:
        if attrs.verb != "create" or not attrs.name:
            return Decision(NO_OPINION, "can only create tokens for individual service accounts")
        if attrs.subresource != "token":
            return Decision(NO_OPINION, "can only create token subresource of serviceaccount")
        return self._path(node, SERVICE_ACCOUNT, attrs)

    def _lease(self, node: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return Decision(NO_OPINION, "can only get, create, update, patch, or delete a node lease")
        if attrs.namespace != NODE_LEASE_NAMESPACE:
            return Decision(NO_OPINION, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        # A create names no object: NodeRestriction checks the name at admission.
        if attrs.verb != "create" and attrs.name != node:
            return Decision(NO_OPINION, "can only access node lease with the same name as the requesting node")
        return _ALLOW

    def _csinode(self, node: str, attrs: Attributes) -> Decision:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return Decision(NO_OPINION, "can only get, create, update, patch, or delete a CSINode")
        if attrs.subresource:
            return Decision(NO_OPINION, "cannot authorize CSINode subresources")
        if attrs.verb != "create" and attrs.name != node:
            return Decision(NO_OPINION, "can only access CSINode with the same name as the requesting node")
        return _ALLOW

    def _resource_slice(self, node: str, attrs: Attributes) -> Decision:
        if attrs.subresource:
            return Decision(NO_OPINION, "cannot authorize ResourceSlice subresources")
        if attrs.verb == "create":
            return _ALLOW
        if attrs.verb in ("get", "update", "patch", "delete"):
            return self._related(node, SLICE, attrs)
        if attrs.verb in ("watch", "list", "deletecollection"):
            if _field_equals(attrs.field_selector, "nodeName", node):
                return _ALLOW
            return Decision(NO_OPINION, "can only list/watch/deletecollection resourceslices with nodeName field "
                                        "selector")
        return Decision(NO_OPINION, "only the following verbs are allowed for a ResourceSlice: get, watch, list, "
                                    "create, update, patch, delete, deletecollection")

    def _node(self, node: str, attrs: Attributes) -> Decision:
        if not attrs.subresource:
            if attrs.verb in ("create", "update", "patch"):
                return _ALLOW  # NodeRestriction limits a node to its own Node object
            if attrs.verb in ("get", "list", "watch"):
                # By name, not the graph: a kubelet reads its Node before it has created it.
                if attrs.name == node:
                    return _ALLOW
                if not attrs.name:
                    return Decision(NO_OPINION, f"node '{node}' cannot read all nodes, only its own Node object")
                return Decision(NO_OPINION, f"node '{node}' cannot read '{attrs.name}', only its own Node object")
        elif attrs.subresource == "status" and attrs.verb in ("update", "patch"):
            return _ALLOW
        return _NO_OPINION

    def _pod(self, node: str, attrs: Attributes) -> Decision:
        if not attrs.subresource:
            if attrs.verb == "get":
                return self._get(node, POD, attrs)
            if attrs.verb in ("list", "watch"):
                if _field_equals(attrs.field_selector, "spec.nodeName", node):
                    return _ALLOW
                if attrs.name:  # one pod known to be bound to the node
                    return self._related(node, POD, attrs)
                return Decision(NO_OPINION, "can only list/watch pods with spec.nodeName field selector")
            if attrs.verb in ("create", "delete"):
                return _ALLOW  # mirror pods; NodeRestriction limits them to the node's own
        elif attrs.subresource == "status" and attrs.verb in ("update", "patch"):
            return _ALLOW
        elif attrs.subresource == "eviction" and attrs.verb == "create":
            return _ALLOW
        return _NO_OPINION


_ALLOW = Decision(ALLOW)
_NO_OPINION = Decision(NO_OPINION)


def _field_equals(selector: str, field_name: str, value: str) -> bool:
    """The field selector has the term ``field=value`` (or ``==``)."""
    if not selector:
        return False
    try:
        terms = parse_field_terms(selector).requirements
    except errors.StatusError:  # kube: a selector that does not parse grants nothing
        return False
    return any(r.field == field_name and r.operator == "=" and r.value == value for r in terms)


# The (group, resource)s the Node authorizer subdivides, each with its check.
_SUBDIVIDED = {
    ("", "secrets"): lambda self, node, attrs: self._read_namespaced(node, SECRET, attrs),
    ("", "configmaps"): lambda self, node, attrs: self._read_namespaced(node, CONFIGMAP, attrs),
    ("", "persistentvolumeclaims"): NodeAuthorizer._pvc,
    ("", "persistentvolumes"): lambda self, node, attrs: self._get(node, PV, attrs),
    ("resource.k8s.io", "resourceclaims"): lambda self, node, attrs: self._get(node, RESOURCE_CLAIM, attrs),
    ("storage.k8s.io", "volumeattachments"): lambda self, node, attrs: self._get(node, VOLUME_ATTACHMENT, attrs),
    ("", "serviceaccounts"): NodeAuthorizer._create_token,
    ("coordination.k8s.io", "leases"): NodeAuthorizer._lease,
    ("storage.k8s.io", "csinodes"): NodeAuthorizer._csinode,
    ("resource.k8s.io", "resourceslices"): NodeAuthorizer._resource_slice,
    ("", "nodes"): NodeAuthorizer._node,
    ("", "pods"): NodeAuthorizer._pod,
}
