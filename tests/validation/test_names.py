"""Name rules with kube-apiserver's exact messages."""

from __future__ import annotations

import pytest

from kapi.apis import BUILTIN
from kapi.object.validation import (RULE_DNS1035_LABEL, RULE_DNS1123_LABEL, RULE_DNS1123_SUBDOMAIN,
    RULE_PATH_SEGMENT, go_quote, is_config_map_key, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain,
    is_qualified_name, is_valid_label_value, is_valid_path_segment_name, is_valid_port_name, validate_name)
from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
QNAME_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


@pytest.mark.parametrize("value", ["a", "example.com", "a-b.c-d", "0", "x" * 253])
def test_subdomain_valid(value: str) -> None:
    assert is_dns1123_subdomain(value) == []


@pytest.mark.parametrize("value", ["Foo", "-a", "a-", "a..b", "a_b", "", ".a"])
def test_subdomain_invalid(value: str) -> None:
    assert is_dns1123_subdomain(value) == [SUBDOMAIN_MSG]


def test_subdomain_too_long() -> None:
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_subdomain_trailing_newline_is_invalid() -> None:
    # Go's regexp anchors at the real end of the text
    assert is_dns1123_subdomain("abc\n") == [SUBDOMAIN_MSG]


def test_label() -> None:
    assert is_dns1123_label("my-name") == []
    assert is_dns1123_label("123") == []
    assert is_dns1123_label("My-Name") == [LABEL_MSG]
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_dns1035_label() -> None:
    assert is_dns1035_label("web") == []
    assert is_dns1035_label("1web") == [DNS1035_MSG]
    assert is_dns1035_label("web.app") == [DNS1035_MSG]
    assert is_dns1035_label("w" * 64) == ["must be no more than 63 characters"]


def test_qualified_name() -> None:
    assert is_qualified_name("app") == []
    assert is_qualified_name("app.kubernetes.io/name") == []
    assert is_qualified_name("MyName_1") == []
    assert is_qualified_name("-bad") == [QNAME_NAME_MSG]
    assert is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert is_qualified_name("Example.com/x") == ["prefix part " + SUBDOMAIN_MSG]
    assert is_qualified_name("a/") == ["name part must be non-empty", QNAME_NAME_MSG]
    assert is_qualified_name("n" * 64) == ["name part must be no more than 63 characters"]
    assert is_qualified_name("a/b/c") == [
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
        "'example.com/MyName')"]


def test_label_value() -> None:
    assert is_valid_label_value("") == []
    assert is_valid_label_value("v1.2_3-x") == []
    assert is_valid_label_value("v" * 64) == ["must be no more than 63 characters"]
    assert is_valid_label_value("a b") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]


def test_config_map_key() -> None:
    assert is_config_map_key("app.properties") == []
    assert is_config_map_key("KEY_NAME") == []
    msg = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
           "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
    assert is_config_map_key("a/b") == [msg]
    assert is_config_map_key("..") == ["must not be '..'"]
    assert is_config_map_key("..data") == ["must not start with '..'"]
    assert is_config_map_key(".") == ["must not be '.'"]


def test_path_segment() -> None:
    assert is_valid_path_segment_name("system:controller:x") == []
    assert is_valid_path_segment_name("..") == ["may not be '..'"]
    assert is_valid_path_segment_name(".") == ["may not be '.'"]
    assert is_valid_path_segment_name("a/b%c") == ["may not contain '/'", "may not contain '%'"]


def test_port_name() -> None:
    assert is_valid_port_name("http") == []
    assert is_valid_port_name("8080") == ["must contain at least one letter (a-z)"]
    assert is_valid_port_name("a--b") == ["must contain consecutive hyphens".replace("contain", "not contain")]
    assert is_valid_port_name("HTTP") == ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                                          "must contain at least one letter (a-z)"]


def test_generate_name_masks_trailing_dash() -> None:
    assert validate_name(RULE_DNS1123_SUBDOMAIN, "web-", prefix=True) == []
    assert validate_name(RULE_DNS1123_SUBDOMAIN, "web-") == [SUBDOMAIN_MSG]


def _builtin(resource: str, group: str) -> Resource:
    return next(r for r in BUILTIN if (r.resource, r.group) == (resource, group))


def test_name_rule_table() -> None:
    """The name rule each kind's strategy names (issue 11: it left a table of the validation package)."""
    assert _builtin("namespaces", "").strategy.name_rule == RULE_DNS1123_LABEL
    assert _builtin("services", "").strategy.name_rule == RULE_DNS1035_LABEL
    assert _builtin("nodes", "").strategy.name_rule == RULE_DNS1123_SUBDOMAIN
    assert _builtin("pods", "").strategy.name_rule == RULE_DNS1123_SUBDOMAIN
    assert _builtin("statefulsets", "apps").strategy.name_rule == RULE_DNS1123_LABEL
    assert _builtin("roles", "rbac.authorization.k8s.io").strategy.name_rule == RULE_PATH_SEGMENT
    assert _builtin("clusterrolebindings", "rbac.authorization.k8s.io").strategy.name_rule == RULE_PATH_SEGMENT
    assert Strategy.name_rule == RULE_DNS1123_SUBDOMAIN  # custom resources
    assert _builtin("nodes", "").namespaced is False
    assert _builtin("leases", "coordination.k8s.io").namespaced is True
    assert not any(r.group == "example.com" for r in BUILTIN)


def test_go_quote() -> None:
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("tab\there\n") == '"tab\\there\\n"'
    assert go_quote("\x00\x7f") == '"\\x00\\x7f"'
    assert go_quote("héllo ☃") == '"héllo ☃"'
    assert go_quote("\u00a0") == '"\\u00a0"'
