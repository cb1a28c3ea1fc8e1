"""What headstart's accounts may do, against the real kube-apiserver as installed. The
extender's ServiceAccount may make only its three edits of a pod, against the real
kube-apiserver with the shipped ValidatingAdmissionPolicy (manifests/base/admission/
extender-edits.yaml): RBAC gives it `patch` on every pod, which could change an image.

A gated training pod (the shipped gate policy adds the gate; no extender runs, so it
stays gated) is patched with the extender's token, as `kubectl` with its kubeconfig:
- the admitter's own patch (extender/admission/patch.py: gate lifted, the domain as
  required node affinity and annotation, the PodGroup label) is accepted;
- on a second gated pod, each other edit is refused with the policy's message: an
  image, a label, another annotation, another gate, a toleration; the pod is unchanged.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
from pathlib import Path

import pytest

from extender.admission.patch import ungate_patch
from tests.e2e.headstart import REPO, headstart_cluster
from tests.e2e.objects import training_pod
from tests.e2e.test_gang import kubectl_as

GATE = "headstart.io/placement"
LOGS = ["kube-apiserver"]


@pytest.fixture(scope="module")
def edits_cluster(e2e_clusters):
    spec, _ = headstart_cluster()
    cluster = e2e_clusters.start(spec, "extender-edits")
    yield cluster
    cluster.stop()


def gated_pod(cluster, namespace: str, name: str, gates: tuple[str, ...] = ()) -> dict:
    pod = training_pod(name, namespace, "edits", "worker", gpus=8, cpu="8", memory="64Gi")
    if gates:
        pod["spec"]["schedulingGates"] = [{"name": gate} for gate in gates]
    created = cluster.kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    assert {"name": GATE} in created["spec"]["schedulingGates"]
    return created


def patch_as_extender(cluster, namespace: str, name: str, ops: list) -> tuple[int, str]:
    kubeconfig = cluster.token_kubeconfig("headstart", "headstart-extender", "edits-probe")
    result = kubectl_as(kubeconfig, "patch", "pod", name, "-n", namespace, "--type=json",
                        "-p", json.dumps(ops))
    return result.returncode, result.stderr.strip()


def test_the_admitters_patch_is_accepted(edits_cluster, namespace):
    cluster = edits_cluster
    cluster.kube.ensure_namespace(namespace)
    pod = gated_pod(cluster, namespace, "admitted")
    ops = ungate_patch(pod, GATE, ("headstart.io/placement-group", "pg-a",
                                   "placement-group=pg-a"),
                       labels={"scheduling.x-k8s.io/pod-group": "edits"})
    code, err = patch_as_extender(cluster, namespace, "admitted", ops)
    assert code == 0, err
    after = cluster.kube.pod(namespace, "admitted")
    assert not after["spec"].get("schedulingGates")
    assert after["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "edits"
    assert after["metadata"]["annotations"]["headstart.io/domain"] == "placement-group=pg-a"


@pytest.mark.parametrize(("ops", "message"), [
    ([{"op": "replace", "path": "/spec/containers/0/image", "value": "evil:latest"}],
     "may not change a pod's images"),
    ([{"op": "add", "path": "/metadata/labels/app", "value": "other"}],
     "may only add the scheduling.x-k8s.io/pod-group label"),
    ([{"op": "add", "path": "/metadata/annotations", "value": {"example.com/x": "y"}}],
     "may only set the headstart.io/domain annotation"),
    ([{"op": "remove", "path": "/spec/schedulingGates/0"}],  # example.com/hold, not ours
     "may only lift its own gate"),
    ([{"op": "add", "path": "/spec/tolerations/-",
       "value": {"key": "dedicated", "operator": "Exists"}}],
     "may not change a pod's tolerations"),
], ids=["image", "label", "annotation", "other-gate", "toleration"])
def test_any_other_edit_is_refused(edits_cluster, namespace, ops, message):
    cluster = edits_cluster
    cluster.kube.ensure_namespace(namespace)
    before = gated_pod(cluster, namespace, "victim", gates=("example.com/hold",))
    assert before["spec"]["schedulingGates"][0] == {"name": "example.com/hold"}
    code, err = patch_as_extender(cluster, namespace, "victim", ops)
    assert code != 0 and "headstart-extender-pod-edits" in err and message in err, err
    after = cluster.kube.pod(namespace, "victim")
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("labels") == before["metadata"].get("labels")


# (namespace, Lease) of each component: the admitter's and the scheduler's in headstart,
# the overprovisioner's beside its placeholders.
LEASES = {"headstart-extender": ("headstart", "headstart-extender-admitter"),
          "headstart-scheduler": ("headstart", "headstart-scheduler"),
          "headstart-overprovisioner": ("headstart-placeholders", "headstart-overprovisioner")}


@pytest.mark.parametrize("account", ["headstart-extender", "headstart-overprovisioner",
                                     "headstart-placeholder-expiry"])
def test_each_account_may_update_only_its_own_lease(edits_cluster, account):
    """kube-apiserver's own answer (SelfSubjectAccessReview, `kubectl auth can-i`) for
    each component's token: taking another's Lease stops admission or scheduling. Its
    whole `auth can-i --list` in both namespaces is printed and compared with the
    checked-in tests/e2e/data/can-i/ACCOUNT.txt, so a right gained shows in review."""
    kubeconfig = edits_cluster.token_kubeconfig("headstart", account, f"{account}-can-i")

    def can(verb: str, namespace: str, lease: str) -> str:
        result = kubectl_as(kubeconfig, "auth", "can-i", verb, f"leases/{lease}",
                            "-n", namespace)
        return result.stdout.strip()

    for holder, (namespace, lease) in LEASES.items():
        expected = ["yes", "yes"] if holder == account else ["no", "no"]
        assert [can("update", namespace, lease), can("get", namespace, lease)] == expected, \
            lease
    listings = []
    for namespace in ("headstart", "headstart-placeholders"):
        listed = kubectl_as(kubeconfig, "auth", "can-i", "--list", "-n", namespace)
        print(f"\n{account} in {namespace}:\n{listed.stdout}")
        listings.append(f"# {account} in {namespace}\n{normalized(listed.stdout)}")
    found = "\n".join(listings)
    expected = CAN_I / f"{account}.txt"
    if os.environ.get("HEADSTART_E2E_UPDATE_CAN_I"):
        expected.write_text(found)
    assert expected.is_file(), f"no {expected}: run with HEADSTART_E2E_UPDATE_CAN_I=1"
    assert found == expected.read_text(), (
        f"{account}'s rights differ from {expected.relative_to(REPO)} (kube-apiserver's "
        "`auth can-i --list`); if the change is meant, run this test with "
        f"HEADSTART_E2E_UPDATE_CAN_I=1 and review the diff:\n"
        + "\n".join(difflib.unified_diff(expected.read_text().splitlines(),
                                         found.splitlines(), lineterm="")))


CAN_I = Path(__file__).parent / "data" / "can-i"


def normalized(listing: str) -> str:
    """`auth can-i --list` as sorted rows of single-spaced columns (the table's widths
    change with its longest name)."""
    lines = [" ".join(line.split()) for line in listing.splitlines() if line.strip()]
    header, rows = lines[0], sorted(lines[1:])
    return "\n".join([header, *rows]) + "\n"


def test_the_overprovisioner_writes_workloads_only_where_no_other_account_lives(
        edits_cluster):
    """A Deployment the overprovisioner could write in `headstart` could run a pod as the
    extender's or the scheduler's ServiceAccount; it writes only in the placeholders'
    namespace, whose only account is its `default`."""
    kubeconfig = edits_cluster.token_kubeconfig("headstart", "headstart-overprovisioner",
                                                "overprovisioner-can-i")

    def can(verb: str, resource: str, namespace: str) -> str:
        return kubectl_as(kubeconfig, "auth", "can-i", verb, resource,
                          "-n", namespace).stdout.strip()

    for resource in ("deployments.apps", "pods", "capacitybuffers.autoscaling.x-k8s.io"):
        assert can("create", resource, "headstart") == "no", resource
    assert can("create", "deployments.apps", "headstart-placeholders") == "yes"
    assert can("create", "pods", "headstart-placeholders") == "no"
    accounts = edits_cluster.kube.list("/api/v1/namespaces/headstart-placeholders/"
                                       "serviceaccounts")
    assert {a["metadata"]["name"] for a in accounts} <= {"default"}


def test_the_expiry_job_may_change_replica_counts_and_nothing_else(edits_cluster):
    """The placeholder expiry CronJob's account: a Deployment's scale subresource and
    CapacityBuffers in the placeholders' namespace; never a pod template (code to run),
    never a pod, nothing in headstart's own namespace."""
    kubeconfig = edits_cluster.token_kubeconfig("headstart", "headstart-placeholder-expiry",
                                                "expiry-can-i")

    def can(*args: str) -> str:
        return kubectl_as(kubeconfig, "auth", "can-i", *args).stdout.strip()

    here = ("-n", "headstart-placeholders")
    assert can("patch", "deployments.apps", "--subresource=scale", *here) == "yes"
    assert can("list", "deployments.apps", *here) == "yes"
    # (CapacityBuffers: this cluster serves no such CRD for can-i to resolve; the unit
    # test tests/manifests/test_rbac.py holds the rule to the job's calls.)
    assert can("patch", "deployments.apps", *here) == "no"
    assert can("create", "pods", *here) == "no"
    assert can("delete", "deployments.apps", *here) == "no"
    assert can("list", "deployments.apps", "-n", "headstart") == "no"
    assert can("list", "pods", "--all-namespaces") == "no"


def test_the_overprovisioner_may_create_only_its_own_priority_class(edits_cluster):
    """RBAC cannot narrow `create` by name: the shipped ValidatingAdmissionPolicy
    headstart-overprovisioner-priority-class refuses any PriorityClass its token creates
    but the placeholders' own, and RBAC refuses any change of one. Then the class the
    service creates (overprovisioner/service/objects.py) is accepted."""
    import yaml

    from overprovisioner.config import OverprovisionerConfig
    from overprovisioner.service.objects import priority_class

    kubeconfig = edits_cluster.token_kubeconfig("headstart", "headstart-overprovisioner",
                                                "overprovisioner-priority-class")
    own = dict(priority_class(OverprovisionerConfig()).body)
    path = "/apis/scheduling.k8s.io/v1/priorityclasses"

    def create(body: dict) -> subprocess.CompletedProcess:
        return kubectl_as(kubeconfig, "create", "-f", "-", stdin=yaml.safe_dump(body))

    refused = {
        "a global default": {**own, "metadata": {"name": "everyone"}, "value": -1,
                             "globalDefault": True},
        "another name": {**own, "metadata": {"name": "headstart-vip"}},
        "its own name, high and preempting": {**own, "value": 1000000,
                                              "preemptionPolicy": "PreemptLowerPriority"},
    }
    edits_cluster.kube.delete(f"{path}/headstart-placeholder")  # installed by the manifests
    for what, body in refused.items():
        result = create(body)
        assert result.returncode != 0 and \
            "headstart-overprovisioner-priority-class" in result.stderr, (what, result.stderr)
    assert create(own).returncode == 0
    found = edits_cluster.kube.get(f"{path}/headstart-placeholder")
    # (kube-apiserver omits globalDefault when false)
    assert (found["value"], found["preemptionPolicy"], found.get("globalDefault", False)) \
        == (own["value"], "Never", False)
    patched = kubectl_as(kubeconfig, "patch", "priorityclass", "headstart-placeholder",
                         "--type=merge", "-p", '{"globalDefault": true}')
    assert patched.returncode != 0 and "forbidden" in patched.stderr.lower(), patched.stderr
