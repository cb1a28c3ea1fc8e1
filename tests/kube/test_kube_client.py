"""Loading the Kubernetes client: a kubeconfig that cannot be used is one line naming the
file and the problem, for every command that takes --kubeconfig."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from common.errors import ConfigError
from kube.client import load_api_client

GOOD = {
    "apiVersion": "v1", "kind": "Config", "current-context": "dev",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
}


def changed(edit) -> dict:
    document = copy.deepcopy(GOOD)
    edit(document)
    return document


CASES = [
    ("text", "apiVersion: v1\nclusters: [\n", "not valid YAML at line 3, column 1"),
    ("bytes", b"\x8d\x00\xffkube\x01", "not UTF-8 text"),
    ("text", "", "the file is empty, not a kubeconfig"),
    ("text", "- a\n- b\n", "not a kubeconfig (expected a mapping with clusters, contexts, "
     "users and current-context; got a list)"),
    ("doc", changed(lambda d: d.pop("current-context")), "Expected key current-context"),
    ("doc", changed(lambda d: d.update({"current-context": "prod"})),
     "Expected object with name prod"),
    ("doc", changed(lambda d: d["clusters"][0]["cluster"].pop("server")),
     "the cluster's server '' is not an http(s) URL"),
    ("doc", changed(lambda d: d["clusters"][0]["cluster"].update({"server": "kube:6443"})),
     "the cluster's server 'kube:6443' is not an http(s) URL"),
    ("doc", changed(lambda d: d["clusters"][0]["cluster"].update(
        {"certificate-authority-data": "!notbase64"})), "Invalid base64-encoded string"),
    ("doc", changed(lambda d: d["clusters"][0]["cluster"].update(
        {"certificate-authority": "/nonexistent/ca.crt"})),
     "File does not exist: /nonexistent/ca.crt"),
    ("doc", changed(lambda d: d["users"][0].update({"user": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "headstart-test-no-such-plugin", "args": ["token"]}}})),
     "user 'u': the credential command 'headstart-test-no-such-plugin' (exec) is not "
     "installed or not on PATH"),
]
IDS = ["yaml-syntax", "binary", "empty", "a-list", "no-current-context", "unknown-context",
       "no-server", "server-not-a-url", "bad-base64-ca", "missing-ca-file", "exec-not-installed"]


def write(path: Path, kind: str, content) -> Path:
    if kind == "bytes":
        path.write_bytes(content)
    elif kind == "text":
        path.write_text(content)
    else:
        path.write_text(yaml.safe_dump(content))
    return path


@pytest.mark.parametrize("kind, content, message", CASES, ids=IDS)
def test_an_unusable_kubeconfig_is_one_line_naming_the_file(tmp_path, kind, content,
                                                            message) -> None:
    path = write(tmp_path / "kubeconfig", kind, content)
    with pytest.raises(ConfigError) as caught:
        load_api_client(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text
    assert "\n" not in text


def test_a_missing_file_is_named(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"kubeconfig: cannot read \(No such file"):
        load_api_client(tmp_path / "kubeconfig")


def test_without_kubeconfig_it_says_where_it_looked(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match=rf"no kubeconfig: {tmp_path}/.kube/config does not "
                                          r"exist and \$KUBECONFIG is not set"):
        load_api_client(None)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/a:{tmp_path}/b")
    with pytest.raises(ConfigError, match=r"\$KUBECONFIG: no such file: "):
        load_api_client(None)


def test_kubeconfig_list_is_merged_and_checked(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    good = write(tmp_path / "good", "doc", GOOD)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/absent:{good}")
    client = load_api_client(None)
    assert client.configuration.host == "https://127.0.0.1:6443"
    bad = write(tmp_path / "bad", "text", "- not a kubeconfig\n")
    monkeypatch.setenv("KUBECONFIG", f"{good}:{bad}")
    with pytest.raises(ConfigError, match=rf"^{bad}: not a kubeconfig"):
        load_api_client(None)


def test_a_good_kubeconfig_makes_one_attempt_per_request(tmp_path) -> None:
    client = load_api_client(write(tmp_path / "kubeconfig", "doc", GOOD))
    assert client.configuration.host == "https://127.0.0.1:6443"
    # urllib3 would retry 3 times and log a warning each time; callers back off instead.
    assert client.configuration.retries == 0


@pytest.mark.parametrize("command", ["extender", "overprovisioner", "expire-placeholders",
                                     "check"])
@pytest.mark.parametrize("kind, content, message", [CASES[0], CASES[1], CASES[5]],
                         ids=["yaml-syntax", "binary", "unknown-context"])
def test_every_command_with_kubeconfig_exits_2_with_one_line(
    tmp_path, capsys, command, kind, content, message
) -> None:
    from headstart.cli import main

    path = write(tmp_path / "kubeconfig", kind, content)
    config = tmp_path / "op.yaml"
    config.write_text(f"instance_types: [g5.xlarge]\nforecast: {{history_path: "
                      f"{tmp_path / 'h.sqlite'}}}\n")
    argv = {"extender": ["extender", "--kubeconfig", str(path)],
            "overprovisioner": ["overprovisioner", "--config", str(config),
                                "--kubeconfig", str(path), "--dry-run"],
            "expire-placeholders": ["expire-placeholders", "--config", str(config),
                                    "--kubeconfig", str(path)],
            "check": ["check", "--kubeconfig", str(path)]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"headstart {command}: error: {path}: ") and message in err


def _commands_with_kubeconfig(parser, prefix=()) -> list[tuple[str, ...]]:
    import argparse

    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands_with_kubeconfig(sub, (*prefix, name))
        elif "--kubeconfig" in action.option_strings:
            found.append(prefix)
    return found


def test_the_kubeconfig_test_above_covers_every_command_that_takes_one() -> None:
    # A new command with --kubeconfig must join the parametrized test above.
    from headstart.cli import build_parser

    assert sorted(_commands_with_kubeconfig(build_parser())) == [
        ("check",), ("expire-placeholders",), ("extender",), ("overprovisioner",)]


def test_a_discarded_response_is_read_to_its_end_before_its_connection_is_reused():
    """Through real HTTP: two keep-alive requests on one pooled connection, the first
    response discarded unread. Given back undrained, its body would be read as the
    second response's status line."""
    import http.server
    import threading

    import urllib3

    from kube.client import discard

    body = b'{"spec": {"completionMode": "Indexed"}}' * 2000

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        pool = urllib3.HTTPConnectionPool("127.0.0.1", server.server_port, maxsize=1)
        first = pool.request("GET", "/a", preload_content=False)
        discard(first)
        assert first.connection is None  # given back to the pool
        second = pool.request("GET", "/b")
        assert second.status == 200 and second.data == body
        assert pool.num_connections == 1  # the same connection, reused cleanly
    finally:
        server.shutdown()
