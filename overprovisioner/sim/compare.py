"""Running several policies on one workload and judging them against what users run today.

Decides the comparison: each policy's reduction of capacity-caused pending GPU-minutes
against `reactive`, its extra GPU-hours over `reactive`, and, for every judged run
(`predictive*`, and `rate-oracle*`, the yardstick of a perfect forecast of demand), the
extra GPU-hours each peer family (static, proportional, scheduled headroom) needs for the
same reduction, interpolated linearly along the family's cost curve (its members in
order of headroom, reactive as the origin), and the cheapest of them: the best peer.
Also how far the judged run is from the oracle on both axes.

Must not: read files or print (the CLI does); runs work on their own state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bucketing.catalog import Catalog
from overprovisioner.planner.policy_names import (
    JUDGED,
    PEERS,
    parse_policy_name,
    peer_size,
    schedule_name,
    unlimited_name,
)
from overprovisioner.sim.build import check_schedule_matches
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.engine import run
from overprovisioner.sim.hindsight import add_hindsight_runs
from overprovisioner.sim.metrics import Metrics, measure
from overprovisioner.sim.result import RunResult
from overprovisioner.sim.workload import Workload, busy_hours, true_demand

DEFAULT_POLICIES = ("reactive", "static:1", "static:2", "static:4", "static:8", "predictive",
                    "oracle")
# Schedules kept during the workload's busy hours / outside them (`scheduled_policies`).
SCHEDULES = ((1, 0), (2, 0), (4, 1))
# Placeholders `proportional_policies` aims at, on average, for the busiest type.
PROPORTIONAL_TARGETS = (1, 2, 4)
# The demo also draws predictive's own trade-off curve, at higher quantiles.
DEMO_EXTRA = ("predictive:0.97", "predictive:0.99")


def scheduled_policies(workload: Workload) -> tuple[str, ...]:
    """`scheduled` peers following the workload's own busy hours (`busy_hours`: chosen
    in hindsight on the trace they are judged on, which flatters them)."""
    hours = busy_hours(workload)
    names = (schedule_name(hours, busy, otherwise) for busy, otherwise in SCHEDULES)
    return tuple(name for name in names if name)


def proportional_policies(workload: Workload) -> tuple[str, ...]:
    """`proportional:R` peers sized to the workload as a user sizes nodesPerReplica to the
    cluster: R = the busiest type's mean node count (true demand every 5 minutes over
    the window) divided by 1, 2 and 4, so each keeps about that many placeholders on
    average (R >= 1; equal ratios once)."""
    demand = true_demand(workload, 300.0)[:-1]  # the last row is the window's end
    mean_nodes = float(demand.mean(axis=0).max()) if demand.size else 0.0
    ratios = dict.fromkeys(max(1, round(mean_nodes / target))
                           for target in PROPORTIONAL_TARGETS)
    return tuple(f"proportional:{ratio}" for ratio in ratios)


def default_policies(workload: Workload, demo: bool = False) -> tuple[str, ...]:
    """What `simulate` runs without --policy (the demo adds predictive's higher quantiles):
    reactive, every peer family, predictive, the oracle."""
    head, tail = DEFAULT_POLICIES[:-2], DEFAULT_POLICIES[-2:]
    return (head + proportional_policies(workload) + scheduled_policies(workload) + tail
            + (DEMO_EXTRA if demo else ()))


@dataclass(frozen=True)
class PeerCost:
    """One peer family at a judged run's reduction: `extra` = its interpolated extra
    GPU-hours, `extra_usd` its extra dollars interpolated the same way (both None when
    no member of the family reaches the reduction); `member`: the family's cheapest run
    that reaches it (the headroom a user would configure for that cut), None when none
    does."""

    family: str
    extra: float | None
    extra_usd: float | None = None
    member: str | None = None


@dataclass(frozen=True)
class Assessment:
    """One judged run against reactive, the peers and the oracle (None where a run is
    missing).

    policy: the judged run's name. reduction: 1 - pending GPU-minutes / reactive's;
    extra_gpu_hours, extra_usd: over reactive's. peers: each peer family present in the
    runs.
    """

    reduction: float | None
    extra_gpu_hours: float | None
    peers: tuple[PeerCost, ...]
    oracle_reduction: float | None
    oracle_extra_gpu_hours: float | None
    policy: str = "predictive"
    extra_usd: float | None = None

    @property
    def best_peer(self) -> PeerCost | None:
        """The cheapest peer family that reaches the judged run's reduction."""
        reaching = [p for p in self.peers if p.extra is not None]
        return min(reaching, key=lambda p: p.extra) if reaching else None

    @property
    def ratio_to_best_peer(self) -> float | None:
        best = self.best_peer
        if best is None or self.extra_gpu_hours is None or best.extra <= 0:
            return None
        return self.extra_gpu_hours / best.extra

    def lines(self) -> list[str]:
        """The run in the user's terms: waiting cut and GPU-hours over cluster-autoscaler
        alone, what each headroom family needs for the same cut, the oracle's distance."""
        if self.reduction is None:
            return [f"{self.policy}: not compared (needs a reactive run too)"]
        name = self.policy
        out = [f"{name}: waiting for capacity cut by {self.reduction:.1%} for "
               f"{self.extra_gpu_hours:+,.1f} GPU-hours over cluster-autoscaler alone"]
        costs = "; ".join(
            f"{p.family} {p.extra:+,.1f} GPU-hours" if p.extra is not None
            else f"{p.family} never cuts that much" for p in self.peers)
        best, ratio = self.best_peer, self.ratio_to_best_peer
        if best is None:
            out.append("  no headroom run cuts that much" + (f" ({costs})" if costs else ""))
        elif ratio is None:
            out.append(f"  headroom for the same cut: {costs}")
        else:
            verdict = "cheaper than" if ratio < 1 else "no cheaper than"
            out.append(f"  headroom for the same cut: {costs}; {name} spends "
                       f"{ratio:.2f}x the cheapest ({best.family}): {verdict} it")
        if self.oracle_reduction is not None:
            out.append(
                f"  the oracle (a yardstick that knows the future) cuts "
                f"{self.oracle_reduction:.1%} for {self.oracle_extra_gpu_hours:+,.1f} GPU-hours "
                f"({(self.oracle_reduction - self.reduction) * 100:+.1f} points of cut, "
                f"{self.oracle_extra_gpu_hours - self.extra_gpu_hours:+,.1f} GPU-hours "
                f"against {name})"
            )
        return out


def run_policies(
    workload: Workload,
    catalog: Catalog,
    policies: Sequence[str],
    config: SimConfig,
    compare_scoring: bool = False,
    progress: Callable[[str], None] | None = None,
    hindsight: bool = True,
    lifted: bool = True,
) -> list[tuple[RunResult, Metrics]]:
    """One run per policy (headstart scoring as configured); with `hindsight` and static
    runs to search, one more run per predictive run's cut: the cheapest count per type
    reaching it, chosen in hindsight (`overprovisioner.sim.hindsight`); with `lifted`,
    when a limit held back the run the verdict recommends, that run once more with the
    limits lifted (`predictive:unlimited`: what the limits cost in waiting, which the
    verdict reports), and the per-type peer for its cut; with
    compare_scoring (opt-in: it is one more run) and multi-pod jobs in the workload, one
    more run of the locality-relevant policy (the predictive one if listed, else the
    first) with the other scorer."""
    for name in policies:  # fail before the first run, not after it
        spec = parse_policy_name(name)
        if spec.kind == "scheduled":
            check_schedule_matches(spec, workload)

    def one(name: str) -> tuple[RunResult, Metrics]:
        if progress:
            progress(name)
        result = run(workload, catalog, name, config)
        return result, measure(result)

    results = [one(name) for name in policies]
    type_names = [t.name for t in workload.types]
    if hindsight:
        results = add_hindsight_runs(results, one, type_names)
    if lifted:
        from overprovisioner.sim.verdict import recommend  # verdict builds on this module

        chosen = recommend(assess_all([m for _, m in results]))
        added = lifted_runs(results, one, chosen.policy if chosen else None)
        results += added
        if hindsight and added:  # the per-type peer for the lifted run's cut too
            results = add_hindsight_runs(results, one, type_names)
    if compare_scoring and (workload.job >= 0).any() and policies:
        chosen = next((p for p in policies if parse_policy_name(p).kind == "predictive"),
                      policies[0])
        other = "default" if config.scoring == "headstart" else "headstart"
        if progress:
            progress(f"{chosen} ({other} scoring)")
        alt = run(workload, catalog, chosen, _with_scoring(config, other))
        results.append((alt, measure(alt)))
    return results


def lifted_runs(results: Sequence[tuple[RunResult, Metrics]],
                one: Callable[[str], tuple[RunResult, Metrics]], policy: str | None
                ) -> list[tuple[RunResult, Metrics]]:
    """`predictive:unlimited` (`predictive:Q,unlimited`) of `policy` when a limit (cost
    cap or per-type max) held its plan back at some tick, unless it already ran."""
    names = {m.policy for _, m in results}
    for _, metrics in results:
        if metrics.policy != policy:
            continue
        spec = parse_policy_name(metrics.policy)
        if spec.kind != "predictive" or spec.unlimited:
            return []
        if not (metrics.ticks_capped_by_max or metrics.ticks_capped_by_cost_cap):
            return []
        name = unlimited_name(metrics.policy)
        return [] if name in names else [one(name)]
    return []


def _with_scoring(config: SimConfig, scoring: str) -> SimConfig:
    from dataclasses import replace

    return replace(config, scoring=scoring)


def assess_all(metrics: Sequence[Metrics]) -> list[Assessment]:
    """An assessment per judged run (`predictive*`, `rate-oracle*`), in run order;
    the plain `predictive` one (possibly empty) when there is none."""
    names = [m.policy for m in metrics if m.scoring == metrics[0].scoring
             and parse_policy_name(m.policy).kind in JUDGED] if metrics else []
    return [assess(metrics, name) for name in names] or [assess(metrics)]


def assess(metrics: Sequence[Metrics], policy: str = "predictive") -> Assessment:
    if not metrics:
        return Assessment(None, None, (), None, None, policy)
    by_name = {m.policy: m for m in metrics if m.scoring == metrics[0].scoring}
    reactive = by_name.get("reactive")
    judged = by_name.get(policy)
    oracle = by_name.get("oracle")
    if reactive is None or judged is None:
        return Assessment(None, None, (), None, None, policy)
    base = reactive.pending_gpu_minutes

    def reduction(m: Metrics) -> float:
        return 1.0 - m.pending_gpu_minutes / base if base > 0 else 0.0

    target = reduction(judged)
    peers = []
    for family in PEERS:
        members = sorted(
            (peer_size(spec), reduction(m), m.gpu_hours - reactive.gpu_hours,
             m.cost_usd - reactive.cost_usd, m.policy)
            for m, spec in ((m, parse_policy_name(m.policy)) for m in by_name.values())
            if spec.kind == family
        )
        if members:
            hours = [(0.0, 0.0)] + [(r, extra) for _, r, extra, _, _ in members]
            dollars = [(0.0, 0.0)] + [(r, usd) for _, r, _, usd, _ in members]
            reaching = [(extra, name) for _, r, extra, _, name in members if r >= target]
            peers.append(PeerCost(family, interpolate_extra(hours, target),
                                  interpolate_extra(dollars, target),
                                  min(reaching)[1] if reaching else None))
    return Assessment(
        reduction=target,
        extra_gpu_hours=judged.gpu_hours - reactive.gpu_hours,
        peers=tuple(peers),
        oracle_reduction=reduction(oracle) if oracle else None,
        oracle_extra_gpu_hours=(oracle.gpu_hours - reactive.gpu_hours) if oracle else None,
        policy=policy,
        extra_usd=judged.cost_usd - reactive.cost_usd,
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
