"""Room the autoscaler can add, as installed: node groups named by pattern, groups CA
lists that nothing names, and jobs released rather than held when room is unknown."""

from __future__ import annotations

from kube.autoscaler_status import GroupSize
from locality.admission.assign import plan
from locality.admission.config import NodeGroup
from locality.admission.gather import gather
from locality.admission.model import WaitCode
from locality.admission.node_groups import resolve
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from tests.locality.admission.test_assign import CONFIG, LOCALITY, NOW, PG, job, nodes


def sizes(**groups):
    """CA's status: name -> (registered, max)."""
    return {name.replace("_", "-"): GroupSize(name.replace("_", "-"), 0, maximum, current,
                                              current)
            for name, (current, maximum) in groups.items()}


def decide(pods, states, configured=(), listed=None, discovered=()):
    """What the admitter decides: node groups resolved against CA's status, the
    unaccounted ones passed on as unknown room."""
    groups = resolve(configured, listed, discovered)
    unknown = tuple(f"cluster-autoscaler node group {name}" for name in groups.unaccounted)
    gathered = gather(pods, {}, lambda key: [p for p in pods if p.labels.get(
        "headstart.io/job") == key.name], LOCALITY, CONFIG)
    rooms = {level: level_room(states, level, LOCALITY, groups.groups, listed)
             for level in (PG, CLUSTER_LEVEL)}
    return plan(gathered.jobs, rooms, gathered.reservations, NOW, CONFIG,
                gathered.releases, unknown=unknown)


def test_a_pattern_names_every_group_ca_lists_that_matches_it():
    configured = (NodeGroup("eks-p4d-pg-a-*", "p4d", "pg-a"),
                  NodeGroup("eks-p4d-pg-b-*", "p4d", "pg-b", max_size=2),
                  NodeGroup("eks-g5-*", "g5", "pg-b"),
                  NodeGroup("plain", "p4d", "pg-c", max_size=1))
    listed = sizes(eks_p4d_pg_a_1f2e=(0, 4), eks_p4d_pg_a_9c0d=(0, 2), other_group=(0, 3))
    resolved = resolve(configured, listed)
    assert [(g.name, g.domain) for g in resolved.groups] == [
        ("eks-p4d-pg-a-1f2e", "pg-a"), ("eks-p4d-pg-a-9c0d", "pg-a"),
        # A pattern nothing matches stays as written, for its max_size; without one
        # it describes no group (eks-g5-*) and is dropped.
        ("eks-p4d-pg-b-*", "pg-b"), ("plain", "pg-c")]
    assert resolved.unaccounted == ("other-group",)


def test_discovered_groups_never_replace_a_configured_name():
    configured = (NodeGroup("pool/p4d", "p4d", "pg-a", max_size=1),)
    found = (NodeGroup("pool/p4d", "p4d", "pg-z", can_add=9),
             NodeGroup("pool/g5", "g5", "pg-a", can_add=3))
    resolved = resolve(configured, None, found)
    assert [(g.name, g.domain) for g in resolved.groups] == [
        ("pool/p4d", "pg-a"), ("pool/g5", "pg-a")]
    assert resolved.unaccounted == ()


def test_a_pattern_sizes_the_group_from_ca_so_the_job_waits_for_known_room_no_more():
    # pg-a: 1 free p4d node; CA lists eks-p4d-pg-a-xyz at max 3 (0 registered: the
    # node there is not its own). A 4-node required job: 1 + 3 new nodes in pg-a.
    listed = sizes(eks_p4d_pg_a_xyz=(0, 3))
    result = decide(job("big", 4), nodes("pg-a", 1),
                    (NodeGroup("eks-p4d-pg-a-*", "p4d", "pg-a"),), listed)
    [admission] = result.admissions
    assert (str(admission.domain), admission.new_nodes, admission.room_unknown) == \
        (f"{PG}=pg-a", 3, ())


def test_the_issue_case_a_group_ca_lists_but_nothing_names_releases_the_job():
    # As shipped: no node_groups configured, CA lists one group per placement group.
    # A 4-node required job on one free node waited no_fit for ever; now it is released
    # into the domain holding most of it, with the groups it could not account for.
    listed = sizes(p4d_pg_a=(0, 4), p4d_pg_b=(0, 4))
    states = nodes("pg-a", 1) + nodes("pg-b", 1, used=8)
    result = decide(job("big", 4), states, (), listed)
    assert result.waiting == ()
    [admission] = result.admissions
    assert str(admission.domain) == f"{PG}=pg-a"
    assert admission.room_unknown == ("cluster-autoscaler node group p4d-pg-a",
                                      "cluster-autoscaler node group p4d-pg-b")
    assert "holds 1 of its 4 pods there" in admission.note
    assert "p4d-pg-a" in admission.note


def test_with_every_group_accounted_for_the_same_job_waits():
    # The same cluster with both groups named, each at most 2 nodes: pg-a holds 1 + 2,
    # never 4, so the job is inadmissible, and nothing is released on a guess.
    listed = sizes(p4d_pg_a=(0, 2), p4d_pg_b=(0, 2))
    named = (NodeGroup("p4d-pg-a", "p4d", "pg-a"), NodeGroup("p4d-pg-b", "p4d", "pg-b"))
    states = nodes("pg-a", 1) + nodes("pg-b", 1, used=8)
    result = decide(job("big", 4), states, named, listed)
    assert result.admissions == ()
    assert [w.code for w in result.waiting] == [WaitCode.INADMISSIBLE]


def test_a_preferred_job_the_cluster_holds_now_is_released_there_not_to_the_autoscaler():
    # 2 free nodes, one per group; a 2-node preferred job fits no single group but the
    # cluster holds it now: released without a domain, as when room is known.
    listed = sizes(unnamed=(0, 4))
    result = decide(job("pair", 2, group="preferred"), nodes("pg-a", 1) + nodes("pg-b", 1),
                    (), listed)
    [admission] = result.admissions
    assert admission.domain is None and admission.room_unknown == ()


def test_a_job_that_fits_known_room_is_admitted_as_ever_when_other_room_is_unknown():
    listed = sizes(unnamed=(0, 4))
    result = decide(job("small", 1), nodes("pg-a", 1), (), listed)
    [admission] = result.admissions
    assert admission.room_unknown == () and admission.note == f"fits {PG}=pg-a"


def test_no_labelled_node_and_unknown_room_a_required_job_waits_saying_which():
    # Nothing says where a new node would be: a required job cannot be given a domain.
    listed = sizes(gpu_pool=(0, 4))
    result = decide(job("big", 2), nodes("pg-a", 1, unlabeled=True), (), listed)
    [waiting] = result.waiting
    assert waiting.code is WaitCode.NO_LEVEL
    assert "unknown room: cluster-autoscaler node group gpu-pool" in waiting.reason

