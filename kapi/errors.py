"""The one exception tree of kapi, and its conversion to ``metav1.Status``.

::

    KapiError
    ├── StorageError            no HTTP knowledge
    │     KeyNotFound, KeyExists, RevisionConflict, RevisionCompacted, RevisionInFuture,
    │     StorageUnavailable (OutcomeUnknown), CorruptObject
    └── StatusError             class attributes ``code`` and ``reason``
          BadRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
          MethodNotAllowed 405, NotAcceptable 406, AlreadyExists 409,
          Conflict 409, Gone 410 (reason Gone or Expired),
          RequestEntityTooLarge 413, UnsupportedMediaType 415, Invalid 422,
          TooManyRequests 429 (Throttled: plain text), InternalError 500, ServiceUnavailable 503,
          ServerTimeout 504

Storage backends raise ``StorageError``; the registry turns those into
``StatusError`` naming the resource; the API layer calls ``to_status()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


class KapiError(Exception):
    """Root of every error kapi raises on purpose."""


# ---------------------------------------------------------------- storage


class AuthenticationError(KapiError):
    """One authenticator's refusal (kube's ``err`` of AuthenticateToken/Request): the credential is its
    kind but bad (expired, wrong audience, unknown key). Never a Status by itself: a request gets 401,
    a TokenReview reports the message in ``status.error``."""


class StorageError(KapiError):
    """A storage backend failed; knows keys and revisions, never HTTP."""

    def __init__(self, message: str = "", *, key: str = "", revision: int = 0) -> None:
        super().__init__(message or self.__class__.__name__)
        self.key = key
        self.revision = revision


class KeyNotFound(StorageError):
    """The key does not exist (at the revision asked for)."""


class KeyExists(StorageError):
    """A create found the key already present."""


class RevisionConflict(StorageError):
    """A compare-and-swap saw another revision than expected.

    ``revision`` is the key's current revision (0 if it no longer exists). ``current`` is the key's
    current ``kapi.storage.base.KeyValue`` as the failed compare read it (etcd's ``Else Get``), or
    ``None`` when the backend did not read it: a retry starts from it instead of reading again
    (kube's GuaranteedUpdate). Typed ``Any`` here: this layer does not import storage.
    """

    def __init__(self, message: str = "", *, key: str = "", revision: int = 0, current: Any = None) -> None:
        super().__init__(message, key=key, revision=revision)
        self.current = current


class RevisionCompacted(StorageError):
    """The revision asked for has been compacted away.

    ``revision`` is the compacted revision.
    """


class RevisionInFuture(StorageError):
    """A read asked for a revision above the store's current one (etcd's "required revision is a future
    revision"); ``revision`` is the one asked for when the backend knows it (else 0)."""


class StorageUnavailable(StorageError):
    """The backend cannot be reached or has been closed."""


class OutcomeUnknown(StorageUnavailable):
    """A write was sent and no answer came (a deadline, or the server gave up waiting for its commit):
    it may or may not have been applied.

    Never retried blindly (a retried create would answer a false ``KeyExists``); kube-apiserver answers
    it 504 Timeout. A ``StorageUnavailable`` for code that does not tell the two apart.
    """


class CorruptObject(StorageError):
    """A stored value kapi cannot serve as an object: not msgpack, not a map, or metadata of the wrong types.

    kube-apiserver's "corrupt object" (a value that fails to transform or decode); ``key`` names it.
    """


# ----------------------------------------------------------------- status


@dataclass(frozen=True, slots=True)
class Cause:
    """One entry of ``details.causes``."""

    reason: str = ""
    message: str = ""
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.field:
            out["field"] = self.field
        return out


class StatusError(KapiError):
    """An error that is answered as a ``metav1.Status``."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        name: str = "",
        group: str = "",
        kind: str = "",
        uid: str = "",
        causes: list[Cause] | tuple[Cause, ...] = (),
        retry_after_s: int = 0,
        reason: str | None = None,
        code: int | None = None,
        list_continue: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.uid = uid
        self.causes = tuple(causes)
        self.retry_after_s = retry_after_s
        self.list_continue = list_continue
        self.headers = dict(headers or {})
        if reason is not None:
            self.reason = reason
        if code is not None:
            self.code = code

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body of this error, fields as kube-apiserver omits them."""
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.uid:
            details["uid"] = self.uid
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after_s:
            details["retryAfterSeconds"] = self.retry_after_s
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {"continue": self.list_continue} if self.list_continue else {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            status["reason"] = self.reason
        if details:
            status["details"] = details
        status["code"] = self.code
        return status


class BadRequest(StatusError):
    code = 400
    reason = "BadRequest"


class Unauthorized(StatusError):
    code = 401
    reason = "Unauthorized"


class Forbidden(StatusError):
    code = 403
    reason = "Forbidden"


class NotFound(StatusError):
    code = 404
    reason = "NotFound"


class MethodNotAllowed(StatusError):
    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(StatusError):
    code = 406
    reason = "NotAcceptable"


class AlreadyExists(StatusError):
    code = 409
    reason = "AlreadyExists"


class Conflict(StatusError):
    code = 409
    reason = "Conflict"


class Gone(StatusError):
    code = 410
    reason = "Expired"


class RequestEntityTooLarge(StatusError):
    code = 413
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(StatusError):
    code = 415
    reason = "UnsupportedMediaType"


class Invalid(StatusError):
    code = 422
    reason = "Invalid"


class TooManyRequests(StatusError):
    code = 429
    reason = "TooManyRequests"


class Throttled(TooManyRequests):
    """kube's tooManyRequests (max-in-flight and API Priority and Fairness refusing a request): 429 with
    ``Retry-After``, answered in plain text (Go's http.Error), not as a Status."""


class InternalError(StatusError):
    code = 500
    reason = "InternalError"


class ServiceUnavailable(StatusError):
    code = 503
    reason = "ServiceUnavailable"


class ServerTimeout(StatusError):
    code = 504
    reason = "Timeout"


def aggregate_messages(errs: Sequence[str]) -> str:
    """Go's utilerrors aggregate ``Error()``: "" for none, one message as it is, several (deduplicated)
    as ``[a, b]``."""
    unique = list(dict.fromkeys(errs))
    if len(unique) <= 1:
        return unique[0] if unique else ""
    return "[" + ", ".join(unique) + "]"


def qualified_resource(resource: str, group: str) -> str:
    """``deployments.apps`` style name used in kube-apiserver messages."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> NotFound:
    return NotFound(
        f'{qualified_resource(resource, group)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def already_exists(resource: str, group: str, name: str) -> AlreadyExists:
    return AlreadyExists(
        f'{qualified_resource(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, group: str, name: str, detail: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {qualified_resource(resource, group)} "{name}": {detail}',
        name=name,
        group=group,
        kind=resource,
    )


OPTIMISTIC_LOCK_MSG = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> Invalid:
    """422 Invalid in kube-apiserver's form: ``Kind "name" is invalid: [field: msg, ...]``."""
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return Invalid(
        f'{qualified} "{name}" is invalid: {joined}',
        name=name,
        group=group,
        kind=kind,
        causes=causes,
    )


def too_large_resource_version(rv: int, current: int, *, retry_after_s: int) -> ServerTimeout:
    """504 for a resourceVersion newer than the store (or the watch cache) has (kube's
    storage.NewTooLargeResourceVersionError, cause ResourceVersionTooLarge)."""
    return ServerTimeout(
        f"Timeout: Too large resource version: {rv}, current: {current}",
        causes=[Cause(reason="ResourceVersionTooLarge", message="Too large resource version")],
        retry_after_s=retry_after_s,
    )


def apply_conflict(causes: Sequence[Cause], message: str) -> Conflict:
    """409 of a server-side apply's conflicts (kube's NewApplyConflict): details carry only the causes."""
    return Conflict(message, causes=tuple(causes))
