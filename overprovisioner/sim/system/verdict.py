"""The whole-system replay's verdict: which configuration to run, what it gains in
queueing and completion time, and what it costs, against the strongest peer.

Decides, from the summary rows (`gangs.table.summarize`) of headstart's whole system,
the strongest peer (`peers.choose`: the least mean queueing within the whole system's
node GPU-hours) and the cheapest peer reaching its queueing:
- two figures are a tie when they are within `TIE` (2%) of the peer's: each replay is
  deterministic for its seed, and the node start-up draws of another seed move the
  means by about that much (docs/simulator.md gives the spread measured);
- headstart is recommended when it queues less at no more node GPU-hours, or queues as
  much for fewer, or ties both and finishes jobs sooner; the peer when it queues less,
  or ties and costs less or finishes sooner; a tie on all three is called a tie. Less
  queueing bought with later completions (smaller gangs run longer) is called a
  trade-off, with both figures;
- without a peer within the whole system's node GPU-hours, the cheapest peer reaching
  its queueing decides: headstart when none does, or when reaching it costs more.

Must not: run replays, read files, print.
"""

from __future__ import annotations

from dataclasses import dataclass

TIE = 0.02
"""Figures within this share of the peer's are a tie."""


@dataclass(frozen=True)
class Verdict:
    """run: the arm to run (None: a tie); lines: the verdict, first line first."""

    run: str | None
    lines: tuple[str, ...]


def compare(value: float | None, base: float | None, tie: float = TIE) -> int:
    """-1 below `base` by more than the tie margin, 1 above it, 0 a tie (or unknown)."""
    if value is None or base is None:
        return 0
    if value < base * (1 - tie) - 1e-9:
        return -1
    if value > base * (1 + tie) + 1e-9:
        return 1
    return 0


def verdict(whole: dict, strongest: dict | None, reaching: dict | None,
            tie: float = TIE) -> Verdict:
    peer = strongest or reaching
    if peer is None:
        return Verdict(whole["arm"], (
            f"Verdict: run headstart's whole system; no FIFO headroom tried was within "
            f"its node GPU-hours or reached its queueing ({_figures(whole)}).",))
    queue = compare(whole["queue_mean_min"], peer["queue_mean_min"], tie)
    hours = compare(whole["node_gpu_hours"], peer["node_gpu_hours"], tie)
    jct = compare(whole["jct_mean_h"], peer["jct_mean_h"], tie)
    if strongest is None:  # every peer costs more than headstart: the cheapest reaching it
        run = whole["arm"] if queue <= 0 and hours <= 0 else peer["arm"]
        head = "run headstart's whole system" if run == whole["arm"] else \
            f"keep {peer['arm']}"
    elif queue < 0 and jct > 0:
        run, head = None, "a trade-off: headstart's whole system queues less but its jobs " \
                          "finish later"
    elif queue < 0 or (queue == 0 and (hours < 0 or (hours == 0 and jct < 0))):
        run, head = whole["arm"], "run headstart's whole system"
    elif queue > 0 or hours > 0 or jct > 0:
        run, head = peer["arm"], f"keep {peer['arm']}"
    else:
        run, head = None, "a tie: either"
    against = "the strongest peer" if strongest is not None else \
        "the cheapest peer reaching its queueing"
    lines = [
        f"Verdict: {head}. Against {against}, {peer['arm']}: mean queueing "
        f"{_cmp(whole, peer, 'queue_mean_min', 'min', tie)}, p95 "
        f"{_cmp(whole, peer, 'queue_p95_min', 'min', tie)}; mean JCT "
        f"{_cmp(whole, peer, 'jct_mean_h', 'h', tie)}, p95 "
        f"{_cmp(whole, peer, 'jct_p95_h', 'h', tie)}; node GPU-hours "
        f"{_cmp(whole, peer, 'node_gpu_hours', '', tie)}, dollars "
        f"{_cmp(whole, peer, 'dollars', '$', tie)}."]
    if reaching is None:
        lines.append("No FIFO headroom tried reaches headstart's mean queueing.")
    elif reaching is not peer:
        lines.append(f"The cheapest FIFO headroom reaching headstart's mean queueing, "
                     f"{reaching['arm']}, takes {reaching['node_gpu_hours']:,.0f} node "
                     f"GPU-hours (${reaching['dollars']:,.0f}) against headstart's "
                     f"{whole['node_gpu_hours']:,.0f} (${whole['dollars']:,.0f}).")
    lines.append(f"(A tie: within {tie:.0%} of the peer's figure.)")
    return Verdict(run, tuple(lines))


def _cmp(whole: dict, peer: dict, key: str, unit: str, tie: float) -> str:
    a, b = whole[key], peer[key]
    if a is None or b is None:
        return "-"
    text = f"{_num(a, unit)} against {_num(b, unit)}"
    if b:
        text += f" ({a / b:.2f}x{', a tie' if compare(a, b, tie) == 0 else ''})"
    return text


def _num(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:,.0f}"
    if unit == "":
        return f"{value:,.0f}"
    return f"{value:,.1f} {unit}" if unit == "min" else f"{value:,.2f} {unit}"


def _figures(row: dict) -> str:
    return (f"mean queueing {_num(row['queue_mean_min'], 'min')}, mean JCT "
            f"{_num(row['jct_mean_h'], 'h')}, {row['node_gpu_hours']:,.0f} node GPU-hours")
