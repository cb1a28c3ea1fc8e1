"""Elastic jobs in the admission round (locality.admission.assign, rules 7-9): admitted
at a smaller size, KOD2's scale-in for a heavier waiting job, scale-out into idle room.

Nodes are 8-GPU nodes of placement groups; elastic jobs are Indexed Jobs (one pod per
index, the Job controller their owner) whose owners opted in with min/max sizes.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.admission.assign import plan
from locality.admission.config import AdmissionConfig
from locality.admission.gang_preemption import candidates, leaving
from locality.admission.gather import gather
from locality.admission.model import Domain, WaitCode
from locality.admission.record import GangRecord, GangState
from locality.admission.resize import elastic_gangs, shrinking
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.admission.weight import ElasticConfig
from locality.constraints import PodConstraints
from locality.elastic import Bounds, ElasticOwner
from locality.model import JobKey, NodeState
from locality.owners import INDEX_ANNOTATION
from locality.worker_plans import WorkerPlan
from tests.locality.admission.test_assign import LOCALITY, NOW, PG, PG_KEY, job
from tests.locality.admission.test_gang_preemption import cluster
from tests.locality.builders import make_state

CONFIG = AdmissionConfig(head_reserve_after_seconds=60, settle_seconds=10)
A100 = PodConstraints(node_selector=((LOCALITY.instance_type_label, "a100"),))
P4D = PodConstraints(node_selector=((LOCALITY.instance_type_label, "p4d"),))


def elastic(pods, size, minimum, maximum, cpu=None):
    """`pods` as an elastic Indexed Job's: indices, owner, bounds; its owner at `size`
    (the job's declared size: no headstart.io/job-size annotation)."""
    pods = [replace(p, annotations={k: v for k, v in p.annotations.items()
                                    if k != "headstart.io/job-size"}) for p in pods]
    name = pods[0].labels["headstart.io/job"]
    owner = ElasticOwner("Job", pods[0].namespace, name, size, Bounds(minimum, maximum),
                         uid=f"{name}-uid")
    out = []
    for index, pod in enumerate(pods):
        request = pod.request if cpu is None else replace(pod.request, cpu_milli=cpu * 1000)
        out.append(replace(pod, annotations={**pod.annotations, INDEX_ANNOTATION: str(index)},
                           labels={**pod.labels, "headstart.io/role": "worker"},
                           controller=("Job", name), elastic=owner, owner_size=size,
                           request=request))
    return out


def bound(pods, group, first=0):
    """The pods bound one per node to `group`-`first`.. and past the gate."""
    return [replace(pod, node_name=f"{group}-{first + i}", scheduling_gates=())
            for i, pod in enumerate(pods)]


def decide(gated, running=(), layout=None, config=CONFIG, now=NOW, since=NOW - 3600,
           devices=False, plans=(), states=None):
    """One round. running: bound pods of Running gangs (records in their node's group);
    plans: the worker plans the admitter read; states: the nodes (default: `layout`'s)."""
    everything = list(gated) + list(running)

    def of_job(key):
        return [p for p in everything if p.labels.get("headstart.io/job") == key.name]

    records = {}
    for pod in running:
        key = JobKey(pod.namespace, pod.labels["headstart.io/job"])
        group = pod.node_name.rsplit("-", 1)[0]
        records.setdefault(key, GangRecord(key, GangState.RUNNING, Domain(PG, group), PG_KEY,
                                           name=key.name, since=since))
    states = states or cluster(layout or {"pg-a": 4}, list(running))
    if devices:  # GPUs advertised per kind too, as a real node's nvidia.com/gpu is
        states = [make_state(s.node.name, group=s.node.placement_group,
                             devices=[("nvidia.com/gpu", 8)],
                             pods=[p for p in running if p.node_name == s.node.name])
                  for s in states]
    gathered = gather(gated, records, of_job, LOCALITY, config)
    rooms = {level: level_room(states, level, LOCALITY) for level in (PG, CLUSTER_LEVEL)}
    gangs = elastic_gangs(records.values(), of_job, LOCALITY, config.elastic.weight,
                          {p.key: p for p in plans}, now)
    return plan(gathered.jobs, rooms, gathered.reservations, now, config, gathered.releases,
                candidates(records.values(), of_job), leaving(records.values(), of_job),
                elastic=gangs, shrinking=shrinking(records.values(), of_job),
                plans={p.key: p for p in plans})


def resizes(result):
    return {str(r.job): (r.before, r.after, [p.name for p in r.removed])
            for r in result.resizes}


def codes(result):
    return {str(w.job): w.code for w in result.waiting}


def test_a_job_no_domain_holds_whole_is_resized_to_what_one_holds():
    # 4 x 8 GPUs, min 2: pg-a has 3 nodes free, so 3 pods; the next job finds no room.
    e = elastic(job("e", 4, created=NOW - 200), size=4, minimum=2, maximum=4)
    result = decide(e + job("b", 1, created=NOW - 100), layout={"pg-a": 3})
    assert resizes(result) == {"ns/e": (4, 3, [])}
    assert codes(result) == {"ns/e": WaitCode.RESIZING, "ns/b": WaitCode.NO_FIT}
    assert "resized to 3 (its minimum is 2), which placement-group=pg-a holds" in \
        result.waiting[0].reason
    # Its owner now has 3: the pod of index 3 is leaving and the job is admitted whole.
    shrunk = elastic(job("e", 4, created=NOW - 200), size=3, minimum=2, maximum=4)
    result = decide(shrunk, layout={"pg-a": 3})
    (admission,) = result.admissions
    assert sorted(p.name for p in admission.pods) == ["e-0", "e-1", "e-2"]


def test_not_below_the_minimum_and_not_when_the_job_is_off():
    e = elastic(job("e", 4), size=4, minimum=3, maximum=4)
    result = decide(e, layout={"pg-a": 2})
    assert (resizes(result), codes(result)) == ({}, {"ns/e": WaitCode.INADMISSIBLE})
    off = AdmissionConfig(elastic=ElasticConfig(enabled=False))
    e = elastic(job("e", 4), size=4, minimum=2, maximum=4)
    assert resizes(decide(e, layout={"pg-a": 3}, config=off)) == {}


def test_a_heavier_waiting_job_scales_a_running_elastic_job_in_instead_of_waiting():
    # "run" fills pg-a with 4 workers asking 16 CPUs each (a light weight); "new" asks 2
    # pods of 1 CPU (a heavier one): run gives its two highest indices.
    run = bound(elastic(job("run", 4), size=4, minimum=1, maximum=4, cpu=16), "pg-a")
    result = decide(job("new", 2), running=run)
    assert resizes(result) == {"ns/run": (4, 2, ["run-3", "run-2"])}
    assert codes(result) == {"ns/new": WaitCode.SCALING_IN}
    assert not result.preemptions and not result.admissions


def test_a_lighter_waiting_job_waits_and_a_minimum_holds():
    run = bound(elastic(job("run", 4), size=4, minimum=1, maximum=4), "pg-a")
    heavy = [replace(p, request=replace(p.request, cpu_milli=64_000)) for p in job("new", 2)]
    assert codes(decide(heavy, running=run)) == {"ns/new": WaitCode.NO_FIT}
    at_min = bound(elastic(job("run", 4), size=4, minimum=3, maximum=4, cpu=16), "pg-a")
    result = decide(job("new", 2), running=at_min)
    assert (resizes(result), codes(result)) == ({}, {"ns/new": WaitCode.NO_FIT})


def test_idle_room_grows_a_running_elastic_job_once_nothing_waits():
    run = bound(elastic(job("run", 2), size=2, minimum=1, maximum=8), "pg-a")
    assert resizes(decide([], running=run)) == {"ns/run": (2, 4, [])}
    # Not while a job waits for room, nor before the gang has run settled for a while.
    waiting = job("big", 3, group="required")
    assert codes(decide(waiting, running=run)) == {"ns/big": WaitCode.NO_FIT}
    assert resizes(decide(waiting, running=run)) == {}
    assert resizes(decide([], running=run, since=NOW - 10)) == {}


def typed(layout, bound):
    """layout: {group: [instance type per node]}: nodes named {group}-{index}, labelled
    with their type; bound: the pods charged to them."""
    states = []
    for group, kinds in layout.items():
        for index, kind in enumerate(kinds):
            name = f"{group}-{index}"
            state = make_state(name, gpus=8, group=group,
                               pods=[p for p in bound if p.node_name == name])
            states.append(NodeState(replace(state.node, instance_type=kind,
                                            labels={LOCALITY.instance_type_label: kind}),
                                    state.requested, state.placeholder_requested))
    return states


@pytest.mark.parametrize("layout", [
    {"pg-a": ["p4d"] * 4, "pg-b": ["a100"] * 2},  # its type only in pg-b
    {"pg-a": ["p4d"] * 4 + ["a100"] * 2},  # in pg-a too, on nodes the gang never uses
], ids=["other-domain", "other-nodes-of-the-domain"])
def test_a_job_waiting_for_room_the_gang_cannot_take_does_not_stop_its_growth(layout):
    # run (p4d workers) could grow onto pg-a's 2 idle p4d nodes; big waits for 2 a100
    # nodes (hold has them now). Growing run takes nothing big could ever use.
    a100 = [index for group in layout for index, kind in enumerate(layout[group])
            if kind == "a100"]
    group = "pg-b" if "pg-b" in layout else "pg-a"
    hold = bound([replace(p, constraints=A100) for p in job("hold", 2)], group, a100[0])
    run = bound([replace(p, constraints=P4D) for p in
                 elastic(job("run", 2), size=2, minimum=1, maximum=8)], "pg-a")
    big = [replace(p, constraints=A100) for p in job("big", 2)]
    result = decide(big, running=run + hold, states=typed(layout, run + hold))
    assert codes(result) == {"ns/big": WaitCode.NO_FIT}
    assert resizes(result) == {"ns/run": (2, 4, [])}
    assert result.held_growth == ()
    # A job that could take that room still stops it (as in the test above), and says
    # so: growth announced for run is not likely to be used while wide waits.
    p4d = [replace(p, constraints=P4D) for p in job("wide", 3)]
    result = decide(p4d, running=run + hold, states=typed(layout, run + hold))
    assert codes(result) == {"ns/wide": WaitCode.NO_FIT}
    assert resizes(result) == {}
    assert result.held_growth == (JobKey("ns", "run"),)


def test_an_owner_that_opted_in_but_cannot_be_resized_says_why_and_keeps_its_size():
    problem = "Job ns/e: headstart.io/min-size=5 is above headstart.io/max-size=3"
    owner = ElasticOwner("Job", "ns", "e", 0, None, problem=problem)
    pods = [replace(p, elastic=owner) for p in job("e", 4)]
    result = decide(pods, layout={"pg-a": 3})
    assert resizes(result) == {}
    assert codes(result) == {"ns/e": WaitCode.INADMISSIBLE}  # 4 pods never fit 3 nodes
    assert result.waiting[0].reason.endswith(f"; not resizable: {problem}")
    admitted = decide(pods, layout={"pg-a": 4}).admissions[0]
    assert admitted.note.endswith(f"; not resizable: {problem}")


def test_a_pytorchjob_is_resized_by_its_workers_and_keeps_its_master():
    owner = ElasticOwner("PyTorchJob", "ns", "pt", 3, Bounds(1, 3), others=1)
    pods = []
    for name, kind, index in (("pt-master-0", "master", 0), ("pt-worker-0", "worker", 0),
                              ("pt-worker-1", "worker", 1), ("pt-worker-2", "worker", 2)):
        pod = job("pt", 1)[0]
        pods.append(replace(pod, name=name, uid=name, elastic=owner, owner_size=4,
                            annotations={k: v for k, v in pod.annotations.items()
                                         if k != "headstart.io/job-size"},
                            labels={**pod.labels, "training.kubeflow.org/replica-type": kind,
                                    "training.kubeflow.org/replica-index": str(index)}))
    # The job is its 4 pods: the operator creates the master as well as the 3 workers.
    (gathered,) = gather(pods, {}, lambda key: pods, LOCALITY, CONFIG).jobs
    assert gathered.size == 4
    # Until the last of them exists it is not whole: not admitted.
    assert decide(pods[:3], layout={"pg-a": 4}).admissions == ()
    result = decide(pods, layout={"pg-a": 3})
    assert resizes(result) == {"ns/pt": (3, 2, [])}
    # Once the operator has 2 workers, the master and workers 0 and 1 are admitted.
    shrunk = [replace(p, elastic=replace(owner, size=2)) for p in pods]
    (admission,) = decide(shrunk, layout={"pg-a": 3}).admissions
    assert sorted(p.name for p in admission.pods) == ["pt-master-0", "pt-worker-0",
                                                      "pt-worker-1"]


def pytorchjob(name, workers, minimum, created):
    """A PyTorchJob's pods: its Master and `workers` Workers (owner at that size,
    `minimum`..`workers`), gated, created at `created`."""
    owner = ElasticOwner("PyTorchJob", "ns", name, workers, Bounds(minimum, workers),
                         uid=f"{name}-uid", others=1)
    pods = []
    for index, kind in enumerate(["Master"] + ["Worker"] * workers):
        pod = job(name, 1, created=created)[0]
        replica = index if kind == "Master" else index - 1
        pod_name = f"{name}-{kind.lower()}-{replica}"
        pods.append(replace(pod, name=pod_name, uid=pod_name, elastic=owner,
                            owner_size=workers + 1, controller=("PyTorchJob", name),
                            annotations={k: v for k, v in pod.annotations.items()
                                         if k != "headstart.io/job-size"},
                            labels={**pod.labels, "training.kubeflow.org/replica-type": kind,
                                    "training.kubeflow.org/replica-index": str(replica)}))
    return pods


def test_an_identical_younger_pytorchjob_does_not_scale_the_older_in():
    # Two identical PyTorchJobs (a Master and 3 Workers, minimum 1): the older fills
    # pg-a; the younger, waiting, would fit were the older at its minimum. Equal
    # weights keep the older job whole (KOD2), so the younger waits: its Master is no
    # worker in its weight, as it is none in the running one's.
    old = bound(pytorchjob("old", 3, 1, NOW - 3600), "pg-a")
    young = pytorchjob("young", 3, 1, NOW - 100)
    result = decide(young, running=old)
    assert (resizes(result), codes(result)) == ({}, {"ns/young": WaitCode.NO_FIT})


def test_while_the_workers_given_up_are_leaving_nothing_more_is_scaled_in():
    # The round after the scale-in: run's owner is at 2, its indices 2 and 3 Terminating
    # (still on their nodes). Run is not scaled in again; new waits for that room.
    run = bound(elastic(job("run", 4), size=2, minimum=1, maximum=4, cpu=16), "pg-a")
    run = run[:2] + [replace(p, deleting=True) for p in run[2:]]
    result = decide(job("new", 2), running=run)
    assert resizes(result) == {}
    assert codes(result) == {"ns/new": WaitCode.SCALING_IN}
    assert "once the workers leaving it are gone" in result.waiting[0].reason


def test_scale_out_with_nothing_waiting_counts_the_workers_device_kinds():
    # A round with no gated job: the device kinds the room is read in come from the
    # gangs' workers (a round of the e2e scenario once failed here, KeyError).
    gpus = (("nvidia.com/gpu", 8000),)
    run = [replace(p, request=replace(p.request, devices=gpus))
           for p in bound(elastic(job("run", 2), size=2, minimum=1, maximum=8), "pg-a")]
    assert resizes(decide([], running=run, devices=True)) == {"ns/run": (2, 4, [])}


def test_a_large_elastic_job_is_resized_to_exactly_what_the_domain_holds():
    # 1,024 one-GPU workers (min 100) against 40 8-GPU nodes: the largest size that
    # fits is 320, found by bisection (a linear walk down from 1,023 would pack 700 times).
    e = elastic(job("big", 1024, gpus=1), size=1024, minimum=100, maximum=1024)
    result = decide(e, layout={"pg-a": 40})
    assert resizes(result) == {"ns/big": (1024, 320, [])}
    assert codes(result) == {"ns/big": WaitCode.RESIZING}


# ---- worker plans (rules 9 and 10) ---------------------------------------------------
# "run": an elastic Indexed Job, one 8-GPU worker per node of pg-a (4 nodes); "new", when
# a row has it, a waiting job of that many 8-GPU pods, created with run and of run's
# weight (KOD2: an equal weight and age never gives room), so only a plan resizes run.


def worker_plan(size, uid="run-uid", valid_until=NOW + 600, name="run"):
    return WorkerPlan("Job", "ns", name, uid, size, size, NOW - 60, valid_until,
                      "forecast 40 samples/s")


@pytest.mark.parametrize("size, minimum, maximum, plans, waiting, expected, waits", [
    # Idle room for 2 more workers; the plan asks 3: grown by 1, not to 4.
    (2, 1, 8, [worker_plan(3)], 0, (2, 3, []), None),
    (2, 1, 8, [worker_plan(2)], 0, None, None),
    # Above its plan: scaled in to it, the highest indices first.
    (4, 1, 8, [worker_plan(2)], 0, (4, 2, ["run-3", "run-2"]), None),
    # ... even while a job waits, which fits once those workers are gone.
    (4, 1, 8, [worker_plan(2)], 2, (4, 2, ["run-3", "run-2"]), WaitCode.SCALING_IN),
    # No growth toward a plan while a job waits (rule 9): new (3 pods, too recent to
    # hold room) does not fit the 2 idle nodes, and run (at its minimum) gives none.
    (2, 2, 8, [worker_plan(4)], 3, None, WaitCode.NO_FIT),
    # A plan past its validUntil, of an earlier object of the same name (another uid),
    # or of another job: KOD2 alone (idle room for 2: grown to 4).
    (2, 1, 8, [worker_plan(3, valid_until=NOW - 1)], 0, (2, 4, []), None),
    (2, 1, 8, [worker_plan(3, uid="old-uid")], 0, (2, 4, []), None),
    (2, 1, 8, [worker_plan(3, name="other")], 0, (2, 4, []), None),
    # Kept within the owner's bounds: a plan of 1 with minimum 3 scales in to 3; one of
    # 10 with maximum 3 grows to 3 though 4 would fit.
    (4, 3, 8, [worker_plan(1)], 0, (4, 3, ["run-3"]), None),
    (2, 1, 3, [worker_plan(10)], 0, (2, 3, []), None),
], ids=["grows-only-to-its-target", "at-its-target-no-growth", "above-its-target-shrinks",
        "shrinks-while-a-job-waits", "no-growth-while-a-job-waits", "stale-plan-ignored",
        "another-uid-ignored", "another-job-ignored", "clamped-to-minimum",
        "clamped-to-maximum"])
def test_a_running_gang_follows_its_worker_plan(size, minimum, maximum, plans, waiting,
                                                expected, waits):
    run = bound(elastic(job("run", size), size=size, minimum=minimum, maximum=maximum),
                "pg-a")
    gated = job("new", waiting, created=NOW - 100 if waiting < 3 else NOW - 10) \
        if waiting else []
    result = decide(gated, running=run, plans=plans)
    assert resizes(result) == ({"ns/run": expected} if expected else {})
    assert codes(result) == ({"ns/new": waits} if waits else {})


def test_a_heavier_waiting_job_still_scales_a_planned_job_in_toward_its_minimum():
    # run (light: 16 CPUs a worker) is at its plan's 4; new, heavier, takes 2 of them
    # (rule 8 is unchanged by a plan).
    run = bound(elastic(job("run", 4), size=4, minimum=1, maximum=4, cpu=16), "pg-a")
    result = decide(job("new", 2), running=run, plans=[worker_plan(4)])
    assert resizes(result) == {"ns/run": (4, 2, ["run-3", "run-2"])}
    assert codes(result) == {"ns/new": WaitCode.SCALING_IN}


def test_a_resize_to_the_plan_cites_the_plan_and_a_clamped_one_says_so():
    run = bound(elastic(job("run", 4), size=4, minimum=3, maximum=8), "pg-a")
    (resize,) = decide([], running=run, plans=[worker_plan(2)]).resizes
    assert resize.reason == (
        "scaled in from 4 to 3: its worker plan needs 3 (forecast 40 samples/s; the "
        "plan's 2 kept within its bounds 3..8)")
    grown = bound(elastic(job("run", 2), size=2, minimum=1, maximum=8), "pg-a")
    (resize,) = decide([], running=grown, plans=[worker_plan(3)]).resizes
    assert "toward its worker plan's 3: forecast 40 samples/s" in resize.reason



# ---- worker plans of waiting jobs (rule 7b) -------------------------------------------
# "e": an elastic Indexed Job of 8-GPU pods waiting at the size its owner asks; its plan
# (DLRover-RM's warm start or KALE's size) asks another.

@pytest.mark.parametrize("size, plan, layout, expected", [
    (4, 2, {"pg-a": 4}, (4, 2)),   # smaller: resized to the plan, though 4 would fit
    (2, 4, {"pg-a": 4}, (2, 4)),   # larger: pg-a holds 4 (2 gated + 2 of their shape)
    (2, 6, {"pg-a": 4}, (2, 4)),   # clamped to its maximum 4, which pg-a holds
    (2, 3, {"pg-a": 2}, None),     # no domain holds 3 now: admitted at its 2
    (2, 2, {"pg-a": 4}, None),     # at its plan already
], ids=["plan-smaller", "plan-larger", "plan-clamped", "plan-no-domain-holds", "at-plan"])
def test_a_waiting_job_is_resized_to_its_plan_when_a_domain_holds_it(size, plan, layout,
                                                                     expected):
    e = elastic(job("e", size, created=NOW - 100), size=size, minimum=1, maximum=4)
    result = decide(e, layout=layout, plans=[worker_plan(plan, uid="e-uid", name="e")])
    if expected is None:
        assert resizes(result) == {}
        assert [sorted(p.name for p in a.pods) for a in result.admissions] == [
            [f"e-{i}" for i in range(size)]]
    else:
        assert resizes(result) == {"ns/e": (*expected, [])}
        assert codes(result) == {"ns/e": WaitCode.RESIZING}
        assert "by its worker plan (forecast 40 samples/s)" in result.waiting[0].reason


def test_a_stale_or_foreign_plan_leaves_a_waiting_job_as_it_is():
    e = elastic(job("e", 4, created=NOW - 100), size=4, minimum=1, maximum=4)
    for stale in (worker_plan(2, uid="e-uid", name="e", valid_until=NOW - 1),
                  worker_plan(2, uid="old", name="e")):
        result = decide(e, plans=[stale])
        assert resizes(result) == {} and len(result.admissions) == 1
