"""`headstart overprovisioner --dry-run` as a real process against the fake API server:
an API server that is down at start is one log line and a 503 /readyz, then ready once it
answers; SIGINT and SIGTERM stop it inside the pod's grace period even during a stuck
tick; every log line is one JSON object."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from overprovisioner.service.server import SHUTDOWN_BUDGET_S
from tests.fakekube import FakeKube

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(tmp_path: Path, api_url: str, *extra: str) -> tuple[subprocess.Popen, str]:
    kube = FakeKube()
    kube.url = api_url
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    port = free_port()
    config = tmp_path / "op.yaml"
    # No history_path: the default, headstart-history.sqlite in the working directory.
    config.write_text(yaml.safe_dump({
        "instance_types": ["g5.xlarge"], "host": "127.0.0.1", "port": port,
    }))
    process = subprocess.Popen(
        [sys.executable, "-m", "headstart", "overprovisioner", "--config", str(config),
         "--kubeconfig", kubeconfig, "--dry-run", *extra],
        stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )
    return process, f"http://127.0.0.1:{port}"


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def wait_for(process: subprocess.Popen, url: str, status: int, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        try:
            last = get(url)
            if last[0] == status:
                return last[1]
        except OSError:
            pass  # not listening yet
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered {status}; last: {last}")


def stop(process: subprocess.Popen, signum: int) -> tuple[int, float, list[dict]]:
    """Send `signum`; (exit code, seconds to exit, the JSON log records)."""
    started = time.monotonic()
    process.send_signal(signum)
    try:
        code = process.wait(timeout=SHUTDOWN_BUDGET_S + 10)
    finally:
        if process.poll() is None:
            process.kill()
    took = time.monotonic() - started
    err = process.stderr.read()
    assert "Traceback" not in err, err
    records = [json.loads(line) for line in err.splitlines()]  # JSON lines, nothing else
    for record in records:
        assert {"time", "level", "logger", "message"} <= set(record), record
    return code, took, records


def test_an_unreachable_api_server_is_one_line_then_ready_when_it_answers(tmp_path) -> None:
    api_port = free_port()
    server = f"http://127.0.0.1:{api_port}"
    process, base = start(tmp_path, server)
    late = FakeKube()
    try:
        body = wait_for(process, f"{base}/readyz", 503)
        while "cannot reach" not in body["status"]:
            body = wait_for(process, f"{base}/readyz", 503)
        assert body["status"].startswith(f"cannot reach the Kubernetes API server {server}")
        assert body["status"].endswith("(Connection refused)")
        late.start(api_port)
        wait_for(process, f"{base}/readyz", 200)
    finally:
        code, _, records = stop(process, signal.SIGTERM)
        late.stop()
    assert code == 0
    assert (tmp_path / "headstart-history.sqlite").is_file()  # where it was run, any user
    messages = [(r["level"], r["message"]) for r in records if r["logger"] ==
                "headstart.kubernetes"]
    assert messages[0] == ("warning", f"cannot reach the Kubernetes API server {server} "
                                      "(Connection refused); retrying with backoff until it "
                                      "answers")
    assert messages[1][0] == "info" and messages[1][1].startswith(
        f"the Kubernetes API server {server} answers again after ")
    assert len(messages) == 2
    assert not [r for r in records if "Retrying" in r["message"]]  # urllib3's per-attempt spam


def test_the_first_ctrl_c_stops_it_during_a_stuck_tick(tmp_path) -> None:
    kube = FakeKube().start()
    # Every node list hangs: the first tick waits for the node informer, then retries.
    kube.fail_next("GET", "/api/v1/nodes", "timeout", count=1000, delay_s=120)
    process, base = start(tmp_path, kube.url)
    try:
        wait_for(process, f"{base}/healthz", 200)
        time.sleep(1.0)  # the tick is under way
        assert get(f"{base}/readyz")[0] == 503
    finally:
        code, took, records = stop(process, signal.SIGINT)
        kube.stop()
    assert code == 0
    assert took < SHUTDOWN_BUDGET_S
    messages = [r["message"] for r in records]
    assert any(m.startswith("the tick is still running") for m in messages), messages
    assert not [r for r in records if r["level"] == "error"], records


def test_the_shutdown_budget_fits_the_pods_grace_period() -> None:
    deployment = yaml.safe_load(
        (REPO / "manifests/base/overprovisioner/deployment.yaml").read_text())
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # 5 s HTTP + 5 s tick + 5 s Lease + 3 s informers = 18 s, with room for interpreter exit.
    assert SHUTDOWN_BUDGET_S == 18.0 and SHUTDOWN_BUDGET_S + 5 <= grace
