"""One webhook call: the AdmissionReview sent, the answer checked, and kube's errors.

kube's ``webhook/request`` (CreateAdmissionObjects, VerifyAdmissionResponse), ``webhook/errors``
(ToStatusErr, the dry-run refusal) and ``util/webhook`` (ErrCallingWebhook, ErrWebhookRejection).
A call that fails (unreachable, timed out, a non-2xx answer, an answer that is no valid review)
is a ``CallingError``: the webhook's failurePolicy decides (Fail: 500 ``failed calling webhook``;
Ignore: the request goes on). A refusal by the webhook is a ``Rejection`` carrying the webhook's
status (its code, at least 400, and ``admission webhook "<name>" denied the request: <message>``).
"""

from __future__ import annotations

import base64
import binascii
import errno
import ssl
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
import trio

from kapi import errors
from kapi.admission.plugin import Attributes
from kapi.admission.review import admission_request
from kapi.admission.webhook.source import CallTargetError, ClientError, Hook, HookSource
from kapi.object.validation.fields import go_quote
from kapi.registry.resources import Resource

Obj = dict[str, Any]
REVIEW_GROUP = "admission.k8s.io"


class CallingError(Exception):
    """kube's ErrCallingWebhook: ``failed calling webhook "<name>": <reason>``; ``status`` the
    error kube keeps for metrics (its code)."""

    def __init__(self, webhook: str, reason: str, status: errors.StatusError | None = None) -> None:
        super().__init__(f"failed calling webhook {go_quote(webhook)}: {reason}")
        self.webhook = webhook
        self.reason = reason
        self.status = status or errors.ServiceUnavailable("error calling webhook")


class Rejection(Exception):
    """kube's ErrWebhookRejection: the webhook answered allowed: false."""

    def __init__(self, status: errors.StatusError) -> None:
        super().__init__(status.message)
        self.status = status


def internal_error(text: str) -> errors.InternalError:
    """kube's ``apierrors.NewInternalError(err)``."""
    return errors.InternalError(f"Internal error occurred: {text}", causes=[errors.Cause(message=text)])


def dry_run_unsupported(webhook: str) -> errors.BadRequest:
    """kube's NewDryRunUnsupportedErr."""
    return errors.BadRequest(f"admission webhook {go_quote(webhook)} does not support dry run")


def check_dry_run(hook: Hook, a: Attributes) -> None:
    """A dry-run request goes only to webhooks without side effects (None or NoneOnDryRun)."""
    if not a.dry_run:
        return
    effects = hook.side_effects
    if effects is None:
        raise CallingError(hook.name, "Webhook SideEffects is nil", errors.BadRequest("Webhook SideEffects is nil"))
    if effects not in ("None", "NoneOnDryRun"):
        raise dry_run_unsupported(hook.name)


def to_status_error(webhook: str, result: Any) -> errors.StatusError:
    """kube's ToStatusErr: the webhook's status with a code of at least 400 and its message prefixed."""
    result = result if isinstance(result, dict) else {}
    denied = f"admission webhook {go_quote(webhook)} denied the request"
    code = result.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    message, reason = result.get("message"), result.get("reason")
    if isinstance(message, str) and message:
        text = f"{denied}: {message}"
    elif isinstance(reason, str) and reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else {}
    causes = [errors.Cause(reason=str(c.get("reason") or ""), message=str(c.get("message") or ""),
                           field=str(c.get("field") or ""))
              for c in details.get("causes") or [] if isinstance(c, dict)]
    retry = details.get("retryAfterSeconds")
    return errors.StatusError(text, code=code, reason=reason if isinstance(reason, str) else "",
                              name=str(details.get("name") or ""), group=str(details.get("group") or ""),
                              kind=str(details.get("kind") or ""), uid=str(details.get("uid") or ""),
                              causes=causes, retry_after_s=retry if isinstance(retry, int) else 0)


@dataclass
class Answer:
    """A verified response (kube's webhookrequest.AdmissionResponse)."""

    allowed: bool
    patch: bytes
    patch_type: str
    result: Any
    warnings: list[str]
    audit_annotations: dict[str, str]


def review_version(hook: Hook) -> str:
    for v in hook.review_versions:
        if v in ("v1", "v1beta1"):
            return v
    raise CallingError(hook.name, "could not create admission objects: webhook does not accept known "
                                  "AdmissionReview versions (v1, v1beta1)",
                       errors.BadRequest("error creating admission objects"))


def review(a: Attributes, uid: str, version: str, matched: Resource, matched_kind: tuple[str, str, str],
           obj: Obj | None, old: Obj | None) -> Obj:
    """The AdmissionReview of a call (kube's CreateV1AdmissionReview / CreateV1beta1AdmissionReview)."""
    request = admission_request(a, uid, matched=matched, matched_kind=matched_kind, objects=False)
    if not request.get("name"):
        request.pop("name", None)  # omitempty
    if (a.group, a.plural) == ("", "namespaces") and a.name and not a.namespace and a.operation != "CREATE":
        request["namespace"] = a.name  # kube's request info: /api/v1/namespaces/<name> is in namespace <name>
    if a.operation == "CONNECT" and not a.options:
        request["options"] = None
    request["object"] = obj
    request["oldObject"] = old
    return {"kind": "AdmissionReview", "apiVersion": f"{REVIEW_GROUP}/{version}", "request": request}


def _gvk_text(api_version: Any, kind: Any) -> str:
    """schema.GroupVersionKind.String(): ``admission.k8s.io/v1, Kind=AdmissionReview``."""
    av = str(api_version or "")
    group, _, version = av.rpartition("/") if "/" in av else ("", "", av)
    return f"{group}/{version}, Kind={kind or ''}"


def verify(uid: str, mutating: bool, version: str, doc: Any) -> Answer:
    """kube's VerifyAdmissionResponse; raises ValueError with kube's reason."""
    response = doc.get("response") if isinstance(doc, dict) else None
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    patch_b64 = response.get("patch")
    patch = b""
    if patch_b64 not in (None, ""):
        if not isinstance(patch_b64, str):
            raise ValueError("json: cannot unmarshal patch into Go struct field AdmissionResponse.response.patch "
                             "of type []uint8")
        try:
            patch = base64.b64decode(patch_b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"illegal base64 data in response.patch: {exc}") from None
    patch_type = response.get("patchType")
    if version == "v1":
        got_uid = response.get("uid")
        if got_uid != uid:
            raise ValueError(f"expected response.uid={go_quote(uid)}, got {go_quote(str(got_uid or ''))}")
        if doc.get("apiVersion") != f"{REVIEW_GROUP}/v1" or doc.get("kind") != "AdmissionReview":
            raise ValueError(f"expected webhook response of {REVIEW_GROUP}/v1, Kind=AdmissionReview, got "
                             f"{_gvk_text(doc.get('apiVersion'), doc.get('kind'))}")
        if mutating:
            if patch and patch_type is None:
                raise ValueError("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise ValueError("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise ValueError('webhook returned invalid response.patchType of ""')
        else:
            if patch:
                raise ValueError("validating webhook may not return response.patch")
            if patch_type is not None:
                raise ValueError("validating webhook may not return response.patchType")
        ptype = str(patch_type or "")
    else:  # v1beta1: uid, kind and patchType were never checked
        if not mutating:
            patch = b""
        ptype = "JSONPatch" if patch else ""
    annotations = response.get("auditAnnotations")
    warnings = response.get("warnings")
    return Answer(allowed=response.get("allowed") is True, patch=patch if mutating else b"", patch_type=ptype,
                  result=response.get("status"),
                  warnings=[str(w) for w in warnings] if isinstance(warnings, list) else [],
                  audit_annotations={str(k): str(v) for k, v in annotations.items()}
                  if isinstance(annotations, dict) else {})


def _find(exc: BaseException, depth: int = 0) -> BaseException | None:
    """The socket or TLS error under an HTTP client's error (through causes, contexts and groups)."""
    if depth > 8:
        return None
    if isinstance(exc, ssl.SSLCertVerificationError):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            found = _find(sub, depth + 1)
            if found is not None:
                return found
    for nxt in (exc.__cause__, exc.__context__):
        if nxt is not None:
            found = _find(nxt, depth + 1)
            if found is not None:
                return found
    return None


def _host_port(url: str) -> str:
    rest = url.split("://", 1)[-1]
    hostport = rest.split("/", 1)[0].split("?", 1)[0]
    if ":" not in hostport.rsplit("]", 1)[-1]:
        hostport += ":443" if url.startswith("https") else ":80"
    return hostport


def describe_failure(exc: BaseException, shown: str, url: str) -> str:
    """What Go's client says of a failed POST: ``Post "<url>": dial tcp <addr>: connect: connection
    refused``, ``tls: failed to verify certificate: x509: ...``, else the client's own text."""
    found = _find(exc)
    if isinstance(found, ssl.SSLCertVerificationError):
        why = found.verify_message or str(found)
        if any(t in why.lower() for t in ("self-signed", "self signed", "unable to get local issuer", "unknown ca",
                                          "signature failure")):
            why = "x509: certificate signed by unknown authority"
        elif "Hostname mismatch" in why or "IP address mismatch" in why:
            why = f"x509: certificate is not valid for {_host_port(url).rsplit(':', 1)[0]}"
        else:
            why = f"x509: {why}"
        return f'Post "{shown}": tls: failed to verify certificate: {why}'
    if isinstance(found, OSError):
        what = {errno.ECONNREFUSED: "connection refused", errno.EHOSTUNREACH: "no route to host",
                errno.ENETUNREACH: "network is unreachable"}[found.errno]
        return f'Post "{shown}": dial tcp {_host_port(url)}: connect: {what}'
    text = str(exc)
    if shown != url:
        text = text.replace(f'"{url}"', f'"{shown}"')
    return text


async def post(source: HookSource, hook: Hook, body: Obj) -> Any:
    """POST the review to the webhook within its timeoutSeconds; its decoded answer. Raises
    CallingError for anything that keeps the webhook from answering."""
    try:
        target = await source.target(hook)
        client = source.client(hook, target)
    except CallTargetError as exc:
        raise CallingError(hook.name, f"failed to call webhook: {exc}") from exc
    except ClientError as exc:
        raise CallingError(hook.name, str(exc), internal_error(str(exc))) from exc
    with trio.move_on_after(hook.timeout_s) as scope:
        try:
            return await client.post_once(body)
        except Exception as exc:  # the client's WebhookError, its transport's errors
            code = getattr(exc, "code", 0)
            status: errors.StatusError | None = None
            if code:
                status = errors.StatusError(str(exc), code=code, reason="")
            raise CallingError(hook.name, f"failed to call webhook: {describe_failure(exc, target.shown, target.url)}",
                               status) from exc
    assert scope.cancelled_caught
    raise CallingError(hook.name, f'failed to call webhook: Post "{target.shown}": context deadline exceeded',
                       errors.ServerTimeout("context deadline exceeded"))


async def call(source: HookSource, hook: Hook, a: Attributes, matched: Resource, kind: tuple[str, str, str],
               obj: Obj | None, old: Obj | None, *, mutating: bool) -> Answer:
    """One call of ``hook`` for ``a`` (matched at ``matched`` as ``kind``, with the objects at that
    version): the answer, its audit annotations and warnings recorded. Raises CallingError,
    Rejection, or the dry-run refusal."""
    check_dry_run(hook, a)
    version = review_version(hook)
    uid = str(uuid.uuid4())
    body = review(a, uid, version, matched, kind, obj, old)
    doc = await post(source, hook, body)
    try:
        answer = verify(uid, mutating, version, doc)
    except ValueError as exc:
        raise CallingError(hook.name, f"received invalid webhook response: {exc}",
                           errors.ServiceUnavailable("error validating webhook response")) from None
    for key, value in answer.audit_annotations.items():
        a.annotate(f"{hook.name}/{key}", value)
    for text in answer.warnings:
        a.warn(text)
    if not answer.allowed:
        raise Rejection(to_status_error(hook.name, answer.result))
    return answer


def decode_patch(hook: Hook, answer: Answer) -> list[Any]:
    """The JSON patch of a mutating answer (kube's jsonpatch.DecodePatch)."""
    try:
        ops = orjson.loads(answer.patch)
    except orjson.JSONDecodeError as exc:
        raise CallingError(hook.name, f"received undecodable patch in webhook response: {exc}",
                           errors.ServiceUnavailable("error decoding patch in webhook response")) from None
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        shape = "object" if isinstance(ops, dict) else "value"
        raise CallingError(hook.name, f"received undecodable patch in webhook response: json: cannot unmarshal "
                                      f"{shape} into Go value of type jsonpatch.Patch",
                           errors.ServiceUnavailable("error decoding patch in webhook response"))
    return ops


def go_json(value: Any) -> str:
    """Go's json.Marshal of a value built in Go's field order: compact, <, > and & escaped."""
    text = orjson.dumps(value).decode()
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
