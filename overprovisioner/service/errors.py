"""The overprovisioner's API failures as it reports them: temporary (heals by itself) or
permanent (a person must act), and the error that names the call that failed.

Decides:
- what is retried and how long to wait: nothing of its own, `kube.retry` (the one rule
  of every headstart client: 408, 429, 5xx but 501 and transport faults are sent again
  with jittered doubling backoff; a 409 never is);
- the report class of a failure, for the log, `/plan` and
  `headstart_overprovisioner_api_errors_total`: "temporary" for what `kube.retry` retries
  and for a 409 (the object changed since the tick looked: the next tick looks again and
  decides afresh), "permanent" for the rest (400, 401, 403, 404 such as a CRD that is not
  installed, 405, 415, 422) and for a server-side-apply conflict with another field
  manager (it stays until someone changes the object); those are reported and the tick
  moves on without crash-looping.

Must not: log, or read the clock (the caller's `sleep` is the only way time passes here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

import numpy as np
from kubernetes.client.exceptions import ApiException

from common.errors import HeadstartError
from kube import retry as kube_retry
from kube.labels import OWNER_ANNOTATION
from kube.retry import API_FAULTS, RetryPolicy, status_message

ErrorClass = Literal["temporary", "permanent"]
T = TypeVar("T")


class ApiCallError(HeadstartError):
    """An API call that failed for good: at once (permanent, or a 409 conflict), or after
    every retry.

    kind: "temporary" | "permanent"; status: the HTTP status (None for transport errors);
    what: the call, e.g. "apply apps/v1 Deployment headstart/headstart-placeholder-g5-xlarge".
    """

    def __init__(self, what: str, kind: ErrorClass, status: int | None, detail: str) -> None:
        super().__init__(f"{what}: {kind} API error"
                         f"{f' {status}' if status is not None else ''}: {detail}")
        self.what = what
        self.kind = kind
        self.status = status
        self.detail = detail


class NotOwnedError(HeadstartError):
    """An object headstart wants to write exists but is not the overprovisioner's
    (no `headstart.io/owner: overprovisioner` annotation, objects.owned_by_overprovisioner).

    Permanent: headstart never modifies or deletes what it did not create. The user must
    rename or delete that object (or change headstart's namespace)."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} exists but is not managed by headstart's overprovisioner (no annotation "
            f"{OWNER_ANNOTATION}=overprovisioner); headstart leaves it untouched. Delete or "
            "rename it, or point headstart at another namespace"
        )
        self.what = what
        self.kind: ErrorClass = "permanent"
        self.status: int | None = None


def classify(error: BaseException) -> ErrorClass:
    """"temporary" when it heals without a person (a retry, or the next tick's fresh
    look), "permanent" otherwise."""
    if isinstance(error, NotOwnedError):
        return "permanent"
    verdict = kube_retry.classify(error)
    if verdict == "conflict":
        return "permanent" if "Apply failed" in status_message(error) else "temporary"
    return "temporary" if verdict == "transient" else "permanent"


def call_with_retry(
    what: str,
    call: Callable[[], T],
    policy: RetryPolicy,
    rng: np.random.Generator,
    sleep: Callable[[float], None],
    on_error: Callable[[ErrorClass, BaseException], None] | None = None,
) -> T:
    """Run `call` under `kube.retry`; raise ApiCallError naming `what` when it fails for good.

    on_error(kind, error) is told about every failed attempt (for metrics). Errors
    that are not API or transport errors (bugs) propagate unchanged.
    """

    def failed(error: BaseException, retrying: bool) -> None:
        if on_error is not None:
            on_error(classify(error), error)

    try:
        return kube_retry.call_with_retry(call, policy, sleep, rng=rng, on_failure=failed)
    except API_FAULTS as error:
        if isinstance(error, ApiException):
            status, detail = error.status, status_message(error)
        else:
            status, detail = None, f"{type(error).__name__}: {error}"
        raise ApiCallError(what, classify(error), status, detail) from None
