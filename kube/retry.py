"""Which failed Kubernetes API calls are sent again, and how long to wait first: the one
retry rule of every headstart client (the overprovisioner's `call_with_retry`, the
admitter's `Throttle`).

Decides:
- transient, sent again after a wait: 408 Request Timeout, 429 Too Many Requests, every
  5xx but 501 Not Implemented, an API error without a status, and transport faults
  (timeouts, refused or reset connections, protocol errors);
- conflict (409), never sent again as it was: the object changed, or was created, since
  the caller looked. A blind retry would repeat a stale decision (a guarded patch or
  delete fails again; a forced apply could take over an object someone else made), so
  the caller decides again on a fresh read: a create-or-get reads what is there, a
  guarded write waits for its next look;
- permanent, everything else (400, 401, 403, 404, 405, 415, 422, 501): the same request
  fails the same way;
- the wait before attempt n+1: the server's `Retry-After` when it sends a positive one
  (API Priority and Fairness does with 429), else `base_s * 2^(n-1)`, both capped at
  `max_s`; the doubling one drawn uniformly below that ("full jitter") when the caller
  hands in a `numpy.random.Generator`, so that many clients failing together do not
  retry together.

Must not: log, read the clock (the caller's `sleep` is the only way time passes here),
or decide what a caller does after a conflict or a permanent failure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

if TYPE_CHECKING:
    import numpy as np

Verdict = Literal["transient", "conflict", "permanent"]
API_FAULTS: tuple[type[BaseException], ...] = (
    ApiException,
    urllib3.exceptions.HTTPError,  # timeouts, refused or reset connections, bad responses
    OSError,  # socket errors the client lets through (TimeoutError, ConnectionError, ...)
)
"""What a failed API call raises; anything else escaping a call is a bug and propagates."""

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """max_attempts tries in all; waits start at base_s and double, each capped at max_s."""

    max_attempts: int = 4
    base_s: float = 0.5
    max_s: float = 8.0

    def wait_s(self, attempt: int, error: BaseException,
               rng: np.random.Generator | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1 for the first)."""
        asked = retry_after(error) if isinstance(error, ApiException) else None
        if asked:
            return min(asked, self.max_s)
        bound = min(self.max_s, self.base_s * 2.0 ** (attempt - 1))
        return float(rng.uniform(0.0, bound)) if rng is not None else bound


def classify(error: BaseException) -> Verdict:
    """"transient" when the same request may succeed later, "conflict" for a 409,
    "permanent" otherwise (see the module docstring)."""
    if isinstance(error, ApiException):
        status = error.status or 0
        if status == 409:
            return "conflict"
        if status in (0, 408, 429) or (status >= 500 and status != 501):
            return "transient"
        return "permanent"
    if isinstance(error, (urllib3.exceptions.HTTPError, OSError)):
        return "transient"
    return "permanent"


def call_with_retry(
    call: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    rng: np.random.Generator | None = None,
    before: Callable[[], None] | None = None,
    on_failure: Callable[[BaseException, bool], None] | None = None,
) -> T:
    """`call()` until it returns; a transient failure is tried again after
    `policy.wait_s`, up to `policy.max_attempts` in all. The failure that ends it (not
    transient, or the last attempt's) is raised as it was.

    before: run before every attempt (the admitter's rate limit waits there).
    on_failure(error, retrying): told of every failed attempt, and whether another follows.
    """
    attempt = 1
    while True:
        if before is not None:
            before()
        try:
            return call()
        except API_FAULTS as error:
            retrying = classify(error) == "transient" and attempt < policy.max_attempts
            if on_failure is not None:
                on_failure(error, retrying)
            if not retrying:
                raise
            sleep(policy.wait_s(attempt, error, rng))
            attempt += 1


def retry_after(error: ApiException) -> float | None:
    """The `Retry-After` header's seconds, None when absent, negative or not a finite
    number."""
    headers = error.headers or {}
    raw = headers.get("Retry-After") or headers.get("retry-after")
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def status_message(error: ApiException) -> str:
    """The `message` of the Status body an API error carries, else its reason."""
    try:
        body = json.loads(error.body or "")
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])
    except (ValueError, TypeError):
        pass
    return str(error.reason or "no detail")
