"""Judging policy runs against what users run today: one pure rule.

Decides the comparison: each policy's reduction of capacity-caused pending GPU-minutes
against `reactive`, its extra GPU-hours over `reactive`, and, for every judged run
(`predictive*`, and `rate-oracle*`, the yardstick of a perfect forecast of demand), the
extra GPU-hours each peer family (static, proportional, scheduled headroom) needs for the
same reduction, interpolated linearly along the family's cost curve (its members in
order of headroom, reactive as the origin), and the cheapest of them: the best peer.
Also how far the judged run is from the oracle on both axes.

Must not: run a simulation (`overprovisioner.sim.compare` does), read files or print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from overprovisioner.policy_names import JUDGED, PEERS, parse_policy_name, peer_size
from overprovisioner.sim.metrics import Metrics


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


