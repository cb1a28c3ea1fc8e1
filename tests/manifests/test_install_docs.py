"""The install steps users paste from docs/install-eks.md and docs/install-gke.md work:
the kube-scheduler version is read from the cluster, and the two-line overlay renders
with that tag on the second scheduler and nothing else changed."""

from __future__ import annotations

import re
import shutil
import subprocess

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
              if "my-headstart/kustomization.yaml" in b]
    assert len(blocks) == 1, f"{doc}: expected one install block with the version overlay"
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


@pytest.mark.parametrize("doc, overlay", [("docs/install-eks.md", "eks"),
                                          ("docs/install-gke.md", "gke")], ids=["eks", "gke"])
def test_the_documented_overlay_sets_the_schedulers_version(tmp_path, doc, overlay):
    block = install_block(doc)
    kustomization = re.search(r"<<EOF\n(.*?)\nEOF", block, flags=re.S).group(1)
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    (tmp_path / "my-headstart").mkdir()
    (tmp_path / "my-headstart" / "kustomization.yaml").write_text(
        kustomization.replace("$TAG", "v1.33.5"))
    result = subprocess.run([shutil.which("kubectl"), "kustomize", str(tmp_path / "my-headstart")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    images = {
        (obj["metadata"]["name"], container["name"]): container["image"]
        for obj in yaml.safe_load_all(result.stdout) if obj and obj["kind"] == "Deployment"
        for container in obj["spec"]["template"]["spec"]["containers"]
    }
    assert images[("headstart-scheduler", "kube-scheduler")] == (
        "registry.k8s.io/kube-scheduler:v1.33.5")
    assert images[("headstart-extender", "extender")].startswith(
        "ghcr.io/headstart-project/headstart:")
