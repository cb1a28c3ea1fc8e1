"""The whole-system replay's verdict: which configuration to run, what it gains in
queueing and completion time, and what it costs, against the strongest peer.

Decides, from summary rows (`gangs.table.summarize`, or their medians over seeds:
`repeats.over_seeds`) of headstart's configuration, the strongest peer (`peers.choose`)
and the cheapest peer reaching its queueing:
- a tie (`band`): two figures within 2% (`TIE`) of each other, or within the
  run-to-run noise where that is larger: the spread of either row's figure across node
  start-up seeds, (largest - smallest) / median. Each replay is deterministic for its
  seed, but another seed's start-up draws cascade through the admitter's rounds: on
  the synthetic workload they move mean queueing by far more than 2%
  (docs/simulator.md);
- headstart is recommended when it queues less at no more node GPU-hours, or queues as
  much for fewer, or ties both and finishes jobs sooner; the peer when it queues less,
  or ties and costs less or finishes sooner; a tie on all three is called a tie. Less
  queueing bought with later completions (smaller gangs run longer) is called a
  trade-off, with both figures;
- without a peer within headstart's node GPU-hours, the cheapest peer reaching its
  queueing decides: headstart when none does, or when reaching it costs more;
- headstart's configuration (`best_configuration`): the whole system, unless switching a
  part off does better on the trace (no worse in mean queueing, node GPU-hours and mean
  JCT, better in one, each beyond the whole system's tie band): then that
  configuration, the least queueing first; the verdict names it and says what it gains.

Must not: run replays, read files, print.
"""

from __future__ import annotations

from dataclasses import dataclass

TIE = 0.02
"""Figures within this share of each other are a tie (or within the seeds' spread)."""

JUDGED = ("queue_mean_min", "node_gpu_hours", "jct_mean_h")


@dataclass(frozen=True)
class Verdict:
    """run: the arm to run (None: a tie or a trade-off); lines: the verdict, first line
    first."""

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


def band(a: dict, b: dict, key: str, tie: float = TIE) -> float:
    """The tie margin between rows `a` and `b` on `key`: `tie`, or either row's spread
    across seeds where larger."""
    return max(tie, *((row.get("spread") or {}).get(key) or 0.0 for row in (a, b)))


def differs(a: dict, b: dict, key: str, tie: float = TIE) -> int:
    """`compare` of `a` against `b` on `key`, within their tie band."""
    return compare(a[key], b[key], band(a, b, key, tie))


def best_configuration(whole: dict, parts: list[dict], tie: float = TIE) -> dict:
    """The whole system's row, or the part-off row that does better (module docstring)."""
    better = [row for row in parts if _better(row, whole, tie)]
    return min(better, key=lambda r: (r["queue_mean_min"], r["node_gpu_hours"], r["arm"]),
               default=whole)


def _better(row: dict, base: dict, tie: float) -> bool:
    signs = [differs(row, base, key, tie) for key in JUDGED]
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
    queue, hours, jct = (differs(chosen, peer, key, tie) for key in JUDGED)
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
        f"Verdict: {head}. Against {against}, {peer['arm']}{_over(chosen, peer)}: mean "
        f"queueing {_cmp(chosen, peer, 'queue_mean_min', 'min', tie)}, p95 "
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
    lines.append(_tie_line(chosen, peer, tie))
    return Verdict(run, tuple(lines))


def _over(row: dict, peer: dict) -> str:
    seeds = row.get("seed_list")
    if not seeds or len(seeds) < 2 or peer.get("seed_list") != seeds:
        return ""
    return f", medians over node start-up seeds {', '.join(map(str, seeds))}"


def _tie_line(chosen: dict, peer: dict, tie: float) -> str:
    widened = [f"{words} {band(chosen, peer, key, tie):.0%}"
               for key, words in (("queue_mean_min", "mean queueing"),
                                  ("jct_mean_h", "mean JCT"),
                                  ("node_gpu_hours", "node GPU-hours"))
               if band(chosen, peer, key, tie) > tie]
    text = f"(A tie: within {tie:.0%} of the other figure"
    if widened:
        text += ", or within the spread across seeds where larger: " + ", ".join(widened)
    return text + ".)"


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
        text += f" ({a / b:.2f}x{', a tie' if differs(row, other, key, tie) == 0 else ''})"
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
