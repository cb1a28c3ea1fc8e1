"""The headstart-scheduler's checks (headstart/check/core/scheduler.py): its image against
the control plane's minor, and the PodGroup CRD Coscheduling reads."""

from __future__ import annotations

import pytest

from headstart.check.core import scheduler
from headstart.check.core.configs import installed as installed_configs
from headstart.check.core.observed import Version
from headstart.check.core.result import Status
from tests.headstart.check.builders import (
    ALL_SERVED,
    deployment,
    installed,
    shipped_text,
    with_config,
    with_workload,
)

WITHOUT_PODGROUPS = {k: v for k, v in ALL_SERVED.items() if k != "scheduling.x-k8s.io/v1alpha1"}
WITHOUT_COSCHEDULING = shipped_text("manifests/components/without-coscheduling/"
                                    "scheduler-config.yaml")


@pytest.mark.parametrize(("image", "repository", "tag", "minor"), [
    ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7",
     "registry.k8s.io/scheduler-plugins/kube-scheduler", "v0.34.7", 34),
    ("registry.k8s.io/kube-scheduler:v1.36.2", "registry.k8s.io/kube-scheduler", "v1.36.2", 36),
    ("my-registry:5000/kube-scheduler:v0.33.5@sha256:" + "ab" * 32,
     "my-registry:5000/kube-scheduler", "v0.33.5", 33),
    ("my-registry:5000/kube-scheduler@sha256:" + "ab" * 32, "my-registry:5000/kube-scheduler",
     "", None),
    ("registry.k8s.io/kube-scheduler:latest", "registry.k8s.io/kube-scheduler", "latest", None),
], ids=["scheduler-plugins", "upstream", "tag-and-digest", "digest-only", "latest"])
def test_an_images_tag_names_its_kubernetes_minor(image, repository, tag, minor):
    assert scheduler.split_image(image) == (repository, tag)
    assert scheduler.image_minor(image) == minor


def observed_with(image: str, control_plane: int, config: str | None = None):
    observed = with_workload(installed(version=Version(control_plane, "")), "scheduler",
                             deployment("manifests/base/scheduler/deployment.yaml", image))
    if config is not None:
        observed = with_config(observed, "headstart-scheduler-config", config)
    return observed


@pytest.mark.parametrize(("image", "control_plane", "config", "status", "words"), [
    ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", 35, None, Status.OK,
     "(1.34) on a 1.35 control plane"),
    ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", 34, None, Status.OK,
     "(1.34) on a 1.34 control plane"),
    ("registry.k8s.io/kube-scheduler:v1.36.2", 36, WITHOUT_COSCHEDULING, Status.OK,
     "(1.36) on a 1.36 control plane"),
    ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", 33, None, Status.FAIL,
     "newer than the control plane (1.33)"),
    ("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.33.5", 35, None, Status.FAIL,
     "more than one minor older than the control plane (1.35)"),
    ("registry.k8s.io/kube-scheduler:v1.36.2", 36, None, Status.FAIL,
     "exits on the Coscheduling plugin"),
    ("registry.k8s.io/scheduler-plugins/kube-scheduler@sha256:" + "ab" * 32, 35, None,
     Status.WARN, "its tag names no Kubernetes release"),
], ids=["one-older", "same", "upstream-without-coscheduling", "newer", "two-older",
        "upstream-with-coscheduling", "digest-only"])
def test_the_scheduler_image_against_the_control_plane(image, control_plane, config, status,
                                                       words):
    observed = observed_with(image, control_plane, config)
    result = scheduler.scheduler_image(observed, installed_configs(observed))
    assert result.status is status and words in result.message
    if status is Status.FAIL:
        assert f"release for 1.{control_plane}" in result.fix
        assert "without-coscheduling" in result.fix


def test_no_scheduler_deployment_is_left_to_its_own_check():
    observed = with_workload(installed(), "scheduler", None)
    assert scheduler.scheduler_image(observed, installed_configs(observed)).status is Status.SKIP


@pytest.mark.parametrize(("served", "config", "status", "words", "fix"), [
    (ALL_SERVED, None, Status.OK, "served for Coscheduling", ""),
    (WITHOUT_PODGROUPS, None, Status.FAIL, "Coscheduling never syncs",
     "kubernetes-sigs/scheduler-plugins/v0.34.7/manifests/crds/"
     "scheduling.x-k8s.io_podgroups.yaml"),
    (WITHOUT_PODGROUPS, WITHOUT_COSCHEDULING, Status.SKIP, "runs without Coscheduling", ""),
], ids=["served", "missing", "not-needed"])
def test_the_podgroup_crd_after_install(served, config, status, words, fix):
    observed = installed(served=served)
    if config is not None:
        observed = with_config(observed, "headstart-scheduler-config", config)
    result = scheduler.podgroup_crd(observed, installed_configs(observed))
    assert result.status is status and words in result.message
    assert fix in result.fix


@pytest.mark.parametrize(("served", "minor", "status"), [
    (ALL_SERVED, 33, Status.OK),
    (WITHOUT_PODGROUPS, 33, Status.WARN),
    (WITHOUT_PODGROUPS, 36, Status.SKIP),
], ids=["served", "to-apply", "no-release-yet"])
def test_the_podgroup_crd_before_install(served, minor, status):
    result = scheduler.podgroup_crd_pre(installed(served=served, version=Version(minor, "")))
    assert result.status is status
    if status is Status.WARN:
        assert "scheduling.x-k8s.io_podgroups.yaml" in result.fix
