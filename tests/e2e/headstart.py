"""headstart's own processes in an e2e cluster, started exactly as users start them.

Decides: the command lines (`python -m headstart extender --kubeconfig ... --config ...
--port ...`, `python -m headstart overprovisioner --config ... --kubeconfig ...`), the
identity each process has toward the API server (installed.py: the cluster gets the
rendered manifests' RBAC, accounts, PriorityClass and ConfigMaps, and each process a
token of the ServiceAccount its Deployment names, so RBAC refuses what the shipped
Roles do not grant; the audit log tells replicas apart by their tokens; `POD_NAME`,
which the overprovisioner's leader election uses as its identity), its config (the
overlay's shipped config, with the sections a scenario replaces and the addresses),
readiness (`/readyz` 200), and the headstart-scheduler: the SHIPPED
manifests/base/scheduler/scheduler-config.yaml with only the extender's URL and its
certificate files' paths replaced (the kubeconfig is added by controlplane.py), running
as its own ServiceAccount. Both sides speak mutual TLS as shipped, with certificates
made by the install docs' openssl functions (scheduler_tls.py).

Must not: decide what a scenario checks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import requests
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from extender.admission.resizer import MERGE_PATCH
from tests.e2e import installed
from tests.e2e.controlplane import (
    READY_TIMEOUT_S,
    ClusterSpec,
    ControlPlane,
    default_scheduler_config,
    pod_group_crd,
)
from tests.e2e.kube import NotYet
from tests.e2e.objects import HEADSTART_SCHEDULER
from tests.e2e.processes import Process, free_ports
from tests.e2e.scheduler_tls import scheduler_pki

REPO = Path(__file__).resolve().parents[2]
SHIPPED_SCHEDULER_CONFIG = REPO / "manifests" / "base" / "scheduler" / "scheduler-config.yaml"
WITHOUT_COSCHEDULING_CONFIG = (REPO / "manifests" / "components" / "without-coscheduling"
                               / "scheduler-config.yaml")


def headstart_scheduler_config(extender_url: str, lease_in_headstart_namespace: bool = True,
                               coscheduling: bool = True) -> dict[str, Any]:
    """The shipped headstart-scheduler configuration, pointed at `extender_url`. Not
    `lease_in_headstart_namespace` (a variant that is not headstart's own scheduler):
    its Lease goes to kube-system. Not `coscheduling`: the without-coscheduling
    component's (run by the upstream kube-scheduler)."""
    config = yaml.safe_load((SHIPPED_SCHEDULER_CONFIG if coscheduling
                             else WITHOUT_COSCHEDULING_CONFIG).read_text())
    if not lease_in_headstart_namespace:
        config["leaderElection"]["resourceNamespace"] = "kube-system"
    [extender] = config["extenders"]
    extender["urlPrefix"] = extender_url
    if "tlsConfig" in extender:  # the shipped mutual TLS, with this run's files
        pki = scheduler_pki()
        extender["tlsConfig"] = {"certFile": str(pki.client[0]), "keyFile": str(pki.client[1]),
                                 "caFile": str(pki.ca)}
    return config


def extender_url(port: int) -> str:
    """The scheduler's URL for an extender on `port`, in the shipped scheme."""
    scheme = "https" if yaml.safe_load(SHIPPED_SCHEDULER_CONFIG.read_text())[
        "extenders"][0].get("enableHTTPS") else "http"
    return f"{scheme}://127.0.0.1:{port}"


def tls_files(shipped: Mapping[str, Any]) -> dict[str, str]:
    """The shipped extender config's certificate settings, pointed at this run's files."""
    pki = scheduler_pki()
    ours = {"tls_cert_file": str(pki.server[0]), "tls_key_file": str(pki.server[1]),
            "tls_client_ca_file": str(pki.ca)}
    return {name: path for name, path in ours.items() if shipped.get(name)}


def scheduler_variant(name: str, extender_url: str | None,
                      coscheduling: bool = True) -> dict[str, Any]:
    """The shipped configuration as one more scheduler, `name` (its profile's
    schedulerName), leader election off; with `extender_url` None, without the extender
    (the same profile, kube-scheduler binding): the control for what the extender adds.
    Not `coscheduling`: the without-coscheduling component's configuration."""
    config = headstart_scheduler_config(extender_url or "http://unused",
                                        lease_in_headstart_namespace=False,
                                        coscheduling=coscheduling)
    config["profiles"][0]["schedulerName"] = name
    config["leaderElection"] = {"leaderElect": False}
    if extender_url is None:
        del config["extenders"]
    return config


def headstart_cluster(coscheduling: bool = True, **spec: Any) -> tuple[ClusterSpec, int]:
    """A cluster spec with headstart installed from its manifests, the default scheduler
    and the shipped headstart-scheduler running as its ServiceAccount (placeholders and
    training pods go through it), and the port its extender must serve kube-scheduler's
    calls on (start `Extender(cluster, port=port)`)."""
    port = free_ports(1)[0]
    schedulers = {
        "kube-scheduler": default_scheduler_config(),
        HEADSTART_SCHEDULER: headstart_scheduler_config(extender_url(port),
                                                        coscheduling=coscheduling),
    }
    accounts = {HEADSTART_SCHEDULER: (installed.NAMESPACE, installed.service_account("scheduler"))}
    # The PodGroup CRD, as the install docs apply it before headstart: Coscheduling in
    # the shipped scheduler reads PodGroups, the admitter creates them.
    crds = (pod_group_crd(), *spec.pop("crds", ()))
    return ClusterSpec(schedulers=schedulers, setup=(ensure_installed,),
                       scheduler_accounts=accounts, crds=crds, **spec), port


def ensure_installed(cluster: ControlPlane) -> None:
    """Install headstart's manifests into `cluster` unless this harness already did."""
    if not getattr(cluster, "headstart_installed", False):
        installed.install(cluster)
        cluster.headstart_installed = True


class HeadstartProcess:
    """One `python -m headstart ...` subprocess, logged like a component; `get` reaches
    its /readyz (and the rest of its operations endpoints) on `ops_port`."""

    component = ""
    """The manifests' name for it (installed.ACCOUNTS): its ServiceAccount and config."""

    def __init__(self, cluster: ControlPlane, name: str, ops_port: int | None = None) -> None:
        self.cluster = cluster
        self.name = name
        self.ops_port = ops_port or free_ports(1)[0]
        ensure_installed(cluster)
        self.kubeconfig = cluster.token_kubeconfig(
            installed.NAMESPACE, installed.service_account(self.component), name)

    def _run(self, argv: list[Any]) -> Process:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "POD_NAME": self.name}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        # cwd: `python -m` puts it first on sys.path, so this checkout's code runs even
        # where another one is installed.
        return self.cluster.run(self.name, [sys.executable, "-m", "headstart", *argv], env,
                                cwd=REPO)

    @property
    def process(self) -> Process:
        return self.cluster.processes[self.name]

    def get(self, path: str) -> requests.Response:
        return requests.get(f"http://127.0.0.1:{self.ops_port}{path}", timeout=5)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        def ready() -> Any:
            if not self.process.alive():
                raise AssertionError(f"{self.name} exited with code "
                                     f"{self.process.exit_code()}:\n{self.process.tail(40)}")
            response = self.get("/readyz")
            return response.status_code == 200 or NotYet(response.text[:300])

        self.cluster.wait(f"{self.name} /readyz 200", ready, timeout_s, [self.name])

    def kill(self) -> None:
        """SIGKILL (a crash: no graceful shutdown, no Lease release)."""
        self.process.kill()

    def stop(self) -> None:
        self.process.stop(grace_s=15.0)


class Extender(HeadstartProcess):
    """`headstart extender` on 127.0.0.1 with the default config otherwise: kube-scheduler's
    calls (filter, prioritize, bind) on `port`, probes and /explain on `ops_port`; with
    `gate_webhook` (port, folder of tls.crt and tls.key), the gate webhook too."""

    component = "extender"

    def __init__(self, cluster: ControlPlane, name: str = "headstart-extender",
                 port: int | None = None, settings: dict[str, Any] | None = None,
                 gate_webhook: tuple[int, Path] | None = None) -> None:
        super().__init__(cluster, name)
        self.port = port or free_ports(1)[0]
        self.gate_webhook = gate_webhook
        self.config = cluster.config_dir / f"{name}.yaml"
        document = installed.scenario_config(
            self.component, settings or {},
            {"host": "127.0.0.1", "port": self.port, "ops_port": self.ops_port,
             **tls_files(installed.shipped_config(self.component))})
        self.config.write_text(yaml.safe_dump(document, sort_keys=False))

    def start(self) -> Extender:
        webhook = []
        if self.gate_webhook is not None:  # the gate-webhook component's two flags
            webhook = ["--gate-webhook-port", self.gate_webhook[0],
                       "--gate-webhook-tls-dir", self.gate_webhook[1]]
        self._run(["extender", "--kubeconfig", self.kubeconfig, "--config", self.config,
                   "--port", self.port, "--ops-port", self.ops_port, *webhook])
        return self

    def readyz(self) -> dict[str, Any]:
        return self.get("/readyz").json()


class Overprovisioner(HeadstartProcess):
    """`headstart overprovisioner` with `settings` (a config mapping; host, port and the
    history file are set here)."""

    component = "overprovisioner"

    def __init__(self, cluster: ControlPlane, settings: dict[str, Any],
                 name: str = "headstart-overprovisioner") -> None:
        super().__init__(cluster, name)
        document = installed.scenario_config(
            self.component, settings, {"host": "127.0.0.1", "port": self.ops_port})
        forecast = dict(document.get("forecast") or {})
        if "history_path" not in (settings.get("forecast") or {}):  # an address: ours
            forecast["history_path"] = str(cluster.workdir / f"{name}-history.sqlite")
        document["forecast"] = forecast
        self.config = cluster.config_dir / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump(document, sort_keys=False))

    def start(self) -> Overprovisioner:
        self._run(["overprovisioner", "--config", self.config, "--kubeconfig", self.kubeconfig])
        return self

    def plan(self) -> dict[str, Any]:
        response = self.get("/plan")
        response.raise_for_status()
        return response.json()


def extender_on_nodes(e2e_clusters: Any, name: str, nodes: Mapping[str, str | None],
                      logs: Sequence[str]) -> tuple[ControlPlane, Extender, int]:
    """A headstart cluster (no autoscaler) with one kwok 8-GPU node per entry of `nodes`
    (name -> placement group, None for none) and a ready extender whose cache holds them
    all (the anchor node too); returns (cluster, extender, its port)."""
    from tests.e2e.objects import kwok_node

    return extender_on(e2e_clusters, name, [kwok_node(node, memory="768Gi", group=group)
                                            for node, group in nodes.items()], logs)


def extender_on(e2e_clusters: Any, name: str, nodes: Sequence[dict[str, Any]],
                logs: Sequence[str], settings: dict[str, Any] | None = None,
                coscheduling: bool = True, crds: Sequence[Path] = ()
                ) -> tuple[ControlPlane, Extender, int]:
    """A headstart cluster (no autoscaler) with these Node objects and a ready extender
    (config sections `settings` replaced) whose cache holds them all and the anchor node;
    returns (cluster, extender, its port). Not `coscheduling`: its scheduler runs as the
    without-coscheduling component installs it. `crds`: more CRDs, installed before the
    extender starts (so it watches them from its first list)."""
    spec, port = headstart_cluster(coscheduling=coscheduling, crds=tuple(crds))
    cluster = e2e_clusters.start(spec, name)
    for node in nodes:
        cluster.kube.create("/api/v1/nodes", node)
    extender = Extender(cluster, port=port, settings=settings).start()
    extender.wait_ready()
    cluster.wait(f"the extender's cache to hold the {len(nodes) + 1} nodes",
                 lambda: extender.readyz()["nodes"] == len(nodes) + 1 or NotYet(
                     extender.readyz()["nodes"]), 30, logs)
    return cluster, extender, port


def patch_as_extender(cluster: ControlPlane, namespace: str, plural: str, name: str,
                      patch: dict[str, Any], api: str = "kubeflow.org/v1") -> tuple[int, str]:
    """A merge patch of a custom object (`plural` of `api`, a group/version) with the
    extender's ServiceAccount token, as its admitter sends it: (HTTP status, message)."""
    group, version = api.split("/")
    kubeconfig = cluster.token_kubeconfig("headstart", "headstart-extender", "extender-probe")
    custom = k8s.CustomObjectsApi(k8s_config.new_client_from_config(
        config_file=str(kubeconfig)))
    try:
        custom.patch_namespaced_custom_object(group, version, namespace, plural, name, patch,
                                              _content_type=MERGE_PATCH)
    except ApiException as error:
        return error.status, str(error.body)
    return 200, ""
