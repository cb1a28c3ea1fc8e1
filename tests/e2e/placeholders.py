"""The overprovisioner configs the e2e scenarios run and how they read its placeholders.

`LADDER_CONFIG` keeps one placeholder per instance type for as long as the test runs:
the cold-start ladder (`forecast.cold_start_placeholders: 1`) with the `seasonal`
model, which needs a day of history before it forecasts, so at a 5 s tick the ladder
never ends in a test. No cost cap (a p4d.24xlarge alone is over the default $25/h).

Must not: assert anything.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.kube import Kube

NAMESPACE = "headstart-placeholders"  # the shipped placeholders.namespace
INSTANCE_TYPES = ("m5.4xlarge", "g5.12xlarge", "p4d.24xlarge")
LADDER_CONFIG: dict[str, Any] = {
    "catalog": "aws",
    "instance_types": list(INSTANCE_TYPES),
    "tick": "5s",
    "horizon": "5s",
    "forecast": {"model": "seasonal", "cold_start_placeholders": 1},
    "limits": {"cost_cap_per_hour": None, "placement_groups": {"p4d.24xlarge": ["pg-a"]}},
    "placeholders": {"namespace": NAMESPACE, "backend": "deployment"},
}
SELECTOR = "app.kubernetes.io/managed-by=headstart,headstart.io/placeholder=true"


def placeholder_pods(kube: Kube, instance_type: str | None = None) -> list[dict[str, Any]]:
    selector = SELECTOR + (f",headstart.io/instance-type={instance_type}"
                           if instance_type else "")
    return kube.list(f"/api/v1/namespaces/{NAMESPACE}/pods", label_selector=selector)


def placeholder_deployments(kube: Kube) -> list[dict[str, Any]]:
    return kube.list(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments",
                     label_selector=SELECTOR)
