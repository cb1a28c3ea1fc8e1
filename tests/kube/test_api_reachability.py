"""An unreachable API server is said once per outage, naming it, over a real client."""

from __future__ import annotations

import logging
import socket

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from kube.client import load_api_client
from kube.reachability import ApiReachability, monitor_reachability, unreachable_reason


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def refused_error() -> BaseException:
    pool = urllib3.PoolManager(retries=0)
    with pytest.raises(urllib3.exceptions.MaxRetryError) as caught:
        pool.request("GET", f"http://127.0.0.1:{closed_port()}/api")
    return caught.value


@pytest.mark.parametrize(
    "make_error, reason",
    [
        (refused_error, "Connection refused"),
        (lambda: urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out"),
         "timed out"),
        (lambda: ApiException(status=0, reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED]"),
         "TLS: [SSL: CERTIFICATE_VERIFY_FAILED]"),
        (lambda: ApiException(status=403, reason="Forbidden"), None),  # the server answered
        (lambda: ValueError("bad JSON"), None),
    ],
    ids=["refused", "timeout", "tls", "http-403", "not-transport"],
)
def test_unreachable_reason(make_error, reason) -> None:
    assert unreachable_reason(make_error()) == reason


def test_one_warning_per_outage_and_one_line_when_it_answers(caplog) -> None:
    now = [100.0]
    reachability = ApiReachability("https://kube:6443", clock=lambda: now[0])
    caplog.set_level(logging.DEBUG, logger="headstart.kubernetes")
    for _ in range(5):
        reachability.failed("Connection refused")
    now[0] = 142.0
    assert reachability.status() == ("cannot reach the Kubernetes API server "
                                     "https://kube:6443 for 42 s (Connection refused)")
    reachability.answered()
    reachability.answered()
    assert reachability.status() is None
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "cannot reach the Kubernetes API server https://kube:6443 (Connection "
                    "refused); retrying with backoff until it answers"),
        ("INFO", "the Kubernetes API server https://kube:6443 answers again after 42 s"),
    ]


def test_a_real_client_reports_down_then_up(tmp_path, caplog) -> None:
    from kubernetes import client

    from tests.fakekube import FakeKube

    port = closed_port()
    late = FakeKube()
    late.url = f"http://127.0.0.1:{port}"
    kubeconfig = late.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = load_api_client(kubeconfig)
    reachability = monitor_reachability(api_client)
    core = client.CoreV1Api(api_client)
    caplog.set_level(logging.WARNING)
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        core.list_node(_request_timeout=2)
    assert not reachability.reachable
    # One attempt per request: no urllib3 "Retrying (Retry(total=...))" warnings.
    assert [r.name for r in caplog.records] == ["headstart.kubernetes"]
    late.start(port)
    try:
        assert core.list_node(_request_timeout=2).items == []
        assert reachability.reachable
    finally:
        late.stop()
