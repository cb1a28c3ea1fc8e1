"""Training jobs in an e2e cluster: create a job's pods behind a scheduling gate, release
them together, wait for where they land; patch a Job as the extender's ServiceAccount
does.

A job's pods are created gated (`spec.schedulingGates`, as Kueue does) and released only
once the extender's cache knows all of them (its `/explain` answers for each): the
first pod kube-scheduler sends to the extender is then judged against the job's whole
remaining demand, not against whichever pods the watch has delivered so far.

Must not: assert anything (the scenarios do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from extender.admission.resizer import MERGE_PATCH
from tests.e2e.controlplane import ControlPlane
from tests.e2e.headstart import Extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import HEADSTART_SCHEDULER, bound_node, training_pod

GATE = "headstart.io/e2e-hold"


def job_pods(
    namespace: str, job: str, workers: int, worker_gpus: int, placement_group: str = "preferred",
    scheduler: str = HEADSTART_SCHEDULER,
) -> list[dict[str, Any]]:
    """A PS (4 CPUs) and `workers` workers of `worker_gpus` GPUs each, gated, PS first."""
    annotations = {"headstart.io/placement-group": placement_group}
    pods = [training_pod(f"{job}-ps-0", namespace, job, "ps", cpu="4", memory="8Gi",
                         annotations=annotations, scheduler=scheduler)]
    pods += [training_pod(f"{job}-worker-{index}", namespace, job, "worker", gpus=worker_gpus,
                          cpu="8", memory="32Gi", annotations=annotations, scheduler=scheduler)
             for index in range(workers)]
    for pod in pods:
        pod["spec"]["schedulingGates"] = [{"name": GATE}]
    return pods


def create_pods(cluster: ControlPlane, namespace: str, pods: Sequence[dict[str, Any]]) -> list[str]:
    """Create `pods` in this order (kube-scheduler's queue is ordered by creation time)."""
    for pod in pods:
        cluster.kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    return [pod["metadata"]["name"] for pod in pods]


def create_job(
    cluster: ControlPlane, namespace: str, job: str, workers: int, worker_gpus: int,
    placement_group: str = "preferred",
) -> list[str]:
    """A PS (4 CPUs) and `workers` workers of `worker_gpus` GPUs each, gated; their names."""
    return create_pods(cluster, namespace,
                       job_pods(namespace, job, workers, worker_gpus, placement_group))


def release_when_known(cluster: ControlPlane, extender: Extender, namespace: str,
                       names: Sequence[str]) -> None:
    """Wait until the extender's cache has every pod, then lift their gates."""
    wait_known(cluster, extender, namespace, names)
    release(cluster, namespace, names)


def wait_known(cluster: ControlPlane, extender: Extender, namespace: str,
               names: Sequence[str]) -> None:
    """Wait until the extender's cache has every pod (its /explain answers for it)."""
    for name in names:
        cluster.wait(
            f"the extender's cache to know pod {namespace}/{name}",
            lambda name=name: extender.get(f"/explain?pod={namespace}/{name}").status_code
            == 200, 30, [extender.name])


def release(cluster: ControlPlane, namespace: str, names: Sequence[str]) -> None:
    """Lift the pods' gates, in this order."""
    for name in names:
        cluster.kube.patch(f"/api/v1/namespaces/{namespace}/pods/{name}",
                           {"spec": {"schedulingGates": None}})


def placements(cluster: ControlPlane, namespace: str) -> dict[str, str | None]:
    """Pod name -> node name (None while unbound) for every pod in `namespace`."""
    return {pod["metadata"]["name"]: bound_node(pod)
            for pod in cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods")}


def wait_all_bound(cluster: ControlPlane, namespace: str, names: Sequence[str],
                   timeout_s: float, logs: Sequence[str] = ()) -> dict[str, str]:
    def all_bound() -> Any:
        where = placements(cluster, namespace)
        unbound = [name for name in names if not where.get(name)]
        return ({name: where[name] for name in names} if not unbound
                else NotYet(f"unbound: {unbound}"))

    return cluster.wait(f"all {len(names)} pods of {namespace} bound", all_bound, timeout_s,
                        logs)


def delete_pods(cluster: ControlPlane, namespace: str) -> None:
    """Delete every pod of `namespace` at once (grace 0: kwok confirms nothing)."""
    for pod in cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods"):
        cluster.kube.delete(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                            grace_period_s=0)


def patch_job_as_extender(cluster, namespace: str, name: str, patch: dict) -> tuple[int, str]:
    """A merge patch of the Job with the extender's token, as its resizer sends it (the
    account may not `get` Jobs, so not through kubectl): (HTTP status, message)."""
    kubeconfig = cluster.token_kubeconfig("headstart", "headstart-extender", "resize-probe")
    batch = k8s.BatchV1Api(k8s_config.new_client_from_config(config_file=str(kubeconfig)))
    try:
        batch.patch_namespaced_job(name, namespace, patch, _content_type=MERGE_PATCH)
    except ApiException as error:
        return error.status, str(error.body)
    return 200, ""
