"""The install steps users paste from docs/install-eks.md and docs/install-gke.md work:
the kube-scheduler version is read from the cluster, and the kustomization the block
writes renders with that tag on the second scheduler and the user's headstart image
(docs/image.md) on the extender and the overprovisioner."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.manifests import checks

# `kubectl get --raw /version` on EKS (a "+" after the minor) and on GKE.
VERSIONS = [
    '{\n  "major": "1",\n  "minor": "33+",\n  "gitVersion": "v1.33.5-eks-3025e55"\n}',
    '{\n  "major": "1",\n  "minor": "35",\n  "gitVersion": "v1.35.2-gke.1485000"\n}',
]


def install_block(doc: str) -> str:
    text = (checks.REPO / doc).read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
              if "cat > my-cluster/kustomization.yaml" in b]
    assert len(blocks) == 1, f"{doc}: expected one install block writing my-cluster"
    return blocks[0]


def buckets_block(doc: str) -> str:
    text = (checks.REPO / doc).read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
              if "headstart buckets tune" in b and "my-cluster" in b]
    assert len(blocks) == 1, f"{doc}: expected one block putting the tuned buckets in my-cluster"
    return blocks[0]


@pytest.mark.parametrize("raw, minor", list(zip(VERSIONS, ["33", "35"], strict=True)),
                         ids=["eks", "gke"])
def test_the_documented_command_reads_the_control_planes_minor(raw, minor):
    line = next(line for line in install_block("docs/install-eks.md").splitlines()
                if line.startswith("MINOR="))
    program = re.search(r"sed -n '([^']*)'", line).group(1)
    found = subprocess.run(["sed", "-n", program], input=raw, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == minor


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/headstart@sha256:" + "3f1c" * 16


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
@pytest.mark.parametrize("minor", ["33", "36"])
def test_the_documented_kustomization_sets_both_images_and_the_gate(tmp_path, doc, minor):
    # The block's own shell writes the file (the ${IMAGE%@*} expansions included), with
    # IMAGE as docs/image.md step 3 leaves it and MINOR and TAG as the block finds them.
    block = install_block(doc)
    writes = block[block.index("mkdir -p my-cluster"):block.index("\nEOF\n") + len("\nEOF\n")]
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    subprocess.run(["bash", "-euc", writes], cwd=tmp_path, check=True,
                   env={"PATH": "/usr/bin:/bin", "IMAGE": IMAGE, "TAG": "v0.33.5",
                        "MINOR": minor})
    result = subprocess.run([shutil.which("kubectl"), "kustomize", str(tmp_path / "my-cluster")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    images = {
        (obj["metadata"]["name"], container["name"]): container["image"]
        for obj in yaml.safe_load_all(result.stdout) if obj and obj["kind"] == "Deployment"
        for container in obj["spec"]["template"]["spec"]["containers"]
    }
    assert images[("headstart-scheduler", "kube-scheduler")] == (
        "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5")
    assert images[("headstart-extender", "extender")] == IMAGE
    assert images[("headstart-overprovisioner", "overprovisioner")] == IMAGE
    # The gate: the policy from 1.36, the extender's webhook (cert-manager's certificate)
    # before.
    kinds = {obj["kind"] for obj in yaml.safe_load_all(result.stdout) if obj}
    webhook = minor == "33"
    assert ("MutatingAdmissionPolicy" in kinds) is not webhook
    assert ("MutatingWebhookConfiguration" in kinds) is webhook
    assert ("Certificate" in kinds) is webhook


@pytest.mark.parametrize("doc, overlay", [("docs/install-eks.md", "eks"),
                                          ("docs/install-gke.md", "gke")], ids=["eks", "gke"])
def test_the_tuned_buckets_reach_the_overprovisioner_through_the_users_kustomization(
        tmp_path, doc, overlay):
    """The install block, then the tuning block as pasted (the real `headstart buckets
    tune` on a one-day synthetic trace instead of `your-trace.csv`; no cluster to apply
    to): the rendered ConfigMap holds the copied config, reading the tuned file, and the
    overprovisioner loads exactly the tuned list from the two files as mounted."""
    from bucketing.bucket_file import read_bucket_file
    from overprovisioner.config.catalog import resolve_catalog
    from overprovisioner.config.load import load_config

    headstart = shutil.which("headstart")
    assert headstart, "pip install -e . puts the headstart command on PATH"
    subprocess.run([headstart, "trace", "synth", "--days", "1", "--out",
                    str(tmp_path / "trace.csv")], check=True, capture_output=True)
    block = install_block(doc)
    writes = block[block.index("mkdir -p my-cluster"):block.index("\nEOF\n") + len("\nEOF\n")]
    tune = buckets_block(doc).replace("your-trace.csv", str(tmp_path / "trace.csv"))
    tune = "\n".join(line for line in tune.splitlines() if not line.startswith("kubectl apply"))
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    env = {"PATH": f"{Path(headstart).parent}:/usr/bin:/bin", "IMAGE": IMAGE, "TAG": "v1.33.5",
           "MINOR": "33"}
    subprocess.run(["bash", "-euc", writes + tune], cwd=tmp_path, check=True, env=env,
                   capture_output=True)
    result = subprocess.run([shutil.which("kubectl"), "kustomize", str(tmp_path / "my-cluster")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    [configmap] = [obj for obj in yaml.safe_load_all(result.stdout) if obj
                   and obj["kind"] == "ConfigMap"
                   and obj["metadata"]["name"].startswith("headstart-overprovisioner-config")]
    mounted = tmp_path / "etc-headstart"
    mounted.mkdir()
    for key, value in configmap["data"].items():
        (mounted / key).write_text(value)
    config = load_config(mounted / "config.yaml")
    # As the service checks it at start-up: the overlay's limits name its example types
    # (p4d.24xlarge), which this tuning leaves out; they are set aside, named, not fatal.
    resolve_catalog(config)
    tuned = read_bucket_file(tmp_path / "my-cluster" / "buckets.yaml")
    assert config.instance_types == tuned.names and len(tuned.names) > 0
    shipped = yaml.safe_load((checks.MANIFESTS / "overlays" / overlay /
                              "overprovisioner-config.yaml").read_text())
    assert config.catalog == shipped["catalog"] == tuned.catalog
    # Everything else is the overlay's own config.
    assert config.horizon_s > 0 and config.placeholders.scheduler_name == "headstart-scheduler"


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
@pytest.mark.parametrize(("minor", "tag"), [
    ("30", "v0.30.12"), ("33", "v0.33.5"), ("34", "v0.34.7"),
    ("35", "v0.34.7"),  # one minor older than the control plane: within the skew policy
    ("36", "none"),  # no release yet: the block says so and points to the component
])
def test_the_documented_release_for_each_minor(doc, minor, tag):
    block = install_block(doc)
    case = block[block.index("case "):block.index("esac") + len("esac")]
    found = subprocess.run(["bash", "-euc", case + '\necho "TAG=$TAG"'], env={
        "PATH": "/usr/bin:/bin", "MINOR": minor}, capture_output=True, text=True, check=True)
    assert found.stdout.strip().splitlines()[-1] == f"TAG={tag}"
    if tag == "none":
        assert "Without Coscheduling" in found.stdout


def test_without_coscheduling_renders_the_upstream_scheduler(tmp_path):
    """The docs' component, with the upstream image at the control plane's minor: the
    scheduler runs registry.k8s.io/kube-scheduler with the config less Coscheduling."""
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    (tmp_path / "my-cluster").mkdir()
    (tmp_path / "my-cluster" / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["../manifests/overlays/eks"],
        "components": ["../manifests/components/without-coscheduling"],
        "images": [{"name": "registry.k8s.io/kube-scheduler", "newTag": "v1.36.2"}]}))
    result = subprocess.run([shutil.which("kubectl"), "kustomize", str(tmp_path / "my-cluster")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    objects = [o for o in yaml.safe_load_all(result.stdout) if o]
    (scheduler,) = [o for o in objects if o["kind"] == "Deployment"
                    and o["metadata"]["name"] == "headstart-scheduler"]
    assert scheduler["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.k8s.io/kube-scheduler:v1.36.2"
    (config_map,) = [o for o in objects if o["kind"] == "ConfigMap"
                     and o["metadata"]["name"].startswith("headstart-scheduler-config")]
    assert "Coscheduling" not in yaml.safe_dump(yaml.safe_load(config_map["data"]["config.yaml"]))


def test_the_component_config_is_the_shipped_one_less_coscheduling():
    shipped = yaml.safe_load((checks.MANIFESTS / "base" / "scheduler" /
                              "scheduler-config.yaml").read_text())
    component = yaml.safe_load((checks.MANIFESTS / "components" / "without-coscheduling" /
                                "scheduler-config.yaml").read_text())
    profile = shipped["profiles"][0]
    assert profile.pop("plugins") == {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}
    profile["pluginConfig"] = [c for c in profile["pluginConfig"] if c["name"] != "Coscheduling"]
    assert component == shipped


def self_signed_block(doc: str) -> str:
    text = (checks.REPO / doc).read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
              if "openssl req -x509" in b]
    assert len(blocks) == 1, f"{doc}: expected one block making the gate's certificate"
    return blocks[0]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
def test_the_self_signed_gate_certificate_block_as_pasted(tmp_path, doc):
    """Before 1.36 without cert-manager: the install block at 1.33, then the docs'
    openssl block (its final `kubectl apply -k` swapped for `kubectl kustomize`): the
    Secret holds a certificate for the webhook's Service name, signed by the CA that the
    webhook's caBundle carries, and nothing of cert-manager is left."""
    import base64

    block = install_block(doc)
    writes = block[block.index("mkdir -p my-cluster"):block.index("\nEOF\n") + len("\nEOF\n")]
    pasted = self_signed_block(doc).replace("cd .. && kubectl apply -k my-cluster", "cd ..")
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    subprocess.run(["bash", "-euc", writes + pasted], cwd=tmp_path, check=True,
                   capture_output=True, env={"PATH": "/usr/bin:/bin", "IMAGE": IMAGE,
                                             "TAG": "v0.33.5", "MINOR": "33"})
    result = subprocess.run([shutil.which("kubectl"), "kustomize", str(tmp_path / "my-cluster")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    objects = [obj for obj in yaml.safe_load_all(result.stdout) if obj]
    assert not [obj for obj in objects if obj["apiVersion"].startswith("cert-manager.io/")]
    (secret,) = [obj for obj in objects if obj["kind"] == "Secret"
                 and obj["metadata"]["name"] == "headstart-extender-gate-tls"]
    assert secret["type"] == "kubernetes.io/tls" and secret["metadata"]["namespace"] == \
        "headstart"
    (webhook,) = [obj for obj in objects if obj["kind"] == "MutatingWebhookConfiguration"]
    ca = tmp_path / "bundle.crt"
    ca.write_bytes(base64.b64decode(webhook["webhooks"][0]["clientConfig"]["caBundle"]))
    served = tmp_path / "served.crt"
    served.write_bytes(base64.b64decode(secret["data"]["tls.crt"]))
    service = webhook["webhooks"][0]["clientConfig"]["service"]
    verified = subprocess.run(
        ["openssl", "verify", "-CAfile", str(ca), "-verify_hostname",
         f"{service['name']}.{service['namespace']}.svc", str(served)],
        capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
