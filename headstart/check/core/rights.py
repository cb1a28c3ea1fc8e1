"""Check of headstart's ServiceAccounts' rights against the RBAC the repository ships.

Expected: every access a shipped RoleBinding or ClusterRoleBinding gives a ServiceAccount
(manifests/base/*/rbac.yaml, read by `shipped.py`): each verb on each resource (and
resource name) of each rule of the role it binds, in the binding's namespace or, for a
ClusterRoleBinding, cluster-wide. A role the repository does not ship
(`system:kube-scheduler`, `extension-apiserver-authentication-reader`) is taken as the
cluster has it.

Answered, by the reader, preferably with a SubjectAccessReview per access: the API
server's authorizer answers for the account itself, so aggregated roles, other bindings
and a cloud's own authorizer count as they do for the running pod (a
SelfSubjectAccessReview would answer for the user running the check, not the account).
Creating SubjectAccessReviews needs `create` on `subjectaccessreviews`; where the user
lacks it, the cluster's bindings and roles are read instead and RBAC's rule matching is
applied to them (`allows`, `grants`: kubernetes pkg/apis/rbac/v1 evaluation_helpers.go),
which sees RBAC alone.

Must not: call the API, read files, log. Extra rights beyond the shipped ones are not
looked for (a SubjectAccessReview can only answer a question asked).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headstart.check.core.result import Result, fail, ok, skip

SERVICEACCOUNT_GROUPS = ("system:serviceaccounts", "system:authenticated")


@dataclass(frozen=True)
class Rule:
    """A PolicyRule."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()


def parse_rules(raw: Any) -> tuple[Rule, ...]:
    def strings(value: Any) -> tuple[str, ...]:
        return tuple(str(v) for v in value or ())

    return tuple(Rule(strings(r.get("verbs")), strings(r.get("apiGroups")),
                      strings(r.get("resources")), strings(r.get("resourceNames")),
                      strings(r.get("nonResourceURLs")))
                 for r in raw or () if isinstance(r, Mapping))


@dataclass(frozen=True, order=True)
class Access:
    """One request an account must be allowed to make."""

    namespace: str
    """"" for cluster-wide (a ClusterRoleBinding's rights)."""
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    """A non-resource URL (then group and resource are empty)."""

    def __str__(self) -> str:
        if self.path:
            return f"{self.verb} {self.path}"
        what = self.resource + (f"/{self.subresource}" if self.subresource else "")
        what = f"{what}.{self.group}" if self.group else what
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {what}{named} " + (f"in {self.namespace}" if self.namespace
                                                  else "cluster-wide")


@dataclass(frozen=True)
class Binding:
    """A shipped binding of a ServiceAccount to a role."""

    account: str
    """NAMESPACE/NAME of the ServiceAccount."""
    namespace: str
    """The RoleBinding's namespace, "" for a ClusterRoleBinding."""
    role_kind: str
    role_name: str
    source: str
    """The file that ships it."""


RoleKey = tuple[str, str, str]
"""(kind, namespace, name); namespace "" for a ClusterRole."""


def role_key(binding: Binding) -> RoleKey:
    return (binding.role_kind, binding.namespace if binding.role_kind == "Role" else "",
            binding.role_name)


@dataclass(frozen=True)
class Expected:
    account: str
    access: Access
    source: str


def accesses(rules: Iterable[Rule], namespace: str) -> list[Access]:
    """Every access the rules grant, each verb by resource (and name) by group."""
    found = []
    for rule in rules:
        for verb in rule.verbs:
            for path in rule.non_resource_urls:
                found.append(Access("", verb, path=path))
            for group in rule.api_groups:
                for resource in rule.resources:
                    base, _, sub = resource.partition("/")
                    for name in rule.resource_names or ("",):
                        found.append(Access(namespace, verb, group, base, sub, name))
    return found


def expected(bindings: Sequence[Binding], roles: Mapping[RoleKey, tuple[Rule, ...]]
             ) -> tuple[list[Expected], list[str]]:
    """The accesses each binding gives, and the roles whose rules are not known."""
    found: dict[tuple[str, Access], Expected] = {}
    unknown = []
    for binding in bindings:
        key = role_key(binding)
        rules = roles.get(key)
        if rules is None:
            unknown.append(f"{binding.role_kind} {binding.role_name} ({binding.account})")
            continue
        source = f"{binding.source} ({binding.role_kind} {binding.role_name})"
        for access in accesses(rules, binding.namespace):
            found.setdefault((binding.account, access),
                             Expected(binding.account, access, source))
    return list(found.values()), unknown


def allows(rule: Rule, access: Access) -> bool:
    """RBAC's match of one rule against one access (VerbMatches, APIGroupMatches,
    ResourceMatches, ResourceNameMatches, NonResourceURLMatches)."""
    if access.verb not in rule.verbs and "*" not in rule.verbs:
        return False
    if access.path:
        return any(url == "*" or url == access.path
                   or (url.endswith("*") and access.path.startswith(url[:-1]))
                   for url in rule.non_resource_urls)
    if access.group not in rule.api_groups and "*" not in rule.api_groups:
        return False
    combined = access.resource + (f"/{access.subresource}" if access.subresource else "")
    if not any(r in ("*", combined) or (access.subresource and r == f"*/{access.subresource}")
               for r in rule.resources):
        return False
    return not rule.resource_names or access.name in rule.resource_names


def subject_is(subject: Mapping[str, Any], account: str) -> bool:
    """Whether a binding subject covers ServiceAccount `account` (NAMESPACE/NAME)."""
    namespace, name = account.split("/", 1)
    kind, subject_name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return subject_name == name and subject.get("namespace", "") == namespace
    if kind == "User":
        return subject_name == f"system:serviceaccount:{namespace}:{name}"
    if kind == "Group":
        return subject_name in (*SERVICEACCOUNT_GROUPS, f"system:serviceaccounts:{namespace}")
    return False


def grants(account: str, bindings: Iterable[Mapping[str, Any]],
           roles: Mapping[RoleKey, tuple[Rule, ...]]) -> list[tuple[str, Rule]]:
    """(namespace, rule) of every rule the cluster's bindings give `account`; namespace ""
    for a ClusterRoleBinding's. bindings: RoleBindings and ClusterRoleBindings as the API
    returns them (each with its `kind`)."""
    found = []
    for binding in bindings:
        if not any(subject_is(s, account) for s in binding.get("subjects") or ()):
            continue
        namespace = (binding.get("metadata") or {}).get("namespace", "") \
            if binding.get("kind") == "RoleBinding" else ""
        ref = binding.get("roleRef") or {}
        kind = str(ref.get("kind", ""))
        key = (kind, namespace if kind == "Role" else "", str(ref.get("name", "")))
        found.extend((namespace, rule) for rule in roles.get(key, ()))
    return found


def allowed_by(access: Access, granted: Iterable[tuple[str, Rule]]) -> bool:
    return any((namespace == "" or namespace == access.namespace) and allows(rule, access)
               for namespace, rule in granted)


@dataclass(frozen=True)
class AccountRights:
    """What was asked about one account and what the cluster answered."""

    account: str
    method: str
    """How the answers were got ("SubjectAccessReview", "the cluster's RBAC objects")."""
    expected: tuple[Expected, ...]
    denied: tuple[Expected, ...]
    unknown: tuple[str, ...] = ()
    """Roles whose rules could not be read (their accesses were not asked)."""


def rights(answer: AccountRights) -> Result:
    name = f"rights/{answer.account.split('/', 1)[1]}"
    if not answer.expected:
        return skip(name, f"no shipped right could be checked ({', '.join(answer.unknown)} "
                          "not readable)" if answer.unknown else "ships no binding")
    if answer.denied:
        sources = sorted({e.source.split(" (", 1)[0] for e in answer.denied})
        shown = ", ".join(str(e.access) for e in answer.denied[:3])
        more = len(answer.denied) - 3
        return fail(name, f"{answer.account} lacks {len(answer.denied)} of its "
                          f"{len(answer.expected)} shipped rights ({answer.method}): {shown}"
                          + (f" and {more} more" if more > 0 else ""),
                    f"kubectl apply -k my-cluster (the rules are in {', '.join(sources)})")
    checked = f"all {len(answer.expected)} shipped rights granted ({answer.method})"
    if answer.unknown:
        checked += f"; not checked: {', '.join(answer.unknown)}"
    return ok(name, checked)
