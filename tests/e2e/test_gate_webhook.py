"""The placement gate from the webhook (Kubernetes 1.30 to 1.35) against the real
kube-apiserver, as the gate-webhook component installs it, beside the
MutatingAdmissionPolicy it replaces.

- One table of pods (tests/locality/admission/test_gate.py's CASES: a training pod,
  another scheduler's, one created bound, gated already, another gate, Kueue's three
  marks, a placeholder in `headstart` and a forged one in a tenant's namespace) is
  created (server-side dry run: admission runs, nothing is stored) first under the
  shipped policy, then under the webhook: each pod gets the gate under both or neither,
  as the table says.
- Under the webhook a 2-pod Indexed Job is gated, admitted by the extender's admitter
  and bound whole; the extender counts the reviews it gated.
- With the extender stopped (no webhook answering), a pod for headstart-scheduler is
  refused (failurePolicy Fail: its controller retries) and a pod for the default
  scheduler is created as ever (the match condition keeps it out of the webhook).
"""

from __future__ import annotations

import base64
import copy
import time

import pytest
import trustme

from tests.e2e import installed
from tests.e2e.headstart import Extender, headstart_cluster
from tests.e2e.kube import KubeError, NotYet
from tests.e2e.objects import kwok_node, training_pod
from tests.e2e.processes import free_ports
from tests.e2e.test_gang import GATE, finish, groups_of, indexed_job, run_job
from tests.locality.admission.test_gate import CASES

LOGS = ["headstart-extender", "headstart-scheduler", "kube-controller-manager"]
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
RESTRICTED = {  # the headstart namespace enforces the restricted Pod Security level
    "pod": {"runAsNonRoot": True, "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"}},
    "container": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
}


def gated_on_create(kube, namespace: str, case_id: str, pod: dict) -> bool:
    """Whether kube-apiserver's admission adds the gate to `pod` (a dry-run create)."""
    body = copy.deepcopy(pod)
    body["metadata"]["name"] = f"gate-{case_id}"
    body["spec"]["securityContext"] = RESTRICTED["pod"]
    for container in body["spec"]["containers"]:
        container["securityContext"] = RESTRICTED["container"]
    created = kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", body,
                           params={"dryRun": "All"})
    before = [gate["name"] for gate in pod["spec"].get("schedulingGates") or []]
    after = [gate["name"] for gate in created["spec"].get("schedulingGates") or []]
    assert after[:len(before)] == before, (case_id, after)  # nobody else's gate lifted
    return after.count(GATE) > before.count(GATE)


def outcomes(kube, team: str) -> dict[str, bool]:
    return {case_id: gated_on_create(kube, team if namespace == "team" else namespace,
                                     case_id, pod)
            for case_id, pod, namespace, _ in CASES}


def webhook_configuration(port: int, ca: trustme.CA) -> dict:
    """The component's MutatingWebhookConfiguration, with kube-apiserver sent to the
    extender on this machine (a URL and the test CA) instead of the in-cluster Service."""
    rendered = installed.rendered(("gate-webhook",))
    config = copy.deepcopy(rendered.find("MutatingWebhookConfiguration",
                                         "headstart-placement-gate"))
    config["metadata"].pop("annotations", None)
    (hook,) = config["webhooks"]
    assert hook["clientConfig"]["service"]["path"] == "/gate"
    hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}/gate",
                            "caBundle": base64.b64encode(ca.cert_pem.bytes()).decode()}
    return config


def test_the_webhook_gates_what_the_policy_gates_and_jobs_run_behind_it(
        e2e_clusters, namespace, tmp_path, e2e_timings):
    spec, port = headstart_cluster()
    cluster = e2e_clusters.start(spec, "gate-webhook")
    kube = cluster.kube
    for index in range(2):
        kube.create("/api/v1/nodes", kwok_node(f"n-{index}", memory="768Gi", group="pg-a"))
    kube.ensure_namespace(namespace)
    under_policy = outcomes(kube, namespace)

    # Switch to the component, as a cluster before 1.36 is installed: no policy, the
    # webhook answered by the extender with its certificate.
    for kind in ("mutatingadmissionpolicybindings", "mutatingadmissionpolicies"):
        kube.delete(f"{ADMISSION}/{kind}/headstart-placement-gate")
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    tls_dir = tmp_path / "gate-tls"
    tls_dir.mkdir()
    issued.cert_chain_pems[0].write_to_path(str(tls_dir / "tls.crt"))
    issued.private_key_pem.write_to_path(str(tls_dir / "tls.key"))
    gate_port = free_ports(1)[0]
    kube.create(f"{ADMISSION}/mutatingwebhookconfigurations", webhook_configuration(gate_port, ca))
    extender = Extender(cluster, port=port, gate_webhook=(gate_port, tls_dir)).start()
    extender.wait_ready()

    def gated_by_webhook() -> float:
        metrics = extender.get("/metrics").text
        return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith('headstart_extender_gate_reviews_total{outcome="gated"}'))

    def policy_gone():
        """True once the webhook, not the policy, gates a training pod: kube-apiserver
        runs policies before webhooks and drops a deleted one from its cache shortly, and
        the webhook counts a pod the policy gated first as passed."""
        before = gated_by_webhook()
        pod = training_pod("probe", namespace)
        pod["spec"]["containers"][0]["securityContext"] = RESTRICTED["container"]
        try:
            kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod,
                         params={"dryRun": "All"})
        except KubeError as error:
            return NotYet(str(error))
        return gated_by_webhook() == before + 1 or NotYet("gated by the policy")

    cluster.wait("the webhook, not the policy, to gate pods", policy_gone, 30, LOGS)
    before_table = gated_by_webhook()
    under_webhook = outcomes(kube, namespace)
    expected = {case_id: gated for case_id, _, _, gated in CASES}
    assert under_policy == expected
    assert under_webhook == expected
    assert gated_by_webhook() - before_table == sum(expected.values())

    created = time.monotonic()
    run_job(cluster, namespace, indexed_job("behind-webhook", 2))
    groups = cluster.wait("the job gated by the webhook bound whole", lambda: groups_of(
        cluster, namespace, "behind-webhook", 2), 90, LOGS)
    assert groups == ["pg-a"]
    assert gated_by_webhook() - before_table == sum(expected.values()) + 2  # its two pods
    e2e_timings.record("gate webhook: job gated, admitted, bound",
                       bound_since_created=time.monotonic() - created)
    finish(cluster, namespace, "behind-webhook")

    extender.stop()
    with pytest.raises(KubeError) as refused:
        kube.create(f"/api/v1/namespaces/{namespace}/pods", training_pod("refused", namespace))
    assert "placement-gate.headstart.io" in str(refused.value), refused.value
    other = training_pod("other", namespace, scheduler="default-scheduler")
    assert kube.create(f"/api/v1/namespaces/{namespace}/pods", other)["metadata"]["name"] == \
        "other"
    e2e_timings.record("gate webhook down: headstart pod refused",
                       message=str(refused.value)[:200])
