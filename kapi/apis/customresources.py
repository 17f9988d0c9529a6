"""Custom resources: the served Resources of one CustomResourceDefinition (apiextensions-apiserver's
``crdHandler`` serving info and ``pkg/registry/customresource``).

``custom_resources(crd)`` gives one ``Resource`` per served version; each has its own
``CustomResourceStrategy`` built once from that version's schema: the structural tree (validation,
pruning, defaulting: ``kapi.object.structural``), its CEL rules compiled once
(``kapi.object.cel``), the printer columns, selectable fields and scale paths. Objects are stored
under ``/registry/<group>/<plural>/`` in the storage version; another served version converts on the
way in and out with the CRD's conversion (``kapi.apis.crdconversion``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kapi import errors
from kapi.apis.crdconversion import ClientFactory, Conversion, ServiceResolver, conversion_for
from kapi.encoding.tables.custom import custom_printer
from kapi.errors import Cause
from kapi.object.cel import CompiledRules, compile_rules
from kapi.object.jsonpath import Path, compile_path
from kapi.object.selectors import META_FIELDS, FieldLabels, format_label_selector
from kapi.object.structural import Structural, coerce, default, from_props, prune, validate, validate_update
from kapi.object.managedfields.merge import structural_types
from kapi.object.schema import Schema
from kapi.object.validation import field_invalid
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy

# kube's hasBlockingErr: a value of the wrong type keeps the CEL rules from running
_BLOCKING = "FieldValueTypeInvalid"
_NOT_CHECKED = Cause("FieldValueInvalid", 'Invalid value: "null": some validation rules were not checked because '
                     "the object was invalid; correct the existing errors to complete validation", "")

__all__ = ["CustomResourceStrategy", "custom_resources", "deprecation_warning"]


def deprecation_warning(group: str, version: Mapping[str, Any], kind: str) -> str:
    """The Warning text of a deprecated version: its deprecationWarning, else kube's default."""
    if not version.get("deprecated"):
        return ""
    text = version.get("deprecationWarning")
    if isinstance(text, str) and text:
        return text
    return f"{group}/{version.get('name', '')} {kind} is deprecated"


def _field_label(json_path: str) -> str:
    return json_path[1:] if json_path.startswith(".") else json_path


def _selectable_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


_GO_TYPES = {bool: "bool", str: "string", float: "float64", int: "int64", list: "[]interface {}",
             dict: "map[string]interface {}", type(None): "<nil>"}
_MAX_INT32 = 2**31 - 1


def _nested(obj: Obj, path: str, want: type) -> tuple[Any, str]:
    """unstructured.NestedInt64 / NestedString at a ``.a.b`` path: (value or None when absent, error text)."""
    fields = [p for p in path.lstrip(".").split(".") if p]
    cur: Any = obj
    for i, f in enumerate(fields):
        if not isinstance(cur, dict):
            return None, (f"{'.' + '.'.join(fields[:i])} accessor error: {cur} is of the type "
                          f"{_GO_TYPES.get(type(cur), type(cur).__name__)}, expected map[string]interface{{}}")
        if f not in cur:
            return None, ""
        cur = cur[f]
    ok = isinstance(cur, int) and not isinstance(cur, bool) if want is int else isinstance(cur, want)
    if not ok:
        shown = "<nil>" if cur is None else str(cur).lower() if isinstance(cur, bool) else cur
        return None, (f"{'.' + '.'.join(fields)} accessor error: {shown} is of the type "
                      f"{_GO_TYPES.get(type(cur), type(cur).__name__)}, expected {'int64' if want is int else 'string'}")
    return cur, ""


def _replicas_causes(obj: Obj, path: str) -> list[Cause]:
    value, err = _nested(obj, path, int)
    if err:
        return [field_invalid(path, 0, err)]
    if value is None:
        return []
    if value < 0:
        return [field_invalid(path, value, "should be a non-negative integer")]
    if value > _MAX_INT32:
        return [field_invalid(path, value, f"should be less than or equal to {_MAX_INT32}")]
    return []


def _has_embedded(s: Structural | None) -> bool:
    """Whether a schema has an x-kubernetes-embedded-resource anywhere (whose metadata is coerced too)."""
    if s is None:
        return False
    if s.embedded_resource:
        return True
    if any(_has_embedded(p) for p in s.properties.values()):
        return True
    if isinstance(s.additional_properties, Structural) and _has_embedded(s.additional_properties):
        return True
    return _has_embedded(s.items)


def _set_path(obj: Obj, path: str, value: Any) -> None:
    """Write ``value`` at a simple ``.a.b.c`` path, making the maps on the way (scale's specReplicasPath)."""
    parts = [p for p in path.lstrip(".").split(".") if p]
    cur = obj
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = cur[p] = {}
        cur = nxt
    if parts:
        cur[parts[-1]] = value


class CustomResourceStrategy(Strategy):
    """How the generic store treats the objects of one CRD version (kube's customresource strategy)."""

    core_finalizers = False  # custom objects may have any qualified finalizer
    tracks_generation = True
    # kube's status strategy: the old object with the new status (its reset fields name spec only)
    status_keeps_metadata = None
    status_reset_fields = (("spec",),)
    list_hint = "list within a namespace or with a narrower label selector"
    strategic_merge_patch = False  # kube: 415, custom resources have no patch strategy
    typed_list_items = True  # kube's unstructured lists keep each item's apiVersion and kind

    def __init__(self, *, group: str, version: str, kind: str, storage_version: str,
                 props: Obj | None, has_status: bool, scale: Mapping[str, Any] | None,
                 columns: list[Mapping[str, Any]] | None, selectable: list[str],
                 conversion: Conversion | None) -> None:
        self.group = group
        self.version = version
        self.kind = kind
        self.api_version = f"{group}/{version}"
        self.storage_api_version = f"{group}/{storage_version or version}"
        self.has_status = has_status
        self.props = props
        self.openapi_schema = props  # published by kapi.api.openapi
        self.schema: Structural | None = from_props(props) if isinstance(props, dict) else None
        self.conversion = conversion
        # coercion walks the schema only where embedded resources are; else only the root's metadata
        self._coerce_schema = self.schema if _has_embedded(self.schema) else None
        self.printer = custom_printer(columns)  # type: ignore[misc]
        self.selectable: tuple[tuple[str, Path], ...] = tuple(
            (_field_label(p), compile_path(p)) for p in selectable)
        # kube's crConverter.ConvertFieldLabel: metadata.name, metadata.namespace (namespaced kinds) and
        # the selectable fields; anything else is "field label not supported"
        self.field_labels = FieldLabels(META_FIELDS | {label for label, _ in self.selectable},  # type: ignore[misc]
                                        converts=True)
        scale = scale or {}
        self.spec_replicas_path = str(scale.get("specReplicasPath", "") or "")
        self.status_replicas_path = str(scale.get("statusReplicasPath", "") or "")
        self.label_selector_path = str(scale.get("labelSelectorPath", "") or "")
        self._spec_replicas = compile_path(self.spec_replicas_path) if self.spec_replicas_path else None
        self._status_replicas = compile_path(self.status_replicas_path) if self.status_replicas_path else None
        self._label_selector = compile_path(self.label_selector_path) if self.label_selector_path else None
        # CEL rules compiled once per version (rules that do not compile are the CRD validation's refusal)
        self.rules: CompiledRules | None = compile_rules(self.schema) if self.schema is not None else None
        # A conversion webhook is I/O: the registry awaits convert_from_storage / convert_to_storage
        self.converts_async = bool(conversion is not None and storage_version and storage_version != version
                                   and conversion.needs_async)
        self._managed_schema: tuple[Schema, Schema] | None = None  # see managed_fields_schema
        self.siblings: tuple[CustomResourceStrategy, ...] = (self,)  # every served version's strategy

    # ------------------------------------------------------------ schema

    def _prune(self, obj: Obj, *, stored: bool = False) -> list[str]:
        """kube's schema coercion of a decoded object: metadata coerced to ObjectMeta (an invalid one
        dropped when read from storage), then unknown fields pruned; the paths of what was dropped."""
        dropped: list[str] = []
        err, unknown = coerce(obj, self._coerce_schema, root=True, drop_invalid=stored)
        if err is not None and not stored:
            name = str((obj.get("metadata") or {}).get("name", "")) if isinstance(obj.get("metadata"), dict) else ""
            raise errors.invalid(self.kind, self.group, name, [err])
        dropped.extend(unknown)
        if self.schema is not None:
            dropped.extend(prune(obj, self.schema))
        return dropped

    def _apply_defaults(self, obj: Obj) -> None:
        if self.schema is not None:
            default(obj, self.schema)

    def unknown_fields(self, obj: Obj) -> list[str] | None:
        """The fields the version's schema prunes (fieldValidation Warn/Strict), pruned from the body."""
        return self._prune(obj)

    def canonicalize(self, obj: Obj) -> None:
        # what the handler's unknown_fields left (a JSON patch's result is pruned there too) is pruned
        # again here: the registry's own writes (controllers, bootstrap) come this way only
        self._prune(obj)

    def default(self, obj: Obj, old: Obj | None) -> None:
        self._apply_defaults(obj)

    def _schema_causes(self, obj: Obj, old: Obj | None) -> list[Cause]:
        causes: list[Cause] = []
        if self.schema is not None:
            # an update is ratcheted: what it leaves as stored is not judged again (kube's CRDValidationRatcheting)
            causes.extend(validate(self.schema, obj) if old is None else validate_update(self.schema, obj, old))
        if self.rules is not None:
            if any(c.reason == _BLOCKING for c in causes):
                causes.append(_NOT_CHECKED)
            else:
                causes.extend(self.rules.validate(obj, old))
        return causes

    def _scale_causes(self, obj: Obj, *, spec: bool) -> list[Cause]:
        """kube's ValidateScaleSpec / ValidateScaleStatus: the replicas paths hold int32s >= 0, the
        label selector path a string."""
        if not self.spec_replicas_path:
            return []
        causes = _replicas_causes(obj, self.spec_replicas_path) if spec else []
        if self.status_replicas_path:
            causes += _replicas_causes(obj, self.status_replicas_path)
        if self.label_selector_path:
            _value, err = _nested(obj, self.label_selector_path, str)
            if err:
                causes.append(field_invalid(self.label_selector_path, "", err))
        return causes

    def validate(self, obj: Obj) -> list[Cause]:
        return self._schema_causes(obj, None) + self._scale_causes(obj, spec=True)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self._schema_causes(new, old) + self._scale_causes(new, spec=True)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self._schema_causes(new, old) + self._scale_causes(new, spec=False)

    def prepare_for_update(self, res: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
        new = super().prepare_for_update(res, new, old, subresource)
        if subresource == "status":
            # a status write is pruned and defaulted as any write (the status strategy's canonicalize)
            self._prune(new)
            self._apply_defaults(new)
        return new

    def spec_changed(self, new: Obj, old: Obj) -> bool:
        """kube's CR strategy: anything but metadata changed (status too, without a status subresource)."""
        strip = ("metadata", "status") if self.has_status else ("metadata",)
        return {k: v for k, v in new.items() if k not in strip} != {k: v for k, v in old.items() if k not in strip}

    def managed_fields_schema(self, base: Schema) -> Schema:
        """The built-in schema with each served version's structural schema as types (managers of other
        versions are judged in theirs); made once per base."""
        cached = self._managed_schema
        if cached is None or cached[0] is not base:
            types = [t for s in self.siblings if s.schema is not None
                     for t in structural_types(s.group, s.version, s.kind, s.schema)]
            cached = self._managed_schema = (base, base.extended(types) if types else base)
        return cached[1]

    # ------------------------------------------------------------- scale

    def scale_of(self, obj: Obj) -> tuple[int, int, str]:
        def replicas(path: Path | None) -> int:
            if path is None:
                return 0
            found, value = path.first(obj)
            return value if found and isinstance(value, int) and not isinstance(value, bool) else 0

        selector = ""
        if self._label_selector is not None:
            found, value = self._label_selector.first(obj)
            if found and isinstance(value, str):
                selector = value
            elif found and isinstance(value, dict):
                selector = format_label_selector(value)
        return replicas(self._spec_replicas), replicas(self._status_replicas), selector

    def set_replicas(self, obj: Obj, replicas: int) -> None:
        _set_path(obj, self.spec_replicas_path or ".spec.replicas", replicas)

    # ----------------------------------------------------------- storage

    def _convert(self, obj: Obj, api_version: str) -> Obj:
        if obj.get("apiVersion") == api_version:
            return obj
        if self.conversion is not None:
            return self.conversion.convert_sync(obj, api_version)
        out = dict(obj)
        out["apiVersion"] = api_version
        return out

    def to_storage(self, obj: Obj) -> Obj:
        if self.converts_async:
            return obj  # convert_to_storage converted it
        return self._convert(obj, self.storage_api_version)

    def from_storage(self, obj: Obj) -> Obj:
        if self.converts_async:
            return obj  # convert_from_storage converts (then prunes and defaults)
        return self._read(self._convert(obj, self.api_version))

    def _read(self, obj: Obj) -> Obj:
        if self.schema is not None:
            # kube's storage decoder prunes and defaults what it reads (a schema changed since the write)
            self._prune(obj, stored=True)
            self._apply_defaults(obj)
        md = obj.get("metadata")
        if isinstance(md, dict) and not md.get("generation"):
            md["generation"] = 1  # kube's storage coercer repairs a missing generation
        return obj

    async def convert_from_storage(self, objs: list[Obj]) -> list[Obj]:
        if not self.converts_async or self.conversion is None:
            return objs
        return [self._read(o) for o in await self.conversion.convert(objs, self.api_version)]

    async def convert_to_storage(self, obj: Obj) -> Obj:
        if not self.converts_async or self.conversion is None:
            return obj
        return await self.conversion.convert_one(obj, self.storage_api_version)

    # ------------------------------------------------------------- reads

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        out = {}
        for label, path in self.selectable:
            found, value = path.first(obj)
            out[label] = _selectable_value(value) if found else ""
        return out


def custom_resources(crd: Obj, *, client_factory: ClientFactory | None = None,
                     resolve_service: ServiceResolver | None = None) -> list[Resource]:
    """One Resource per served version of ``crd`` (a CustomResourceDefinition, apiextensions.k8s.io/v1).

    Names come from ``status.acceptedNames`` when the CRD has them, else from ``spec.names``.
    ``client_factory`` / ``resolve_service``: how a conversion webhook is reached (the server passes
    them; see ``kapi.apis.crdconversion.conversion_for``). A version converted by a webhook is
    served without a watch cache.
    """
    spec = crd.get("spec") or {}
    group = str(spec.get("group", ""))
    names = dict(spec.get("names") or {})
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    if accepted.get("plural") and accepted.get("kind"):
        names = dict(accepted)
    plural = str(names.get("plural", ""))
    kind = str(names.get("kind", ""))
    singular = str(names.get("singular") or kind.lower())
    namespaced = spec.get("scope", "Namespaced") != "Cluster"
    versions = [v for v in spec.get("versions") or () if isinstance(v, dict)]
    storage = next((str(v.get("name")) for v in versions if v.get("storage")), "")
    try:
        conversion: Conversion | None = conversion_for(crd, client_factory=client_factory,
                                                       resolve_service=resolve_service)
    except Exception:  # noqa: BLE001 - an unusable webhook config: the None strategy serves reads
        conversion = None
    out: list[Resource] = []
    for v in versions:
        if not v.get("served"):
            continue
        name = str(v.get("name", ""))
        sub = v.get("subresources") or {}
        subresources = tuple(s for s in ("status", "scale") if isinstance(sub, dict) and s in sub)
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        selectable = [str(f.get("jsonPath", "")) for f in v.get("selectableFields") or () if isinstance(f, dict)]
        strategy = CustomResourceStrategy(
            group=group, version=name, kind=kind, storage_version=storage, props=schema,
            has_status="status" in subresources, scale=sub.get("scale") if "scale" in subresources else None,
            columns=v.get("additionalPrinterColumns"), selectable=selectable, conversion=conversion)
        out.append(Resource(
            group=group, version=name, resource=plural, kind=kind, namespaced=namespaced,
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            subresources=subresources, storage_prefix=f"{group}/{plural}", strategy=strategy,
            singular_name=singular, storage_version=storage if storage and storage != name else "",
            warning=deprecation_warning(group, v, kind), cacheable=not strategy.converts_async))
    siblings = tuple(r.strategy for r in out if isinstance(r.strategy, CustomResourceStrategy))
    for s in siblings:
        s.siblings = siblings
    return out
