"""The Kubernetes client every service uses: which credentials, and one line when they fail.

Decides:
- where the credentials come from, the same for every command that takes `--kubeconfig`:
  that file if given; else the pod's service account when running in a pod
  (`KUBERNETES_SERVICE_HOST` is set); else `$KUBECONFIG` (a path list, merged as kubectl
  does) or `~/.kube/config`;
- that a kubeconfig that cannot be used is a ConfigError of one line naming the file and
  the problem (not YAML, not UTF-8, not a mapping, no current context, a server that is
  not an http(s) URL, bad certificate data, an `exec` credential command that is not
  installed), never a traceback from deep inside the client;
- that the client makes one attempt per request (`retries = 0`): urllib3's own retries
  log a "Retrying (Retry(total=...))" warning per attempt, and every caller already
  retries with its own backoff (the watches, the informers, `kube.retry`, leader
  election).

Must not: contact the API server (an unreachable server is not a start-up error: the
services retry, see kube.reachability).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from common.errors import ConfigError
from common.yamlfile import load_yaml_file

IN_CLUSTER = "in-cluster service account"


def load_api_client(kubeconfig: str | Path | None, connections: int | None = None) -> Any:
    """An ApiClient for `kubeconfig`, the pod's service account, or the default kubeconfig
    (see the module docstring); ConfigError naming the source when it cannot be used.
    connections: the connections it keeps open to the server (the client's default, 10,
    when None); each watch streams on one of its own."""
    from kubernetes import client
    from kubernetes import config as kube_config

    configuration = client.Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        source = IN_CLUSTER
        try:
            kube_config.load_incluster_config(client_configuration=configuration)
        except (kube_config.ConfigException, OSError, ValueError) as error:
            raise ConfigError(f"{IN_CLUSTER}: cannot load it ({_one_line(error)}); "
                              "pass --kubeconfig FILE") from None
    else:
        paths = [Path(kubeconfig)] if kubeconfig is not None else default_kubeconfig_paths()
        source = ", ".join(str(path) for path in paths)
        documents = [(path, read_kubeconfig(path)) for path in paths]
        check_exec_command(documents)
        try:
            # The client merges a path list as kubectl does (the first file to set a
            # value wins); given explicitly, since it reads $KUBECONFIG at import only.
            kube_config.load_kube_config(
                config_file=os.pathsep.join(str(path) for path in paths),
                client_configuration=configuration,
            )
        except (kube_config.ConfigException, OSError, TypeError, ValueError, KeyError,
                AttributeError) as error:  # binascii.Error (bad base64) is a ValueError
            raise ConfigError(f"{source}: {_one_line(error)}") from None
    host = configuration.host or ""
    if not host.startswith(("http://", "https://")):
        raise ConfigError(f"{source}: the cluster's server {host!r} is not an http(s) URL")
    configuration.retries = 0
    if connections is not None:
        configuration.connection_pool_maxsize = connections
    return client.ApiClient(configuration)


def discard(response: Any) -> None:
    """Read what is left of a response made with `_preload_content=False`, then give its
    connection back to the pool. A connection given back with its body unread is used
    again by the next request, which reads the old body as its status line
    (`BadStatusLine`; seen in tests/e2e/test_elastic.py after a Job patch)."""
    response.drain_conn()
    response.release_conn()


def default_kubeconfig_paths() -> list[Path]:
    """The files `$KUBECONFIG` lists that exist (kubectl skips missing ones), else
    ~/.kube/config; ConfigError when there is none."""
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        paths = [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
        existing = [p for p in paths if p.exists()]
        if not existing:
            raise ConfigError(f"$KUBECONFIG: no such file: {listed}; pass --kubeconfig FILE")
        return existing
    default = Path("~/.kube/config").expanduser()
    if not default.exists():
        raise ConfigError(f"no kubeconfig: {default} does not exist and $KUBECONFIG is not set; "
                          "pass --kubeconfig FILE, or run in a pod with a service account")
    return [default]


def read_kubeconfig(path: Path) -> Mapping[str, Any]:
    """The parsed file; ConfigError for a missing, binary, malformed or non-mapping file."""
    document = load_yaml_file(path)
    if document is None:
        raise ConfigError(f"{path}: the file is empty, not a kubeconfig")
    if not isinstance(document, Mapping):
        raise ConfigError(f"{path}: not a kubeconfig (expected a mapping with clusters, "
                          f"contexts, users and current-context; got a {type(document).__name__})")
    return document


def check_exec_command(documents: list[tuple[Path, Mapping[str, Any]]]) -> None:
    """The current context's user runs an `exec` credential plugin (EKS: `aws eks
    get-token`; GKE: `gke-gcloud-auth-plugin`) that is not installed: say so now. The
    client only logs it and then every request fails with 401 Unauthorized."""
    current = next((d.get("current-context") for _, d in documents
                    if d.get("current-context")), None)
    context = _named(documents, "contexts", current, "context")
    user_name = context.get("user") if isinstance(context, Mapping) else None
    for path, document in documents:  # the first file that defines the user wins
        user = _named([(path, document)], "users", user_name, "user")
        if user is None:
            continue
        exec_spec = user.get("exec") if isinstance(user, Mapping) else None
        command = exec_spec.get("command") if isinstance(exec_spec, Mapping) else None
        if isinstance(command, str) and command and shutil.which(command) is None:
            raise ConfigError(
                f"{path}: user {user_name!r}: the credential command {command!r} (exec) is "
                "not installed or not on PATH"
            )
        return


def _named(documents: list[tuple[Path, Mapping[str, Any]]], section: str, name: Any,
           key: str) -> Any:
    """The `key` of the first entry called `name` in `section` over the files, or None."""
    if not name:
        return None
    for _, document in documents:
        entries = document.get(section)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if isinstance(entry, Mapping) and entry.get("name") == name:
                return entry.get(key)
    return None


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
