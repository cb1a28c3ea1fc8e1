"""Checks of the headstart-scheduler: its image against the control plane, and the
PodGroup CRD its Coscheduling plugin reads.

Decides:
- the Kubernetes minor an image serves, from its tag: scheduler-plugins' releases follow
  Kubernetes minors (v0.34.7 is built on 1.34), the upstream kube-scheduler's are the
  minor itself (v1.36.2); a digest-only or other tag is not judged (warn);
- the version skew policy: kube-scheduler not newer than kube-apiserver and at most one
  minor older; outside it the scheduler may fail to start or misread the API;
- that a configuration enabling Coscheduling runs scheduler-plugins' image (the upstream
  kube-scheduler exits on a plugin it does not know) and has the PodGroup CRD
  (`scheduling.x-k8s.io/v1alpha1`) served: without it the plugin's informer never syncs
  and gang pods wait. Before install: the CRD is expected below 1.36, where a
  scheduler-plugins release exists (docs/install-eks.md step 4 applies it first).

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

import re

from headstart.check.core.configs import Installed, Loaded, SchedulerConfig
from headstart.check.core.observed import Observed, Workload
from headstart.check.core.result import Result, fail, ok, skip, warn
from locality.admission import coscheduling

POD_GROUPS = f"{coscheduling.GROUP}/{coscheduling.VERSION}"
PLUGINS_REPOSITORY = "scheduler-plugins"
UPSTREAM = "registry.k8s.io/kube-scheduler"
CRD_URL = ("https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/{tag}/"
           "manifests/crds/scheduling.x-k8s.io_podgroups.yaml")
SET_IMAGE = ("set the kube-scheduler image in my-cluster to the scheduler-plugins release "
             "for 1.{minor} (docs/install-eks.md step 4), or, where none exists, add "
             "../manifests/components/without-coscheduling with registry.k8s.io/"
             "kube-scheduler at v1.{minor}")


def split_image(image: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; the tag is "" when it is pinned by digest
    only or untagged."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1:]
    return name, ""


def image_minor(image: str) -> int | None:
    """The Kubernetes minor a kube-scheduler image serves, from its tag (None: unknown)."""
    _, tag = split_image(image)
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?", tag)
    if match is None or int(match.group(1)) not in (0, 1):
        return None
    return int(match.group(2))


def _scheduler_container(workload: Workload) -> str:
    return workload.containers[0].image if workload.containers else ""


def scheduler_image(observed: Observed, installed: Installed) -> Result:
    name = "scheduler-image"
    workload = installed.workloads.get("scheduler")
    if workload is None:
        return skip(name, "no headstart-scheduler Deployment (see deployment/headstart-"
                          "scheduler)")
    image = _scheduler_container(workload)
    repository, _ = split_image(image)
    config = installed.scheduler.value
    cp = observed.version.minor
    if config is not None and config.coscheduling and repository == UPSTREAM:
        return fail(name, f"{image} is the upstream kube-scheduler, which exits on the "
                          "Coscheduling plugin its configuration enables",
                    SET_IMAGE.format(minor=cp))
    minor = image_minor(image)
    if minor is None:
        return warn(name, f"{image}: its tag names no Kubernetes release, so its skew against "
                          f"the control plane (1.{cp}) is not known",
                    "pin the image by tag and digest (name:vX.Y.Z@sha256:...)")
    if minor > cp:
        return fail(name, f"{image} is built for 1.{minor}, newer than the control plane "
                          f"(1.{cp}): the version skew policy forbids it",
                    SET_IMAGE.format(minor=cp))
    if minor < cp - 1:
        return fail(name, f"{image} is built for 1.{minor}, more than one minor older than "
                          f"the control plane (1.{cp}): the version skew policy forbids it",
                    SET_IMAGE.format(minor=cp))
    return ok(name, f"{image} (1.{minor}) on a 1.{cp} control plane")


def podgroup_crd_pre(observed: Observed) -> Result:
    """Before install."""
    name = "podgroup-crd"
    if observed.serves(POD_GROUPS, coscheduling.PLURAL):
        return ok(name, f"{POD_GROUPS} {coscheduling.PLURAL} served")
    if observed.version.minor >= 36:
        return skip(name, f"no scheduler-plugins release for 1.{observed.version.minor} yet: "
                          "the install runs without Coscheduling and needs no PodGroup CRD")
    return warn(name, f"{POD_GROUPS} {coscheduling.PLURAL} is not served yet",
                "the install block applies scheduler-plugins' PodGroup CRD for your minor "
                "first (docs/install-eks.md step 4): "
                f"kubectl apply --server-side -f {CRD_URL.format(tag='$TAG')}")


def podgroup_crd(observed: Observed, installed: Installed) -> Result:
    name = "podgroup-crd"
    loaded: Loaded[SchedulerConfig] = installed.scheduler
    if loaded.value is None:
        return skip(name, f"the scheduler's configuration is not readable ({loaded.error})")
    served = observed.serves(POD_GROUPS, coscheduling.PLURAL)
    if not loaded.value.coscheduling:
        return skip(name, "the scheduler runs without Coscheduling: PodGroups are not read"
                    + (" (served)" if served else ""))
    if served:
        return ok(name, f"{POD_GROUPS} {coscheduling.PLURAL} served for Coscheduling")
    workload = installed.workloads.get("scheduler")
    repository, tag = split_image(_scheduler_container(workload)) if workload else ("", "")
    tag = tag if PLUGINS_REPOSITORY in repository and tag else "$TAG"
    return fail(name, f"{POD_GROUPS} {coscheduling.PLURAL} is not served: Coscheduling never "
                      "syncs and pods of headstart-scheduler wait",
                f"kubectl apply --server-side -f {CRD_URL.format(tag=tag)}")
