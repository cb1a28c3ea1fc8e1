"""The admitter's API throttle: a token bucket shared by its writers, and retries that
honour the API server's Retry-After (a fake clock: no test sleeps)."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from extender.admission.throttle import MAX_WAIT_SECONDS, Throttle
from kube.retry import retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def refused(status: int, retry: str | None = None) -> ApiException:
    error = ApiException(status=status, reason="refused")
    error.headers = {"Retry-After": retry} if retry is not None else {}
    return error


def failing(*errors: Exception):
    """A call that raises `errors` in turn, then returns how many calls it took."""
    calls = []

    def call() -> int:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return len(calls)
    return call


def test_a_burst_goes_at_once_and_the_rest_at_the_rate():
    clock = Clock()
    throttle = Throttle(qps=10, burst=5, clock=clock, sleep=clock.sleep)
    for _ in range(5):
        throttle.acquire()
    assert clock.now == 0.0
    for _ in range(10):
        throttle.acquire()
    # 10 more at 10 a second: one second.
    assert clock.now == pytest.approx(1.0)
    assert throttle.waited_seconds_total == pytest.approx(1.0)


def test_429_waits_what_retry_after_says_then_succeeds():
    clock = Clock()
    throttle = Throttle(qps=1000, burst=10, clock=clock, sleep=clock.sleep)
    assert throttle.call(failing(refused(429, "3"), refused(503))) == 3
    # Retry-After 3 s, then the doubling backoff's second step (0.2 s x 2).
    assert clock.slept == [3.0, 0.4]
    assert throttle.retries_total == 2


def test_retry_after_is_capped_and_a_bad_header_falls_back_to_the_backoff():
    clock = Clock()
    throttle = Throttle(qps=1000, burst=10, clock=clock, sleep=clock.sleep)
    throttle.call(failing(refused(429, "3600"), refused(429, "soon")))
    assert clock.slept == [MAX_WAIT_SECONDS, 0.4]
    assert retry_after(refused(429, "-1")) is None


@pytest.mark.parametrize("status", [404, 409, 422, 403])
def test_an_answer_about_the_object_is_the_callers_at_once(status):
    clock = Clock()
    throttle = Throttle(qps=1000, burst=10, clock=clock, sleep=clock.sleep)
    call = failing(refused(status))
    with pytest.raises(ApiException) as raised:
        throttle.call(call)
    assert raised.value.status == status and clock.slept == []


def test_transport_faults_are_retried_and_the_last_is_raised():
    clock = Clock()
    throttle = Throttle(qps=1000, burst=10, attempts=3, clock=clock, sleep=clock.sleep)
    assert throttle.call(failing(ProtocolError("reset"), ConnectionResetError())) == 3
    with pytest.raises(ApiException):
        throttle.call(failing(refused(500), refused(500), refused(500)))
    assert throttle.retries_total == 4
