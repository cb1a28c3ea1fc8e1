"""The EKS and GKE overlays render with kustomize, validate, and agree with the code.

One failing check prints every problem, each naming the source file, the object
and the field (see checks.py).
"""

from __future__ import annotations

import pytest

from tests.manifests import checks

# Each overlay as it is (Kubernetes 1.36 and later, certificates made with openssl) and
# with the gate webhook in place of the MutatingAdmissionPolicy (1.30 to 1.35),
# cert-manager making its certificate and those of mutual TLS, as the install block
# renders it where cert-manager runs.
GATE_WEBHOOK = ("scheduler-tls-cert-manager", "gate-webhook", "gate-webhook-cert-manager")
VARIANTS = [(overlay, components) for overlay in checks.OVERLAYS
            for components in ((), GATE_WEBHOOK)]


@pytest.fixture(scope="module", params=VARIANTS,
                ids=[overlay + "+webhook" * bool(c) for overlay, c in VARIANTS])
def rendered(request, tmp_path_factory) -> checks.Rendered:
    overlay, components = request.param
    return checks.render(overlay, checks.MANIFESTS, tmp_path_factory.mktemp("render"),
                         components)


def test_overlay_renders_the_whole_install(rendered):
    kinds = {(o["kind"], o["metadata"]["name"]) for o in rendered.objects}
    for expected in [
        ("Namespace", "headstart"),
        ("PriorityClass", "headstart-placeholder"),
        ("Deployment", "headstart-scheduler"),
        ("Deployment", "headstart-extender"),
        ("Deployment", "headstart-overprovisioner"),
        ("Service", "headstart-extender"),
        ("PodDisruptionBudget", "headstart-extender"),
        ("PodDisruptionBudget", "headstart-scheduler"),
        ("ResourceQuota", "headstart-critical-pods"),
        ("PersistentVolumeClaim", "headstart-overprovisioner-history"),
    ]:
        assert expected in kinds


@pytest.mark.parametrize(
    "check",
    [
        checks.schema_problems,
        checks.scheduler_config_problems,
        checks.headstart_config_problems,
        checks.consistency_problems,
        checks.security_problems,
        checks.image_problems,
        checks.secret_problems,
        checks.docs_problems,
    ],
    ids=lambda check: check.__name__,
)
def test_overlay_has_no_problems(rendered, check):
    problems = check(rendered)
    assert not problems, "\n".join(problems)


def test_extender_is_reached_only_by_the_scheduler_and_monitoring(rendered):
    from extender.config import ExtenderConfig

    _, config = checks.config_file(rendered, "headstart-extender-config")
    port = config.get("port", ExtenderConfig().port)
    ops_port = config.get("ops_port", ExtenderConfig().ops_port)
    policy = rendered.find("NetworkPolicy", "headstart-extender")
    admitted = {}
    for rule in policy["spec"]["ingress"]:
        for entry in rule["ports"]:
            admitted.setdefault(entry["port"], []).extend(rule.get("from", ["anyone"]))
    scheduler = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "headstart-scheduler"}}}
    monitoring = {"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}
    # /bind creates Bindings: nothing but the scheduler may reach kube-scheduler's port.
    expected = {port: [scheduler], ops_port: [monitoring]}
    if rendered.components:  # kube-apiserver, from addresses no selector names
        expected[9443] = ["anyone"]
    assert admitted == expected


def test_the_gate_comes_from_exactly_one_admission_object(rendered):
    policies = rendered.of_kind("MutatingAdmissionPolicy")
    webhooks = rendered.of_kind("MutatingWebhookConfiguration")
    if not rendered.components:
        assert ([p["metadata"]["name"] for p in policies], webhooks) == (
            ["headstart-placement-gate"], [])
        return
    assert policies == [] and rendered.of_kind("MutatingAdmissionPolicyBinding") == []
    (webhook,) = webhooks
    (hook,) = webhook["webhooks"]
    # The Service it calls exists, routes to the extender's gate port, and the extender
    # is started serving it with the Secret cert-manager writes.
    service_ref = hook["clientConfig"]["service"]
    service = rendered.find("Service", service_ref["name"])
    assert service is not None and service["metadata"]["namespace"] == service_ref["namespace"]
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == service_ref["port"]]
    deployment = rendered.find("Deployment", "headstart-extender")
    (container,) = checks.pod_spec(deployment)["containers"]
    (container_port,) = [p for p in container["ports"] if p["name"] == port["targetPort"]]
    args = container["args"]
    assert args[args.index("--gate-webhook-port") + 1] == str(container_port["containerPort"])
    tls_dir = args[args.index("--gate-webhook-tls-dir") + 1]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == tls_dir]
    (volume,) = [v for v in checks.pod_spec(deployment)["volumes"] if v["name"] == mount["name"]]
    (certificate,) = [c for c in rendered.of_kind("Certificate")
                      if c["spec"]["secretName"] == volume["secret"]["secretName"]]
    assert certificate["spec"]["dnsNames"] == [
        f"{service_ref['name']}.{service_ref['namespace']}.svc"]
    assert webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"


def test_cloud_overlays_differ_only_where_the_cloud_does(tmp_path_factory):
    eks = checks.render("eks", checks.MANIFESTS, tmp_path_factory.mktemp("eks"))
    gke = checks.render("gke", checks.MANIFESTS, tmp_path_factory.mktemp("gke"))
    _, eks_config = checks.config_file(eks, "headstart-overprovisioner-config")
    _, gke_config = checks.config_file(gke, "headstart-overprovisioner-config")
    assert eks_config["catalog"] == "aws" and gke_config["catalog"] == "gcp"
    # Neither cloud labels nodes with their placement: the node groups / pools set it.
    assert eks_config["placeholders"]["placement_group_label"] == "headstart.io/placement-group"
    assert gke_config["placeholders"]["placement_group_label"] == "headstart.io/placement-group"


def test_gke_node_pools_with_compact_placement_set_the_placement_group_label():
    script = (checks.MANIFESTS / "overlays" / "gke" / "examples" / "node-pools.sh").read_text()
    commands = [c for c in script.replace("\\\n", " ").split("\n")
                if c.startswith("gcloud container node-pools create")]
    assert commands
    for command in commands:
        # A compact pool names its group in the label headstart reads; others have none.
        assert ("--placement-type COMPACT" in command) == (
            "--node-labels headstart.io/placement-group=" in command), command


def test_the_extenders_edit_policy_names_the_extenders_own_account(rendered):
    """The policy bounds the extender's pod patches by its username: a renamed account
    or namespace would leave the extender unbounded (the match never hits)."""
    deployment = rendered.find("Deployment", "headstart-extender")
    account = checks.pod_spec(deployment)["serviceAccountName"]
    username = f"system:serviceaccount:{deployment['metadata']['namespace']}:{account}"
    for name in ("headstart-extender-pod-edits", "headstart-decisions"):
        policy = rendered.find("ValidatingAdmissionPolicy", name)
        [condition] = policy["spec"]["matchConditions"]
        assert f"'{username}'" in condition["expression"], name
        binding = rendered.find("ValidatingAdmissionPolicyBinding", name)
        assert binding["spec"] == {"policyName": name, "validationActions": ["Deny"]}
