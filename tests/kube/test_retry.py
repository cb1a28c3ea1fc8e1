"""The one retry rule of headstart's API clients: which failures are sent again, how long
each wait is, and how the loop gives up (an injected sleep: no test sleeps)."""

from __future__ import annotations

import numpy as np
import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from kube.retry import RetryPolicy, call_with_retry, classify, retry_after


def answered(status: int | None, retry: str | None = None) -> ApiException:
    error = ApiException(status=status, reason="answer")
    error.headers = {"Retry-After": retry} if retry is not None else {}
    return error


def failing(*errors: BaseException):
    """A call that raises `errors` in turn, then returns how many calls it took."""
    calls: list[int] = []

    def call() -> int:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return len(calls)
    return call


@pytest.mark.parametrize("error, verdict", [
    (answered(408), "transient"),
    (answered(429), "transient"),
    (answered(500), "transient"),
    (answered(502), "transient"),
    (answered(503), "transient"),
    (answered(504), "transient"),
    (answered(507), "transient"),
    (answered(None), "transient"),  # the client's own failure, no answer read
    (ProtocolError("connection reset"), "transient"),
    (ReadTimeoutError(None, "/api", "read timed out"), "transient"),
    (ConnectionRefusedError(), "transient"),
    (TimeoutError(), "transient"),
    (answered(409), "conflict"),
    (answered(400), "permanent"),
    (answered(401), "permanent"),
    (answered(403), "permanent"),
    (answered(404), "permanent"),
    (answered(405), "permanent"),
    (answered(415), "permanent"),
    (answered(422), "permanent"),
    (answered(501), "permanent"),  # a method the server lacks never starts working
    (ValueError("a bug"), "permanent"),
], ids=lambda value: str(getattr(value, "status", value)) or type(value).__name__)
def test_which_failures_are_sent_again(error, verdict):
    assert classify(error) == verdict


def test_the_wait_doubles_from_the_base_and_stops_at_the_cap():
    policy = RetryPolicy(max_attempts=9, base_s=0.5, max_s=3.0)
    # 0.5 x 2^(n-1): 0.5, 1, 2, then 4 and 8 capped at 3.
    assert [policy.wait_s(n, answered(503)) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_stays_under_the_doubling_bound_and_spreads():
    policy = RetryPolicy(max_attempts=9, base_s=0.5, max_s=3.0)
    rng = np.random.default_rng(7)
    for attempt, bound in ((1, 0.5), (3, 2.0), (6, 3.0)):
        waits = [policy.wait_s(attempt, answered(503), rng) for _ in range(200)]
        assert all(0.0 <= wait <= bound for wait in waits)
        assert max(waits) - min(waits) > bound / 2  # drawn, not one value


def test_retry_after_is_obeyed_up_to_the_cap_and_never_jittered():
    policy = RetryPolicy(max_attempts=4, base_s=0.2, max_s=10.0)
    rng = np.random.default_rng(0)
    assert policy.wait_s(1, answered(429, "3"), rng) == 3.0
    assert policy.wait_s(1, answered(429, "3600")) == 10.0
    # Absent, zero, negative, not a number or not finite: the doubling backoff (0.2 x 2).
    for header in (None, "0", "-1", "soon", "nan", "inf"):
        assert policy.wait_s(2, answered(429, header)) == pytest.approx(0.4), header
    assert retry_after(answered(429, "-1")) is None
    assert retry_after(answered(429, "2.5")) == 2.5


def test_transient_failures_are_retried_until_the_call_succeeds():
    slept: list[float] = []
    seen: list[tuple[int | None, bool]] = []
    before: list[int] = []
    result = call_with_retry(
        failing(answered(503), ProtocolError("reset"), answered(429, "1")),
        RetryPolicy(4, 0.25, 8.0), slept.append, before=lambda: before.append(1),
        on_failure=lambda error, retrying: seen.append((getattr(error, "status", None),
                                                        retrying)))
    assert result == 4
    # 0.25, 0.5, then Retry-After's 1 s; `before` ran ahead of each of the 4 attempts.
    assert slept == [0.25, 0.5, 1.0] and len(before) == 4
    assert seen == [(503, True), (None, True), (429, True)]


def test_it_gives_up_after_max_attempts_with_the_last_failure():
    slept: list[float] = []
    seen: list[bool] = []
    call = failing(answered(500), answered(502), answered(504), answered(500))
    with pytest.raises(ApiException) as raised:
        call_with_retry(call, RetryPolicy(3, 0.1, 1.0), slept.append,
                        on_failure=lambda error, retrying: seen.append(retrying))
    assert raised.value.status == 504  # the third attempt's, as it was raised
    assert slept == [0.1, 0.2] and seen == [True, True, False]


@pytest.mark.parametrize("status", [409, 404, 422, 403])
def test_a_conflict_or_a_permanent_failure_ends_it_at_once(status):
    slept: list[float] = []
    seen: list[bool] = []
    with pytest.raises(ApiException) as raised:
        call_with_retry(failing(answered(status)), RetryPolicy(4, 0.1, 1.0), slept.append,
                        on_failure=lambda error, retrying: seen.append(retrying))
    assert raised.value.status == status and slept == [] and seen == [False]


def test_a_bug_in_the_call_is_not_an_api_failure():
    told: list[BaseException] = []
    with pytest.raises(KeyError):
        call_with_retry(failing(KeyError("spec")), RetryPolicy(4, 0.1, 1.0), lambda s: None,
                        on_failure=lambda error, retrying: told.append(error))
    assert told == []
