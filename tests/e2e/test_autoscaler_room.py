"""Room the autoscaler can add, as installed: the extender's shipped config, no node group
written by hand, real owners (Indexed Jobs run by kube-controller-manager's Job
controller) and the real autoscalers.

- cluster-autoscaler (kwok provider, node groups p4d-pg-a and p4d-pg-b, at most 4 nodes
  each, both at zero) with one static pg-a node of 8 free GPUs: a 3-pod `required` job
  of 8-GPU pods. The shipped config names no node group, so CA's status lists groups
  the admitter cannot place: the job used to wait `no_fit` for ever. Now it is released
  into pg-a (the domain holding most of it) with a `HeadstartRoomUnknown` Warning and a
  Gang whose reason is `RoomUnknown`; CA grows a group for the pending pods and the job
  binds whole in pg-a.
- Karpenter (kwok provider; data/karpenter-nodepools.yaml: p4d.24xlarge labelled pg-a,
  at most 32 GPUs) and no GPU node at all: the admitter reads the NodePools, sizes a
  p4d.24xlarge from the built-in aws catalog, admits the 3-pod job into pg-a counting 3
  new nodes (reason `Admitted`: the room is known), Karpenter launches them and the job
  binds whole.
"""

from __future__ import annotations

import time

from tests.e2e.headstart import Extender, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.test_admission import TWO_GROUPS, static_p4d_node
from tests.e2e.test_gang import gang_state, groups_of, indexed_job, run_job

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]


def events(cluster, namespace: str, reason: str) -> list[dict]:
    return [e for e in cluster.kube.list(f"/api/v1/namespaces/{namespace}/events")
            if e.get("reason") == reason]


def test_as_shipped_cluster_autoscaler_groups_nobody_named_do_not_hold_a_job(
        e2e_clusters, namespace, e2e_timings):
    spec, port = headstart_cluster(autoscaler=True, node_groups=TWO_GROUPS)
    cluster = e2e_clusters.start(spec, "room-unknown-ca")
    try:
        kube = cluster.kube
        extender = Extender(cluster, port=port).start()
        extender.wait_ready()
        kube.create("/api/v1/nodes", static_p4d_node())
        kube.ensure_namespace(namespace)
        created = time.monotonic()
        run_job(cluster, namespace, indexed_job("grow", 3))
        record = cluster.wait("the job released with unknown room", lambda: gang_state(
            cluster, namespace, "grow", "Admitted"), 120, [*LOGS, "cluster-autoscaler"])
        released_s = time.monotonic() - created
        status = record["status"]
        assert status["reason"] == "RoomUnknown", status
        assert status["domain"] == "placement-group=pg-a", status
        assert "p4d-pg-a" in status["message"] and "p4d-pg-b" in status["message"], status
        # The record is written before the pods are patched, their Events after.
        def warned_pods():
            found = events(cluster, namespace, "HeadstartRoomUnknown")
            return found if len(found) == 3 else NotYet(f"{len(found)} Events")

        warned = cluster.wait("a HeadstartRoomUnknown Event per pod", warned_pods, 30, LOGS)
        assert {e["type"] for e in warned} == {"Warning"}, warned
        unknown = extender.get("/admission").json()["unknown_room"]
        assert unknown == ["cluster-autoscaler node group p4d-pg-a",
                           "cluster-autoscaler node group p4d-pg-b"], unknown
        groups = cluster.wait("the job bound whole", lambda: groups_of(
            cluster, namespace, "grow", 3), 240, [*LOGS, "cluster-autoscaler"])
        assert groups == ["pg-a"], groups
        launched = [n["metadata"]["name"] for n in kube.list("/api/v1/nodes")
                    if n["metadata"]["name"] != "a-static"
                    and n["metadata"]["labels"].get("node.kubernetes.io/instance-type")
                    == "p4d.24xlarge"]
        e2e_timings.record("room unknown: CA groups nobody named, job released and bound",
                           released_since_created=released_s,
                           bound_since_created=time.monotonic() - created,
                           nodes_launched=len(launched))
    finally:
        cluster.stop()


def test_karpenter_nodepools_are_the_room_a_job_is_admitted_into(
        e2e_clusters, namespace, e2e_timings):
    spec, port = headstart_cluster(karpenter=True)
    cluster = e2e_clusters.start(spec, "room-nodepools")
    try:
        kube = cluster.kube
        extender = Extender(cluster, port=port).start()
        extender.wait_ready()
        kube.ensure_namespace(namespace)
        cluster.wait("the admitter to read the NodePools", lambda: (
            summary := extender.get("/admission").json())["nodepools"].endswith("read")
            or NotYet(summary["nodepools"]), 90, LOGS)
        created = time.monotonic()
        run_job(cluster, namespace, indexed_job("launch", 3))
        record = cluster.wait("the job admitted on the NodePools' room", lambda: gang_state(
            cluster, namespace, "launch", "Admitted"), 90, [*LOGS, "karpenter"])
        admitted_s = time.monotonic() - created
        status = record["status"]
        assert (status["reason"], status["domain"]) == ("Admitted", "placement-group=pg-a"), \
            status
        summary = extender.get("/admission").json()
        assert summary["unknown_room"] == [], summary
        groups = cluster.wait("the job bound whole", lambda: groups_of(
            cluster, namespace, "launch", 3), 240, [*LOGS, "karpenter"])
        assert groups == ["pg-a"], groups
        pools = {n["metadata"]["labels"].get("karpenter.sh/nodepool")
                 for n in kube.list("/api/v1/nodes")}
        assert "p4d-pg-a" in pools, pools
        e2e_timings.record("room known: Karpenter NodePools read, job admitted and bound",
                           admitted_since_created=admitted_s,
                           bound_since_created=time.monotonic() - created)
    finally:
        cluster.stop()
