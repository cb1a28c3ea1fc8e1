"""Known demand of pods held by scheduling gates.

A pod with `spec.schedulingGates` exists but is not scheduled until its last gate is
lifted (kube-scheduler reports it `PodScheduled=False`, reason `SchedulingGated`).
cluster-autoscaler and Karpenter scale up only for pods marked `Unschedulable`
(CA's `isUnschedulable` in utils/kubernetes/listers.go, Karpenter's provisionable-pod
check), so no node is on its way for a gated pod: it is not observed demand
(`predictor.history.snapshot` leaves it out of the bucket counts, and so out of `in_use`, which
the plan subtracts), but demand known ahead, due as soon as its gates are lifted. This
source counts it, one item per pod, expected now.

Left to the kueue source: pods held by Kueue's own gates, `kueue.x-k8s.io/admission`
(plain pods queued in Kueue; kubernetes-sigs/kueue pkg/controller/jobs/pod/constants
`SchedulingGateName`) and `kueue.x-k8s.io/elastic-job` (pods of an elastic job's new
slice; apis/kueue/v1beta2 `ElasticJobSchedulingGate`). Kueue lifts those when their
Workload is admitted, maybe hours later; the Workload says when (and is not read at all
while the kueue source is stale or off). Pods held only by other gates (headstart's own
`headstart.io/placement`, Kueue's topology gate `kueue.x-k8s.io/topology` set on pods of
an admitted Workload, any other controller's) are counted here.

Key: the pod's own (`/Pod/namespace/name`): no other source describes pods that exist,
and a pod that exists when counted is not work announced ahead of its pods (rule 4 of
`predictor.known.combine`), so gated items are never remembered as announced.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Iterable

from predictor.known.model import KnownItem, workload_key
from predictor.known.pods import LivePod

KUEUE_GATES = frozenset({"kueue.x-k8s.io/admission", "kueue.x-k8s.io/elastic-job"})


def gated_items(pods: Iterable[LivePod], now_s: float) -> list[KnownItem]:
    """One item per pending pod held by scheduling gates that are not Kueue's."""
    items = []
    for pod in pods:
        demand = pod.demand
        if demand is None or not demand.gates or KUEUE_GATES & set(demand.gates):
            continue
        namespace, _, name = demand.key.partition("/")
        items.append(KnownItem(
            "gated", "Pod", namespace, name, workload_key("", "Pod", namespace, name), 1,
            demand.request, now_s,
            f"held by scheduling gates {', '.join(demand.gates)}: no node is launched for "
            "it until they are lifted",
        ))
    return items
