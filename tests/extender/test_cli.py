"""`headstart extender`: config errors as one line, and the real process end to end
against the fake API server: ready after the first sync, serving, gone on SIGTERM."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from headstart.cli import main
from tests.extender.builders import args_body, make_node, make_pod
from tests.tlscerts import authority, signed


@pytest.mark.parametrize(
    "text, message",
    [
        ("port: 0\n", "port: expected an integer from 1 to 65535, got 0"),
        ("prot: 8888\n", "prot: unknown field (known here: admission,"),
        ("locality:\n  default_packing: tight\n", "locality: default_packing: expected one of"),
        ("tls_cert_file: /x.pem\n", "tls_cert_file and tls_key_file must be set together"),
        ("port: [\n", "not valid YAML"),
        ("watch_dra: yes please\n", "watch_dra: expected true or false"),
        ("locality:\n  topology_levels: [{name: rack, labels: [example.com/rack]}]\n",
         "locality: topology_levels: expected a level named placement-group"),
        ("locality:\n  dra_gpus: [{driver: gpu.nvidia.com}]\n",
         "locality: dra_gpus[0]: expected driver and resource"),
        ("locality:\n  numa_default_policy: strict\n",
         "locality: numa_default_policy: expected one of none, best-effort, restricted, "
         "single-numa-node, got 'strict'"),
        ("bind_wait_seconds: 3\n",
         "bind_wait_seconds: expected a number of seconds from 0 to 2, got 3"),
        ("ops_port: 8888\n", "port and ops_port are both 8888"),
        ("bind_timeout_seconds: 5\n",
         "bind_timeout_seconds (5 s) must be below scheduler_http_timeout_seconds (5 s, the "
         "extender's httpTimeout in the KubeSchedulerConfiguration)"),
        ("scheduler_http_timeout_seconds: 0.2\n",
         "bind_timeout_seconds (3 s) must be below scheduler_http_timeout_seconds (0.2 s"),
        ("bind_scheduler_names: headstart-scheduler\n",
         "bind_scheduler_names: expected a list of scheduler names"),
        ("gate_webhook_port: 9443\n",
         "gate_webhook_port needs gate_webhook_cert_file and gate_webhook_key_file"),
        ("gate_webhook_cert_file: /t.crt\ngate_webhook_key_file: /t.key\n",
         "gate_webhook_port is not: set the port"),
        ("gate_webhook_port: 8889\ngate_webhook_cert_file: /t.crt\n"
         "gate_webhook_key_file: /t.key\n", "gate_webhook_port (8889) must differ"),
    ],
    ids=["port-range", "typo", "locality-field", "tls-half", "yaml", "watch-dra-not-bool",
         "levels-without-placement-group", "dra-without-resource", "numa-policy-unknown",
         "bind-wait", "same-ports", "bind-timeout-not-below-http-timeout",
         "http-timeout-below-bind-timeout", "scheduler-names-not-a-list",
         "webhook-without-certificate", "webhook-certificate-without-port",
         "webhook-port-taken-by-ops"],
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


def start_extender(kubeconfig: str, port: int, *extra: str,
                   ops_port: int | None = None) -> subprocess.Popen:
    ops = ["--ops-port", str(ops_port)] if ops_port is not None else []
    return subprocess.Popen(
        [sys.executable, "-m", "headstart", "extender", "--kubeconfig", kubeconfig,
         "--port", str(port), *ops, *extra],
        stderr=subprocess.PIPE, text=True,
    )


def wait_ready(process: subprocess.Popen, url: str, context=None) -> dict:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5, context=context) as reply:
                if reply.status == 200:
                    return json.loads(reply.read())
        except urllib.error.HTTPError:
            pass  # 503 until the first sync
        except OSError:
            pass  # not listening yet
        assert time.monotonic() < deadline, "extender never became ready"
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.1)


def stop(process: subprocess.Popen) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    return code, process.stderr.read()


def test_the_process_syncs_serves_and_stops_on_sigterm(fake_kube, tmp_path):
    fake_kube.create(make_node("n1"))
    fake_kube.create(make_node("n2", gpus=1))
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    port, ops_port = free_port(), free_port()
    process = start_extender(kubeconfig, port, ops_port=ops_port)
    base = f"http://127.0.0.1:{port}"
    try:
        body = wait_ready(process, f"http://127.0.0.1:{ops_port}/readyz")
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
        code, logs = stop(process)
    assert code == 0, logs
    # Structured logs: one JSON object per line. The leader elector's thread may log
    # before the main thread says it is starting: the order of those two is not ours.
    lines = [json.loads(line) for line in logs.splitlines()]
    starting = next(line for line in lines if line["message"] == "starting")
    assert (starting["port"], starting["ops_port"]) == (port, ops_port)


def test_tls_serves_https_with_the_configured_certificate(fake_kube, tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=headstart-extender", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    config = tmp_path / "extender.yaml"
    config.write_text(f"tls_cert_file: {cert}\ntls_key_file: {key}\nops_tls: true\n")
    fake_kube.create(make_node("n1"))
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    port, ops_port = free_port(), free_port()
    process = start_extender(kubeconfig, port, "--config", str(config), ops_port=ops_port)
    try:
        context = ssl.create_default_context(cafile=str(cert))
        body = wait_ready(process, f"https://127.0.0.1:{ops_port}/readyz", context)
        assert body["ready"] is True
        with pytest.raises(OSError):  # plain HTTP is not served (the TLS side hangs up)
            urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/healthz", timeout=5)
    finally:
        code, logs = stop(process)
    assert code == 0, logs



def test_with_a_client_ca_only_a_client_it_signed_reaches_the_scheduler_port(fake_kube,
                                                                             tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    ca = authority(tmp_path, "headstart-scheduler-ca")
    server = signed(tmp_path, ca, "headstart-extender", "subjectAltName=IP:127.0.0.1")
    client = signed(tmp_path, ca, "headstart-scheduler", "extendedKeyUsage=clientAuth")
    stranger = signed(tmp_path, authority(tmp_path, "someone-else"), "tenant",
                      "extendedKeyUsage=clientAuth")
    config = tmp_path / "extender.yaml"
    config.write_text(f"tls_cert_file: {server[0]}\ntls_key_file: {server[1]}\n"
                      f"tls_client_ca_file: {ca[0]}\n")
    fake_kube.create(make_node("n1"))
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    port, ops_port = free_port(), free_port()
    process = start_extender(kubeconfig, port, "--config", str(config), ops_port=ops_port)
    body = args_body(make_pod("w-0", gpus=1, job="j", role="worker"), names=["n1"])

    def post(cert: tuple | None) -> dict:
        context = ssl.create_default_context(cafile=str(ca[0]))
        if cert is not None:
            context.load_cert_chain(str(cert[0]), str(cert[1]))
        request = urllib.request.Request(f"https://127.0.0.1:{port}/filter", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5, context=context) as reply:
            return json.loads(reply.read())

    try:
        # the probes' port asks for no client certificate, and without ops_tls it
        # speaks plain HTTP, as kubelet's probes and Prometheus reach it by default
        assert wait_ready(process, f"http://127.0.0.1:{ops_port}/readyz")["ready"] is True
        assert post(client)["NodeNames"] == ["n1"]
        for refused in (None, stranger):  # no certificate, or one another CA signed
            with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
                post(refused)
    finally:
        code, logs = stop(process)
    assert code == 0, logs


def test_a_client_ca_without_tls_is_refused_naming_the_fields(tmp_path):
    from common.errors import ConfigError
    from extender.config import load_config

    config = tmp_path / "extender.yaml"
    config.write_text("tls_client_ca_file: /etc/ca.crt\n")
    with pytest.raises(ConfigError, match="tls_client_ca_file needs tls_cert_file"):
        load_config(str(config))
    config.write_text("ops_tls: true\n")
    with pytest.raises(ConfigError, match="ops_tls needs tls_cert_file and tls_key_file"):
        load_config(str(config))


def test_a_port_out_of_range_or_taken_is_one_line(fake_kube, tmp_path, capsys):
    kubeconfig = str(fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))
    assert main(["extender", "--kubeconfig", kubeconfig, "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert "--port: expected an integer from 1 to 65535, got 70000" in err
    assert "Traceback" not in err
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = start_extender(kubeconfig, port, ops_port=free_port())
        _, err = process.communicate(timeout=60)
        assert process.returncode == 2
        assert f"port: cannot listen on 0.0.0.0:{port}" in err
        assert "Traceback" not in err
        process = start_extender(kubeconfig, free_port(), ops_port=port)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert f"ops_port: cannot listen on 0.0.0.0:{port}" in err
    assert "Traceback" not in err
    assert main(["extender", "--kubeconfig", kubeconfig, "--port", "8888",
                 "--ops-port", "8888"]) == 2
    assert "both are 8888" in capsys.readouterr().err


def test_an_unreachable_api_server_is_one_line_then_ready(tmp_path):
    from tests.fakekube import FakeKube

    api_port = free_port()
    late = FakeKube()
    late.url = server = f"http://127.0.0.1:{api_port}"
    kubeconfig = late.write_kubeconfig(tmp_path / "kubeconfig")
    port, ops_port = free_port(), free_port()
    process = start_extender(kubeconfig, port, ops_port=ops_port)
    try:
        deadline = time.monotonic() + 30
        while True:  # 503 naming the failure while nothing answers
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{ops_port}/readyz", timeout=5)
            except urllib.error.HTTPError as error:
                body = json.loads(error.read())
                if body["watches"]["nodes"]["consecutive_failures"]:
                    assert "Connection refused" in body["watches"]["nodes"]["last_error"]
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.1)
        late.start(api_port)
        assert wait_ready(process, f"http://127.0.0.1:{ops_port}/readyz")["ready"] is True
    finally:
        code, logs = stop(process)
        late.stop()
    assert code == 0, logs
    records = [json.loads(line) for line in logs.splitlines()]  # JSON lines, nothing else
    about_api = [(r["level"], r["message"]) for r in records
                 if r["logger"] == "headstart.kubernetes"]
    assert about_api[0] == ("warning", f"cannot reach the Kubernetes API server {server} "
                                       "(Connection refused); retrying with backoff until it "
                                       "answers")
    assert len(about_api) == 2 and about_api[1][0] == "info"
    # Three watches failed many times; none of it reaches the log above debug level.
    assert not [r for r in records if r["level"] == "warning"][1:]
    assert "Retrying" not in logs and "Traceback" not in logs
