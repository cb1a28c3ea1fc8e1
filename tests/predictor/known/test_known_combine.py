"""Known items placed in time and buckets; announced pods; the forecaster's history."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.catalog import load_catalog
from bucketing.resources import Resources
from predictor.history.series import make_series
from predictor.history.snapshot import PodDemand
from predictor.known.combine import (
    announced_pods,
    counted,
    covered,
    dedupe,
    known_values,
    newly_announced,
)
from predictor.known.history import unannounced
from predictor.known.model import KnownItem, PodRef
from predictor.known.pods import LivePod

NOW = 1_800_000_000.0
TYPES = load_catalog("aws").subset(["g5.xlarge", "g5.12xlarge"]).instance_types
ONE_GPU = Resources.of(1, 2, 8)  # fits g5.xlarge (1 GPU, 4 vCPU, 16 GiB)
FOUR_GPU = Resources.of(4, 24, 96)  # a g5.12xlarge's worth


def item(source="jobs", key="k", pods=1, request=ONE_GPU, expected=NOW, name="w",
         is_covered=False):
    return KnownItem(source, "Kind", "team", name, key, pods, request, expected, "", is_covered)


DEDUPE = [
    # a Workload and the suspended Job it stands for: Kueue wins
    ([item("jobs", "batch/Job/team/a"), item("kueue", "batch/Job/team/a")], ["kueue"],
     "kueue-over-job"),
    # a JobSet's two shapes both stay; its suspended child Job goes
    ([item("jobs", "j"), item("jobsets", "j"), item("jobsets", "j", request=FOUR_GPU)],
     ["jobsets", "jobsets"], "jobset-keeps-all-its-shapes"),
    ([item("podgroups", "p"), item("kubeflow", "p")], ["kubeflow"], "training-job-over-podgroup"),
    ([item("jobs", "a"), item("cronjobs", "b")], ["jobs", "cronjobs"], "different-workloads"),
]


@pytest.mark.parametrize("items, sources", [d[:2] for d in DEDUPE], ids=[d[2] for d in DEDUPE])
def test_one_workload_one_source(items, sources):
    assert [i.source for i in dedupe(items)] == sources


COUNTED = [
    (NOW, True, "due-now"),
    (NOW - 600, True, "overdue"),
    (NOW + 600, True, "at-the-horizon"),  # horizon 600 s: NOW + 600 <= NOW + 600
    (NOW + 601, False, "beyond-the-horizon"),
    (None, False, "unknown-time"),
]


@pytest.mark.parametrize("expected_s, kept", [c[:2] for c in COUNTED], ids=[c[2] for c in COUNTED])
def test_only_items_due_within_the_horizon_count(expected_s, kept):
    assert bool(counted([item(expected=expected_s)], NOW, 600.0)) is kept


def test_covered_items_never_count_but_are_announced():
    """A Workload behind a ProvisioningRequest: CA provisions for it, so it is not counted
    (even were it due), but it is announced, so its pods leave the forecaster's history."""
    behind_request = item("kueue", "batch/Job/team/p", expected=NOW, is_covered=True)
    due = item("jobs", "batch/Job/team/j")
    assert counted([behind_request, due], NOW, 600.0) == [due]
    assert covered([behind_request, due]) == [behind_request]
    assert newly_announced(counted([behind_request, due], NOW, 600.0)
                           + covered([behind_request, due]), {}, NOW) == {
        "batch/Job/team/j": ("jobs", NOW), "batch/Job/team/p": ("kueue", NOW)}


def test_gated_pods_are_never_announced_work():
    """A gated pod exists already: remembering it as announced work would only grow the
    history file (no pod of it comes later)."""
    assert newly_announced([item("gated", "/Pod/team/a")], {}, NOW) == {}


def test_known_values_embed_all_together_and_per_source():
    items = [item("kueue", pods=3), item("cronjobs", pods=1, key="c"),
             item("jobs", pods=1, request=FOUR_GPU, key="j"),
             item("jobs", pods=1, request=Resources.of(16, 1, 1), key="x")]
    values = known_values(items, TYPES)
    # 4 one-GPU pods: 4 x 1 GPU / 1 = 4 g5.xlarge; the 4-GPU pod: 1 g5.12xlarge;
    # the 16-GPU pod fits no bucket
    assert values.total == {"g5.xlarge": 4.0, "g5.12xlarge": 1.0}
    assert values.unbucketable == 1
    # each source embedded alone: kueue 3, cronjobs 1, jobs 1 big
    assert values.by_source == {
        "kueue": {"g5.xlarge": 3.0, "g5.12xlarge": 0.0},
        "jobs": {"g5.xlarge": 0.0, "g5.12xlarge": 1.0},
        "cronjobs": {"g5.xlarge": 1.0, "g5.12xlarge": 0.0},
    }
    assert values.pods == {"kueue": 3, "jobs": 2, "cronjobs": 1}


def test_no_known_items_is_zero_not_nothing():
    values = known_values([], TYPES)
    assert values.total == {"g5.xlarge": 0.0, "g5.12xlarge": 0.0}
    assert values.by_source == {} and values.unbucketable == 0


def test_first_counted_time_is_kept():
    fresh = newly_announced([item(key="a"), item(key="b")], {"a": NOW - 300}, NOW)
    assert fresh == {"b": ("jobs", NOW)}


def live(name, keys, created, phase_wants=True):
    demand = PodDemand(f"team/{name}", ONE_GPU, "n1") if phase_wants else None
    return LivePod(demand, PodRef("team", frozenset(keys), "", created))


ANNOUNCED = [
    (live("a", {"k"}, NOW + 10), True, "created-after-it-was-counted"),
    (live("b", {"k"}, NOW - 10), False, "existed-before-it-was-counted"),
    # creationTimestamp has whole seconds: created in the second it was counted = after
    (live("s", {"k"}, NOW), True, "same-second"),
    (live("c", {"other"}, NOW + 10), False, "other-workload"),
    (live("d", {"other", "k"}, NOW + 10), True, "any-of-its-keys"),
    (live("e", {"k"}, NOW + 10, phase_wants=False), False, "finished-pod"),
    (live("f", {"k"}, None), False, "no-creation-time"),
]


@pytest.mark.parametrize("pod, announced", [a[:2] for a in ANNOUNCED],
                         ids=[a[2] for a in ANNOUNCED])
def test_announced_pods(pod, announced):
    assert (announced_pods([pod], {"k": NOW + 0.5}) == [pod.demand]) is announced


@pytest.mark.parametrize(
    "created, announced",
    [(NOW + 400, True), (NOW + 390, True), (NOW + 389, False)],
    ids=["after-a-start-up", "exactly-a-start-up", "sooner"],
)
def test_announced_pods_need_a_start_up_of_lead(created, announced):
    # counted first at NOW + 0.5 (floor: NOW), start-up 390 s: created at NOW + 390 or later
    pod = live("a", {"k"}, created)
    assert (announced_pods([pod], {"k": NOW + 0.5}, 390.0) == [pod.demand]) is announced


def test_unannounced_history_is_observed_minus_announced():
    series = make_series(NOW + 300 * np.arange(3), ["g5.xlarge", "g5.xlarge@pg-a"],
                         np.array([[5.0, 2.0], [np.nan, np.nan], [4.0, 1.0]]), 300.0)
    announced = np.array([[2.0, 0.0], [1.0, 1.0], [5.0, 1.0]])
    rest = unannounced(series, announced).history()
    # 5 - 2 = 3, 2 - 0 = 2; the gap stays a gap; 4 - 5 clips at 0, 1 - 1 = 0
    np.testing.assert_array_equal(rest, [[3.0, 2.0], [np.nan, np.nan], [0.0, 0.0]])
