"""The node groups the extender counts on against cluster-autoscaler's, and Karpenter's
NodePools against the overprovisioner's buckets (headstart/check/core/node_groups.py)."""

from __future__ import annotations

import pytest

from headstart.check.core import node_groups
from headstart.check.core.result import Status
from kube.autoscaler_status import AutoscalerStatus
from locality.admission.config import NodeGroup
from tests.headstart.check.builders import (
    CA_GROUPS,
    autoscaler,
    autoscaler_status,
    installed,
    karpenter_pools,
)

EKS = (NodeGroup("eks-g5-xlarge-pg-a-*", "g5.xlarge", "pg-a"),
       NodeGroup("eks-p4d-24xlarge-pg-a-*", "p4d.24xlarge", "pg-a"))
POOLS = karpenter_pools()


@pytest.mark.parametrize(("configured", "groups", "status", "words", "fix"), [
    (EKS, CA_GROUPS, Status.OK, "2 node group entries match cluster-autoscaler's 2 groups", ""),
    ((NodeGroup("eks-g5-2xlarge-*", "g5.2xlarge", "pg-a"), *EKS), CA_GROUPS, Status.FAIL,
     "node_groups eks-g5-2xlarge-* match none of cluster-autoscaler's groups "
     "(eks-g5-xlarge-pg-a-1a2b3c, eks-p4d-24xlarge-pg-a-4d5e6f)", "cluster-autoscaler-status"),
    ((NodeGroup("g5-pg-a", "g5.xlarge", "pg-a", max_size=4),), ("g5-pg-a",), Status.OK,
     "match", ""),
    (EKS[:1], CA_GROUPS, Status.WARN, "eks-p4d-24xlarge-pg-a-4d5e6f match no entry",
     "add them to admission.autoscaler.node_groups"),
    ((), CA_GROUPS, Status.WARN, "names no node group", "admission.autoscaler.node_groups"),
], ids=["shipped-eks", "misnamed", "literal-name", "unaccounted", "none-configured"])
def test_the_extenders_node_groups_against_cluster_autoscalers(configured, groups, status,
                                                               words, fix):
    result = node_groups.node_groups(installed(autoscaler_status=autoscaler_status(*groups)),
                                     configured)
    assert result.status is status and words in result.message
    assert fix in result.fix


def test_groups_named_by_nodes_flags_count_when_the_status_lists_none():
    observed = installed(autoscaler_status=AutoscalerStatus(found=True, detail="old format"),
                         autoscalers=(autoscaler("--nodes=0:4:eks-g5-xlarge-pg-a-1",
                                                 "--nodes=0:2:eks-p4d-24xlarge-pg-a-2"),))
    assert node_groups.autoscaler_groups(observed).keys() == {"eks-g5-xlarge-pg-a-1",
                                                              "eks-p4d-24xlarge-pg-a-2"}
    assert node_groups.node_groups(observed, EKS).status is Status.OK


def test_nothing_to_compare_without_cluster_autoscalers_groups():
    listed_none = installed(autoscaler_status=AutoscalerStatus(found=True, detail="no groups"))
    assert node_groups.node_groups(listed_none, EKS).status is Status.SKIP
    karpenter = installed(autoscalers=(), autoscaler_status=AutoscalerStatus(), nodepools=POOLS)
    result = node_groups.node_groups(karpenter, EKS)
    assert result.status is Status.SKIP and "NodePools" in result.message


@pytest.mark.parametrize(("pool", "instance_type", "allowed"), [
    (POOLS[0], "g5.xlarge", True),
    (POOLS[0], "p4d.24xlarge", False),
    ({"spec": {"template": {"spec": {"requirements": [
        {"key": "node.kubernetes.io/instance-type", "operator": "NotIn",
         "values": ["g5.xlarge"]}]}}}}, "p4d.24xlarge", True),
    ({"spec": {"template": {"spec": {"requirements": []}}}}, "g5.xlarge", True),
], ids=["in", "not-in-the-list", "not-in-operator", "unrestricted"])
def test_a_pools_instance_type_requirement(pool, instance_type, allowed):
    assert node_groups.pool_allows(pool, instance_type) is allowed


def karpenter(*pools):
    return installed(autoscalers=(), autoscaler_status=AutoscalerStatus(), nodepools=pools)


@pytest.mark.parametrize(("observed", "types", "status", "words", "fix"), [
    (karpenter(*POOLS), ("g5.xlarge", "p4d.24xlarge"), Status.OK, "has a NodePool", ""),
    (karpenter(POOLS[0]), ("g5.xlarge", "p4d.24xlarge"), Status.FAIL,
     "no NodePool launches p4d.24xlarge, a bucket of the overprovisioner: its placeholders "
     "stay pending", "add a NodePool"),
    (installed(nodepools=(POOLS[0],)), ("g5.xlarge", "p4d.24xlarge"), Status.WARN,
     "no NodePool launches p4d.24xlarge", "add a NodePool"),
    (karpenter({**POOLS[0], "spec": {**POOLS[0]["spec"], "template": {
        **POOLS[0]["spec"]["template"], "metadata": {"labels": {}}}}}), ("g5.xlarge",),
     Status.WARN, "set no headstart.io/placement-group label", "template labels"),
    (installed(), ("g5.xlarge",), Status.SKIP, "not served", ""),
], ids=["example-pools", "missing-type", "missing-type-beside-ca", "unlabelled",
        "no-karpenter"])
def test_nodepools_against_the_buckets(observed, types, status, words, fix):
    result = node_groups.nodepools(observed, types, "headstart.io/placement-group")
    assert result.status is status and words in result.message
    assert fix in result.fix
