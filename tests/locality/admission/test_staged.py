"""Staged creation (issue 26): a LeaderWorkerSet group whose workers come only once its
leader is Ready is admitted by stage; a JobSet with exclusive placement is left to
JobSet. Neither deadlocks behind the gate."""

from __future__ import annotations

from dataclasses import replace

from locality.admission.assign import plan
from locality.admission.config import GATE
from locality.admission.gather import gather
from locality.admission.record import GangRecord, GangState
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.jobs import job_key_of
from locality.model import JobKey
from tests.locality.admission.test_assign import CONFIG, LOCALITY, PG, PG_KEY, nodes
from tests.locality.builders import make_pod

NOW = 10_000.0


def decide(gated, states, extra=(), records=None):
    """One round; a job's pods found by the job identity the admitter uses."""
    everything = list(gated) + list(extra)

    def of_job(key):
        return [p for p in everything if job_key_of(p, LOCALITY) == key]

    gathered = gather(gated, records or {}, of_job, LOCALITY, CONFIG)
    rooms = {level: level_room(states, level, LOCALITY) for level in (PG, CLUSTER_LEVEL)}
    return plan(gathered.jobs, rooms, gathered.reservations, NOW, CONFIG, gathered.releases)


def lws_pod(worker, size, gated=True, node=None):
    """Pod `worker` of group 1 of LeaderWorkerSet `serve`, its owner's size resolved as
    `locality.owners` resolves it (LeaderReady: 1 for the leader, the group for workers)."""
    pod = make_pod(f"serve-1-{worker}", gpus=8, namespace="ns", node=node)
    return replace(pod, labels={"leaderworkerset.sigs.k8s.io/name": "serve",
                                "leaderworkerset.sigs.k8s.io/group-index": "1",
                                "leaderworkerset.sigs.k8s.io/worker-index": str(worker)},
                   annotations={"leaderworkerset.sigs.k8s.io/size": "4"},
                   owner_size=size, scheduling_gates=(GATE,) if gated else (),
                   created_at=NOW - 50, controller=("StatefulSet", "serve-1"))


def test_a_leader_ready_group_admits_its_leader_alone_then_its_workers_join_it():
    # Stage 0: only the leader exists (its workers come once it is Ready): admitted alone,
    # into pg-b, the group that holds all 4 (best fit for the leader alone is pg-a).
    result = decide([lws_pod(0, size=1)], nodes("pg-a", 2) + nodes("pg-b", 4))
    (admission,) = result.admissions
    assert [p.name for p in admission.pods] == ["serve-1-0"]
    domain = admission.domain
    assert domain.value == "pg-b"
    # Stage 1: the leader runs in its domain; its 3 workers join that domain, whole.
    leader = lws_pod(0, size=1, gated=False, node=f"{domain.value}-0")
    workers = [lws_pod(i, size=4) for i in (1, 2, 3)]
    record = GangRecord(JobKey("ns", "serve-1"), GangState.ADMITTED, domain, PG_KEY,
                        size=1, name="serve-1")
    result = decide(workers, nodes("pg-a", 2) + nodes("pg-b", 4), extra=[leader],
                    records={record.job: record})
    (joined,) = result.admissions
    assert joined.domain == domain and len(joined.pods) == 3
    assert joined.note.startswith(f"joins {PG}=")


def test_a_jobset_with_exclusive_placement_is_left_to_jobset():
    pod = make_pod("js-w-0-0", job="js", gpus=8, job_size=4)
    pod = replace(pod, scheduling_gates=(GATE,), created_at=NOW - 50, annotations={
        **pod.annotations, "alpha.jobset.sigs.k8s.io/exclusive-topology": PG_KEY})
    result = decide([pod], nodes("pg-a", 4))
    assert not result.admissions and not result.waiting
    (release,) = result.releases
    assert "left to JobSet" in release.reason and release.pod.name == "js-w-0-0"
