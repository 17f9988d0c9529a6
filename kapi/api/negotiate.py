"""Content negotiation: what a client accepts (Accept) and what it sent (Content-Type)."""

from __future__ import annotations

from dataclasses import dataclass

from kapi import errors

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
SERVED_TYPES = (JSON, YAML, PROTOBUF)


@dataclass(frozen=True, slots=True)
class MediaType:
    type: str
    params: dict[str, str]
    q: float = 1.0

    @property
    def as_kind(self) -> str:
        return self.params.get("as", "")


@dataclass(frozen=True, slots=True)
class Output:
    """The representation chosen for a response."""

    media_type: str  # application/json or application/yaml
    as_kind: str = ""  # "", Table, PartialObjectMetadata, PartialObjectMetadataList, APIGroupDiscoveryList
    as_version: str = ""  # v1 / v1beta1 (meta.k8s.io) or v2 / v2beta1 (apidiscovery.k8s.io)
    include_object: str = "Metadata"


def parse_media_types(header: str) -> list[MediaType]:
    """Accept header entries in preference order (q-values, then their order)."""
    out: list[tuple[float, int, MediaType]] = []
    for i, item in enumerate(header.split(",")):
        item = item.strip()
        if not item:
            continue
        pieces = [p.strip() for p in item.split(";")]
        params: dict[str, str] = {}
        for p in pieces[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params[k.strip().lower()] = v.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q <= 0:
            continue
        out.append((-q, i, MediaType(pieces[0].lower(), params, q)))
    out.sort(key=lambda t: (t[0], t[1]))
    return [m for _, _, m in out]


def _not_acceptable(protobuf: bool) -> errors.NotAcceptable:
    types = SERVED_TYPES if protobuf else (JSON, YAML)
    return errors.NotAcceptable("only the following media types are accepted: " + ", ".join(types))


def choose_output(accept: str, *, allow_as: tuple[str, ...] = ("Table", "PartialObjectMetadata",
                                                                "PartialObjectMetadataList"),
                  include_object: str = "", protobuf: bool = False) -> Output:
    """Pick the first acceptable representation; 406 if none is served.

    ``protobuf``: the kind has a protobuf encoding (the built-in types; not custom resources).
    """
    if not accept.strip():
        return Output(JSON)
    for m in parse_media_types(accept):
        base = m.type
        if base in ("*/*", "application/*"):
            return Output(JSON)
        if base == PROTOBUF:
            if protobuf and not m.as_kind:
                return Output(PROTOBUF)
            continue
        if base not in (JSON, YAML):
            continue
        kind = m.as_kind
        if not kind:
            return Output(base)
        group = m.params.get("g", "")
        version = m.params.get("v", "")
        if kind in allow_as and kind in ("Table", "PartialObjectMetadata", "PartialObjectMetadataList") \
                and group == "meta.k8s.io" and version in ("v1", "v1beta1") and base == JSON:
            return Output(base, kind, version, include_object or "Metadata")
        if kind == "APIGroupDiscoveryList" and kind in allow_as and group == "apidiscovery.k8s.io" \
                and version in ("v2", "v2beta1") and base == JSON:
            return Output(base, kind, version)
    raise _not_acceptable(protobuf)


def body_media_type(content_type: str, *, protobuf: bool = True) -> str:
    """The media type of an object body; 415 for one kapi does not read (patch types: kapi.object.patch)."""
    base = content_type.split(";", 1)[0].strip().lower()
    if not base:
        return JSON
    if base in (JSON, YAML, "application/yml", "text/yaml"):
        return YAML if base != JSON else JSON
    if base == PROTOBUF and protobuf:
        return PROTOBUF
    types = SERVED_TYPES if protobuf else (JSON, YAML)
    raise errors.UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(types))
