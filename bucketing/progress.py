"""Progress on stderr for the commands that run longer than a few seconds (an adapter:
it writes to stderr, so stdout stays the table or pure JSON).

`Progress` says one line per step with the time so far; `meanwhile(text)` says `text`
only if the block it wraps takes longer than a couple of seconds, so quick runs, and
runs that fail at once with a one-line error, print nothing else.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator


class Progress:
    """Progress on stderr (stdout stays the table or pure JSON): one line per run with
    its number and the time so far."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.total = 0
        self.done = 0

    @contextlib.contextmanager
    def meanwhile(self, text: str, after_s: float = 2.0) -> Iterator[None]:
        """Say `text` only if the block takes over `after_s` (a quick load, or one that
        fails at once, prints nothing but its own result)."""
        timer = threading.Timer(after_s, self.say, (text,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def say(self, text: str) -> None:
        print(f"[{self.elapsed():5.1f} s] {text}", file=sys.stderr, flush=True)

    def __call__(self, name: str) -> None:
        self.done += 1
        of = f"/{self.total}" if self.total >= self.done else ""
        self.say(f"run {self.done}{of}: {name}")
