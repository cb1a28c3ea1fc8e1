"""Elastic Indexed Jobs under faults, against the real components, as installed (issue 28).

The cluster: pg-a, 4 8-GPU kwok nodes, and pg-b, 2; the shipped extender with a 20 s
`bind_timeout_seconds`, a 5 s backoff and `admission.elastic.scale_out_after_seconds: 5`.
Every elastic job here is an Indexed Job of 8-GPU pods asking 8 CPUs and 64 GiB each,
with headstart.io/min-size 2 and max-size 4 on the Job, whose pods run until deleted
and whose podFailurePolicy ignores `DisruptionTarget` (docs/extender.md). A "light" job
asks 1 CPU and 4 GiB per 8-GPU pod: heavier in KOD2's weight. What the design promises
(docs/extender.md, "Elastic jobs" and "After admission"): a gang is only ever bound in
one domain, an elastic one is never resized below its minimum, and a Job headstart
suspends is not Failed.

- Node lost while shrunk: "grow" (4) fills pg-a; "claim", light, 2 pods pinned to pg-a,
  scales it in to 2, its minimum (indices 0 and 1 kept where they ran). The node of
  grow's index 1 is deleted: pg-a (3 nodes, claim on 2) cannot hold the lost worker,
  so at once (fail fast, no bind timeout waited out) the gang is not resized back to
  its 1 bound worker (below its minimum 2) but evicted whole by suspending its Job,
  uncounted; the Job is resumed and grow is admitted again, whole, at 2, in pg-b (the
  only group that holds 2): Running there, no eviction counted on its record. claim's
  pods are never touched.
- Node lost while growing: "grow" (3) runs in pg-a; 5 s on, with nothing waiting, it
  is scaled out to 4 into pg-a's last free node, and that node is deleted at once, as
  the Job controller creates index 3 (gated, or released into pg-a). Index 3 finds no
  room, so at once the gang is resized back to its 3 bound workers, not evicted: the
  Job controller removes index 3, indices 0-2 keep running where they were (same pods),
  and the gang is Running at 3 in pg-a.
- A higher-priority heavier job against an elastic gang: "grow" (4, low priority) fills
  pg-a and "other" (a fixed 2-pod light job, low priority) fills pg-b. "high", light, 2
  pods, high priority, fits nowhere: KOD2's scale-in comes before preemption, so grow
  is scaled in from 4 to 2 (its minimum), high binds on the two nodes grow left, and no
  gang is evicted, not even other, the cheaper victim (16 GPUs to grow's 32): grow
  keeps indices 0 and 1, other keeps both its pods.
- A higher-priority job that needs more than an elastic gang can give: the same two
  gangs, and "high" of 3 light pods: scaling grow in to its minimum frees 2 nodes, not 3,
  so nothing is resized; grow (the only lower-priority gang in a group that holds 3) is
  preempted whole, its Job suspended and resumed at once (eviction count 0), high binds
  in pg-a, other is untouched and grow's new pods wait behind the gate at its size.
  Once other is removed, no group holds grow's 4, so its new attempt is resized to 2 and
  admitted whole in pg-b: its PodGroup, kept from the first attempt with its Gang, says
  minMember 2 again (it said 4, and Coscheduling held the 2 pods for ever, until that
  was fixed).
- A higher-priority job of the same KOD2 weight: "other" runs at a middle priority
  (below high's, above grow's), and "high" asks what grow's pods ask (2 pods). Priority
  ranks before weight (docs/extender.md, "Scale-in"): grow, of lower priority, gives
  room by scale-in from 4 to 2, not by a whole preemption; nothing is evicted.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.e2e import installed
from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_elastic import bound_pods, elastic_job, job_size, light_job, remove_job
from tests.e2e.test_gang import GATE, gang, gang_state, pods_of, run_job
from tests.e2e.test_gang_priority import running_pods
from tests.e2e.test_gang_recovery import GROUP_KEY, live

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
NODES = {**{f"a-{i}": "pg-a" for i in range(4)}, "b-0": "pg-b", "b-1": "pg-b"}
MIN_SIZE, MAX_SIZE = 2, 4
TIMEOUT_S = 20
BACKOFF_S = 5
CLASSES = {"e2e-low": 100, "e2e-mid": 500, "e2e-high": 1000}
RESIZED = re.compile(r"^(\d+) -> (\d+): ")


@pytest.fixture(scope="module")
def faults_cluster(e2e_clusters):
    admission = dict(installed.shipped_config("extender")["admission"])
    admission.update(bind_timeout_seconds=TIMEOUT_S, backoff_base_seconds=BACKOFF_S,
                     elastic={"scale_out_after_seconds": 5})
    cluster, extender, _ = extender_on(e2e_clusters, "elastic-faults", [
        kwok_node(name, memory="768Gi", group=group) for name, group in NODES.items()],
        LOGS, settings={"admission": admission})
    for name, value in CLASSES.items():
        cluster.kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": False})
    yield cluster, extender
    cluster.stop()


def bounded_job(name: str, size: int, priority_class: str | None = None) -> dict[str, Any]:
    """An elastic Job of `size` with min-size MIN_SIZE and max-size MAX_SIZE."""
    job = elastic_job(name, size)
    job["metadata"]["annotations"].update({"headstart.io/min-size": str(MIN_SIZE),
                                           "headstart.io/max-size": str(MAX_SIZE)})
    if priority_class:
        job["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return job


def prioritized_light(name: str, size: int, priority_class: str) -> dict[str, Any]:
    job = light_job(name, size)
    job["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return job


def one_group(nodes) -> str:
    """The one placement group of `nodes` (a gang must never straddle two)."""
    groups = {NODES[node] for node in nodes}
    assert len(groups) == 1, f"split across {sorted(groups)}: {sorted(nodes)}"
    return groups.pop()


def resizes(cluster, namespace: str, job: str) -> list[tuple[int, int, str]]:
    """(before, after, message) of every HeadstartResized Event on the Job."""
    out = []
    for event in cluster.kube.events(namespace, job, "HeadstartResized"):
        found = RESIZED.match(event["message"])
        assert found, event["message"]
        out.append((int(found[1]), int(found[2]), event["message"]))
    return out


def never_below_minimum(cluster, namespace: str, job: str) -> list[tuple[int, int, str]]:
    """Every resize the admitter made of `job` stayed within its bounds."""
    made = resizes(cluster, namespace, job)
    assert all(MIN_SIZE <= after <= MAX_SIZE for _, after, _ in made), made
    return made


def reasons(cluster, namespace: str, name: str) -> list[str]:
    return [e["reason"] for e in cluster.kube.events(namespace, name)]


def restore_node(cluster, extender, name: str) -> None:
    cluster.kube.create("/api/v1/nodes", kwok_node(name, memory="768Gi", group=NODES[name]))
    cluster.wait(f"the extender's cache to hold {name} again", lambda: extender.readyz()[
        "nodes"] == len(NODES) + 1 or NotYet(extender.readyz()["nodes"]), 30, LOGS)


def not_failed(cluster, namespace: str, name: str) -> dict[str, Any]:
    job = cluster.kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")
    conditions = {c["type"] for c in job["status"].get("conditions") or ()}
    assert "Failed" not in conditions and not job["status"].get("failed"), job["status"]
    return job


def test_a_node_lost_while_shrunk_evicts_the_gang_whole_not_below_its_minimum(
        faults_cluster, namespace, e2e_timings):
    cluster, extender = faults_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, bounded_job("grow", 4))
    before = cluster.wait("grow bound whole", lambda: bound_pods(
        cluster, namespace, "grow", 4), 90, LOGS)
    assert one_group(before.values()) == "pg-a"  # only pg-a holds 4
    cluster.wait("grow's Gang Running", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)

    claim_job = light_job("claim", 2)
    claim_job["spec"]["template"]["spec"]["nodeSelector"] = {GROUP_KEY: "pg-a"}
    run_job(cluster, namespace, claim_job)
    claim = cluster.wait("claim bound whole", lambda: running_pods(
        cluster, namespace, "claim", 2), 120, LOGS)
    kept = cluster.wait("grow scaled in to its minimum", lambda: bound_pods(
        cluster, namespace, "grow", MIN_SIZE), 60, LOGS)
    assert kept == {"0": before["0"], "1": before["1"]}
    assert job_size(cluster, namespace, "grow") == (MIN_SIZE, MIN_SIZE)
    cluster.wait("grow's Gang Running at its minimum", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 60, LOGS)

    # Index 1 is the highest still running: were its bound worker enough (>= minimum),
    # the gang would be resized back to it; at 1 of minimum 2 it must go whole instead.
    lost = before["1"]
    kube.delete(f"/api/v1/nodes/{lost}")
    deleted = time.monotonic()
    # Fail fast: pg-a cannot hold the lost worker, so no Recovering wait for PodGC and
    # the bind timeout.
    cluster.wait("grow's Job suspended (evicted whole)", lambda: "HeadstartSuspended" in
                 reasons(cluster, namespace, "grow") or NotYet(
                     reasons(cluster, namespace, "grow")), 60, LOGS)
    suspended_s = time.monotonic() - deleted
    again = cluster.wait("grow bound whole again", lambda: bound_pods(
        cluster, namespace, "grow", MIN_SIZE), 120, LOGS)
    whole_again_s = time.monotonic() - deleted
    assert sorted(again) == ["0", "1"]
    assert one_group(again.values()) == "pg-b"  # pg-a holds only 1 now
    record = cluster.wait("grow's Gang Running again", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)
    running_s = time.monotonic() - deleted
    assert record["status"]["domain"] == "placement-group=pg-b", record["status"]
    assert not record["status"].get("evictions") and record["spec"]["size"] == MIN_SIZE
    assert job_size(cluster, namespace, "grow") == (MIN_SIZE, MIN_SIZE)
    made = never_below_minimum(cluster, namespace, "grow")
    assert [(b, a) for b, a, _ in made] == [(4, MIN_SIZE)], made  # no resize back to 1
    job = not_failed(cluster, namespace, "grow")
    assert job["spec"]["suspend"] is False
    assert "HeadstartResumed" in reasons(cluster, namespace, "grow")
    assert running_pods(cluster, namespace, "claim", 2) == claim  # never touched
    e2e_timings.record("elastic faults: node lost while shrunk, evicted whole, runs in pg-b",
                       suspended_since_node_deleted=suspended_s,
                       whole_again_since_node_deleted=whole_again_s,
                       running_since_node_deleted=running_s)
    for name in ("grow", "claim"):
        remove_job(cluster, namespace, name)
    restore_node(cluster, extender, lost)


def test_a_node_lost_while_growing_resizes_the_gang_back_to_its_bound_workers(
        faults_cluster, namespace, e2e_timings):
    cluster, extender = faults_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, bounded_job("grow", 3))
    before = cluster.wait("grow bound whole at 3", lambda: running_pods(
        cluster, namespace, "grow", 3), 90, LOGS)
    assert one_group(before.values()) == "pg-a"  # only pg-a holds 3
    (free,) = {n for n, g in NODES.items() if g == "pg-a"} - set(before.values())
    cluster.wait("grow's Gang Running", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)

    cluster.wait("grow scaled out to 4", lambda: job_size(
        cluster, namespace, "grow") == (4, 4) or NotYet(job_size(cluster, namespace, "grow")),
        60, LOGS)
    kube.delete(f"/api/v1/nodes/{free}")
    deleted = time.monotonic()
    newest = [p for p in live(cluster, namespace, "grow") if p["metadata"]["uid"] not in before]
    bound_first = any(bound_node(p) for p in newest)  # it raced the deletion and won

    def resized_back():
        made = resizes(cluster, namespace, "grow")
        return [m for m in made if (m[0], m[1]) == (4, 3)] or NotYet(made)

    (back,) = cluster.wait("grow resized back to 3", resized_back, 120 + TIMEOUT_S, LOGS)
    resized_s = time.monotonic() - deleted
    assert "resized back to the 3 bound" in back[2], back
    kept = cluster.wait("grow at 3", lambda: running_pods(cluster, namespace, "grow", 3),
                        60, LOGS)
    assert kept == before  # the same pods, where they were: never evicted
    record = cluster.wait("grow's Gang Running at 3", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)
    running_s = time.monotonic() - deleted
    assert record["status"]["domain"] == "placement-group=pg-a", record["status"]
    assert record["spec"]["size"] == 3 and not record["status"].get("evictions")
    assert job_size(cluster, namespace, "grow") == (3, 3)
    made = never_below_minimum(cluster, namespace, "grow")
    assert [(b, a) for b, a, _ in made] == [(3, 4), (4, 3)], made
    events = {e["reason"] for e in kube.list(f"/api/v1/namespaces/{namespace}/events")}
    assert not {"HeadstartSuspended", "HeadstartEvicted"} & events, events
    not_failed(cluster, namespace, "grow")
    e2e_timings.record("elastic faults: node lost while growing, resized back",
                       resized_back_since_node_deleted=resized_s,
                       running_since_node_deleted=running_s,
                       new_worker_bound_before_loss=bound_first)
    remove_job(cluster, namespace, "grow")
    restore_node(cluster, extender, free)


def start_gangs(cluster, namespace: str, other_class: str = "e2e-low"
                ) -> tuple[dict[str, str], dict[str, str]]:
    """grow (elastic, 4, low priority) filling pg-a and other (fixed, light, 2, of
    `other_class`) filling pg-b, both Running: their {uid: node}."""
    run_job(cluster, namespace, bounded_job("grow", 4, "e2e-low"))
    grow = cluster.wait("grow bound whole", lambda: running_pods(
        cluster, namespace, "grow", 4), 90, LOGS)
    assert one_group(grow.values()) == "pg-a"
    run_job(cluster, namespace, prioritized_light("other", 2, other_class))
    other = cluster.wait("other bound whole", lambda: running_pods(
        cluster, namespace, "other", 2), 90, LOGS)
    assert one_group(other.values()) == "pg-b"
    for job in ("grow", "other"):
        cluster.wait(f"{job}'s Gang Running", lambda job=job: gang_state(
            cluster, namespace, job, "Running"), 30, LOGS)
    return grow, other


def states(cluster, namespace: str, *jobs: str) -> dict[str, str]:
    return {job: gang(cluster, namespace, job)["status"]["state"] for job in jobs}


def test_a_heavier_high_priority_job_scales_the_elastic_gang_in_and_evicts_nothing(
        faults_cluster, namespace, e2e_timings):
    cluster, _ = faults_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    grow, other = start_gangs(cluster, namespace)
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]:
                p["metadata"]["uid"] for p in live(cluster, namespace, "grow")}

    created = time.monotonic()
    run_job(cluster, namespace, prioritized_light("high", 2, "e2e-high"))
    high = cluster.wait("high bound whole", lambda: running_pods(
        cluster, namespace, "high", 2), 120, LOGS)
    bound_s = time.monotonic() - created
    kept = cluster.wait("grow at its minimum", lambda: running_pods(
        cluster, namespace, "grow", MIN_SIZE), 60, LOGS)
    # Scaled in, not preempted: indices 0 and 1 are the very pods that ran before.
    assert kept == {by_index[i]: grow[by_index[i]] for i in ("0", "1")}
    assert set(high.values()) == {grow[by_index["2"]], grow[by_index["3"]]}
    assert job_size(cluster, namespace, "grow") == (MIN_SIZE, MIN_SIZE)
    made = never_below_minimum(cluster, namespace, "grow")
    assert [(b, a) for b, a, _ in made] == [(4, MIN_SIZE)] and \
        f"so that {namespace}/high fits" in made[0][2], made
    assert running_pods(cluster, namespace, "other", 2) == other
    cluster.wait("grow's Gang Running at its minimum", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)
    assert states(cluster, namespace, "grow", "other") == {
        "grow": "Running", "other": "Running"}
    events = {e["reason"] for e in kube.list(f"/api/v1/namespaces/{namespace}/events")}
    assert not {"HeadstartSuspended", "HeadstartEvicted"} & events, events
    not_failed(cluster, namespace, "grow")
    e2e_timings.record("elastic faults: a heavier high-priority job scales the gang in",
                       high_bound_since_created=bound_s)
    for name in ("grow", "other", "high"):
        remove_job(cluster, namespace, name)


def preempted_whole(cluster, namespace: str, grow: dict[str, str], other: dict[str, str],
                    high: dict[str, str]) -> None:
    """grow evicted whole for high (its Job suspended, no eviction counted, resumed at
    once: a victim waits no backoff), every pod of it gone; other untouched."""
    assert one_group(high.values()) == "pg-a"
    assert running_pods(cluster, namespace, "other", 2) == other
    assert gang_state(cluster, namespace, "other", "Running")
    suspended = [e for e in cluster.kube.list(f"/api/v1/namespaces/{namespace}/events")
                 if e["reason"] == "HeadstartSuspended"]
    assert [e["involvedObject"]["name"] for e in suspended] == ["grow"], suspended
    assert suspended[0]["message"].startswith(f"preempted whole by {namespace}/high"), \
        suspended[0]["message"]
    assert not gang(cluster, namespace, "grow")["status"].get("evictions")
    assert not [e for e in cluster.kube.list(f"/api/v1/namespaces/{namespace}/events")
                if e["reason"] == "HeadstartEvicted"]
    cluster.wait("every pod of grow's first attempt gone", lambda: not [
        p for p in pods_of(cluster, namespace, "grow") if p["metadata"]["uid"] in grow
    ] or NotYet("old pods left"), 60, LOGS)
    job = not_failed(cluster, namespace, "grow")
    assert job["spec"]["suspend"] is False


def test_a_high_priority_job_needing_more_than_the_gang_can_give_preempts_it_whole(
        faults_cluster, namespace, e2e_timings):
    cluster, _ = faults_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    grow, other = start_gangs(cluster, namespace)
    created = time.monotonic()
    run_job(cluster, namespace, prioritized_light("high", 3, "e2e-high"))
    high = cluster.wait("high bound whole", lambda: running_pods(
        cluster, namespace, "high", 3), 120, LOGS)
    bound_s = time.monotonic() - created
    preempted_whole(cluster, namespace, grow, other, high)

    # pg-a keeps 1 free node, pg-b none: grow waits whole, at its size, behind the gate.
    def grow_waits():
        pods = live(cluster, namespace, "grow")
        gated = [p for p in pods if {"name": GATE} in (p["spec"].get("schedulingGates") or [])]
        return len(gated) == len(pods) == 4 or NotYet(f"{len(gated)} of {len(pods)} gated")

    cluster.wait("grow's new pods gated", grow_waits, 60, LOGS)
    assert job_size(cluster, namespace, "grow") == (4, 4)
    assert resizes(cluster, namespace, "grow") == []  # scaling in to 2 would not do

    # other goes: pg-b's 2 nodes free, pg-a's 1, no group holds 4, so the new attempt is
    # resized to 2 (rule 7) and admitted whole in pg-b. Its PodGroup, kept from the
    # first attempt with its Gang, must say minMember 2, not 4, or Coscheduling holds
    # the 2 pods for members that no longer exist.
    freed = time.monotonic()
    remove_job(cluster, namespace, "other")
    again = cluster.wait("grow bound whole at its minimum", lambda: bound_pods(
        cluster, namespace, "grow", MIN_SIZE), 120, LOGS)
    again_s = time.monotonic() - freed
    assert sorted(again) == ["0", "1"] and one_group(again.values()) == "pg-b"
    # One resize, 4 -> 2 (a round may write it again before the cache shows the first).
    made = never_below_minimum(cluster, namespace, "grow")
    assert {(b, a) for b, a, _ in made} == {(4, MIN_SIZE)}, made
    groups = cluster.kube.list(
        f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups")
    assert [g["spec"]["minMember"] for g in groups
            if g["metadata"]["name"].startswith("grow")] == [MIN_SIZE], groups
    e2e_timings.record("elastic faults: a high-priority job needing more than the minimum "
                       "allows preempts the gang whole", high_bound_since_created=bound_s,
                       grow_again_at_minimum_since_other_removed=again_s)
    for name in ("grow", "high"):
        remove_job(cluster, namespace, name)


def test_a_high_priority_job_of_the_same_weight_scales_the_gang_in_not_out(
        faults_cluster, namespace, e2e_timings):
    cluster, _ = faults_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    # other, 2 pods, is below high too but above grow: the whole-gang victim with fewer
    # GPUs at the lowest priority would be grow anyway; a scale-in comes first.
    grow, other = start_gangs(cluster, namespace, "e2e-mid")
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]:
                p["metadata"]["uid"] for p in live(cluster, namespace, "grow")}
    created = time.monotonic()
    high_job = light_job("high", 2)
    for container in high_job["spec"]["template"]["spec"]["containers"]:
        container["resources"]["requests"].update(cpu="8", memory="64Gi")  # grow's weight
    high_job["spec"]["template"]["spec"]["priorityClassName"] = "e2e-high"
    run_job(cluster, namespace, high_job)
    high = cluster.wait("high bound whole", lambda: running_pods(
        cluster, namespace, "high", 2), 120, LOGS)
    bound_s = time.monotonic() - created
    kept = cluster.wait("grow at its minimum", lambda: running_pods(
        cluster, namespace, "grow", MIN_SIZE), 60, LOGS)
    # Priority ranks before KOD2's weight: at equal weight grow still gives room to the
    # higher-priority job, by scale-in (its indices 0 and 1 the very pods that ran).
    assert kept == {by_index[i]: grow[by_index[i]] for i in ("0", "1")}
    assert set(high.values()) == {grow[by_index["2"]], grow[by_index["3"]]}
    made = never_below_minimum(cluster, namespace, "grow")
    assert [(b, a) for b, a, _ in made] == [(4, MIN_SIZE)], made
    assert f"so that {namespace}/high fits its domain (priority" in made[0][2], made
    assert running_pods(cluster, namespace, "other", 2) == other
    events = {e["reason"] for e in kube.list(f"/api/v1/namespaces/{namespace}/events")}
    assert not {"HeadstartSuspended", "HeadstartEvicted"} & events, events
    not_failed(cluster, namespace, "grow")
    e2e_timings.record("elastic faults: a high-priority job of equal weight scales the gang "
                       "in", high_bound_since_created=bound_s)
    for name in ("grow", "other", "high"):
        remove_job(cluster, namespace, name)
