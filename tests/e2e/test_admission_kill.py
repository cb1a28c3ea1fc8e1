"""The admitting replica killed -9 in the middle of applying a large gang, against the
real components, as installed (issue 46: "the admitter killed mid-apply of a large gang:
no split, no double write").

The cluster: pg-a and pg-b, 4 8-GPU kwok nodes each: either holds the job whole, so a
replica that forgot the first one's decision could send the rest of it elsewhere. The
first replica is throttled (`api_qps: 3`) so applying the job's 25 pods (each labelled
for its PodGroup, then ungated: a GET and a PATCH each) takes about 30 s; it is killed
once some of its pods are ungated and some are not. The second replica takes the Lease
and completes the job into the domain the Gang record names.
"""

from __future__ import annotations

import time
from collections import Counter

from tests.e2e.headstart import Extender, extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import kwok_node
from tests.e2e.test_admission import LEASE, all_bound, create, gated, job
from tests.e2e.test_gang import gang

LOGS = ["headstart-scheduler", "headstart-extender", "headstart-extender-b"]
NODES = {f"{g}-{i}": f"pg-{g}" for g in "ab" for i in range(4)}


def test_a_replica_killed_mid_apply_leaves_no_split_and_no_double_write(
        e2e_clusters, namespace, e2e_timings):
    cluster, first, _ = extender_on(
        e2e_clusters, "admission-kill",
        [kwok_node(name, memory="768Gi", group=group) for name, group in NODES.items()],
        LOGS, settings={"admission": {"api_qps": 3, "api_burst": 1}})
    try:
        kube = cluster.kube
        second = Extender(cluster, name="headstart-extender-b").start()
        second.wait_ready()
        cluster.wait("the throttled replica to lead", lambda: (
            lambda holder: holder == "headstart-extender" or NotYet(holder))(
                ((kube.get(LEASE, missing_ok=True) or {}).get("spec") or {}).get(
                    "holderIdentity")), 60, LOGS)
        kube.ensure_namespace(namespace)
        names = create(cluster, namespace, job(namespace, "large", 24))

        def half_applied():
            left = len(gated(cluster, namespace, names))
            return left if 0 < left < len(names) else NotYet(f"{left} gated")

        left = cluster.wait("some of the job's pods ungated, some not", half_applied, 120,
                            LOGS)
        first.kill()
        killed = time.monotonic()
        domain = gang(cluster, namespace, "large")["status"]["domain"]
        cluster.wait("the second replica to take the Lease", lambda: (
            lambda holder: holder == "headstart-extender-b" or NotYet(holder))(
                ((kube.get(LEASE, missing_ok=True) or {}).get("spec") or {}).get(
                    "holderIdentity")), 60, LOGS)
        # kube-scheduler calls the extender at the first replica's address (a Service
        # would reach either): started again, as kubelet restarts a killed container,
        # it comes back a follower.
        first.start()
        first.wait_ready()
        placed = cluster.wait("the job bound whole", lambda: all_bound(
            cluster, namespace, names), 150, LOGS)
        bound_s = time.monotonic() - killed
        groups = {NODES[node] for node in placed.values()}
        assert groups == {domain.split("=", 1)[1]}, (groups, domain)  # no split
        patches = Counter(w.name for w in cluster.writes()
                          if w.namespace == namespace and w.resource == "pods"
                          and w.verb == "patch" and w.user.startswith("headstart-extender"))
        # Each pod twice, whichever replica: its PodGroup label, then its gate.
        assert set(patches) == set(names) and set(patches.values()) == {2}, patches
        users = {w.user for w in cluster.writes() if w.namespace == namespace
                 and w.resource == "pods" and w.verb == "patch"}
        assert users == {"headstart-extender", "headstart-extender-b"}, users
        record = gang(cluster, namespace, "large")["status"]
        assert record["domain"] == domain, record
        e2e_timings.record("admission: admitter killed mid-apply of a 25-pod gang",
                           gated_at_kill=left, bound_after_kill=bound_s, domain=domain)
        second.stop()
    finally:
        cluster.stop()
