"""The simulator's settings: node start-up, cluster-autoscaler timings, policy tick, scoring.

Decides the defaults and which values are valid (a bad value is an InputError naming the
field, so the CLI prints one line and exits 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bucketing.errors import InputError

EXPENDABLE_CUTOFF = -10
PLACEHOLDER_PRIORITY = -5
SCORERS = ("headstart", "default")


@dataclass(frozen=True)
class SimConfig:
    """One simulation's settings.

    gpu_startup_s / cpu_startup_s: seconds from cluster-autoscaler's request until a node
        of a GPU / GPU-less type takes pods (EKS GPU nodes: 4-6 min plus the device plugin).
    scan_s: cluster-autoscaler's scan interval (`--scan-interval`, 10 s).
    unneeded_s: how long a node must be empty before CA removes it
        (`--scale-down-unneeded-time`, 10 min).
    policy_tick_s: the overprovisioner's tick: demand is recorded and the plan redone
        this often.
    quantile: the forecast quantile the predictive policy plans for.
    model: the predictor's forecaster for the predictive policy (`predictor.registry`).
    refit_s / train_s: the predictive policy refits every refit_s on the trailing train_s.
    cold_start_placeholders: placeholders per type before the first fit succeeds.
    groups_per_gpu_type: placement groups each GPU type's nodes are spread over
        (named pg-a, pg-b, ...; 1 = no groups); GPU-less types have none.
    virtual_instance_nodes: nodes in one placeholder block kept inside one group.
    max_nodes_per_group: node group size limit (None = unlimited).
    cost_cap_per_hour: the plan's cost cap on placeholders in $/h (None = none).
    scoring: `headstart` (the locality core) or `default` (least allocated).
    placeholder_priority / expendable_cutoff: CA ignores pods below the cutoff; the
        placeholders must sit at or above it (and below 0) or they would do nothing.
    seed: the random generator's seed (CA's random tie-break between node groups).
    model_params: extra hyper-parameters of the forecaster, as (name, value) pairs.
    adjust: run the predictive forecast through the service's reactive fallback and
        stabilization (`overprovisioner.adjust.ForecastAdjuster`, service defaults).
    replan_on_preemption_s: the service re-plans this long after a placeholder is
        preempted (it watches pods); None = only on its tick.
    rate_window_s: the window around each tick over which `rate-oracle` takes the true
        increases' quantile (1 h: long enough for a quantile, short enough to follow
        the day; the increases within it are the ones a perfect forecaster of the
        demand's rhythm, not of the arrival times, would expect).
    hold_s: the predictive policy plans for the largest forecast of the last hold_s
        (online stabilization, DESIGN "Stabilization" tau); 0 = no hold, the default:
        on openb a 600 s hold raised launches from 977 to 1774 and extra GPU-hours from
        +497 to +1216 for 72% -> 88% less pending, no better than a higher quantile.
    """

    gpu_startup_s: float = 300.0
    cpu_startup_s: float = 120.0
    scan_s: float = 10.0
    unneeded_s: float = 600.0
    policy_tick_s: float = 60.0
    quantile: float = 0.9
    model: str = "last_adaptive"
    refit_s: float = 12 * 3600.0
    train_s: float = 7 * 86_400.0
    cold_start_placeholders: int = 1
    groups_per_gpu_type: int = 2
    virtual_instance_nodes: int = 1
    max_nodes_per_group: int | None = None
    cost_cap_per_hour: float | None = None
    scoring: str = "headstart"
    placeholder_priority: int = PLACEHOLDER_PRIORITY
    expendable_cutoff: int = EXPENDABLE_CUTOFF
    seed: int = 0
    replan_on_preemption_s: float | None = 1.0
    adjust: bool = False
    model_params: tuple[tuple[str, float], ...] = ()
    hold_s: float = 0.0
    rate_window_s: float = 3600.0

    def validate(self) -> SimConfig:
        for name in ("gpu_startup_s", "cpu_startup_s", "scan_s", "unneeded_s",
                     "policy_tick_s", "refit_s", "train_s", "rate_window_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"simulate: {name} must be a positive duration, got {value}")
        if self.replan_on_preemption_s is not None and not self.replan_on_preemption_s >= 0:
            raise InputError("simulate: replan_on_preemption_s must not be negative")
        if not self.hold_s >= 0:
            raise InputError("simulate: hold_s must not be negative")
        if not 0.0 < self.quantile < 1.0:
            raise InputError(f"simulate: quantile must lie strictly between 0 and 1, "
                             f"got {self.quantile}")
        for name in ("cold_start_placeholders", "groups_per_gpu_type", "virtual_instance_nodes"):
            if getattr(self, name) < (1 if name != "cold_start_placeholders" else 0):
                raise InputError(f"simulate: {name} must not be negative or zero")
        if self.seed < 0:
            raise InputError(f"simulate: seed must not be negative, got {self.seed}")
        if self.groups_per_gpu_type > 26:
            raise InputError("simulate: at most 26 placement groups per type (pg-a .. pg-z)")
        if self.max_nodes_per_group is not None and self.max_nodes_per_group < 1:
            raise InputError("simulate: max_nodes_per_group must be at least 1")
        if self.cost_cap_per_hour is not None and not self.cost_cap_per_hour >= 0:
            raise InputError("simulate: cost cap must not be negative")
        if self.scoring not in SCORERS:
            raise InputError(f"simulate: scoring {self.scoring!r} is not one of "
                             f"{', '.join(SCORERS)}")
        if not self.expendable_cutoff <= self.placeholder_priority < 0:
            raise InputError(
                f"simulate: placeholder priority {self.placeholder_priority} must lie at or "
                f"above cluster-autoscaler's expendable cutoff {self.expendable_cutoff} (or CA "
                "ignores the placeholders) and below 0 (or real pods cannot preempt them)"
            )
        return self


