"""Whether one set of PolicyRules covers another (kube's validation.Covers), and the escalation message.

A rule covers another when every request the other allows it allows too. kube breaks the servant
rules down to atoms (one API group, resource, verb and resource name; or one non-resource URL and
verb) and looks for an owner rule covering each atom; the atoms left over are what the owner lacks.
Those are compacted (verbs of the same simple resource merged) and described in kube's compact
form for the Forbidden message of an escalating Role, ClusterRole or binding.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from kapi.errors import aggregate_messages
from kapi.object.access import UserInfo
from kapi.object.validation import go_quote, go_quote_list

Rule = Mapping[str, Any]
Obj = dict[str, Any]

# cluster-admin's rules: what a ClusterRole with an aggregationRule needs its writer to hold.
FULL_AUTHORITY: tuple[Obj, ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)


def _strings(rule: Rule, key: str) -> list[str]:
    value = rule.get(key)
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def breakdown_rule(rule: Rule) -> list[Obj]:
    """kube's BreakdownRule: one rule per (group, resource, verb[, resource name]) and per (URL, verb)."""
    out: list[Obj] = []
    verbs = _strings(rule, "verbs")
    names = _strings(rule, "resourceNames")
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in verbs:
                if names:
                    out.extend({"apiGroups": [group], "resources": [resource], "verbs": [verb],
                                "resourceNames": [name]} for name in names)
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _strings(rule, "nonResourceURLs"):
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _resources_cover_all(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner or all(r in owner for r in wanted):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def _urls_cover_all(owner: list[str], wanted: list[str]) -> bool:
    return all(any(_url_covers(o, path) for o in owner) for path in wanted)


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """kube's ruleCovers: ``owner`` (any rule) covers ``sub`` (an atom of breakdown_rule)."""
    owner_verbs, sub_verbs = _strings(owner, "verbs"), _strings(sub, "verbs")
    owner_groups, sub_groups = _strings(owner, "apiGroups"), _strings(sub, "apiGroups")
    owner_names, sub_names = _strings(owner, "resourceNames"), _strings(sub, "resourceNames")
    verbs = "*" in owner_verbs or all(v in owner_verbs for v in sub_verbs)
    groups = "*" in owner_groups or all(g in owner_groups for g in sub_groups)
    resources = _resources_cover_all(_strings(owner, "resources"), _strings(sub, "resources"))
    urls = _urls_cover_all(_strings(owner, "nonResourceURLs"), _strings(sub, "nonResourceURLs"))
    if not sub_names:
        names = not owner_names
    else:
        names = not owner_names or all(n in owner_names for n in sub_names)
    return verbs and groups and resources and names and urls


def covers(owner_rules: Sequence[Rule], servant_rules: Sequence[Rule]) -> tuple[bool, list[Obj]]:
    """kube's validation.Covers: whether ``owner_rules`` cover ``servant_rules``, and the atoms they do not."""
    uncovered = [sub for rule in servant_rules for sub in breakdown_rule(rule)
                 if not any(rule_covers(owner, sub) for owner in owner_rules)]
    return not uncovered, uncovered


def _simple_key(rule: Rule) -> tuple[str, str, str | None] | None:
    """kube's isSimpleResourceRule: one group, one resource, at most one name, nothing else."""
    if set(rule) - {"apiGroups", "resources", "verbs", "resourceNames"}:
        return None
    names = _strings(rule, "resourceNames")
    groups, resources = _strings(rule, "apiGroups"), _strings(rule, "resources")
    if len(names) > 1 or len(groups) != 1 or len(resources) != 1:
        return None
    return groups[0], resources[0], names[0] if names else None


def compact_rules(rules: Sequence[Rule]) -> list[Obj]:
    """kube's CompactRules: the verbs of rules naming the same single group/resource/name merged."""
    compacted: list[Obj] = []
    simple: dict[tuple[str, str, str | None], Obj] = {}
    for rule in rules:
        key = _simple_key(rule)
        if key is None:
            compacted.append(dict(rule))
            continue
        found = simple.get(key)
        if found is None:
            simple[key] = {k: list(v) for k, v in rule.items()}
            continue
        verbs = found.setdefault("verbs", [])
        for verb in _strings(rule, "verbs"):
            if verb not in verbs:
                verbs.append(verb)
    compacted.extend(simple.values())
    return compacted


def compact_string(rule: Rule) -> str:
    """kube's rbacv1helpers.CompactString: ``{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}``."""
    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"), ("resourceNames", "ResourceNames"),
                       ("verbs", "Verbs")):
        values = _strings(rule, key)
        if values:
            parts.append(f"{label}:{go_quote_list(values)}")
    return "{" + ", ".join(parts) + "}"


def escalation_error(user: UserInfo, owner_rules: Sequence[Rule], rules: Sequence[Rule],
                     resolution_errors: Sequence[str] = ()) -> str | None:
    """kube's ConfirmNoEscalation: None when ``owner_rules`` cover ``rules``, else the refusal's text.

    ``resolution_errors``: what resolving the owner's rules met (a binding to a missing role); kube
    reports them after the missing rights.
    """
    ok, missing = covers(owner_rules, rules)
    if ok:
        return None
    descriptions = sorted({compact_string(rule) for rule in compact_rules(missing)})
    msg = (f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
           f"permissions not currently held:\n" + "\n".join(descriptions))
    if resolution_errors:
        msg += f"; resolution errors: [{aggregate_messages(resolution_errors)}]"
    return msg
