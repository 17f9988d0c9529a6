"""Issue 30: an Endpoints of a loopback address is refused through the API, as kube-apiserver refuses it."""

from __future__ import annotations

from .conftest import Api

EPS = "/api/v1/namespaces/default/endpoints"


async def test_loopback_endpoints_are_422_on_create_and_update(api: Api) -> None:
    body = {"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}]}]}
    r = await api.create(EPS, body)
    assert r.status == 422
    status = r.json()
    assert status["message"] == ('Endpoints "web" is invalid: subsets[0].addresses[0].ip: Invalid value: '
                                 '"127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)')
    assert status["details"] == {"name": "web", "kind": "Endpoints", "causes": [{
        "reason": "FieldValueInvalid", "field": "subsets[0].addresses[0].ip",
        "message": 'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'}]}
    body["subsets"][0]["addresses"] = [{"ip": "10.0.0.7"}]  # type: ignore[index]
    assert (await api.create(EPS, body)).status == 201
    body["subsets"][0]["addresses"] = [{"ip": "169.254.169.254"}]  # type: ignore[index]
    r = await api.request("PUT", f"{EPS}/web", body)
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["message"] == (
        'Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)')
