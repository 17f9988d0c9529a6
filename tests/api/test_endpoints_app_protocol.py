"""An Endpoints port's appProtocol that is no qualified name is refused through the API, as kube-apiserver's
validateEndpointPort refuses it."""

from __future__ import annotations

from .conftest import Api

EPS = "/api/v1/namespaces/default/endpoints"
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


async def test_endpoints_app_protocol_is_422_on_create_and_update(api: Api) -> None:
    port = {"port": 80, "appProtocol": "web socket"}
    body = {"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.0.0.7"}], "ports": [port]}]}
    r = await api.create(EPS, body)
    assert r.status == 422
    status = r.json()
    assert status["message"] == ('Endpoints "web" is invalid: subsets[0].ports[0].appProtocol: Invalid value: '
                                 f'"web socket": {NAME_PART}')
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "subsets[0].ports[0].appProtocol",
                                            "message": f'Invalid value: "web socket": {NAME_PART}'}]
    port["appProtocol"] = "kubernetes.io/ws"
    assert (await api.create(EPS, body)).status == 201
    port["appProtocol"] = ""
    r = await api.request("PUT", f"{EPS}/web", body)
    assert r.status == 422
    assert [c["message"] for c in r.json()["details"]["causes"]] == [
        'Invalid value: "": name part must be non-empty', f'Invalid value: "": {NAME_PART}']
