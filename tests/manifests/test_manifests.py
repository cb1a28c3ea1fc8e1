"""The EKS and GKE overlays render with kustomize, validate, and agree with the code.

One failing check prints every problem, each naming the source file, the object
and the field (see checks.py).
"""

from __future__ import annotations

import pytest

from tests.manifests import checks


@pytest.fixture(scope="module", params=checks.OVERLAYS)
def rendered(request, tmp_path_factory) -> checks.Rendered:
    return checks.render(request.param, checks.MANIFESTS, tmp_path_factory.mktemp("render"))


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
            admitted.setdefault(entry["port"], []).extend(rule["from"])
    scheduler = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "headstart-scheduler"}}}
    monitoring = {"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}
    # /bind creates Bindings: nothing but the scheduler may reach kube-scheduler's port.
    assert admitted == {port: [scheduler], ops_port: [monitoring]}


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
