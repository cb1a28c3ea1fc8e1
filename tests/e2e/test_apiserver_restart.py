"""The kube-apiserver restarted under headstart's processes: the overprovisioner's loop
converges to exactly the planned placeholders (no duplicates, no orphans), and the
extender's watches resume so that it knows a node added while its API server was down.
Each test gets a fresh cluster: it restarts a component."""

from __future__ import annotations

import time

from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import HEADSTART_SCHEDULER, bound_node, kwok_node, phase, training_pod
from tests.e2e.placeholders import (
    LADDER_CONFIG,
    NAMESPACE,
    placeholder_deployments,
    placeholder_pods,
)

# Two overprovisioner ticks, and past the 10 s renew deadline of its Lease (and of the
# headstart-scheduler's, which then exits and is started again, as kubelet would).
OUTAGE_S = 12.0


def test_the_overprovisioner_converges_to_exactly_the_plan_after_an_apiserver_restart(
        e2e_clusters, e2e_timings):
    spec, port = headstart_cluster()
    cluster = e2e_clusters.start(spec, "restart-overprovisioner")
    try:
        kube = cluster.kube
        Extender(cluster, port=port).start().wait_ready()  # placeholders go through it
        kube.ensure_namespace(NAMESPACE)
        # Nodes the placeholders fit (catalog allocatable), so they run: 2 of each type.
        for index in range(2):
            kube.create("/api/v1/nodes", kwok_node(
                f"m5-{index}", gpus=0, cpu="15890m", memory="63971Mi",
                labels={"node.kubernetes.io/instance-type": "m5.4xlarge"}))
            kube.create("/api/v1/nodes", kwok_node(
                f"p4d-{index}", cpu="95690m", memory="1178083Mi", group="pg-a",
                labels={"node.kubernetes.io/instance-type": "p4d.24xlarge"}))
        settings = {**LADDER_CONFIG, "instance_types": ["m5.4xlarge", "p4d.24xlarge"],
                    "forecast": {**LADDER_CONFIG["forecast"], "cold_start_placeholders": 2}}
        overprovisioner = Overprovisioner(cluster, settings).start()
        logs = [overprovisioner.name, "kube-controller-manager", "kube-apiserver"]
        # Cut the API server off in the middle of the first apply.
        cluster.wait("the first placeholder Deployment", lambda: placeholder_deployments(kube),
                     90, logs)
        stopped = time.monotonic()
        cluster.stop_apiserver()
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
        cluster.start_apiserver()
        restarted = time.monotonic()
        outage_s = restarted - stopped

        expected = {"headstart-placeholder-m5-4xlarge": 2,
                    "headstart-placeholder-p4d-24xlarge-pg-a": 2}

        def converged():
            deployments = {d["metadata"]["name"]: d["spec"]["replicas"]
                           for d in placeholder_deployments(kube)}
            pods = placeholder_pods(kube)
            running = [p for p in pods if phase(p) == "Running"]
            plan = overprovisioner.plan()
            state = (deployments, len(pods), len(running), plan["ok"], plan["leader"])
            done = (deployments == expected and len(pods) == len(running) == 4
                    and plan["ok"] and plan["leader"])
            return done or NotYet(state)

        cluster.wait("exactly the planned placeholders, all running, and a clean tick",
                     converged, 120, logs)
        converged_s = time.monotonic() - restarted
        tick = overprovisioner.plan()["time_s"]
        cluster.wait("one more tick", lambda: overprovisioner.plan()["time_s"] > tick, 30, logs)
        assert converged(), converged()  # and it stays so
        replica_sets = kube.list(f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets")
        assert sorted(rs["metadata"]["ownerReferences"][0]["name"] for rs in replica_sets) \
            == sorted(expected), replica_sets
        for pod in placeholder_pods(kube):
            [owner] = pod["metadata"]["ownerReferences"]
            assert owner["kind"] == "ReplicaSet", pod["metadata"]
            node = kube.get(f"/api/v1/nodes/{bound_node(pod)}")["metadata"]["labels"]
            assert node["node.kubernetes.io/instance-type"] == \
                pod["metadata"]["labels"]["headstart.io/instance-type"]
        assert not overprovisioner.plan()["errors"], overprovisioner.plan()
        e2e_timings.record("apiserver restart: overprovisioner", outage=outage_s,
                           converged_after_restart=converged_s,
                           headstart_scheduler_restarts=cluster.restarts.get(
                               HEADSTART_SCHEDULER, 0))
    finally:
        cluster.stop()


def test_the_extender_knows_a_node_added_while_its_apiserver_was_down(
        e2e_clusters, e2e_timings):
    spec, port = headstart_cluster()
    cluster = e2e_clusters.start(spec, "restart-extender")
    try:
        kube = cluster.kube
        for index in range(3):
            kube.create("/api/v1/nodes", kwok_node(f"gpu-{index}", group="pg-a"))
        extender = Extender(cluster, port=port).start()
        extender.wait_ready()
        logs = [extender.name, HEADSTART_SCHEDULER, "kube-apiserver"]
        cluster.wait("the extender's cache to hold 4 nodes",
                     lambda: extender.readyz()["nodes"] == 4, 30, logs)
        # A second API server on the same etcd, as in an HA control plane: the node is
        # added through it while the one everything else talks to is down. The outage
        # stays under the shipped scheduler config's 10 s renew deadline: past it,
        # kube-scheduler exits to give up its Lease (a pod would restart it).
        other = cluster.start_extra_apiserver()
        stopped = time.monotonic()
        cluster.stop_apiserver(crash=True)
        other.create("/api/v1/nodes", kwok_node("late-0", group="pg-a"))
        cluster.start_apiserver()
        outage_s = time.monotonic() - stopped

        cluster.wait("the extender to know the node added during the outage",
                     lambda: extender.readyz()["nodes"] == 5 or NotYet(extender.readyz()),
                     60, logs)
        known_s = time.monotonic() - stopped - outage_s
        watches = extender.readyz()["watches"]
        # The restarted API server's watch cache starts at the current resourceVersion:
        # resuming from an older one is 410 Gone, so the extender must have relisted.
        assert watches["nodes"]["relists_total"] >= 1, watches
        pod = training_pod("to-late-node", "default", job="late", role="worker", gpus=1,
                           node_selector={"kubernetes.io/hostname": "late-0"})
        kube.create("/api/v1/namespaces/default/pods", pod)
        node = cluster.wait("the pod bound to the node added during the outage",
                            lambda: bound_node(kube.pod("default", "to-late-node")), 60, logs)
        assert node == "late-0"
        assert not cluster.restarts, f"restarted after the outage: {cluster.restarts}"
        e2e_timings.record("apiserver restart: extender", outage=outage_s,
                           node_known_after_restart=known_s,
                           node_watch_errors=watches["nodes"]["errors_total"],
                           node_watch_relists=watches["nodes"]["relists_total"])
    finally:
        cluster.stop()
