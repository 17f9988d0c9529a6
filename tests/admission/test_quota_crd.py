"""``count/<resource>.<group>`` of a custom resource: a quota made before its CRD counts it once the
CRD is served (the controller looks again), creates past it are refused with kube's message, and
deleting one gives its count back."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from kapi.controllers import resourcequota
from kapi.controllers.resourcequota import ResourceQuotaController
from kapi.registry.informer import Informers
from tests.admission.test_quota_admission import NS, used, wait_status
from tests.crd.test_lifecycle import CRD_PATH, crd, established, start

WIDGETS = f"/apis/example.com/v1/namespaces/{NS}/widgets"


def widget(name: str) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}


async def create_once_admitted(api: Any, name: str) -> Any:
    """Create a widget the quota admits by now. Admission reads quotas from its informer, which may
    trail the status just read from the API by a moment (kube's quota admission does too): a 403 of
    that moment is retried, any other answer is returned."""
    with trio.move_on_after(10):
        while True:
            r = await api.create(WIDGETS, widget(name))
            if r.status != 403:
                return r
            await trio.sleep(0.02)
    return r


async def test_count_of_a_custom_resource(nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resourcequota, "DISCOVERY_S", 0.05)
    cluster = await start(nursery)
    api = cluster.api
    assert api.app.handlers.admission is not None
    await nursery.start(api.app.handlers.admission.run)
    informers = Informers(cluster.registry)
    controller = ResourceQuotaController(cluster.registry, informers, resync_s=3600)
    await nursery.start(informers.run)
    await nursery.start(controller.run)

    r = await api.create(f"/api/v1/namespaces/{NS}/resourcequotas",
                         {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                          "spec": {"hard": {"count/widgets.example.com": "1", "pods": "10"}}})
    assert r.status == 201
    q = await wait_status(api, "q", lambda st: "pods" in (st.get("used") or {}))
    assert q["status"]["used"] == {"pods": "0"}  # widgets are not served: nothing counts them yet

    assert (await api.create(CRD_PATH, crd())).status == 201
    await established(api, "widgets.example.com")
    await wait_status(api, "q", lambda st: st["used"].get("count/widgets.example.com") == "0")
    assert (await create_once_admitted(api, "w1")).status == 201
    assert await used(api, "q") == {"count/widgets.example.com": "1", "pods": "0"}
    r = await api.create(WIDGETS, widget("w2"))
    assert r.status == 403
    assert r.json()["message"] == ('widgets.example.com "w2" is forbidden: exceeded quota: q, requested: '
                                   'count/widgets.example.com=1, used: count/widgets.example.com=1, '
                                   'limited: count/widgets.example.com=1')
    assert (await api.request("DELETE", f"{WIDGETS}/w1")).status == 200
    await wait_status(api, "q", lambda st: st["used"]["count/widgets.example.com"] == "0")
    assert (await create_once_admitted(api, "w2")).status == 201
