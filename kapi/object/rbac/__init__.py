"""RBAC's pure semantics over decoded rbac.authorization.k8s.io objects: which rules allow a request,
which subjects a binding names (kube's rbac.go and validation/rule.go). No I/O, no informers."""

from kapi.object.rbac.rules import (
    SERVICE_ACCOUNT_PREFIX,
    api_group_matches,
    applies_to,
    describe_subject,
    non_resource_url_matches,
    resource_matches,
    resource_name_matches,
    rule_allows,
    rules_allow,
    service_account_username,
    subject_index,
    subject_key,
    verb_matches,
)

__all__ = [
    "SERVICE_ACCOUNT_PREFIX",
    "api_group_matches",
    "applies_to",
    "describe_subject",
    "non_resource_url_matches",
    "resource_matches",
    "resource_name_matches",
    "rule_allows",
    "rules_allow",
    "service_account_username",
    "subject_index",
    "subject_key",
    "verb_matches",
]
