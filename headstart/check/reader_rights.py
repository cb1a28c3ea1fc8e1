"""Reads the cluster's answers about headstart's ServiceAccounts' shipped rights.

Decides how they are asked (core/rights.py says why): the shipped bindings and roles
from the manifests (shipped.py); the rules of roles the repository does not ship, as the
cluster has them; then one SubjectAccessReview per access, as the account
(`system:serviceaccount:NS:NAME` and its groups); where the user may not create
SubjectAccessReviews, the cluster's RoleBindings, ClusterRoleBindings and roles, matched
by RBAC's rules.

Must not: decide whether the rights fit (core/rights.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from headstart.check.api import Api, ApiRefused
from headstart.check.core.rights import (
    SERVICEACCOUNT_GROUPS,
    Access,
    AccountRights,
    Expected,
    RoleKey,
    Rule,
    allowed_by,
    expected,
    grants,
    parse_rules,
)
from headstart.check.shipped import read_shipped

RBAC = "/apis/rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
PARALLEL = 8
"""Reviews in flight at once: a few hundred accesses in a couple of round trips' time."""


def read_rights(api: Api, manifests: Path) -> tuple[tuple[AccountRights, ...], str]:
    """Each account's answers, and why some were not asked ("" when all were)."""
    bindings, roles = read_shipped(manifests)
    roles = dict(roles)
    for binding in bindings:
        kind, name = binding.role_kind, binding.role_name
        key: RoleKey = (kind, binding.namespace if kind == "Role" else "", name)
        if key not in roles:
            try:
                found = api.get(_role_path(key))
            except ApiRefused:
                continue
            if found is not None:
                roles[key] = parse_rules(found.get("rules"))
    wanted, unknown = expected(bindings, roles)
    accounts = sorted({b.account for b in bindings})
    try:
        denied = _reviewed(api, wanted)
        method = "SubjectAccessReview"
    except ApiRefused as refused:
        try:
            denied = _matched(api, wanted, accounts)
        except ApiRefused as also:
            return (), (f"may not create SubjectAccessReviews ({refused}) nor read the "
                        f"cluster's RBAC objects ({also})")
        method = f"the cluster's RBAC objects; SubjectAccessReview: {refused}"
    answers = tuple(AccountRights(
        account, method, tuple(e for e in wanted if e.account == account),
        tuple(sorted((e for e in denied if e.account == account), key=lambda e: e.access)),
        tuple(u for u in unknown if u.endswith(f"({account})"))) for account in accounts)
    return answers, ""


def _role_path(key: RoleKey) -> str:
    kind, namespace, name = key
    return (f"{RBAC}/namespaces/{namespace}/roles/{name}" if kind == "Role"
            else f"{RBAC}/clusterroles/{name}")


def _reviewed(api: Api, wanted: Sequence[Expected]) -> list[Expected]:
    with ThreadPoolExecutor(PARALLEL) as pool:
        answers = list(pool.map(lambda e: _review(api, e.account, e.access), wanted))
    return [e for e, allowed in zip(wanted, answers, strict=True) if not allowed]


def _review(api: Api, account: str, access: Access) -> bool:
    namespace, name = account.split("/", 1)
    spec: dict[str, Any] = {"user": f"system:serviceaccount:{namespace}:{name}",
                            "groups": [*SERVICEACCOUNT_GROUPS,
                                       f"system:serviceaccounts:{namespace}"]}
    if access.path:
        spec["nonResourceAttributes"] = {"path": access.path, "verb": access.verb}
    else:
        spec["resourceAttributes"] = {
            "namespace": access.namespace, "verb": access.verb, "group": access.group,
            "resource": access.resource, "subresource": access.subresource,
            "name": access.name}
    answer = api.request("POST", REVIEWS, body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
    if answer is None:
        raise ApiRefused(404, "SubjectAccessReviews are not served")
    return bool((answer.get("status") or {}).get("allowed"))


def _matched(api: Api, wanted: Sequence[Expected], accounts: Sequence[str]) -> list[Expected]:
    bindings = [{**b, "kind": "ClusterRoleBinding"}
                for b in api.items(f"{RBAC}/clusterrolebindings")]
    bindings += [{**b, "kind": "RoleBinding"} for b in api.items(f"{RBAC}/rolebindings")]
    roles: dict[RoleKey, tuple[Rule, ...]] = {
        ("ClusterRole", "", str(r["metadata"]["name"])): parse_rules(r.get("rules"))
        for r in api.items(f"{RBAC}/clusterroles")}
    roles.update({("Role", str(r["metadata"].get("namespace", "")),
                   str(r["metadata"]["name"])): parse_rules(r.get("rules"))
                  for r in api.items(f"{RBAC}/roles")})
    granted = {account: grants(account, bindings, roles) for account in accounts}
    return [e for e in wanted if not allowed_by(e.access, granted[e.account])]
