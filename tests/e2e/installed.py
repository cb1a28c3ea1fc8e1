"""headstart installed into an e2e cluster from its own manifests, as a user installs it.

Decides:
- which objects of the rendered overlay (`kubectl kustomize manifests/overlays/eks`, the
  real kustomize) a cluster gets: all of them but the workloads and what only routes to
  them (Deployments, the placeholder-expiry CronJob, Services, PodDisruptionBudgets,
  NetworkPolicies), since headstart's processes run here as subprocesses (the CronJob's
  command too: test_placeholder_expiry.py). The e2e clusters have no CPU node for a
  CronJob's pod: installed, it made cluster-autoscaler and Karpenter launch an m5 node
  every 5 minutes, which the autoscaler scenarios then saw as theirs; so the
  Namespace, ServiceAccounts, Roles, ClusterRoles and their bindings, the
  PriorityClass, the ConfigMaps and the ResourceQuota are exactly what users apply;
- the identity of each process: a token of the ServiceAccount its Deployment names, from
  the TokenRequest API (as kubelet mounts one), never a client certificate and never
  system:masters, so RBAC refuses what the shipped Roles do not grant;
- the config each process starts from: the overlay's own ConfigMap. A scenario replaces
  whole top-level sections of it (its instance types match the test's node groups, its
  tick is seconds, not minutes) and names them; addresses (host, ports, the history
  file) always change, nothing else does.

Must not: start processes (headstart.py), or decide what a scenario checks.
"""

from __future__ import annotations

import copy
import functools
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.manifests import checks

OVERLAY = "eks"
NAMESPACE = "headstart"
RUN_AS_SUBPROCESSES = frozenset({"Deployment", "CronJob", "Service", "PodDisruptionBudget",
                                 "NetworkPolicy"})
# The ServiceAccount of each process, as its Deployment names it (checked in
# `service_account`, so a renamed account fails here, not with a puzzling 403).
ACCOUNTS = {
    "extender": ("headstart-extender", "headstart-extender-config"),
    "overprovisioner": ("headstart-overprovisioner", "headstart-overprovisioner-config"),
    "scheduler": ("headstart-scheduler", None),
}


@functools.cache
def rendered(components: tuple[str, ...] = ()) -> checks.Rendered:
    """The EKS overlay, with these of manifests/components, as kustomize renders it (once
    per test session)."""
    return checks.render(OVERLAY, checks.MANIFESTS, Path(tempfile.mkdtemp(prefix="e2e-render-")),
                         components)


def installable_objects() -> list[dict[str, Any]]:
    """The rendered objects a cluster gets (the workloads left out), without kustomize's
    origin annotations."""
    objects = []
    for obj in rendered().objects:
        if obj.get("kind") in RUN_AS_SUBPROCESSES:
            continue
        obj = copy.deepcopy(obj)
        annotations = obj["metadata"].get("annotations") or {}
        annotations.pop(checks.ORIGIN, None)
        if not annotations:
            obj["metadata"].pop("annotations", None)
        objects.append(obj)
    return objects


def install(cluster: Any) -> None:
    """Apply the installable objects to `cluster` with kubectl, as an administrator
    installing headstart would (server-side apply, the cluster's admin kubeconfig)."""
    path = cluster.config_dir / "headstart-installed.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(installable_objects(), sort_keys=False))
    result = subprocess.run(
        [checks.kubectl(), "apply", "--server-side", "--field-manager=e2e-install",
         f"--kubeconfig={cluster.admin_kubeconfig}", "-f", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    if result.returncode != 0:
        raise AssertionError(f"kubectl apply of the rendered {OVERLAY} overlay failed:\n"
                             f"{result.stderr.strip()}")
    cluster.rbac_applied_at.append(time.time())


def service_account(component: str) -> str:
    """The ServiceAccount the shipped Deployment of `component` runs as."""
    account, _ = ACCOUNTS[component]
    deployment = rendered().find("Deployment", f"headstart-{component}")
    if deployment is None:
        raise AssertionError(f"overlays/{OVERLAY} renders no Deployment headstart-{component}")
    named = checks.pod_spec(deployment).get("serviceAccountName")
    if named != account:
        raise AssertionError(f"Deployment headstart-{component} runs as {named!r}, "
                             f"the e2e harness expects {account!r}")
    return account


def shipped_config(component: str) -> dict[str, Any]:
    """The config file the overlay ships for `component` (its ConfigMap's config.yaml)."""
    _, configmap = ACCOUNTS[component]
    if configmap is None:
        raise ValueError(f"{component} has no headstart config file")
    return checks.config_file(rendered(), configmap)[1]


def scenario_config(component: str, sections: Mapping[str, Any],
                    addresses: Mapping[str, Any]) -> dict[str, Any]:
    """The shipped config of `component` with a scenario's top-level `sections` replacing
    the shipped ones whole, then `addresses` (host, ports, files) set."""
    document = copy.deepcopy(shipped_config(component))
    document.update(copy.deepcopy(dict(sections)))
    document.update(addresses)
    return document
