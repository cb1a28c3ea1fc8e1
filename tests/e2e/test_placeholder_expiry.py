"""Placeholders cannot outlive the overprovisioner: the shipped expiry CronJob's command,
`headstart expire-placeholders`, run with its own ServiceAccount's token
(headstart-placeholder-expiry, as the CronJob's pod would), against a real API server.

The overprovisioner keeps one placeholder Deployment per type (the cold-start ladder,
`expire_after` 20 s) and is killed (`kill -9`): nothing renews the placeholders and no
standby runs. Once their valid-until has passed, one run of the expiry command scales
every one to the floor (0); its only writes are to `deployments/scale`, and the
apiserver refused none of its requests. A run before they expire changes nothing.
"""

from __future__ import annotations

import subprocess
import sys
import time

from tests.e2e import installed
from tests.e2e.audit import accesses
from tests.e2e.headstart import REPO, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_deployments

ACCOUNT = "headstart-placeholder-expiry"
EXPIRE_AFTER_S = 20


def expire(cluster, config) -> subprocess.CompletedProcess:
    kubeconfig = cluster.token_kubeconfig(installed.NAMESPACE, ACCOUNT, ACCOUNT)
    return subprocess.run(
        [sys.executable, "-m", "headstart", "expire-placeholders", "--config", str(config),
         "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=120, cwd=REPO)


def test_the_expiry_job_scales_placeholders_a_dead_overprovisioner_left(
        e2e_clusters, e2e_timings):
    spec, _ = headstart_cluster()
    cluster = e2e_clusters.start(spec, "placeholder-expiry")
    try:
        kube = cluster.kube
        kube.ensure_namespace(NAMESPACE)
        settings = {**LADDER_CONFIG, "placeholders": {
            **LADDER_CONFIG["placeholders"], "expire_after": f"{EXPIRE_AFTER_S}s"}}
        overprovisioner = Overprovisioner(cluster, settings)
        overprovisioner.start().wait_ready()

        def three_placeholders():
            found = {d["metadata"]["name"]: d["spec"]["replicas"]
                     for d in placeholder_deployments(kube)}
            return found if len(found) == 3 and set(found.values()) == {1} else NotYet(found)

        cluster.wait("a placeholder Deployment per type", three_placeholders, 60,
                     ["headstart-overprovisioner"])
        overprovisioner.process.kill()
        killed = time.monotonic()
        early = expire(cluster, overprovisioner.config)
        assert early.returncode == 0, early.stderr[-2000:]
        assert {d["spec"]["replicas"] for d in placeholder_deployments(kube)} == {1}
        time.sleep(max(0.0, EXPIRE_AFTER_S + 2 - (time.monotonic() - killed)))
        started = time.time()
        late = expire(cluster, overprovisioner.config)
        assert late.returncode == 0, late.stderr[-2000:]
        assert "scaled to the floor by the expiry job" in late.stderr, late.stderr[-2000:]
        assert {d["spec"]["replicas"] for d in placeholder_deployments(kube)} == {0}
        mine = [w for w in cluster.writes() if w.user == ACCOUNT and w.time >= started - 1]
        assert len(mine) == 3 and {(w.verb, w.resource) for w in mine} == {
            ("patch", "deployments/scale")}, [str(w) for w in mine]
        refused = [str(a) for a in accesses(cluster.audit_events(), cluster.credential_names)
                   if a.user == ACCOUNT and a.code == 403]
        assert refused == [], refused
        e2e_timings.record("placeholder expiry job after the overprovisioner died",
                           expire_after_s=EXPIRE_AFTER_S,
                           shrunk_after_kill_s=time.monotonic() - killed)
    finally:
        cluster.stop()
