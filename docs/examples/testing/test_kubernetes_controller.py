"""Test a controller written with the `kubernetes` client: a team's namespaces give the team `edit`.

The controller watches namespaces; one labelled ``example.com/team: <team>`` gets a RoleBinding of
the ``edit`` ClusterRole to the group ``<team>``. The test checks what matters to its users: what a
member of the team may do afterwards, as that user, against a server that enforces RBAC.
"""

import threading
import time
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiClient, ApiException, CoreV1Api, RbacAuthorizationV1Api

from kapi.testing import Server

TEAM_LABEL = "example.com/team"


class TeamController:
    """Reconciles every namespace's RoleBinding from its team label."""

    def __init__(self, api: ApiClient) -> None:
        self.core, self.rbac = CoreV1Api(api), RbacAuthorizationV1Api(api)

    def reconcile(self, namespace: Any) -> None:
        team = (namespace.metadata.labels or {}).get(TEAM_LABEL)
        if team is None or namespace.metadata.deletion_timestamp is not None:
            return
        binding = {"metadata": {"name": "team-edit"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": team}]}
        try:
            self.rbac.create_namespaced_role_binding(namespace.metadata.name, binding)
        except ApiException as err:
            if err.status != 409:  # made already
                raise

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            watch = kubernetes.watch.Watch()
            for event in watch.stream(self.core.list_namespace, timeout_seconds=1):
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.reconcile(event["object"])


@pytest.fixture
def controller(kapi_server: Server) -> Iterator[None]:
    """The controller, running as admin in a thread while the test runs."""
    stop = threading.Event()
    with ApiClient(kapi_server.kubernetes_configuration()) as api:
        thread = threading.Thread(target=TeamController(api).run, args=(stop,))
        thread.start()
        yield
        stop.set()
        thread.join()


def can_create_config_map(api: ApiClient, namespace: str) -> bool:
    try:
        CoreV1Api(api).create_namespaced_config_map(namespace, {"metadata": {"generateName": "probe-"}})
    except ApiException as err:
        if err.status == 403:
            return False
        raise
    return True


def test_a_team_member_may_edit_the_team_namespace(controller: None, kapi_server: Server,
                                                   kapi_namespace: str) -> None:
    # users minted by the server's CA, as `kapi kubeconfig` does: who they are is up to RBAC
    alice_kubeconfig = kapi_server.user("alice", groups=["devs"])
    bob_kubeconfig = kapi_server.user("bob", groups=["ops"])
    with (ApiClient(kapi_server.kubernetes_configuration(alice_kubeconfig)) as alice,
          ApiClient(kapi_server.kubernetes_configuration(bob_kubeconfig)) as bob,
          ApiClient(kapi_server.kubernetes_configuration()) as admin):
        assert not can_create_config_map(alice, kapi_namespace)

        CoreV1Api(admin).patch_namespace(kapi_namespace, {"metadata": {"labels": {TEAM_LABEL: "devs"}}})

        deadline = time.monotonic() + 30
        while not can_create_config_map(alice, kapi_namespace):
            assert time.monotonic() < deadline, "alice still may not create a ConfigMap"
            time.sleep(0.1)
        assert not can_create_config_map(bob, kapi_namespace)
