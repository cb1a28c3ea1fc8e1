"""How `headstart check` shows its results: one line per check (status, name, what was
found) with a `fix:` line under each warning and failure, then a count; or, with
`--output json`, one JSON document with the same results.

Must not: decide any check or the exit status (core/result.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from headstart.check.core.result import Result, Status, counts

MARKS = {Status.OK: "ok", Status.WARN: "warn", Status.FAIL: "FAIL", Status.SKIP: "skip"}


def text(results: Sequence[Result], mode: str, server: str) -> str:
    width = max((len(r.name) for r in results), default=0)
    lines = [f"headstart check ({mode}) against {server}"]
    for result in results:
        lines.append(f"{MARKS[result.status]:<5} {result.name:<{width}}  {result.message}")
        if result.fix:
            lines.append(f"{'':<5} {'':<{width}}  fix: {result.fix}")
    tally = counts(results)
    lines.append(", ".join(f"{n} {status}" for status, n in tally.items()))
    return "\n".join(lines) + "\n"


def as_json(results: Sequence[Result], mode: str, server: str) -> str:
    document = {
        "mode": mode,
        "server": server,
        "ok": not any(r.status is Status.FAIL for r in results),
        "counts": counts(results),
        "checks": [{"name": r.name, "status": r.status.value, "message": r.message,
                    "fix": r.fix} for r in results],
    }
    return json.dumps(document, indent=2) + "\n"
