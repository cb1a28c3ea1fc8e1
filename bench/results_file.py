"""bench/results.json: the one file every benchmark figure quoted in README.md and docs/ comes
from (`bench/render_tables.py` writes them into the marked regions).

Each entry is one benchmark's latest recorded figures with their provenance: the
command that reproduces them, the date, the machine and its load average while it ran.
Bench scripts update their own entry with `--record`; entries measured otherwise
(several invocations summarised by hand) say so in `note`.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results.json"


def load(path: Path = RESULTS) -> dict:
    return json.loads(path.read_text())


def machine() -> str:
    return f"{os.cpu_count()} cores ({platform.machine()}, {platform.system()}), shared"


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not on every platform
        return float("nan")


def record(name: str, figures: dict, load_before: float, note: str = "",
           path: Path = RESULTS) -> None:
    """Replace entry `name` with these figures, the command line that produced them, today's
    date, the machine and the load average (1-minute, before and after the run)."""
    results = load(path) if path.exists() else {}
    command = "python " + " ".join(["bench/" + Path(sys.argv[0]).name,
                                    *(arg for arg in sys.argv[1:] if arg != "--record")])
    results[name] = {
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "load": f"{load_before:.1f}-{load_average():.1f}",
        "note": note,
        "figures": figures,
    }
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"recorded {name} in {path}")
