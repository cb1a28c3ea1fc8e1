"""The workload-kind registry is the one place a kind lives: RBAC, the suspension policy
and product code are checked against it."""

from __future__ import annotations

import pytest

from kube.kinds import BY_KIND, KINDS, POD_LABELS, SUSPENDABLE, kind_of
from tests.manifests import checks
from tests.product_code import REPO, code_strings, product_modules


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> checks.Rendered:
    return checks.render("eks", checks.MANIFESTS, tmp_path_factory.mktemp("kinds"))


def test_the_extender_may_read_every_kind_and_patch_each_it_suspends(rendered):
    rules = checks.granted(rendered, "headstart-extender")
    for kind in KINDS:
        assert {(kind.group, kind.plural, "list"), (kind.group, kind.plural, "watch")} <= rules, \
            f"{kind.kind}: the extender's ClusterRole must list and watch {kind.plural}"
        if kind.suspendable or kind.resizing:
            assert (kind.group, kind.plural, "patch") in rules, \
                f"{kind.kind}: the extender's ClusterRole must patch {kind.plural}"


def test_the_overprovisioner_may_read_every_kind_that_announces_demand(rendered):
    rules = checks.granted(rendered, "headstart-overprovisioner")
    for kind in KINDS:
        if kind.demand:
            assert (kind.group, kind.plural, "watch") in rules, \
                f"{kind.kind}: the overprovisioner must watch {kind.plural} (its " \
                f"{kind.demand_source!r} known-demand source)"


def test_every_suspendable_kind_and_version_is_bounded_by_a_policy(rendered):
    matched = {(group, version, resource)
               for policy in rendered.of_kind("ValidatingAdmissionPolicy")
               for rule in policy["spec"]["matchConstraints"]["resourceRules"]
               if "UPDATE" in rule.get("operations", [])
               for group in rule["apiGroups"] for version in rule["apiVersions"]
               for resource in rule["resources"]}
    for kind in SUSPENDABLE.values():
        for version in kind.managers:
            assert (kind.group, version, kind.plural) in matched, \
                f"{kind.kind} {version}: headstart patches it, so a ValidatingAdmissionPolicy " \
                "must bound the extender's edits (manifests/base/admission/owner-resize.yaml)"


def test_the_gang_record_names_every_kind_headstart_suspends():
    import yaml

    crd = yaml.safe_load((REPO / "manifests" / "base" / "crds" / "gangs.headstart.io.yaml")
                         .read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    kinds = status["properties"]["suspendedJobs"]["items"]["properties"]["kind"]["enum"]
    assert set(kinds) == set(SUSPENDABLE), \
        "the Gang CRD's status.suspendedJobs[].kind enum must list exactly the suspendable kinds"


def test_a_kinds_api_group_appears_in_product_code_only_in_its_module():
    # `batch` is also CronJob's group (a known-demand source, not a training kind).
    groups = {kind.group for kind in KINDS if kind.group != "batch"}
    found = [f"{path.relative_to(REPO)}:{line}: {text!r}"
             for path in product_modules()
             if path.parent != REPO / "kube" / "kinds"
             for line, text in code_strings(path)
             if any(group in text for group in groups)]
    assert found == [], "a kind's API group outside kube/kinds: read it from the registry"


def test_kinds_are_unique_and_each_reads_its_own_pods():
    assert len(BY_KIND) == len(KINDS)
    assert {"Job", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "TrainJob", "LeaderWorkerSet",
            "RayCluster", "RayJob"} <= set(BY_KIND)
    # A TrainJob's pods carry its JobSet's label and are sized by the JobSet.
    assert POD_LABELS.index(BY_KIND["JobSet"].pod_label) == 0
    assert BY_KIND["TrainJob"].sized_by == "JobSet"
    with pytest.raises(KeyError, match="'RayService' is not a registered workload kind"):
        kind_of("RayService")


def test_the_watch_name_carries_the_version_only_for_a_second_version():
    mpijob = BY_KIND["MPIJob"]
    assert mpijob.watch_name("v1") == "mpijobs.kubeflow.org"
    assert mpijob.watch_name("v2beta1") == "mpijobs.v2beta1.kubeflow.org"
    assert BY_KIND["Job"].api_version() == "batch/v1"
