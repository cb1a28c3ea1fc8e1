"""filter_nodes: each rule, its reason, and whether preemption could resolve it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bucketing.resources import Resources
from locality.filter import filter_nodes
from locality.model import JobKey, Role
from locality.placement import AssumedPlacements, Assumption
from tests.locality.builders import context_for, make_pod, make_state

PS = make_pod("ps", cpu=4, job="j", role="ps")
WORKER = make_pod("w", cpu=4, gpus=1, job="j", role="worker")
WORKER_2GPU = make_pod("w2", cpu=8, gpus=2, job="j", role="worker")


def placed(pod, node):
    return replace(pod, node_name=node)


def verdicts(result):
    out = {name: ("passed", None) for name in result.passed}
    out.update({name: ("failed", reason) for name, reason in result.failed.items()})
    out.update({name: ("unresolvable", reason) for name, reason in result.unresolvable.items()})
    return out


CASES = [
    pytest.param(
        make_pod("lonely", cpu=64, gpus=8),
        [make_state("full", pods=[make_pod("x", cpu=96, gpus=8, node="full")])],
        [],
        {"full": ("passed", None)},
        id="no-job-passes-even-a-full-node",
    ),
    pytest.param(
        WORKER,
        [
            make_state("gpu-full", pods=[make_pod("x", cpu=1, gpus=8, node="gpu-full")]),
            make_state("cpu-full", pods=[make_pod("y", cpu=93, node="cpu-full")]),
            make_state("mem-full", memory_gib=16, pods=[make_pod("z", memory_gib=15.5)]),
            make_state("roomy"),
        ],
        [],
        {
            # 8 GPUs allocatable - 8 requested = 0 free
            "gpu-full": ("failed", "insufficient GPU (pod requests 1)"),
            # 96 - 93 = 3 CPUs free < 4
            "cpu-full": ("failed", "insufficient CPU (pod requests 4)"),
            # 16 GiB - 15.5 = 0.5 GiB free < 1 GiB
            "mem-full": ("failed", "insufficient memory (pod requests 1Gi)"),
            "roomy": ("passed", None),
        },
        id="resource-fit-each-dimension-resolvable",
    ),
    pytest.param(
        WORKER,
        [make_state("held", pods=[make_pod("ph", cpu=90, gpus=8, placeholder=True)])],
        [],
        {"held": ("passed", None)},
        id="placeholder-capacity-counts-as-free",
    ),
    pytest.param(
        PS,
        [make_state("a", group="pg-a"), make_state("b", group="pg-b"), make_state("none")],
        [placed(WORKER, "a")],
        {"a": ("passed", None), "b": ("passed", None), "none": ("passed", None)},
        id="preferred-group-never-filters",
    ),
    pytest.param(
        replace(PS, annotations={"headstart.io/placement-group": "required"}),
        [
            make_state("a", group="pg-a"),
            make_state("b", group="pg-b"),
            make_state("none"),
            make_state("b-full", group="pg-b", pods=[make_pod("x", cpu=96, gpus=8)]),
        ],
        [placed(WORKER, "a")],
        {
            "a": ("passed", None),
            "b": ("unresolvable",
                  "job ns/j is in placement group pg-a (policy required); "
                  "node is in placement group pg-b"),
            "none": ("unresolvable",
                     "job ns/j is in placement group pg-a (policy required); "
                     "node is in no placement group"),
            # outside the group AND full: the hard exclusion wins over the resolvable one
            "b-full": ("unresolvable",
                       "job ns/j is in placement group pg-a (policy required); "
                       "node is in placement group pg-b"),
        },
        id="required-group-excludes-other-groups",
    ),
    pytest.param(
        replace(WORKER, annotations={"headstart.io/placement-group": "required"}),
        # pg-small: one 8-GPU node; pg-big: two. The job: this worker + 9 pending
        # 1-GPU workers = 10 GPUs, so only pg-big (16 GPUs) holds it.
        [
            make_state("small-1", group="pg-small"),
            make_state("big-1", group="pg-big"),
            make_state("big-2", group="pg-big"),
            make_state("loose"),
        ],
        [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(9)],
        {
            "small-1": ("unresolvable",
                        "placement group pg-small can hold 8 of the job's 10 remaining pods "
                        "(policy required)"),
            "big-1": ("passed", None),
            "big-2": ("passed", None),
            "loose": ("unresolvable",
                      "node has no placement-group label (placement-group policy required)"),
        },
        id="required-first-pod-needs-a-group-that-holds-the-job",
    ),
    pytest.param(
        replace(WORKER, annotations={"headstart.io/placement-group": "required"}),
        # 8 pending pods of 1 GPU + this one = 9 > 8, but the placeholder holding
        # all 8 GPUs of small-2 is preemptible, so pg-small holds 16.
        [
            make_state("small-1", group="pg-small"),
            make_state("small-2", group="pg-small",
                       pods=[make_pod("ph", cpu=90, gpus=8, placeholder=True)]),
        ],
        [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(8)],
        {"small-1": ("passed", None), "small-2": ("passed", None)},
        id="required-group-capacity-includes-placeholders",
    ),
    pytest.param(
        replace(WORKER, annotations={"headstart.io/placement-group": "required",
                                     "headstart.io/packing": "spread"}),
        # spread + required: 4 one-GPU pods, one node. Spread is a preference, so the
        # required filter asks for capacity (8 GPUs), not for a node per pod.
        [make_state("only", group="pg-a")],
        [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(3)],
        {"only": ("passed", None)},
        id="required-spread-needs-capacity-not-a-node-per-pod",
    ),
    pytest.param(
        replace(WORKER_2GPU, annotations={"headstart.io/numa": "required"},
                pinned_cpu_milli=8000),
        # best-effort nodes admit everything: only the policy required excludes them.
        [
            make_state("split", zones=[(1, 32), (1, 32)], policy="best-effort"),
            make_state("few-cpus", zones=[(2, 4), (0, 40)], policy="best-effort"),
            make_state("fits", zones=[(0, 40), (2, 16)], policy="best-effort"),
            make_state("no-nrt"),
        ],
        [],
        {
            "split": ("unresolvable",
                      "no NUMA zone holds 2 GPU and 8 pinned CPU together (policy required)"),
            "few-cpus": ("unresolvable",
                         "no NUMA zone holds 2 GPU and 8 pinned CPU together "
                         "(policy required)"),
            "fits": ("passed", None),
            "no-nrt": ("passed", None),
        },
        id="numa-required-needs-one-zone-for-gpus-and-pinned-cpus",
    ),
    pytest.param(
        # Burstable (no pinned CPUs): kubelet aligns only the GPUs, so a zone with the 2
        # GPUs and 4 CPUs is enough.
        replace(WORKER_2GPU, annotations={"headstart.io/numa": "required"}),
        [
            make_state("split", zones=[(1, 32), (1, 32)], policy="best-effort"),
            make_state("few-cpus", zones=[(2, 4), (0, 40)], policy="best-effort"),
        ],
        [],
        {
            "split": ("unresolvable", "no NUMA zone holds 2 GPU (policy required)"),
            "few-cpus": ("passed", None),
        },
        id="numa-required-burstable-needs-one-zone-for-gpus-only",
    ),
    pytest.param(
        WORKER_2GPU,
        [make_state("split", zones=[(1, 32), (1, 32)], policy="best-effort")],
        [],
        {"split": ("passed", None)},
        id="numa-preferred-does-not-filter",
    ),
    pytest.param(
        # Whatever the job prefers, kubelet's single-numa-node and restricted policies
        # refuse a pod no zone holds (TopologyAffinityError): no node for it there. The
        # restricted node's GPUs could each hold 2 (capacity 4 per zone), so its
        # preferred hint is one zone wide, and no zone has 2 free.
        WORKER_2GPU,
        [make_state("single", zones=[(1, 32), (1, 32)]),
         make_state("restricted", zones=[(1, 32, 4, 48), (1, 32, 4, 48)],
                    policy="restricted"),
         make_state("none", zones=[(1, 32), (1, 32)], policy="none"),
         make_state("fits", zones=[(1, 32), (2, 32)])],
        [],
        {"single": ("unresolvable", "no NUMA zone holds 2 GPU (topology manager "
                                    "single-numa-node, pod scope, would reject the pod)"),
         "restricted": ("unresolvable", "no preferred NUMA placement for 2 GPU (topology "
                                        "manager restricted, pod scope, would reject the pod)"),
         "none": ("passed", None),
         "fits": ("passed", None)},
        id="numa-preferred-still-avoids-nodes-kubelet-would-reject",
    ),
    pytest.param(
        # policy none: kubelet aligns nothing, so `required` cannot be met there.
        replace(WORKER_2GPU, annotations={"headstart.io/numa": "required"}),
        [make_state("none", zones=[(2, 32), (2, 32)], policy="none")],
        [],
        {"none": ("unresolvable",
                  "topology manager policy none does not align 2 GPU (policy required)")},
        id="numa-required-needs-an-aligning-policy",
    ),
    pytest.param(
        # A MIG slice fits only nodes advertising that profile; whole GPUs do not count.
        make_pod("mig", cpu=2, job="j", role="worker",
                 devices=[("nvidia.com/mig-1g.5gb", 1)]),
        [make_state("mig-node", gpus=0, devices=[("nvidia.com/mig-1g.5gb", 7)]),
         make_state("whole-gpus", devices=[("nvidia.com/gpu", 8)]),
         make_state("other-profile", gpus=0, devices=[("nvidia.com/mig-3g.20gb", 2)])],
        [],
        {"mig-node": ("passed", None),
         "whole-gpus": ("failed", "insufficient nvidia.com/mig-1g.5gb (pod requests 1)"),
         "other-profile": ("failed", "insufficient nvidia.com/mig-1g.5gb (pod requests 1)")},
        id="mig-slices-are-their-own-kind",
    ),
    pytest.param(
        # An AMD GPU pod: the NVIDIA node has 8 GPUs, but none of its kind.
        make_pod("amd", cpu=2, gpus=1, job="j", role="worker", devices=[("amd.com/gpu", 1)]),
        [make_state("nvidia", devices=[("nvidia.com/gpu", 8)]),
         make_state("amd", devices=[("amd.com/gpu", 8)])],
        [],
        {"nvidia": ("failed", "insufficient amd.com/gpu (pod requests 1)"),
         "amd": ("passed", None)},
        id="gpu-vendors-are-kinds",
    ),
    pytest.param(
        replace(PS, annotations={"headstart.io/numa": "required"}),
        [make_state("no-gpus-in-zones", zones=[(0, 1), (0, 1)])],
        [],
        {"no-gpus-in-zones": ("passed", None)},
        id="numa-rule-only-for-gpu-pods",
    ),
]


@pytest.mark.parametrize(("pod", "states", "job_pods", "expected"), CASES)
def test_filter_rules(pod, states, job_pods, expected):
    context = context_for(pod, states, job_pods)
    assert verdicts(filter_nodes(context, states)) == expected


def test_assumed_placements_take_capacity_before_the_cache_sees_them():
    # Another job's pod was steered to "a" and took its 8 GPUs; the cache has not seen
    # the binding. 8 allocatable - 0 bound - 8 assumed = 0 free.
    state = make_state("a")
    other = Assumption(JobKey("ns", "other"), "u-other", "o", Role.WORKER, "a",
                       Resources.of(8, 8, 8), expires_at=30.0)
    assumed = AssumedPlacements().assume(other)
    context = context_for(WORKER, [state], assumed=assumed, now=10.0)
    assert filter_nodes(context, [state]).failed == {"a": "insufficient GPU (pod requests 1)"}
    # After expiry the assumption no longer counts.
    context = context_for(WORKER, [state], assumed=assumed, now=30.0)
    assert filter_nodes(context, [state]).passed == ("a",)


def test_passed_keeps_input_order():
    states = [make_state(name) for name in ("c", "a", "b")]
    assert filter_nodes(context_for(WORKER, states), states).passed == ("c", "a", "b")


@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
def test_a_pod_scheduled_again_does_not_compete_with_its_own_stale_assumption(columnar):
    # The worker was steered to "only" (1 GPU allocatable) and its bind failed, so it is
    # scheduled again within the 30 s expiry. Its own assumption must not count:
    # 1 GPU free - 1 assumed (itself) = 0 < 1 would reject the one node it fits.
    from locality.columns import NodeTable
    from locality.filter import filter_table

    state = make_state("only", gpus=1)
    assumed = AssumedPlacements().assume(
        Assumption(JobKey("ns", "j"), WORKER.uid, WORKER.name, Role.WORKER, "only",
                   WORKER.request, expires_at=30.0)
    )
    context = context_for(WORKER, [state], job_pods=[WORKER], assumed=assumed, now=5.0)
    if columnar:
        result = filter_table(context, NodeTable([state]), ["only"])
    else:
        result = filter_nodes(context, [state])
    assert (result.passed, result.failed) == (("only",), {})


@pytest.mark.parametrize(
    "closed",
    [
        pytest.param({"unschedulable": True}, id="cordoned"),
        pytest.param({"ready": False}, id="not-ready"),
        pytest.param({"blocking_taints": ("ToBeDeletedByClusterAutoscaler",)},
                     id="scaled-down-by-cluster-autoscaler"),
    ],
)
@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
def test_nodes_that_take_no_new_pods_do_not_make_a_group_big_enough(closed, columnar):
    # The job: this worker + 9 pending one-GPU workers = 10 GPUs. pg-a has 2 empty 8-GPU
    # nodes but a-2 takes no new pods (and looks idle), so pg-a holds 8 < 10; pg-b holds 16.
    # Counting a-2 would put the first pod in pg-a and strand 2 workers.
    from locality.columns import NodeTable
    from locality.filter import filter_table
    from locality.score import score_table, score_totals

    a2 = make_state("a-2", group="pg-a")
    states = [make_state("a-1", group="pg-a"), a2.with_node(replace(a2.node, **closed)),
              make_state("b-1", group="pg-b"), make_state("b-2", group="pg-b")]
    pending = [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(9)]
    pod = replace(WORKER, annotations={"headstart.io/placement-group": "required"})
    cluster = NodeTable(states) if columnar else {s.name: s for s in states}
    context = context_for(pod, cluster, pending)
    names = [s.name for s in states]
    result = (filter_table(context, cluster, names) if columnar
              else filter_nodes(context, states))
    assert result.passed == ("b-1", "b-2")
    assert result.unresolvable["a-1"] == (
        "placement group pg-a can hold 8 of the job's 10 remaining pods (policy required)")
    # Under `preferred` the group term (3) goes to pg-b only: a-1 scores idle 3 + 0.
    context = context_for(WORKER, cluster, pending)
    totals = (score_table(context, cluster, names) if columnar
              else [total for _, total in score_totals(context, states)])
    assert dict(zip(names, totals, strict=True))["a-1"] == 3
    assert dict(zip(names, totals, strict=True))["b-1"] == 6


# ---- NUMA zones charged with assumed GPU pods -----------------------------------------

NUMA_NODE = "n"  # 8 GPUs, 96 CPUs: two NUMA zones of 4 GPUs and 48 CPUs each
NO_ZONE_4 = "no NUMA zone holds 4 GPU and 8 pinned CPU together (policy required)"
NO_ZONE_2 = "no NUMA zone holds 2 GPU and 4 pinned CPU together (policy required)"


def gpu_pod(name, gpus, cpu, numa="required", pinned=True):
    """Pinned by default: Guaranteed, whole CPUs, so kubelet puts its CPUs in its zone."""
    return make_pod(name, cpu=cpu, gpus=gpus, job="j", role="worker", numa=numa,
                    pinned=pinned)


def steered(*pods_and_times, node=NUMA_NODE):
    """Assumptions, oldest first, as prioritize records them (ttl 30 s)."""
    assumed = AssumedPlacements()
    for pod, at in pods_and_times:
        assumed = assumed.assume(
            Assumption(JobKey("ns", "j"), pod.uid, pod.name, Role.WORKER, node, pod.request,
                       expires_at=at + 30.0, numa=pod.numa_request))
    return assumed


FOUR = [gpu_pod(f"four-{i}", 4, 8) for i in range(3)]
THREE = [gpu_pod(f"three-{i}", 3, 8) for i in range(2)]
TWO = gpu_pod("two", 2, 4)


@pytest.mark.parametrize(
    ("pod", "assumed", "now", "zones_after", "verdict"),
    [
        # Charged zones are (free GPUs, free CPUs) per zone after the assumed pods; the
        # verdict is the pod's on node n.
        pytest.param(FOUR[1], steered((FOUR[0], 0.0)), 1.0,
                     [(0, 40), (4, 48)], ("passed", None),
                     id="second-4gpu-pod-fits-the-other-zone"),
        # Both zones taken: 8 - 8 = 0 GPUs left; the zone rule fails first (unresolvable).
        pytest.param(FOUR[2], steered((FOUR[0], 0.0), (FOUR[1], 0.5)), 1.0,
                     [(0, 40), (0, 40)], ("unresolvable", NO_ZONE_4),
                     id="third-4gpu-pod-fits-no-zone"),
        # 3 + 3 GPUs assumed leave 1 per zone: the node has 8 - 6 = 2 GPUs free, so only
        # the zone charge (not the node total) tells that 2 GPUs cannot stay on one zone.
        pytest.param(TWO, steered((THREE[0], 0.0), (THREE[1], 0.0)), 1.0,
                     [(1, 40), (1, 40)], ("unresolvable", NO_ZONE_2),
                     id="node-total-fits-but-no-single-zone-does"),
        # Steered at 0 s, ttl 30 s: at 30 s both assumptions are gone and the zones free.
        pytest.param(TWO, steered((THREE[0], 0.0), (THREE[1], 0.0)), 30.0,
                     [(4, 48), (4, 48)], ("passed", None),
                     id="expired-assumptions-free-the-zones"),
        # Scheduled again after a failed bind: its own stale assumption takes nothing.
        pytest.param(FOUR[1], steered((FOUR[0], 0.0), (FOUR[1], 0.5)), 1.0,
                     [(0, 40), (4, 48)], ("passed", None),
                     id="own-stale-assumption-not-charged"),
        pytest.param(FOUR[2], steered((FOUR[0], 0.0), (FOUR[1], 0.5), node="elsewhere"), 1.0,
                     [(4, 48), (4, 48)], ("passed", None),
                     id="assumptions-on-another-node-not-charged"),
        # CPUs count too: 1 GPU + 44 CPUs takes zone 0 down to 3 GPUs and 4 CPUs, so a
        # 3-GPU, 8-CPU pod fits only zone 1.
        pytest.param(THREE[0], steered((gpu_pod("cpu-heavy", 1, 44), 0.0)), 1.0,
                     [(3, 4), (4, 48)], ("passed", None),
                     id="cpu-charge-moves-the-next-pod-to-zone-1"),
        pytest.param(THREE[0], steered((gpu_pod("cpu-heavy", 1, 44), 0.0),
                                       (gpu_pod("cpu-heavy-2", 1, 44), 0.0)), 1.0,
                     [(3, 4), (3, 4)], ("unresolvable",
                                        "no NUMA zone holds 3 GPU and 8 pinned CPU together "
                                        "(policy required)"),
                     id="cpu-charges-leave-no-zone"),
        # Burstable pods get no pinned CPUs (kubelet's CPU manager gives no hint for them;
        # NFD does not count their CPUs): the same two 1-GPU, 44-CPU pods both take zone 0
        # (4 - 1 - 1 = 2 GPUs, CPUs untouched), and a 3-GPU Burstable pod fits zone 1.
        pytest.param(gpu_pod("three-burstable", 3, 8, pinned=False),
                     steered((gpu_pod("cpu-heavy", 1, 44, pinned=False), 0.0),
                             (gpu_pod("cpu-heavy-2", 1, 44, pinned=False), 0.0)), 1.0,
                     [(2, 48), (4, 48)], ("passed", None),
                     id="burstable-pods-charge-and-need-gpus-only"),
        # A CPU-only Guaranteed PS pins 44 CPUs in zone 0 (the lowest zone with them):
        # 48 - 44 = 4 CPUs left there, so the pinned 3-GPU, 8-CPU pod fits zone 1 only.
        pytest.param(THREE[0], steered((make_pod("ps", cpu=44, job="j", role="ps",
                                                 pinned=True), 0.0)), 1.0,
                     [(4, 4), (4, 48)], ("passed", None), id="pinned-cpu-only-pod-charged"),
        pytest.param(THREE[0], steered((make_pod("ps", cpu=44, job="j", role="ps"), 0.0)),
                     1.0, [(4, 48), (4, 48)], ("passed", None),
                     id="burstable-cpu-only-pod-not-charged"),
        # A Burstable 1-GPU pod takes zone 0 (GPUs alone decide), so the pinned 3-GPU pod
        # still finds 3 GPUs there: 4 - 1 = 3.
        pytest.param(THREE[0], steered((gpu_pod("gpu-only", 1, 47, pinned=False), 0.0)), 1.0,
                     [(3, 48), (4, 48)], ("passed", None),
                     id="burstable-pod-takes-no-zone-cpus"),
    ],
)
@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
def test_assumed_gpu_pods_take_their_numa_zone(pod, assumed, now, zones_after, verdict,
                                               columnar):
    from locality.columns import NodeTable
    from locality.filter import filter_table
    from locality.score import score_columns, score_nodes

    # best-effort: the zones charged as kubelet would, and only `required` filters.
    state = make_state(NUMA_NODE, zones=[(4, 48), (4, 48)], policy="best-effort")
    cluster = NodeTable([state]) if columnar else {state.name: state}
    context = context_for(pod, cluster, job_pods=[pod], assumed=assumed, now=now)
    zones = context.numa_topology(state).zones
    assert [(z.gpu_free_milli // 1000, z.cpu_free_milli // 1000) for z in zones] == zones_after
    if columnar:
        result = filter_table(context, cluster, [NUMA_NODE])
        numa_term = int(score_columns(context, cluster)[2][0])
    else:
        result = filter_nodes(context, [state])
        numa_term = score_nodes(context, [state])[NUMA_NODE].numa
    assert verdicts(result)[NUMA_NODE] == verdict
    # Under `preferred` the same zones decide the score's NUMA term (1 fits, 0 not).
    preferred = replace(pod, annotations={"headstart.io/numa": "preferred"})
    context = context_for(preferred, cluster, job_pods=[preferred], assumed=assumed, now=now)
    if columnar:
        preferred_term = int(score_columns(context, cluster)[2][0])
    else:
        preferred_term = score_nodes(context, [state])[NUMA_NODE].numa
    assert preferred_term == numa_term == (1 if verdict[0] == "passed" else 0)


@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
@pytest.mark.parametrize("placeholders", [True, False], ids=["placeholders", "real-pods"])
def test_numa_failure_is_unresolvable_even_where_placeholders_sit(placeholders, columnar):
    """A 4-GPU pod fills the node's one zone and NFD counts its GPUs: the zone shows 0
    free. Even when it is a placeholder a real pod could preempt, kube-scheduler's
    preemption dry run re-runs only its filter plugins (which this node passed), so it
    would find no victim here: the failure is unresolvable either way."""
    from locality.columns import NodeTable
    from locality.filter import filter_table

    holder = make_pod("holder", cpu=40, gpus=4, node="one", placeholder=placeholders)
    state = make_state("one", gpus=4, cpu=48, pods=[holder], zones=[(0, 8)],
                       policy="best-effort")
    pod = gpu_pod("w", 2, 4, pinned=False)
    table = NodeTable([state])
    context = context_for(pod, table if columnar else [state], job_pods=[pod])
    result = filter_table(context, table, ["one"]) if columnar else filter_nodes(context, [state])
    assert verdicts(result)["one"] == ("unresolvable",
                                       "no NUMA zone holds 2 GPU (policy required)")
