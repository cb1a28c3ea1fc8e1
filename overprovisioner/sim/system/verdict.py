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
  its queueing decides: headstart when none does, or when reaching it costs more;
- headstart's configuration (`best_configuration`): the whole system, unless switching a
  part off does better on the trace (no worse in mean queueing, node GPU-hours and mean
  JCT, better in one, ties as above): then that configuration, the least queueing first;
  the verdict names it and says what it gains over the whole system.

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


JUDGED = ("queue_mean_min", "node_gpu_hours", "jct_mean_h")


def best_configuration(whole: dict, parts: list[dict], tie: float = TIE) -> dict:
    """The whole system's row, or the part-off row that does better (module docstring)."""
    better = [row for row in parts if _better(row, whole, tie)]
    return min(better, key=lambda r: (r["queue_mean_min"], r["node_gpu_hours"], r["arm"]),
               default=whole)


def _better(row: dict, base: dict, tie: float) -> bool:
    signs = [compare(row[key], base[key], tie) for key in JUDGED]
    return all(sign <= 0 for sign in signs) and any(sign < 0 for sign in signs)


def verdict(chosen: dict, strongest: dict | None, reaching: dict | None,
            tie: float = TIE, whole: dict | None = None) -> Verdict:
    """`chosen`: headstart's configuration (`best_configuration`), `whole` the whole
    system's row when that is another."""
    whole = whole or chosen
    name = "headstart's whole system" if chosen is whole else f"headstart {chosen['arm']}"
    peer = strongest or reaching
    if peer is None:
        return Verdict(chosen["arm"], (
            f"Verdict: run {name}; no FIFO headroom tried was within its node GPU-hours or "
            f"reached its queueing ({_figures(chosen)}).", *_instead(chosen, whole, tie)))
    queue = compare(chosen["queue_mean_min"], peer["queue_mean_min"], tie)
    hours = compare(chosen["node_gpu_hours"], peer["node_gpu_hours"], tie)
    jct = compare(chosen["jct_mean_h"], peer["jct_mean_h"], tie)
    if strongest is None:  # every peer costs more than headstart: the cheapest reaching it
        run = chosen["arm"] if queue <= 0 and hours <= 0 else peer["arm"]
        head = f"run {name}" if run == chosen["arm"] else f"keep {peer['arm']}"
    elif queue < 0 and jct > 0:
        run, head = None, f"a trade-off: {name} queues less but its jobs finish later"
    elif queue < 0 or (queue == 0 and (hours < 0 or (hours == 0 and jct < 0))):
        run, head = chosen["arm"], f"run {name}"
    elif queue > 0 or hours > 0 or jct > 0:
        run, head = peer["arm"], f"keep {peer['arm']}"
    else:
        run, head = None, "a tie: either"
    against = "the strongest peer" if strongest is not None else \
        "the cheapest peer reaching its queueing"
    lines = [
        f"Verdict: {head}. Against {against}, {peer['arm']}: mean queueing "
        f"{_cmp(chosen, peer, 'queue_mean_min', 'min', tie)}, p95 "
        f"{_cmp(chosen, peer, 'queue_p95_min', 'min', tie)}; mean JCT "
        f"{_cmp(chosen, peer, 'jct_mean_h', 'h', tie)}, p95 "
        f"{_cmp(chosen, peer, 'jct_p95_h', 'h', tie)}; node GPU-hours "
        f"{_cmp(chosen, peer, 'node_gpu_hours', '', tie)}, dollars "
        f"{_cmp(chosen, peer, 'dollars', '$', tie)}.", *_instead(chosen, whole, tie)]
    if reaching is None:
        lines.append(f"No FIFO headroom tried reaches the mean queueing of {name}.")
    elif reaching is not peer:
        lines.append(f"The cheapest FIFO headroom reaching the mean queueing of {name}, "
                     f"{reaching['arm']}, takes {reaching['node_gpu_hours']:,.0f} node "
                     f"GPU-hours (${reaching['dollars']:,.0f}) against "
                     f"{chosen['node_gpu_hours']:,.0f} (${chosen['dollars']:,.0f}).")
    lines.append(f"(A tie: within {tie:.0%} of the other figure.)")
    return Verdict(run, tuple(lines))


def _instead(chosen: dict, whole: dict, tie: float) -> tuple[str, ...]:
    """The line saying what the chosen configuration gains over the whole system."""
    if chosen is whole:
        return ()
    return (f"On this trace headstart does better {chosen['arm']} than whole: mean queueing "
            f"{_cmp(chosen, whole, 'queue_mean_min', 'min', tie)}, node GPU-hours "
            f"{_cmp(chosen, whole, 'node_gpu_hours', '', tie)}, mean JCT "
            f"{_cmp(chosen, whole, 'jct_mean_h', 'h', tie)}.",)


def _cmp(row: dict, other: dict, key: str, unit: str, tie: float) -> str:
    a, b = row[key], other[key]
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
    queue, jct = row["queue_mean_min"], row["jct_mean_h"]
    return (f"mean queueing {'-' if queue is None else _num(queue, 'min')}, mean JCT "
            f"{'-' if jct is None else _num(jct, 'h')}, {row['node_gpu_hours']:,.0f} node "
            "GPU-hours")
