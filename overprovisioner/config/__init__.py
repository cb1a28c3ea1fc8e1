"""The overprovisioner service's configuration: what it may spend, where it writes, how it runs.

Decides: every setting of `headstart overprovisioner`, its default and its meaning, as
one frozen dataclass per YAML section (the docstring under each field is its
documentation), and the placeholder backends a config may name.

Must not: parse or validate YAML (`config.parse`), read files (`config.load`), look
at the catalog (`config.catalog`), talk to the cluster, read the clock, or log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from bucketing.resources import Resources
from kube.labels import PLACEMENT_GROUP_LABEL
from predictor.known.config import KnownDemandConfig
from predictor.models.registry import DEFAULT_MODEL

BACKENDS = ("auto", "deployment", "capacitybuffer")
# Node label keys a placeholder can select a capacity type with (objects.py writes the
# values each expects; predictor.history.pinning reads the same keys from pods).
CAPACITY_TYPE_LABELS = ("eks.amazonaws.com/capacityType", "karpenter.sh/capacity-type",
                        "cloud.google.com/gke-spot")


@dataclass(frozen=True)
class Toleration:
    """A pod toleration put on GPU placeholders so they can land on tainted GPU nodes."""

    key: str
    """Taint key, e.g. `nvidia.com/gpu`."""
    operator: str = "Exists"
    """`Exists` (any value) or `Equal` (then `value` must match)."""
    value: str = ""
    """Taint value for `operator: Equal`."""
    effect: str = ""
    """`NoSchedule`, `PreferNoSchedule`, `NoExecute`, or "" for every effect."""

    def as_json(self) -> dict[str, str]:
        body = {"key": self.key, "operator": self.operator}
        if self.value:
            body["value"] = self.value
        if self.effect:
            body["effect"] = self.effect
        return body


@dataclass(frozen=True)
class BucketLimits:
    """Bounds on the placeholder count of one bucket (instance type), over all its groups."""

    min: int = 0
    """Placeholders kept even when the forecast says none (warm nodes you always pay for)."""
    max: int = 8
    """Placeholders never exceeded whatever the forecast says."""


@dataclass(frozen=True)
class ForecastConfig:
    """How demand is recorded and forecast."""

    quantile: float = 0.9
    """Placeholders cover this quantile of the most demand over the horizon: at 0.9,
    demand stays under them through the whole start-up time from 9 origins in 10. 0.9
    because it was the cheapest against the best peer headroom (static, proportional,
    scheduled) in `headstart simulate` when it was chosen (docs/research/simulator.md);
    this build's figures per quantile are in docs/simulator.md. Raise it to wait less;
    `headstart simulate` on your trace says which quantile costs least against the
    peers for the cut it buys."""
    model: str = DEFAULT_MODEL
    """Forecaster name from `predictor.models.registry` (`last_adaptive`, `last`, `conditional`,
    `seasonal`, `hw`, `transformer`). The default, last value with quantiles from the
    last day's errors, keeps the asked quantile's shortfall rate closest to target in
    `headstart backtest` on the public traces (docs/predictor.md), and in the simulator
    it cost the least against the best peer of the models tried (docs/research/
    simulator.md); pick yours with `headstart simulate --models ...`, whose verdict names
    the model and quantile (`headstart backtest` ranks models by forecast error)."""
    model_path: str = ""
    """A persisted model to load at start-up and save after each retrain; "" = none."""
    retrain_every_s: float = 86400.0
    """Seconds between refits on the recorded history (YAML: `retrain_every: 24h`)."""
    history_path: str = "headstart-history.sqlite"
    """SQLite file the recorder writes one demand snapshot per tick into; a relative path
    is relative to the working directory, and the directory must exist (the file is
    created). The default works wherever `headstart overprovisioner --dry-run` is run by
    any user; the manifests set `/var/lib/headstart/history.sqlite`, their volume."""
    retention_s: float = 35 * 86400.0
    """Recorded history older than this is deleted (YAML: `retention: 35d`)."""
    cold_start_placeholders: int = 1
    """Placeholders per instance type while the history is shorter than the model needs
    (the cold-start ladder; still within the per-bucket min/max and the cost cap)."""
    stabilize_rho: float = 1.0
    """Stabilization: a change of at least this many nodes starts a new level."""
    stabilize_tau_s: float = 0.0
    """A forecast level lasting shorter than this is replaced by the larger neighbour, so
    CA is not asked to scale up and down for a blip (YAML `stabilize_tau: 10m`; 0 = off).
    Off by default: in the simulator a 10-minute tau kept placeholders up through the
    gaps between arrivals and raised predictive's cost against the best peer, with more
    node launches (docs/research/simulator.md)."""
    fallback: bool = False
    """Whether the reactive fallback runs at all (the three settings below). Off by
    default: switched on, it cost more against the best peer in the simulator
    (docs/research/simulator.md): demand that outruns the forecast is what placeholders
    are for, and planning for the demand seen now removes them."""
    fallback_window_ticks: int = 6
    """Reactive fallback: ticks of forecast shortfall averaged per bucket."""
    fallback_enter_mean_shortfall: float = 1.0
    """A bucket turns reactive (no placeholders) when its mean shortfall exceeds this."""
    fallback_exit_mean_shortfall: float = 0.25
    """...and follows the forecast again once it is at or below this."""
    prometheus_url: str = ""
    """Prometheus with kube-state-metrics (e.g. `http://prometheus-server.monitoring.svc`):
    when set and the history file is empty at start-up, the last `backfill` of demand is
    read from it (`predictor.live.prometheus`), so a new install forecasts from day one.
    "" = no backfill (the cold-start ladder runs until enough ticks are recorded)."""
    backfill_s: float = 7 * 86400.0
    """How much history to read from Prometheus at start-up (YAML: `backfill: 7d`)."""


@dataclass(frozen=True)
class WorkerPlansConfig:
    """KALE's worker estimator for elastic jobs that name a sample-rate query
    (`overprovisioner.planner.worker_plan`; docs/predictor.md "A job's worker count")."""

    enabled: bool = True
    """Plan jobs that ask for it (they also need `forecast.prometheus_url`). Off: no
    query is run, no plan written, and the extender sizes elastic jobs by KOD2 alone."""
    quantile: float = 0.9
    """The forecast quantile of the sample rate a plan keeps up with."""
    history_s: float = 86400.0
    """How much of the sample rate's history (from Prometheus, at the tick) the
    forecaster reads (YAML: `history: 1d`)."""
    stabilize_rho: float = 1.0
    """A change of fewer than this many workers is not made."""
    stabilize_tau_s: float = 600.0
    """A lower size is taken only after it held this long (YAML: `stabilize_tau: 10m`),
    so a dip in the rate does not scale a job in and straight out again."""
    valid_for_s: float = 900.0
    """How long a written plan steers its job without being renewed (YAML:
    `valid_for: 15m`): a stopped overprovisioner never keeps steering jobs."""
    configmap: str = "headstart-worker-plans"
    """The ConfigMap in `placeholders.namespace` the plans are written to (the
    extender's `admission.elastic.worker_plans` reads the same one)."""
    warm_start_k: int = 5
    """DLRover-RM's warm start: how many of the most similar finished jobs it reads
    (YAML: `warm_start: {k, alpha, min_similarity}`)."""
    warm_start_alpha: float = 0.5
    """Exponential smoothing over them, least to most similar (the most similar weighs
    most)."""
    warm_start_min_similarity: float = 0.5
    """A finished job less alike than this (in [0, 1]) is not read."""


@dataclass(frozen=True)
class LimitsConfig:
    """What placeholders may cost."""

    default: BucketLimits = field(default_factory=BucketLimits)
    """Limits for a bucket not listed in `per_bucket`."""
    per_bucket: Mapping[str, BucketLimits] = field(default_factory=dict)
    """Limits by instance type name, overriding `default`."""
    cost_cap_per_hour: float | None = 25.0
    """Dollars per hour all placeholders together may cost (catalog prices); null = no cap."""
    placement_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per instance type, the placement groups its node groups span (node label values of
    `placeholders.placement_group_label`); a type absent here has no groups."""
    virtual_instance_nodes: int = 1
    """Nodes in one scale-up of one virtual instance, kept inside one placement group."""

    def for_bucket(self, instance_type: str) -> BucketLimits:
        return self.per_bucket.get(instance_type, self.default)


@dataclass(frozen=True)
class PlaceholderConfig:
    """What the placeholder objects look like in the cluster."""

    namespace: str = "headstart"
    """Namespace of the placeholder Deployments / CapacityBuffers / PodTemplates."""
    backend: str = "auto"
    """`deployment` (balloon Deployments), `capacitybuffer` (autoscaling.x-k8s.io
    v1beta1, else v1alpha1, whichever the cluster serves), or `auto`: CapacityBuffers
    when the cluster serves that API, Deployments otherwise."""
    priority_class_name: str = "headstart-placeholder"
    """PriorityClass of placeholder pods (created if absent, verified if present)."""
    priority_class_value: int = -5
    """Its value: at or above `expendable_pods_priority_cutoff`, below 0."""
    expendable_pods_priority_cutoff: int = -10
    """cluster-autoscaler's `--expendable-pods-priority-cutoff` in your cluster."""
    daemonset_overhead: Resources | None = None
    """Requests of the daemonsets on every node, subtracted from a type's allocatable to
    size a placeholder; null = the catalog's `daemonset_overhead`."""
    placement_group_label: str = PLACEMENT_GROUP_LABEL
    """Node label key a placeholder selects its placement group with (GKE compact
    placement: `cloud.google.com/gke-placement-group`)."""
    gpu_tolerations: tuple[Toleration, ...] = (Toleration("nvidia.com/gpu", "Exists"),)
    """Tolerations put on placeholders of GPU instance types."""
    pause_image: str = "registry.k8s.io/pause:3.10"
    """Container image of a placeholder pod, pinned by tag or digest."""
    request_gpus: bool = True
    """Whether a placeholder of a GPU type requests the node's GPUs (requests and limits).
    Set false when a GPU node group's kubelet runs the Topology Manager with policy
    `single-numa-node` and its GPUs span several NUMA nodes (p4d, p5: 8 GPUs over 2):
    kubelet's device manager then has no single-NUMA hint for an all-GPU request and
    rejects the placeholder at admission (TopologyAffinityError), and its ReplicaSet
    re-creates it on the same node over and over. With false the placeholder asks for no
    GPUs, keeps its CPU and memory request (so a real pod must still preempt it, and
    cluster-autoscaler still launches a node of the type for it through the nodeSelector)
    and its GPU tolerations (the node still has the taint)."""
    scheduler_name: str = "headstart-scheduler"
    """`schedulerName` of placeholder pods: the scheduler of the pods meant to take their
    capacity. A placeholder is preempted by that scheduler, which then binds the real pod
    to the freed node; a placeholder of another scheduler (the default one) is re-created
    by its ReplicaSet and can be put back on that node before the real pod is bound, over
    and over (kubernetes/kubernetes#130429). "" = the cluster's default scheduler. If your
    training pods use several schedulers, run one overprovisioner (one namespace) per
    scheduler, each with its own bucket list."""
    size_from_nodes: bool = True
    """Size a placeholder from the live nodes of its type when one is Ready (as
    cluster-autoscaler builds its node template from a real node of the group): their
    allocatable less the DaemonSet and static pods running there, so the placeholder fits
    what kubelet really reports. false = always the fraction rule below."""
    gpu_type_fraction: float = 0.8
    """With no live node of a GPU type to measure: the fraction of the catalog's CPU and
    memory (allocatable less `daemonset_overhead`) a placeholder requests beside all the
    node's GPUs. The GPUs and the GPU taint claim the node; CPU and memory only need to
    exceed half of it (so two placeholders never share a node, even with `request_gpus`
    false) while fitting under what kubelet really reports: kernel memory takes 3-7% of
    the nominal size, and GPU nodes run more DaemonSets than the catalog's overhead
    (device plugin, DCGM exporter, feature discovery: about 0.5 CPU and 1-2 GiB, 10-15%
    of the smallest 4-vCPU, 16 GiB GPU types). 0.8 leaves 20% for both."""
    cpu_type_fraction: float = 0.9
    """With no live node of a GPU-less type to measure: the fraction of the catalog's CPU
    and memory (allocatable less `daemonset_overhead`) a placeholder requests. Nothing
    keeps other pods off a CPU node, so the placeholder must claim most of it: above half
    no second placeholder fits, and 10% left over takes no pod asking for more than a
    tenth of the node, while still fitting under kubelet's real allocatable (kernel
    memory 3-7% below nominal; CPU types run few DaemonSets beyond the catalog's)."""
    wake_debounce_s: float = 5.0
    """Seconds the loop waits after seeing a placeholder pod preempted (its
    DisruptionTarget condition, reason PreemptionByScheduler) before it re-plans at once
    instead of at the next tick, so the plan counts the node the real pod took; further
    preemptions within the wait join the same re-plan (a job's pods preempt several at
    once). 0 = no watch: re-plan at the next tick only (YAML: `wake_debounce: 5s`).
    In the simulator (docs/simulator.md, research log) 1 s, 5 s and 30 s cost the same
    against the peer headrooms; no watch left slightly less reduction for the price."""
    expire_after_s: float = 900.0
    """How long a placeholder object's replica count stays valid without a successful
    tick (YAML: `expire_after: 15m`). Every write stamps `headstart.io/valid-until` =
    now + this on headstart's Deployments and CapacityBuffers; once it has passed and no
    tick renewed the object, the leader (its ticks failing), or any replica when the
    Lease is held by nobody, scales it down to the floor: the type's `limits` min
    (overprovisioner.service.expiry, docs/overprovisioner.md "When the overprovisioner cannot
    write"). Must exceed `tick`: 15m is three 5-minute ticks, so one or two failed ticks
    change nothing and a third shrinks the headroom nobody is renewing."""
    capacity_type_label: str = "auto"
    """Node label key a placeholder pinned to a capacity type selects it with (docs/
    overprovisioner.md "Zone and capacity type"): the key your autoscaler knows the node
    groups by. `eks.amazonaws.com/capacityType` (EKS managed node groups, which
    cluster-autoscaler reads: `ON_DEMAND`, `SPOT`, `CAPACITY_BLOCK`),
    `karpenter.sh/capacity-type` (Karpenter and EKS Auto Mode: `on-demand`, `spot`,
    `reserved`), `cloud.google.com/gke-spot` (GKE: `"true"` on Spot nodes and absent on
    the others, so an on-demand placeholder requires `NotIn ["true"]`), or "" (no
    placeholder is pinned to a capacity type; zones still are). `auto` = by catalog:
    aws -> `eks.amazonaws.com/capacityType`, the managed node groups with
    cluster-autoscaler that docs/install-eks.md sets up (with Karpenter, set
    `karpenter.sh/capacity-type`: Karpenter cannot launch a node for a label it does not
    know); gcp -> `cloud.google.com/gke-spot`; a catalog file -> ""."""
    pin_window_s: float = 86400.0
    """How far back the demand of pods pinned to a zone or capacity type splits a
    bucket's placeholders over them (YAML: `pin_window: 24h`; overprovisioner.
    pinned_plan): a zone asked for within the window gets its share, one not asked for
    for that long gets its pinned placeholder objects deleted. A day covers a daily cycle
    of jobs without holding on to last month's."""
    autoscaler_status: str = "kube-system/cluster-autoscaler-status"
    """NAMESPACE/NAME of cluster-autoscaler's status ConfigMap (its `--namespace` and
    `--status-config-map-name`), read to tell whether CA runs and how many node groups it
    manages, for the "no node group makes this type" warning. "" = not read."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Leader election on a Lease, so two replicas never both write."""

    enabled: bool = True
    """false only for a single replica you never scale (tests, laptops)."""
    lease_name: str = "headstart-overprovisioner"
    """Lease object (coordination.k8s.io/v1) in `placeholders.namespace`."""
    lease_duration_s: int = 15
    """Seconds a follower waits after the last renewal seen before taking over."""
    renew_deadline_s: int = 10
    """Seconds the leader keeps trying to renew before it stops writing."""
    retry_period_s: int = 2
    """Seconds between acquire/renew attempts."""


@dataclass(frozen=True)
class ApiConfig:
    """How Kubernetes API calls are timed out and retried."""

    timeout_s: float = 10.0
    """Per-request timeout; a timeout counts as a temporary error."""
    max_attempts: int = 4
    """Attempts per call for the errors `kube.retry` sends again (408, 429, 5xx but 501,
    timeouts, connection errors); a 409 conflict is decided again at the next tick."""
    backoff_base_s: float = 0.5
    """First retry waits about this long; each further retry doubles it (with jitter)."""
    backoff_max_s: float = 8.0
    """Upper bound of one retry wait."""


@dataclass(frozen=True)
class OverprovisionerConfig:
    """Everything `headstart overprovisioner` reads from its `--config` file."""

    catalog: str = "aws"
    """Instance catalog: `aws`, `gcp` or a path to a catalog YAML."""
    instance_types: tuple[str, ...] = ()
    """Bucket instance types, small to large (or give `buckets_file`)."""
    buckets_file: str = ""
    """A `headstart buckets tune --out` snippet (`buckets: {catalog, instance_types}`)."""
    tick_s: float = 300.0
    """Seconds between loop ticks and between recorded snapshots (YAML: `tick: 5m`).
    5 minutes: 1- and 2-minute ticks did no better in the simulator
    (docs/research/simulator.md) for up to 5x the API calls and history rows; a
    preemption wakes the loop between ticks anyway."""
    horizon_s: float = 390.0
    """Node start-up time to forecast ahead: 5 min launch + 90 s device plugin. Rounded
    up to whole ticks (YAML: `horizon: 6m30s`). Set it to your node groups' start-up: it
    is a fact of the cluster, not a knob (not tuned in the simulator)."""
    headroom: str = ""
    """Instead of forecasting, keep a headroom as users run it today: `static:N` (N
    placeholder nodes of every type), `static:TYPE=N,...` (a count per type, others 0),
    `proportional:R[,min=M][,max=X]` (per type max(M, ceil(nodes of the type / R)), at
    most X: cluster-proportional-autoscaler's linear mode), `scheduled:HH-HH=N,...,else=N`
    (N per type during those UTC hours) or `per-type:TYPE=POLICY+...` (each named type
    its own). The syntax of `headstart simulate --policy`: when simulate's verdict finds
    such a headroom cheaper than predictive for the same cut, it prints this line. With a
    headroom the loop still records demand (so a later simulate or backtest can use it)
    but plans no forecast, known demand, per-type min/max or cost cap: the count is
    applied as the simulator ran it (`overprovisioner.planner.headroom`). "" = forecast."""
    forecast: ForecastConfig = field(default_factory=ForecastConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    placeholders: PlaceholderConfig = field(default_factory=PlaceholderConfig)
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    known_demand: KnownDemandConfig = field(default_factory=KnownDemandConfig)
    """Known-ahead demand sources (docs/known-demand.md)."""
    worker_plans: WorkerPlansConfig = field(default_factory=WorkerPlansConfig)
    """Worker plans of elastic jobs (KALE) and their growth as known demand."""
    dry_run: bool = False
    """Forecast-only: compute and expose the plan, never write to the cluster."""
    host: str = "0.0.0.0"
    """Address the HTTP server (/healthz /readyz /metrics /plan) listens on."""
    port: int = 8080
    """Port of that server."""
    source: str = "<defaults>"
    """Where this config was loaded from (for messages); not a YAML field."""

    @property
    def known_window_s(self) -> float:
        """How far ahead known demand counts (docs/known-demand.md): work due before the
        next tick plus a start-up, `tick + horizon` (11m30s at the defaults). A tick
        must ask for the nodes of what the next tick would ask for too late, so each
        announced pod is counted at a tick at least a start-up before it comes when its
        lead allows."""
        return self.tick_s + self.horizon_s

    @property
    def horizon_ticks(self) -> int:
        """The forecast horizon in ticks: 6m30s at 5-minute ticks is 2 (390 / 300 = 1.3 -> 2)."""
        return max(1, math.ceil(self.horizon_s / self.tick_s - 1e-9))


__all__ = [
    "BACKENDS", "CAPACITY_TYPE_LABELS", "ApiConfig", "BucketLimits", "ForecastConfig",
    "KnownDemandConfig",
    "LeaderElectionConfig", "LimitsConfig", "OverprovisionerConfig", "PlaceholderConfig",
    "Toleration",
]
