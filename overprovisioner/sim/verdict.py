"""The verdict `headstart demo` and `headstart simulate` lead with: which deployable run to
configure, what it buys and costs against the headroom users run today, and the
overprovisioner config lines that get it.

Decides:
- the recommended run, among the `predictive` and `predictive:Q` runs only (the oracle
  and rate-oracle know the future: yardsticks, never recommended): of the runs that cut
  waiting at all, the one that costs least against the cheapest peer at its own cut
  (lowest `ratio_to_best_peer`; the larger cut breaks a tie); when no peer reaches any
  of them, the one with the largest cut;
- the words: waiting cut, GPU-hours and dollars over cluster-autoscaler alone, the
  same cut with each peer family, and the ratio to the cheapest in GPU-hours and in
  dollars (the cheapest family may differ: GPU-less placeholder nodes cost dollars but
  no GPU-hours); the headline recommends predictive only when it is cheaper on both by
  more than `TIE_MARGIN` (5%), calls it a tie within that margin (and then recommends
  the simpler option, the headroom), and says plainly when it is dearer; a peer's cost
  between two of its runs says it is interpolated;
- the YAML snippet: the `forecast:` lines of the overprovisioner config, or, when a
  headroom beats predictive, the `headroom:` line that makes the overprovisioner run
  that headroom (`overprovisioner.planner.headroom`): of each family's cheapest run
  reaching the same cut, the one costing the fewest dollars.

Must not: print, read files, or run anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from overprovisioner.policy_names import parse_policy_name, unlimited_name
from overprovisioner.sim.assess import Assessment, PeerCost
from overprovisioner.sim.metrics import Metrics

YARDSTICKS = ("oracle", "rate-oracle")
# Within this much of the cheapest headroom (either way), a run's cost is a tie: one
# simulated replay differs from another by the start-up draws and the tick grid, and a
# user should not take on a forecaster to save 3%. A tie recommends the simpler option,
# the headroom (no history, no model).
TIE_MARGIN = 0.05


def is_yardstick(policy: str) -> bool:
    """True for the runs that know the future and cannot be deployed."""
    return parse_policy_name(policy).kind in YARDSTICKS


def display_name(policy: str) -> str:
    """The policy as tables and plots show it: yardsticks say they are one."""
    return f"{policy} (yardstick)" if is_yardstick(policy) else policy


@dataclass(frozen=True)
class Verdict:
    """The recommendation. assessment: the chosen run's (None: nothing to recommend);
    quantile: the forecast quantile it ran at; lines: the verdict in words; snippet: the
    config lines (empty when nothing is recommended); beats: whether the chosen run is
    cheaper than every headroom family at its cut (else it is only the best predictive
    run, and the plots say so)."""

    assessment: Assessment | None
    quantile: float | None
    lines: tuple[str, ...]
    snippet: str
    beats: bool = False

    @property
    def ring(self) -> str:
        """How the plots label the chosen run."""
        return "recommended" if self.beats else "best predictive run"


def recommend(assessments: Sequence[Assessment]) -> Assessment | None:
    """The predictive run to configure (module docstring), or None."""
    runs = [a for a in assessments if a.reduction is not None and a.reduction > 0
            and _configurable(a.policy)]
    if not runs:
        return None
    rated = [a for a in runs if a.ratio_to_best_peer is not None]
    if rated:
        return min(rated, key=lambda a: (a.ratio_to_best_peer, -a.reduction))
    return max(runs, key=lambda a: a.reduction)


def _configurable(policy: str) -> bool:
    """A predictive run a config file gets as is (not one with the limits lifted)."""
    spec = parse_policy_name(policy)
    return spec.kind == "predictive" and not spec.unlimited


def _money(value: float | None) -> str:
    return "?" if value is None else f"{'+' if value >= 0 else '-'}${abs(value):,.0f}"


def _peer_text(peer: PeerCost, metrics: Sequence[Metrics], reactive: Metrics,
               reduction: float) -> str:
    if peer.extra is None:
        return f"{peer.family}: none of its runs cuts that much"
    text = f"{peer.family} {peer.extra:+,.0f} GPU-h ({_money(peer.extra_usd)}"
    member = next((m for m in metrics if m.policy == peer.member), None)
    if member is not None and reactive.pending_gpu_minutes > 0:
        cut = 1 - member.pending_gpu_minutes / reactive.pending_gpu_minutes
        if abs(cut - reduction) > 0.005:  # no run of the family cuts exactly that much
            text += (f", interpolated between its runs: the cheapest that reaches the cut, "
                     f"{member.policy}, cuts {cut:.0%} for "
                     f"{member.gpu_hours - reactive.gpu_hours:+,.0f}")
    return text + ")"


def _compared(ratio: float) -> str:
    """How a cost ratio to the cheapest headroom reads: a tie within TIE_MARGIN."""
    return f"{ratio:.2f}x" + (f" (within {TIE_MARGIN:.0%}: a tie)" if _tie(ratio) else "")


def _tie(ratio: float | None) -> bool:
    return ratio is not None and abs(ratio - 1) <= TIE_MARGIN


def _cheapest_in_dollars(run: Assessment) -> PeerCost | None:
    priced = [p for p in run.peers if p.extra_usd is not None]
    return min(priced, key=lambda p: p.extra_usd) if priced else None


def _locality_text(reactive: Metrics, judged: Metrics) -> str:
    """How spread the multi-pod jobs ended up, against cluster-autoscaler alone (pods
    that find a placeholder's node at once may land apart from their job's others)."""
    nodes = judged.mean_nodes_per_job - reactive.mean_nodes_per_job
    groups = judged.mean_groups_per_job - reactive.mean_groups_per_job
    more = [name for name, change in (("nodes", nodes), ("placement groups", groups))
            if change > 0.005]
    fewer = [name for name, change in (("nodes", nodes), ("placement groups", groups))
             if change < -0.005]
    if more and not fewer:
        verdict = ("its jobs are more spread than under cluster-autoscaler alone (more "
                   + " and more ".join(more) + " per job)")
    elif more:
        verdict = (f"its jobs run on fewer {fewer[0]} but across more {more[0]} per job "
                   "than under cluster-autoscaler alone")
    elif fewer:
        verdict = ("its jobs are less spread than under cluster-autoscaler alone (fewer "
                   + " and fewer ".join(fewer) + " per job)")
    else:
        verdict = "its jobs are no more spread"
    return (f"Locality ({judged.multi_pod_jobs:,} multi-pod jobs): nodes per job "
            f"{reactive.mean_nodes_per_job:.2f} -> {judged.mean_nodes_per_job:.2f}, placement "
            f"groups per job {reactive.mean_groups_per_job:.2f} -> "
            f"{judged.mean_groups_per_job:.2f}: {verdict}.")


def _limits_text(judged: Metrics, chosen: Assessment, lifted: Assessment | None
                 ) -> str | None:
    """Which of headstart's limits held the plan back, at how many ticks, and what the
    same run without them (`unlimited_name`) cut and cost; None when lifting them
    changes neither the cut nor the GPU-hours as the verdict rounds them (nothing to
    act on)."""
    held = []
    if judged.ticks_capped_by_max:
        held.append(f"the per-type max (limits.*.max) at {judged.ticks_capped_by_max:,}")
    if judged.ticks_capped_by_cost_cap:
        held.append(f"the cost cap (limits.cost_cap_per_hour) at "
                    f"{judged.ticks_capped_by_cost_cap:,}")
    text = (f"Limits held the plan back: {' and '.join(held)} of its "
            f"{judged.planned_ticks:,} ticks.")
    if lifted is None or lifted.reduction is None:
        return text + (" Raising them lets it cut more for more GPU-hours; run again with "
                       "a --config that raises them to see how much.")
    if (f"{lifted.reduction:.0%}", f"{lifted.extra_gpu_hours:+,.0f}") == (
            f"{chosen.reduction:.0%}", f"{chosen.extra_gpu_hours:+,.0f}"):
        return None
    ratio = lifted.ratio_to_best_peer
    against = "" if ratio is None else f", {ratio:.2f}x the cheapest headroom at that cut"
    return (text + f" Without them ({lifted.policy} in the table) it cuts "
            f"{lifted.reduction:.0%} instead of {chosen.reduction:.0%} for "
            f"{lifted.extra_gpu_hours:+,.0f} GPU-hours instead of "
            f"{chosen.extra_gpu_hours:+,.0f} ({_money(lifted.extra_usd)}){against}: "
            "raise `limits` to your budget to get it.")


def _other_text(run: Assessment) -> str:
    ratio = run.ratio_to_best_peer
    against = "" if ratio is None else f", {ratio:.2f}x the cheapest headroom"
    return (f"{run.policy} cuts {run.reduction:.0%} for {run.extra_gpu_hours:+,.0f} GPU-hours "
            f"({_money(run.extra_usd)}){against}")


def build_verdict(metrics: Sequence[Metrics], assessments: Sequence[Assessment],
                  service_quantile: float, model: str, price_text: str,
                  config_source: str) -> Verdict:
    """The verdict for these runs. service_quantile / model: what plain `predictive` ran
    with; price_text: which prices the dollars use; config_source: the config file the
    runs used (or `<defaults>`)."""
    chosen = recommend(assessments)
    if chosen is None:
        judged = [a for a in assessments if a.reduction is not None
                  and parse_policy_name(a.policy).kind == "predictive"]
        if not judged:
            return Verdict(None, None, (), "")
        return Verdict(None, None, (
            "Verdict: no predictive run cut waiting on this trace; placeholders do not "
            "help here (cluster-autoscaler alone is as good).",), "")
    spec = parse_policy_name(chosen.policy)
    quantile = spec.quantile if spec.quantile is not None else service_quantile
    model = spec.model or model
    reactive = next(m for m in metrics if m.policy == "reactive")
    pending = reactive.pending_gpu_minutes * (1 - chosen.reduction)
    best, ratio = chosen.best_peer, chosen.ratio_to_best_peer
    cheapest_usd = _cheapest_in_dollars(chosen)
    usd_ratio = (None if cheapest_usd is None or chosen.extra_usd is None
                 or cheapest_usd.extra_usd <= 0 else chosen.extra_usd / cheapest_usd.extra_usd)
    beats = ratio is None or (ratio < 1 - TIE_MARGIN and (
        usd_ratio is None or usd_ratio < 1 - TIE_MARGIN))
    tie = not beats and ratio is not None and ratio <= 1 + TIE_MARGIN and (
        usd_ratio is None or usd_ratio <= 1 + TIE_MARGIN)
    if beats:
        head = f"Verdict: configure predictive at quantile {quantile:g}."
    elif tie:
        head = ("Verdict: on this trace predictive and the headroom users run today are a "
                f"tie for the same cut (within {TIE_MARGIN:.0%} of the cheapest, below): "
                "configure the simpler, the headroom to run instead (below); predictive's "
                f"best run is quantile {quantile:g}.")
    else:
        head = ("Verdict: on this trace predictive does not beat the headroom users run "
                f"today for the same cut (below); its best run is quantile {quantile:g}.")
    lines = [
        f"{head} On this trace it cuts the time pods wait for capacity by {chosen.reduction:.0%} "
        f"({reactive.pending_gpu_minutes:,.0f} -> {pending:,.0f} pending GPU-minutes) for "
        f"{chosen.extra_gpu_hours:+,.0f} GPU-hours, {_money(chosen.extra_usd)} {price_text}, "
        "over cluster-autoscaler alone."
    ]
    judged = next((m for m in metrics if m.policy == chosen.policy), None)
    if judged is not None:
        lines.append(
            f"Pods that waited for capacity: {reactive.waited_pods:,} -> {judged.waited_pods:,}; "
            f"their wait p50 {reactive.waited_p50_s:,.0f} -> {judged.waited_p50_s:,.0f} s, "
            f"p95 {reactive.waited_p95_s:,.0f} -> {judged.waited_p95_s:,.0f} s.")
        if judged.multi_pod_jobs and reactive.multi_pod_jobs:
            lines.append(_locality_text(reactive, judged))
        if judged.ticks_capped_by_max or judged.ticks_capped_by_cost_cap:
            lifted = next((a for a in assessments
                           if a.policy == unlimited_name(chosen.policy)), None)
            limits = _limits_text(judged, chosen, lifted)
            if limits is not None:
                lines.append(limits)
    if chosen.peers:
        lines.append("Headroom users run today, for the same cut: " + "; ".join(
            _peer_text(p, metrics, reactive, chosen.reduction) for p in chosen.peers) + ".")
    if best is not None and ratio is not None:
        fewer = best.extra - chosen.extra_gpu_hours
        lines.append(f"In GPU-hours predictive spends {_compared(ratio)} the cheapest "
                     f"({best.family} headroom): " + (f"{fewer:,.0f} fewer." if ratio < 1 else
                                                      "no fewer for the same cut."))
    elif chosen.peers:
        lines.append("None of the headroom runs cuts waiting that much.")
    if usd_ratio is not None:
        diff = cheapest_usd.extra_usd - chosen.extra_usd
        lines.append(f"In dollars predictive spends {_compared(usd_ratio)} the cheapest "
                     f"({cheapest_usd.family} headroom, {_money(cheapest_usd.extra_usd)}): "
                     + (f"${diff:,.0f} less." if diff > 0 else f"${-diff:,.0f} more."))
    instead = None if beats else _instead(chosen, metrics, reactive)
    if instead is not None:
        lines.append(f"The headroom to run instead: {instead.policy} (cuts "
                     f"{1 - instead.pending_gpu_minutes / reactive.pending_gpu_minutes:.0%} "
                     f"for {instead.gpu_hours - reactive.gpu_hours:+,.0f} GPU-hours, "
                     f"{_money(instead.cost_usd - reactive.cost_usd)}; the overprovisioner "
                     "runs it with the `headroom:` line below instead of a forecast).")
    others = [a for a in assessments if a is not chosen and a.reduction is not None
              and _configurable(a.policy)]
    if others:
        lines.append("Other predictive runs: " + "; ".join(_other_text(a) for a in others)
                     + ".")
    head = (f"# overprovisioner config (headstart overprovisioner --config FILE); "
            f"other fields as in {config_source}:\n")
    snippet = head + (f'headroom: "{instead.policy}"\n' if instead is not None else
                      f"forecast:\n  model: {model}\n  quantile: {quantile:g}\n")
    return Verdict(chosen, quantile, tuple(lines), snippet, beats)


def _instead(chosen: Assessment, metrics: Sequence[Metrics], reactive: Metrics
             ) -> Metrics | None:
    """The headroom run to configure when predictive does not beat the peers: of each
    family's cheapest run reaching the chosen run's cut (`PeerCost.member`), the one
    costing the fewest dollars (GPU-hours when a run has no price)."""
    by_name = {m.policy: m for m in metrics}
    members = [by_name[p.member] for p in chosen.peers if p.member in by_name]
    if not members:
        return None
    priced = all(m.cost_usd == m.cost_usd for m in members + [reactive])
    return min(members, key=lambda m: (m.cost_usd if priced else m.gpu_hours, m.gpu_hours))
