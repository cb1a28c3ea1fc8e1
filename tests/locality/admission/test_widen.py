"""Rule 1's size mismatch and rule 4's widening of `preferred` jobs
(`locality.admission.assign`)."""

from __future__ import annotations

from dataclasses import replace

from locality.admission.assign import plan
from locality.admission.gather import gather
from locality.admission.model import WaitCode
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.model import NodeState
from tests.locality.admission.test_assign import CONFIG, LOCALITY, NOW, PG, job, nodes
from tests.locality.admission.test_unknown_room import decide


def test_a_job_declaring_more_pods_than_its_owner_creates_says_so():
    # The annotation says 4, the owner (a PyTorchJob, an Indexed Job) creates 3: it would
    # wait "incomplete" for a pod that never comes; it waits with the mismatch instead.
    pods = [replace(p, owner_size=3) for p in job("odd", 3, size=4)]
    [waiting] = decide(pods, nodes("pg-a", 4)).waiting
    assert waiting.code is WaitCode.SIZE_MISMATCH
    assert "declares 4 pods" in waiting.reason and "its owner creates 3" in waiting.reason
    # Fewer than the owner's (a PodGroup's minMember below the replicas) is allowed.
    pods = [replace(p, owner_size=5) for p in job("elastic", 3, size=3)]
    assert [str(a.job) for a in decide(pods, nodes("pg-a", 4)).admissions] == ["ns/elastic"]


def blocked(group, count, block, used=0):
    """`nodes` in placement group `group` and topology block `block`."""
    return [NodeState(replace(s.node, domains=(("block", block), (PG, group))), s.requested,
                      s.placeholder_requested)
            for s in nodes(group, count, used=used)]


WIDER = {PG: ("subblock", "block"), "block": ()}


def widen(pods, states):
    gathered = gather(pods, {}, lambda key: [p for p in pods if p.labels.get(
        "headstart.io/job") == key.name], LOCALITY, CONFIG)
    rooms = {level: level_room(states, level, LOCALITY)
             for level in (PG, "subblock", "block", CLUSTER_LEVEL)}
    return plan(gathered.jobs, rooms, gathered.reservations, NOW, CONFIG, gathered.releases,
                wider=WIDER)


def test_a_preferred_job_no_placement_group_holds_widens_to_a_block_before_the_cluster():
    # Block b1: pg-a and pg-b, 2 free nodes each; block b2: pg-c, 2 free nodes. A 4-node
    # preferred job fits no placement group, but block b1 holds it: it goes there, not
    # released over the whole cluster (where it could straddle b1 and b2).
    states = blocked("pg-a", 2, "b1") + blocked("pg-b", 2, "b1") + blocked("pg-c", 2, "b2")
    [admission] = widen(job("wide", 4, group="preferred"), states).admissions
    assert str(admission.domain) == "block=b1"
    assert admission.label_key == "topology.k8s.aws/network-node-layer-1"
    assert "widened (policy preferred) to block=b1" in admission.note
    # With b1 half busy, no block holds it: released over the cluster, which does.
    states = blocked("pg-a", 2, "b1", used=8) + blocked("pg-b", 2, "b1") + \
        blocked("pg-c", 2, "b2")
    [admission] = widen(job("wide", 4, group="preferred"), states).admissions
    assert admission.domain is None and "released without a domain" in admission.note


def test_a_required_job_is_never_widened():
    states = blocked("pg-a", 2, "b1") + blocked("pg-b", 2, "b1")
    result = widen(job("strict", 4), states)
    assert result.admissions == () and [w.code for w in result.waiting] == [WaitCode.INADMISSIBLE]
