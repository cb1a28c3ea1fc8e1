"""How the admitter's writes reach the API server: at most `qps` a second (bursts of
`burst`), each retried on 429 and 5xx after the server's `Retry-After` or a doubling
backoff, as client-go's rate limiter and `WithRetry` do.

Decides: when a call may go (a token bucket shared by every worker thread), whether a
failed call is retried (429 Too Many Requests, 500, 502, 503, 504, and transport
faults, `attempts` times in all) and how long to wait first (`Retry-After` seconds,
at most `MAX_WAIT_SECONDS`, else 0.2 s doubling). Other errors (404, 409, 422: the
object changed or is gone) are the caller's, at once.

Must not: decide what to write; log (the caller logs what finally failed).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as TransportError

RETRIED = frozenset({429, 500, 502, 503, 504})
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
        self.attempts = attempts
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
        for attempt in range(self.attempts):
            self.acquire()
            try:
                return function(*args, **kwargs)
            except ApiException as error:
                if error.status not in RETRIED or attempt == self.attempts - 1:
                    raise
                wait = retry_after(error) or FIRST_WAIT_SECONDS * 2 ** attempt
            except (TransportError, OSError):
                if attempt == self.attempts - 1:
                    raise
                wait = FIRST_WAIT_SECONDS * 2 ** attempt
            self.retries_total += 1
            self._sleep(min(wait, MAX_WAIT_SECONDS))
        raise AssertionError("unreachable: the last attempt returns or raises")


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


def retry_after(error: ApiException) -> float | None:
    """The `Retry-After` header's seconds (the API server's priority and fairness sends
    it with 429), None when absent or not a number."""
    headers = error.headers or {}
    raw = headers.get("Retry-After") or headers.get("retry-after")
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None
