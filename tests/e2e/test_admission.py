"""Whole-job admission against the real components, as installed: the shipped
MutatingAdmissionPolicy gates every pod created for headstart-scheduler (the tests
create pods plainly, no gate of their own), the extender's job admitter decides one
placement group per job and writes it into every pod, and kube-scheduler, its
preemption and cluster-autoscaler read it from there.

- Two `required` jobs, room for one (pg-a 32 GPUs, pg-b 16; each job 1 PS + 24 one-GPU
  workers): one binds whole in pg-a; the other stays gated whole, holding no GPU, with
  the reason in an Event; once the first job's pods go it is admitted and binds whole.
- Preemption only where the job goes: pg-a full of real pods, pg-b held by placeholder
  pods; a `required` job of 1 PS + 12 workers lands whole in pg-b, and only pg-b's
  placeholders are preempted.
- The admitting replica killed -9 while a job waits: the other replica takes the Lease
  and admits it within a lease duration once room appears; every pod's gate is lifted
  by exactly one write.
- cluster-autoscaler grows the group the job was given (pg-a and pg-b node groups; the
  job fits pg-a with fewer new nodes), never the other.
- The extender's planning process killed -9, as a memory limit would kill it: the next
  round plans in a thread, a new process starts from the extender's cache, and jobs
  created before and after the kill are admitted whole.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.controlplane import DATA
from tests.e2e.headstart import Extender, extender_on_nodes, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node, training_pod

GATE = "headstart.io/placement"
LOGS = ["headstart-scheduler", "headstart-extender"]
LEASE = "/apis/coordination.k8s.io/v1/namespaces/headstart/leases/headstart-extender-admitter"
GROUPS = {"a-0": "pg-a", "a-1": "pg-a", "a-2": "pg-a", "a-3": "pg-a",
          "b-0": "pg-b", "b-1": "pg-b"}


def job(namespace: str, name: str, workers: int, policy: str = "required") -> list[dict]:
    """1 PS (4 CPUs) + `workers` one-GPU workers, the job's size declared; no gate (the
    shipped policy adds it)."""
    annotations = {"headstart.io/placement-group": policy,
                   "headstart.io/job-size": str(workers + 1)}
    pods = [training_pod(f"{name}-ps-0", namespace, name, "ps", cpu="4", memory="8Gi",
                         annotations=annotations)]
    pods += [training_pod(f"{name}-worker-{i}", namespace, name, "worker", gpus=1, cpu="2",
                          memory="8Gi", annotations=annotations) for i in range(workers)]
    return pods


def create(cluster, namespace: str, pods: list[dict]) -> list[str]:
    for pod in pods:
        created = cluster.kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)
        assert {"name": GATE} in created["spec"].get("schedulingGates", []), (
            f"the shipped policy did not gate {pod['metadata']['name']}")
    return [pod["metadata"]["name"] for pod in pods]


def where(cluster, namespace: str, names: list[str]) -> dict[str, str | None]:
    pods = {p["metadata"]["name"]: p for p in cluster.kube.list(
        f"/api/v1/namespaces/{namespace}/pods")}
    return {name: bound_node(pods.get(name)) for name in names}


def all_bound(cluster, namespace: str, names: list[str]):
    placed = where(cluster, namespace, names)
    unbound = [n for n, node in placed.items() if not node]
    return placed if not unbound else NotYet(f"{len(unbound)} unbound: {unbound[:3]}")


def gated(cluster, namespace: str, names: list[str]) -> list[str]:
    pods = {p["metadata"]["name"]: p for p in cluster.kube.list(
        f"/api/v1/namespaces/{namespace}/pods")}
    return [n for n in names
            if {"name": GATE} in (pods[n]["spec"].get("schedulingGates") or [])]


@pytest.fixture(scope="module")
def groups_cluster(e2e_clusters):
    cluster, extender, port = extender_on_nodes(e2e_clusters, "admission", GROUPS, LOGS)
    yield cluster, extender, port
    cluster.stop()


def delete_all(cluster, namespace: str) -> None:
    for pod in cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods"):
        cluster.kube.delete(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                            grace_period_s=0)


def test_two_required_jobs_with_room_for_one_one_binds_whole_the_other_waits_whole(
        groups_cluster, namespace, e2e_timings):
    cluster, extender, _ = groups_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    # Created interleaved, pod by pod, as two operators would.
    first, second = job(namespace, "job-a", 24), job(namespace, "job-b", 24)
    created = time.monotonic()
    names = create(cluster, namespace, [p for pair in zip(first, second, strict=True)
                                        for p in pair])
    a_names = [n for n in names if n.startswith("job-a")]
    b_names = [n for n in names if n.startswith("job-b")]

    def one_whole():
        a, b = where(cluster, namespace, a_names), where(cluster, namespace, b_names)
        done = [(name, placed) for name, placed in (("job-a", a), ("job-b", b))
                if all(placed.values())]
        return done[0] if done else NotYet(
            (sum(map(bool, a.values())), sum(map(bool, b.values()))))

    winner, placed = cluster.wait("one job bound whole", one_whole, 120, LOGS)
    bound_s = time.monotonic() - created
    assert {GROUPS[node] for node in placed.values()} == {"pg-a"}, placed
    loser = b_names if winner == "job-a" else a_names
    time.sleep(10)  # the admitter's rounds, the scheduler's retries: nothing of it binds
    assert not any(where(cluster, namespace, loser).values()), "the waiting job holds GPUs"
    assert sorted(gated(cluster, namespace, loser)) == sorted(loser)
    events = kube.events(namespace, loser[0], reason="HeadstartWaiting")
    assert events, f"no HeadstartWaiting event on {loser[0]}"
    waiting = extender.get("/admission").json()["waiting"]
    assert [w["pods"] for w in waiting] == [25], waiting

    for name in (a_names if winner == "job-a" else b_names):
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", grace_period_s=0)
    freed = time.monotonic()
    placed = cluster.wait("the waiting job bound whole once room appears",
                          lambda: all_bound(cluster, namespace, loser), 120, LOGS)
    assert {GROUPS[node] for node in placed.values()} == {"pg-a"}, placed
    e2e_timings.record("admission: two required jobs, room for one",
                       first_whole_since_created=bound_s,
                       second_whole_since_room=time.monotonic() - freed,
                       waiting_event=events[-1]["message"][:160])
    delete_all(cluster, namespace)


PLACEHOLDERS = "headstart-placeholders"  # only there is the label one


def placeholder_replicaset(name: str, node: str) -> dict:
    """A placeholder as the overprovisioner's Deployment makes it (its label and
    PriorityClass; preemptionPolicy Never; a ReplicaSet as its controller, which is what
    makes it a placeholder: locality/placeholders.py), in its namespace (which enforces
    the restricted Pod Security level, as the Deployment's pods satisfy it), bound to
    `node` through the scheduler: a ReplicaSet of one, run by kube-controller-manager's
    ReplicaSet controller."""
    pod = training_pod(name, PLACEHOLDERS, gpus=8, cpu="8", memory="32Gi")
    labels = {"headstart.io/placeholder": "true", "headstart.io/instance-type": "p4d.24xlarge",
              "e2e/holder": name}
    spec = pod["spec"]
    spec["priorityClassName"] = "headstart-placeholder"
    spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    spec["terminationGracePeriodSeconds"] = 0
    spec["securityContext"] = {"runAsNonRoot": True, "runAsUser": 65532,
                               "seccompProfile": {"type": "RuntimeDefault"}}
    for container in spec["containers"]:
        container["securityContext"] = {"allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "labels": {"e2e/holder": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"e2e/holder": name}},
                     "template": {"metadata": {"labels": labels,
                                               "annotations": pod["metadata"].get(
                                                   "annotations", {})},
                                  "spec": spec}}}


def holder_pods(cluster, names: list[str]) -> dict[str, str] | NotYet:
    """{pod name: node} of the holders' live pods, once each holder has one bound."""
    pods = [p for p in cluster.kube.list(f"/api/v1/namespaces/{PLACEHOLDERS}/pods")
            if p["metadata"].get("labels", {}).get("e2e/holder") in names
            and not p["metadata"].get("deletionTimestamp")]
    bound = {p["metadata"]["name"]: bound_node(p) for p in pods if bound_node(p)}
    return bound if len(bound) == len(names) else NotYet(f"{len(bound)} of {len(names)} bound")


def test_preemption_only_in_the_group_the_job_was_given(groups_cluster, namespace,
                                                          e2e_timings):
    cluster, extender, _ = groups_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    filler = []
    for node in [n for n, g in GROUPS.items() if g == "pg-a"]:
        pod = training_pod(f"fill-{node}", namespace, f"fill-{node}", "worker", gpus=8,
                           cpu="8", memory="32Gi",
                           annotations={"headstart.io/job-size": "1",
                                        "headstart.io/placement-group": "none"})
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
        filler.append(pod)
    create(cluster, namespace, filler)
    cluster.wait("pg-a full of real pods",
                 lambda: all_bound(cluster, namespace, [p["metadata"]["name"] for p in filler]),
                 90, LOGS)
    holders = [placeholder_replicaset(f"holder-{node}", node)
               for node, group in GROUPS.items() if group == "pg-b"]
    for replicaset in holders:
        kube.create(f"/apis/apps/v1/namespaces/{PLACEHOLDERS}/replicasets", replicaset)
    held = cluster.wait("pg-b held by placeholders", lambda: holder_pods(
        cluster, [r["metadata"]["name"] for r in holders]), 90, LOGS)

    created = time.monotonic()
    names = create(cluster, namespace, job(namespace, "job-c", 12))
    placed = cluster.wait("the job bound whole", lambda: all_bound(cluster, namespace, names),
                          120, LOGS)
    assert {GROUPS[node] for node in placed.values()} == {"pg-b"}, placed
    # Every placeholder pod that held pg-b was preempted (its ReplicaSet made a new one,
    # which finds no room).
    survivors = {p["metadata"]["name"]
                 for p in kube.list(f"/api/v1/namespaces/{PLACEHOLDERS}/pods")
                 if not p["metadata"].get("deletionTimestamp")}
    assert not survivors & set(held), survivors
    assert all(bound_node(kube.pod(namespace, p["metadata"]["name"])) for p in filler), \
        "a real pod in pg-a was evicted"
    e2e_timings.record("admission: preemption only where the job goes",
                       bound_since_created=time.monotonic() - created)
    delete_all(cluster, namespace)
    for replicaset in holders:
        kube.delete(f"/apis/apps/v1/namespaces/{PLACEHOLDERS}/replicasets/"
                    f"{replicaset['metadata']['name']}?propagationPolicy=Background")


def lease_holder(cluster) -> str | None:
    return ((cluster.kube.get(LEASE, missing_ok=True) or {}).get("spec") or {}).get(
        "holderIdentity")


def test_the_admitting_replica_killed_the_other_admits_and_no_pod_twice(
        groups_cluster, namespace, e2e_timings):
    cluster, first, port = groups_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    # The second replica serves kube-scheduler too only if it were behind the Service;
    # here it only competes for the admitter's Lease.
    second = Extender(cluster, name="headstart-extender-b").start()
    second.wait_ready()
    cluster.wait("the first replica to lead the admitter",
                 lambda: lease_holder(cluster) == "headstart-extender" or NotYet(
                     lease_holder(cluster)), 60, LOGS)
    # A job too big for any group now (40 GPUs): it waits gated.
    blocker = job(namespace, "big", 39)
    names = create(cluster, namespace, blocker)
    cluster.wait("the big job waiting", lambda: [
        w for w in first.get("/admission").json()["waiting"] if w["pods"] == 40], 60, LOGS)
    killed = time.monotonic()
    first.kill()
    cluster.wait("the second replica to take the admitter's Lease",
                 lambda: lease_holder(cluster) == "headstart-extender-b" or NotYet(
                     lease_holder(cluster)), 60, ["headstart-extender-b"])
    took_over_s = time.monotonic() - killed
    # Room appears: nodes join pg-b (6 x 8 = 48 GPUs in pg-b now).
    for index in range(2, 6):
        kube.create("/api/v1/nodes", kwok_node(f"b-{index}", memory="768Gi", group="pg-b"))
    cluster.wait("the second replica to admit the big job (every gate lifted)",
                 lambda: not gated(cluster, namespace, names) or NotYet(
                     len(gated(cluster, namespace, names))), 60, ["headstart-extender-b"])
    admitted_s = time.monotonic() - killed
    # kube-scheduler calls the extender at the first replica's address (in a cluster, a
    # Service reaches whichever replica runs): start it again, as kubelet restarts a
    # killed container; it comes back as a follower.
    first.start()
    first.wait_ready()
    placed = cluster.wait("the big job bound whole", lambda: all_bound(
        cluster, namespace, names), 120, ["headstart-extender-b", "headstart-scheduler"])
    assert {node.split("-")[0] for node in placed.values()} == {"b"}, placed
    lifts = Counter(w.name for w in cluster.writes()
                    if w.namespace == namespace and w.resource == "pods"
                    and w.verb == "patch" and w.user.startswith("headstart-extender"))
    # Each pod twice, by one replica: its PodGroup label, then its gate lifted (every
    # member is labelled before any is ungated: extender/admission/patch.label_patch).
    assert set(lifts) == set(names) and set(lifts.values()) == {2}, lifts
    assert {w.user for w in cluster.writes() if w.namespace == namespace
            and w.resource == "pods" and w.verb == "patch"} == {"headstart-extender-b"}
    e2e_timings.record("admission: admitter killed -9, other replica admits",
                       lease_taken_after_kill=took_over_s, admitted_after_kill=admitted_s,
                       bound_after_kill=time.monotonic() - killed)
    second.stop()
    delete_all(cluster, namespace)


TWO_GROUPS = DATA / "kwok-provider-two-groups.yaml"
AUTOSCALED = {"enabled": True, "autoscaler": {"node_groups": [
    {"name": "p4d-pg-a", "instance_type": "p4d.24xlarge", "domain": "pg-a", "max_size": 4},
    {"name": "p4d-pg-b", "instance_type": "p4d.24xlarge", "domain": "pg-b", "max_size": 4},
]}}


def static_p4d_node() -> dict:
    """A p4d.24xlarge node in pg-a that no node group made (8 free GPUs)."""
    return kwok_node("a-static", gpus=8, cpu="96", memory="1152Gi", group="pg-a",
                     labels={"node.kubernetes.io/instance-type": "p4d.24xlarge",
                             "k8s.amazonaws.com/accelerator": "nvidia-a100"})


def test_cluster_autoscaler_grows_the_group_the_job_was_given(
        e2e_clusters, namespace, e2e_timings):
    """One pg-a p4d node with 8 free GPUs; CA node groups of p4d in pg-a and pg-b (at
    most 4 each, given to the admitter as its config's node groups). A `required` job of
    1 PS + 24 one-GPU workers fits pg-a with 2 new nodes, pg-b with 3: the admitter
    gives it pg-a, writes that into the pods, and CA, which never calls the extender,
    grows pg-a alone. (Pod by pod, CA grew pg-b in 3 of 5 runs, counting the pg-a node's
    free GPUs the extender then refused, and the job never bound.)"""
    spec, port = headstart_cluster(autoscaler=True, node_groups=TWO_GROUPS)
    cluster = e2e_clusters.start(spec, "admission-autoscaled")
    try:
        kube = cluster.kube
        Extender(cluster, port=port, settings={"admission": AUTOSCALED}).start().wait_ready()
        kube.create("/api/v1/nodes", static_p4d_node())
        kube.ensure_namespace(namespace)
        created = time.monotonic()
        names = create(cluster, namespace, job(namespace, "grow", 24))
        placed = cluster.wait("the job bound whole", lambda: all_bound(
            cluster, namespace, names), 240, [*LOGS, "cluster-autoscaler"])
        bound_s = time.monotonic() - created
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"].get(
            "headstart.io/placement-group") for n in kube.list("/api/v1/nodes")}
        assert {nodes[node] for node in placed.values()} == {"pg-a"}, placed
        launched = [n for n in nodes if n.startswith("p4d")]
        assert 1 <= len(launched) <= 3, launched
        assert {nodes[n] for n in launched} == {"pg-a"}, {n: nodes[n] for n in launched}
        e2e_timings.record("admission: CA grows the group the job was given",
                           bound_since_created=bound_s, nodes_launched=len(launched))
    finally:
        cluster.stop()


def test_a_job_a_headless_service_selects_still_lands_on_its_fewest_nodes(
        groups_cluster, namespace, e2e_timings):
    """JobSet and mpi-operator put a headless Service over the job's pods; kube-scheduler's
    PodTopologySpread then applies its system-default spreading to them (pods a Service
    selects), which pulls a job apart unless the profile turns the defaults off. 1 PS +
    16 one-GPU workers on 8-GPU nodes: 2 nodes at the fewest."""
    cluster, _, _ = groups_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "js", "namespace": namespace},
        "spec": {"clusterIP": "None", "selector": {"headstart.io/job": "js"},
                 "ports": [{"port": 2222}]}})
    pods = job(namespace, "js", 16, policy="preferred")
    created = time.monotonic()
    names = create(cluster, namespace, pods)
    placed = cluster.wait("the job bound whole", lambda: all_bound(cluster, namespace, names),
                          120, LOGS)
    nodes = sorted(set(placed.values()))
    assert len(nodes) == 2, placed
    e2e_timings.record("admission: job behind a headless Service",
                       bound_since_created=time.monotonic() - created, nodes_used=len(nodes),
                       fewest_possible=2)
    delete_all(cluster, namespace)


def planning_processes(extender: Extender) -> list[int]:
    """The pids of the extender's child processes: its planning process
    (`admission.planning: process`, the shipped default)."""
    pid = extender.process.pid
    return [int(child) for child in
            Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def planner_failures(extender: Extender) -> float:
    [value] = [float(line.split()[-1]) for line in extender.get("/metrics").text.splitlines()
               if line.startswith("headstart_admitter_planner_failures_total ")]
    return value


def test_the_planning_process_killed_a_new_one_plans_from_the_cache(
        groups_cluster, namespace, e2e_timings):
    cluster, extender, _ = groups_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    cluster.wait("the extender leading the admitter",
                 lambda: lease_holder(cluster) == "headstart-extender" or NotYet(
                     lease_holder(cluster)), 60, LOGS)
    names_a = create(cluster, namespace, job(namespace, "before", 12))
    cluster.wait("the first job bound whole", lambda: all_bound(cluster, namespace, names_a),
                 120, LOGS)
    failures = planner_failures(extender)
    [planner] = planning_processes(extender)
    os.kill(planner, signal.SIGKILL)
    killed = time.monotonic()
    names_b = create(cluster, namespace, job(namespace, "after", 12))
    placed = cluster.wait("the job created after the kill bound whole",
                          lambda: all_bound(cluster, namespace, names_b), 120, LOGS)
    bound_s = time.monotonic() - killed
    assert len({GROUPS[node] for node in placed.values()}) == 1, placed
    assert planner_failures(extender) == failures + 1
    replaced = planning_processes(extender)
    assert len(replaced) == 1 and replaced != [planner], replaced
    # The new process plans from then on: a third job, admitted by it.
    names_c = create(cluster, namespace, job(namespace, "third", 4))
    cluster.wait("the third job bound whole", lambda: all_bound(cluster, namespace, names_c),
                 120, LOGS)
    assert planner_failures(extender) == failures + 1
    assert planning_processes(extender) == replaced
    assert "a new one starts from the cache as it is" in extender.process.tail(400)
    e2e_timings.record("admission: planning process killed -9",
                       bound_after_kill=bound_s, jobs_before=len(names_a))
    delete_all(cluster, namespace)
