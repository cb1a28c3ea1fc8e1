"""The ServiceAccounts' rights against the shipped RBAC (headstart/check/core/rights.py,
headstart/check/shipped.py): what is expected, RBAC's matching for the fallback, and the
result."""

from __future__ import annotations

import pytest

from common.errors import InputError
from headstart.check.core import rights
from headstart.check.core.result import Status
from headstart.check.core.rights import Access, Rule
from headstart.check.shipped import default_manifests, read_shipped
from tests.headstart.check.builders import REPO

EXTENDER = "headstart/headstart-extender"


def shipped_expected():
    bindings, roles = read_shipped(REPO / "manifests")
    return rights.expected(bindings, roles)


def test_the_shipped_rbac_gives_each_account_its_rights():
    assert default_manifests() == REPO / "manifests"
    wanted, unknown = shipped_expected()
    by_account = {}
    for entry in wanted:
        by_account.setdefault(entry.account, set()).add(entry.access)
    assert set(by_account) == {EXTENDER, "headstart/headstart-overprovisioner",
                               "headstart/headstart-scheduler",
                               "headstart/headstart-placeholder-expiry"}
    extender = by_account[EXTENDER]
    assert Access("", "create", "", "pods", "binding") in extender
    assert Access("kube-system", "get", "", "configmaps", name="cluster-autoscaler-status") \
        in extender
    assert Access("headstart", "update", "coordination.k8s.io", "leases",
                  name="headstart-extender-admitter") in extender
    # The upstream roles the scheduler is bound to are the cluster's, not the repository's.
    assert unknown == ["ClusterRole system:kube-scheduler (headstart/headstart-scheduler)",
                       "ClusterRole system:volume-scheduler (headstart/headstart-scheduler)",
                       "Role extension-apiserver-authentication-reader "
                       "(headstart/headstart-scheduler)"]


def test_a_folder_that_is_not_the_manifests_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="no base/ in it"):
        read_shipped(tmp_path)


@pytest.mark.parametrize(("rule", "access", "allowed"), [
    (Rule(("list",), ("",), ("pods",)), Access("", "list", "", "pods"), True),
    (Rule(("list",), ("",), ("pods",)), Access("", "watch", "", "pods"), False),
    (Rule(("*",), ("*",), ("*",)), Access("x", "delete", "apps", "deployments"), True),
    (Rule(("create",), ("",), ("pods",)), Access("", "create", "", "pods", "binding"), False),
    (Rule(("create",), ("",), ("pods/binding",)), Access("", "create", "", "pods", "binding"),
     True),
    (Rule(("create",), ("",), ("*/binding",)), Access("", "create", "", "pods", "binding"),
     True),
    (Rule(("get",), ("",), ("configmaps",), ("a",)), Access("n", "get", "", "configmaps",
                                                            name="b"), False),
    (Rule(("get",), ("",), ("configmaps",), ("a",)), Access("n", "get", "", "configmaps",
                                                            name="a"), True),
    (Rule(("get",), non_resource_urls=("/healthz/*",)), Access("", "get", path="/healthz/etcd"),
     True),
    (Rule(("get",), ("apps",), ("pods",)), Access("", "get", "", "pods"), False),
], ids=["verb", "other-verb", "wildcards", "no-subresource", "subresource",
        "any-resources-subresource", "other-name", "named", "non-resource", "other-group"])
def test_rbacs_rule_matching(rule, access, allowed):
    assert rights.allows(rule, access) is allowed


ROLES = {("ClusterRole", "", "reader"): (Rule(("list",), ("",), ("pods",)),),
         ("Role", "ns", "leases"): (Rule(("get",), ("coordination.k8s.io",), ("leases",)),)}


def binding(kind, name, role_kind, role, subject, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": role_kind, "name": role},
            "subjects": [subject]}


def test_the_clusters_bindings_grant_in_their_scope():
    account = "ns/app"
    bindings = [
        binding("ClusterRoleBinding", "r", "ClusterRole", "reader",
                {"kind": "Group", "name": "system:serviceaccounts:ns"}),
        binding("RoleBinding", "l", "Role", "leases",
                {"kind": "ServiceAccount", "name": "app", "namespace": "ns"}, "ns"),
        binding("ClusterRoleBinding", "other", "ClusterRole", "reader",
                {"kind": "ServiceAccount", "name": "app", "namespace": "elsewhere"}),
    ]
    granted = rights.grants(account, bindings, ROLES)
    assert rights.allowed_by(Access("", "list", "", "pods"), granted)
    assert rights.allowed_by(Access("ns", "get", "coordination.k8s.io", "leases"), granted)
    assert not rights.allowed_by(Access("", "get", "coordination.k8s.io", "leases"), granted)
    assert not rights.allowed_by(Access("other", "get", "coordination.k8s.io", "leases"),
                                 granted)
    assert rights.grants("elsewhere/other", bindings, ROLES) == []


def test_a_missing_right_names_the_file_that_ships_it():
    wanted, _ = shipped_expected()
    extender = tuple(e for e in wanted if e.account == EXTENDER)
    denied = tuple(e for e in extender if e.access.resource == "pods"
                   and e.access.subresource == "binding")
    answer = rights.AccountRights(EXTENDER, "SubjectAccessReview", extender, denied)
    result = rights.rights(answer)
    assert result.name == "rights/headstart-extender" and result.status is Status.FAIL
    assert f"lacks 1 of its {len(extender)} shipped rights (SubjectAccessReview): create " \
           "pods/binding cluster-wide" in result.message
    assert "manifests/base/extender/rbac.yaml" in result.fix
    granted = rights.rights(rights.AccountRights(EXTENDER, "x", extender, ()))
    assert granted.status is Status.OK and f"all {len(extender)} shipped rights" in \
        granted.message
    nothing = rights.rights(rights.AccountRights(EXTENDER, "x", (), (), ("ClusterRole r",)))
    assert nothing.status is Status.SKIP and "ClusterRole r" in nothing.message
