"""KOD2's scale-in and scale-out inside one domain (locality.admission.resize)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bucketing.resources import Resources
from locality.admission.pack import Bins
from locality.admission.resize import (
    Claimant,
    ElasticGang,
    claimant_of,
    elastic_gangs,
    removal_order,
    scale_in,
    scale_out,
    scale_to_plan,
)
from locality.admission.weight import WeightConfig
from locality.config import LocalityConfig
from locality.elastic import Bounds, ElasticOwner, Removal
from locality.firstfit import Room
from locality.model import JobKey
from locality.owners import INDEX_ANNOTATION
from locality.worker_plans import WorkerPlan
from tests.locality.builders import make_node, make_pod


def domain(free_gpus: dict[str, float]) -> Bins:
    """One domain's room: each node's free GPUs (and room enough of CPU and memory)."""
    nodes = tuple(make_node(name) for name in free_gpus)
    free = [Resources.of(gpus, 64, 512) for gpus in free_gpus.values()]
    return Bins(Room.of(free, [], 0), nodes=nodes)


def worker(job: str, index: int, node: str | None, gpus: float = 2):
    pod = make_pod(f"{job}-{index}", job=job, role="worker", node=node, gpus=gpus, cpu=4,
                   memory_gib=16)
    return replace(pod, annotations={**pod.annotations, INDEX_ANNOTATION: str(index)})


def gang(job: str, placed: dict[int, str], *, minimum: int = 1, maximum: int = 8,
         weight: float = 0.6, created_at: float = 0.0, anchors=(),
         removal: Removal = Removal.HIGHEST_INDEX, gpus: float = 2,
         target: int | None = None, priority: int = 0) -> ElasticGang:
    owner = ElasticOwner("Job", "ns", job, len(placed), Bounds(minimum, maximum), removal)
    return ElasticGang(JobKey("ns", job), owner, weight, created_at,
                       tuple(worker(job, i, node, gpus) for i, node in placed.items()),
                       frozenset(anchors), priority=priority, target=target,
                       plan_reason="its forecast")


def claimant(pods: int = 1, gpus: float = 8, weight: float = 0.7, created_at: float = 100.0,
             priority: int = 0) -> Claimant:
    return claimant_of(JobKey("ns", "new"),
                       [make_pod(f"new-{i}", job="new", gpus=gpus, cpu=4, memory_gib=16)
                        for i in range(pods)], weight, created_at, priority=priority)


def removed(resizes) -> dict[str, list[str]]:
    return {r.job.name: [pod.name for pod in r.removed] for r in resizes}


# Job "a": its PS on n1, workers 0 and 1 on n2, workers 2 and 3 on n1 beside the PS.
# Both nodes have 4 GPUs free; the newcomer needs one node's 8.
A_LAYOUT = {0: "n2", 1: "n2", 2: "n1", 3: "n1"}


def test_kod2_order_takes_the_workers_on_nodes_without_the_ps_first():
    a = gang("a", A_LAYOUT, anchors={"n1"}, removal=Removal.PS_NODES_LAST)
    assert [pod.name for pod in removal_order(a)] == ["a-1", "a-0", "a-3", "a-2"]
    resizes = scale_in(claimant(), domain({"n1": 4, "n2": 4}), [a])
    assert removed(resizes) == {"a": ["a-1", "a-0"]}
    assert (resizes[0].before, resizes[0].after) == (4, 2)
    assert "ns/new" in resizes[0].reason


def test_an_owner_that_removes_the_highest_indices_frees_the_ps_node_instead():
    # An Indexed Job's controller removes indices 3 and 2, beside the PS: the room
    # counted is where they were, not where KOD2 would have liked it.
    a = gang("a", A_LAYOUT, anchors={"n1"}, removal=Removal.HIGHEST_INDEX)
    assert removed(scale_in(claimant(), domain({"n1": 4, "n2": 4}), [a])) == {
        "a": ["a-3", "a-2"]}


def test_never_below_a_jobs_minimum_and_nothing_when_the_minimums_do_not_make_room():
    a = gang("a", A_LAYOUT, minimum=3)  # one worker to spare: 2 GPUs, not 4
    assert scale_in(claimant(), domain({"n1": 4, "n2": 4}), [a]) is None
    b = gang("b", A_LAYOUT, minimum=2)
    assert removed(scale_in(claimant(), domain({"n1": 4, "n2": 4}), [b])) == {
        "b": ["b-3", "b-2"]}


def test_a_claimant_that_fits_already_resizes_nothing():
    a = gang("a", A_LAYOUT)
    assert scale_in(claimant(), domain({"n1": 8, "n2": 4}), [a]) == ()


def test_equal_weights_keep_the_older_job_whole():
    # The claimant was created at t=100. "old" (t=50) keeps its workers; "young" (t=150)
    # gives room, though it was listed second.
    old = gang("old", {0: "n1", 1: "n1"}, weight=0.7, created_at=50.0)
    young = gang("young", {0: "n2", 1: "n2"}, weight=0.7, created_at=150.0)
    bins = domain({"n1": 2, "n2": 2})  # the newcomer needs 4 GPUs on one node
    assert removed(scale_in(claimant(gpus=4, weight=0.7), bins, [old, young])) == {
        "young": ["young-1"]}
    # Without the younger job, the older one of equal weight is never touched.
    assert scale_in(claimant(gpus=4, weight=0.7), bins, [old]) is None


def test_higher_weights_never_give_room_and_the_lowest_gives_first():
    heavy = gang("heavy", {0: "n1", 1: "n1"}, weight=0.9)
    low = gang("low", {0: "n2", 1: "n2"}, weight=0.55)
    lower = gang("lower", {0: "n1", 1: "n2"}, weight=0.52)
    bins = domain({"n1": 4, "n2": 4})
    assert scale_in(claimant(weight=0.7), bins, [heavy]) is None
    # "lower" gives first (its one spare worker, on n2: 6 GPUs free there), then "low"
    # gives one of its workers on n2, which then holds 8.
    assert removed(scale_in(claimant(weight=0.7), bins, [heavy, low, lower])) == {
        "lower": ["lower-1"], "low": ["low-1"]}


@pytest.mark.parametrize(("gang_priority", "claimant_priority", "claimant_weight", "gives"), [
    (0, 1000, 0.5, True),    # lower priority gives room to a higher one, whatever weights
    (0, 1000, 0.7, True),    # (0.7: the same weight as the gang, the claimant younger)
    (1000, 0, 0.9, False),   # higher priority never gives room to a heavier job
    (500, 500, 0.9, True),   # equal priority: KOD2, the heavier claimant takes room
    (500, 500, 0.5, False),  # equal priority: a lighter claimant takes none
], ids=["lower-priority-gives", "lower-priority-gives-at-equal-weight",
        "higher-priority-keeps", "equal-priority-heavier-takes", "equal-priority-lighter"])
def test_priority_ranks_before_weight(gang_priority, claimant_priority, claimant_weight,
                                      gives):
    # The gang (weight 0.7) holds 4 GPUs on each node; the claimant needs 8 on one.
    a = gang("a", A_LAYOUT, weight=0.7, priority=gang_priority)
    made = scale_in(claimant(weight=claimant_weight, priority=claimant_priority),
                    domain({"n1": 4, "n2": 4}), [a])
    assert (made is not None) is gives
    if gives:
        assert removed(made) == {"a": ["a-3", "a-2"]}
        why = "priority 1000; this job's 0" if gang_priority != claimant_priority \
            else "weight 0.900; this job's 0.700"
        assert why in made[0].reason


def test_the_lowest_priority_gives_first_whatever_its_weight():
    light = gang("light", {0: "n1", 1: "n1"}, weight=0.5, priority=500)
    heavy_low = gang("heavy-low", {0: "n2", 1: "n2"}, weight=0.9, priority=0)
    bins = domain({"n1": 4, "n2": 4})
    assert removed(scale_in(claimant(gpus=6, weight=0.7, priority=1000), bins,
                            [light, heavy_low])) == {"heavy-low": ["heavy-low-1"]}


def test_scale_out_grows_by_weight_into_idle_room_and_not_while_a_job_waits():
    first = gang("first", {0: "n1"}, maximum=4, weight=0.8)
    second = gang("second", {0: "n2"}, maximum=8, weight=0.6)
    bins = domain({"n1": 4, "n2": 6})  # 10 GPUs idle: 5 workers of 2 GPUs
    grown = {r.job.name: (r.before, r.after) for r in scale_out(bins, [second, first], False)}
    assert grown == {"first": (1, 4), "second": (1, 3)}
    assert scale_out(bins, [first, second], True) == ()
    at_max = gang("full", {0: "n1", 1: "n1"}, maximum=2)
    assert scale_out(bins, [at_max], False) == ()
    # A gang grows only once it has run at its size for the quiet time.
    assert scale_out(bins, [first], False, now=30.0, after_seconds=60.0) == ()
    assert scale_out(bins, [first], False, now=60.0, after_seconds=60.0)[0].after == 4


@pytest.mark.parametrize("gpus", [1, 2])
def test_scale_out_never_takes_more_than_the_room(gpus):
    g = gang("g", {0: "n1"}, maximum=100, gpus=gpus)
    (resize,) = scale_out(domain({"n1": 3, "n2": 5}), [g], False)
    assert resize.after - resize.before == 3 // gpus + 5 // gpus


@pytest.mark.parametrize("placed, target, grown, shrunk", [
    # 10 GPUs idle (5 workers of 2): grown to the target, not to the maximum of 8.
    ({0: "n1"}, 3, (1, 3), None),
    ({0: "n1"}, None, (1, 6), None),  # no plan: 1 + 5 workers of room
    ({0: "n1", 1: "n1"}, 2, None, None),  # at its target: neither
    # Above it: scaled in to it (the highest indices first), and never grown.
    ({0: "n1", 1: "n1", 2: "n2", 3: "n2"}, 2, None, (4, 2, ["g-3", "g-2"])),
], ids=["grows-to-its-target", "no-target-grows-to-what-fits", "at-its-target",
        "above-its-target"])
def test_a_gang_with_a_target_grows_and_shrinks_only_to_it(placed, target, grown, shrunk):
    g = gang("g", placed, target=target)
    bins = domain({"n1": 4, "n2": 6})
    out = [(r.before, r.after) for r in scale_out(bins, [g], False)]
    assert out == ([grown] if grown else [])
    assert [(r.before, r.after, [p.name for p in r.removed]) for r in scale_to_plan([g])] \
        == ([shrunk] if shrunk else [])


def test_worker_plans_are_read_at_the_rounds_now():
    with pytest.raises(ValueError, match="need the round's now"):
        elastic_gangs([], lambda job: [], LocalityConfig(), WeightConfig(),
                      {"Job.ns.a": WorkerPlan("Job", "ns", "a", "a-uid", 2, 2, 0, 60, "")})
