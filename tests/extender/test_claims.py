"""ClaimsBook: each request gets the other jobs' claims, kept up to date as jobs change."""

from __future__ import annotations

import copy

import pytest

from extender.cache import ClusterCache
from extender.claims import ClaimsBook
from locality.config import LocalityConfig
from locality.model import JobKey
from locality.parse import parse_node, parse_pod
from locality.placement import assumption_for
from tests.extender.builders import make_node, make_pod

LOCALITY = LocalityConfig()
A, B, C = (JobKey("team", name) for name in ("a", "b", "c"))


def job(name: str, ps_node: str, waiting: int) -> list[dict]:
    pods = [make_pod(f"{name}-ps", cpu="4", job=name, role="PS", node=ps_node, phase="Running")]
    pods += [make_pod(f"{name}-w{i}", gpus=1, cpu="8", memory="64Gi", job=name, role="Worker")
             for i in range(waiting)]
    return pods


def gpus(claims) -> dict[str, int]:
    return {name: r.gpu_milli // 1000 for name, r in sorted(claims.items())}


def book() -> tuple[ClusterCache, ClaimsBook, list[dict]]:
    nodes = [make_node(f"n{i}", group="g") for i in range(1, 5)]
    pods = job("a", "n1", 10) + job("b", "n2", 3)
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    cache.replace_pods([parse_pod(pod, LOCALITY) for pod in pods])
    return cache, ClaimsBook(cache, LOCALITY), pods


def test_each_job_gets_the_claims_of_the_others():
    _, claims, _ = book()
    # a: 10 workers, 8 on its PS node n1, 2 on the most idle node of g (n3, then n4;
    # n2 holds b's PS). b: 3 workers on its PS node n2.
    assert gpus(claims.others(B, 0.0)) == {"n1": 8, "n3": 2}
    assert gpus(claims.others(A, 0.0)) == {"n2": 3}
    assert gpus(claims.others(C, 0.0)) == {"n1": 8, "n2": 3, "n3": 2}


def test_claims_follow_the_jobs_pods_as_they_are_bound():
    cache, claims, pods = book()
    workers_of_b = [pod for pod in pods if pod["metadata"]["name"].startswith("b-w")]
    for left, pod in zip((2, 1, 0), workers_of_b, strict=True):
        bound = copy.deepcopy(pod)
        bound["spec"]["nodeName"], bound["status"]["phase"] = "n2", "Running"
        cache.apply_pod(parse_pod(bound, LOCALITY))
        # A bound worker takes real room now, and b claims one less.
        assert gpus(claims.others(A, 0.0)) == ({"n2": left} if left else {})
    assert gpus(claims.others(C, 0.0)) == {"n1": 8, "n3": 2}  # a's, unchanged


SIZE = {LOCALITY.job_size_annotation: "6"}


def sized_job(bound_workers: int, waiting: int, failed: int = 0) -> list[dict]:
    """Job b of size 6: its PS and `bound_workers` one-GPU workers Running on n2,
    `waiting` pending workers, `failed` Failed workers."""
    pods = [make_pod("b-ps", cpu="4", memory="16Gi", job="b", role="PS", node="n2",
                     phase="Running", annotations=SIZE)]
    states = ["Running"] * bound_workers + ["Pending"] * waiting + ["Failed"] * failed
    pods += [make_pod(f"b-w{i}", gpus=1, cpu="8", memory="64Gi", job="b", role="Worker",
                      node=None if phase == "Pending" else "n2", phase=phase, annotations=SIZE)
             for i, phase in enumerate(states)]
    return pods


@pytest.mark.parametrize(
    ("bound_workers", "waiting", "failed", "claimed"),
    [
        # Nothing waiting, 3 of 6 pods known and placed: 6 - 3 = 3 unseen one-GPU
        # workers (the shape of the known ones), claimed on the PS's node n2.
        pytest.param(2, 0, 0, {"n2": {"gpu": 3, "cpu": 24}}, id="unseen-workers-claimed"),
        # Only the PS known: its 5 unseen pods take its shape (no worker known):
        # 5 x 4 CPUs = 20 CPUs, no GPUs.
        pytest.param(0, 0, 0, {"n2": {"gpu": 0, "cpu": 20}}, id="no-worker-known-ps-shaped"),
        # A Failed worker is replaced: 6 - (PS + 2 bound) = 3 to come.
        pytest.param(2, 0, 1, {"n2": {"gpu": 3, "cpu": 24}}, id="a-failed-pod-is-to-come"),
        # One waiting + 2 unseen (6 - 4): 3 one-GPU workers, the waiting one counted once.
        pytest.param(2, 1, 0, {"n2": {"gpu": 3, "cpu": 24}}, id="waiting-and-unseen"),
        # All 6 known and placed: nothing to claim.
        pytest.param(5, 0, 0, {}, id="complete"),
    ],
)
def test_a_job_declaring_more_pods_than_known_claims_for_the_unseen(
    bound_workers, waiting, failed, claimed
):
    nodes = [make_node(f"n{i}", group="g") for i in range(1, 5)]
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    cache.replace_pods([parse_pod(pod, LOCALITY)
                        for pod in sized_job(bound_workers, waiting, failed)])
    others = ClaimsBook(cache, LOCALITY).others(A, 0.0)
    assert {name: {"gpu": r.gpu_milli // 1000, "cpu": r.cpu_milli // 1000}
            for name, r in others.items()} == claimed


def test_claims_for_unseen_pods_end_when_the_job_is_complete():
    nodes = [make_node(f"n{i}", group="g") for i in range(1, 5)]
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    pods = sized_job(5, 0)
    cache.replace_pods([parse_pod(pod, LOCALITY) for pod in pods[:3]])
    claims = ClaimsBook(cache, LOCALITY)
    # PS + 2 workers of 6: 3 unseen, then 2, 1, 0 as the other workers are created bound.
    for left, pod in zip((3, 2, 1, 0), [None, *pods[3:]], strict=True):
        if pod is not None:
            cache.apply_pod(parse_pod(pod, LOCALITY))
        assert gpus(claims.others(A, 0.0)) == ({"n2": left} if left else {})


def test_a_job_whose_waiting_pods_are_all_steered_and_declares_no_size_claims_nothing():
    # b: PS on n2, 2 workers pending but both steered (assumed) to n2, no job size:
    # no pod left to place, so no claim (the stand-in for pods to come is not made up).
    nodes = [make_node(f"n{i}", group="g") for i in range(1, 5)]
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    pods = [parse_pod(pod, LOCALITY) for pod in job("b", "n2", 2)]
    cache.replace_pods(pods)
    assumed = cache.assumed
    for pod in pods[1:]:
        assumed = assumed.assume(assumption_for(pod, "n2", 0.0, LOCALITY))
    cache.set_assumed(assumed)
    assert ClaimsBook(cache, LOCALITY).others(A, 0.0) == {}
