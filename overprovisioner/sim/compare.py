"""Running several policies on one workload and judging them against each other.

Decides the comparison the project's targets are stated in: each policy's reduction of
capacity-caused pending GPU-minutes against `reactive`, its extra GPU-hours over
`reactive`, and, for the predictive policy, the extra GPU-hours static headroom needs
for the same reduction, interpolated linearly between static levels (static:0 =
reactive is the origin). Also how far predictive is from the oracle on both axes. Every
run named `predictive*` (each quantile) and `rate-oracle*` (the yardstick of a perfect
forecast of demand) is judged the same way.

Must not: read files or print (the CLI does); runs work on their own state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bucketing.catalog import Catalog
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.engine import RunResult, run
from overprovisioner.sim.metrics import Metrics, measure
from overprovisioner.sim.policies import parse_policy_name
from overprovisioner.sim.workload import Workload

DEFAULT_POLICIES = ("reactive", "static:1", "static:2", "static:4", "static:8", "predictive",
                    "oracle")
# The demo also draws predictive's own trade-off curve, at higher quantiles.
DEMO_POLICIES = DEFAULT_POLICIES + ("predictive:0.97", "predictive:0.99", "rate-oracle:0.97")
JUDGED_KINDS = ("predictive", "rate-oracle")


@dataclass(frozen=True)
class Assessment:
    """One policy (predictive by default) against reactive, static and the oracle (None
    where a run is missing).

    policy: the judged run's name. reduction: 1 - pending GPU-minutes / reactive's;
    extra_gpu_hours: over reactive's.
    static_extra_for_same: extra GPU-hours static needs for the judged run's reduction
        (interpolated; None when no static level reaches it).
    """

    reduction: float | None
    extra_gpu_hours: float | None
    static_extra_for_same: float | None
    oracle_reduction: float | None
    oracle_extra_gpu_hours: float | None
    policy: str = "predictive"

    @property
    def meets_reduction_target(self) -> bool:
        return self.reduction is not None and self.reduction >= 0.9

    @property
    def extra_ratio_to_static(self) -> float | None:
        if self.static_extra_for_same is None or self.extra_gpu_hours is None:
            return None
        if self.static_extra_for_same <= 0:
            return None
        return self.extra_gpu_hours / self.static_extra_for_same

    def lines(self) -> list[str]:
        if self.reduction is None:
            return [f"(assessment needs the reactive and {self.policy} runs)"]
        name = self.policy
        out = [
            f"{name} cuts pending GPU-minutes by {self.reduction:.1%} vs reactive "
            f"(target >= 90%: {'met' if self.meets_reduction_target else 'NOT met'}) for "
            f"{self.extra_gpu_hours:+.1f} GPU-hours",
        ]
        if self.static_extra_for_same is not None:
            ratio = self.extra_ratio_to_static
            out.append(
                f"static headroom needs {self.static_extra_for_same:+.1f} GPU-hours for the same "
                f"reduction; {name} spends {ratio:.2f}x that (target <= 0.5x: "
                f"{'met' if ratio is not None and ratio <= 0.5 else 'NOT met'})"
                if ratio is not None else
                f"static headroom needs {self.static_extra_for_same:+.1f} GPU-hours for the same "
                "reduction"
            )
        else:
            out.append(f"no static level in this run reaches {name}'s reduction")
        if self.oracle_reduction is not None:
            out.append(
                f"oracle: {self.oracle_reduction:.1%} reduction for "
                f"{self.oracle_extra_gpu_hours:+.1f} GPU-hours; {name} is "
                f"{(self.oracle_reduction - self.reduction) * 100:.1f} points of reduction and "
                f"{self.extra_gpu_hours - self.oracle_extra_gpu_hours:+.1f} GPU-hours away"
            )
        return out


def run_policies(
    workload: Workload,
    catalog: Catalog,
    policies: Sequence[str],
    config: SimConfig,
    compare_scoring: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[RunResult, Metrics]]:
    """One run per policy (headstart scoring as configured); with compare_scoring and
    multi-pod jobs in the workload, one more run of the locality-relevant policy (the
    predictive one if listed, else the first) with the other scorer."""
    for name in policies:
        parse_policy_name(name)  # fail before the first run, not after it
    results = []
    for name in policies:
        if progress:
            progress(name)
        result = run(workload, catalog, name, config)
        results.append((result, measure(result)))
    if compare_scoring and (workload.job >= 0).any() and policies:
        chosen = "predictive" if "predictive" in policies else policies[0]
        other = "default" if config.scoring == "headstart" else "headstart"
        if progress:
            progress(f"{chosen} ({other} scoring)")
        alt = run(workload, catalog, chosen, _with_scoring(config, other))
        results.append((alt, measure(alt)))
    return results


def _with_scoring(config: SimConfig, scoring: str) -> SimConfig:
    from dataclasses import replace

    return replace(config, scoring=scoring)


def assess_all(metrics: Sequence[Metrics]) -> list[Assessment]:
    """An assessment per judged run (`predictive*`, `rate-oracle*`), in run order;
    the plain `predictive` one (possibly empty) when there is none."""
    names = [m.policy for m in metrics if m.scoring == metrics[0].scoring
             and parse_policy_name(m.policy)[0] in JUDGED_KINDS] if metrics else []
    return [assess(metrics, name) for name in names] or [assess(metrics)]


def assess(metrics: Sequence[Metrics], policy: str = "predictive") -> Assessment:
    if not metrics:
        return Assessment(None, None, None, None, None, policy)
    by_name = {m.policy: m for m in metrics if m.scoring == metrics[0].scoring}
    reactive = by_name.get("reactive")
    predictive = by_name.get(policy)
    oracle = by_name.get("oracle")
    if reactive is None or predictive is None:
        return Assessment(None, None, None, None, None, policy)
    base = reactive.pending_gpu_minutes

    def reduction(m: Metrics) -> float:
        return 1.0 - m.pending_gpu_minutes / base if base > 0 else 0.0

    statics = sorted(
        (parse_policy_name(m.policy)[1], reduction(m), m.gpu_hours - reactive.gpu_hours)
        for m in metrics
        if parse_policy_name(m.policy)[0] == "static" and m.scoring == reactive.scoring
    )
    target = reduction(predictive)
    curve = [(0.0, 0.0)] + [(r, extra) for _, r, extra in statics]
    static_extra = interpolate_extra(curve, target)
    return Assessment(
        reduction=target,
        extra_gpu_hours=predictive.gpu_hours - reactive.gpu_hours,
        static_extra_for_same=static_extra,
        oracle_reduction=reduction(oracle) if oracle else None,
        oracle_extra_gpu_hours=(oracle.gpu_hours - reactive.gpu_hours) if oracle else None,
        policy=policy,
    )


def interpolate_extra(curve: Sequence[tuple[float, float]], target: float) -> float | None:
    """Extra GPU-hours at reduction `target` on the (reduction, extra) points, taken in the
    order of increasing headroom: linear between the first pair that brackets the target.
    None when no point reaches it."""
    for (r0, e0), (r1, e1) in zip(curve, curve[1:], strict=False):
        if r0 <= target <= r1 and r1 > r0:
            return float(e0 + (e1 - e0) * (target - r0) / (r1 - r0))
        if r1 >= target and r0 > target:
            return float(e0)
    best = [e for r, e in curve if r >= target]
    return float(min(best)) if best else None


def extra_hours_axis(metrics: Sequence[Metrics]) -> np.ndarray:
    reactive = next((m for m in metrics if m.policy == "reactive"), None)
    base = reactive.gpu_hours if reactive else 0.0
    return np.array([m.gpu_hours - base for m in metrics])
