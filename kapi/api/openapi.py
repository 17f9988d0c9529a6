"""OpenAPI v2 (``/openapi/v2``) and v3 (``/openapi/v3``, per group-version) documents.

Built from the schema table and the served resources; each document is encoded
once, on first use, and kept with its hash for ETags and the v3 ``?hash=`` URLs
until the resource table or the schema changes (their ``generation`` moves), when
every document is built again. The server builds one ``OpenAPIDocuments`` and
hands it to the handlers; nothing here is global.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kapi.api.openapi_pb import encode_openapi_v2

from kapi.object.schema import GVK, FieldDef, Schema, TypeDef

__all__ = ["Document", "OpenAPIDocuments", "custom_definition", "custom_list_definition", "ResourceRecord", "ResourceSource", "ServedResource"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_STATUS = _META + "Status"
_DELETE_OPTIONS = _META + "DeleteOptions"
_PATCH = _META + "Patch"
_WATCH_EVENT = _META + "WatchEvent"
_API_RESOURCE_LIST = _META + "APIResourceList"

_ALL_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")

# Body types of the subresources that have their own kind; "" means the parent's kind.
_SUBRESOURCE_TYPES: dict[str, str] = {
    "status": "",
    "scale": "io.k8s.api.autoscaling.v1.Scale",
    "ephemeralcontainers": "",
    "resize": "",
    "binding": "io.k8s.api.core.v1.Binding",
    "eviction": "io.k8s.api.policy.v1.Eviction",
    "token": "io.k8s.api.authentication.v1.TokenRequest",
    "approval": "",
}

_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
# A custom resource's PATCH: no strategic merge (kube's CRD OpenAPI builder; kubectl apply then sends a merge patch)
_CUSTOM_PATCH_TYPES = tuple(t for t in _PATCH_TYPES if t != "application/strategic-merge-patch+json")
_PRODUCES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_WATCH_PRODUCES = (*_PRODUCES, "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")

_SECURITY_SCHEME = {
    "description": "Bearer Token authentication",
    "in": "header",
    "name": "authorization",
    "type": "apiKey",
}

# Query parameters as kube-apiserver declares them (name, type, description).
_P = {
    "pretty": ("string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."),
    "dryRun": ("string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"),
    "fieldManager": ("string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."),
    "fieldValidation": ("string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."),
    "force": ("boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."),
    "gracePeriodSeconds": ("integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("boolean", "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it"),
    "orphanDependents": ("boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
    "propagationPolicy": ("string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
    "allowWatchBookmarks": ("boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."),
    "continue": ("string", "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications."),
    "fieldSelector": ("string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
    "labelSelector": ("string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
    "limit": ("integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned."),
    "resourceVersion": ("string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    "resourceVersionMatch": ("string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    "sendInitialEvents": ("boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise."),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
    "watch": ("boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."),
}

_LIST_PARAMS = (
    "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
    "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force")
_DELETE_PARAMS = (
    "dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents", "propagationPolicy",
)


class ResourceRecord(Protocol):
    """What openapi needs to know about one served resource."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...
    @property
    def subresources(self) -> Sequence[str]: ...
    @property
    def verbs(self) -> Sequence[str]: ...


class ResourceSource(Protocol):
    """Served resources that change while serving (the server's ``ResourceTable``)."""

    @property
    def generation(self) -> int: ...
    @property
    def resources(self) -> Sequence[ResourceRecord]: ...


@dataclass(frozen=True, slots=True)
class _Fixed:
    """A set of resources that never changes."""

    resources: tuple[ResourceRecord, ...]
    generation: int = 0


@dataclass(frozen=True, slots=True)
class ServedResource:
    """A plain ResourceRecord, for callers and tests without a registry."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = _ALL_VERBS


@dataclass(frozen=True, slots=True)
class Document:
    """One encoded document: body, its hash (upper-case SHA-512 hex) and ETag."""

    body: bytes
    hash: str
    content_type: str = "application/json"

    @property
    def etag(self) -> str:
        return f'"{self.hash}"'


def _document(doc: dict[str, Any]) -> Document:
    body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    return Document(body=body, hash=hashlib.sha512(body).hexdigest().upper())


def _gv_path(group: str, version: str) -> str:
    """``api/v1`` or ``apis/apps/v1`` (the v3 discovery key)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _camel_group(group: str) -> str:
    """``rbac.authorization.k8s.io`` -> ``RbacAuthorization``; core -> ``Core``."""
    if not group:
        return "Core"
    base = group.removesuffix(".k8s.io")
    return "".join(part[:1].upper() + part[1:] for part in base.split("."))


def _tag(group: str, version: str) -> str:
    camel = _camel_group(group)
    return f"{camel[:1].lower()}{camel[1:]}_{version}"


class _Builder:
    """Shared pieces of the v2 and v3 renderings; ``v3`` switches the dialect."""

    def __init__(self, schema: Schema, *, v3: bool) -> None:
        self.schema = schema
        self.v3 = v3
        self.ref_prefix = "#/components/schemas/" if v3 else "#/definitions/"
        # Definitions of custom resources (from their CRD's schema), by name: see ``custom_types``.
        self.custom: dict[str, dict[str, Any]] = {}

    # ---- schemas

    def ref(self, name: str) -> dict[str, Any]:
        return {"$ref": self.ref_prefix + name}

    def shape(self, f: FieldDef) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if f.ref:
            ref = self.ref(f.ref)
            has_siblings = bool(f.description or f.patch_strategy or f.merge_key or f.list_type or f.map_type)
            # OpenAPI v3 ignores siblings of $ref, so kube-apiserver wraps the ref in allOf.
            if self.v3 and has_siblings:
                out["allOf"] = [ref]
            else:
                out.update(ref)
        else:
            if f.type not in ("any", "int-or-string", "quantity"):
                out["type"] = f.type
            if f.format:
                out["format"] = f.format
            if f.items is not None:
                out["items"] = self.shape(f.items)
            if f.values is not None:
                out["additionalProperties"] = self.shape(f.values)
        if f.description:
            out["description"] = f.description
        if f.list_map_keys:
            out["x-kubernetes-list-map-keys"] = list(f.list_map_keys)
        if f.list_type:
            out["x-kubernetes-list-type"] = f.list_type
        if f.map_type:
            out["x-kubernetes-map-type"] = f.map_type
        if f.merge_key:
            out["x-kubernetes-patch-merge-key"] = f.merge_key
        if f.patch_strategy:
            out["x-kubernetes-patch-strategy"] = f.patch_strategy
        return out

    def definition(self, t: TypeDef) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if t.description:
            out["description"] = t.description
        if t.type == "int-or-string":
            out["format"] = "int-or-string"
            if self.v3:
                out["oneOf"] = [{"type": "integer"}, {"type": "string"}]
            else:
                out["type"] = "string"
            return out
        if t.type == "quantity":
            if self.v3:
                out["oneOf"] = [{"type": "string"}, {"type": "number"}]
            else:
                out["type"] = "string"
            return out
        if t.type != "any":
            out["type"] = t.type
        if t.format:
            out["format"] = t.format
        if t.fields:
            out["properties"] = {name: self.shape(f) for name, f in t.fields.items()}
        if t.required:
            out["required"] = list(t.required)
        if t.gvks:
            out["x-kubernetes-group-version-kind"] = [
                {"group": g.group, "kind": g.kind, "version": g.version} for g in t.gvks
            ]
        if t.map_type:
            out["x-kubernetes-map-type"] = t.map_type
        if t.unions:
            out["x-kubernetes-unions"] = list(t.unions)
        return out

    def definitions(self, roots: Iterable[str]) -> dict[str, Any]:
        """Every published type reachable from ``roots``, rendered (custom resources' too)."""
        roots = set(roots)
        custom = {name: d for name, d in self.custom.items() if name in roots}
        roots |= _referenced(custom)
        seen: set[str] = set()
        todo = [r for r in roots if r in self.schema and r not in self.custom]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for f in self.schema.type(name).fields.values():
                shape: FieldDef | None = f
                while shape is not None:
                    if shape.ref and shape.ref not in seen:
                        todo.append(shape.ref)
                    shape = shape.items or shape.values
        out = {
            name: self.definition(self.schema.type(name))
            for name in sorted(seen)
            if self.schema.type(name).published
        }
        out.update(custom)
        return dict(sorted(out.items()))

    def custom_types(self, r: ResourceRecord) -> tuple[str, str] | None:
        """A custom resource's definitions (kind and list), made from its CRD version's schema.

        A resource is custom when its strategy has ``openapi_schema`` (the version's
        ``schema.openAPIV3Schema``, or None) and the schema table has no type for its kind.
        Returns the two definition names, or None for other resources.
        """
        strategy = getattr(r, "strategy", None)
        if strategy is None or not hasattr(strategy, "openapi_schema"):
            return None
        if self.schema.type_for(r.group, r.version, r.kind) is not None:
            return None
        base = f"{_reversed_group(r.group)}.{r.version}."
        name, list_name = base + r.kind, base + r.kind + "List"
        if name not in self.custom:
            raw = getattr(strategy, "openapi_schema", None)
            self.custom[name] = custom_definition(raw if isinstance(raw, dict) else None, r.group, r.version,
                                                  r.kind, v3=self.v3)
            self.custom[list_name] = custom_list_definition(name, r.group, r.version, r.kind, v3=self.v3)
        return name, list_name

    # ---- operations

    def param(self, name: str, where: str = "query", *, required: bool = False) -> dict[str, Any]:
        kind, description = _P.get(name, ("string", ""))
        out: dict[str, Any] = {"in": where, "name": name}
        if description:
            out["description"] = description
        if required:
            out["required"] = True
        if self.v3:
            out["schema"] = {"type": kind, "uniqueItems": True}
        else:
            out["type"] = kind
            out["uniqueItems"] = True
        return out

    def path_param(self, name: str, description: str) -> dict[str, Any]:
        out = self.param(name, "path", required=True)
        out["description"] = description
        return out

    def body_param(self, type_name: str) -> dict[str, Any]:
        return {"in": "body", "name": "body", "required": True, "schema": self.ref(type_name)}

    def operation(
        self,
        *,
        op_id: str,
        description: str,
        action: str,
        tag: str,
        gvk: dict[str, str] | None,
        responses: dict[str, str],
        params: Sequence[str] = (),
        body: str = "",
        consumes: Sequence[str] = ("*/*",),
        produces: Sequence[str] = _PRODUCES,
    ) -> dict[str, Any]:
        op: dict[str, Any] = {"description": description, "operationId": op_id, "tags": [tag]}
        if params:
            op["parameters"] = [self.param(p) for p in params]
        if self.v3:
            if body:
                op["requestBody"] = {
                    "content": {m: {"schema": self.ref(body)} for m in consumes},
                    "required": True,
                }
            op["responses"] = {
                code: {
                    "content": {m: {"schema": self.ref(type_name)} for m in produces},
                    "description": _RESPONSE_TEXT[code],
                }
                for code, type_name in responses.items()
            }
        else:
            if body:
                op.setdefault("parameters", []).insert(0, self.body_param(body))
            op["consumes"] = list(consumes)
            op["produces"] = list(produces)
            op["schemes"] = ["https"]
            op["responses"] = {
                code: {"description": _RESPONSE_TEXT[code], "schema": self.ref(type_name)}
                for code, type_name in responses.items()
            }
            op["responses"]["401"] = {"description": "Unauthorized"}
        op["x-kubernetes-action"] = action
        if gvk is not None:
            op["x-kubernetes-group-version-kind"] = gvk
        return op

    def resource_paths(self, r: ResourceRecord) -> dict[str, Any]:
        """The paths kube-apiserver registers for one resource and its subresources."""
        t: TypeDef | _Named | None = self.schema.type_for(r.group, r.version, r.kind)
        list_t: TypeDef | _Named | None = self.schema.type_for(r.group, r.version, r.kind + "List")
        custom = self.custom_types(r) if t is None else None
        patch_types = _PATCH_TYPES
        if custom is not None:
            t, list_t = _Named(custom[0]), _Named(custom[1])
            patch_types = _CUSTOM_PATCH_TYPES
        if t is None:
            return {}
        prefix = "/" + _gv_path(r.group, r.version)
        ns = "/namespaces/{namespace}" if r.namespaced else ""
        scope = "Namespaced" if r.namespaced else ""
        camel = _camel_group(r.group) + r.version[:1].upper() + r.version[1:]
        tag = _tag(r.group, r.version)
        gvk = {"group": r.group, "kind": r.kind, "version": r.version}
        verbs = set(r.verbs)
        common = [self.param("pretty")]
        ns_param = [self.path_param("namespace", "object name and auth scope, such as for teams and projects")] if r.namespaced else []
        name_param = [self.path_param("name", f"name of the {r.kind}")]
        paths: dict[str, Any] = {}

        collection: dict[str, Any] = {}
        if "list" in verbs and list_t is not None:
            collection["get"] = self.operation(
                op_id=f"list{camel}{scope}{r.kind}", description=f"list or watch objects of kind {r.kind}",
                action="list", tag=tag, gvk=gvk, responses={"200": list_t.name},
                params=_LIST_PARAMS, produces=_WATCH_PRODUCES,
            )
        if "create" in verbs:
            collection["post"] = self.operation(
                op_id=f"create{camel}{scope}{r.kind}", description=f"create a{_an(r.kind)} {r.kind}",
                action="post", tag=tag, gvk=gvk, responses={"200": t.name, "201": t.name, "202": t.name},
                params=_WRITE_PARAMS, body=t.name,
            )
        if "deletecollection" in verbs:
            collection["delete"] = self.operation(
                op_id=f"delete{camel}Collection{scope}{r.kind}", description=f"delete collection of {r.kind}",
                action="deletecollection", tag=tag, gvk=gvk, responses={"200": _STATUS},
                params=(*_DELETE_PARAMS, *(p for p in _LIST_PARAMS if p not in ("watch", "allowWatchBookmarks"))),
                body=_DELETE_OPTIONS,
            )
        if collection:
            collection["parameters"] = ns_param + common
            paths[f"{prefix}{ns}/{r.resource}"] = collection

        item: dict[str, Any] = {}
        # Graceful deletion answers with the object itself, other deletes with a Status.
        deleted = t.name if (r.group, r.kind) == ("", "Pod") else _STATUS
        if "get" in verbs:
            item["get"] = self.operation(
                op_id=f"read{camel}{scope}{r.kind}", description=f"read the specified {r.kind}",
                action="get", tag=tag, gvk=gvk, responses={"200": t.name},
            )
        if "update" in verbs:
            item["put"] = self.operation(
                op_id=f"replace{camel}{scope}{r.kind}", description=f"replace the specified {r.kind}",
                action="put", tag=tag, gvk=gvk, responses={"200": t.name, "201": t.name},
                params=_WRITE_PARAMS, body=t.name,
            )
        if "patch" in verbs:
            item["patch"] = self.operation(
                op_id=f"patch{camel}{scope}{r.kind}", description=f"partially update the specified {r.kind}",
                action="patch", tag=tag, gvk=gvk, responses={"200": t.name, "201": t.name},
                params=_PATCH_PARAMS, body=_PATCH, consumes=patch_types,
            )
        if "delete" in verbs:
            item["delete"] = self.operation(
                op_id=f"delete{camel}{scope}{r.kind}", description=f"delete a{_an(r.kind)} {r.kind}",
                action="delete", tag=tag, gvk=gvk, responses={"200": deleted, "202": deleted},
                params=_DELETE_PARAMS, body=_DELETE_OPTIONS,
            )
        if item:
            item["parameters"] = name_param + ns_param + common
            paths[f"{prefix}{ns}/{r.resource}/{{name}}"] = item

        if "watch" in verbs:
            watch_common = [self.param(p) for p in _LIST_PARAMS] + common
            paths[f"{prefix}/watch{ns}/{r.resource}"] = {
                "get": self.operation(
                    op_id=f"watch{camel}{scope}{r.kind}List",
                    description=f"watch individual changes to a list of {r.kind}. deprecated: use the 'watch' parameter with a list operation instead.",
                    action="watchlist", tag=tag, gvk=gvk, responses={"200": _WATCH_EVENT}, produces=_WATCH_PRODUCES,
                ),
                "parameters": ns_param + watch_common,
            }
            paths[f"{prefix}/watch{ns}/{r.resource}/{{name}}"] = {
                "get": self.operation(
                    op_id=f"watch{camel}{scope}{r.kind}",
                    description=f"watch changes to an object of kind {r.kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
                    action="watch", tag=tag, gvk=gvk, responses={"200": _WATCH_EVENT}, produces=_WATCH_PRODUCES,
                ),
                "parameters": name_param + ns_param + watch_common,
            }
        if r.namespaced and "list" in verbs and list_t is not None:
            paths[f"{prefix}/{r.resource}"] = {
                "get": self.operation(
                    op_id=f"list{camel}{r.kind}ForAllNamespaces", description=f"list or watch objects of kind {r.kind}",
                    action="list", tag=tag, gvk=gvk, responses={"200": list_t.name}, produces=_WATCH_PRODUCES,
                ),
                "parameters": [self.param(p) for p in _LIST_PARAMS] + common,
            }
            if "watch" in verbs:
                paths[f"{prefix}/watch/{r.resource}"] = {
                    "get": self.operation(
                        op_id=f"watch{camel}{r.kind}ListForAllNamespaces",
                        description=f"watch individual changes to a list of {r.kind}. deprecated: use the 'watch' parameter with a list operation instead.",
                        action="watchlist", tag=tag, gvk=gvk, responses={"200": _WATCH_EVENT}, produces=_WATCH_PRODUCES,
                    ),
                    "parameters": [self.param(p) for p in _LIST_PARAMS] + common,
                }

        for sub in r.subresources:
            body_name = _SUBRESOURCE_TYPES.get(sub)
            if body_name is None:
                continue  # connect-style subresources (log, exec, proxy...) carry no schema here
            sub_t = self.schema.get(body_name) if body_name else t
            if sub_t is None:
                continue
            if isinstance(sub_t, _Named):
                sub_t = _Named(sub_t.name, (GVK(r.group, r.version, r.kind),))
            sub_kind = r.kind + sub[:1].upper() + sub[1:]
            sub_gvk = {"group": sub_t.gvks[0].group, "kind": sub_t.gvks[0].kind, "version": sub_t.gvks[0].version} if sub_t.gvks else gvk
            ops: dict[str, Any] = {}
            if sub in ("binding", "eviction", "token"):
                ops["post"] = self.operation(
                    op_id=f"create{camel}{scope}{sub_kind}", description=f"create {sub} of a{_an(r.kind)} {r.kind}",
                    action="post", tag=tag, gvk=sub_gvk, responses={"200": sub_t.name, "201": sub_t.name, "202": sub_t.name},
                    params=_WRITE_PARAMS, body=sub_t.name,
                )
            else:
                ops["get"] = self.operation(
                    op_id=f"read{camel}{scope}{sub_kind}", description=f"read {sub} of the specified {r.kind}",
                    action="get", tag=tag, gvk=sub_gvk, responses={"200": sub_t.name},
                )
                ops["put"] = self.operation(
                    op_id=f"replace{camel}{scope}{sub_kind}", description=f"replace {sub} of the specified {r.kind}",
                    action="put", tag=tag, gvk=sub_gvk, responses={"200": sub_t.name, "201": sub_t.name},
                    params=_WRITE_PARAMS, body=sub_t.name,
                )
                ops["patch"] = self.operation(
                    op_id=f"patch{camel}{scope}{sub_kind}", description=f"partially update {sub} of the specified {r.kind}",
                    action="patch", tag=tag, gvk=sub_gvk, responses={"200": sub_t.name, "201": sub_t.name},
                    params=_PATCH_PARAMS, body=_PATCH, consumes=patch_types,
                )
            ops["parameters"] = [self.path_param("name", f"name of the {sub_kind}")] + ns_param + common
            paths[f"{prefix}{ns}/{r.resource}/{{name}}/{sub}"] = ops
        return paths

    def resources_path(self, group: str, version: str) -> dict[str, Any]:
        camel = _camel_group(group) + version[:1].upper() + version[1:]
        op = self.operation(
            op_id=f"get{camel}APIResources", description="get available resources", action="get",
            tag=_tag(group, version), gvk=None, responses={"200": _API_RESOURCE_LIST},
            produces=("application/json", "application/yaml", "application/vnd.kubernetes.protobuf"),
        )
        del op["x-kubernetes-action"]
        return {f"/{_gv_path(group, version)}/": {"get": op}}


_RESPONSE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


@dataclass(frozen=True, slots=True)
class _Named:
    """A custom resource's definition where resource_paths wants a TypeDef (its name and kinds)."""

    name: str
    gvks: tuple[GVK, ...] = ()


def _reversed_group(group: str) -> str:
    """``stable.example.com`` -> ``com.example.stable`` (kube's definition name prefix of a CRD's kinds)."""
    return ".".join(reversed(group.split(".")))


_OBJECT_META = _META + "ObjectMeta"
_LIST_META = _META + "ListMeta"
_API_VERSION_TEXT = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                     "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                     "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
                     "#resources")
_KIND_TEXT = ("Kind is a string value representing the REST resource this object represents. Servers may infer "
              "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
              "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
_METADATA_TEXT = ("Standard object's metadata. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_LIST_METADATA_TEXT = ("Standard list metadata. More info: "
                       "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
# Keys of a structural schema swagger 2.0 cannot say (kube's ToStructuralOpenAPIV2 drops them).
_V2_DROPPED = frozenset(("oneOf", "anyOf", "allOf", "not", "nullable", "x-kubernetes-validations"))


def _ref_with(v3: bool, target: str, description: str) -> dict[str, Any]:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    if v3:
        return {"allOf": [{"$ref": prefix + target}], "default": {}, "description": description}
    return {"$ref": prefix + target, "description": description}


def _publishable(schema: Any, v3: bool) -> Any:
    """A CRD schema node as kube publishes it: v2 without what swagger 2.0 lacks."""
    if isinstance(schema, list):
        return [_publishable(s, v3) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, dict):
            out[key] = {k: _publishable(v, v3) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "additionalItems") and isinstance(value, (dict, list)):
            out[key] = _publishable(value, v3)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            if v3:
                out[key] = [_publishable(v, v3) for v in value]
        elif key == "not" and isinstance(value, dict):
            if v3:
                out[key] = _publishable(value, v3)
        elif v3 or key not in _V2_DROPPED:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string") is True:
        out.pop("type", None)
        if v3 and "anyOf" not in out:
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if not v3 and schema.get("nullable") is True:
        # swagger 2.0 has no null: kube leaves the type out so that a null validates.
        out.pop("type", None)
    return out


def custom_definition(schema: dict[str, Any] | None, group: str, version: str, kind: str, *, v3: bool
                      ) -> dict[str, Any]:
    """The definition of a custom kind from its CRD version's ``openAPIV3Schema`` (kube's CRD builder):
    the schema with ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) filled in, and its
    ``x-kubernetes-group-version-kind``."""
    out: dict[str, Any] = _publishable(dict(schema or {}), v3)
    if not out.get("type"):
        out["type"] = "object"
    props = dict(out.get("properties") or {})
    props["apiVersion"] = {"description": _API_VERSION_TEXT, "type": "string", **_plain(props.get("apiVersion"))}
    props["kind"] = {"description": _KIND_TEXT, "type": "string", **_plain(props.get("kind"))}
    props["metadata"] = _ref_with(v3, _OBJECT_META, _METADATA_TEXT)
    out["properties"] = props
    out["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return out


def _plain(node: Any) -> dict[str, Any]:
    """A CRD's own apiVersion/kind node, minus what the server sets."""
    return {k: v for k, v in node.items() if k != "type"} if isinstance(node, dict) else {}


def custom_list_definition(item: str, group: str, version: str, kind: str, *, v3: bool) -> dict[str, Any]:
    """``<Kind>List`` of a custom kind, as kube's CRD builder makes it."""
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    return {
        "description": f"{kind}List is a list of {kind}",
        "properties": {
            "apiVersion": {"description": _API_VERSION_TEXT, "type": "string"},
            "items": {"description": f"List of {kind.lower()}s. More info: "
                                     "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                                     "api-conventions.md",
                      "items": {"$ref": prefix + item}, "type": "array"},
            "kind": {"description": _KIND_TEXT, "type": "string"},
            "metadata": _ref_with(v3, _LIST_META, _LIST_METADATA_TEXT),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": group, "kind": kind + "List", "version": version}],
    }


def _an(kind: str) -> str:
    return "n" if kind[:1] in "AEIOU" else ""


def _referenced(paths: dict[str, Any]) -> set[str]:
    """Type names a paths object refers to."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[-1])
            for sub in value.values():
                walk(sub)
        elif isinstance(value, list):
            for sub in value:
                walk(sub)

    walk(paths)
    return found


class OpenAPIDocuments:
    """The OpenAPI documents of one server, encoded once each on first request."""

    def __init__(self, schema: Schema, resources: ResourceSource | Iterable[ResourceRecord], *,
                 version: str = "v1.33.0") -> None:
        self._schema = schema
        self._source: ResourceSource = (resources if hasattr(resources, "generation")  # type: ignore[assignment]
                                        else _Fixed(tuple(resources)))
        self._version = version
        self._cache: dict[str, Document] = {}
        self._built_for: tuple[int, int] | None = None  # (source, schema) generations of the cache
        self._resources: tuple[ResourceRecord, ...] = ()
        self._group_versions: list[tuple[str, str]] = []
        self._current()

    def _current(self) -> dict[str, Document]:
        """The cache, emptied first when the resources or the schema changed since it was filled."""
        now = (self._source.generation, self._schema.generation)
        if now != self._built_for:
            self._built_for = now
            self._cache.clear()
            self._resources = tuple(self._source.resources)
            self._group_versions = sorted({(r.group, r.version) for r in self._resources},
                                          key=lambda gv: (gv[0] != "", gv))
        return self._cache

    def group_version_paths(self) -> list[str]:
        """The v3 document keys: ``api/v1``, ``apis/apps/v1``, ..."""
        self._current()
        return [_gv_path(g, v) for g, v in self._group_versions]

    def v2(self) -> Document:
        """The whole API as one swagger 2.0 document (``/openapi/v2``)."""
        if "v2" not in self._current():
            self._cache["v2"] = _document(self._build_v2())
        return self._cache["v2"]

    def v2_protobuf(self) -> Document:
        """``/openapi/v2`` as the gnostic protobuf Document that client-go's discovery reads."""
        if "v2pb" not in self._current():
            body = encode_openapi_v2(self._build_v2())
            # kube-openapi answers this media type (not a valid MIME token) as octet-stream.
            self._cache["v2pb"] = Document(body=body, hash=hashlib.sha512(body).hexdigest().upper(),
                                           content_type="application/octet-stream")
        return self._cache["v2pb"]

    def v3_discovery(self) -> Document:
        """``/openapi/v3``: each group-version's document URL with its content hash."""
        if "v3" not in self._current():
            paths = {}
            for key in self.group_version_paths():
                doc = self.v3(key)
                assert doc is not None
                paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={doc.hash}"}
            self._cache["v3"] = _document({"paths": paths})
        return self._cache["v3"]

    def v3(self, path: str) -> Document | None:
        """``/openapi/v3/<path>`` (``api/v1``, ``apis/apps/v1``), or None if not served."""
        key = "v3:" + path.strip("/")
        if key not in self._current():
            gv = {_gv_path(g, v): (g, v) for g, v in self._group_versions}.get(path.strip("/"))
            if gv is None:
                return None
            self._cache[key] = _document(self._build_v3(*gv))
        return self._cache[key]

    def _build_v2(self) -> dict[str, Any]:
        b = _Builder(self._schema, v3=False)
        paths: dict[str, Any] = {}
        for g, v in self._group_versions:
            paths.update(b.resources_path(g, v))
        for r in self._resources:
            paths.update(b.resource_paths(r))
        roots = {t.name for t in self._schema if t.published} | _referenced(paths) | set(b.custom)
        return {
            "definitions": b.definitions(roots),
            "info": {"title": "Kubernetes", "version": self._version},
            "paths": dict(sorted(paths.items())),
            "security": [{"BearerToken": []}],
            "securityDefinitions": {"BearerToken": _SECURITY_SCHEME},
            "swagger": "2.0",
        }

    def _build_v3(self, group: str, version: str) -> dict[str, Any]:
        b = _Builder(self._schema, v3=True)
        paths = b.resources_path(group, version)
        for r in self._resources:
            if (r.group, r.version) == (group, version):
                paths.update(b.resource_paths(r))
        return {
            "components": {
                "schemas": b.definitions(_referenced(paths)),
                "securitySchemes": {"BearerToken": _SECURITY_SCHEME},
            },
            "info": {"title": "Kubernetes", "version": self._version},
            "openapi": "3.0.0",
            "paths": dict(sorted(paths.items())),
            "security": [{"BearerToken": []}],
        }
