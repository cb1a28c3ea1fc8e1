"""The overprovisioner's report classes over `kube.retry`, and the error naming the call."""

from __future__ import annotations

import json

import numpy as np
import pytest
from kubernetes.client.exceptions import ApiException

from kube.retry import RetryPolicy
from overprovisioner.service.errors import ApiCallError, NotOwnedError, call_with_retry, classify


def answered(status: int, message: str = "") -> ApiException:
    error = ApiException(status=status, reason="answer")
    error.body = json.dumps({"kind": "Status", "message": message}) if message else None
    return error


@pytest.mark.parametrize("error, kind", [
    (answered(503), "temporary"),
    (answered(408), "temporary"),
    (answered(409, "Operation cannot be fulfilled on deployments.apps \"x\": the object "
                   "has been modified"), "temporary"),
    (answered(409, "Precondition failed: UID in precondition: a, UID in object meta: b"),
     "temporary"),
    (answered(409, "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"),
     "permanent"),
    (answered(403), "permanent"),
    (answered(404), "permanent"),
    (NotOwnedError("apps/v1 Deployment headstart/x"), "permanent"),
], ids=["503", "408", "stale-version", "precondition", "field-manager", "403", "404",
        "not-owned"])
def test_report_class(error, kind):
    assert classify(error) == kind


def test_the_error_names_the_call_the_status_and_the_servers_message():
    kinds: list[str] = []
    calls = iter([answered(503), answered(503)])

    def call() -> None:
        raise next(calls)

    with pytest.raises(ApiCallError) as raised:
        call_with_retry("list nodes", call, RetryPolicy(2, 0.01, 0.02),
                        np.random.default_rng(0), lambda s: None,
                        lambda kind, error: kinds.append(kind))
    assert (raised.value.kind, raised.value.status) == ("temporary", 503)
    assert str(raised.value).startswith("list nodes: temporary API error 503: answer")
    assert kinds == ["temporary", "temporary"]
