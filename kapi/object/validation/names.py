"""Name rules of apimachinery's ``util/validation``: DNS labels and subdomains, qualified names,
label values, config keys, path segments, ports and IPs; the ``RULE_*`` a kind's strategy names for
``metadata.name``.
"""

from __future__ import annotations

import ipaddress
import re

from kapi.errors import Cause
from kapi.object.validation.fields import field_invalid


def _blen(value: str) -> int:
    return len(value.encode("utf-8"))


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = [f"'{e}', " for e in examples]
    return f"{msg} (e.g. " + " or ".join(parts) + f"regex used for validation is '{fmt}')"


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                      "or '-', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                      "start with an alphabetic character, and end with an alphanumeric character")
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character")
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character")
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"

_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_QNAME_RE = re.compile(_QNAME_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)


def is_dns1123_label(value: str) -> list[str]:
    """Messages for ``value`` as an RFC 1123 label (namespaces, container names)."""
    errs = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            # a valid subdomain that is not a label: the length was checked, so it has dots
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """Messages for ``value`` as an RFC 1123 subdomain (most object names)."""
    errs = []
    if _blen(value) > 253:
        errs.append(_max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """Messages for ``value`` as an RFC 1035 label (service names)."""
    errs = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Messages for ``value`` as a qualified name (label and annotation keys)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif _blen(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if not _QNAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Messages for ``value`` as a label value."""
    errs = []
    if _blen(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _has_chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value: str) -> list[str]:
    """Messages for ``value`` as a ConfigMap or Secret data key."""
    errs = []
    if _blen(value) > 253:
        errs.append(_max_len_error(253))
    if not _CONFIG_KEY_RE.fullmatch(value):
        errs.append(_regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    errs.extend(_has_chdir_prefix(value))
    return errs


def is_valid_path_segment_name(value: str, prefix: bool = False) -> list[str]:
    """Messages for ``value`` as a path segment (RBAC names): not '.' or '..', no '/' or '%'."""
    if not prefix:
        for bad in (".", ".."):
            if value == bad:
                return [f"may not be '{bad}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


_PORT_NAME_CHARSET_RE = re.compile("[-a-z0-9]+")


def is_valid_port_num(port: int) -> list[str]:
    """Messages for ``port`` as a TCP/UDP port number."""
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(port: str) -> list[str]:
    """Messages for ``port`` as an IANA service name (named ports)."""
    errs = []
    if len(port) > 15:
        errs.append(_max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _inclusive_range(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


RULE_DNS1123_SUBDOMAIN = "dns1123-subdomain"
RULE_DNS1123_LABEL = "dns1123-label"
RULE_DNS1035_LABEL = "dns1035-label"
RULE_PATH_SEGMENT = "path-segment"


def _mask_trailing_dash(name: str) -> str:
    # apimachinery's own quirk: it drops two characters and appends one.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_name(rule: str, name: str, prefix: bool = False) -> list[str]:
    """Messages for ``name`` under ``rule``; ``prefix`` for a generateName."""
    if rule == RULE_PATH_SEGMENT:
        return is_valid_path_segment_name(name, prefix)
    if prefix:
        name = _mask_trailing_dash(name)
    if rule == RULE_DNS1123_LABEL:
        return is_dns1123_label(name)
    if rule == RULE_DNS1035_LABEL:
        return is_dns1035_label(name)
    return is_dns1123_subdomain(name)


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_LEADING_ZEROS_V4 = re.compile(r"[0-9]+(\.[0-9]+){3}")


def parse_ip_sloppy(value: str) -> IPAddress | None:
    """An IP as kube's ``netutils.ParseIPSloppy`` reads it (Go's legacy ``net.ParseIP``); None if it is not one.

    Unlike Python's parser it takes IPv4 octets with leading zeros ("010.0.0.1" is 10.0.0.1) and
    refuses an IPv6 zone ("fe80::1%eth0").
    """
    if "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    if not _LEADING_ZEROS_V4.fullmatch(value):
        return None
    octets = [int(p) for p in value.split(".")]
    return ipaddress.IPv4Address(bytes(octets)) if all(o < 256 for o in octets) else None


def _is_valid_ip(value: str) -> bool:
    return parse_ip_sloppy(value) is not None


def _ip_errors(path: str, value: str) -> list[Cause]:
    if _is_valid_ip(value):
        return []
    return [field_invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


def non_special_ip_errors(path: str, value: str) -> list[Cause]:
    """kube's ValidateNonSpecialIP, for Endpoints' and EndpointSlices' addresses and Services' externalIPs:
    no unspecified, loopback, link-local or link-local multicast address (an IPv4-mapped IPv6 one as its IPv4)."""
    ip = parse_ip_sloppy(value)
    if ip is None:
        return [field_invalid(path, value, "must be a valid IP address")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # Go's net.IP is 16 bytes for both: its checks see ::ffff:127.0.0.1 as 127.0.0.1
    errs: list[Cause] = []
    if ip.is_unspecified:
        errs.append(field_invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        errs.append(field_invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local:
        errs.append(field_invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if _is_link_local_multicast(ip):
        errs.append(field_invalid(path, value,
                                  "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
    return errs


def app_protocol_errors(port_path: str, value: object) -> list[Cause]:
    """A port's appProtocol as kube checks it on Services, Endpoints and EndpointSlices: when set (the
    empty string too), a qualified name (ValidateQualifiedName at ``<port>.appProtocol``)."""
    if not isinstance(value, str):
        return []
    return [field_invalid(f"{port_path}.appProtocol", value, m) for m in is_qualified_name(value)]


def _is_link_local_multicast(ip: IPAddress) -> bool:
    """Go's IsLinkLocalMulticast: 224.0.0.0/24, or ff02::/16 with any flags (ff12::, ff32::, ...)."""
    raw = ip.packed
    if ip.version == 4:
        return raw[:3] == b"\xe0\x00\x00"
    return raw[0] == 0xFF and raw[1] & 0x0F == 0x02


def _is_ipv6(value: str) -> bool:
    return ":" in value and _is_valid_ip(value)
