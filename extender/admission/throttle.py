"""How the admitter's writes reach the API server: at most `qps` a second (bursts of
`burst`), each failed call retried by `kube.retry`'s rule, as client-go's rate limiter
and `WithRetry` do.

Decides: when a call may go (a token bucket shared by every worker thread), and the
admitter's retry settings: `attempts` tries in all, waits of the server's `Retry-After`
or 0.2 s doubling, at most `MAX_WAIT_SECONDS` (no jitter: the token bucket already
spreads the workers). Which failures are retried is `kube.retry`'s (408, 429, 5xx but
501, transport faults); the others (404, 409, 422: the object changed or is gone) are
the caller's, at once.

Must not: decide what to write; log (the caller logs what finally failed).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kube.retry import RetryPolicy, call_with_retry

FIRST_WAIT_SECONDS = 0.2
MAX_WAIT_SECONDS = 10.0
"""The longest wait before a retry, whatever `Retry-After` asks (the round that
planned the write is stale by then)."""

T = TypeVar("T")


class Throttle:
    """A token bucket and a retry loop, safe to share between threads."""

    def __init__(self, qps: float, burst: int, attempts: int = 4,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.qps = qps
        self.burst = burst
        self.policy = RetryPolicy(attempts, FIRST_WAIT_SECONDS, MAX_WAIT_SECONDS)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._at = clock()
        self._lock = threading.Lock()
        self.retries_total = 0
        self.waited_seconds_total = 0.0

    def acquire(self) -> None:
        """Block until a call may go."""
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
                self._at = now
                if self._tokens >= 1 - 1e-9:  # float sums of waits land a hair short
                    self._tokens = max(0.0, self._tokens - 1)
                    return
                wait = (1 - self._tokens) / self.qps
            self.waited_seconds_total += wait
            self._sleep(wait)

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)` once a token is free, retried as the module says."""
        return call_with_retry(functools.partial(function, *args, **kwargs), self.policy,
                               self._sleep, before=self.acquire, on_failure=self._failed)

    def _failed(self, error: BaseException, retrying: bool) -> None:
        if retrying:
            self.retries_total += 1


class Throttled:
    """An API object (`CoreV1Api`, `CustomObjectsApi`) whose every call goes through
    `throttle`: the writers keep calling the client's own methods."""

    def __init__(self, api: Any, throttle: Throttle) -> None:
        self._api = api
        self._throttle = throttle

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._api, name)
        if not callable(attribute):
            return attribute
        return functools.partial(self._throttle.call, attribute)
