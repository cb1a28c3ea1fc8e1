"""What the suspension scenarios share (test_jobset_, test_kubeflow_, test_trainjob_ and
test_mpi_operator_suspension.py): one 8-GPU node in pg-c, a node group `ghost` the
admitter is told can add 2 more there, which never come, so an admitted gang is never
whole; the shipped extender with a 20 s bind timeout and a 5 s backoff."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.e2e import installed
from tests.e2e.headstart import extender_on
from tests.e2e.objects import kwok_node
from tests.e2e.test_gang_recovery import P4D

TIMEOUT_S = 20
BACKOFF_S = 5


def ghost_cluster(e2e_clusters: Any, name: str, logs: Sequence[str], crds: Sequence[Path]
                  ) -> tuple[Any, Any]:
    """(cluster, extender): c-0 in pg-c, the ghost group, these CRDs installed."""
    admission = dict(installed.shipped_config("extender")["admission"])
    admission.update(bind_timeout_seconds=TIMEOUT_S, backoff_base_seconds=BACKOFF_S,
                     autoscaler={"status": "", "node_groups": [
                         {"name": "ghost", "instance_type": "p4d.24xlarge", "domain": "pg-c",
                          "max_size": 3}]})
    cluster, extender, _ = extender_on(
        e2e_clusters, name, [kwok_node("c-0", memory="768Gi", group="pg-c", labels=P4D)],
        logs, settings={"admission": admission}, crds=tuple(crds))
    return cluster, extender


def headstart_events(kube: Any, namespace: str) -> list[tuple[str, str]]:
    """(involved kind, reason) of every Headstart* Event in the namespace."""
    return [(e["involvedObject"]["kind"], e["reason"])
            for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
            if e["reason"].startswith("Headstart")]
