"""kopf's examples/17-admission, run by tests/e2e/test_admission_e2e.py with ``kopf run --standalone``
against a real ``kapi serve``.

The handlers are the example's: ``authhook`` (warnings naming the caller's User-Agent and TLS
peer), ``validate1`` (refuses ``spec.field: wrong`` unless dry-run), ``validate2`` (refuses
``spec.field: not-allowed`` with code 555), ``mutate1`` (``spec.injected = 123`` on objects
labelled ``somelabel: somevalue``). kopf serves them itself (``kopf.WebhookServer`` on
127.0.0.1 over HTTPS) and manages the webhook configurations ``auto.kopf.dev``. The example
picks ``WebhookAutoServer``, which generates its certificate with a library the test
environment lacks; here the certificate, its key and the CA come from the test (the
KOPF_WEBHOOK_CERT, KOPF_WEBHOOK_KEY and KOPF_WEBHOOK_CA environment variables), the
example's "provided certificate" variant.
"""

from __future__ import annotations

import os
from typing import Any

import kopf


@kopf.on.startup()
def config(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.watching.client_timeout = 40
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1", host="127.0.0.1", certfile=os.environ["KOPF_WEBHOOK_CERT"],
        pkeyfile=os.environ["KOPF_WEBHOOK_KEY"], cafile=os.environ["KOPF_WEBHOOK_CA"])
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("kex")
def authhook(headers: kopf.Headers, sslpeer: kopf.SSLPeer, warnings: list[str], **_: Any) -> None:
    user_agent = headers.get("User-Agent", "(unidentified)")
    warnings.append(f"Accessing as user-agent: {user_agent}")
    if not sslpeer.get("subject"):
        warnings.append("SSL peer is not identified.")
    else:
        common_names = [val for key, val in sslpeer["subject"][0] if key == "commonName"]
        if common_names:
            warnings.append(f"SSL peer is {common_names[0]}.")
        else:
            warnings.append("SSL peer's common name is absent.")


@kopf.on.validate("kex")
def validate1(spec: Any, dryrun: bool, **_: Any) -> None:
    if not dryrun and spec.get("field") == "wrong":
        raise kopf.AdmissionError("Meh! I don't like it. Change the field.")


@kopf.on.validate("kex", field="spec.field", value="not-allowed")
def validate2(**_: Any) -> None:
    raise kopf.AdmissionError("I'm too lazy anyway. Go away!", code=555)


@kopf.on.mutate("kex", labels={"somelabel": "somevalue"})
def mutate1(patch: kopf.Patch, **_: Any) -> None:
    patch.spec["injected"] = 123
