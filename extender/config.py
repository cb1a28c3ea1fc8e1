"""The extender service's settings, loaded once from YAML and validated at start-up.

Decides: the defaults (port 8888 for kube-scheduler's calls, 8889 for probes, metrics
and /explain, `nodeCacheCapable` true, bind on with a 0.25 s wait
for a job's binds in flight, for `headstart-scheduler`'s pods only, with a 3 s API
timeout below the scheduler's 5 s `httpTimeout`, 64 MiB body limit, JSON logs) and the
validation of every field, with errors naming the file and the field path. The
`locality:` section is validated by `locality.config.LocalityConfig`.

Must not: start anything, talk to the API, or read any file other than the one named.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from common.errors import ConfigError
from common.fields import FieldReader
from common.logs import LOG_FORMATS
from common.yamlfile import load_yaml_file
from locality.admission.config import AdmissionConfig
from locality.config import LocalityConfig

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """Settings of `headstart extender`. Every field has a default; see docs/extender.md."""

    host: str = "0.0.0.0"
    """Address to listen on."""

    port: int = 8888
    """TCP port for kube-scheduler's calls: /filter, /prioritize and /bind. Only the
    scheduler should reach it (the shipped NetworkPolicy admits only its pods): /bind
    creates Bindings with the extender's own permission."""

    ops_port: int = 8889
    """TCP port for /healthz, /readyz, /metrics and /explain (probes, Prometheus, you)."""

    node_cache_capable: bool = True
    """Must equal `nodeCacheCapable` in the KubeSchedulerConfiguration: true answers
    `NodeNames` (and takes nodes from the cache), false answers `Nodes`."""

    bind_enabled: bool = True
    """Serve POST /bind: kube-scheduler tells the extender the node it chose for each pod
    (the extender creates the Binding, as the default binder would), so the next pods of
    a job are placed knowing exactly where the earlier ones went. Register `bindVerb:
    bind` exactly when this is true; only one extender of a scheduler may bind. False:
    placements are learnt from the pod watch alone (a job's pods scheduled back to back
    do not see each other until their bindings reach the watch)."""

    bind_wait_seconds: float = 0.25
    """With the bind verb: how long a filter or prioritize call for a pod may wait for
    the bind of a pod of the same job that the extender answered for just before
    (kube-scheduler binds asynchronously, so the next pod's filter can arrive first).
    The wait ends as soon as the bind arrives; it reaches this bound only when the bind
    is held (a Permit plugin waiting for a gang) or lost, and then once per job, not per
    pod (docs/extender.md, "Binds in flight"). 0 never waits. At most 2: the call must
    finish well inside the scheduler's `httpTimeout` (5 s in the shipped config)."""

    bind_scheduler_names: tuple[str, ...] = ("headstart-scheduler",)
    """/bind binds only pods whose `spec.schedulerName`, as the extender's pod watch shows
    the pod, is one of these (the profiles' `schedulerName`s of the scheduler that
    registers the extender; add `default-scheduler` when the extender serves the
    cluster's own scheduler). Anything that reaches the port could otherwise have any
    pod bound with the extender's permission; a refusal is answered in the protocol's
    `Error` field and counted in `headstart_extender_bind_refused_total`. Empty: no check
    (then only the NetworkPolicy, or mutual TLS, keeps other callers out)."""

    bind_timeout_seconds: float = 3.0
    """Timeout of the API call that creates a Binding. Must be below
    `scheduler_http_timeout_seconds`: a bind still running when kube-scheduler gives up
    on the call could bind a pod the scheduler has already forgotten and retries."""

    bind_workers: int = 32
    """Bindings created at once, on threads of their own: a gang's members are bound
    together when Coscheduling's Permit lets them go (64 binds in the same second for a
    gang of 64), and they must not queue behind the admitter's work on the event loop's
    default executor (6 threads on 2 cores, where 170 binds of a bench passed the 5 s
    `httpTimeout`: docs/research/extender.md)."""

    scheduler_http_timeout_seconds: float = 5.0
    """The extender's `httpTimeout` in the KubeSchedulerConfiguration (5s shipped). Only
    read to check, at start-up, that `bind_timeout_seconds` and `bind_wait_seconds`
    fit inside it."""

    max_body_bytes: int | None = None
    """Largest request body accepted (413 above); `body_limit` when unset."""

    body_read_timeout_seconds: float = 10.0
    """A request whose body has not arrived this long after its headers gets 408 (a
    client sending a byte a second holds no handler longer); kube-scheduler gives up
    on a call after its `httpTimeout` (5 s) anyway."""

    @property
    def body_limit(self) -> int:
        """`max_body_bytes`, else 8 MiB with `node_cache_capable` (kube-scheduler sends
        node names only: tests/extender/test_app.py checks 50,000 EKS-style names fit in
        a third of it) and 64 MiB without (every Node object travels, 5-15 KiB each)."""
        if self.max_body_bytes is not None:
            return self.max_body_bytes
        return 8 * MIB if self.node_cache_capable else 64 * MIB

    tls_cert_file: str | None = None
    """PEM certificate; with `tls_key_file` kube-scheduler's port speaks HTTPS (the
    scheduler's `enableHTTPS`). Reloaded when the file changes (cert-manager renews it)."""

    tls_key_file: str | None = None
    """PEM private key for `tls_cert_file`."""

    tls_client_ca_file: str | None = None
    """PEM CA bundle: with it, kube-scheduler's port requires a client certificate that
    this CA signed (mutual TLS; the scheduler's `tlsConfig.certFile`/`keyFile`), and a
    connection without one is refused in the handshake, before any request is read.
    Needs `tls_cert_file`. Use a CA that signs only the scheduler's client certificate
    and the extender's own (docs/security.md, "Mutual TLS"). A CA added to the file is
    trusted at once; one removed stays trusted until the extender restarts."""

    ops_tls: bool = False
    """Serve the ops port (probes, /metrics, /explain) over HTTPS too, with
    `tls_cert_file` and no client certificate asked. Off: plain HTTP, as kubelet's
    probes and Prometheus reach it by default; the shipped NetworkPolicy admits only the
    `monitoring` namespace."""

    gate_webhook_port: int | None = None
    """TCP port of the placement gate's mutating admission webhook (POST /gate, HTTPS
    only), for clusters before Kubernetes 1.36, where the MutatingAdmissionPolicy of
    manifests/base/admission is not served; manifests/components/gate-webhook sets 9443.
    Unset: not served. Pods of `bind_scheduler_names` are gated by the rule of
    `locality.admission.gate`."""

    gate_webhook_cert_file: str | None = None
    """PEM certificate of the gate webhook (required with `gate_webhook_port`), for the
    name kube-apiserver calls (`headstart-extender-gate.headstart.svc`); reloaded when
    the file changes."""

    gate_webhook_key_file: str | None = None
    """PEM private key for `gate_webhook_cert_file`."""

    log_format: str = "json"
    """`json` (one object per line, for log pipelines) or `text`."""

    log_level: str = "info"
    """`debug`, `info`, `warning` or `error`."""

    shutdown_timeout_seconds: float = 10.0
    """On SIGTERM, how long in-flight requests may finish. Keep it below the pod's
    terminationGracePeriodSeconds (30 s by default)."""

    watch_timeout_seconds: int = 300
    """Server-side timeout of each watch call; the watch is then resumed from its
    last resourceVersion (a relist only on 410 Gone)."""

    backoff_initial_seconds: float = 0.5
    """First retry delay after a failed list or watch; doubles per failure."""

    backoff_max_seconds: float = 30.0
    """Cap of the retry delay."""

    stale_after_seconds: float = 120.0
    """/readyz turns 503 when a watch has been failing for longer than this (a stale
    cache steers pods onto nodes that filled up meanwhile)."""

    watch_topology: bool = True
    """Watch NodeResourceTopology objects (topology.node.k8s.io/v1alpha2) for NUMA data;
    a cluster without the CRD simply has no NUMA data."""

    watch_dra: bool = True
    """Watch ResourceSlices, ResourceClaims and ResourceClaimTemplates
    (resource.k8s.io/v1, Kubernetes 1.34+) so that GPUs published through DRA count
    (`locality.dra_gpus`); a cluster that does not serve the API has no DRA GPUs."""

    watch_pod_groups: bool = True
    """Watch Volcano (scheduling.volcano.sh/v1beta1) and Coscheduling
    (scheduling.x-k8s.io/v1alpha1) PodGroups: their minMember is the job size; a
    cluster without the CRD has none."""

    watch_owners: bool = True
    """Watch the owners of training pods (Kubeflow PyTorchJob, TFJob, MPIJob
    `kubeflow.org/v1`, JobSet `jobset.x-k8s.io/v1alpha2`, TrainJob
    `trainer.kubeflow.org/v1alpha1`), each only where it is served: their replica counts
    are the job size of pods that declare none (`locality.owners`)."""

    locality: LocalityConfig = field(default_factory=LocalityConfig)
    """Job labels, policy annotations and defaults; see docs/locality.md."""

    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    """The job admitter: lifts the `headstart.io/placement` gate of a whole job at once,
    with its domain written into every pod (docs/extender.md, "Job admission")."""

    def with_overrides(
        self, port: int | None = None, ops_port: int | None = None,
        gate_webhook_port: int | None = None, gate_webhook_tls_dir: str | None = None,
    ) -> ExtenderConfig:
        """This config with command-line overrides applied (validated like the file's).
        `gate_webhook_tls_dir`: a mounted `kubernetes.io/tls` Secret (tls.crt, tls.key)."""
        config = self
        if gate_webhook_tls_dir is not None:
            config = replace(config, gate_webhook_cert_file=f"{gate_webhook_tls_dir}/tls.crt",
                             gate_webhook_key_file=f"{gate_webhook_tls_dir}/tls.key")
        for flag, field_name, value in (("--port", "port", port),
                                        ("--ops-port", "ops_port", ops_port),
                                        ("--gate-webhook-port", "gate_webhook_port",
                                         gate_webhook_port)):
            if value is None:
                continue
            if not 1 <= value <= 65535:
                raise ConfigError(f"{flag}: expected an integer from 1 to 65535, got {value}")
            config = replace(config, **{field_name: value})
        if config.port == config.ops_port:
            raise ConfigError(
                f"--port/--ops-port: both are {config.port}; kube-scheduler's port and the "
                "ops port must differ"
            )
        _check_gate_webhook(config, "command line")
        return config


_LOG_LEVELS = ("debug", "info", "warning", "error")


def load_config(path: str | Path | None) -> ExtenderConfig:
    """Read and validate a YAML file; None gives the documented defaults."""
    if path is None:
        return ExtenderConfig()
    return config_from_mapping(load_yaml_file(path), str(path))


def config_from_mapping(data: Any, source: str = "config") -> ExtenderConfig:
    """Validate a mapping into an ExtenderConfig; errors name `source` and the field."""
    if data is None:
        return ExtenderConfig()
    reader = FieldReader(source)
    data = reader.mapping(data, "")
    reader.known(data, "", {f.name for f in fields(ExtenderConfig)})
    values: dict[str, Any] = {}
    for name, raw in data.items():
        if name == "locality":
            values[name] = LocalityConfig.from_mapping(raw, reader.at("locality"))
        elif name == "admission":
            continue  # after locality: node groups name its levels and GPU resources
        elif name in ("node_cache_capable", "bind_enabled", "watch_topology", "watch_dra",
                      "watch_pod_groups", "watch_owners", "ops_tls"):
            values[name] = reader.as_bool(raw, name)
        elif name in ("port", "ops_port"):
            values[name] = reader.as_int(raw, name, 1, 65535)
        elif name == "gate_webhook_port":
            values[name] = None if raw is None else reader.as_int(raw, name, 1, 65535)
        elif name == "max_body_bytes":
            values[name] = reader.as_int(raw, name, 1024, 2**40)
        elif name == "watch_timeout_seconds":
            values[name] = reader.as_int(raw, name, 1, 3600)
        elif name == "bind_workers":
            values[name] = reader.as_int(raw, name, 1, 256)
        elif name == "bind_scheduler_names":
            values[name] = reader.as_strings(raw, name, allow_empty=True,
                                             expected="a list of scheduler names")
        elif name == "bind_wait_seconds":
            values[name] = reader.as_number(raw, name, low=0, high=2, unit="seconds")
        elif name in (
            "shutdown_timeout_seconds", "backoff_initial_seconds", "backoff_max_seconds",
            "stale_after_seconds", "bind_timeout_seconds", "scheduler_http_timeout_seconds",
            "body_read_timeout_seconds",
        ):
            values[name] = reader.as_number(raw, name, positive=True)
        elif name == "log_format":
            values[name] = reader.as_choice(raw, name, LOG_FORMATS, fold_case=True)
        elif name == "log_level":
            values[name] = reader.as_choice(raw, name, _LOG_LEVELS, fold_case=True)
        elif name in ("tls_cert_file", "tls_key_file", "tls_client_ca_file",
                      "gate_webhook_cert_file", "gate_webhook_key_file"):
            values[name] = None if raw is None else reader.as_string(raw, name)
        else:  # host
            values[name] = reader.as_string(raw, name)
    locality = values.get("locality", LocalityConfig())
    if "admission" in data:
        values["admission"] = _admission(data["admission"], reader.at("admission"), locality)
    config = ExtenderConfig(**values)
    if (config.tls_cert_file is None) != (config.tls_key_file is None):
        raise ConfigError(f"{source}: tls_cert_file and tls_key_file must be set together")
    if config.tls_client_ca_file is not None and config.tls_cert_file is None:
        raise ConfigError(f"{source}: tls_client_ca_file needs tls_cert_file and tls_key_file "
                          "(a client certificate is asked for only over TLS)")
    if config.ops_tls and config.tls_cert_file is None:
        raise ConfigError(f"{source}: ops_tls needs tls_cert_file and tls_key_file "
                          "(the ops port serves the same certificate)")
    _check_gate_webhook(config, source)
    if config.port == config.ops_port:
        raise ConfigError(
            f"{source}: port and ops_port are both {config.port}; kube-scheduler's port "
            "(filter, prioritize, bind) and the ops port (probes, metrics) must differ"
        )
    http_timeout = config.scheduler_http_timeout_seconds
    for field_name in ("bind_timeout_seconds", "bind_wait_seconds"):
        value = getattr(config, field_name)
        if value >= http_timeout:
            raise ConfigError(
                f"{source}: {field_name} ({value:g} s) must be below "
                f"scheduler_http_timeout_seconds ({http_timeout:g} s, the extender's "
                "httpTimeout in the KubeSchedulerConfiguration): kube-scheduler gives up on "
                "the call first"
            )
    if config.backoff_max_seconds < config.backoff_initial_seconds:
        raise ConfigError(
            f"{source}: backoff_max_seconds must be at least backoff_initial_seconds"
        )
    return config


def _check_gate_webhook(config: ExtenderConfig, source: str) -> None:
    webhook_files = (config.gate_webhook_cert_file, config.gate_webhook_key_file)
    if config.gate_webhook_port is not None and None in webhook_files:
        raise ConfigError(
            f"{source}: gate_webhook_port needs gate_webhook_cert_file and "
            "gate_webhook_key_file: kube-apiserver calls admission webhooks over HTTPS only")
    if config.gate_webhook_port is None and webhook_files != (None, None):
        raise ConfigError(
            f"{source}: gate_webhook_cert_file/gate_webhook_key_file are set but "
            "gate_webhook_port is not: set the port to serve the gate webhook")
    if config.gate_webhook_port in (config.port, config.ops_port):
        raise ConfigError(
            f"{source}: gate_webhook_port ({config.gate_webhook_port}) must differ from port "
            f"({config.port}) and ops_port ({config.ops_port})")


def _admission(raw: Any, where: str, locality: LocalityConfig) -> AdmissionConfig:
    admission = AdmissionConfig.from_mapping(raw, where, locality.gpu_resources,
                                             locality.device_names)
    levels = [level.name for level in locality.topology_levels]
    for index, group in enumerate(admission.node_groups):
        if group.level not in levels:
            raise ConfigError(
                f"{where}: autoscaler: node_groups[{index}]: level: {group.level!r} is not "
                f"one of locality.topology_levels ({', '.join(levels)})")
    return admission
