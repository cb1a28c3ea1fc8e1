"""Table tests of the faults a human must fix, and their one-line reasons."""

from __future__ import annotations

import pytest

from common.errors import InputError
from overprovisioner.service.errors import ApiCallError, NotOwnedError
from overprovisioner.service.faults import collect_faults, fault_of

FORBIDDEN = ApiCallError("apply apps/v1 Deployment headstart/x", "permanent", 403,
                         "deployments.apps is forbidden:\n  User cannot patch")


@pytest.mark.parametrize(
    "error, fault",
    [
        (FORBIDDEN, "forbidden"),
        (ApiCallError("list autoscaling.x-k8s.io/v1beta1 CapacityBuffer", "permanent", 404,
                      "not found"), "not_found"),
        (NotOwnedError("apps/v1 Deployment headstart/x"), "not_owned"),
        # placeholders.backend capacitybuffer on a cluster without a usable CRD
        (ApiCallError("backend capacitybuffer (op.yaml: placeholders.backend)", "permanent",
                      404, "this cluster does not serve CapacityBuffers"),
         "capacitybuffer_unusable"),
        # retried out: heals by itself, not a fault of the setup
        (ApiCallError("list nodes", "temporary", 503, "unavailable"), None),
        (InputError("plan: bad"), None),
    ],
    ids=["403", "404", "not-owned", "forced-backend-missing", "503", "input"],
)
def test_fault_of(error, fault):
    assert fault_of(error) == fault


def test_collect_faults_one_line_each_first_error_wins():
    second = ApiCallError("apply v1 PodTemplate headstart/y", "permanent", 403, "no")
    faults = collect_faults([FORBIDDEN, second], "v1beta1 CapacityBuffer is cluster-scoped",
                            "unreadable: get configmap: permanent API error 403: no")
    assert set(faults) == {"forbidden", "capacitybuffer_unusable",
                           "autoscaler_status_unreadable"}
    assert faults["forbidden"].startswith("apply apps/v1 Deployment headstart/x")
    assert "\n" not in faults["forbidden"]
    assert faults["capacitybuffer_unusable"] == "v1beta1 CapacityBuffer is cluster-scoped"
    assert collect_faults([], "", "3 node groups") == {}
