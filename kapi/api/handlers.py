"""One coroutine per verb: decode the request, call the registry, write the response; ``VERBS`` routes to them."""

from __future__ import annotations

import random
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator

import orjson
import trio

from kapi import errors
from kapi.encoding import listitems, protobuf
from kapi.object import typed
from kapi._fast import list_body
from kapi.admission.chain import AdmissionChain, RequestAdmission
from kapi.chain.access import ServerAccess
from kapi.chain.authn import Authenticator
from kapi.chain.authz import Authorizer
from kapi.chain.context import RequestContext, RequestInfo, query_values
from kapi.object.access import Attributes
from kapi.object.listopts import ListOptions, parse_list_options, query_bool, query_int64
from kapi.object.managedfields.entries import manager_name
from kapi.object.patch import PatchTarget, patcher_for
from kapi.registry.resources import SUBRESOURCE_VERBS, Resource, ResourceTable
from kapi.registry.deletion import DeleteOptions
from kapi.registry.listing import Page
from kapi.registry.admit import CREATE, AdmissionRequest
from kapi.registry.store import Registry, WriteOptions
from kapi.object.schema import Schema, prune_unknown_fields, unknown_fields
from kapi.object.validation import field_invalid
from kapi.object.validation.fields import go_quote
from kapi.api import negotiate
from kapi.api.negotiate import JSON, PROTOBUF, YAML, Output
from kapi.api.responses import Response, object_response, success_status
from kapi.encoding.tables import build_object_table, build_table

Obj = dict[str, Any]
_FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
_SCALE = ("autoscaling", "v1", "Scale")
# The kinds a subresource's body is, where it is not the parent's kind.
_BODY_KINDS = {"Scale": _SCALE, "TokenRequest": ("authentication.k8s.io", "v1", "TokenRequest")}
# A create of a subresource (serviceaccounts/token, kube's NamedCreater):
# (namespace, name, body, warnings, annotate(key, value) for audit) -> answer.
NamedCreate = Callable[[str, str, Obj, list[str], Callable[[str, str], None]], Awaitable[Obj]]
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
_NO_SMP = ("the body of the request was in an unknown format - accepted media types include: "
           "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
_APPLY = "application/apply-patch+yaml"
LIST_CHUNK_BYTES = 1 << 20  # a list body is sent in chunks of about a megabyte


@dataclass
class Handlers:
    """The verb handlers, bound to the registry and schema a server built."""

    registry: Registry
    table: ResourceTable
    schema: Schema
    authorizer: Authorizer = field(default_factory=Authorizer)
    authenticator: Authenticator = field(default_factory=Authenticator)
    min_request_timeout_s: float = 1800.0
    max_body_bytes: int = 3 * 1024 * 1024  # also bounds what a JSON patch's copies may add, as kube's
    # Subresources answered by a create of their own, by (group, resource, subresource): the server's
    # storage map for them (serviceaccounts/token: the service-account token issuer).
    named_creates: dict[tuple[str, str, str], NamedCreate] = field(default_factory=dict)
    # The admission plugins every write passes (None: none, as with every plugin disabled)
    admission: AdmissionChain | None = None

    def __post_init__(self) -> None:
        self.access = ServerAccess(self.authorizer, self.authenticator)  # what the reviews' strategies judge with

    # ------------------------------------------------------------ routing

    def resource_for(self, info: RequestInfo) -> Resource:
        res = self.table.get(info.group, info.version, info.resource)
        if res is None:
            raise errors.NotFound("the server could not find the requested resource")
        if info.subresource and info.subresource not in res.subresources:
            raise errors.NotFound("the server could not find the requested resource")
        if info.namespace and not res.namespaced:
            raise errors.NotFound("the server could not find the requested resource")
        return res

    def _out(self, ctx: RequestContext, res: Resource, **kw: Any) -> Output:
        """The response representation, protobuf included for kinds that have one."""
        return negotiate.choose_output(ctx.header("accept"), protobuf=protobuf.supports(
            self.schema, (res.group, res.version, res.kind)), **kw)

    def _respond(self, obj: Obj, out: Output, status: int = 200) -> Response:
        if out.media_type == PROTOBUF:
            if obj.get("kind") == "Status":
                return Response(status, protobuf.encode_status(obj), PROTOBUF)
            return Response(status, protobuf.encode_object(self.schema, obj), PROTOBUF)
        return object_response(obj, out, status)

    async def handle(self, ctx: RequestContext) -> Response:
        info = ctx.info
        res = self.resource_for(info)
        verb = info.verb
        if ctx.method not in _HTTP_METHODS or verb == "watch" and ctx.method != "GET":
            # Only these routes exist: a method named after a verb ("DELETECOLLECTION", "LIST")
            # must not reach the verb's handler, and a /watch/ path (authorized as a watch
            # whatever the method) is served for GET only.
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        allowed = res.verbs if not info.subresource else SUBRESOURCE_VERBS.get(info.subresource,
                                                                               ("get", "patch", "update"))
        route = VERBS.get(verb)
        if verb == "create" and info.subresource:
            route = _CREATE_SUBRESOURCE  # POST .../NAME/token names its object
        if route is None or route.named is not None and route.named != bool(info.name) \
                or verb not in allowed and not (verb == "watch" and "watch" in res.verbs):
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        # The body is read here, after the whole chain (authorized) and the route checks: a client
        # refused on the way never has its body read.
        await ctx.read_body()
        if res.warning:  # a deprecated version (a CRD's deprecationWarning)
            ctx.warnings.insert(0, res.warning)
        resp: Response = await route.serve(self, ctx, res)
        return resp  # the app adds ctx.warnings as Warning headers, to refusals too (an admission's)

    # --------------------------------------------------------------- read

    async def get(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        out = self._out(ctx, res, include_object=ctx.query.get("includeObject", ""))
        if info.subresource == "scale":
            return self._respond(await self.registry.get_scale(res, info.namespace, info.name), out)
        obj = await self.registry.get(res, info.namespace, info.name, ctx.query.get("resourceVersion", ""))
        if out.as_kind == "Table":
            table = build_object_table(res.strategy.printer, obj, time.time(),
                                       include_object=out.include_object, table_version=out.as_version)
            return self._respond(table, out)
        if out.as_kind == "PartialObjectMetadata":
            return self._respond(_partial(obj, out.as_version), out)
        return self._respond(obj, out)

    async def list(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        opts = parse_list_options(ctx.query)
        out = self._out(ctx, res, include_object=ctx.query.get("includeObject", ""))
        page = await self.registry.list(res, info.namespace, opts)
        warning = cost_warning(res, opts, page)
        if warning:
            ctx.warnings.append(warning)
        list_meta: Obj = {"resourceVersion": str(page.revision)}
        if page.continue_token:
            list_meta["continue"] = page.continue_token
        if page.remaining:
            list_meta["remainingItemCount"] = page.remaining
        if out.as_kind == "Table":
            objs = listitems.objects(page.items)
            if out.include_object == "Object":
                # kube converts each row's object to the served version, which sets its kind and apiVersion.
                objs = [{"kind": res.kind, "apiVersion": res.group_version, **o} for o in objs]
            table = build_table(res.strategy.printer, objs, time.time(),
                                include_object=out.include_object, list_meta=list_meta,
                                table_version=out.as_version)
            return self._respond(table, out)
        if out.as_kind in ("PartialObjectMetadataList", "PartialObjectMetadata"):
            body = {"kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{out.as_version}",
                    "metadata": list_meta, "items": [_partial(o, out.as_version) for o in listitems.objects(page.items)]}
            return self._respond(body, out)
        if out.media_type == YAML:
            return self._respond({"kind": res.list_kind, "apiVersion": res.group_version,
                                    "metadata": list_meta, "items": _list_items(res, listitems.objects(page.items))}, out)
        if out.media_type == PROTOBUF:
            length, chunks = protobuf.encode_list_sized(
                self.schema, (res.group, res.version, res.list_kind), list_meta,
                self.registry.protobuf_items(res, page), chunk_bytes=LIST_CHUNK_BYTES)
            return Response(200, b"", PROTOBUF, stream=_chunks(chunks), length=length)
        encoded = [entry.data for entry in page.items]
        return self._list_json(res, encoded, list_meta)

    @staticmethod
    def _list_json(res: Resource, encoded: list[bytes], list_meta: Obj) -> Response:
        """The list body streamed from the items' JSON, about a megabyte a chunk (no second copy).

    Its size is known before the first byte, so it goes out with a Content-Length:
    no chunked framing, whose chunk headers would cost the server one more copy of the body.
    """
        if res.strategy.typed_list_items:
            prefix = listitems.type_prefix(res.kind, res.group_version)
            encoded = [listitems.typed(prefix, item) for item in encoded]
        head = b'{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[' % (
            res.list_kind.encode(), res.group_version.encode(), orjson.dumps(list_meta))
        length, chunks = list_body(head, encoded, b"]}", LIST_CHUNK_BYTES)
        return Response(200, b"", JSON, stream=_chunks(chunks), length=length)

    def _list_body(self, res: Resource, items: list[Obj], list_meta: Obj, out: Output) -> Response:
        """A list of decoded objects (deletecollection's answer) in the negotiated form."""
        if out.media_type == YAML:
            return object_response({"kind": res.list_kind, "apiVersion": res.group_version,
                                    "metadata": list_meta, "items": _list_items(res, items)}, out)
        if out.media_type == PROTOBUF:
            gvk = (res.group, res.version, res.kind)
            chunks = protobuf.encode_list(self.schema, (res.group, res.version, res.list_kind), list_meta,
                                          [protobuf.encode(self.schema, gvk, o) for o in items])
            return Response(200, b"", PROTOBUF, stream=_chunks(chunks))
        return self._list_json(res, [orjson.dumps(_untyped(o)) for o in items], list_meta)

    # -------------------------------------------------------------- write

    def _write_options(self, ctx: RequestContext, kind: str = "CreateOptions",
                       first: list[errors.Cause] | None = None) -> WriteOptions:
        """The write's options from the query, checked as kube's Validate{Create,Update,Patch}Options: a
        422 on ``kind`` naming every bad one (``first``: the causes a patch finds before these)."""
        q = ctx.query
        causes = list(first or ())
        manager = q.get("fieldManager", "")
        if len(manager.encode("utf-8", "surrogatepass")) > 128:
            causes.append(errors.Cause("FieldValueTooLong", "Too long: may not be more than 128 bytes",
                                       "fieldManager"))
        for i, ch in _runes(manager):
            if not ch.isprintable():
                causes.append(errors.Cause("FieldValueInvalid", f"Invalid value: {go_quote(manager)}: invalid "
                                           f"character U+{ord(ch):04X} (at position {i})", "fieldManager"))
        dry = _dry_run_values(ctx)
        if any(d != "All" for d in dry):
            values = ", ".join(go_quote(d) for d in dry)
            causes.append(errors.Cause("FieldValueNotSupported", f'Unsupported value: []string{{{values}}}: '
                                       'supported values: "All"', "dryRun"))
        mode = q.get("fieldValidation", "")
        if mode not in ("", *_FIELD_VALIDATION):
            causes.append(errors.Cause("FieldValueNotSupported", f'Unsupported value: {go_quote(mode)}: '
                                       'supported values: "", "Ignore", "Strict", "Warn"', "fieldValidation"))
        if causes:
            raise errors.invalid(kind, "meta.k8s.io", "", causes)
        return WriteOptions(dry_run=bool(dry), field_manager=manager_name(manager, ctx.header("user-agent")),
                            requester=ctx.user, access=self.access, admission=self._admission(ctx))

    def _admission(self, ctx: RequestContext, delete_options: Obj | None = None) -> RequestAdmission | None:
        """The request's admission: the server's plugins bound to its user, warnings and audit annotations."""
        if self.admission is None:
            return None
        # A DELETE's options are its DeleteOptions alone: with a body, the query's dryRun is not one of them.
        query = ctx.query if delete_options is None else {}
        return self.admission.bind(ctx.user, ctx.warnings, ctx.annotate, query, delete_options)

    async def _admit_create(self, ctx: RequestContext, res: Resource, obj: Obj, subresource: str = "",
                            kind: tuple[str, str, str] = ("", "", "")) -> Obj:
        """Admission of a create the registry does not store (a review, a TokenRequest): mutating then
        validating, on the object as decoded."""
        admission = self._admission(ctx)
        if admission is None:
            return obj
        req = AdmissionRequest(CREATE, res, subresource, ctx.info.namespace, ctx.info.name or str(
            (obj.get("metadata") or {}).get("name") or ""), obj, None, bool(_dry_run_values(ctx)), kind)
        await admission.mutate(req)
        if not isinstance(req.obj, dict):
            raise errors.InternalError("admission produced no object")
        await admission.validate(req)
        return req.obj

    def _decode_object(self, ctx: RequestContext, res: Resource, *, kind: str = "") -> Obj:
        media = negotiate.body_media_type(ctx.header("content-type"), protobuf=protobuf.supports(
            self.schema, (res.group, res.version, res.kind)))
        if not ctx.body.strip():
            raise errors.BadRequest("Object 'Kind' is missing in ''")
        if media == PROTOBUF:
            # Protobuf has no unknown fields to validate: the decoder drops them, as kube-apiserver's does.
            # Its values are typed by the wire; only nesting (recursive messages, raw JSON) needs a bound.
            try:
                obj = protobuf.drop_go_zero_values(self.schema, protobuf.decode_object(self.schema, ctx.body))
            except RecursionError:
                raise errors.BadRequest("protobuf: the object is nested too deeply") from None
            typed.check_depth(obj)
            return obj
        if media == YAML:
            obj = typed.load_yaml(ctx.body)  # JSON-compatible values only, depth and aliases bounded
        else:
            try:
                obj = typed.load_json(ctx.body)
            except orjson.JSONDecodeError as exc:
                raise errors.BadRequest(f"couldn't get version/kind; json parse error: {exc}") from None
        if obj is None:
            raise errors.BadRequest(f"Object 'Kind' is missing in '{ctx.body.decode(errors='replace').strip()}'")
        if not isinstance(obj, dict):
            raise errors.BadRequest(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                                    f"{typed.json_kind(obj)} into Go value of type struct {{ APIVersion string "
                                    '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')
        for key in ("apiVersion", "kind"):  # read first, into a struct of two strings
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise errors.BadRequest(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                                        f"{typed.json_kind(obj[key])} into Go struct field .{key} of type string")
        # Decoding is validation: Go's decoder refuses a wrong JSON type before anything reads the object.
        group, version, kind_name = _BODY_KINDS.get(kind, (res.group, res.version, res.kind))
        body_kind = obj.get("kind") if isinstance(obj.get("kind"), str) and obj.get("kind") else kind_name
        api_version = obj.get("apiVersion")
        body_version = api_version.rpartition("/")[2] if isinstance(api_version, str) and api_version else version
        typed.check(self.schema, self.schema.type_for(group, version, kind_name), obj,
                    prefix=f'{body_kind} in version "{body_version}" cannot be handled as a {kind_name}: ')
        return self._validate_fields(ctx, res, obj, kind=kind)

    @staticmethod
    def _field_validation(ctx: RequestContext) -> str:
        """The request's fieldValidation directive, Warn when absent (``_write_options`` checked it)."""
        return ctx.query.get("fieldValidation") or "Warn"

    def _validate_fields(self, ctx: RequestContext, res: Resource, obj: Obj, *, kind: str = "") -> Obj:
        """fieldValidation: Strict rejects unknown fields, Warn warns, and both Warn and Ignore drop them."""
        mode = self._field_validation(ctx)
        own = None if kind else res.strategy.unknown_fields(obj)  # a custom resource's schema answers
        group, version, kind = _BODY_KINDS.get(kind, (res.group, res.version, res.kind))
        unknown = own if own is not None else unknown_fields(self.schema, (group, version, kind), obj)
        if not unknown:
            return obj
        if mode == "Strict":
            raise errors.BadRequest("strict decoding error: " + ", ".join(
                f'unknown field "{p}"' for p in unknown))
        if mode == "Warn":
            ctx.warnings.extend(f'unknown field "{p}"' for p in unknown)
        if own is not None:
            return obj  # the strategy dropped them
        return prune_unknown_fields(self.schema, (group, version, kind), obj)

    async def create(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        opts = self._write_options(ctx)
        out = self._out(ctx, res)
        obj = self._decode_object(ctx, res)
        if res.virtual:
            obj = await self._admit_create(ctx, res, obj)
            return self._respond(await self._review(ctx, res, obj), out, status=201)
        created = await self.registry.create(res, info.namespace, obj, opts)
        return self._respond(created, out, status=201)

    async def create_subresource(self, ctx: RequestContext, res: Resource) -> Response:
        """POST of a subresource that answers a create (a TokenRequest), by the server's named create of it."""
        info = ctx.info
        create = self.named_creates.get((res.group, res.resource, info.subresource))
        if create is None:
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        self._write_options(ctx)  # the same checks of the query as any create
        out = self._out(ctx, res)
        body_kind = _SUBRESOURCE_BODIES.get(info.subresource, res.kind)
        obj = self._decode_object(ctx, res, kind=body_kind)
        group, version, _ = _BODY_KINDS.get(body_kind, (res.group, res.version, res.kind))
        obj = await self._admit_create(ctx, res, obj, info.subresource, (group, version, body_kind))
        return self._respond(await create(info.namespace, info.name, obj, ctx.warnings, ctx.annotate), out,
                             status=201)

    async def _review(self, ctx: RequestContext, res: Resource, obj: Obj) -> Obj:
        """Answer a review (a virtual resource's create) by its strategy, from the requester and the authorizer."""
        review = {"kind": res.kind, "apiVersion": res.group_version,
                  "metadata": {"creationTimestamp": None, **(obj.get("metadata") or {})},
                  **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "metadata", "status")}}
        # kube's EnsureObjectNamespaceMatchesRequestNamespace: a namespaced review takes the URL's namespace
        # (another one is a 400), a cluster-scoped one has none.
        md = review["metadata"]
        if not res.namespaced:
            md.pop("namespace", None)
        elif md.get("namespace") and md["namespace"] != ctx.info.namespace:
            raise errors.BadRequest("the namespace of the provided object does not match the namespace "
                                    "sent on the request")
        else:
            md["namespace"] = ctx.info.namespace
        return await res.strategy.answer(review, ctx.user, self.access)

    async def update(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        opts = self._write_options(ctx, "UpdateOptions")
        out = self._out(ctx, res)
        if info.subresource == "scale":
            scale = self._decode_object(ctx, res, kind="Scale")
            updated = await self.registry.update_scale(res, info.namespace, info.name, lambda _: scale, opts)
            return self._respond(updated, out)
        obj = self._decode_object(ctx, res)
        result, created = await self.registry.update(res, info.namespace, info.name, obj, opts, info.subresource)
        return self._respond(result, out, status=201 if created else 200)

    async def patch(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        media = ctx.header("content-type").split(";", 1)[0].strip().lower()
        force = ctx.query.get("force")
        if media == _APPLY:
            return await self._apply(ctx, res)
        forbidden = [errors.Cause("FieldValueForbidden", "Forbidden: may not be specified for non-apply patch",
                                  "force")] if force is not None else []
        opts = self._write_options(ctx, "PatchOptions", forbidden)
        out = self._out(ctx, res)
        if not res.strategy.strategic_merge_patch and media == "application/strategic-merge-patch+json":
            raise errors.UnsupportedMediaType(_NO_SMP)  # kube: custom resources have no patch strategy
        patcher = patcher_for(ctx.header("content-type"))
        try:
            patch = typed.load_json(ctx.body) if ctx.body.strip() else None
        except orjson.JSONDecodeError as exc:
            raise errors.BadRequest(f"error decoding patch: {exc}") from None
        if patch is None:
            raise errors.BadRequest("the body of the request was empty")
        typed.check_depth(patch, what="the patch")  # before the recursive patch code sees it
        is_scale = info.subresource == "scale"
        gvk = _SCALE if is_scale else (res.group, res.version, res.kind)
        root = self.schema.type_for(*gvk)
        target = PatchTarget(self.schema, gvk, max_copy_bytes=self.max_body_bytes)
        attempts = 0

        def mutate(current: Obj) -> Obj:
            nonlocal attempts, patch
            attempts += 1
            if attempts > 1:
                patch = typed.load_json(ctx.body)  # a retry starts from the patch as sent (the last result may share it)
            original_rv = current.get("metadata", {}).get("resourceVersion")
            new = patcher(current, patch, target)
            if not isinstance(new, dict):
                raise errors.BadRequest("the patch did not produce an object")
            try:
                # The patched object is decoded into its type as a body is: the same checks, first.
                typed.check(self.schema, root, new)
            except errors.BadRequest as exc:
                # kube-apiserver answers a patch whose result does not decode with 422 on "patch".
                try:
                    rendered = orjson.dumps(new).decode()
                except orjson.JSONEncodeError:  # deeper than the encoder goes: the message says why
                    rendered = ""
                raise errors.invalid("", "", "", [field_invalid("patch", rendered, exc.message)]) from None
            new = self._validate_fields(ctx, res, new, kind="Scale" if is_scale else "")
            new_rv = new.get("metadata", {}).get("resourceVersion")
            if new_rv and new_rv != original_rv:
                raise errors.conflict(res.resource, res.group, info.name, errors.OPTIMISTIC_LOCK_MSG)
            md = new.get("metadata")
            if isinstance(md, dict):
                if md.get("name", info.name) != info.name:
                    raise errors.BadRequest(f"the name of the object ({md.get('name')}) does not match the "
                                            f"name on the URL ({info.name})")
            return new

        if is_scale:
            return self._respond(await self.registry.update_scale(res, info.namespace, info.name, mutate, opts),
                                   out)
        result = await self.registry.guaranteed_update(res, info.namespace, info.name, mutate, opts,
                                                       info.subresource)
        return self._respond(result, out)

    async def _apply(self, ctx: RequestContext, res: Resource) -> Response:
        """Server-side apply: the body is the manager's whole intent, merged by the registry."""
        info = ctx.info
        required = [] if ctx.query.get("fieldManager") else [errors.Cause(
            "FieldValueRequired", "Required value: is required for apply patch", "fieldManager")]
        opts = self._write_options(ctx, "PatchOptions", required)
        out = self._out(ctx, res)
        forced = query_bool(ctx.query, "force")
        if info.subresource not in ("", "status", "scale"):
            raise errors.MethodNotAllowed(f"server-side apply is not served for the {info.subresource} subresource")
        mode = self._field_validation(ctx)
        try:
            config, repeated = typed.load_yaml_strict(ctx.body) if ctx.body.strip() else (None, [])
        except errors.BadRequest as exc:
            raise errors.BadRequest(f"error decoding YAML: {exc.message}") from None
        if not isinstance(config, dict):
            raise errors.BadRequest("error decoding YAML: the apply configuration must be an object")
        def strict() -> None:
            """kube's strict decoding of the patch (sigs.k8s.io/yaml's UnmarshalStrict: a repeated key),
            once the merge found no conflict."""
            if repeated and mode == "Strict":
                raise errors.BadRequest("error strict decoding YAML: error converting YAML to JSON: yaml: "
                                        "unmarshal errors:\n" + "\n".join(f"  {e}" for e in repeated))

        result, created = await self.registry.apply(res, info.namespace, info.name, config, opts, force=forced,
                                                    subresource=info.subresource, merged=strict)
        if repeated and mode == "Warn":
            ctx.warnings.extend(repeated)
        return self._respond(result, out, status=201 if created else 200)

    # ------------------------------------------------------------- delete

    def _delete_options(self, ctx: RequestContext) -> DeleteOptions:
        """A DELETE's DeleteOptions as kube's delete handlers decode them: from the body when there is
        one, else from the query, never a mix (a body's options ignore the query's, its dryRun too).

        Raises:
            BadRequest: a body that is not DeleteOptions, or (no body) a query parameter that does not convert.
            Invalid: kube's ValidateDeleteOptions.
        """
        body: Obj = {}
        if ctx.body.strip():
            try:
                body = typed.load_json(ctx.body)
            except orjson.JSONDecodeError as exc:
                raise errors.BadRequest(f"error decoding DeleteOptions: {exc}") from None
            if not isinstance(body, dict):
                raise errors.BadRequest("DeleteOptions must be a JSON object")
            typed.check(self.schema, _DELETE_OPTIONS, body)
            grace: int | None = body.get("gracePeriodSeconds")
            policy = body.get("propagationPolicy") or ""
            orphan = body.get("orphanDependents")
            dry_values = [d for d in body.get("dryRun") or [] if isinstance(d, str)]
            unsafe = body.get(_UNSAFE_DELETE) is True
        else:
            # As kube's conversion of the query: a bool present is true unless "0" or "false" (the empty
            # string too), an int64 present must parse.
            q = ctx.query
            grace = query_int64(q, "gracePeriodSeconds")
            policy = q.get("propagationPolicy") or ""
            orphan = query_bool(q, "orphanDependents") if "orphanDependents" in q else None
            dry_values = _dry_run_values(ctx)
            unsafe = query_bool(q, _UNSAFE_DELETE)
        pre = body.get("preconditions") or {}  # the query has no preconditions
        causes = []
        if orphan is not None and policy:
            causes.append(errors.Cause("FieldValueInvalid", "Invalid value: \"%s\": orphanDependents and "
                                       "deletionPropagation cannot be both set" % policy, "propagationPolicy"))
        if any(d != "All" for d in dry_values):
            causes.append(errors.Cause("FieldValueNotSupported", "Unsupported value: []string{%s}: supported "
                                       'values: "All"' % ", ".join(go_quote(d) for d in dry_values), "dryRun"))
        if causes:
            raise errors.invalid("DeleteOptions", "meta.k8s.io", "", causes)
        dry = "All" if dry_values else ""
        return DeleteOptions(dry_run=bool(dry), grace_period_s=grace, propagation_policy=policy,
                             orphan_dependents=orphan, precondition_uid=pre.get("uid") or "",
                             precondition_rv=pre.get("resourceVersion") or "", ignore_store_read_error=unsafe,
                             admission=self._admission(ctx, _delete_options_object(body, grace, policy, orphan, dry)))

    async def delete(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        opts = self._delete_options(ctx)
        out = self._out(ctx, res)
        if opts.ignore_store_read_error:
            # kube-apiserver: removing a corrupt object unread needs this verb of its own.
            await self.authorizer.check(Attributes(ctx.user, "unsafe-delete-ignore-read-errors", True, res.group,
                                                   res.version, res.resource, "", info.namespace, info.name,
                                                   ctx.path))
        result = await self.registry.delete(res, info.namespace, info.name, opts)
        if not result.deleted:
            return self._respond(result.obj, out, status=200)
        if res.strategy.delete_returns_object:
            return self._respond(result.obj, out, status=200)
        md = result.obj.get("metadata", {})
        return self._respond(success_status(name=info.name, group=res.group, kind=res.resource,
                                              uid=md.get("uid", "")), out)

    async def deletecollection(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        list_opts = parse_list_options(ctx.query)  # kube reads the list options first
        opts = self._delete_options(ctx)
        if opts.ignore_store_read_error:
            raise errors.invalid("DeleteOptions", "meta.k8s.io", "", [errors.Cause(
                "FieldValueInvalid", "Invalid value: true: is not allowed with DELETECOLLECTION, try again "
                "after removing the option", _UNSAFE_DELETE)])
        out = self._out(ctx, res)
        page = await self.registry.delete_collection(res, info.namespace, list_opts, opts)
        return self._list_body(res, list(page.items), {"resourceVersion": str(page.revision)}, out)

    # -------------------------------------------------------------- watch

    async def watch(self, ctx: RequestContext, res: Resource) -> Response:
        info = ctx.info
        query = dict(ctx.query)
        if info.name:
            query["fieldSelector"] = ",".join(filter(None, [query.get("fieldSelector", ""),
                                                            f"metadata.name={info.name}"]))
        query["watch"] = "true"
        opts = parse_list_options(query)
        out = self._out(ctx, res, allow_as=("Table",),
                                      include_object=ctx.query.get("includeObject", ""))
        # As kube: 0 (or none) is the server's randomised default; a negative value is kept, a deadline
        # already past, so that the watch ends at once.
        timeout = opts.timeout_seconds
        if not timeout:
            timeout = int(self.min_request_timeout_s * (1 + random.random()))
        deadline = trio.current_time() + timeout
        proto = out.media_type == PROTOBUF
        lines = await self.registry.watch_lines(res, info.namespace, opts, deadline, proto,
                                                initialized=partial(_run_once, ctx.on_watch_initialized))
        if out.as_kind == "Table":
            lines = _as_tables(lines, res, out)
        content_type = PROTOBUF + ";stream=watch" if proto else JSON
        # The deadline is kept by the code that pumps the stream, not by a cancel scope inside a
        # generator: a scope open across a yield corrupts trio's scope stack when the watch closes.
        return Response(200, b"", content_type, stream=lines, deadline=deadline)


@dataclass(frozen=True, slots=True)
class Verb:
    """A verb's handler and where it may be asked: ``named`` True on an object only, False on a collection only."""

    serve: Callable[[Handlers, RequestContext, Resource], Awaitable[Response]]
    named: bool | None = None


VERBS: dict[str, Verb] = {
    "get": Verb(Handlers.get),
    "list": Verb(Handlers.list),
    "watch": Verb(Handlers.watch),
    "create": Verb(Handlers.create, named=False),
    "update": Verb(Handlers.update, named=True),
    "patch": Verb(Handlers.patch, named=True),
    "delete": Verb(Handlers.delete),
    "deletecollection": Verb(Handlers.deletecollection),
}


_CREATE_SUBRESOURCE = Verb(Handlers.create_subresource, named=True)
_SUBRESOURCE_BODIES = {"token": "TokenRequest"}


async def _chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _as_tables(lines: AsyncIterator[bytes], res: Resource, out: Output) -> AsyncIterator[bytes]:
    """Watch events whose objects are one-row Tables, for ``kubectl get -w``."""
    async with aclosing(lines):  # type: ignore[type-var]
        async for chunk in lines:
            converted = []
            for line in chunk.splitlines():
                event = orjson.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    event["object"] = build_object_table(res.strategy.printer, event["object"], time.time(),
                                                         include_object=out.include_object,
                                                         table_version=out.as_version)
                converted.append(orjson.dumps(event) + b"\n")
            yield b"".join(converted)


SCAN_WARNING_MIN = 1000  # a LIST that scans at least this many objects...
SCAN_WARNING_RATIO = 10  # ...and returns fewer than 1 in this many gets a Warning


def cost_warning(res: Resource, opts: ListOptions, page: Page) -> str:
    """A ``Warning`` text for a LIST that cost far more than it returned, saying how to ask cheaply."""
    returned = len(page.items)
    if page.source == "storage" and not opts.resource_version and opts.limit and not res.cacheable:
        return (f"this LIST of {res.qualified} was served from storage because resourceVersion was unset with "
                f"a limit on a resource without a watch cache; it scanned {page.scanned} objects to return "
                f"{returned}")
    if page.scanned >= SCAN_WARNING_MIN and returned * SCAN_WARNING_RATIO < page.scanned:
        hint = res.strategy.list_hint
        where = {"cache": "the watch cache", "snapshot": "a watch cache snapshot"}.get(page.source, "storage")
        return (f"this LIST of {res.qualified} scanned {page.scanned} objects in {where} to return {returned}; "
                f"to make it cheaper, {hint}")
    return ""


_HTTP_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"))
_UNSAFE_DELETE = "ignoreStoreReadErrorWithClusterBreakingPotential"


def _run_once(callbacks: list[Callable[[], None]]) -> None:
    """Run and forget each callback (a watch's ``on_watch_initialized``), so that none runs twice."""
    while callbacks:
        callbacks.pop(0)()


def _dry_run_values(ctx: RequestContext) -> list[str]:
    """The query's dryRun values, each one (kube's []string option); none when the only one is empty."""
    values = query_values(ctx.query_string, "dryRun") if ctx.query.get("dryRun") is not None else []
    return values if any(values) else []


def _list_items(res: Resource, objs: list[Obj]) -> list[Obj]:
    """Decoded list items as the kind's lists carry them (with or without their kind and apiVersion)."""
    if res.strategy.typed_list_items:
        return [{"apiVersion": res.group_version, "kind": res.kind, **_untyped(o)} for o in objs]
    return [_untyped(o) for o in objs]


def _untyped(obj: Obj) -> Obj:
    """List items carry no kind/apiVersion of their own, as kube-apiserver's typed lists."""
    if "kind" in obj or "apiVersion" in obj:
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return obj


def _delete_options_object(body: Obj, grace: int | None, policy: str, orphan: bool | None, dry: str) -> Obj:
    """The DeleteOptions a DELETE's admission is given: the body with what the query set."""
    out = {k: v for k, v in body.items() if k not in ("kind", "apiVersion")}
    if grace is not None:
        out["gracePeriodSeconds"] = grace
    if policy:
        out["propagationPolicy"] = policy
    if orphan is not None:
        out["orphanDependents"] = orphan
    if dry:
        out["dryRun"] = [dry]
    return out


def _partial(obj: Obj, version: str) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": obj.get("metadata", {})}


def _runes(text: str) -> list[tuple[int, str]]:
    """Each character of ``text`` with its byte offset in UTF-8 (the index Go's range over a string gives)."""
    out, offset = [], 0
    for ch in text:
        out.append((offset, ch))
        offset += len(ch.encode("utf-8", "surrogatepass"))
    return out
