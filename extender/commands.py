"""What `headstart extender` does, once its options are parsed (cli.py): loads the config,
sets up logging, TLS and the Kubernetes client, and serves the extender until stopped.

Decides: how the command line, the YAML config and the Kubernetes client configuration
(kube.client: `--kubeconfig`, else in-cluster in a pod, else the default
kubeconfig) are put together, TLS, and graceful shutdown: on SIGTERM aiohttp stops accepting, lets
in-flight requests finish for up to `shutdown_timeout_seconds`, then the cleanup
context stops the watch threads.

Must not: make decisions.
"""

from __future__ import annotations

import argparse
import logging
import os
import ssl
import sys

from aiohttp import web

from common.errors import ConfigError
from common.logs import configure_logging
from extender.admission.admitter import GIL_SWITCH_SECONDS, Admitter
from extender.app import METRICS, create_app, serve_ops
from extender.binder import ApiBinder
from extender.cache import ClusterCache
from extender.config import load_config
from extender.gate_webhook import GATE_APP, create_gate_app, serve_gate
from extender.sync import ClusterSync
from extender.tls import keep_reloaded, server_context
from kube.client import load_api_client
from kube.informer import WatchSettings
from kube.leader import LeaderElector
from kube.reachability import monitor_reachability

WATCH_CONNECTIONS = 24
"""Streaming connections the watches may hold (13 as shipped, with room for more kinds)."""


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config).with_overrides(
        port=args.port, ops_port=args.ops_port, gate_webhook_port=args.gate_webhook_port,
        gate_webhook_tls_dir=args.gate_webhook_tls_dir)
    configure_logging(args.log_format or config.log_format, config.log_level)
    # One streaming connection per watch (nodes, pods, NRT, 3 DRA kinds, 2 PodGroup
    # APIs, owner kinds), one per thread that writes at once (the admitter's, the
    # binder's), and a few for the rest: a thread finding the pool empty would open a
    # new TLS connection for each call and throw it away after.
    connections = WATCH_CONNECTIONS + config.admission.write_workers + config.bind_workers + 8
    api_client = load_api_client(args.kubeconfig, connections=connections)
    monitor_reachability(api_client)
    serve(config, api_client)
    return 0


def serve(config, api_client) -> None:
    """Run until SIGTERM/SIGINT (blocking)."""

    ssl_context = ops_context = None
    serving: list[ssl.SSLContext] = []
    if config.tls_cert_file and config.tls_key_file:
        # kube-scheduler's port asks for a client certificate when tls_client_ca_file is
        # set; the ops port (kubelet's probes, Prometheus) never does, and speaks TLS
        # only with ops_tls.
        ssl_context = server_context(config.tls_cert_file, config.tls_key_file,
                                     "tls_cert_file/tls_key_file", config.tls_client_ca_file)
        serving.append(ssl_context)
        if config.ops_tls:
            ops_context = server_context(config.tls_cert_file, config.tls_key_file,
                                         "tls_cert_file/tls_key_file")
            serving.append(ops_context)
    gate_context = None
    if config.gate_webhook_cert_file and config.gate_webhook_key_file:
        gate_context = server_context(config.gate_webhook_cert_file,
                                      config.gate_webhook_key_file,
                                      "gate_webhook_cert_file/gate_webhook_key_file")

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
        watch_owners=config.watch_owners,
    )
    binder = ApiBinder(api_client, config.bind_timeout_seconds, config.bind_workers) \
        if config.bind_enabled else None
    admitter = None
    elector = None
    if config.admission.enabled:
        admission = config.admission
        elector = LeaderElector(
            api_client, os.environ.get("POD_NAMESPACE") or admission.lease_namespace, admission)
        admitter = Admitter(cache, config.locality, admission, api_client, elector.is_leader,
                            identity=elector.identity, sizes_listed=sync.sizes_listed,
                            batch_jobs=sync.resolver.batch_jobs)
        if admission.planning == "process":
            admitter.start_planning_process()  # before the watches change the cache
        elector.start()
        sys.setswitchinterval(GIL_SWITCH_SECONDS)  # if rounds plan in a thread
    app = create_app(config, cache, sync, binder, admitter)
    # First: a taken ops port must fail before the watch threads start.
    app.cleanup_ctx.insert(
        0, serve_ops(config.host, config.ops_port, ops_context, config.shutdown_timeout_seconds))
    if serving:  # renewed Secrets reach new connections without a restart
        app.cleanup_ctx.append(keep_reloaded(
            serving, config.tls_cert_file or "", config.tls_key_file or "", "serving",
            client_ca_file=config.tls_client_ca_file))
    if gate_context is not None:
        app[GATE_APP] = create_gate_app(config, app[METRICS])
        app.cleanup_ctx.insert(1, serve_gate(config, gate_context))
    logging.getLogger("headstart.extender").info(
        "starting", extra={"host": config.host, "port": config.port, "ops_port": config.ops_port,
                           "tls": ssl_context is not None,
                           "client_certificates": config.tls_client_ca_file is not None,
                           "gate_webhook_port": config.gate_webhook_port,
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
    finally:
        if elector is not None:
            elector.stop()  # give the Lease up: the other replica admits at once
