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


IMAGES = ("headstart", "headstart-extender")


def test_the_manifests_images_are_placeholders_that_cannot_pull() -> None:
    # RFC 2606: .invalid never resolves, so a forgotten placeholder fails at ErrImagePull.
    assert [checks.headstart_image(name) for name in IMAGES] == [
        "your-registry.invalid/headstart", "your-registry.invalid/headstart-extender"]


def test_the_docs_name_the_placeholders_the_manifests_render() -> None:
    placeholders = [checks.headstart_image(name) for name in IMAGES]
    assert [entry["name"] for entry in doc_kustomization()["images"]] == placeholders
    edits = re.findall(r"kustomize edit set image (\S+)=", DOC.read_text())
    assert edits == placeholders
    for page in ("README.md", "docs/install-eks.md", "docs/install-gke.md"):
        for placeholder in placeholders:
            assert f"`{placeholder}`" in (checks.REPO / page).read_text(), (page, placeholder)
    for page in ("docs/install-eks.md", "docs/install-gke.md"):  # the pasted kustomization
        text = (checks.REPO / page).read_text()
        assert "  - name: your-registry.invalid/headstart\n    newName: ${IMAGE%@*}" in text
        assert ("  - name: your-registry.invalid/headstart-extender\n"
                "    newName: ${EXTENDER_IMAGE%@*}") in text


def rendered_images(tmp_path, overlay: str) -> tuple[dict, dict[str, str]]:
    """(the docs' kustomization on `overlay`, each Deployment's and CronJob's image)."""
    shutil.copytree(checks.MANIFESTS, tmp_path / "manifests")
    kustomization = doc_kustomization()
    assert kustomization["resources"] == ["../manifests/overlays/eks"]
    kustomization["resources"] = [f"../manifests/overlays/{overlay}"]
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
            (container,) = spec["template"]["spec"]["containers"]
            images[document["metadata"]["name"]] = container["image"]
    return kustomization, images


@pytest.mark.parametrize("overlay", checks.OVERLAYS)
def test_the_docs_kustomization_gives_the_extender_its_own_image_and_the_rest_the_full_one(
        tmp_path, overlay) -> None:
    kustomization, images = rendered_images(tmp_path, overlay)
    full, slim = (f"{entry['newName']}@{entry['digest']}" for entry in kustomization["images"])
    assert full.split("@")[0].endswith("/headstart")
    assert slim.split("@")[0].endswith("/headstart-extender")
    base = yaml.safe_load((checks.MANIFESTS / "base" / "kustomization.yaml").read_text())
    (scheduler,) = [i for i in base["images"] if i["name"] == "kube-scheduler"]
    # By digest: the extender its own; the overprovisioner and the placeholder expiry
    # job the full image; the scheduler keeps upstream's.
    assert images == {
        "headstart-extender": slim,
        "headstart-overprovisioner": full,
        "headstart-placeholder-expiry": full,
        "headstart-scheduler": f"{scheduler['newName']}:{scheduler['newTag']}",
    }


def test_the_docs_name_the_scheduler_image_the_base_runs() -> None:
    # The base runs scheduler-plugins' kube-scheduler; the install block sets its tag.
    from tests.manifests.test_install_docs import install_block

    base = yaml.safe_load((checks.MANIFESTS / "base" / "kustomization.yaml").read_text())
    (scheduler,) = [i for i in base["images"] if i["name"] == "kube-scheduler"]
    [entry] = re.findall(r"`(\{name: registry\.k8s\.io/[^`]*\})`", DOC.read_text())
    named = yaml.safe_load(entry)
    assert named["name"] == scheduler["newName"]
    assert f"33) TAG={named['newTag']} ;;" in install_block("docs/install-eks.md")
