"""Progress on stderr for the commands that run longer than a few seconds (an adapter:
it writes to stderr, so stdout stays the table or pure JSON).

`Progress` says one line per step with the time so far; `meanwhile(text)` says `text`
only if the block it wraps takes longer than a couple of seconds, so quick runs, and
runs that fail at once with a one-line error, print nothing else; while the block runs
on, it says again at least every 10 s (repeating the latest line, "still: ..."), so a
long command never looks hung.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

# The longest silence a long command allows itself on stderr.
HEARTBEAT_S = 10.0


class Progress:
    """Progress on stderr (stdout stays the table or pure JSON): one line per run as it
    finishes, with how many have finished and the time so far."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.total = 0
        self.done = 0
        self.last_text = ""
        self.last_said = self.started

    @contextlib.contextmanager
    def meanwhile(
        self, text: str, after_s: float = 2.0, every_s: float = HEARTBEAT_S
    ) -> Iterator[None]:
        """Say `text` only if the block takes over `after_s` (a quick load, or one that
        fails at once, prints nothing but its own result), then, while it runs, repeat
        the latest line whenever `every_s` pass without one."""
        stop = threading.Event()

        def beat() -> None:
            if stop.wait(after_s):
                return
            self.say(text)
            while not stop.wait(min(1.0, every_s / 4)):
                if time.perf_counter() - self.last_said >= every_s:
                    self.say(f"still: {self.last_text}")

        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def say(self, text: str) -> None:
        if not text.startswith("still: "):
            self.last_text = text
        self.last_said = time.perf_counter()
        print(f"[{self.elapsed():5.1f} s] {text}", file=sys.stderr, flush=True)

    def __call__(self, name: str) -> None:
        self.done += 1
        if not self.total:
            self.say(f"run {self.done} done: {name}")
        elif self.total >= self.done:
            self.say(f"run {self.done}/{self.total} done: {name}")
        else:  # the per-type counts in hindsight, a run without limits: known only now
            self.say(f"run {self.done} done ({self.done - self.total} beyond the "
                     f"{self.total} listed, chosen from their results): {name}")
