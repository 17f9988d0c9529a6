"""JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

All three take decoded JSON documents and return a new document; the inputs are
never mutated and the result shares no containers with them. Errors are the
``kapi.errors`` that kube-apiserver's patch handler answers with: an undecodable
patch is 400 BadRequest, a JSON patch that does not apply is 422 Invalid.

No patch can cost more than its size suggests (issue 10): a JSON patch has at
most ``MAX_JSON_PATCH_OPERATIONS`` operations and its ``copy`` operations may
add at most ``max_copy_bytes`` in all (kube-apiserver's ``JSONPatchMaxCopyBytes``,
the maximum request body size); every recursive walk stops at ``MAX_DEPTH``
levels with a 4xx, and list merges look elements up by key, not by scanning.

``PATCHERS`` is the patch types by media type (kube's patch handler's switch on the
Content-Type): ``patcher_for`` picks one, or answers 415.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from kapi.errors import BadRequest, Invalid, RequestEntityTooLarge, StatusError, UnsupportedMediaType
from kapi.object.schema import GVK, FieldDef, Schema

__all__ = [
    "DEFAULT_MAX_COPY_BYTES",
    "MAX_DEPTH",
    "MAX_JSON_PATCH_OPERATIONS",
    "PATCHERS",
    "PatchError",
    "PatchTarget",
    "Patcher",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "patcher_for",
]

MAX_JSON_PATCH_OPERATIONS = 10000
# kube-apiserver's JSONPatchMaxCopyBytes defaults to its maximum request body size, 3 MiB.
DEFAULT_MAX_COPY_BYTES = 3 * 1024 * 1024
# The deepest value a patch may produce or walk: orjson, which stores every object,
# cannot encode more than 254 levels, and the walks below recurse once per level.
MAX_DEPTH = 250

# kube-apiserver drops the json-patch library's message and answers with the
# generic 422 text; the detail travels as the exception's __cause__.
_JSON_PATCH_FAILED = "the server rejected our request due to an error in our request"

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"


class PatchError(Exception):
    """Why a patch did not apply, in the words of the Go libraries."""


def _dump(value: Any) -> bytes:
    """``value`` as JSON; a value nested too deep to encode is a ``PatchError``."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: "Recursion limit reached"
        raise PatchError(f"the value is nested more than {MAX_DEPTH} levels deep") from None


def _copy(value: Any) -> Any:
    """A deep copy of a decoded JSON value (orjson round trip: fast and exact)."""
    return orjson.loads(_dump(value))


def _copy_or_400(value: Any) -> Any:
    try:
        return _copy(value)
    except PatchError as exc:
        raise BadRequest(str(exc)) from None


def _too_deep() -> BadRequest:
    return BadRequest(f"the patch is nested more than {MAX_DEPTH} levels deep")


def _check_depth(value: Any) -> None:
    """Raise BadRequest if ``value`` nests more than ``MAX_DEPTH`` levels (no recursion)."""
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH + 1):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return
    raise _too_deep()


def _json_equal(a: Any, b: Any, depth: int = 0) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if depth > MAX_DEPTH:
        raise _too_deep()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(v, b[k], depth + 1) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y, depth + 1) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _canon(value: Any, depth: int = 0) -> Any:
    """A hashable key with ``_json_equal``'s equality (``true`` is not ``1``; key order ignored)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, dict):
        if depth > MAX_DEPTH:
            raise _too_deep()
        return ("m", frozenset((k, _canon(v, depth + 1)) for k, v in value.items()))
    if isinstance(value, list):
        if depth > MAX_DEPTH:
            raise _too_deep()
        return ("l", tuple(_canon(v, depth + 1) for v in value))
    return value


# ------------------------------------------------------------ JSON patch


def _parse_pointer(pointer: Any) -> list[str]:
    if not isinstance(pointer, str):
        raise PatchError(f"invalid JSON pointer {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f'JSON pointer must be empty or start with a "/": {pointer}')
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _array_index(token: str, length: int, *, allow_end: bool) -> int:
    """Index of ``token`` in an array of ``length``; ``-`` is the end (add only)."""
    if token == "-" and allow_end:
        return length
    if not token or (token != "0" and token.lstrip("-").startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    try:
        index = int(token)
    except ValueError:
        raise PatchError(f"invalid array index {token!r}") from None
    # json-patch v4 (kube-apiserver's library) accepts negative indices from the end.
    if index < 0:
        index += length
    limit = length if allow_end else length - 1
    if index < 0 or index > limit:
        raise PatchError(f"index out of range: {token}")
    return index


def _parent(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    """The container holding the last token of ``parts``, and that token."""
    node = doc
    for token in parts[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f'doc is missing path: "{path}": missing value')
            node = node[token]
        elif isinstance(node, list):
            node = node[_array_index(token, len(node), allow_end=False)]
        else:
            raise PatchError(f'doc is missing path: "{path}": missing value')
    if not isinstance(node, (dict, list)):
        raise PatchError(f'doc is missing path: "{path}": missing value')
    return node, parts[-1]


def _get(doc: Any, path: str) -> Any:
    parts = _parse_pointer(path)
    if not parts:
        return doc
    container, token = _parent(doc, parts, path)
    if isinstance(container, dict):
        if token not in container:
            raise PatchError(f'doc is missing key: "{path}": missing value')
        return container[token]
    return container[_array_index(token, len(container), allow_end=False)]


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _parse_pointer(path)
    if not parts:
        return value
    container, token = _parent(doc, parts, path)
    if isinstance(container, dict):
        container[token] = value
    else:
        container.insert(_array_index(token, len(container), allow_end=True), value)
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    """Remove the value at ``path``; returns (doc, removed value)."""
    parts = _parse_pointer(path)
    if not parts:
        raise PatchError("unable to remove the whole document")
    container, token = _parent(doc, parts, path)
    if isinstance(container, dict):
        if token not in container:
            raise PatchError(f"Unable to remove nonexistent key: {token}: missing value")
        return doc, container.pop(token)
    return doc, container.pop(_array_index(token, len(container), allow_end=False))


def _replace(doc: Any, path: str, value: Any) -> Any:
    parts = _parse_pointer(path)
    if not parts:
        return value
    container, token = _parent(doc, parts, path)
    if isinstance(container, dict):
        if token not in container:
            raise PatchError(f"replace operation does not apply: doc is missing key: {path}: missing value")
        container[token] = value
    else:
        container[_array_index(token, len(container), allow_end=False)] = value
    return doc


class _CopyBudget:
    """What the ``copy`` operations of one patch may still add, in bytes of JSON."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, value: Any) -> Any:
        """A copy of ``value``, counted against the budget (json-patch's deepCopy size)."""
        raw = _dump(value)
        self.used += len(raw)
        if self.limit > 0 and self.used > self.limit:
            raise PatchError(
                f"Unable to complete the copy, the accumulated size increase of copy is {self.used}, "
                f"exceeding the limit {self.limit}"
            )
        return orjson.loads(raw)


def _apply_op(doc: Any, op: dict[str, Any], budget: _CopyBudget) -> Any:
    kind = op.get("op")
    path = op.get("path")
    if not isinstance(path, str):  # json-patch decodes the pointer into a Go string
        raise PatchError(f"{kind} operation failed to decode path")
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchError(f"{kind} operation missing value")
    if kind == "add":
        return _add(doc, path, _copy(op["value"]))
    if kind == "remove":
        return _remove(doc, path)[0]
    if kind == "replace":
        return _replace(doc, path, _copy(op["value"]))
    if kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise PatchError(f"{kind} operation failed to decode from")
        if kind == "move":
            if path != source and path.startswith(source + "/"):
                raise PatchError(f'move operation: "from" {source} is a prefix of "path" {path}')
            doc, value = _remove(doc, source)
        else:
            value = budget.take(_get(doc, source))
        return _add(doc, path, value)
    if kind == "test":
        try:
            current = _get(doc, path)
        except PatchError:
            current = None
            if op["value"] is not None:
                raise PatchError(f"testing value {path} failed: test failed") from None
        if not _json_equal(current, op["value"]):
            raise PatchError(f"testing value {path} failed: test failed")
        return doc
    raise PatchError(f"Unexpected kind: {kind}")


def apply_json_patch(doc: Any, patch_ops: Any, *, max_copy_bytes: int = DEFAULT_MAX_COPY_BYTES) -> Any:
    """Apply an RFC 6902 JSON patch (a decoded list of operations) to ``doc``.

    ``max_copy_bytes`` bounds the JSON that all ``copy`` operations together may
    add (0: no bound), as json-patch's ``AccumulatedCopySizeLimit`` does.

    Raises:
        BadRequest: the patch is not a list of operation objects.
        RequestEntityTooLarge: the patch has more than ``MAX_JSON_PATCH_OPERATIONS``.
        Invalid: an operation does not apply (a failed ``test``, the copy budget
            spent, a result nested too deep included).
    """
    if not isinstance(patch_ops, list) or not all(isinstance(op, dict) for op in patch_ops):
        shape = "object" if isinstance(patch_ops, dict) else "value"
        raise BadRequest(f"json: cannot unmarshal {shape} into Go value of type jsonpatch.Patch")
    if len(patch_ops) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestEntityTooLarge(
            f"Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(patch_ops)}"
        )
    budget = _CopyBudget(max_copy_bytes)
    try:
        result = _copy(doc)
        for op in patch_ops:
            result = _apply_op(result, op, budget)
        # moves can nest a value one level deeper per operation: the result must stay encodable
        _dump(result)
    except PatchError as exc:
        raise Invalid(_JSON_PATCH_FAILED) from exc
    return result


# ----------------------------------------------------------- merge patch


def _merge(target: Any, patch: Any, depth: int = 0) -> Any:
    """RFC 7386 MergePatch on values we own (the result may reuse ``target``)."""
    if not isinstance(patch, dict):
        return patch
    if depth > MAX_DEPTH:
        raise _too_deep()
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value, depth + 1)
    return target


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge, ``null`` deletes, the rest replaces.

    ``doc`` is left as it was; the result shares the parts of it the patch does not reach (a caller
    that changes the result in place passes a ``doc`` of its own, as the registry's update does).

    Raises:
        BadRequest: the patch is nested more than ``MAX_DEPTH`` levels deep.
    """
    _check_depth(patch)
    return _merge_shared(doc, _copy_or_400(patch))


def _merge_shared(target: Any, patch: Any, depth: int = 0) -> Any:
    """``_merge`` leaving ``target`` as it was: only the objects on the patch's paths are copied (one
    level each); what the patch does not reach is shared with ``target``, as a copy of it would read."""
    if not isinstance(patch, dict):
        return patch
    if depth > MAX_DEPTH:
        raise _too_deep()
    target = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge_shared(target.get(key), value, depth + 1)
    return target


# ------------------------------------------------ strategic merge patch


def _go_format(value: Any, depth: int = 0) -> str:
    """``%v`` of a decoded JSON value as Go prints it, for error messages."""
    if depth > MAX_DEPTH:
        raise _too_deep()
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_format(value[k], depth + 1)}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_format(v, depth + 1) for v in value) + "]"
    return str(value)


def _internal(message: str) -> StatusError:
    # kube-apiserver returns the library's plain error unmapped, a 500; it is the client's patch
    # that is wrong, so kapi answers 400 with the library's words (issue 10: no 500 for bad input).
    return BadRequest(message)


def _no_merge_key(item: Any, merge_key: str) -> StatusError:
    return _internal(f"map: {_go_format(item)} does not contain declared merge key: {merge_key}")


class _Merger:
    """One strategic merge: the schema walk and the merge rules of apimachinery's strategicpatch."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def child(self, shape: FieldDef | None, key: str) -> FieldDef | None:
        """The shape of ``key`` inside a value of ``shape`` (None when unknown)."""
        if shape is None:
            return None
        t = self.schema.resolve(shape)
        if t is not None:
            return t.fields.get(key) if t.is_struct else None
        if shape.type == "object":
            return shape.values
        return None

    # The walks recurse along the patch, at most two calls a level: _check_depth bounds them.
    def fresh(self, value: Any, shape: FieldDef | None) -> Any:
        """A patch value that lands where nothing was: directives applied, nulls dropped."""
        if isinstance(value, dict):
            return self.merge_map({}, value, shape)
        if isinstance(value, list):
            if shape is not None and "merge" in shape.patch_strategies:
                return self.merge_list([], value, shape)
            items = shape.items if shape is not None else None
            return [self.fresh(v, items) for v in value]
        return value

    def merge_map(self, original: dict[str, Any], patch: dict[str, Any], shape: FieldDef | None) -> dict[str, Any]:
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if directive == "replace":
                rest = {k: v for k, v in patch.items() if k != _DIRECTIVE}
                return self.merge_map({}, rest, shape)
            if directive == "delete":
                return {}
            raise _internal(f"unknown patch type: {_go_format(directive)} in map: {_go_format(patch)}")
        patch = dict(patch)
        self._retain_keys(original, patch)
        for key in [k for k in patch if k.startswith(_SET_ORDER)]:
            self._set_element_order(original, patch, key, shape)
        for key, value in patch.items():
            delete_list = key.startswith(_DELETE_FROM)
            if delete_list:
                key = key[len(_DELETE_FROM) :]
            if value is None:
                original.pop(key, None)
                continue
            sub = self.child(shape, key)
            if key not in original:
                if not delete_list:
                    original[key] = self.fresh(value, sub)
                continue
            current = original[key]
            if delete_list:
                if isinstance(current, list) and isinstance(value, list):
                    gone = {_canon(v) for v in value}
                    original[key] = [x for x in current if _canon(x) not in gone]
                else:
                    raise BadRequest("invalid patch format of primitive list")
            elif isinstance(current, dict) and isinstance(value, dict):
                if sub is not None and "replace" in sub.patch_strategies:
                    original[key] = self.fresh(value, sub)
                else:
                    original[key] = self.merge_map(current, value, sub)
            elif isinstance(current, list) and isinstance(value, list):
                if sub is not None and "merge" in sub.patch_strategies:
                    original[key] = self.merge_list(current, value, sub)
                else:
                    original[key] = self.fresh(value, sub)
            else:
                original[key] = self.fresh(value, sub)
        return original

    def _retain_keys(self, original: dict[str, Any], patch: dict[str, Any]) -> None:
        if _RETAIN_KEYS not in patch:
            return
        keep = patch.pop(_RETAIN_KEYS)
        if not isinstance(keep, list):
            raise BadRequest("invalid patch format of retainKeys")
        allowed = {k for k in keep if isinstance(k, str)}
        for key, value in patch.items():
            if value is None or key.startswith((_DELETE_FROM, _SET_ORDER)):
                continue
            if key not in allowed:
                raise BadRequest("invalid patch format of retainKeys")
        for key in [k for k in original if k not in allowed]:
            del original[key]

    def _set_element_order(
        self, original: dict[str, Any], patch: dict[str, Any], directive_key: str, shape: FieldDef | None
    ) -> None:
        order = patch.pop(directive_key)
        key = directive_key[len(_SET_ORDER) :]
        if not isinstance(order, list):
            raise BadRequest("invalid patch format of setElementOrder list")
        sub = self.child(shape, key)
        merge_key = sub.merge_key if sub is not None else ""
        found_original, found_patch = key in original, key in patch
        current = original.get(key, [])
        incoming = patch.pop(key, [])
        if not isinstance(current, list) or not isinstance(incoming, list):
            raise BadRequest("invalid patch format of setElementOrder list")
        _validate_set_order(incoming, order, merge_key)
        if found_original and found_patch:
            if sub is not None and "merge" in sub.patch_strategies:
                merged = self.merge_list(current, incoming, sub)
            else:
                merged = self.fresh(incoming, sub)
        elif found_patch:
            merged = self.fresh(incoming, sub)
        elif found_original:
            merged = current
        else:
            return
        in_order, server_only = _partition(merged, order, merge_key)
        is_map = any(isinstance(v, dict) for v in (*current, *incoming))
        original[key] = _normalize_order(in_order, server_only, order, current, merge_key if is_map else "")

    def merge_list(self, original: list[Any], patch: list[Any], shape: FieldDef) -> list[Any]:
        if not original and not patch:
            return original
        items = shape.items
        if any(isinstance(v, list) for v in (*original, *patch)):
            raise Invalid(_JSON_PATCH_FAILED) from PatchError("lists of lists are not supported")
        if not any(isinstance(v, dict) for v in (*original, *patch)):
            merged = _dedupe([*original, *patch])
            in_patch, server_only = _partition(merged, patch, "")
            return _normalize_order(in_patch, server_only, patch, original, "")
        merge_key = shape.merge_key
        if not merge_key:
            raise _internal("cannot merge lists without merge key for type map")
        original, patch = self._special_elements(original, patch, merge_key, items)
        # The live order is the list before new elements are appended, so those sort first.
        server_order = list(original)
        # by merge key, first element wins (a scan would make the merge quadratic)
        where: dict[Any, int] = {}
        for i, o in enumerate(original):
            if isinstance(o, dict) and merge_key in o:
                where.setdefault(_canon(o[merge_key]), i)
        for item in patch:
            if not isinstance(item, dict) or merge_key not in item:
                raise _no_merge_key(item, merge_key)
            key = _canon(item[merge_key])
            at = where.get(key, -1)
            if at >= 0:
                original[at] = self.merge_map(original[at], item, items)
            else:
                fresh = self.fresh(item, items)
                if isinstance(fresh, dict) and merge_key in fresh:
                    where.setdefault(_canon(fresh[merge_key]), len(original))
                original.append(fresh)
        in_patch, server_only = _partition(original, patch, merge_key)
        return _normalize_order(in_patch, server_only, patch, server_order, merge_key)

    def _special_elements(
        self, original: list[Any], patch: list[Any], merge_key: str, items: FieldDef | None
    ) -> tuple[list[Any], list[Any]]:
        """Apply ``$patch`` list elements; returns (original, patch without them)."""
        plain: list[Any] = []
        deleted: set[Any] = set()
        replace = False
        for item in patch:
            if not isinstance(item, dict) or _DIRECTIVE not in item:
                plain.append(item)
                continue
            directive = item[_DIRECTIVE]
            if directive == "delete":
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key)
                deleted.add(_canon(item[merge_key]))
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise _internal("merging lists cannot yet be specified in the patch")
            else:
                raise _internal(f"unknown patch type: {_go_format(directive)} in map: {_go_format(item)}")
        if deleted:
            original = [
                o for o in original if not (isinstance(o, dict) and _canon(o.get(merge_key)) in deleted)
            ]
        if replace:
            return [self.fresh(item, items) for item in plain], []
        return original, plain


def _scalar_key(value: Any) -> Any:
    # bool and number must not collide (True == 1 in Python); 1 and 1.0 should.
    return _canon(value)


def _dedupe(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for v in values:
        k = _scalar_key(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _index_fn(order: list[Any], merge_key: str) -> Callable[[Any], int]:
    """Position of an element in ``order`` (by merge key for maps), -1 if absent."""
    if merge_key:
        positions: dict[Any, int] = {}
        for i, o in enumerate(order):
            if isinstance(o, dict) and merge_key in o:
                positions.setdefault(_scalar_key(o[merge_key]), i)
        return lambda v: positions.get(_scalar_key(v.get(merge_key)), -1) if isinstance(v, dict) else -1
    scalar_positions: dict[Any, int] = {}
    for i, o in enumerate(order):
        scalar_positions.setdefault(_scalar_key(o), i)
    return lambda v: scalar_positions.get(_scalar_key(v), -1)


def _partition(merged: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Split ``merged`` into elements present in ``by`` and the rest."""
    index = _index_fn(by, merge_key)
    present, rest = [], []
    for v in merged:
        if merge_key and not (isinstance(v, dict) and merge_key in v):
            raise _no_merge_key(v, merge_key)
        (present if index(v) >= 0 else rest).append(v)
    return present, rest


def _normalize_order(
    patch_items: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any], merge_key: str
) -> list[Any]:
    """apimachinery's normalizeElementOrder: patch order first, server items woven in by live order."""
    patch_index = _index_fn(patch_order, merge_key)
    server_index = _index_fn(server_order, merge_key)
    patch_items = sorted(patch_items, key=patch_index)
    server_only = sorted(server_only, key=server_index)
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if j >= len(patch_items):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(patch_items[j])
            j += 1
        else:
            li, ri = server_index(server_only[i]), server_index(patch_items[j])
            # An item new to the server (ri < 0) goes before the remaining server-only items.
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(patch_items[j])
                j += 1
    return out


def _validate_set_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Every patch element must appear in the setElementOrder list, in the same relative order."""
    index = _index_fn(order, merge_key)
    last = -1
    for item in patch_list:
        if isinstance(item, dict) and _DIRECTIVE in item:
            continue
        at = index(item)
        if at < 0 or at < last:
            raise BadRequest("invalid patch format of setElementOrder list")
        last = at


def apply_strategic_merge_patch(doc: Any, patch: Any, schema: Schema, gvk: GVK | tuple[str, str, str]) -> Any:
    """Apply a strategic merge patch to ``doc``, an object of kind ``gvk`` known to ``schema``.

    Lists whose field declares patch strategy ``merge`` merge by their merge key
    (or as sets for primitives); other lists are replaced. Directives: ``$patch``
    (replace/delete/merge), ``$retainKeys``, ``$setElementOrder/<field>``,
    ``$deleteFromPrimitiveList/<field>``; ``null`` deletes a field.

    Raises:
        BadRequest: the patch is not an object, or a directive is malformed.
        BadRequest: also an element lacking its merge key or an unknown ``$patch`` directive
            (kube-apiserver's 500: the library's error unmapped).
    """
    if not isinstance(patch, dict):
        raise BadRequest("json: cannot unmarshal array into Go value of type map[string]interface {}")
    if not isinstance(gvk, GVK):
        gvk = GVK(*gvk)
    t = schema.type_for(gvk.group, gvk.version, gvk.kind)
    root = FieldDef(name="", type="object", ref=t.name) if t is not None else None
    _check_depth(patch)
    original = _copy_or_400(doc)
    if not isinstance(original, dict):
        original = {}
    return _Merger(schema).merge_map(original, _copy_or_400(patch), root)


@dataclass(frozen=True, slots=True)
class PatchTarget:
    """What a patch applies to, beyond the document: its kind (for strategic merge) and the copy budget."""

    schema: Schema
    gvk: GVK | tuple[str, str, str]
    max_copy_bytes: int = DEFAULT_MAX_COPY_BYTES


@dataclass(frozen=True, slots=True)
class Patcher:
    """One patch type: the JSON shape its body must have (else 400 with ``wrong_shape``) and how it applies."""

    shape: type
    wrong_shape: str
    apply: Callable[[Any, Any, PatchTarget], Any]

    def __call__(self, doc: Any, patch: Any, target: PatchTarget) -> Any:
        if not isinstance(patch, self.shape):
            raise BadRequest(self.wrong_shape)
        return self.apply(doc, patch, target)


# The patch types patched here; application/apply-patch+yaml (server-side apply) is the registry's
# (kapi.registry.applying).
PATCHERS: dict[str, Patcher] = {
    "application/json-patch+json": Patcher(
        list, "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        lambda doc, patch, t: apply_json_patch(doc, patch, max_copy_bytes=t.max_copy_bytes)),
    "application/merge-patch+json": Patcher(
        dict, "error decoding patch: a merge patch must be a JSON object",
        lambda doc, patch, t: apply_merge_patch(doc, patch)),
    "application/strategic-merge-patch+json": Patcher(
        dict, "error decoding patch: a strategic merge patch must be a JSON object",
        lambda doc, patch, t: apply_strategic_merge_patch(doc, patch, t.schema, t.gvk)),
}


def patcher_for(content_type: str) -> Patcher:
    """The patcher of a request's Content-Type (parameters ignored); 415 for any other type."""
    base = content_type.split(";", 1)[0].strip().lower()
    patcher = PATCHERS.get(base)
    if patcher is not None:
        return patcher
    raise UnsupportedMediaType(f"the media type {base!r} is not a patch type: use one of " + ", ".join(
        [*PATCHERS, "application/apply-patch+yaml"]))
