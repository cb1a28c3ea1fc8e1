"""The cloud examples users paste: node groups that cluster-autoscaler can scale from zero
and that match the overprovisioner's buckets, cluster-autoscaler's IAM wiring, and the
training jobs of docs/install-eks.md as the training operator would turn them into pods."""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import shlex

import kubernetes_validate
import pytest
import yaml

from tests.manifests import checks

EKS = checks.MANIFESTS / "overlays" / "eks"
GKE = checks.MANIFESTS / "overlays" / "gke"
JOB_EXAMPLES = checks.MANIFESTS / "examples"  # the training jobs, for either cloud
INSTALL_EKS = checks.REPO / "docs" / "install-eks.md"
INSTALL_GKE = checks.REPO / "docs" / "install-gke.md"

# ManagedNodeGroup fields the example may use (eksctl pkg/apis/eksctl.io/v1alpha5/types.go:
# NodeGroupBase and ManagedNodeGroup JSON names): eksctl refuses unknown fields, so a
# typo is caught here before a user runs it.
NODE_GROUP_FIELDS = {"name", "instanceType", "minSize", "maxSize", "desiredCapacity",
                     "availabilityZones", "placement", "efaEnabled", "labels", "taints",
                     "propagateASGTags", "tags", "iam"}
TEMPLATE = "k8s.io/cluster-autoscaler/node-template/"


def load(path):
    return yaml.safe_load(path.read_text())


def node_groups() -> list[dict]:
    return load(EKS / "examples" / "eksctl-nodegroups.yaml")["managedNodeGroups"]


def gke_machine_types() -> list[str]:
    script = (GKE / "examples" / "node-pools.sh").read_text()
    words = shlex.split(script, comments=True)
    return [words[i + 1] for i, word in enumerate(words) if word == "--machine-type"]


@pytest.mark.parametrize(
    "overlay, example_types",
    [("eks", lambda: [g["instanceType"] for g in node_groups()]), ("gke", gke_machine_types)],
    ids=["eks", "gke"],
)
def test_the_overlay_buckets_are_the_example_node_groups(overlay, example_types) -> None:
    # A bucket with no node group gets placeholders no node can ever hold; a node group
    # with no bucket gets no placeholders. The lists cannot drift apart.
    config = load(checks.MANIFESTS / "overlays" / overlay / "overprovisioner-config.yaml")
    assert sorted(config["instance_types"]) == sorted(example_types())
    assert len(set(config["instance_types"])) == len(config["instance_types"])


def test_every_node_group_can_scale_from_zero() -> None:
    cluster = load(EKS / "examples" / "eksctl-nodegroups.yaml")["metadata"]["name"]
    for group in node_groups():
        name = group["name"]
        assert set(group) <= NODE_GROUP_FIELDS, (name, set(group) - NODE_GROUP_FIELDS)
        assert group["minSize"] == 0 and group["desiredCapacity"] == 0, name
        # EKS keeps labels and taints on the node group; eksctl copies them to the ASG.
        assert group["propagateASGTags"] is True, name
        tags = group["tags"]
        assert tags.get(f"k8s.io/cluster-autoscaler/{cluster}") == "owned", name
        assert tags.get("k8s.io/cluster-autoscaler/enabled") == "true", name
        for key, value in group["labels"].items():
            assert tags.get(f"{TEMPLATE}label/{key}") == value, (name, key)
        assert "headstart.io/placement-group" in group["labels"], name
        # CA's AWS GPU label: without it a GPU node whose device plugin has not yet
        # registered counts as ready without GPUs, and CA scales up again for the
        # placeholder still pending on it (processors/customresources/gpu_processor.go).
        assert group["labels"].get("k8s.amazonaws.com/accelerator", "").startswith(
            "nvidia-"), name
        assert tags[f"{TEMPLATE}label/node.kubernetes.io/instance-type"] == (
            group["instanceType"])
        for taint in group["taints"]:
            # cluster-autoscaler's AWS provider reads "value:Effect" and skips the rest
            # (cloudprovider/aws/aws_manager.go extractTaintsFromAsg); eksctl's own
            # propagated taint tag has the value alone.
            value = tags.get(f"{TEMPLATE}taint/{taint['key']}")
            assert value == f"{taint['value']}:{taint['effect']}", (name, value)
            assert re.fullmatch(r".*:(NoSchedule|NoExecute|PreferNoSchedule)", value)


def test_cluster_autoscaler_gets_its_aws_permissions_through_irsa() -> None:
    cluster = load(EKS / "examples" / "eksctl-nodegroups.yaml")["metadata"]["name"]
    values = load(EKS / "examples" / "cluster-autoscaler-values.yaml")
    assert values["autoDiscovery"]["clusterName"] == cluster
    policy = json.loads((EKS / "examples" / "cluster-autoscaler-iam-policy.json").read_text())
    actions = {a for statement in policy["Statement"] for a in statement["Action"]}
    assert {"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup",
            "autoscaling:DescribeAutoScalingGroups", "ec2:DescribeLaunchTemplateVersions",
            "eks:DescribeNodegroup"} <= actions
    (writes,) = [s for s in policy["Statement"] if "autoscaling:SetDesiredCapacity" in s["Action"]]
    assert writes["Condition"]["StringEquals"] == {
        f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster}": "owned"}
    account = values["rbac"]["serviceAccount"]
    role = account["annotations"]["eks.amazonaws.com/role-arn"].rsplit("/", 1)[1]
    docs = INSTALL_EKS.read_text()
    # The role eksctl makes is the one the chart's service account names, for that account.
    assert f"--name {account['name']} --role-name {role} --role-only" in docs
    assert f"--cluster {cluster} --namespace kube-system" in docs
    assert "file://manifests/overlays/eks/examples/cluster-autoscaler-iam-policy.json" in docs


JOBS = [
    ("tfjob.yaml", "TFJob", "tfReplicaSpecs", "tensorflow",
     {"PS": "ps", "Worker": "worker"}),
    ("pytorchjob.yaml", "PyTorchJob", "pytorchReplicaSpecs", "pytorch",
     {"Master": "chief", "Worker": "worker"}),
]


def operator_pods(job: dict, specs_key: str) -> list[tuple[str, dict]]:
    """The pods the training operator (v1.9) makes of `job`: the template plus its labels
    (pkg/controller.v1/*: job-name, and replica-type lower-cased)."""
    pods = []
    for replica_type, spec in job["spec"][specs_key].items():
        template = copy.deepcopy(spec["template"])
        metadata = template.setdefault("metadata", {})
        metadata["name"] = f"{job['metadata']['name']}-{replica_type.lower()}-0"
        metadata["namespace"] = "default"
        metadata.setdefault("labels", {}).update({
            "training.kubeflow.org/job-name": job["metadata"]["name"],
            "training.kubeflow.org/replica-type": replica_type.lower(),
        })
        pods.append((replica_type, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                    "spec": template["spec"]}))
    return pods


@pytest.mark.parametrize("file, kind, specs_key, container, roles", JOBS,
                         ids=["tfjob", "pytorchjob"])
def test_the_training_job_examples_reach_the_extender(file, kind, specs_key, container,
                                                      roles) -> None:
    from locality.config import LocalityConfig
    from locality.jobs import identify, job_policy
    from locality.parse import parse_pod

    job = load(JOB_EXAMPLES / file)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", kind)
    assert set(job["spec"][specs_key]) == set(roles)
    config = LocalityConfig()
    for replica_type, pod in operator_pods(job, specs_key):
        for version in checks.KUBERNETES_VERSIONS:
            kubernetes_validate.validate(pod, version, strict=True)
        spec = pod["spec"]
        assert spec["schedulerName"] == "headstart-scheduler"
        assert [c["name"] for c in spec["containers"]] == [container]  # the operator's default
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in (
            spec["tolerations"])
        parsed = parse_pod(pod, config)
        identity = identify(parsed, config)
        assert identity is not None and identity.key.name == job["metadata"]["name"]
        assert identity.role.value == roles[replica_type]
        policy = job_policy(parsed, config)
        assert (policy.packing.value, policy.placement_group.value) == ("pack", "required")
        assert policy.problems == ()


@pytest.mark.parametrize("file", ["tfjob.yaml", "pytorchjob.yaml"])
def test_the_install_guides_show_and_apply_the_example_files(file) -> None:
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", INSTALL_EKS.read_text(),
                                                    flags=re.S)]
    assert load(JOB_EXAMPLES / file) in blocks
    for guide in (INSTALL_EKS, INSTALL_GKE):  # the same file on either cloud
        assert f"kubectl apply -f manifests/examples/{file}" in guide.read_text()
    assert "overlays/eks" not in INSTALL_GKE.read_text()  # GKE users never reach for EKS files


def test_the_training_operator_is_installed_pinned_before_the_jobs() -> None:
    docs = INSTALL_EKS.read_text()
    install = docs.index('kubectl apply --server-side -k "github.com/kubeflow/training-operator'
                         '.git/manifests/overlays/standalone?ref=v1.9.0"')
    assert install < docs.index("kind: TFJob") < docs.index("kind: PyTorchJob")


def example_node_groups(overlay: str) -> list[tuple[str, dict[str, str]]]:
    """(instance type, node labels) of each example node group / pool of `overlay`."""
    if overlay == "eks":
        return [(g["instanceType"], g["labels"]) for g in node_groups()]
    words = shlex.split((GKE / "examples" / "node-pools.sh").read_text(), comments=True)
    pools: list[tuple[str, dict[str, str]]] = []
    for i, word in enumerate(words):
        if word == "create" and words[i - 1] == "node-pools":
            pools.append(("", {}))
        elif word == "--machine-type":
            pools[-1] = (words[i + 1], pools[-1][1])
        elif word == "--node-labels":
            pools[-1][1].update(pair.split("=", 1) for pair in words[i + 1].split(","))
    return pools


@pytest.mark.parametrize("overlay, catalog", [("eks", "aws"), ("gke", "gcp")],
                         ids=["eks", "gke"])
@pytest.mark.parametrize("file, kind, specs_key, container, roles", JOBS,
                         ids=["tfjob", "pytorchjob"])
def test_the_example_jobs_fit_the_example_node_groups(overlay, catalog, file, kind, specs_key,
                                                      container, roles) -> None:
    """Each pod of a job fits a node of the cheapest node group it may use (a job that
    requires a placement group may only use grouped nodes), with the catalog's
    DaemonSet overhead taken off; and a packed job's PS or master fits beside one of its
    workers there (when it asks no GPU), so it never needs a node, or a bigger node type,
    of its own (a TFJob PS asking 4 CPUs could only run on a $32/h p4d.24xlarge next to
    g5.xlarge workers)."""
    from bucketing.catalog import load_catalog
    from bucketing.resources import pod_effective_request

    types = load_catalog(catalog)
    job = load(JOB_EXAMPLES / file)
    groups = [(name, labels) for name, labels in example_node_groups(overlay)
              if "headstart.io/placement-group" in labels]  # the examples require a group
    # A group without the label never runs the examples' `required` jobs: nodes bought
    # for nothing (GKE's g2 pool had none).
    assert len(groups) == len(example_node_groups(overlay)), (
        f"{overlay}: example node groups without headstart.io/placement-group")
    cheapest = min((name for name, _ in groups), key=lambda name: types.get(name).price_per_hour)
    rooms = {cheapest: types.get(cheapest).placeholder_request}
    requests = {replica_type: pod_effective_request(pod)
                for replica_type, pod in operator_pods(job, specs_key)}
    for replica_type, request in requests.items():
        assert any(request.fits_in(room) for room in rooms.values()), (
            f"{file} {replica_type} ({request}) fits no {overlay} node group in a "
            f"placement group: {rooms}")
    [leader] = [r for r, role in roles.items() if role != "worker"]
    if requests[leader].gpu_milli:
        return  # a master with a GPU is a worker of rank 0: a node of its own is its due
    together = requests[leader] + requests["Worker"]
    assert any(together.fits_in(room) for room in rooms.values()), (
        f"{file}: {leader} + one worker ({together}) fit no single {overlay} node: {rooms}")


def test_the_karpenter_node_pools_match_the_buckets_and_label_their_nodes() -> None:
    """The Karpenter path of docs/install-eks.md: one NodePool per bucket type, each
    giving its nodes the placement-group label (placeholders and `required` jobs select
    it) and, for GPU types, the GPU taint and accelerator label."""
    pools = list(yaml.safe_load_all((EKS / "examples" / "karpenter-nodepools.yaml").read_text()))
    config = load(EKS / "overprovisioner-config.yaml")
    types = []
    for pool in pools:
        assert (pool["apiVersion"], pool["kind"]) == ("karpenter.sh/v1", "NodePool")
        template = pool["spec"]["template"]
        [requirement] = [r for r in template["spec"]["requirements"]
                         if r["key"] == "node.kubernetes.io/instance-type"]
        types += requirement["values"]
        labels = template["metadata"]["labels"]
        assert "headstart.io/placement-group" in labels, pool["metadata"]["name"]
        assert labels["k8s.amazonaws.com/accelerator"].startswith("nvidia-")
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in (
            template["spec"]["taints"])
    assert sorted(types) == sorted(config["instance_types"])
    assert "kubectl apply -f manifests/overlays/eks/examples/karpenter-nodepools.yaml" in (
        INSTALL_EKS.read_text())


def test_the_eks_extender_config_names_the_example_node_groups_and_is_the_base_otherwise(
        tmp_path):
    """The EKS overlay's extender config is the base's plus cluster-autoscaler's node
    groups (so room the autoscaler can add is known as installed): one entry per example
    node group, whose name matches the Auto Scaling group EKS makes for it
    (eks-NAME-UUID) and no other, with its instance type and placement group."""
    base = load(checks.MANIFESTS / "base" / "extender" / "extender-config.yaml")
    eks = load(EKS / "extender-config.yaml")
    entries = eks["admission"].pop("autoscaler")["node_groups"]
    assert eks == base
    uuid = "5ac6a1b2-0c3d-4e5f-8a9b-0c1d2e3f4a5b"
    for group in node_groups():
        asg = f"eks-{group['name']}-{uuid}"
        matching = [e for e in entries if fnmatch.fnmatchcase(asg, e["name"])]
        assert len(matching) == 1, (asg, entries)
        [entry] = matching
        assert (entry["instance_type"], entry["domain"]) == (
            group["instanceType"], group["labels"]["headstart.io/placement-group"])
    assert len(entries) == len(node_groups())
    rendered = checks.render("eks", checks.MANIFESTS, tmp_path)
    _, shipped = checks.config_file(rendered, "headstart-extender-config")
    assert shipped["admission"]["autoscaler"]["node_groups"] == entries


def test_the_gke_extender_config_names_the_example_pools_at_their_max_nodes(tmp_path):
    """The GKE overlay's extender config: the base's plus one entry per example node pool
    (instance type, placement group, --max-nodes), whose pattern matches the instance
    group GKE's autoscaler names the pool by and no other pool's."""
    base = load(checks.MANIFESTS / "base" / "extender" / "extender-config.yaml")
    gke = load(GKE / "extender-config.yaml")
    entries = gke["admission"].pop("autoscaler")["node_groups"]
    assert gke == base
    words = shlex.split((GKE / "examples" / "node-pools.sh").read_text(), comments=True)
    pools = [(words[i + 1], int(words[words.index("--max-nodes", i) + 1]))
             for i, word in enumerate(words) if word == "create" and words[i - 1] == "node-pools"]
    assert len(entries) == len(pools) == len(example_node_groups("gke"))
    for (pool, max_nodes), (machine, labels) in zip(pools, example_node_groups("gke"),
                                                     strict=True):
        group = ("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/"
                 f"instanceGroups/gke-training-{pool}-1a2b3c4d-grp")
        [entry] = [e for e in entries if fnmatch.fnmatchcase(group, e["name"])]
        assert (entry["instance_type"], entry["domain"], entry["max_size"]) == (
            machine, labels["headstart.io/placement-group"], max_nodes)
    rendered = checks.render("gke", checks.MANIFESTS, tmp_path)
    _, shipped = checks.config_file(rendered, "headstart-extender-config")
    assert shipped["admission"]["autoscaler"]["node_groups"] == entries
