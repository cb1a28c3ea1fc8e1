"""headstart_extender_filtered_nodes_total: its `reason` label is the core's ReasonCode,
for every failure kind through real HTTP, and never read from the reason text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extender.app import OPS_APP, create_app
from extender.cache import ClusterCache
from extender.config import ExtenderConfig
from extender.metrics import ExtenderMetrics
from locality.config import LocalityConfig
from locality.filter import FilterResult, ReasonCode
from locality.parse import parse_node, parse_node_topology
from tests.extender.builders import JSON_HEADERS, args_body, make_node, make_nrt, make_pod

LOCALITY = LocalityConfig()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "extender.md"
FILTERED = "headstart_extender_filtered_nodes_total"


def filtered_samples(text: str) -> dict[tuple[str, str], float]:
    """{(reason, resolvable): value} of the filtered-nodes counter in Prometheus text."""
    pattern = re.compile(
        rf'^{FILTERED}{{reason="([^"]*)",resolvable="([^"]*)"}} (\S+)$', re.MULTILINE)
    return {(reason, resolvable): float(value)
            for reason, resolvable, value in pattern.findall(text)}


# ---- every failure kind, through the app --------------------------------------------

REQUIRED_GROUP = {"headstart.io/placement-group": "required"}

# (node objects, NRT objects, pod, candidate names) -> (protocol field, label, resolvable)
KINDS = [
    pytest.param(
        [make_node("x", gpus=1)], [], make_pod("w", gpus=4, job="j", role="worker"), ["x"],
        ("FailedNodes", "insufficient_gpu", "true"),
        id="insufficient-gpu",
    ),
    pytest.param(
        [make_node("x", cpu="2")], [], make_pod("w", cpu="4", job="j", role="worker"), ["x"],
        ("FailedNodes", "insufficient_cpu", "true"),
        id="insufficient-cpu",
    ),
    pytest.param(
        [make_node("x", memory="1Gi")], [],
        make_pod("w", memory="2Gi", job="j", role="worker"), ["x"],
        ("FailedNodes", "insufficient_memory", "true"),
        id="insufficient-memory",
    ),
    pytest.param(
        [make_node("x")], [],
        make_pod("w", gpus=1, job="j", role="worker", annotations=REQUIRED_GROUP), ["x"],
        ("FailedAndUnresolvableNodes", "placement_group", "false"),
        id="placement-group",
    ),
    pytest.param(
        # (free CPUs, free GPUs) per zone: 1 GPU each, the pod wants 2 on one zone
        [make_node("x")], [make_nrt("x", [(48, 1), (48, 1)])],
        make_pod("w", gpus=2, job="j", role="worker",
                 annotations={"headstart.io/numa": "required"}), ["x"],
        ("FailedAndUnresolvableNodes", "numa", "false"),
        id="numa",
    ),
    pytest.param(
        # Not in the cache yet: only a required group policy fails it (its group is
        # unknown); otherwise it passes (test_app.py).
        [make_node("x")], [],
        make_pod("w", gpus=1, job="j", role="worker", annotations=REQUIRED_GROUP), ["ghost"],
        ("FailedAndUnresolvableNodes", "unknown_node", "false"),
        id="unknown-node",
    ),
]


@pytest.mark.parametrize(("nodes", "nrts", "pod", "names", "expected"), KINDS)
async def test_every_failure_kind_counts_under_its_label(aiohttp_client, nodes, nrts, pod,
                                                         names, expected):
    field, label, resolvable = expected
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    cache.replace_pods([])
    cache.replace_topologies([parse_node_topology(nrt, LOCALITY) for nrt in nrts])
    app = create_app(ExtenderConfig(), cache)
    client = await aiohttp_client(app)
    ops = await aiohttp_client(app[OPS_APP])
    response = await client.post("/filter", data=args_body(pod, names=names),
                                 headers=JSON_HEADERS)
    answer = json.loads(await response.text())
    # The node is excluded in the right protocol field (its text is pinned elsewhere:
    # tests/locality/test_filter.py and the captured exchanges in test_app.py).
    assert list(answer[field]) == names
    metrics = await (await ops.get("/metrics")).text()
    assert filtered_samples(metrics) == {(label, resolvable): 1.0}


# ---- the label comes from the code, never the text ------------------------------------


@pytest.mark.parametrize(
    ("failed_text", "code"),
    [
        # Text that the old keyword matching would have labelled insufficient_gpu.
        pytest.param("insufficient GPU (pod requests 1)", ReasonCode.NUMA, id="misleading-text"),
        # A reworded message keeps its series.
        pytest.param("GPUs exhausted on this node", ReasonCode.INSUFFICIENT_GPU, id="reworded"),
        pytest.param("", ReasonCode.PLACEMENT_GROUP, id="empty-text"),
    ],
)
def test_label_depends_on_the_code_not_the_text(failed_text, code):
    metrics = ExtenderMetrics()
    metrics.count_filtered(FilterResult((), {"n": failed_text}, {}, {"n": code}))
    assert filtered_samples(metrics.render().decode()) == {(code.value, "true"): 1.0}


def test_counts_split_by_code_and_resolvability():
    metrics = ExtenderMetrics()
    result = FilterResult(
        ("ok",),
        failed={"g1": "t", "g2": "t", "c1": "t"},
        unresolvable={"p1": "t", "p2": "t", "n1": "t"},
        codes={"g1": ReasonCode.INSUFFICIENT_GPU, "g2": ReasonCode.INSUFFICIENT_GPU,
               "c1": ReasonCode.INSUFFICIENT_CPU, "p1": ReasonCode.PLACEMENT_GROUP,
               "p2": ReasonCode.PLACEMENT_GROUP, "n1": ReasonCode.NUMA},
    )
    metrics.count_filtered(result)
    metrics.count_filtered(result)  # a second request adds to the same series
    assert filtered_samples(metrics.render().decode()) == {
        ("insufficient_gpu", "true"): 4.0,  # 2 nodes x 2 requests
        ("insufficient_cpu", "true"): 2.0,
        ("placement_group", "false"): 4.0,
        ("numa", "false"): 2.0,
    }


def test_every_code_is_a_documented_label_value():
    """Filter codes label the filtered-nodes row; the preempt verb's own code its row."""
    lines = DOCS.read_text().splitlines()
    documented = set()
    for metric in (FILTERED, "headstart_extender_preemption_nodes_total"):
        row = next(line for line in lines if line.startswith(f"| `{metric}`"))
        documented |= set(re.findall(r"`([a-z_]+)`", row)) - {metric, "reason"}
    assert documented == {code.value for code in ReasonCode}
