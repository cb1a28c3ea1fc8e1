"""A real, throw-away Kubernetes control plane from prebuilt binaries, for end-to-end tests.

Decides: which binaries are needed and where they are found (the directory named by the
environment variable HEADSTART_E2E_BIN), the command line of every component, the order
they start in and what "ready" means for each, and the operations tests perform on a
running cluster (restart the API server, start a second one on the same etcd, read the
audit log). Everything listens on 127.0.0.1, on ports picked at run time; each cluster
has its own work directory (etcd data, configs, one log per component, audit log).

Components: etcd -> kube-apiserver (kube-system Active) -> kube-controller-manager, the
kube-schedulers (each from a KubeSchedulerConfiguration), kwok (fake kubelets for nodes
annotated kwok.x-k8s.io/node=fake) -> an anchor node -> CRDs (Established) ->
cluster-autoscaler with the kwok provider (its ConfigMaps first; ready once its status
ConfigMap exists, which proves its main loop ran). Facts these rest on (CA waits 30 s
before scaling up for GPU pods; standalone kwok needs explicit stages; with zero nodes
kube-scheduler retries only on its backoff timer, hence the tainted anchor node; CA's
kwok provider deletes its nodes on SIGTERM) were checked on these binaries and their
sources: kubernetes v1.36.2, etcd 3.6, kwok v0.8 (172defa5), cluster-autoscaler
(kubernetes/autoscaler 55c37cd5).

Must not: know about headstart (headstart.py starts its processes).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.e2e.audit import Write, writes
from tests.e2e.kube import Kube, NotYet, wait_until
from tests.e2e.pki import ADMIN, Pki
from tests.e2e.processes import Process, exit_on_sigterm, free_ports, stop_all

ENV_VAR = "HEADSTART_E2E_BIN"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
            "cluster-autoscaler", "kube-scheduler-plugins")
# kube-scheduler-plugins: kubernetes-sigs/scheduler-plugins' kube-scheduler (cmd/scheduler),
# the image the shipped headstart-scheduler runs; a scheduler whose configuration names
# Coscheduling runs it. Its PodGroup CRD (manifests/crds in that repository) is read
# from beside the binaries.
POD_GROUP_CRD = Path("crds") / "scheduling.x-k8s.io_podgroups.yaml"
KARPENTER_BINARY = "karpenter-kwok"  # only for scenarios with ClusterSpec(karpenter=True)
DATA = Path(__file__).resolve().parent / "data"
KARPENTER_CRDS = tuple(DATA / f"{name}.yaml" for name in (
    "karpenter.sh_nodepools", "karpenter.sh_nodeclaims", "karpenter.kwok.sh_kwoknodeclasses",
    "autoscaling.x-k8s.io_capacitybuffers"))
AUTOSCALER_CRDS = tuple(
    DATA / f"autoscaling.x-k8s.io_{name}.yaml"
    for name in ("capacitybuffers", "capacityquotas", "provisioningrequests")
)
# Kueue's Workload, LocalQueue, ClusterQueue and AdmissionCheck CRDs (kueue ff69552e,
# gzipped: the Workload CRD alone is 1.4 MB); install with ClusterSpec(crds=KUEUE_CRDS).
KUEUE_CRDS = tuple(DATA / f"kueue.x-k8s.io_{name}.yaml.gz"
                   for name in ("workloads", "localqueues", "clusterqueues", "admissionchecks"))
ANCHOR_LABEL = "e2e/anchor"
# The group kube-apiserver gives every ServiceAccount of the headstart namespace: the
# identity headstart's processes have when they run as installed (installed.py).
HEADSTART_ACCOUNTS_GROUP = "system:serviceaccounts:headstart"
READY_TIMEOUT_S = 90.0
TOKEN_LIFETIME_S = 24 * 3600

# Every request by headstart's processes (the ServiceAccounts of its namespace), nothing
# else: the tests read who wrote what, and when, from this log, and which verbs each
# identity used (allowed or refused).
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Metadata", "userGroups": [HEADSTART_ACCOUNTS_GROUP]},
        {"level": "None"},
    ],
}


def karpenter_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """Why a Karpenter scenario cannot run here (None when it can)."""
    directory = environ.get(ENV_VAR, "")
    if not os.access(os.path.join(directory, KARPENTER_BINARY), os.X_OK):
        return (f"{ENV_VAR}={directory} lacks {KARPENTER_BINARY} (kubernetes-sigs/karpenter's "
                "kwok provider, built from its kwok/ folder) for the Karpenter scenarios")
    return None


def binaries_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """Why the e2e tests cannot run here (None when they can)."""
    directory = environ.get(ENV_VAR)
    if not directory:
        return (f"{ENV_VAR} is not set: point it at a directory holding "
                f"{', '.join(BINARIES)} to run the end-to-end tests")
    missing = [name for name in BINARIES
               if not os.access(os.path.join(directory, name), os.X_OK)]
    if missing:
        return f"{ENV_VAR}={directory} lacks the executable(s) {', '.join(missing)}"
    if not os.path.isfile(os.path.join(directory, POD_GROUP_CRD)):
        return (f"{ENV_VAR}={directory} lacks {POD_GROUP_CRD} (scheduler-plugins' PodGroup "
                "CRD, from its manifests/crds)")
    return None



def optional_problem(needed: tuple[Path | str, ...], how: str) -> str | None:
    """Why an optional third-party component cannot run here (None: it can): the first of
    `needed` absent from HEADSTART_E2E_BIN, and `how` to get it."""
    directory = Path(os.environ.get(ENV_VAR, ""))
    for path in needed:
        if not (directory / path).is_file():
            return f"{ENV_VAR}/{path} is absent: {how}"
    return None


def pod_group_crd(environ: Mapping[str, str] = os.environ) -> Path:
    """scheduler-plugins' PodGroup CRD beside the binaries (checked by binaries_problem)."""
    return Path(environ.get(ENV_VAR, "")) / POD_GROUP_CRD


def scheduler_binary(config: Mapping[str, Any]) -> str:
    """kube-scheduler-plugins for a configuration that names Coscheduling, else the
    upstream kube-scheduler (which refuses to start with a plugin it does not know)."""
    return "kube-scheduler-plugins" if "Coscheduling" in yaml.safe_dump(dict(config)) \
        else "kube-scheduler"


def default_scheduler_config() -> dict[str, Any]:
    """The cluster's own kube-scheduler: default profile, no leader election (one instance;
    an election would make it exit when an API-server restart outlasts its renew deadline)."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "default-scheduler"}],
    }


@dataclass(frozen=True)
class ClusterSpec:
    """What one cluster runs."""

    controller_manager: bool = True
    """kube-controller-manager with every controller (Deployments, namespaces, service accounts)."""
    schedulers: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: {"kube-scheduler": default_scheduler_config()})
    """Process name -> KubeSchedulerConfiguration (clientConnection is filled in here)."""
    scheduler_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Process name -> more command-line flags for that scheduler (`--feature-gates=...`:
    kube-scheduler takes its feature gates only from the command line)."""
    kwok: bool = True
    """kwok, driving every node annotated kwok.x-k8s.io/node=fake."""
    kwok_stages: Path = DATA / "kwok-stages.yaml"
    """kwok's Stage objects."""
    kwok_node_lease_s: int = 40
    """Node Lease duration kwok renews (the heartbeat kcm's node lifecycle controller
    reads); 0: no Leases (for a cluster without kcm, where nobody reads them)."""
    anchor_node: bool = True
    """One tainted kwok node in no node group, so the cluster never has zero nodes."""
    autoscaler: bool = False
    """cluster-autoscaler with the kwok provider and the node groups of `node_groups`."""
    node_groups: Path = DATA / "kwok-provider.yaml"
    """The kwok provider's ConfigMaps (provider config and node templates)."""
    autoscaler_args: tuple[str, ...] = ()
    """Extra cluster-autoscaler flags."""
    karpenter: bool = False
    """Karpenter with its kwok provider (instead of, or beside, cluster-autoscaler): its
    CRDs, the CapacityBuffer CRD, `karpenter_node_pools` and the controller, with the
    CapacityBuffer feature on."""
    karpenter_node_pools: Path = DATA / "karpenter-nodepools.yaml"
    """Karpenter's KWOKNodeClass and NodePools."""
    karpenter_instance_types: Path = DATA / "karpenter-instance-types.json"
    """The instance types the kwok provider offers (its INSTANCE_TYPES_FILE_PATH)."""
    crds: tuple[Path, ...] = ()
    """CRDs to install (the autoscaler's own are added when `autoscaler` is set)."""
    audit_policy: Mapping[str, Any] | None = field(default_factory=lambda: AUDIT_POLICY)
    """kube-apiserver audit policy (None: no audit log)."""
    apiserver_args: tuple[str, ...] = ()
    """Extra kube-apiserver flags."""
    setup: tuple[Callable[[ControlPlane], None], ...] = ()
    """Steps run once kube-apiserver serves, before any other component starts (e.g.
    installing headstart's manifests, so its scheduler can run as its ServiceAccount)."""
    scheduler_accounts: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Scheduler name -> (namespace, ServiceAccount) it runs as, with a token of that
    account (for itself, its delegated authentication and authorization), as its
    Deployment would; a scheduler not named here runs as cluster-admin."""
    restart_on_exit: tuple[str, ...] = ("headstart-scheduler",)
    """Components started again when they exit, as kubelet restarts a container: a
    kube-scheduler with leader election exits when it cannot renew its Lease for its
    renew deadline (10 s), e.g. while the API server restarts."""


class ControlPlane:
    """One cluster: `start()`, use `kube` (admin client), `stop()` (always; idempotent)."""

    def __init__(self, bin_dir: Path, workdir: Path, pki: Pki, spec: ClusterSpec) -> None:
        self.bin = Path(bin_dir)
        self.workdir = Path(workdir)
        self.pki = pki
        self.spec = spec
        self.logs = self.workdir / "logs"
        self.config_dir = self.workdir / "config"
        self.processes: dict[str, Process] = {}
        self.timings: dict[str, float] = {}
        names = ["etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kwok",
                 "cluster-autoscaler", "karpenter-metrics", "karpenter-health",
                 *spec.schedulers]
        self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        self.server = f"https://127.0.0.1:{self.ports['kube-apiserver']}"
        self.admin_kubeconfig = self.kubeconfig(ADMIN)
        self.kube = self.client()
        self.audit_log = self.workdir / "audit.log"
        self.restarts: dict[str, int] = {}
        self.started_at = time.time()
        self.stopped_at: float | None = None
        self._stopping = threading.Event()
        self.apiserver_ready_at: list[float] = []
        """When each kube-apiserver (re)start answered /readyz: the RBAC authorizer
        refuses requests for a moment around a restart, before its informers sync."""
        self.rbac_applied_at: list[float] = []
        """When Roles and bindings were applied (installed.install): the authorizer's
        informers take a moment to see them."""
        self.credential_names: dict[str, str] = {}
        """Audit credential id ("JTI=...") of each token handed out -> the process name."""
        self._supervisor = threading.Thread(target=self._restart_exited, daemon=True,
                                            name=f"supervise-{self.workdir.name}")

    # ---- clients -------------------------------------------------------------------

    def kubeconfig(self, name: str = ADMIN, group: str | None = None,
                   server: str | None = None) -> Path:
        """A kubeconfig for identity `name` (in system:masters, plus `group`)."""
        stem = name if group is None else f"{name}.{group}"
        port = (server or self.server).rsplit(":", 1)[1]
        return self.pki.kubeconfig(self.config_dir / f"{stem}-{port}.kubeconfig",
                                   server or self.server, name, group)

    def token_kubeconfig(self, namespace: str, account: str, name: str) -> Path:
        """A kubeconfig holding a fresh token of ServiceAccount `namespace/account` (the
        TokenRequest API, as kubelet gets one for a pod), for process `name`; the audit
        log's writes made with it are attributed to `name` (audit.writes)."""
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": TOKEN_LIFETIME_S}}
        token = self.kube.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request,
        )["status"]["token"]
        self.credential_names[f"JTI={token_claims(token)['jti']}"] = name
        return self.pki.token_kubeconfig(self.config_dir / f"{name}.token.kubeconfig",
                                         self.server, account, token)

    def writes(self) -> list[Write]:
        """The audit log's successful writes, each attributed to its process."""
        return writes(self.audit_events(), self.credential_names)

    def client(self, server: str | None = None) -> Kube:
        cert, key = self.pki.client(ADMIN)
        return Kube(server or self.server, self.pki.ca_cert, cert, key)

    # ---- start / stop --------------------------------------------------------------

    def start(self) -> ControlPlane:
        exit_on_sigterm()
        started = time.monotonic()
        try:
            self._step("etcd", self._start_etcd)
            self._step("kube-apiserver", self.start_apiserver)
            for step in self.spec.setup:
                self._step(getattr(step, "__name__", "setup"), lambda step=step: step(self))
            self._step("components", self._start_components)
            if self.spec.kwok and self.spec.anchor_node:
                self._step("anchor-node", self._create_anchor_node)
            crds = list(self.spec.crds)
            if self.spec.autoscaler:
                crds = [*AUTOSCALER_CRDS, *crds]
            if self.spec.karpenter:
                crds = [*[c for c in KARPENTER_CRDS if c not in crds], *crds]
            if crds:
                self._step("crds", lambda: self.install_crds(crds))
            if self.spec.autoscaler:
                self._step("cluster-autoscaler", self._start_autoscaler)
            if self.spec.karpenter:
                self._step("karpenter", self._start_karpenter)
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = round(time.monotonic() - started, 2)
        self._supervisor.start()
        return self

    def stop(self) -> None:
        """Clients first (headstart, schedulers, CA, kwok: they shut down cleanly while the
        API server still answers), then the API servers, then etcd."""
        self._stopping.set()
        self.stopped_at = self.stopped_at or time.time()
        if self._supervisor.is_alive():
            self._supervisor.join(5)
        processes = list(self.processes.values())
        servers = [p for p in processes if p.name.startswith("kube-apiserver")]
        clients = [p for p in processes if p not in servers and p.name != "etcd"]
        for wave in (clients, servers, [p for p in processes if p.name == "etcd"]):
            stop_all(wave, grace_s=3.0)

    def _restart_exited(self) -> None:
        while not self._stopping.wait(0.5):
            for name in self.spec.restart_on_exit:
                process = self.processes.get(name)
                if process is not None and process.popen is not None and not process.alive():
                    process.start()
                    self.restarts[name] = self.restarts.get(name, 0) + 1

    def _step(self, name: str, action: Callable[[], Any]) -> None:
        started = time.monotonic()
        action()
        self.timings[name] = round(time.monotonic() - started, 2)

    def run(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> Process:
        """Start process `name` (again, with the same command line, if it ran before); it
        is stopped with the cluster and its log tail shows in failure messages."""
        process = self.processes.get(name)
        if process is None:
            process = Process(name, argv, self.logs / f"{name}.log", env, cwd)
            self.processes[name] = process
        return process.start()

    def _start_etcd(self) -> None:
        client, peer = self.ports["etcd"], self.ports["etcd-peer"]
        self.run("etcd", [
            self.bin / "etcd", "--name", "e2e", "--data-dir", self.workdir / "etcd-data",
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--unsafe-no-fsync", "--quota-backend-bytes=2147483648", "--log-level=warn",
        ])
        self._await_http("etcd", f"http://127.0.0.1:{client}/health", '"health":"true"')

    def apiserver_argv(self, port: int) -> list[Any]:
        pki = self.pki
        argv: list[Any] = [
            self.bin / "kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--tls-cert-file={pki.server_cert}", f"--tls-private-key-file={pki.server_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC", "--allow-privileged=true",
            # 127.0.0.1 is not a valid Endpoints address: the default reconciler would
            # log errors forever. Nothing runs in-cluster, so no endpoints are needed.
            "--endpoint-reconciler-type=none",
            # Only so kcm and the schedulers stop warning about a missing request-header CA.
            f"--requestheader-client-ca-file={pki.ca_cert}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--profiling=false",
            *self.spec.apiserver_args,
        ]
        if self.spec.audit_policy is not None:
            policy = self.config_dir / "audit-policy.yaml"
            policy.parent.mkdir(parents=True, exist_ok=True)
            policy.write_text(yaml.safe_dump(dict(self.spec.audit_policy)))
            argv += [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                     "--audit-log-format=json", "--audit-log-maxsize=0"]
        return argv

    def start_apiserver(self) -> None:
        """Start (or start again) the main kube-apiserver and wait until it serves."""
        self.run("kube-apiserver", self.apiserver_argv(self.ports["kube-apiserver"]))
        self._await_apiserver("kube-apiserver", self.kube)

    def stop_apiserver(self, crash: bool = False) -> None:
        """Stop the main kube-apiserver: SIGTERM (graceful: it stops listening and ends
        its watches at once) or, with `crash`, SIGKILL (connections just break). After
        SIGTERM this kube-apiserver closes its port within a second but its process can
        linger for tens of seconds: it gets SIGKILL after 5 s."""
        process = self.processes["kube-apiserver"]
        if crash:
            process.kill()
        else:
            process.stop(grace_s=5.0)

    def start_extra_apiserver(self, name: str = "kube-apiserver-2") -> Kube:
        """A second kube-apiserver on the same etcd (as in an HA control plane); returns
        an admin client for it. It stops with the cluster."""
        port = free_ports(1)[0]
        self.ports[name] = port
        self.run(name, self.apiserver_argv(port))
        client = self.client(f"https://127.0.0.1:{port}")
        self._await_apiserver(name, client)
        return client

    def _await_apiserver(self, name: str, client: Kube) -> None:
        self._await_http(name, client.server + "/readyz", "ok")
        self.apiserver_ready_at.append(time.time())

        def kube_system_active() -> Any:
            namespace = client.get("/api/v1/namespaces/kube-system", missing_ok=True)
            phase = ((namespace or {}).get("status") or {}).get("phase")
            return phase == "Active" or NotYet(phase)

        self.wait("namespace kube-system Active", kube_system_active, READY_TIMEOUT_S, [name])

    def _start_components(self) -> None:
        kubeconfig = self.admin_kubeconfig
        auth = [f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1"]
        checks: list[tuple[str, str, str]] = []
        if self.spec.controller_manager:
            port = self.ports["kube-controller-manager"]
            self.run("kube-controller-manager", [
                self.bin / "kube-controller-manager", *auth, f"--secure-port={port}",
                "--controllers=*", "--use-service-account-credentials=false",
                f"--service-account-private-key-file={self.pki.sa_key}",
                f"--root-ca-file={self.pki.ca_cert}",
                f"--cluster-signing-cert-file={self.pki.ca_cert}",
                f"--cluster-signing-key-file={self.pki.ca_key}",
                "--leader-elect=false",
            ])
            checks.append(("kube-controller-manager", f"https://127.0.0.1:{port}/healthz", "ok"))
        for name, config in self.spec.schedulers.items():
            port = self.ports[name]
            path = self.config_dir / f"{name}.yaml"
            identity, scheduler_auth = kubeconfig, auth
            if name in self.spec.scheduler_accounts:
                namespace, account = self.spec.scheduler_accounts[name]
                identity = self.token_kubeconfig(namespace, account, name)
                scheduler_auth = [f"--authentication-kubeconfig={identity}",
                                  f"--authorization-kubeconfig={identity}",
                                  "--bind-address=127.0.0.1"]
            body = {**config, "clientConnection": {
                **(config.get("clientConnection") or {}), "kubeconfig": str(identity)}}
            path.write_text(yaml.safe_dump(body, sort_keys=False))
            # kube-scheduler ignores --kubeconfig once --config is given: the file says it.
            self.run(name, [self.bin / scheduler_binary(config), f"--config={path}",
                            *scheduler_auth, f"--secure-port={port}",
                            *self.spec.scheduler_args.get(name, ())])
            checks.append((name, f"https://127.0.0.1:{port}/readyz", "ok"))
        if self.spec.kwok:
            port = self.ports["kwok"]
            self.run("kwok", [
                self.bin / "kwok", f"--kubeconfig={kubeconfig}",
                f"--config={self.spec.kwok_stages}",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                f"--node-lease-duration-seconds={self.spec.kwok_node_lease_s}",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.1.0.1", f"--server-address=127.0.0.1:{port}",
            ])
            checks.append(("kwok", f"http://127.0.0.1:{port}/healthz", "ok"))
        for name, url, expected in checks:  # started together, awaited one by one
            self._await_http(name, url, expected)

    def _create_anchor_node(self) -> None:
        from tests.e2e.objects import kwok_node

        node = kwok_node("e2e-anchor", cpu="1", memory="1Gi", gpus=0,
                         labels={ANCHOR_LABEL: "true"},
                         taints=[{"key": ANCHOR_LABEL, "value": "true", "effect": "NoSchedule"}])
        self.kube.create("/api/v1/nodes", node)
        self.wait("anchor node Ready", lambda: node_ready(self.kube, "e2e-anchor"),
                  READY_TIMEOUT_S, ["kwok"])

    def install_crds(self, paths: Sequence[Path]) -> None:
        names = []
        for path in paths:
            crd = yaml.safe_load(read_data(path))
            names.append(crd["metadata"]["name"])
            self.kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        for name in names:
            def established(name: str = name) -> Any:
                crd = self.kube.get(
                    f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                return any(c["type"] == "Established" and c["status"] == "True"
                           for c in (crd.get("status") or {}).get("conditions") or [])
            self.wait(f"CRD {name} Established", established, READY_TIMEOUT_S)

    def _start_autoscaler(self) -> None:
        self.kube.create_yaml("/api/v1/namespaces/kube-system/configmaps",
                              yaml.safe_load_all(self.spec.node_groups.read_text()))
        port = self.ports["cluster-autoscaler"]
        kubeconfig = self.admin_kubeconfig
        env = {**os.environ, "KWOK_PROVIDER_MODE": "local", "KUBECONFIG": str(kubeconfig),
               "POD_NAMESPACE": "kube-system"}
        self.run("cluster-autoscaler", [
            self.bin / "cluster-autoscaler", "--cloud-provider=kwok",
            f"--kubeconfig={kubeconfig}", "--namespace=kube-system",
            f"--address=127.0.0.1:{port}", "--leader-elect=false",
            "--scan-interval=5s", "--expendable-pods-priority-cutoff=-10",
            "--max-node-provision-time=2m", "--new-pod-scale-up-delay=0s",
            "--scale-down-delay-after-add=30s", "--scale-down-unneeded-time=30s",
            "--capacity-buffer-controller-enabled=true",
            "--capacity-buffer-pod-injection-enabled=true",
            "--v=2", *self.spec.autoscaler_args,
        ], env)
        self._await_http("cluster-autoscaler", f"http://127.0.0.1:{port}/health-check", "OK")
        # /health-check answers before the first loop; the status ConfigMap proves it ran
        # (it never appears when, e.g., the CapacityBuffer informer cannot sync).
        self.wait(
            "cluster-autoscaler's first loop (ConfigMap kube-system/cluster-autoscaler-status)",
            lambda: self.kube.get("/api/v1/namespaces/kube-system/configmaps/"
                                  "cluster-autoscaler-status", missing_ok=True),
            READY_TIMEOUT_S, ["cluster-autoscaler"])

    def _start_karpenter(self) -> None:
        """Karpenter's kwok provider, configured by environment as its chart does (it
        reads no config file): out of a cluster it needs no leader election, and its
        metrics and probe ports (bound on every interface; the tests use loopback) must
        not collide with another cluster's."""
        for document in yaml.safe_load_all(self.spec.karpenter_node_pools.read_text()):
            plural = {"KWOKNodeClass": "karpenter.kwok.sh/v1alpha1/kwoknodeclasses",
                      "NodePool": "karpenter.sh/v1/nodepools"}[document["kind"]]
            self.kube.create(f"/apis/{plural}", document)
        health = self.ports["karpenter-health"]
        env = {**os.environ, "KUBECONFIG": str(self.admin_kubeconfig),
               "DISABLE_LEADER_ELECTION": "true",
               "METRICS_PORT": str(self.ports["karpenter-metrics"]),
               "HEALTH_PROBE_PORT": str(health),
               "INSTANCE_TYPES_FILE_PATH": str(self.spec.karpenter_instance_types),
               "FEATURE_GATES": "NodeRepair=false,ReservedCapacity=true,"
                                "SpotToSpotConsolidation=false,NodeOverlay=false,"
                                "StaticCapacity=false,CapacityBuffer=true",
               "LOG_LEVEL": "debug"}
        self.run("karpenter", [self.bin / KARPENTER_BINARY], env)
        self._await_http("karpenter", f"http://127.0.0.1:{health}/readyz", "ok")

    # ---- waiting, and what to show when waiting fails --------------------------------

    def _await_http(self, name: str, url: str, expected: str) -> None:
        cert, key = self.pki.client(ADMIN)

        def probe() -> Any:
            process = self.processes.get(name)
            if process is not None and not process.alive():
                raise AssertionError(f"{name} exited with code {process.exit_code()}:\n"
                                     f"{process.tail(40)}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the components' self-signed serving certs
                response = requests.get(url, verify=False, cert=(str(cert), str(key)),
                                        timeout=3)
            return expected in response.text or NotYet(f"HTTP {response.status_code}: "
                                                        f"{response.text[:200]}")

        self.wait(f"{name} ready ({url})", probe, READY_TIMEOUT_S, [name])

    def wait(self, what: str, probe: Callable[[], Any], timeout_s: float,
             logs: Sequence[str] = ()) -> Any:
        """`wait_until` whose failure message ends with the tails of `logs` and of every
        component that died."""
        return wait_until(what, probe, timeout_s, context=lambda: self.diagnostics(logs))

    def dead(self) -> list[str]:
        return [name for name, p in self.processes.items() if p.popen and not p.alive()]

    def diagnostics(self, logs: Sequence[str] = (), lines: int = 25) -> str:
        names = list(dict.fromkeys([*logs, *self.dead()]))
        parts = [f"cluster work dir (kept when a test fails): {self.workdir}"]
        for name in names:
            process = self.processes.get(name)
            if process is None:
                continue
            state = "running" if process.alive() else f"exited {process.exit_code()}"
            parts.append(f"--- {name} ({state}), last {lines} lines of {process.log_path}:\n"
                         f"{process.tail(lines)}")
        return "\n".join(parts)

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log's events (writes by headstart's processes with the default policy)."""
        if not self.audit_log.exists():
            return []
        events = []
        for line in self.audit_log.read_text().splitlines():
            if line.strip():
                events.append(json.loads(line))
        return events


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT (unverified: the API server that issued it checks it)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def read_data(path: Path) -> str:
    """A data file's text (a `.gz` one decompressed)."""
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text()


def node_ready(kube: Kube, name: str) -> Any:
    node = kube.get(f"/api/v1/nodes/{name}", missing_ok=True)
    if node is None:
        return NotYet("no such node")
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["status"] == "True" or NotYet(condition)
    return NotYet("no Ready condition")
