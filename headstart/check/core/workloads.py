"""Checks of headstart's own Deployments: present, available, and configured with files
that their processes accept.

Decides: a Deployment is up when its `Available` condition is True (its minimum of
ready replicas answers the readiness probe: for the extender, after its cache's first
full sync; for the overprovisioner, once it serves /readyz); otherwise the fail names the
condition's message and why its pods wait (image pulls, mounts), as the reader saw
them. A config that the process's own parser refuses fails too: the process would
crash-loop on it.

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from headstart.check.core.configs import Installed
from headstart.check.core.result import Result, fail, ok, skip

DEPLOYMENTS = {"scheduler": "headstart-scheduler", "extender": "headstart-extender",
               "overprovisioner": "headstart-overprovisioner"}
"""Each component's Deployment (manifests/base/<component>/deployment.yaml)."""


def deployment(installed: Installed, component: str, namespace: str) -> Result:
    deployment_name = DEPLOYMENTS[component]
    name = f"deployment/{deployment_name}"
    workload = installed.workloads.get(component)
    if workload is None:
        return fail(name, f"no Deployment {namespace}/{deployment_name}",
                    "kubectl apply -k my-cluster (docs/install-eks.md or install-gke.md, step 4)")
    if not workload.available:
        waiting = f"; pods: {', '.join(workload.waiting)}" if workload.waiting else ""
        return fail(name, f"{workload.ready} of {workload.desired} replicas ready, not "
                          f"available ({workload.problem}{waiting})",
                    f"kubectl -n {workload.namespace} describe deployment {workload.name}; "
                    "docs/runbook.md")
    return ok(name, f"available, {workload.ready} of {workload.desired} replicas ready")


def config(installed: Installed, component: str) -> Result:
    name = f"config/{component}"
    if installed.workloads.get(component) is None:
        return skip(name, f"no {DEPLOYMENTS[component]} Deployment to read it from")
    loaded = getattr(installed, component)
    if loaded.value is None:
        return fail(name, loaded.error or "not readable",
                    f"fix the {component}'s config in my-cluster and kubectl apply -k my-cluster")
    return ok(name, f"{loaded.source} is valid")
