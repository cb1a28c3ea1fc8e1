"""Assumed placements (steered, not yet bound) and a job's placement + remaining demand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bucketing.resources import Resources
from locality.model import JobKey, JobPolicy, Role
from locality.placement import AssumedPlacements, PlacedPod, assumption_for, job_placement
from tests.locality.builders import CONFIG, make_pod

JOB = JobKey("ns", "j")
PS = make_pod("ps", cpu=4, job="j", role="ps")
W = [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(4)]


def store(*steered):
    assumed = AssumedPlacements()
    for pod, node, now in steered:
        assumed = assumed.assume(assumption_for(pod, node, now, CONFIG))
    return assumed


def test_assumption_for_a_pod_of_no_job_is_none():
    assert assumption_for(make_pod("plain"), "n1", 0.0, CONFIG) is None


def test_assume_replaces_an_earlier_assumption_for_the_same_pod():
    assumed = store((W[0], "n1", 0.0), (W[0], "n2", 1.0))
    assert len(assumed) == 1
    assert [a.node_name for a in assumed.for_job(JOB, 2.0)] == ["n2"]


def test_store_is_immutable():
    empty = AssumedPlacements()
    one = empty.assume(assumption_for(W[0], "n1", 0.0, CONFIG))
    assert (len(empty), len(one)) == (0, 1)
    assert one.forget(W[0].uid) is not one and len(one) == 1


@pytest.mark.parametrize(
    ("event", "deleted", "kept"),
    [
        pytest.param(replace(W[0], node_name="n1"), False, False, id="bound-drops"),
        pytest.param(replace(W[0], node_name="n9"), False, False, id="bound-elsewhere-drops"),
        pytest.param(W[0], True, False, id="deleted-drops"),
        pytest.param(replace(W[0], terminal=True), False, False, id="finished-drops"),
        pytest.param(W[0], False, True, id="still-pending-keeps"),
        pytest.param(replace(W[1], node_name="n1"), False, True, id="other-pod-keeps"),
    ],
)
def test_observe(event, deleted, kept):
    assumed = store((W[0], "n1", 0.0)).observe(event, deleted=deleted)
    assert (W[0].uid in assumed.by_uid) is kept
    assert bool(assumed.by_job) is kept


def test_expiry_and_requested_by_node():
    # ttl 90 s (the default): bound at 0 and 10 expire at 90 and 100.
    assumed = store((W[0], "n1", 0.0), (W[1], "n1", 10.0), (PS, "n2", 10.0))
    assert assumed.requested_by_node(89.0) == {
        "n1": Resources.of(2, 8, 2),  # two workers: 1 GPU, 4 CPUs, 1 GiB each
        "n2": Resources.of(0, 4, 1),
    }
    assert assumed.requested_by_node(90.0) == {"n1": Resources.of(1, 4, 1),
                                               "n2": Resources.of(0, 4, 1)}
    assert len(assumed.for_job(JOB, 90.0)) == 2
    expired = assumed.expire(90.0)
    assert sorted(expired.by_uid) == sorted([W[1].uid, PS.uid])
    assert len(expired.expire(100.0)) == 0


def test_job_placement_combines_bound_and_assumed():
    bound_ps = replace(PS, node_name="n1")
    assumed = store((W[0], "n1", 0.0), (W[1], "n2", 0.0))
    placement = job_placement(W[3], JOB, JobPolicy(), [bound_ps, *W], assumed, 1.0, CONFIG)
    assert placement.placed == (
        PlacedPod(PS.uid, Role.PS, "n1", PS.request, assumed=False),
        PlacedPod(W[0].uid, Role.WORKER, "n1", W[0].request, assumed=True),
        PlacedPod(W[1].uid, Role.WORKER, "n2", W[1].request, assumed=True),
    )
    # W[2] pending and not steered + W[3] (the pod being scheduled) remain.
    assert placement.remaining == ((W[2].request, 2),)


def test_cache_binding_wins_over_an_assumption():
    assumed = store((W[0], "n1", 0.0))
    bound = replace(W[0], node_name="n7")
    placement = job_placement(W[3], JOB, JobPolicy(), [bound], assumed, 1.0, CONFIG)
    assert [(p.node_name, p.assumed) for p in placement.placed] == [("n7", False)]


def test_the_pod_being_scheduled_is_never_placed():
    # It was steered before (its bind failed) and is being scheduled again.
    assumed = store((W[0], "n1", 0.0))
    placement = job_placement(W[0], JOB, JobPolicy(), [W[0]], assumed, 1.0, CONFIG)
    assert placement.placed == ()
    assert placement.remaining_pods == 1


def test_assumed_pods_the_cache_has_not_seen_still_count():
    assumed = store((W[0], "n1", 0.0))
    placement = job_placement(W[1], JOB, JobPolicy(), [], assumed, 1.0, CONFIG)
    assert [p.uid for p in placement.placed] == [W[0].uid]


def test_job_size_adds_unseen_pods_like_this_one():
    # Size 10; known: PS + W0 + W1 (the pod) = 3, so 7 unseen pods request what W1 does,
    # remaining = W0 + W1 + 7 = 9 one-GPU pods, then the PS (larger GPU first ordering).
    placement = job_placement(
        W[1], JOB, JobPolicy(job_size=10), [PS, W[0], W[1]], AssumedPlacements(), 0.0, CONFIG
    )
    assert placement.remaining == ((W[1].request, 9), (PS.request, 1))
    assert placement.remaining_pods == 10


W8 = make_pod("w8", cpu=8, gpus=8, job="j", role="worker")  # a larger worker shape
W8B = make_pod("w8b", cpu=8, gpus=8, job="j", role="worker")
CHIEF = make_pod("chief", cpu=2, job="j", role="chief")


@pytest.mark.parametrize(
    ("pod", "known", "assumed", "remaining"),
    [
        # Size 10, the PS judged first, W0 and W1 known (pending): 10 - 3 = 7 unseen
        # take the workers' shape; remaining W0 + W1 + 7 = 9 worker-shaped, then the PS.
        pytest.param(PS, [W[0], W[1]], (), ((W[0].request, 9), (PS.request, 1)),
                     id="ps-judged-unseen-are-workers"),
        # The workers W0 (bound) and W1 (assumed) are placed and count for the shape
        # too: 10 - 3 = 7 unseen worker-shaped, and the PS.
        pytest.param(PS, [replace(W[0], node_name="n1")], ((W[1], "n1", 0.0),),
                     ((W[0].request, 7), (PS.request, 1)), id="placed-workers-give-the-shape"),
        # No worker known: the judged pod's shape. 10 - 1 = 9 unseen + the PS = 10 PS-sized.
        pytest.param(PS, [], (), ((PS.request, 10),), id="no-worker-known-the-pods-shape"),
        # A chief is not a worker: the shape is still the judged PS's (10 - 2 = 8 unseen).
        pytest.param(PS, [CHIEF], (), ((PS.request, 9), (CHIEF.request, 1)),
                     id="a-chief-gives-no-shape"),
        # Known workers: W0 (1 GPU) and W8, W8B (8 GPUs): the 8-GPU shape is the most
        # common; 10 - 4 = 6 unseen + W8 + W8B = 8 of 8 GPUs, W0, the PS.
        pytest.param(PS, [W[0], W8, W8B], (),
                     ((W8.request, 8), (W[0].request, 1), (PS.request, 1)),
                     id="most-common-worker-shape"),
        # W0 and W8, one each: a tie goes to the larger (8 GPUs); 10 - 3 = 7 unseen.
        pytest.param(PS, [W[0], W8], (),
                     ((W8.request, 8), (W[0].request, 1), (PS.request, 1)),
                     id="a-tie-goes-to-the-larger"),
        # The judged pod is a worker and counts: W8 judged, W0 known, a tie -> 8 GPUs;
        # the judged pod itself is counted once: 10 - 3 (PS, W0, W8) = 7 unseen + W8.
        pytest.param(W8, [PS, W[0]], (),
                     ((W8.request, 8), (W[0].request, 1), (PS.request, 1)),
                     id="the-judged-worker-counts-once"),
    ],
)
def test_unseen_pods_take_the_shape_of_the_jobs_workers(pod, known, assumed, remaining):
    placement = job_placement(pod, JOB, JobPolicy(job_size=10), [pod, *known],
                              store(*assumed), 1.0, CONFIG)
    assert placement.remaining == remaining
    assert placement.remaining_pods + len(placement.placed) == 10


def test_finished_pods_are_neither_placed_nor_remaining():
    done = replace(W[0], node_name="n1", terminal=True)
    placement = job_placement(W[1], JOB, JobPolicy(), [done], AssumedPlacements(), 0.0, CONFIG)
    assert (placement.placed, placement.remaining_pods) == ((), 1)


def test_terminating_pods_neither_place_the_job_nor_count():
    # A restarted job: its old pods still run, Terminating, in their group. They are no
    # member of the new attempt, so they must not make its home there (under
    # `required` the filter would pass only that group's nodes, where the admitter sent
    # the new attempt elsewhere: found by tests/e2e/test_gang_terminating.py).
    leaving = [replace(W[0], node_name="n1", deleting=True),
               replace(W[2], node_name="n2", deleting=True)]
    placement = job_placement(W[1], JOB, JobPolicy(job_size=2), leaving,
                              AssumedPlacements(), 0.0, CONFIG)
    assert placement.placed == ()
    assert placement.remaining_pods == 2  # the pod and the one still to come


@pytest.mark.parametrize(
    ("phase_flags", "remaining"),
    [
        # Size 4; known: W0 (pending), W2 (the pod) and W1, which succeeded and is one
        # of the 4. Unseen: 4 - 3 = 1. Remaining: W0 + W2 + 1 unseen = 3.
        pytest.param({"terminal": True, "succeeded": True}, 3, id="succeeded-counts-as-known"),
        # Failed: its replacement is still to come. Unseen: 4 - 2 = 2; remaining 2 + 2 = 4.
        pytest.param({"terminal": True}, 4, id="failed-is-replaced"),
    ],
)
def test_job_size_and_finished_pods(phase_flags, remaining):
    done = replace(W[1], node_name="n1", **phase_flags)
    placement = job_placement(
        W[2], JOB, JobPolicy(job_size=4), [W[0], done, W[2]], AssumedPlacements(), 0.0, CONFIG
    )
    assert placement.placed == ()
    assert placement.remaining_pods == remaining
