"""What `headstart simulate` and `headstart demo` print around the runs (an adapter: it
writes to stdout and stderr): progress on stderr, the verdict, the table and each judged
run's details on stdout; and the demo's `--quick` selection.
"""

from __future__ import annotations

import sys
import time
from typing import Any

# `headstart demo --quick`: fewer days, fewer policies (one of each peer family).
QUICK_DAYS = 4.0
QUICK_POLICIES = ("reactive", "static:1", "static:2", "predictive", "predictive:0.97", "oracle")


def quick_policies(policies: tuple[str, ...]) -> tuple[str, ...]:
    """`--quick`: QUICK_POLICIES plus the middle proportional ratio and schedule of the
    full list (one member of each peer family besides static)."""
    from overprovisioner.sim.policy_names import parse_policy_name

    kept = list(QUICK_POLICIES)
    for family in ("proportional", "scheduled"):
        members = [p for p in policies if parse_policy_name(p).kind == family]
        if members:
            kept.insert(-3, members[len(members) // 2])
    return tuple(kept)


def build_verdict_for(metrics: list, config: Any, workload: Any) -> Any:
    from overprovisioner.sim.compare import assess_all
    from overprovisioner.sim.verdict import build_verdict

    forecast = config.service.forecast
    return build_verdict(metrics, assess_all(metrics), forecast.quantile, forecast.model,
                         price_text(workload.types), config.service.source)


def price_text(types: Any) -> str:
    """Which prices the dollars are: the catalog's on-demand list prices and their source."""
    if not types:
        return "at the catalog's on-demand prices"
    sources = sorted({f"{t.price_source or 'catalog'}, {t.price_date}".strip(", ")
                      for t in types})
    return f"at on-demand list prices ({'; '.join(sources)})"


def print_summary(verdict: Any, workload_text: str, service_text: str, metrics: list) -> None:
    """The verdict first, then what ran, the table and each judged run in detail."""
    from overprovisioner.sim.compare import assess_all
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


class Progress:
    """Progress on stderr (stdout stays the table or pure JSON): one line per run with
    its number and the time so far."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.total = 0
        self.done = 0

    def meanwhile(self, text: str, after_s: float = 2.0):
        """A context manager that says `text` only if its block takes over `after_s` (a
        quick load, or one that fails at once, prints nothing but its own result)."""
        import contextlib
        import threading

        @contextlib.contextmanager
        def waiting():
            timer = threading.Timer(after_s, self.say, (text,))
            timer.daemon = True
            timer.start()
            try:
                yield
            finally:
                timer.cancel()
        return waiting()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def say(self, text: str) -> None:
        print(f"[{self.elapsed():5.1f} s] {text}", file=sys.stderr, flush=True)

    def __call__(self, name: str) -> None:
        self.done += 1
        of = f"/{self.total}" if self.total >= self.done else ""
        self.say(f"run {self.done}{of}: {name}")
