"""Topology levels: the score aims at the narrowest domain that holds the job, the filter
holds a `required` job to one domain at the level it names, per node and with numpy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.columns import NodeTable
from locality.config import LocalityConfig
from locality.filter import filter_nodes, filter_table
from locality.score import score_columns, score_nodes
from locality.topology import LevelKeys, node_domains
from tests.locality.builders import context_for, make_pod, make_state


def node(name, block, subblock, clique=None, gpus=8):
    domains = [("block", block), ("subblock", subblock)]
    if clique is not None:
        domains.append(("nvlink", clique))
    return make_state(name, gpus=gpus, cpu=96, domains=domains)


# block b1: sub-block s1 holds NVLink cliques c1 (n1, n2) and c2 (n3, n4); sub-block s2
# has 4 nodes without a clique. Block b2: sub-block s3, two nodes. 8 GPUs per node:
# a clique holds 16 GPUs, s1 and s2 32 each, s3 16, b1 64.
CLUSTER = [
    node("n1", "b1", "s1", "c1"), node("n2", "b1", "s1", "c1"),
    node("n3", "b1", "s1", "c2"), node("n4", "b1", "s1", "c2"),
    *(node(f"n{i}", "b1", "s2") for i in range(5, 9)),
    node("n9", "b2", "s3"), node("n10", "b2", "s3"),
]
NAMES = [state.name for state in CLUSTER]


def workers(count, **kwargs):
    return [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker", **kwargs)
            for i in range(count)]


def group_terms(context, columnar):
    if columnar:
        table = NodeTable(CLUSTER)
        return dict(zip(NAMES, score_columns(context, table)[1].tolist(), strict=True))
    return {name: breakdown.group for name, breakdown in score_nodes(context, CLUSTER).items()}


@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
@pytest.mark.parametrize(
    ("job", "expected"),
    [
        # 12 one-GPU pods: both cliques hold 12 of 16, so the NVLink level is the target
        # (3); one level up, the sub-blocks that hold 12 (s2: 32, s3: 16) give 2.
        pytest.param(workers(12), {"n1": 3, "n2": 3, "n3": 3, "n4": 3, "n5": 2, "n6": 2,
                                   "n7": 2, "n8": 2, "n9": 2, "n10": 2},
                     id="first-pod-aims-at-the-narrowest-domain-that-holds-the-job"),
        # 20 pods fit no clique (16) and not s3 (16): the sub-block level is the target,
        # s1 and s2 (32) give 3; b2 (16) cannot hold the job either: 0.
        pytest.param(workers(20), {"n1": 3, "n2": 3, "n3": 3, "n4": 3, "n5": 3, "n6": 3,
                                   "n7": 3, "n8": 3, "n9": 0, "n10": 0},
                     id="too-big-for-a-clique-aims-one-level-up"),
        # A worker placed on n1: the job's homes are c1, s1 and b1; narrowest first.
        pytest.param([*workers(3), replace(workers(1)[0], name="placed", uid="placed",
                                           node_name="n1")],
                     {"n1": 3, "n2": 3, "n3": 2, "n4": 2, "n5": 1, "n6": 1, "n7": 1, "n8": 1,
                      "n9": 0, "n10": 0},
                     id="placed-job-stays-in-its-clique-then-sub-block-then-block"),
    ],
)
def test_score_aims_at_the_narrowest_domain(job, expected, columnar):
    pod = job[0]
    cluster = NodeTable(CLUSTER) if columnar else CLUSTER
    context = context_for(pod, cluster, job_pods=job)
    assert group_terms(context, columnar) == expected


REQUIRED_CLIQUE = {"headstart.io/placement-group": "required",
                   "headstart.io/topology-level": "nvlink"}


@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
@pytest.mark.parametrize(
    ("job", "expected"),
    [
        # 12 pods fit a clique (16 GPUs): clique nodes pass, nodes without one do not.
        pytest.param(workers(12, group="required"), {
            **dict.fromkeys(["n1", "n2", "n3", "n4"], ("passed", None)),
            **dict.fromkeys(["n5", "n6", "n7", "n8", "n9", "n10"], (
                "unresolvable",
                "node has no nvlink domain label (placement-group policy required at nvlink)")),
        }, id="first-pod-needs-a-clique"),
        pytest.param(workers(20, group="required"), {
            **{name: ("unresolvable", f"nvlink domain {clique} can hold 16 of the job's 20 "
                                      "remaining pods (policy required)")
               for name, clique in (("n1", "c1"), ("n2", "c1"), ("n3", "c2"), ("n4", "c2"))},
            **dict.fromkeys(["n5", "n6", "n7", "n8", "n9", "n10"], (
                "unresolvable",
                "node has no nvlink domain label (placement-group policy required at nvlink)")),
        }, id="no-clique-holds-the-job"),
        pytest.param([*workers(3, group="required"),
                      replace(workers(1)[0], name="placed", uid="placed", node_name="n3")], {
            **dict.fromkeys(["n3", "n4"], ("passed", None)),
            **{name: ("unresolvable", "job ns/j is in nvlink domain c2 (policy required); "
                                      "node is in nvlink domain c1")
               for name in ("n1", "n2")},
            **dict.fromkeys(["n5", "n6", "n7", "n8", "n9", "n10"], (
                "unresolvable", "job ns/j is in nvlink domain c2 (policy required); node is "
                                "in no nvlink domain")),
        }, id="placed-job-stays-in-its-clique"),
    ],
)
def test_required_at_a_level(job, expected, columnar):
    pod = replace(job[0], annotations=REQUIRED_CLIQUE)
    job = [pod, *job[1:]]
    if columnar:
        table = NodeTable(CLUSTER)
        result = filter_table(context_for(pod, table, job_pods=job), table, NAMES)
    else:
        result = filter_nodes(context_for(pod, CLUSTER, job_pods=job), CLUSTER)
    verdicts = {name: ("passed", None) for name in result.passed}
    verdicts |= {name: ("unresolvable", reason) for name, reason in result.unresolvable.items()}
    assert verdicts == expected


def test_a_label_key_belongs_to_the_widest_level_listing_it():
    keys = LevelKeys.of(LocalityConfig())
    gke = {"cloud.google.com/gce-topology-block": "b", "cloud.google.com/gce-topology-subblock":
           "sb", "cloud.google.com/gke-placement-group": "compact-1"}
    # gce-topology-block is also the last placement-group label: the block level's here.
    assert node_domains(gke, keys) == (("block", "b"), ("subblock", "sb"),
                                       ("placement-group", "compact-1"))


@pytest.mark.parametrize(
    ("domains", "expected"),
    [
        # Targets: clique c1 (3), sub-block s1 (2), block b1 (1).
        pytest.param((("block", "b1"), ("subblock", "s1"), ("nvlink", "c1")), 3, id="in-clique"),
        pytest.param((("block", "b1"), ("subblock", "s1"), ("nvlink", "c9")), 2, id="sub-block"),
        pytest.param((("block", "b1"),), 1, id="block"),
        pytest.param((("block", "b2"), ("nvlink", "c1")), 3, id="narrowest-match-wins"),
        pytest.param((), 0, id="no-labels"),
    ],
)
def test_topology_term(domains, expected):
    targets = (("nvlink", frozenset({"c1"})), ("subblock", frozenset({"s1"})),
               ("block", frozenset({"b1"})))
    state = make_state("x", domains=domains)
    [pod] = workers(1)
    context = replace(context_for(pod, [state], job_pods=[pod]), targets=targets)
    assert score_nodes(context, [state])["x"].group == expected
