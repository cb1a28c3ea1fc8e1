"""The image docs and the manifests agree: the manifests name an obvious placeholder,
and what docs/image.md tells users to paste replaces it in every headstart container."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from tests.manifests import checks

DOC = checks.REPO / "docs" / "image.md"


def doc_kustomization() -> dict:
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(),
                                                    flags=re.S)]
    (kustomization,) = [b for b in blocks if isinstance(b, dict) and b.get("kind") ==
                        "Kustomization"]
    return kustomization


def test_the_manifests_image_is_a_placeholder_that_cannot_pull() -> None:
    # RFC 2606: .invalid never resolves, so a forgotten placeholder fails at ErrImagePull.
    assert checks.headstart_image() == "your-registry.invalid/headstart"


def test_the_docs_name_the_placeholder_the_manifests_render() -> None:
    placeholder = checks.headstart_image()
    (entry,) = doc_kustomization()["images"]
    assert entry["name"] == placeholder
    edits = re.findall(r"kustomize edit set image (\S+)=", DOC.read_text())
    assert edits == [placeholder]
    for page in ("README.md", "docs/install-eks.md", "docs/install-gke.md"):
        assert f"`{placeholder}`" in (checks.REPO / page).read_text(), page


@pytest.mark.parametrize("overlay", checks.OVERLAYS)
def test_the_docs_kustomization_replaces_every_headstart_image(tmp_path, overlay) -> None:
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    kustomization = doc_kustomization()
    assert kustomization["resources"] == ["../manifests/overlays/eks"]
    kustomization["resources"] = [f"../manifests/overlays/{overlay}"]
    (tmp_path / "my-cluster").mkdir()
    (tmp_path / "my-cluster" / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    rendered = subprocess.run([shutil.which("kubectl") or "kubectl", "kustomize",
                               str(tmp_path / "my-cluster")],
                              capture_output=True, text=True, timeout=120, check=True).stdout
    images = re.findall(r"image: (\S+)", rendered)
    (entry,) = kustomization["images"]
    pinned = f"{entry['newName']}@{entry['digest']}"
    base = yaml.safe_load((checks.MANIFESTS / "base" / "kustomization.yaml").read_text())
    (scheduler,) = [i for i in base["images"] if i["name"] == "kube-scheduler"]
    upstream = f"{scheduler['newName']}:{scheduler['newTag']}"
    # The extender, the overprovisioner and the placeholder expiry job, by digest; the
    # scheduler keeps upstream's.
    assert sorted(images) == sorted([pinned, pinned, pinned, upstream])


def test_the_slim_extender_patch_changes_the_extenders_image_alone(tmp_path) -> None:
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(),
                                                    flags=re.S)]
    (patches,) = [b for b in blocks if isinstance(b, dict) and set(b) == {"patches"}]
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    kustomization = {**doc_kustomization(), **patches}
    (tmp_path / "my-cluster").mkdir()
    (tmp_path / "my-cluster" / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    rendered = subprocess.run([shutil.which("kubectl") or "kubectl", "kustomize",
                               str(tmp_path / "my-cluster")],
                              capture_output=True, text=True, timeout=120, check=True).stdout
    images = {}
    for document in yaml.safe_load_all(rendered):
        if document and document["kind"] in ("Deployment", "CronJob"):
            spec = document["spec"]
            if document["kind"] == "CronJob":
                spec = spec["jobTemplate"]["spec"]
            images[document["metadata"]["name"]] = \
                spec["template"]["spec"]["containers"][0]["image"]
    slim = patches["patches"][0]["patch"].split("value: ", 1)[1].strip()
    (entry,) = kustomization["images"]
    full = f"{entry['newName']}@{entry['digest']}"
    assert images["headstart-extender"] == slim
    assert images["headstart-overprovisioner"] == full
    assert images["headstart-placeholder-expiry"] == full
