"""Secrets: ``stringData`` is write-only, folded into ``data`` on every write."""

from __future__ import annotations

import base64
from typing import Final

from kapi.encoding.tables import core as tables
from kapi.errors import Cause
from kapi.object.defaults import default_secret
from kapi.object.selectors import META_FIELDS, FieldLabels, text_value
from kapi.object.validation import validate_secret, validate_secret_update
from kapi.registry.resources import Resource
from kapi.registry.strategy import Obj, Strategy


class SecretStrategy(Strategy):
    field_labels = FieldLabels(META_FIELDS | {"type"}, converts=True)
    printer = tables.SECRET

    def canonicalize(self, obj: Obj) -> None:
        """kube-apiserver's conversion merges ``stringData`` into ``data`` (base64) and drops it."""
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = obj.get("data")
            if not isinstance(data, dict):
                data = {}
                obj["data"] = data
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()

    def default(self, obj: Obj, old: Obj | None) -> None:
        default_secret(obj, old)

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_secret(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_secret_update(new, old)

    def own_field_values(self, obj: Obj) -> dict[str, str]:
        return {"type": text_value(obj.get("type"))}


SECRETS: Final = Resource(group="", version="v1", resource="secrets", kind="Secret", strategy=SecretStrategy())
