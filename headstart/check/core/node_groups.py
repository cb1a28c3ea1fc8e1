"""Checks of the node groups the extender's admitter counts on, against the autoscaler's.

Decides:
- cluster-autoscaler's groups: those its status ConfigMap lists, and those its
  `--nodes=MIN:MAX:NAME` flags name;
- an entry of the extender's `admission.autoscaler.node_groups` that matches none of
  them (a name or a `*` pattern, as `locality.admission.node_groups` matches them) fails:
  the admitter counts no room there, so a job larger than a domain's free room is held
  or released blind; a group CA lists that no entry matches (`resolve`'s `unaccounted`)
  warns: jobs that fit nothing known are released to the autoscaler
  (HeadstartRoomUnknown);
- with Karpenter: every instance type of the overprovisioner's buckets needs a NodePool
  whose `node.kubernetes.io/instance-type` requirement allows it, or its placeholders
  stay pending (a fail when Karpenter is the only autoscaler); a pool that allows it but
  sets no placement-group label in its template never takes placeholders or `required`
  jobs (warn).

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from headstart.check.core.observed import Observed, flag
from headstart.check.core.result import Result, fail, ok, skip, warn
from kube.autoscaler_status import GroupSize
from locality.admission.config import NodeGroup
from locality.admission.node_groups import resolve
from locality.constraints import Requirement

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
NODEPOOLS = ("karpenter.sh/v1", "nodepools")
LIST_GROUPS = ("kubectl -n kube-system get configmap cluster-autoscaler-status -o "
               "jsonpath='{.data.status}' | grep -- '- name:'")


def autoscaler_groups(observed: Observed) -> dict[str, GroupSize]:
    """cluster-autoscaler's node groups by name: its status's, then its --nodes flags'."""
    groups = dict(observed.autoscaler_status.groups or {})
    for ca in observed.autoscalers:
        for value in flag(ca.argv(), "nodes"):
            low, _, rest = value.partition(":")
            high, _, name = rest.partition(":")
            if name and low.isdigit() and high.isdigit():
                groups.setdefault(name, GroupSize(name, int(low), int(high), 0, 0))
    return groups


def node_groups(observed: Observed, configured: Sequence[NodeGroup]) -> Result:
    name = "node-groups"
    groups = autoscaler_groups(observed)
    if not groups:
        if observed.autoscalers or observed.autoscaler_status.found:
            return skip(name, "cluster-autoscaler lists no node group "
                              f"({observed.autoscaler_status.detail}): nothing to compare")
        return skip(name, "no cluster-autoscaler" + (
            ": the admitter reads Karpenter's NodePools as they are" if observed.nodepools
            else ""))
    listed = sorted(groups)
    if not configured:
        return warn(name, f"the extender's config names no node group; cluster-autoscaler's "
                          f"{_some(listed)} are room the admitter does not know",
                    "list them under admission.autoscaler.node_groups in the extender's "
                    "config, with instance_type and domain (docs/extender.md, \"Room the "
                    "autoscaler can add\")")
    unmatched = [g.name for g in configured
                 if not any(fnmatchcase(group, g.name) for group in listed)]
    if unmatched:
        return fail(name, f"the extender's admission.autoscaler.node_groups {_some(unmatched)} "
                          f"match none of cluster-autoscaler's groups ({_some(listed)}): the "
                          "admitter counts no room there",
                    f"name cluster-autoscaler's groups in the extender's config (list them: "
                    f"{LIST_GROUPS})")
    unaccounted = resolve(configured, groups).unaccounted
    if unaccounted:
        return warn(name, f"cluster-autoscaler's groups {_some(unaccounted)} match no entry of "
                          "the extender's node_groups: their room is unknown, and jobs that "
                          "fit nothing known are released to the autoscaler",
                    "add them to admission.autoscaler.node_groups in the extender's config, "
                    "with instance_type and domain")
    return ok(name, f"the extender's {len(configured)} node group entries match "
                    f"cluster-autoscaler's {len(listed)} groups")


def _some(names: Sequence[str], shown: int = 4) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def pool_allows(pool: Mapping[str, Any], instance_type: str) -> bool:
    """Whether a NodePool's instance-type requirement lets it launch `instance_type`."""
    template = (pool.get("spec") or {}).get("template") or {}
    labels = template.get("metadata", {}).get("labels") or {}
    if INSTANCE_TYPE in labels:
        return labels[INSTANCE_TYPE] == instance_type
    for raw in (template.get("spec") or {}).get("requirements") or ():
        if raw.get("key") == INSTANCE_TYPE:
            requirement = Requirement(INSTANCE_TYPE, str(raw.get("operator")),
                                      tuple(str(v) for v in raw.get("values") or ()))
            if not requirement.matches({INSTANCE_TYPE: instance_type}):
                return False
    return True


def nodepools(observed: Observed, instance_types: Sequence[str], placement_label: str
              ) -> Result:
    name = "nodepools"
    if observed.nodepools is None:
        return skip(name, f"{NODEPOOLS[0]} NodePools are not served")
    if not observed.nodepools:
        return skip(name, "no Karpenter NodePool")
    only_karpenter = not observed.autoscalers and not observed.autoscaler_status.found
    unlabelled = []
    for instance_type in instance_types:
        pools = [p for p in observed.nodepools if pool_allows(p, instance_type)]
        if not pools:
            message = (f"no NodePool launches {instance_type}, a bucket of the overprovisioner"
                       + (": its placeholders stay pending" if only_karpenter else ""))
            fix = ("add a NodePool whose requirements allow it (manifests/overlays/eks/"
                   "examples/karpenter-nodepools.yaml), or drop it from the buckets")
            return fail(name, message, fix) if only_karpenter else warn(name, message, fix)
        if not any(placement_label in ((p.get("spec") or {}).get("template", {})
                                       .get("metadata", {}).get("labels") or {})
                   for p in pools):
            unlabelled.append(instance_type)
    if unlabelled:
        return warn(name, f"the NodePools for {_some(unlabelled)} set no {placement_label} "
                          "label: placeholders and `required` jobs select it and never land "
                          "on their nodes",
                    f"add {placement_label} to each pool's template labels (manifests/"
                    "overlays/eks/examples/karpenter-nodepools.yaml)")
    return ok(name, f"every bucket type ({_some(list(instance_types))}) has a NodePool with "
                    f"the {placement_label} label")
