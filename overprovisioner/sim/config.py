"""The simulator's own settings: the simulated cluster, cluster-autoscaler, the peers' controllers.

Decides the defaults and which values are valid (a bad value is an InputError naming the
field, so the CLI prints one line and exits 2). What the predictive policy runs is not
here: it is the overprovisioner service's configuration (`service`, an
`OverprovisionerConfig`: tick, horizon, forecast.*, limits.*, placeholders.*), so the
simulator measures the configuration the service loads, with the service's own defaults
when no config file is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig

SCORERS = ("headstart", "default")


@dataclass(frozen=True)
class SimConfig:
    """One simulation's settings.

    gpu_startup_s / cpu_startup_s: seconds from cluster-autoscaler's request until a node
        of a GPU / GPU-less type takes pods (EKS GPU nodes: 4-6 min plus the device plugin),
        the mean of each node's start-up.
    startup_spread: each node's start-up is drawn uniformly within +-this share of the
        mean (0.2: a 5-minute mean gives 4 to 6 minutes, the range above; an assumption,
        not a measured distribution); 0 = every node takes exactly the mean.
    scan_s: cluster-autoscaler's scan interval (`--scan-interval`, 10 s).
    unneeded_s: how long a node must be empty before CA removes it
        (`--scale-down-unneeded-time`, 10 min).
    scale_down_delay_after_add_s: after any scale-up, CA removes no node for this long
        (`--scale-down-delay-after-add`, 10 min; 0 = no cooldown).
    utilization_threshold / gpu_utilization_threshold: CA counts a node unneeded while
        its requested share is below these (`--scale-down-utilization-threshold`,
        `--scale-down-gpu-utilization-threshold`, both 0.5): a node with GPUs by its GPU
        share alone, any other by the larger of its CPU and memory shares
        (`sim.scale_down.utilization`); a placeholder fills its node (share 1).
    drainable_pods: whether CA may evict the trace's pods to remove an unneeded node.
        False (the default): they are pods of the Kubeflow training operator, a custom
        controller, which `--skip-nodes-with-custom-controller-pods` (default true) keeps
        where they run (or pods with `cluster-autoscaler.kubernetes.io/safe-to-evict:
        "false"`), so only nodes without real pods go. True: plain Jobs' pods, which CA
        moves to other nodes when every one of them fits there (`--drainable-pods`).
    new_pod_delay_s / new_gpu_pod_delay_s: CA skips a loop's scale-up while its oldest
        unschedulable pod is younger than the first, or its oldest one asking for GPUs
        younger than the second (core/static_autoscaler.go `allPodsAreNew`: constants
        2 s and 30 s, no flag; 0 = scale up at once, an idealised CA).
    groups_per_gpu_type: placement groups each GPU type's nodes are spread over
        (named pg-a, pg-b, ...; 1 = no groups) when the service config names none for
        the type (`limits.placement_groups`); GPU-less types have none.
    max_nodes_per_group: node group size limit (None = unlimited).
    scoring: `headstart` (the locality core) or `default` (least allocated).
    seed: the random generator's seed (CA's random tie-break between node groups).
    cpa_poll_s: how often cluster-proportional-autoscaler, which drives `proportional`,
        counts nodes and resizes (its `--poll-period-seconds`, default 10).
    peer_tick_s: how often the `static` and `scheduled` peers reconcile their
        placeholder count (a Deployment's replicas set by a schedule; 60 s).
    rate_window_s: the window around each tick over which `rate-oracle` takes the true
        increases' quantile (1 h: long enough for a quantile, short enough to follow
        the day; the increases within it are the ones a perfect forecaster of the
        demand's rhythm, not of the arrival times, would expect).
    service: the overprovisioner configuration the predictive policy (and the two
        oracles, which replace only its forecast) runs: tick, horizon, forecast.*,
        limits.* (per-type min/max, cost cap, virtual instance size), the placeholder
        PriorityClass, and `placeholders.wake_debounce` (how long after a placeholder's
        preemption its pod watch makes the loop re-plan; 0 = at the next tick only).
        Its instance types are replaced by the simulated ones.
    """

    gpu_startup_s: float = 300.0
    cpu_startup_s: float = 120.0
    startup_spread: float = 0.2
    scan_s: float = 10.0
    unneeded_s: float = 600.0
    scale_down_delay_after_add_s: float = 600.0
    utilization_threshold: float = 0.5
    gpu_utilization_threshold: float = 0.5
    drainable_pods: bool = False
    new_pod_delay_s: float = 2.0
    new_gpu_pod_delay_s: float = 30.0
    groups_per_gpu_type: int = 2
    max_nodes_per_group: int | None = None
    scoring: str = "headstart"
    seed: int = 0
    cpa_poll_s: float = 10.0
    peer_tick_s: float = 60.0
    rate_window_s: float = 3600.0
    service: OverprovisionerConfig = field(default_factory=OverprovisionerConfig)

    def validate(self) -> SimConfig:
        for name in ("gpu_startup_s", "cpu_startup_s", "scan_s", "unneeded_s",
                     "cpa_poll_s", "peer_tick_s", "rate_window_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"simulate: {name} must be a positive duration, got {value}")
        for name in ("scale_down_delay_after_add_s", "new_pod_delay_s", "new_gpu_pod_delay_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"simulate: {name} must be a duration of 0 or more, got {value}")
        if not (math.isfinite(self.startup_spread) and 0 <= self.startup_spread < 1):
            raise InputError("simulate: --node-startup-spread must be at least 0 and below 1, "
                             f"got {self.startup_spread}")
        for name, flag in (("utilization_threshold", "--scale-down-utilization-threshold"),
                           ("gpu_utilization_threshold",
                            "--scale-down-gpu-utilization-threshold")):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 1):
                raise InputError(f"simulate: {flag} must lie in [0, 1], got {value}")
        if self.groups_per_gpu_type < 1:
            raise InputError("simulate: groups_per_gpu_type must not be negative or zero")
        if self.seed < 0:
            raise InputError(f"simulate: seed must not be negative, got {self.seed}")
        if self.groups_per_gpu_type > 26:
            raise InputError("simulate: at most 26 placement groups per type (pg-a .. pg-z)")
        if self.max_nodes_per_group is not None and self.max_nodes_per_group < 1:
            raise InputError("simulate: max_nodes_per_group must be at least 1")
        if self.scoring not in SCORERS:
            raise InputError(f"simulate: scoring {self.scoring!r} is not one of "
                             f"{', '.join(SCORERS)}")
        return self
