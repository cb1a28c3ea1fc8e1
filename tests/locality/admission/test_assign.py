"""The admission decision as tables: gated jobs and domains in, admissions and reasons out.

Nodes are 8-GPU, 96-CPU nodes unless a row says otherwise; every job's pods ask for 1
CPU and 1 GiB beside their GPUs, so GPUs decide every fit here.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bucketing.resources import Resources
from kube.autoscaler_status import GroupSize
from locality.admission.assign import plan
from locality.admission.config import GATE, AdmissionConfig, NodeGroup
from locality.admission.gang_preemption import candidates, leaving
from locality.admission.gather import gather
from locality.admission.model import Domain, WaitCode
from locality.admission.record import GangRecord, GangState
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig
from locality.constraints import PodConstraints, Requirement, Taint, Term, Toleration
from locality.model import JobKey, NodeState
from tests.locality.builders import make_pod, make_state

LOCALITY = LocalityConfig()
CONFIG = AdmissionConfig(head_reserve_after_seconds=60, settle_seconds=10)
NOW = 10_000.0
PG = PLACEMENT_GROUP_LEVEL
PG_KEY = LOCALITY.placement_group_labels[0]


def job(name, pods, gpus=8, group="required", size=None, created=NOW - 100, priority=0,
        packing=None, known=None, namespace="ns"):
    """`pods` gated pods of `gpus` GPUs each, created at `created` (one second apart)."""
    size = pods if size == "auto" or size is None else size
    made = []
    for index in range(pods):
        pod = make_pod(f"{name}-{index}", job=name, gpus=gpus, group=group, job_size=size,
                       packing=packing, namespace=namespace)
        annotations = dict(pod.annotations)
        if size == 0:
            annotations.pop("headstart.io/job-size")
        made.append(replace(pod, annotations=annotations, scheduling_gates=(GATE,),
                            priority=priority, created_at=created + index))
    return made


def admitted(pod_name, domain, gpus=8, job_name="old"):
    """A pod admitted earlier into `domain`, not bound yet, with the annotation the
    admitter writes; `decide` gives its job the gang record the admitter writes too."""
    pod = make_pod(pod_name, job=job_name, gpus=gpus)
    return replace(pod, annotations={**pod.annotations, "headstart.io/domain": f"{PG}={domain}"})


def nodes(group, count, gpus=8, used=0, instance_type="p4d", unlabeled=False):
    made = []
    for index in range(count):
        pods = [make_pod(f"busy-{group}-{index}", gpus=used, node=f"{group}-{index}",
                         cpu=0, memory_gib=0)] if used else []
        state = make_state(f"{group}-{index}", gpus=gpus, group=None if unlabeled else group,
                           pods=pods)
        made.append(NodeState(replace(state.node, instance_type=instance_type),
                              state.requested, state.placeholder_requested))
    return made


def records_of(pods):
    """The Admitted gang records of the jobs of `admitted` pods."""
    found = {}
    for pod in pods:
        raw = pod.annotations.get("headstart.io/domain")
        if raw:
            key = JobKey(pod.namespace, pod.labels["headstart.io/job"])
            found[key] = GangRecord(key, GangState.ADMITTED, Domain.parse(raw), PG_KEY,
                                    name=key.name)
    return found


def decide(pods, states, groups=(), extra=(), now=NOW, config=CONFIG, sizes=None,
           records=None):
    """records: the gang records by job; None: those the admitter wrote for `extra`'s
    admitted pods (`records_of`)."""
    everything = list(pods) + list(extra)

    def of_job(key):
        return [p for p in everything if p.labels.get("headstart.io/job") == key.name
                and p.namespace == key.namespace]

    if records is None:
        records = records_of(extra)
    gathered = gather(pods, records, of_job, LOCALITY, config)
    levels = {j.level for j in gathered.jobs} | {PG, CLUSTER_LEVEL}
    rooms = {level: level_room(states, level, LOCALITY, groups, sizes) for level in levels}
    return plan(gathered.jobs, rooms, gathered.reservations, now, config, gathered.releases,
                candidates(records.values(), of_job), leaving(records.values(), of_job))


def summary(result):
    return ({str(a.job): (str(a.domain) if a.domain else None, a.new_nodes)
             for a in result.admissions},
            {str(w.job): w.code for w in result.waiting})


CASES = [
    pytest.param(
        # pg-a: 2 nodes x 8 = 16 GPUs free; a: 2 x 8 = 16 GPUs, b the same: one fits.
        job("a", 2, created=NOW - 200) + job("b", 2, created=NOW - 100),
        nodes("pg-a", 2), (),
        ({"ns/a": (f"{PG}=pg-a", 0)}, {"ns/b": WaitCode.NO_FIT}),
        id="two-required-jobs-room-for-one-older-first"),
    pytest.param(
        # As above with b at priority 10: priority beats age.
        job("a", 2, created=NOW - 200) + job("b", 2, created=NOW - 100, priority=10),
        nodes("pg-a", 2), (),
        ({"ns/b": (f"{PG}=pg-a", 0)}, {"ns/a": WaitCode.NO_FIT}),
        id="priority-before-age"),
    pytest.param(
        # pg-a: 1 node free (8 GPUs); its group may add 2 more (max 3, 1 seen):
        # 3 pods x 8 GPUs = 3 nodes = the one there + 2 new.
        job("a", 3), nodes("pg-a", 1),
        (NodeGroup("p4d-a", "p4d", "pg-a", 3),),
        ({"ns/a": (f"{PG}=pg-a", 2)}, {}),
        id="autoscaler-headroom-makes-it-fit"),
    pytest.param(
        # Max 2, 1 seen: only 1 more node, 2 x 8 = 16 < 24 GPUs, even with every node
        # empty: it can never fit, so it holds nothing.
        job("a", 3), nodes("pg-a", 1),
        (NodeGroup("p4d-a", "p4d", "pg-a", 2),),
        ({}, {"ns/a": WaitCode.INADMISSIBLE}),
        id="headroom-too-small-inadmissible"),
    pytest.param(
        # As above, but pg-a's one node is busy (8 GPUs used) and the group may reach
        # 3: empty, pg-a holds 3 x 8 = 24, so it waits for room (no_fit), not for ever.
        job("a", 3), nodes("pg-a", 1, used=8),
        (NodeGroup("p4d-a", "p4d", "pg-a", 3),),
        ({}, {"ns/a": WaitCode.NO_FIT}),
        id="busy-node-waits-for-room"),
    pytest.param(
        # Both fit; pg-b needs no new node (2 nodes there), pg-a would need 1.
        job("a", 2), nodes("pg-a", 1) + nodes("pg-b", 2),
        (NodeGroup("p4d-a", "p4d", "pg-a", 4),),
        ({"ns/a": (f"{PG}=pg-b", 0)}, {}),
        id="fewest-new-nodes-first"),
    pytest.param(
        # pg-a 3 x 8 = 24 free, pg-b 2 x 8 = 16: a 2-node job fits both; best fit
        # leaves 8 in pg-a or 0 in pg-b: pg-b.
        job("a", 2), nodes("pg-a", 3) + nodes("pg-b", 2), (),
        ({"ns/a": (f"{PG}=pg-b", 0)}, {}),
        id="best-fit-keeps-the-big-hole"),
    pytest.param(
        # 16 GPUs free in pg-a in halves: 4 nodes with 4 free each; 2 pods x 8 GPUs
        # need whole nodes: summed capacity would say yes, the bin-pack says no.
        job("a", 2), nodes("pg-a", 4, used=4), (),
        ({}, {"ns/a": WaitCode.NO_FIT}),
        id="bin-pack-not-summed-capacity"),
    pytest.param(
        # An old job's 2 admitted pods (16 GPUs) will take pg-a's two nodes: a waits.
        job("a", 2), nodes("pg-a", 2), (),
        ({}, {"ns/a": WaitCode.NO_FIT}),
        id="reservations-of-admitted-unbound-jobs-count"),
    pytest.param(
        # 3 pods of a declared 4: it waits whole, however much room there is.
        job("a", 3, size=4), nodes("pg-a", 8), (),
        ({}, {"ns/a": WaitCode.INCOMPLETE}),
        id="declared-size-not-reached"),
    pytest.param(
        # No size and its last pod 5 s old (< settle 10 s): waits.
        job("a", 2, size=0, created=NOW - 6), nodes("pg-a", 2), (),
        ({}, {"ns/a": WaitCode.SIZE_UNKNOWN}),
        id="no-size-settling"),
    pytest.param(
        # No size, last pod 99 s old: taken with the 2 pods it has.
        job("a", 2, size=0), nodes("pg-a", 2), (),
        ({"ns/a": (f"{PG}=pg-a", 0)}, {}),
        id="no-size-settled"),
    pytest.param(
        # 2 labelled nodes in pg-a and 4 unlabelled ones: only 16 GPUs count for 24,
        # however empty pg-a gets.
        job("a", 3), nodes("pg-a", 2) + nodes("x", 4, unlabeled=True), (),
        ({}, {"ns/a": WaitCode.INADMISSIBLE}),
        id="nodes-missing-the-domain-label-hold-nothing"),
    pytest.param(
        # No node has a placement group at all.
        job("a", 1), nodes("x", 4, unlabeled=True), (),
        ({}, {"ns/a": WaitCode.NO_LEVEL}),
        id="required-level-no-node-carries"),
    pytest.param(
        # preferred and too big for any domain (2 nodes each, 3 pods of 8 GPUs), but the
        # cluster's 4 nodes hold it: released without a domain.
        job("a", 3, group="preferred"), nodes("pg-a", 2) + nodes("pg-b", 2), (),
        ({"ns/a": (None, 0)}, {}),
        id="preferred-without-a-fit-goes-without-a-domain"),
    pytest.param(
        # preferred, 10 pods x 8 GPUs on a cluster of 8 8-GPU nodes: never all of it, so
        # none of it (it used to bind 8 pods and hold 64 GPUs doing nothing).
        job("a", 10, group="preferred"), nodes("pg-a", 4) + nodes("pg-b", 4), (),
        ({}, {"ns/a": WaitCode.INADMISSIBLE}),
        id="preferred-larger-than-the-cluster-binds-nothing"),
    pytest.param(
        # preferred, 3 pods x 8 GPUs; the cluster's 4 nodes have 2 free now (the others
        # busy): it waits whole instead of binding 2 of 3.
        job("a", 3, group="preferred"), nodes("pg-a", 1) + nodes("pg-b", 1)
        + nodes("pg-c", 2, used=8), (),
        ({}, {"ns/a": WaitCode.NO_FIT}),
        id="preferred-waits-whole-for-the-cluster"),
    pytest.param(
        # spread: a node per pod; 3 one-GPU pods, pg-a has 2 nodes, pg-b 3.
        job("a", 3, gpus=1, packing="spread"), nodes("pg-a", 2) + nodes("pg-b", 3), (),
        ({"ns/a": (f"{PG}=pg-b", 0)}, {}),
        id="spread-needs-a-node-per-pod"),
]


@pytest.mark.parametrize("pods, states, groups, expected", CASES)
def test_plan(pods, states, groups, expected, request):
    extra = ()
    if "reservations" in request.node.callspec.id:
        extra = (admitted("old-0", "pg-a"), admitted("old-1", "pg-a"))
    assert summary(decide(pods, states, groups, extra)) == expected


def test_placeholders_count_as_free():
    # Each node holds a placeholder of 8 GPUs: free for a real pod (it preempts them).
    states = []
    for state in nodes("pg-a", 2):
        holder = make_pod(f"ph-{state.name}", gpus=8, placeholder=True, node=state.name)
        states.append(state.with_pod(holder))
    assert summary(decide(job("a", 2), states)) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})


def test_waiting_job_is_admitted_once_room_appears():
    pods = job("a", 2, created=NOW - 200) + job("b", 2, created=NOW - 100)
    first = decide(pods, nodes("pg-a", 2))
    assert [str(a.job) for a in first.admissions] == ["ns/a"]
    (waiting,) = first.waiting
    assert "no placement-group domain holds its 2 pods" in waiting.reason
    # a is bound and done; its pods are gone: b fits.
    second = decide(job("b", 2, created=NOW - 100), nodes("pg-a", 2))
    assert summary(second) == ({"ns/b": (f"{PG}=pg-a", 0)}, {})


def test_a_stream_of_small_jobs_does_not_starve_a_large_one():
    # pg-a: 4 nodes; 2 hold a running job's pods (8 GPUs each). big needs 4 nodes
    # (4 x 8 GPUs) and has waited 100 s > 60 s: it holds the 2 free nodes, so the
    # small one-node jobs behind it (younger) wait as held instead of taking them.
    states = nodes("pg-a", 2) + nodes("pg-a", 2, used=8)
    states = [replace_name(s, f"n{i}") for i, s in enumerate(states)]
    pods = job("big", 4, created=NOW - 100) + job("s1", 1, created=NOW - 50) \
        + job("s2", 1, created=NOW - 40)
    result = decide(pods, states)
    assert summary(result) == ({}, {"ns/big": WaitCode.NO_FIT, "ns/s1": WaitCode.HELD,
                                    "ns/s2": WaitCode.HELD})
    held = next(w for w in result.waiting if str(w.job) == "ns/s1")
    assert "held for ns/big" in held.reason
    # Before big has waited 60 s the small jobs go ahead (backfill).
    result = decide(job("big", 4, created=NOW - 30) + job("s1", 1, created=NOW - 20),
                    states)
    assert summary(result) == ({"ns/s1": (f"{PG}=pg-a", 0)}, {"ns/big": WaitCode.NO_FIT})


def replace_name(state, name):
    return NodeState(replace(state.node, name=name), state.requested,
                     state.placeholder_requested)


def test_small_jobs_use_room_the_held_job_cannot_use():
    # big (3 nodes) is held in pg-a (3 nodes, one busy); pg-b has room big cannot use
    # (1 node), s1 takes it.
    states = [replace_name(s, f"n{i}") for i, s in
              enumerate(nodes("pg-a", 2) + nodes("pg-a", 1, used=8))] + nodes("pg-b", 1)
    pods = job("big", 3, created=NOW - 100) + job("s1", 1, created=NOW - 50)
    assert summary(decide(pods, states)) == (
        {"ns/s1": (f"{PG}=pg-b", 0)}, {"ns/big": WaitCode.NO_FIT})


def test_a_job_cut_short_joins_its_recorded_domain():
    # One pod of a admitted into pg-b before a crash; the other still gated joins it,
    # though pg-a would be the better fit now.
    pods = job("a", 1)
    done = admitted("a-9", "pg-b", job_name="a")
    result = decide(pods, nodes("pg-a", 1) + nodes("pg-b", 2), extra=(done,))
    (admission,) = result.admissions
    assert str(admission.domain) == f"{PG}=pg-b"
    assert "joins" in admission.note


def test_forged_domain_annotations_decide_nothing():
    # A tenant's unbound pods carry headstart.io/domain for pg-a (written by the tenant,
    # not the admitter: no gang record). They reserve nothing, so another job still
    # gets pg-a; and a job whose own pods carry the annotation is not "joined" into it.
    forged = (admitted("f-0", "pg-a", job_name="forger"),
              admitted("f-1", "pg-a", job_name="forger"))
    result = decide(job("a", 2), nodes("pg-a", 2), extra=forged, records={})
    assert summary(result) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})
    # With the admitter's records the same pods are a reservation.
    result = decide(job("a", 2), nodes("pg-a", 2), extra=forged)
    assert summary(result) == ({}, {"ns/a": WaitCode.NO_FIT})
    self_forged = [replace(p, annotations={**p.annotations, "headstart.io/domain": f"{PG}=pg-b"})
                   for p in job("b", 2)]
    early = admitted("b-9", "pg-b", job_name="b")
    result = decide(self_forged, nodes("pg-a", 2) + nodes("pg-b", 1), extra=(early,),
                    records={})
    assert summary(result) == ({"ns/b": (f"{PG}=pg-a", 0)}, {})


def test_a_restarted_gang_is_admitted_afresh():
    # a ran in pg-b (its record says so); every pod of that attempt is gone, and 2 new
    # gated pods form the next attempt. pg-b is full now: the job is admitted whole
    # where there is room (pg-a), not pinned to its old domain.
    key = JobKey("ns", "a")
    record = GangRecord(key, GangState.RUNNING, Domain(PG, "pg-b"), PG_KEY, 2, name="a")
    states = nodes("pg-a", 2) + nodes("pg-b", 1, used=8)
    result = decide(job("a", 2, size=2), states, records={key: record})
    assert summary(result) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})


def test_a_replacement_pod_waits_when_its_jobs_domain_is_full():
    # a's pod a-9 runs in pg-b (bound, 8 GPUs, the node's all); its replacement a-0 is
    # gated. pg-b has no room left: a-0 waits there, whole, instead of being pinned to
    # a full domain; pg-a's free node is not its job's.
    running = replace(admitted("a-9", "pg-b", job_name="a"), node_name="pg-b-0")
    states = nodes("pg-a", 1) + nodes("pg-b", 1, used=8)
    result = decide(job("a", 1), states, extra=(running,))
    assert summary(result) == ({}, {"ns/a": WaitCode.NO_FIT})
    assert "admitted into placement-group=pg-b, which holds 0 of these 1" in \
        result.waiting[0].reason


def test_terminating_pods_neither_count_nor_fix_the_domain():
    # A restarted 2-pod job: its old pods (in pg-b, still Terminating) carry pg-b's
    # domain and hold pg-b's only node. The new pods are a whole job of 2 (the old ones
    # count toward nothing) and go where there is room: pg-a.
    old = [replace(admitted(f"a-old-{i}", "pg-b", job_name="a"), node_name="pg-b-0",
                   deleting=True) for i in range(2)]
    states = nodes("pg-a", 2) + nodes("pg-b", 1, used=8)
    result = decide(job("a", 2, size=2), states, extra=old)
    assert summary(result) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})
    # Without the deletion the same pods would fix pg-b, which has no room.
    kept = [replace(pod, deleting=False) for pod in old]
    assert summary(decide(job("a", 2, size=4), states, extra=kept)) == (
        {}, {"ns/a": WaitCode.NO_FIT})


def test_pods_of_no_job_and_kueue_pods_are_released():
    lone = replace(make_pod("lone", gpus=1), scheduling_gates=(GATE,))
    kueue = replace(make_pod("kq", job="k", gpus=1),
                    scheduling_gates=(GATE, "kueue.x-k8s.io/topology"))
    result = decide([lone, kueue], nodes("pg-a", 1))
    reasons = {r.pod.name: r.reason for r in result.releases}
    assert "no job" in reasons["lone"]
    assert "kueue.x-k8s.io/topology" in reasons["kq"]
    assert not result.admissions and not result.waiting


def test_pod_group_not_seen_waits_with_its_name():
    pod = job("a", 1, size=0)[0]
    pod = replace(pod, pod_group=("scheduling.x-k8s.io", "pg-of-a"))
    (waiting,) = decide([pod], nodes("pg-a", 1)).waiting
    assert waiting.code is WaitCode.SIZE_UNKNOWN
    assert "PodGroup pg-of-a" in waiting.reason


def test_required_topology_level_no_node_carries():
    pods = [replace(p, annotations={**p.annotations, "headstart.io/topology-level": "nvlink"})
            for p in job("a", 1)]
    (waiting,) = decide(pods, nodes("pg-a", 2)).waiting
    assert waiting.code is WaitCode.NO_LEVEL
    assert "nvlink" in waiting.reason


def test_node_group_without_allocatable_is_named():
    # No node of type p5 exists to copy the allocatable from.
    pods = job("a", 2)
    result = decide(pods, nodes("pg-a", 1), (NodeGroup("p5-a", "p5", "pg-a", 4),))
    (waiting,) = result.waiting
    assert "node group p5-a" in waiting.reason
    with_shape = (NodeGroup("p5-a", "p5", "pg-a", 4, allocatable=Resources.of(8, 96, 768)),)
    assert summary(decide(pods, nodes("pg-a", 1), with_shape)) == (
        {"ns/a": (f"{PG}=pg-a", 1)}, {})


def test_owner_replica_count_keeps_a_job_whole_past_the_settle_time():
    # 2 pods of a PyTorchJob declaring 4 (owner_size), last pod 100 s old (settle 10 s):
    # without the owner's size the 2 would be admitted alone; with it the job waits.
    pods = [replace(p, owner_size=4) for p in job("a", 2, size=0)]
    result = decide(pods, nodes("pg-a", 4))
    (waiting,) = result.waiting
    assert (waiting.code, result.admissions) == (WaitCode.INCOMPLETE, ())
    assert "2 of its 4 pods exist" in waiting.reason


def test_owner_whose_counts_do_not_parse_waits_with_the_reason():
    why = "its owner's replica counts do not parse: PyTorchJob ns/a: spec...: got '4'"
    pods = [replace(p, owner_wait=why) for p in job("a", 2, size=0)]
    (waiting,) = decide(pods, nodes("pg-a", 4)).waiting
    assert waiting.code is WaitCode.SIZE_UNKNOWN
    assert why in waiting.reason and "headstart.io/job-size" in waiting.reason


def test_staged_jobset_takes_the_largest_size_its_gated_pods_declare():
    # A JobSet: an initializer (stage 0, size 1) and 2 node pods (stage 1: 1 + 2 = 3).
    # Gated: the initializer (sorted first) and 1 node pod; the job's size is 3, not
    # the first pod's 1, so 2 of 3 exist and it waits instead of being split.
    init, node = job("a", 2, size=0)
    pods = [replace(init, owner_size=1), replace(node, owner_size=3)]
    (waiting,) = decide(pods, nodes("pg-a", 4)).waiting
    assert waiting.code is WaitCode.INCOMPLETE
    assert "2 of its 3 pods exist" in waiting.reason


def test_a_later_stages_podgroup_counts_only_its_live_pods():
    # A TrainJob: a dataset initializer (stage 0, 1 pod) that Succeeded, then 2 node pods
    # (stage 1: size 1 + 2 = 3). The job is whole (3 of 3 exist) and admitted; its
    # PodGroup's minMember is 2: kube-scheduler never sees the finished initializer, and
    # Coscheduling would wait for it for ever (minMember 3 against 2 live pods).
    init, *nodes_ = job("a", 3, size=0)
    done = replace(init, owner_size=1, scheduling_gates=(), node_name="n0", terminal=True,
                   succeeded=True)
    gated = [replace(pod, owner_size=3) for pod in nodes_]
    everything = [done, *gated]
    gathered = gather(gated, {}, lambda key: everything, LOCALITY, CONFIG)
    (whole,) = gathered.jobs
    assert (whole.size, whole.known_pods, whole.finished, whole.live_size) == (3, 3, 1, 2)


@pytest.mark.parametrize(("group", "sizes", "expected", "source"), [
    # Config says max 2 (1 seen: 1 more); CA's status says max 5, current 1: 4 more.
    # 4 pods x 8 GPUs: the node there + 3 new; CA's sizes win.
    (NodeGroup("p4d-a", "p4d", "pg-a", 2),
     {"p4d-a": GroupSize("p4d-a", 0, 5, registered=1, target=1)},
     ({"ns/a": (f"{PG}=pg-a", 3)}, {}), "autoscaler-status"),
    # CA is launching 3 (target 4, registered 1): max 5 - 4 = 1 more, 1 + 1 < 4 nodes.
    (NodeGroup("p4d-a", "p4d", "pg-a", 8),
     {"p4d-a": GroupSize("p4d-a", 0, 5, registered=1, target=4)},
     ({}, {"ns/a": WaitCode.NO_FIT}), "autoscaler-status"),
    # CA's status lists other groups only: config's max 8 - 1 seen = 7 more.
    (NodeGroup("p4d-a", "p4d", "pg-a", 8),
     {"other": GroupSize("other", 0, 5, registered=1, target=1)},
     ({"ns/a": (f"{PG}=pg-a", 3)}, {}), "config"),
], ids=["status-max-wins-over-config", "nodes-being-launched-count", "unlisted-falls-back"])
def test_autoscaler_status_sizes_node_groups(group, sizes, expected, source):
    assert summary(decide(job("a", 4), nodes("pg-a", 1), (group,), sizes=sizes)) == expected
    room = level_room(nodes("pg-a", 1), PG, LOCALITY, (group,), sizes)
    assert {n.source for n in room.domains["pg-a"].new_nodes} <= {source}


def test_node_group_without_any_max_size_is_named():
    group = NodeGroup("p4d-a", "p4d", "pg-a")  # max_size only from CA's status, absent
    (waiting,) = decide(job("a", 4), nodes("pg-a", 1), (group,), sizes={}).waiting
    assert "p4d-a: cluster-autoscaler's status does not list it" in waiting.reason


# ---- what the pods can use: node selector, node affinity, tolerations -----------------

A100 = {"gpu.model": "a100"}
TAINT = Taint("dedicated", "team-b", "NoSchedule")


def dressed(states, labels=None, taints=()):
    """The nodes with these labels added and these taints."""
    return [NodeState(replace(s.node, labels={**s.node.labels, **(labels or {})},
                              taints=tuple(taints)), s.requested, s.placeholder_requested)
            for s in states]


def constrained(pods, **constraints):
    return [replace(p, constraints=PodConstraints(**constraints)) for p in pods]


def test_a_job_selecting_a_gpu_model_goes_where_that_model_is():
    # pg-a: 2 free nodes (best fit for 2 pods), but its GPUs are not a100; pg-b's 3 are.
    states = nodes("pg-a", 2) + dressed(nodes("pg-b", 3), A100)
    pods = constrained(job("a", 2), node_selector=(("gpu.model", "a100"),))
    assert summary(decide(pods, states)) == ({"ns/a": (f"{PG}=pg-b", 0)}, {})
    # The same by required node affinity.
    term = Term((Requirement("gpu.model", "In", ("a100",)),))
    pods = constrained(job("a", 2), terms=(term,))
    assert summary(decide(pods, states)) == ({"ns/a": (f"{PG}=pg-b", 0)}, {})
    # Without the selector the best fit wins: pg-a.
    assert summary(decide(job("a", 2), states)) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})


def test_a_job_without_the_toleration_avoids_the_tainted_group():
    states = dressed(nodes("pg-a", 2), taints=(TAINT,)) + nodes("pg-b", 3)
    assert summary(decide(job("a", 2), states)) == ({"ns/a": (f"{PG}=pg-b", 0)}, {})
    tolerant = constrained(job("a", 2), tolerations=(Toleration("dedicated", "Exists"),))
    assert summary(decide(tolerant, states)) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})
    # Only tainted room anywhere: it can never run, so it holds nothing.
    result = decide(job("a", 2), dressed(nodes("pg-a", 2), taints=(TAINT,)))
    assert summary(result) == ({}, {"ns/a": WaitCode.INADMISSIBLE})
    assert "tolerations" in result.waiting[0].reason


def test_new_nodes_are_judged_by_their_group_template():
    # pg-a has no node; its group adds a100 nodes (configured template, no taint).
    # pg-b has one free tainted node; its group adds copies of it. A 2-pod job that
    # could use pg-b needs 1 new node there against 2 in pg-a: only a job that may not
    # use pg-b's nodes (old or new) goes to pg-a.
    groups = (NodeGroup("p4d-a", "p4d", "pg-a", 4, labels={"gpu.model": "a100"}),
              NodeGroup("p4d-b", "p4d", "pg-b", 4))
    states = dressed(nodes("pg-b", 1), taints=(TAINT,))
    tolerates = (Toleration("dedicated", "Exists"),)
    a100 = constrained(job("a", 2), node_selector=(("gpu.model", "a100"),),
                       tolerations=tolerates)
    assert summary(decide(a100, states, groups)) == ({"ns/a": (f"{PG}=pg-a", 2)}, {})
    intolerant = job("b", 2)
    assert summary(decide(intolerant, states, groups)) == ({"ns/b": (f"{PG}=pg-a", 2)}, {})
    tolerant = constrained(job("c", 2), tolerations=tolerates)
    assert summary(decide(tolerant, states, groups)) == ({"ns/c": (f"{PG}=pg-b", 1)}, {})
    # pg-b's new node carries pg-b's domain label (relabelled copy): a selector on it
    # keeps pg-b; the existing node has no such label here, so both pods go on new ones.
    on_b = constrained(job("d", 2), tolerations=tolerates, node_selector=((PG_KEY, "pg-b"),))
    assert summary(decide(on_b, states, groups)) == ({"ns/d": (f"{PG}=pg-b", 2)}, {})


def test_an_unsatisfiable_job_does_not_starve_a_domain():
    # Two 4-node groups, both free. big (5 nodes, older, waited past the hold time) can
    # never fit one group: inadmissible, it holds nothing, and the 4-node job behind it
    # is admitted (it used to wait `held` for ever).
    states = nodes("pg-a", 4) + nodes("pg-b", 4)
    pods = job("big", 5, created=NOW - 500) + job("four", 4, created=NOW - 100)
    result = decide(pods, states)
    assert summary(result) == ({"ns/four": (f"{PG}=pg-a", 0)},
                               {"ns/big": WaitCode.INADMISSIBLE})


def test_the_head_hold_expires_when_configured_to():
    # As in the starvation test: big holds pg-a's 2 free nodes while it has waited
    # between 60 s and 60 + 600 s; after that s1 takes one.
    states = [replace_name(s, f"n{i}") for i, s in
              enumerate(nodes("pg-a", 2) + nodes("pg-a", 2, used=8))]
    rotating = replace(CONFIG, head_hold_seconds=600.0)
    for waited, expected in ((100, WaitCode.HELD), (659, WaitCode.HELD), (661, None)):
        pods = job("big", 4, created=NOW - waited - 3) + job("s1", 1, created=NOW - 50)
        admissions, waiting = summary(decide(pods, states, config=rotating))
        assert waiting.get("ns/s1") is expected, waited
        assert waiting["ns/big"] is WaitCode.NO_FIT
        assert ("ns/s1" in admissions) is (expected is None)


def test_an_evicted_job_waits_out_its_backoff():
    # Its record: Evicted, requeueAt 30 s from now. Room enough, but it waits (backoff);
    # at requeueAt it is admitted.
    key = JobKey("ns", "a")
    record = GangRecord(key, GangState.EVICTED, None, None, 2, name="a", evictions=1,
                        requeue_at=NOW + 30)
    result = decide(job("a", 2), nodes("pg-a", 2), records={key: record})
    assert summary(result) == ({}, {"ns/a": WaitCode.BACKOFF})
    assert "30 s" in result.waiting[0].reason
    later = decide(job("a", 2), nodes("pg-a", 2), records={key: record}, now=NOW + 30)
    assert summary(later) == ({"ns/a": (f"{PG}=pg-a", 0)}, {})


def test_by_default_the_head_holds_for_as_long_as_it_waits():
    # big (4 nodes) behind a stream of 1-node jobs of its priority in pg-a (2 of 4 nodes
    # busy): however long it has waited, each new small job waits `held`, so the busy
    # nodes' room, once freed, goes to big (Kueue's StrictFIFO head).
    states = [replace_name(s, f"n{i}") for i, s in
              enumerate(nodes("pg-a", 2) + nodes("pg-a", 2, used=8))]
    for waited in (100, 661, 86_400):
        pods = job("big", 4, created=NOW - waited - 3) + job("s1", 1, created=NOW - 50)
        result = decide(pods, states)
        assert summary(result) == ({}, {"ns/big": WaitCode.NO_FIT, "ns/s1": WaitCode.HELD})
        places = {str(w.job): w.position for w in result.waiting}
        assert places == {"ns/big": (1, 2), "ns/s1": (2, 2)}  # admission order
    # Freed: the busy nodes' gangs ended; big takes all four.
    pods = job("big", 4, created=NOW - 86_403) + job("s1", 1, created=NOW - 50)
    admissions, waiting = summary(decide(pods, nodes("pg-a", 4)))
    assert "ns/big" in admissions and waiting == {"ns/s1": WaitCode.NO_FIT}


def test_a_rule_the_admission_does_not_model_is_refused_at_once():
    # A zone spread: admitted, it might never bind and would be evicted after the bind
    # timeout; refused at once instead, the field named, holding nothing.
    from locality.pod_rules import PodRules

    why = "pod.spec.topologySpreadConstraints[0]: topology spread: topologyKey 'zone'"
    pods = [replace(pod, rules=PodRules(None, why)) for pod in job("a", 2, gpus=4)]
    (waiting,) = decide(pods, nodes("pg-a", 2)).waiting
    assert waiting.code is WaitCode.INADMISSIBLE
    assert why in waiting.reason and "headstart.io/placement-group: none" in waiting.reason
    # Policy none: kube-scheduler places the pods as they come.
    released = [replace(pod, rules=PodRules(None, why)) for pod in job("b", 2, gpus=4,
                                                                       group="none")]
    assert [a.job.name for a in decide(released, nodes("pg-a", 2)).admissions] == ["b"]


def test_a_host_port_job_takes_a_node_per_pod():
    # 2 pods of 4 GPUs would share one 8-GPU node; with a host port (or anti-affinity to
    # its own pods) each needs a node of its own: pg-a (1 node) cannot hold it, pg-b can.
    from locality.pod_rules import PodRules

    pods = [replace(pod, rules=PodRules(1)) for pod in job("a", 2, gpus=4)]
    states = nodes("pg-a", 1) + nodes("pg-b", 2)
    assert summary(decide(pods, states)) == ({"ns/a": (f"{PG}=pg-b", 0)}, {})
    plain = job("b", 2, gpus=4)
    assert summary(decide(plain, states)) == ({"ns/b": (f"{PG}=pg-a", 0)}, {})
