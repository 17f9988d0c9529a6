"""kube-apiserver's bootstrap RBAC policy as data: the ClusterRoles, ClusterRoleBindings, Roles and
RoleBindings a server reconciles at start-up (kube's plugin/pkg/auth/authorizer/rbac/bootstrappolicy,
with the default feature gates).

Every object carries the label ``kubernetes.io/bootstrapping: rbac-defaults`` and the annotation
``rbac.authorization.kubernetes.io/autoupdate: "true"`` (set it to "false" on a stored object and
reconciliation leaves that object alone). Rules are written as kube's rule builder makes them: each
list sorted. admin, edit and view are aggregated: their rules are the union of the ClusterRoles
labelled ``rbac.authorization.k8s.io/aggregate-to-<name>: "true"`` (the aggregation controller's
work), and admin picks up edit, edit picks up view.
"""

from __future__ import annotations

from typing import Any, Final

Obj = dict[str, Any]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
API_VERSION: Final = f"{RBAC_GROUP}/v1"
BOOTSTRAP_LABEL: Final = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE: Final = "rbac.authorization.kubernetes.io/autoupdate"
CONTROLLER_PREFIX: Final = "system:controller:"

READ: Final = ("get", "list", "watch")
READ_WRITE: Final = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
WRITE: Final = ("create", "update", "patch", "delete", "deletecollection")

LEGACY = ""
APPS = "apps"
AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
AUTOSCALING = "autoscaling"
BATCH = "batch"
CERTIFICATES = "certificates.k8s.io"
COORDINATION = "coordination.k8s.io"
DISCOVERY = "discovery.k8s.io"
EVENTS = "events.k8s.io"
EXTENSIONS = "extensions"
NETWORKING = "networking.k8s.io"
NODE = "node.k8s.io"
POLICY = "policy"
STORAGE = "storage.k8s.io"


def rule(verbs: tuple[str, ...] | str, groups: tuple[str, ...] | str = (), resources: tuple[str, ...] | str = (),
         names: tuple[str, ...] | str = (), urls: tuple[str, ...] | str = ()) -> Obj:
    """A PolicyRule as kube's rule builder makes it (every list sorted, empty ones left out)."""
    def lst(v: tuple[str, ...] | str) -> list[str]:
        return sorted({v} if isinstance(v, str) else set(v))

    out: Obj = {}
    if groups != () or resources:
        out["apiGroups"] = lst(groups)
    if resources:
        out["resources"] = lst(resources)
    if names:
        out["resourceNames"] = lst(names)
    if urls:
        out["nonResourceURLs"] = lst(urls)
    out["verbs"] = lst(verbs)
    return out


def _events() -> Obj:
    """kube's eventsRule: create, update and patch events in the core and events.k8s.io groups."""
    return rule(("create", "update", "patch"), (LEGACY, EVENTS), "events")


def _meta(name: str, namespace: str = "", labels: dict[str, str] | None = None) -> Obj:
    md: Obj = {"name": name, "labels": {**BOOTSTRAP_LABEL, **(labels or {})},
               "annotations": {AUTOUPDATE: "true"}}
    if namespace:
        md["namespace"] = namespace
    return md


def _cluster_role(name: str, rules: list[Obj], labels: dict[str, str] | None = None,
                  aggregate_from: str = "") -> Obj:
    role: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": _meta(name, labels=labels)}
    if aggregate_from:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"{RBAC_GROUP}/aggregate-to-{aggregate_from}": "true"}}]}
    else:
        role["rules"] = rules
    return role


def _role(namespace: str, name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": API_VERSION, "kind": "Role", "metadata": _meta(name, namespace), "rules": rules}


def user(name: str) -> Obj:
    return {"apiGroup": RBAC_GROUP, "kind": "User", "name": name}


def group(name: str) -> Obj:
    return {"apiGroup": RBAC_GROUP, "kind": "Group", "name": name}


def service_account(namespace: str, name: str) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def _cluster_binding(role: str, subjects: list[Obj], name: str = "") -> Obj:
    binding: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": _meta(name or role),
                    "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}}
    if subjects:
        binding["subjects"] = subjects
    return binding


def _binding(namespace: str, role: str, subjects: list[Obj], name: str = "") -> Obj:
    return {"apiVersion": API_VERSION, "kind": "RoleBinding", "metadata": _meta(name or role, namespace),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role}, "subjects": subjects}


_AGG = f"{RBAC_GROUP}/aggregate-to-"


def cluster_roles() -> list[Obj]:
    """kube's ClusterRoles(): the cluster-wide roles (controller roles are ``controller_roles()``)."""
    return [
        # a "root" role which can do absolutely anything
        _cluster_role("cluster-admin", [rule("*", "*", "*"), rule("*", urls="*")]),
        # what a client needs to discover the API and check health
        _cluster_role("system:discovery", [rule("get", urls=(
            "/livez", "/readyz", "/healthz", "/version", "/version/", "/openapi", "/openapi/*",
            "/api", "/api/*", "/apis", "/apis/*"))]),
        _cluster_role("system:monitoring", [rule("get", urls=(
            "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*",
            "/healthz/*"))]),
        # what a "normal" user needs to learn about themselves
        _cluster_role("system:basic-user", [
            rule("create", AUTHORIZATION, ("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
            rule("create", AUTHENTICATION, "selfsubjectreviews")]),
        # what even an anonymous client may read
        _cluster_role("system:public-info-viewer", [rule("get", urls=(
            "/livez", "/readyz", "/healthz", "/version", "/version/"))]),
        # the namespace admin, editor and viewer: aggregated
        _cluster_role("admin", [], aggregate_from="admin"),
        _cluster_role("edit", [], labels={_AGG + "admin": "true"}, aggregate_from="edit"),
        _cluster_role("view", [], labels={_AGG + "edit": "true"}, aggregate_from="view"),
        _cluster_role("system:aggregate-to-admin", [
            rule("create", AUTHORIZATION, "localsubjectaccessreviews"),
            rule(READ_WRITE, RBAC_GROUP, ("roles", "rolebindings"))], labels={_AGG + "admin": "true"}),
        _cluster_role("system:aggregate-to-edit", [
            # the power to read secrets and to run code as any service account of the namespace
            rule(READ, LEGACY, ("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
                                "services/proxy")),
            rule("impersonate", LEGACY, "serviceaccounts"),
            rule(WRITE, LEGACY, ("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward")),
            rule("create", LEGACY, "pods/eviction"),
            rule(WRITE, LEGACY, ("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                                 "services", "services/proxy", "persistentvolumeclaims", "configmaps",
                                 "secrets", "events")),
            rule("create", LEGACY, "serviceaccounts/token"),
            rule(WRITE, APPS, ("statefulsets", "statefulsets/scale", "daemonsets", "deployments",
                               "deployments/scale", "deployments/rollback", "replicasets",
                               "replicasets/scale")),
            rule(WRITE, AUTOSCALING, "horizontalpodautoscalers"),
            rule(WRITE, BATCH, ("jobs", "cronjobs")),
            rule(WRITE, EXTENSIONS, ("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
                                     "ingresses", "replicasets", "replicasets/scale",
                                     "replicationcontrollers/scale", "networkpolicies")),
            rule(WRITE, POLICY, "poddisruptionbudgets"),
            rule(WRITE, NETWORKING, ("networkpolicies", "ingresses")),
            rule(READ_WRITE, COORDINATION, "leases")], labels={_AGG + "edit": "true"}),
        _cluster_role("system:aggregate-to-view", [
            rule(READ, LEGACY, ("pods", "replicationcontrollers", "replicationcontrollers/scale",
                                "serviceaccounts", "services", "services/status", "endpoints",
                                "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps")),
            rule(READ, LEGACY, ("limitranges", "resourcequotas", "bindings", "events", "pods/status",
                                "resourcequotas/status", "namespaces/status", "replicationcontrollers/status",
                                "pods/log")),
            # reading namespaces at the namespace scope means reading *this* namespace
            rule(READ, LEGACY, "namespaces"),
            rule(READ, DISCOVERY, "endpointslices"),
            rule(READ, APPS, ("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
                              "daemonsets", "daemonsets/status", "deployments", "deployments/status",
                              "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale")),
            rule(READ, AUTOSCALING, ("horizontalpodautoscalers", "horizontalpodautoscalers/status")),
            rule(READ, BATCH, ("jobs", "cronjobs", "cronjobs/status", "jobs/status")),
            rule(READ, EXTENSIONS, ("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                                    "deployments/status", "ingresses", "ingresses/status", "replicasets",
                                    "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
                                    "networkpolicies")),
            rule(READ, POLICY, ("poddisruptionbudgets", "poddisruptionbudgets/status")),
            rule(READ, NETWORKING, ("networkpolicies", "ingresses", "ingresses/status"))],
            labels={_AGG + "view": "true"}),
        _cluster_role("system:heapster", [
            rule(READ, LEGACY, ("events", "pods", "nodes", "namespaces")),
            rule(READ, EXTENSIONS, "deployments")]),
        # the kubelets' role (the Node authorizer narrows it to each node's own objects)
        _cluster_role("system:node", [
            rule("create", AUTHENTICATION, "tokenreviews"),
            rule("create", AUTHORIZATION, ("subjectaccessreviews", "localsubjectaccessreviews")),
            rule(READ, LEGACY, "services"),
            rule(("create", "get", "list", "watch"), LEGACY, "nodes"),
            rule(("update", "patch"), LEGACY, "nodes/status"),
            rule(("update", "patch"), LEGACY, "nodes"),
            rule(("create", "update", "patch"), LEGACY, "events"),
            rule(READ, LEGACY, "pods"),
            rule(("create", "delete"), LEGACY, "pods"),
            rule(("update", "patch"), LEGACY, "pods/status"),
            rule("create", LEGACY, "pods/eviction"),
            rule(READ, LEGACY, ("secrets", "configmaps")),
            rule("get", LEGACY, ("persistentvolumeclaims", "persistentvolumes")),
            rule("get", LEGACY, "endpoints"),
            rule(("create", "get", "list", "watch"), CERTIFICATES, "certificatesigningrequests"),
            rule(("get", "create", "update", "patch", "delete"), COORDINATION, "leases"),
            rule("get", STORAGE, "volumeattachments"),
            rule("create", LEGACY, "serviceaccounts/token"),
            rule(("get", "update", "patch"), LEGACY, "persistentvolumeclaims/status"),
            rule(READ, STORAGE, "csidrivers"),
            rule(("get", "create", "update", "patch", "delete"), STORAGE, "csinodes"),
            rule(READ, NODE, "runtimeclasses")]),
        _cluster_role("system:node-problem-detector", [
            rule("get", LEGACY, "nodes"),
            rule("patch", LEGACY, "nodes/status"),
            _events()]),
        _cluster_role("system:kubelet-api-admin", [
            rule(READ, LEGACY, "nodes"),
            rule("proxy", LEGACY, "nodes"),
            rule("*", LEGACY, ("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"))]),
        _cluster_role("system:node-bootstrapper", [
            rule(("create", "get", "list", "watch"), CERTIFICATES, "certificatesigningrequests")]),
        _cluster_role("system:auth-delegator", [
            rule("create", AUTHENTICATION, "tokenreviews"),
            rule("create", AUTHORIZATION, "subjectaccessreviews")]),
        _cluster_role("system:kube-aggregator", [rule(READ, LEGACY, ("services", "endpoints"))]),
        _cluster_role("system:kube-controller-manager", [
            _events(),
            rule("create", COORDINATION, "leases"),
            rule(("get", "update"), COORDINATION, "leases", names="kube-controller-manager"),
            rule("create", LEGACY, ("secrets", "serviceaccounts")),
            rule("delete", LEGACY, "secrets"),
            rule("get", LEGACY, ("namespaces", "secrets", "serviceaccounts", "configmaps")),
            rule("update", LEGACY, ("secrets", "serviceaccounts")),
            rule("create", AUTHENTICATION, "tokenreviews"),
            rule("create", AUTHORIZATION, "subjectaccessreviews"),
            rule(("list", "watch"), "*", "*"),
            rule("create", LEGACY, "serviceaccounts/token")]),
        _cluster_role("system:kube-dns", [rule(("list", "watch"), LEGACY, ("endpoints", "services"))]),
        _cluster_role("system:persistent-volume-provisioner", [
            rule(("get", "list", "watch", "create", "delete"), LEGACY, "persistentvolumes"),
            rule(("get", "list", "watch", "update"), LEGACY, "persistentvolumeclaims"),
            rule(READ, STORAGE, "storageclasses"),
            rule("watch", LEGACY, "events"),
            _events()]),
        _cluster_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient", [
            rule("create", CERTIFICATES, "certificatesigningrequests/nodeclient")]),
        _cluster_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", [
            rule("create", CERTIFICATES, "certificatesigningrequests/selfnodeclient")]),
        _cluster_role("system:volume-scheduler", [
            rule(("get", "list", "watch", "update", "patch"), LEGACY, "persistentvolumes"),
            rule(READ, STORAGE, "storageclasses"),
            rule(("get", "list", "watch", "update", "patch"), LEGACY, "persistentvolumeclaims")]),
        _cluster_role("system:certificates.k8s.io:legacy-unknown-approver", [
            rule("approve", CERTIFICATES, "signers", names="kubernetes.io/legacy-unknown")]),
        _cluster_role("system:certificates.k8s.io:kubelet-serving-approver", [
            rule("approve", CERTIFICATES, "signers", names="kubernetes.io/kubelet-serving")]),
        _cluster_role("system:certificates.k8s.io:kube-apiserver-client-approver", [
            rule("approve", CERTIFICATES, "signers", names="kubernetes.io/kube-apiserver-client")]),
        _cluster_role("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", [
            rule("approve", CERTIFICATES, "signers", names="kubernetes.io/kube-apiserver-client-kubelet")]),
        _cluster_role("system:service-account-issuer-discovery", [rule("get", urls=(
            "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
            "/openid/v1/jwks", "/openid/v1/jwks/"))]),
        _cluster_role("system:node-proxier", [
            rule(("list", "watch"), LEGACY, ("services", "endpoints")),
            rule(READ, LEGACY, "nodes"),
            _events(),
            rule(("list", "watch"), DISCOVERY, "endpointslices")]),
        _cluster_role("system:kube-scheduler", [
            _events(),
            rule("create", COORDINATION, "leases"),
            rule(("get", "update"), COORDINATION, "leases", names="kube-scheduler"),
            rule(READ, LEGACY, "nodes"),
            rule(("get", "list", "watch", "delete"), LEGACY, "pods"),
            rule("create", LEGACY, ("pods/binding", "bindings")),
            rule(("patch", "update"), LEGACY, "pods/status"),
            rule(READ, LEGACY, ("replicationcontrollers", "services")),
            rule(READ, (APPS, EXTENSIONS), "replicasets"),
            rule(READ, APPS, "statefulsets"),
            rule(READ, POLICY, "poddisruptionbudgets"),
            rule(READ, LEGACY, ("persistentvolumeclaims", "persistentvolumes")),
            rule("create", AUTHENTICATION, "tokenreviews"),
            rule("create", AUTHORIZATION, "subjectaccessreviews"),
            rule(READ, STORAGE, "csinodes"),
            rule(READ, STORAGE, "volumeattachments"),
            rule(READ, LEGACY, "namespaces"),
            rule(READ, STORAGE, "csidrivers"),
            rule(READ, STORAGE, "csistoragecapacities")]),
    ]


def cluster_role_bindings() -> list[Obj]:
    """kube's ClusterRoleBindings(): the bindings of the cluster roles to kube's users and groups."""
    return [
        _cluster_binding("cluster-admin", [group("system:masters")]),
        _cluster_binding("system:monitoring", [group("system:monitoring")]),
        _cluster_binding("system:discovery", [group("system:authenticated")]),
        _cluster_binding("system:basic-user", [group("system:authenticated")]),
        _cluster_binding("system:public-info-viewer", [group("system:authenticated"),
                                                       group("system:unauthenticated")]),
        _cluster_binding("system:node-proxier", [user("system:kube-proxy")]),
        _cluster_binding("system:kube-controller-manager", [user("system:kube-controller-manager")]),
        _cluster_binding("system:kube-dns", [service_account("kube-system", "kube-dns")]),
        _cluster_binding("system:kube-scheduler", [user("system:kube-scheduler")]),
        _cluster_binding("system:volume-scheduler", [user("system:kube-scheduler")]),
        # kubelets are authorized by the Node authorizer; the binding stays, without subjects
        _cluster_binding("system:node", []),
        _cluster_binding("system:service-account-issuer-discovery", [group("system:serviceaccounts")]),
    ]


def namespace_roles() -> list[Obj]:
    """kube's NamespaceRoles(): the Roles of kube-system and kube-public."""
    leader_locking = [rule(("watch", "get", "list", "create", "update"), COORDINATION, "leases"),
                      rule(("watch", "get", "list", "create", "update"), COORDINATION, "leasecandidates")]
    return [
        _role("kube-system", "extension-apiserver-authentication-reader", [
            rule(READ, LEGACY, "configmaps", names="extension-apiserver-authentication")]),
        _role("kube-system", "system::leader-locking-kube-controller-manager", leader_locking),
        _role("kube-system", "system::leader-locking-kube-scheduler", leader_locking),
        _role("kube-system", CONTROLLER_PREFIX + "bootstrap-signer", [rule(READ, LEGACY, "secrets")]),
        _role("kube-system", CONTROLLER_PREFIX + "cloud-provider", [
            rule(("create", "get", "list", "watch"), LEGACY, "configmaps")]),
        _role("kube-system", CONTROLLER_PREFIX + "token-cleaner", [
            rule(("delete", "get", "list", "watch"), LEGACY, "secrets"), _events()]),
        _role("kube-public", CONTROLLER_PREFIX + "bootstrap-signer", [
            rule(READ, LEGACY, "configmaps"),
            rule("update", LEGACY, "configmaps", names="cluster-info"),
            _events()]),
    ]


def namespace_role_bindings() -> list[Obj]:
    """kube's NamespaceRoleBindings(): the RoleBindings of kube-system and kube-public."""
    return [
        _binding("kube-system", "extension-apiserver-authentication-reader",
                 [user("system:kube-controller-manager"), user("system:kube-scheduler")],
                 name="system::extension-apiserver-authentication-reader"),
        _binding("kube-system", "system::leader-locking-kube-controller-manager", [
            user("system:kube-controller-manager"), service_account("kube-system", "kube-controller-manager"),
            service_account("kube-system", "leader-election-controller")]),
        _binding("kube-system", "system::leader-locking-kube-scheduler", [
            user("system:kube-scheduler"), service_account("kube-system", "kube-scheduler")]),
        _binding("kube-system", CONTROLLER_PREFIX + "bootstrap-signer",
                 [service_account("kube-system", "bootstrap-signer")]),
        _binding("kube-system", CONTROLLER_PREFIX + "cloud-provider",
                 [service_account("kube-system", "cloud-provider")]),
        _binding("kube-system", CONTROLLER_PREFIX + "token-cleaner",
                 [service_account("kube-system", "token-cleaner")]),
        _binding("kube-public", CONTROLLER_PREFIX + "bootstrap-signer",
                 [service_account("kube-system", "bootstrap-signer")]),
    ]


def controller_roles() -> list[Obj]:
    """kube's ControllerRoles(): one ClusterRole per kube-controller-manager controller."""
    return [_cluster_role(CONTROLLER_PREFIX + name, rules) for name, rules in _controller_rules()]


def controller_role_bindings() -> list[Obj]:
    """kube's ControllerRoleBindings(): each controller role bound to its kube-system service account."""
    return [_cluster_binding(CONTROLLER_PREFIX + name, [service_account("kube-system", name)])
            for name, _ in _controller_rules()]


def _controller_rules() -> list[tuple[str, list[Obj]]]:
    """(controller name, rules) of kube's controller roles with 1.33's default feature gates (the
    dynamic resource allocation and volume attributes class controllers are off by default there)."""
    e = _events()
    scale = "*/scale"
    return [
        ("attachdetach-controller", [
            rule(("list", "watch"), LEGACY, ("persistentvolumes", "persistentvolumeclaims")),
            rule(READ, LEGACY, "nodes"),
            rule(("patch", "update"), LEGACY, "nodes/status"),
            rule(("list", "watch"), LEGACY, "pods"),
            e,
            rule(("get", "create", "delete", "list", "watch"), STORAGE, "volumeattachments"),
            rule(READ, STORAGE, "csidrivers"),
            rule(READ, STORAGE, "csinodes")]),
        ("certificate-controller", [
            rule(("get", "list", "watch", "delete"), CERTIFICATES, "certificatesigningrequests"),
            rule("update", CERTIFICATES, ("certificatesigningrequests/status", "certificatesigningrequests/approval")),
            rule("approve", CERTIFICATES, "signers", names="kubernetes.io/kube-apiserver-client-kubelet"),
            rule("sign", CERTIFICATES, "signers", names=(
                "kubernetes.io/legacy-unknown", "kubernetes.io/kube-apiserver-client",
                "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving")),
            rule("create", AUTHORIZATION, "subjectaccessreviews"),
            e]),
        ("clusterrole-aggregation-controller", [
            # full powers over cluster roles: it sets any rules on them
            rule(("escalate", "get", "list", "watch", "update", "patch"), RBAC_GROUP, "clusterroles")]),
        ("cronjob-controller", [
            rule(("get", "list", "watch", "update"), BATCH, "cronjobs"),
            rule(("get", "list", "watch", "create", "update", "delete", "patch"), BATCH, "jobs"),
            rule("update", BATCH, "cronjobs/status"),
            rule("update", BATCH, "cronjobs/finalizers"),
            rule(("list", "watch", "delete"), LEGACY, "pods"),
            e]),
        ("daemon-set-controller", [
            rule(READ, (EXTENSIONS, APPS), "daemonsets"),
            rule("update", (EXTENSIONS, APPS), "daemonsets/status"),
            rule("update", (EXTENSIONS, APPS), "daemonsets/finalizers"),
            rule(("list", "watch"), LEGACY, "nodes"),
            rule(("list", "watch", "create", "delete", "patch"), LEGACY, "pods"),
            rule("create", LEGACY, "pods/binding"),
            rule(("get", "list", "watch", "create", "delete", "update", "patch"), APPS, "controllerrevisions"),
            e]),
        ("deployment-controller", [
            rule(("get", "list", "watch", "update"), (EXTENSIONS, APPS), "deployments"),
            rule("update", (EXTENSIONS, APPS), "deployments/status"),
            rule("update", (EXTENSIONS, APPS), "deployments/finalizers"),
            rule(("get", "list", "watch", "create", "update", "patch", "delete"), (APPS, EXTENSIONS), "replicasets"),
            rule(("get", "list", "watch", "update"), LEGACY, "pods"),
            e]),
        ("disruption-controller", [
            rule(READ, (EXTENSIONS, APPS), "deployments"),
            rule(READ, (APPS, EXTENSIONS), "replicasets"),
            rule(READ, LEGACY, "replicationcontrollers"),
            rule(READ, POLICY, "poddisruptionbudgets"),
            rule(READ, APPS, "statefulsets"),
            rule("update", POLICY, "poddisruptionbudgets/status"),
            rule(("patch", "update"), LEGACY, "pods/status"),
            rule("get", "*", scale),
            e]),
        ("endpoint-controller", [
            rule(READ, LEGACY, ("services", "pods")),
            rule(("get", "list", "watch", "create", "update", "delete"), LEGACY, "endpoints"),
            rule("create", LEGACY, "endpoints/restricted"),
            e]),
        ("endpointslice-controller", [
            rule(READ, LEGACY, ("services", "pods", "nodes")),
            rule("update", LEGACY, "services/finalizers"),
            rule(("get", "list", "watch", "create", "update", "delete"), DISCOVERY, "endpointslices"),
            e]),
        ("endpointslicemirroring-controller", [
            rule(READ, LEGACY, ("services", "endpoints")),
            rule("update", LEGACY, "services/finalizers"),
            rule("update", LEGACY, "endpoints/finalizers"),
            rule(("get", "list", "watch", "create", "update", "delete"), DISCOVERY, "endpointslices"),
            e]),
        ("ephemeral-volume-controller", [
            rule(READ, LEGACY, "pods"),
            rule("update", LEGACY, "pods/finalizers"),
            rule(("get", "list", "watch", "create"), LEGACY, "persistentvolumeclaims"),
            e]),
        ("expand-controller", [
            rule(("get", "list", "watch", "update", "patch"), LEGACY, "persistentvolumes"),
            rule(("update", "patch"), LEGACY, "persistentvolumeclaims/status"),
            rule(READ, LEGACY, "persistentvolumeclaims"),
            e]),
        ("generic-garbage-collector", [
            # list/watch, selective gets and updates of any resource
            rule(("get", "list", "watch", "patch", "update", "delete"), "*", "*"),
            e]),
        ("horizontal-pod-autoscaler", [
            rule(READ, AUTOSCALING, "horizontalpodautoscalers"),
            rule("update", AUTOSCALING, "horizontalpodautoscalers/status"),
            rule(("get", "update"), "*", scale),
            rule(("list", "watch"), LEGACY, "pods"),
            rule(("list", "watch"), "metrics.k8s.io", "pods"),
            rule(READ, "custom.metrics.k8s.io", "*"),
            rule(READ, "external.metrics.k8s.io", "*"),
            e]),
        ("job-controller", [
            rule(("get", "list", "watch", "update", "patch"), BATCH, "jobs"),
            rule("update", BATCH, "jobs/status"),
            rule("update", BATCH, "jobs/finalizers"),
            rule(("list", "watch", "create", "delete", "patch"), LEGACY, "pods"),
            e]),
        ("legacy-service-account-token-cleaner", [
            rule("get", LEGACY, "configmaps", names="kube-apiserver-legacy-service-account-token-tracking"),
            rule(("patch", "delete"), LEGACY, "secrets")]),
        ("namespace-controller", [
            rule(("get", "list", "watch", "delete"), LEGACY, "namespaces"),
            rule("update", LEGACY, ("namespaces/finalize", "namespaces/status")),
            rule(("get", "list", "watch", "delete", "deletecollection"), "*", "*")]),
        ("node-controller", [
            rule(("get", "list", "watch", "update", "delete", "patch"), LEGACY, "nodes"),
            rule(("patch", "update"), LEGACY, "nodes/status"),
            # pods' deletion and their status on node failure
            rule(("patch", "update"), LEGACY, "pods/status"),
            rule(("list", "watch", "get", "delete"), LEGACY, "pods"),
            e]),
        ("persistent-volume-binder", [
            rule(("get", "list", "watch", "update", "create", "delete"), LEGACY, "persistentvolumes"),
            rule("update", LEGACY, "persistentvolumes/status"),
            rule(("get", "list", "watch", "update"), LEGACY, "persistentvolumeclaims"),
            rule("update", LEGACY, "persistentvolumeclaims/status"),
            rule(("list", "watch", "get", "create", "delete"), LEGACY, "pods"),
            rule(READ, STORAGE, "storageclasses"),
            rule(("list", "watch"), LEGACY, "nodes"),
            e,
            rule("watch", LEGACY, "events")]),
        ("pod-garbage-collector", [
            rule(("list", "watch", "delete"), LEGACY, "pods"),
            rule(READ, LEGACY, "nodes"),
            rule("patch", LEGACY, "pods/status")]),
        ("pv-protection-controller", [
            rule(("get", "list", "watch", "update"), LEGACY, "persistentvolumes"),
            e]),
        ("pvc-protection-controller", [
            rule(("get", "list", "watch", "update"), LEGACY, "persistentvolumeclaims"),
            rule("update", LEGACY, "persistentvolumeclaims/status"),
            rule(READ, LEGACY, "pods"),
            e]),
        ("replicaset-controller", [
            rule(("get", "list", "watch", "update"), (APPS, EXTENSIONS), "replicasets"),
            rule("update", (APPS, EXTENSIONS), "replicasets/status"),
            rule("update", (APPS, EXTENSIONS), "replicasets/finalizers"),
            rule(("list", "watch", "patch", "create", "delete"), LEGACY, "pods"),
            e]),
        ("replication-controller", [
            rule(("get", "list", "watch", "update"), LEGACY, "replicationcontrollers"),
            rule("update", LEGACY, "replicationcontrollers/status"),
            rule("update", LEGACY, "replicationcontrollers/finalizers"),
            rule(("list", "watch", "patch", "create", "delete"), LEGACY, "pods"),
            e]),
        ("resourcequota-controller", [
            # quota can count quota on anything for reconciliation
            rule(("list", "watch"), "*", "*"),
            rule("update", LEGACY, "resourcequotas/status"),
            e]),
        ("root-ca-cert-publisher", [
            rule(("create", "update"), LEGACY, "configmaps"),
            e]),
        ("route-controller", [
            rule(("list", "watch"), LEGACY, "nodes"),
            rule("patch", LEGACY, "nodes/status"),
            e]),
        ("selinux-warning-controller", [
            e,
            rule(READ, LEGACY, "persistentvolumes"),
            rule(READ, LEGACY, "persistentvolumeclaims"),
            rule(READ, LEGACY, "pods"),
            rule(READ, STORAGE, "csidrivers")]),
        ("service-account-controller", [
            rule("create", LEGACY, "serviceaccounts"),
            e]),
        ("service-cidrs-controller", [
            rule(("get", "list", "watch", "patch", "update"), NETWORKING, "servicecidrs"),
            rule(("patch", "update"), NETWORKING, "servicecidrs/finalizers"),
            rule(("patch", "update"), NETWORKING, "servicecidrs/status"),
            rule(READ, NETWORKING, "ipaddresses"),
            e]),
        ("service-controller", [
            rule(READ, LEGACY, "services"),
            rule(("patch", "update"), LEGACY, "services/status"),
            rule(("list", "watch"), LEGACY, "nodes"),
            e]),
        ("statefulset-controller", [
            rule(("list", "watch"), LEGACY, "pods"),
            rule(READ, APPS, "statefulsets"),
            rule("update", APPS, "statefulsets/status"),
            rule("update", APPS, "statefulsets/finalizers"),
            rule(("get", "create", "delete", "update", "patch"), LEGACY, "pods"),
            rule(("get", "create", "delete", "update", "patch", "list", "watch"), APPS, "controllerrevisions"),
            rule(("get", "create", "list", "watch"), LEGACY, "persistentvolumeclaims"),
            rule(("update", "delete"), LEGACY, "persistentvolumeclaims"),
            rule("update", LEGACY, "pods/finalizers"),
            e]),
        ("ttl-after-finished-controller", [
            rule(("get", "list", "watch", "delete"), BATCH, "jobs"),
            e]),
        ("ttl-controller", [
            rule(("update", "patch", "list", "watch"), LEGACY, "nodes"),
            e]),
        ("validatingadmissionpolicy-status-controller", [
            rule(READ, "admissionregistration.k8s.io", "validatingadmissionpolicies"),
            rule(("get", "patch", "update"), "admissionregistration.k8s.io", "validatingadmissionpolicies/status"),
            e]),
    ]


def bootstrap_cluster_roles() -> list[Obj]:
    """Every ClusterRole of the bootstrap policy (kube's ClusterRoles plus its ControllerRoles)."""
    return cluster_roles() + controller_roles()


def bootstrap_cluster_role_bindings() -> list[Obj]:
    return cluster_role_bindings() + controller_role_bindings()


# Roles that became aggregated: kube copies an old, unaggregated one's rules to the new part once.
AGGREGATED_ROLE_PARTS: Final = {"admin": "system:aggregate-to-admin", "edit": "system:aggregate-to-edit",
                                "view": "system:aggregate-to-view"}
# Bindings split from an old one: kube gives the new one the old one's subjects once.
SPLIT_BINDINGS: Final = {"system:discovery": "system:public-info-viewer"}
