"""`headstart extender`: run the scheduler extender service.

Decides: how the command line, the YAML config and the Kubernetes client configuration
(in-cluster when running in a pod, else `--kubeconfig` or the default kubeconfig) are
put together, TLS, and graceful shutdown: on SIGTERM aiohttp stops accepting, lets
in-flight requests finish for up to `shutdown_timeout_seconds`, then the cleanup
context stops the watch threads.

Must not: make decisions; import aiohttp or the kubernetes client before the handler runs
(keeps `headstart --help` fast).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "extender",
        help="run the kube-scheduler extender (filter, prioritize, bind) on port 8888",
        description="Serve kube-scheduler's extender calls: keep distributed-training jobs' "
        "PS and worker pods close (few nodes, one placement group, one NUMA node). "
        "Without --config the documented defaults apply (docs/extender.md): pack, "
        "placement group preferred, nodeCacheCapable true, bind off.",
    )
    parser.add_argument("--config", type=Path, help="YAML config file (docs/extender.md)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig to use; default: in-cluster config when running in a pod, "
        "else $KUBECONFIG or ~/.kube/config",
    )
    parser.add_argument("--port", type=int, help="TCP port (overrides the config; default 8888)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from extender.config import load_config
    from extender.logs import configure_logging

    config = load_config(args.config).with_overrides(port=args.port)
    configure_logging(config.log_format, config.log_level)
    serve(config, kube_api_client(args.kubeconfig))
    return 0


def kube_api_client(kubeconfig: Path | None):
    """An ApiClient: `kubeconfig` if given, in-cluster inside a pod, else the default file."""
    from kubernetes import client, config

    from bucketing.errors import ConfigError

    configuration = client.Configuration()
    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(
                config_file=str(kubeconfig) if kubeconfig else None,
                client_configuration=configuration,
            )
    except (config.ConfigException, OSError, TypeError, ValueError) as error:
        where = str(kubeconfig) if kubeconfig else "kubeconfig"
        raise ConfigError(
            f"{where}: cannot load Kubernetes client configuration ({error})"
        ) from None
    return client.ApiClient(configuration)


def serve(config, api_client) -> None:
    """Run until SIGTERM/SIGINT (blocking)."""
    import logging
    import ssl

    from aiohttp import web

    from bucketing.errors import ConfigError
    from extender.app import create_app
    from extender.binder import ApiBinder
    from extender.cache import ClusterCache
    from extender.sync import ClusterSync
    from extender.watch import WatchSettings

    ssl_context = None
    if config.tls_cert_file:
        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            ssl_context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(
                f"tls_cert_file/tls_key_file: cannot load {config.tls_cert_file} "
                f"and {config.tls_key_file} ({error})"
            ) from None

    cache = ClusterCache(config.locality)
    settings = WatchSettings(
        watch_timeout_seconds=config.watch_timeout_seconds,
        backoff_initial_seconds=config.backoff_initial_seconds,
        backoff_max_seconds=config.backoff_max_seconds,
    )
    sync = ClusterSync(
        api_client, cache, config.locality, settings,
        watch_topology=config.watch_topology, stale_after_seconds=config.stale_after_seconds,
        watch_dra=config.watch_dra, watch_pod_groups=config.watch_pod_groups,
    )
    binder = ApiBinder(api_client) if config.bind_enabled else None
    app = create_app(config, cache, sync, binder)
    logging.getLogger("headstart.extender").info(
        "starting", extra={"host": config.host, "port": config.port, "tls": ssl_context is not None,
                           "node_cache_capable": config.node_cache_capable,
                           "bind_enabled": config.bind_enabled},
    )
    try:
        web.run_app(
            app,
            host=config.host,
            port=config.port,
            ssl_context=ssl_context,
            shutdown_timeout=config.shutdown_timeout_seconds,
            access_log=None,  # one line per scheduler call is noise; /metrics counts them
            print=None,
            handle_signals=True,
        )
    except OSError as error:  # the port is taken, or the host is not an address here
        raise ConfigError(
            f"port: cannot listen on {config.host}:{config.port} ({error.strerror or error})"
        ) from None
