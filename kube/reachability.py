"""Whether the Kubernetes API server answers, said once per outage, for every service.

Decides: what counts as "unreachable" (the request never got an HTTP answer: connection
refused or reset, DNS failure, a timeout, a TLS failure; any HTTP status, even 403 or
500, means the server is there), and what is logged: one warning naming the server and
the reason when an outage starts, one line when it answers again, nothing in between.
The callers keep retrying with their own backoff and log their own failures at debug
level while the server is unreachable; `/readyz` reads `reachable`.

Must not: retry, sleep or change a request; it only watches them go by.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("headstart.kubernetes")


def unreachable_reason(error: BaseException) -> str | None:
    """Why the request got no HTTP answer ("Connection refused", "timed out", ...), or None
    when `error` is not a transport failure (the server answered)."""
    import urllib3.exceptions
    from kubernetes.client.exceptions import ApiException

    if isinstance(error, ApiException):
        # The client's REST layer turns a TLS failure into status 0 with reason
        # "SSLError\n<message>"; any other ApiException carries the server's answer.
        reason = str(error.reason or "")
        if error.status == 0 and reason.startswith("SSLError"):
            return "TLS: " + " ".join(reason.split()[1:])[:200]
        return None
    if not isinstance(error, (urllib3.exceptions.HTTPError, OSError)):
        return None
    timed_out = False
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and getattr(cause, "strerror", None):
            return str(cause.strerror)  # "Connection refused", "Name or service not known"
        # urllib3's NewConnectionError subclasses its ConnectTimeoutError: not a timeout.
        if isinstance(cause, TimeoutError) or (
            isinstance(cause, urllib3.exceptions.TimeoutError)
            and not isinstance(cause, urllib3.exceptions.NewConnectionError)
        ):
            timed_out = True
        nested = getattr(cause, "reason", None)
        cause = (nested if isinstance(nested, BaseException) else None) or (
            cause.__cause__ or cause.__context__)
    if timed_out:
        return "timed out"
    return " ".join(f"{type(error).__name__}: {error}".split())[:200]


class ApiReachability:
    """Reachability of one API server, updated by every request (thread-safe)."""

    def __init__(self, server: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.server = server
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self.reason: str | None = None

    @property
    def reachable(self) -> bool:
        return self._down_since is None

    def status(self) -> str | None:
        """None while reachable, else one line for /readyz."""
        with self._lock:
            if self._down_since is None:
                return None
            return (f"cannot reach the Kubernetes API server {self.server} for "
                    f"{self._clock() - self._down_since:.0f} s ({self.reason})")

    def answered(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            outage = self._clock() - self._down_since
            self._down_since, self.reason = None, None
        log.info("the Kubernetes API server %s answers again after %.0f s", self.server, outage,
                 extra={"server": self.server, "outage_seconds": round(outage, 1)})

    def failed(self, reason: str) -> None:
        with self._lock:
            if self._down_since is not None:
                self.reason = reason
                return
            self._down_since, self.reason = self._clock(), reason
        log.warning("cannot reach the Kubernetes API server %s (%s); retrying with backoff "
                    "until it answers", self.server, reason,
                    extra={"server": self.server, "reason": reason})


class MonitoredRestClient:
    """The client's REST layer with every request reported to an ApiReachability; any
    other attribute is the wrapped client's (ApiClient.close uses its pool manager)."""

    def __init__(self, rest_client: Any, reachability: ApiReachability) -> None:
        self._rest_client = rest_client
        self._reachability = reachability

    def request(self, *args: Any, **kwargs: Any) -> Any:
        try:
            response = self._rest_client.request(*args, **kwargs)
        except Exception as error:
            reason = unreachable_reason(error)
            if reason is None:
                self._reachability.answered()
            else:
                self._reachability.failed(reason)
            raise
        self._reachability.answered()
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rest_client, name)


def monitor_reachability(api_client: Any) -> ApiReachability:
    """Report every request `api_client` makes to a new ApiReachability, and return it."""
    reachability = ApiReachability(api_client.configuration.host)
    api_client.rest_client = MonitoredRestClient(api_client.rest_client, reachability)
    return reachability
