"""Test a lightkube reconciler that keeps a namespace's ResourceQuota with server-side apply.

Server-side apply is where a fake client tells you least: field ownership, conflicts with other
managers and no-op applies are the server's. Here they are a real server's.
"""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.models.core_v1 import ResourceQuotaSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ResourceQuota

MANAGER = "quota-controller"


def reconcile(client: Client, namespace: str, pods: int) -> ResourceQuota:
    """The namespace's quota: ``pods`` pods at most; the controller's fields win over anyone's."""
    quota = ResourceQuota(metadata=ObjectMeta(name="default-quota", namespace=namespace),
                          spec=ResourceQuotaSpec(hard={"pods": str(pods)}))
    return client.apply(quota, field_manager=MANAGER, force=True)


@pytest.fixture
def client(kapi_kubeconfig: Path) -> Iterator[Client]:
    with Client(KubeConfig.from_file(kapi_kubeconfig)) as client:
        yield client


def test_reconcile_makes_the_quota(client: Client, kapi_namespace: str) -> None:
    quota = reconcile(client, kapi_namespace, pods=10)
    assert quota.spec.hard == {"pods": "10"}
    assert [f.manager for f in quota.metadata.managedFields] == [MANAGER]


def test_reconcile_again_changes_nothing(client: Client, kapi_namespace: str) -> None:
    reconcile(client, kapi_namespace, pods=10)
    deadline = time.monotonic() + 30
    while not (before := client.get(ResourceQuota, "default-quota", namespace=kapi_namespace)).status.used:
        assert time.monotonic() < deadline, "the server's quota controller has not written status"
        time.sleep(0.1)
    again = reconcile(client, kapi_namespace, pods=10)
    assert again.metadata.resourceVersion == before.metadata.resourceVersion  # no write, no event


def test_reconcile_takes_its_field_back(client: Client, kapi_namespace: str) -> None:
    reconcile(client, kapi_namespace, pods=10)
    someone = ResourceQuota(metadata=ObjectMeta(name="default-quota", namespace=kapi_namespace),
                            spec=ResourceQuotaSpec(hard={"pods": "99"}))
    with pytest.raises(ApiError) as conflict:
        client.apply(someone, field_manager="someone-else")
    assert conflict.value.status.code == 409  # spec.hard.pods is the controller's

    client.apply(someone, field_manager="someone-else", force=True)
    assert client.get(ResourceQuota, "default-quota", namespace=kapi_namespace).spec.hard == {"pods": "99"}
    assert reconcile(client, kapi_namespace, pods=10).spec.hard == {"pods": "10"}
