"""Run the test suite with CPU burners beside it: a test that needs the machine to be
fast fails here before it fails for a user with other work on their laptop.

    python -m tests.under_load [--per-core 2] [PYTEST ARGS...]

Starts `--per-core` busy processes per CPU this process may use, runs pytest (the
arguments after the options, default the whole suite) at normal priority, stops the
burners, and prints the pytest summary with the wall time and the load average. Exit
status: pytest's.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time


def _burn(stop: multiprocessing.synchronize.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.under_load",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-core", type=int, default=2,
                        help="busy processes per available CPU (default 2)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.per_core < 0:
        parser.error(f"--per-core: expected 0 or more, got {args.per_core}")
    cores = len(os.sched_getaffinity(0))
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
               for _ in range(args.per_core * cores)]
    for burner in burners:
        burner.start()
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                 "-o", "addopts=", "-q", *pytest_args])
    finally:
        load = os.getloadavg()
        stop.set()
        for burner in burners:
            burner.join(5)
    took = time.monotonic() - started
    print(f"under load: {len(burners)} burners on {cores} CPUs, {took:.0f} s, load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; pytest exit {result.returncode}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
