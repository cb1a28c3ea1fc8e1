"""`headstart extender`: config errors as one line, and the real process end to end
against the fake API server: ready after the first sync, serving, gone on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from headstart.cli import main
from tests.extender.builders import args_body, make_node, make_pod


@pytest.mark.parametrize(
    "text, message",
    [
        ("port: 0\n", "port: expected an integer from 1 to 65535, got 0"),
        ("prot: 8888\n", "unknown field(s) prot"),
        ("locality:\n  default_packing: tight\n", "locality: default_packing: expected one of"),
        ("tls_cert_file: /x.pem\n", "tls_cert_file and tls_key_file must be set together"),
        ("port: [\n", "not valid YAML"),
    ],
    ids=["port-range", "typo", "locality-field", "tls-half", "yaml"],
)
def test_config_errors_are_one_line_naming_file_and_field(tmp_path, capsys, text, message):
    path = tmp_path / "extender.yaml"
    path.write_text(text)
    assert main(["extender", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err
    assert "Traceback" not in err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_process_syncs_serves_and_stops_on_sigterm(fake_kube, tmp_path):
    fake_kube.create(make_node("n1"))
    fake_kube.create(make_node("n2", gpus=1))
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "headstart", "extender", "--kubeconfig", kubeconfig,
         "--port", str(port)],
        stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = get(f"{base}/readyz")
                if status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "extender never became ready"
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.1)
        assert body["nodes"] == 2

        pod = make_pod("w-0", gpus=4, job="j", role="worker")
        request = urllib.request.Request(
            f"{base}/filter", data=args_body(pod, names=["n1", "n2"]),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            answer = json.loads(reply.read())
        assert answer["NodeNames"] == ["n1"]  # n2 has 1 GPU
        assert "insufficient GPU" in answer["FailedNodes"]["n2"]
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
    logs = process.stderr.read()
    assert code == 0, logs
    first = json.loads(logs.splitlines()[0])  # structured logs: one JSON object per line
    assert first["message"] == "starting" and first["port"] == port
