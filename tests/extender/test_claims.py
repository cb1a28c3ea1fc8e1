"""ClaimsBook: each request gets the other jobs' claims, kept up to date as jobs change."""

from __future__ import annotations

import copy

from extender.cache import ClusterCache
from extender.claims import ClaimsBook
from locality.config import LocalityConfig
from locality.model import JobKey
from locality.parse import parse_node, parse_pod
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
