"""What `headstart simulate` and `headstart demo` print around the runs (an adapter: it
writes to stdout and stderr): progress on stderr, the verdict, the table and each judged
run's details on stdout; and the demo's `--quick` selection.
"""

from __future__ import annotations

from typing import Any

from common.progress import Progress

__all__ = ["Progress", "QUICK_DAYS", "build_verdict_for", "print_summary", "quick_policies"]

# `headstart demo --quick`: fewer days, fewer policies (one of each peer family).
QUICK_DAYS = 3.0
QUICK_POLICIES = ("reactive", "static:1", "static:2", "predictive", "predictive:0.97", "oracle")


def quick_policies(policies: tuple[str, ...]) -> tuple[str, ...]:
    """`--quick`: QUICK_POLICIES plus the middle proportional ratio and schedule of the
    full list (one member of each peer family besides static)."""
    from overprovisioner.policy_names import parse_policy_name

    kept = list(QUICK_POLICIES)
    for family in ("proportional", "scheduled"):
        members = [p for p in policies if parse_policy_name(p).kind == family]
        if members:
            kept.insert(-3, members[len(members) // 2])
    return tuple(kept)


def build_verdict_for(metrics: list, config: Any, workload: Any) -> Any:
    from overprovisioner.sim.assess import assess_all
    from overprovisioner.sim.verdict import build_verdict

    forecast = config.service.forecast
    return build_verdict(metrics, assess_all(metrics), forecast.quantile, forecast.model,
                         price_text(workload.types), config.service.source)


def price_text(types: Any) -> str:
    """Which prices the dollars are: the catalog's on-demand list prices and their source."""
    if not types:
        return "at the catalog's on-demand prices"
    sources = sorted({f"{t.price_source or 'catalog'}, "
                      + (t.price_date or "undated: the catalog gives no price_date")
                      for t in types})
    return f"at on-demand list prices ({'; '.join(sources)})"


def print_summary(verdict: Any, workload_text: str, service_text: str, metrics: list) -> None:
    """The verdict first, then what ran, the table and each judged run in detail."""
    from overprovisioner.sim.assess import assess_all
    from overprovisioner.sim.table import LEGEND, format_table

    for line in verdict.lines:
        print(line)
    if verdict.snippet:
        print(verdict.snippet)
    print(workload_text)
    print(service_text)
    print(format_table(metrics))
    print(f"({LEGEND})")
    for assessment in assess_all(metrics):
        for line in assessment.lines():
            print(line)
