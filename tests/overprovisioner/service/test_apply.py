"""The applier against the fake API server: SSA, idempotence, ownership, prune, errors."""

from __future__ import annotations

import numpy as np
import pytest
from kubernetes.client.exceptions import ApiException

from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.parse import parse_config
from overprovisioner.planner.plan import PlannedBucket
from overprovisioner.service.apply import (
    FIELD_MANAGER,
    Applier,
    KubeApi,
    apply_plan,
)
from overprovisioner.service.errors import ApiCallError, NotOwnedError
from overprovisioner.service.objects import desired_objects, priority_class

NS = "headstart"
DEPLOY = ("apps/v1", "Deployment")
CB_GV = "autoscaling.x-k8s.io/v1beta1"
CB_ALPHA = "autoscaling.x-k8s.io/v1alpha1"


def make_config(backend="deployment", **api):
    return parse_config(
        {"instance_types": ["g5.xlarge", "p4d.24xlarge"],
         "placeholders": {"backend": backend},
         "api": {"max_attempts": 3, "backoff_base": "10ms", "backoff_max": "20ms", **api}},
        "test.yaml",
    )


def bucket(instance_type="g5.xlarge", group="", wanted=1) -> PlannedBucket:
    return PlannedBucket(instance_type, group, float(wanted), 0, 0, 0, 0, wanted, None, "test")


class Harness:
    def __init__(self, fake_kube, config):
        self.fake = fake_kube
        self.config = config
        self.catalog = resolve_catalog(config)
        self.sleeps: list[float] = []
        self.errors: list[str] = []
        self.applier = Applier(
            KubeApi(fake_kube.api_client(), config.api.timeout_s), config,
            np.random.default_rng(0), self.sleeps.append,
            lambda kind, error: self.errors.append(kind),
        )

    def run(self, buckets):
        return apply_plan(
            self.applier,
            lambda backend, buffer_api: desired_objects(
                buckets, self.config, self.catalog, backend, buffer_api_version=buffer_api or None),
            priority_class(self.config),
        )

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _ in self.fake.requests if m in ("PATCH", "POST", "PUT", "DELETE")]


@pytest.fixture
def harness(fake_kube):
    return Harness(fake_kube, make_config())


def test_first_apply_creates_deployments_and_priority_class(harness) -> None:
    result, _ = harness.run([bucket("g5.xlarge", "", 2), bucket("p4d.24xlarge", "", 1)])
    assert result.ok and result.backend == "deployment"
    deployment = harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)
    assert deployment["spec"]["replicas"] == 2
    managers = {entry["manager"] for entry in deployment["metadata"]["managedFields"]}
    assert managers == {FIELD_MANAGER}
    pc = harness.fake.get("scheduling.k8s.io/v1", "PriorityClass", "headstart-placeholder")
    assert pc["value"] == -5 and pc["preemptionPolicy"] == "Never"
    applies = [q for m, _, q in harness.fake.requests if m == "PATCH"]
    assert all("fieldManager=headstart-overprovisioner" in q and "force=true" in q
               for q in applies)


def test_applying_the_same_plan_twice_writes_nothing(harness) -> None:
    plan = [bucket("g5.xlarge", "pg-a", 2)]
    harness.run(plan)
    before = len(harness.writes())
    result, _ = harness.run(plan)
    assert harness.writes()[before:] == []
    assert result.written == () and len(result.unchanged) == 1


def test_a_changed_plan_is_written_and_a_kubectl_scale_is_taken_back(harness) -> None:
    harness.run([bucket(wanted=1)])
    name = "headstart-placeholder-g5-xlarge"
    scaled = harness.fake.get(*DEPLOY, name, NS)
    scaled["spec"]["replicas"] = 5  # someone ran kubectl scale
    harness.fake.replace(scaled)
    result, _ = harness.run([bucket(wanted=1)])
    assert result.written and harness.fake.get(*DEPLOY, name, NS)["spec"]["replicas"] == 1
    harness.run([bucket(wanted=3)])
    assert harness.fake.get(*DEPLOY, name, NS)["spec"]["replicas"] == 3


def test_an_unowned_object_with_our_name_is_left_untouched(harness) -> None:
    foreign = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "headstart-placeholder-g5-xlarge", "namespace": NS,
                     "labels": {"team": "ml"}},
        "spec": {"replicas": 7},
    }
    harness.fake.create(foreign)
    result, _ = harness.run([bucket("g5.xlarge", "", 1), bucket("p4d.24xlarge", "", 1)])
    (error,) = result.errors
    assert isinstance(error, NotOwnedError)
    assert "headstart-placeholder-g5-xlarge" in str(error)
    assert "not managed by headstart" in str(error)
    after = harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)
    assert after["spec"] == {"replicas": 7} and after["metadata"]["labels"] == {"team": "ml"}
    # The other bucket is still applied.
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-p4d-24xlarge", NS) is not None


KUSTOMIZE_LABELS = {"app.kubernetes.io/managed-by": "headstart",
                    "app.kubernetes.io/part-of": "headstart"}


def test_an_object_with_the_kustomize_labels_is_not_ours(harness) -> None:
    # The kustomization stamps managed-by=headstart on every shipped object: a label
    # is no proof that the overprovisioner wrote it.
    harness.fake.create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "headstart-placeholder-g5-xlarge", "namespace": NS,
                     "labels": dict(KUSTOMIZE_LABELS)},
        "spec": {"replicas": 7},
    })
    result, _ = harness.run([bucket("g5.xlarge", "", 1)])
    (error,) = result.errors
    assert isinstance(error, NotOwnedError) and "headstart.io/owner" in str(error)
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"] == {
        "replicas": 7}


@pytest.mark.parametrize(
    "labels, annotations, adopted",
    [
        # what an older overprovisioner wrote: both labels and the spec hash -> ours
        ({**KUSTOMIZE_LABELS, "headstart.io/placeholder": "true"},
         {"headstart.io/spec-hash": "0123456789abcdef"}, True),
        # kustomize labels plus a copied placeholder label, no hash -> not ours
        ({**KUSTOMIZE_LABELS, "headstart.io/placeholder": "true"}, {}, False),
        # the owner annotation alone -> ours
        ({"headstart.io/placeholder": "true"}, {"headstart.io/owner": "overprovisioner"},
         True),
    ],
    ids=["legacy-adopted", "look-alike-kept", "owner-annotation"],
)
def test_prune_deletes_only_what_the_overprovisioner_wrote(harness, labels, annotations,
                                                          adopted) -> None:
    harness.fake.create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "headstart-placeholder-old", "namespace": NS,
                     "labels": labels, "annotations": annotations},
        "spec": {"replicas": 1},
    })
    result, _ = harness.run([bucket(wanted=1)])
    gone = harness.fake.get(*DEPLOY, "headstart-placeholder-old", NS) is None
    assert gone is adopted
    assert result.ok


def test_a_legacy_object_is_adopted_and_gets_the_owner_annotation(harness) -> None:
    harness.fake.create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "headstart-placeholder-g5-xlarge", "namespace": NS,
                     "labels": {**KUSTOMIZE_LABELS, "headstart.io/placeholder": "true"},
                     "annotations": {"headstart.io/spec-hash": "0123456789abcdef"}},
        "spec": {"replicas": 4},
    })
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok
    adopted = harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)
    assert adopted["spec"]["replicas"] == 1
    assert adopted["metadata"]["annotations"]["headstart.io/owner"] == "overprovisioner"


def test_wanted_zero_scales_to_zero_and_removed_buckets_are_pruned(harness) -> None:
    harness.run([bucket("g5.xlarge", "pg-a", 2), bucket("g5.xlarge", "pg-b", 2)])
    result, _ = harness.run([bucket("g5.xlarge", "pg-a", 0)])
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge-pg-a", NS)["spec"][
        "replicas"] == 0
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge-pg-b", NS) is None
    assert result.pruned == ("apps/v1 Deployment headstart/headstart-placeholder-g5-xlarge-pg-b",)


def test_prune_never_deletes_objects_without_our_labels(harness) -> None:
    harness.fake.create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "headstart-placeholder-old", "namespace": NS,
                     "labels": {"headstart.io/placeholder": "true"}},
        "spec": {"replicas": 1},
    })
    harness.run([bucket(wanted=1)])
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-old", NS) is not None


@pytest.mark.parametrize("status", [500, 503, 429, "timeout"], ids=str)
def test_temporary_errors_are_retried(fake_kube, status) -> None:
    harness = Harness(fake_kube, make_config(timeout="2s"))
    fake_kube.fail_next("PATCH", "/deployments/", status, count=2, delay_s=0.1)
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok
    assert harness.errors == ["temporary", "temporary"]
    assert len(harness.sleeps) == 2 and all(0 <= s <= 0.02 for s in harness.sleeps)
    assert fake_kube.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"]["replicas"] == 1


def test_client_side_timeout_is_temporary(fake_kube) -> None:
    harness = Harness(fake_kube, make_config(timeout="200ms", max_attempts=2))
    fake_kube.fail_next("PATCH", "/deployments/", "timeout", count=1, delay_s=1.0)
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok and harness.errors == ["temporary"]


def test_retries_run_out_and_the_previous_placeholders_stay(harness) -> None:
    harness.run([bucket(wanted=2)])
    harness.fake.fail_next("PATCH", "/deployments/", 503, count=10)
    result, _ = harness.run([bucket(wanted=5)])
    (error,) = result.errors
    assert isinstance(error, ApiCallError) and error.kind == "temporary" and error.status == 503
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"][
        "replicas"] == 2


@pytest.mark.parametrize("status", [422, 400, 403], ids=str)
def test_permanent_errors_are_reported_not_retried(harness, status) -> None:
    harness.fake.fail_next("PATCH", "/deployments/", status)
    result, _ = harness.run([bucket(wanted=1)])
    (error,) = result.errors
    assert error.kind == "permanent" and error.status == status
    assert harness.errors == ["permanent"] and harness.sleeps == []


def test_a_failed_observation_writes_nothing(harness) -> None:
    harness.run([bucket(wanted=2)])
    harness.fake.fail_next("GET", "/deployments", 500, count=10)
    before = len(harness.writes())
    with pytest.raises(ApiCallError, match="list apps/v1 Deployment"):
        harness.run([bucket(wanted=0)])
    assert harness.writes()[before:] == []


def test_a_conflict_is_not_sent_again_but_decided_again_at_the_next_pass(harness) -> None:
    # The object changed since the pass looked (409): the same apply is not repeated
    # blindly (kube.retry); it is a temporary error, and the next pass, on a fresh look,
    # writes the placeholders.
    harness.fake.fail_next("PATCH", "/deployments/", 409)
    result, _ = harness.run([bucket(wanted=1)])
    (error,) = result.errors
    assert isinstance(error, ApiCallError) and (error.kind, error.status) == ("temporary", 409)
    assert harness.errors == ["temporary"] and harness.sleeps == []
    assert len([p for m, p in harness.writes() if m == "PATCH" and "/deployments/" in p]) == 1
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"][
        "replicas"] == 1


def test_capacitybuffer_forced_without_the_crd_is_a_clear_error(fake_kube) -> None:
    harness = Harness(fake_kube, make_config("capacitybuffer"))
    with pytest.raises(ApiCallError) as caught:
        harness.run([bucket(wanted=1)])
    message = str(caught.value)
    assert "does not serve CapacityBuffers" in message and "placeholders.backend" in message
    assert fake_kube.list(*DEPLOY, NS) == []


def test_auto_falls_back_to_deployments_without_the_crd(fake_kube) -> None:
    harness = Harness(fake_kube, make_config("auto"))
    result, _ = harness.run([bucket(wanted=1)])
    assert result.backend == "deployment"
    assert len(fake_kube.list(*DEPLOY, NS)) == 1


@pytest.mark.parametrize(
    "served, written",
    [((CB_GV,), CB_GV), ((CB_ALPHA,), CB_ALPHA), ((CB_GV, CB_ALPHA), CB_GV)],
    ids=["v1beta1", "v1alpha1-only", "both-prefers-v1beta1"],
)
def test_auto_uses_capacitybuffers_when_served_and_prunes_old_deployments(
        fake_kube, served, written) -> None:
    Harness(fake_kube, make_config("deployment")).run([bucket(wanted=1)])
    for group_version in served:
        fake_kube.serve(group_version)
    harness = Harness(fake_kube, make_config("auto"))
    result, observed = harness.run([bucket(wanted=2)])
    assert result.backend == "capacitybuffer" and result.ok
    assert observed.capacity_buffer_api == written
    for group_version in served:
        if group_version != written:
            assert fake_kube.list(group_version, "CapacityBuffer", NS) == []
    (buffer,) = fake_kube.list(written, "CapacityBuffer", NS)
    assert buffer["spec"]["replicas"] == 2
    assert buffer["spec"]["podTemplateRef"]["name"] == "headstart-placeholder-g5-xlarge"
    assert fake_kube.get("v1", "PodTemplate", "headstart-placeholder-g5-xlarge", NS) is not None
    assert fake_kube.list(*DEPLOY, NS) == []


def test_existing_priority_class_with_another_value_blocks_writes(harness) -> None:
    harness.fake.create({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "headstart-placeholder"}, "value": -20,
        "preemptionPolicy": "Never",
    })
    with pytest.raises(ApiCallError, match="value -20"):
        harness.run([bucket(wanted=1)])
    assert harness.fake.list(*DEPLOY, NS) == []


def test_existing_correct_foreign_priority_class_is_used_as_is(harness) -> None:
    harness.fake.create({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "headstart-placeholder"}, "value": -5, "preemptionPolicy": "Never",
    })
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok
    assert not any("/priorityclasses" in p for _, p in harness.writes())


def test_running_counts_come_from_ready_replicas(harness) -> None:
    harness.run([bucket("g5.xlarge", "pg-a", 3)])
    deployment = harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge-pg-a", NS)
    deployment["status"] = {"readyReplicas": 2}
    harness.fake.replace(deployment)
    _, observed = harness.run([bucket("g5.xlarge", "pg-a", 3)])
    assert observed.running() == {("g5.xlarge", "pg-a"): 2}


def test_correct_priority_class_with_our_labels_is_not_rewritten(harness) -> None:
    # As the manifests ship it (kustomize may add headstart's labels): never patched,
    # so the Role needs only `get` on priorityclasses when the manifests install it.
    harness.fake.create({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "headstart-placeholder",
                     "labels": {"app.kubernetes.io/managed-by": "headstart"}},
        "value": -5, "preemptionPolicy": "Never", "description": "from the manifests",
    })
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok
    assert not any("/priorityclasses" in p for _, p in harness.writes())


def _served_copy(body: dict, memory: str, cpu: str) -> dict:
    """`body` as a real API server returns it: defaults added, quantities canonicalised."""
    import copy

    served = copy.deepcopy(body)
    served.pop("apiVersion"), served.pop("kind")
    served["metadata"]["uid"] = "1234"
    pod = served["spec"]["template"]["spec"]
    pod["dnsPolicy"] = "ClusterFirst"
    container = pod["containers"][0]
    container["imagePullPolicy"] = "IfNotPresent"
    container["resources"]["requests"].update(memory=memory, cpu=cpu)
    return served


@pytest.mark.parametrize(
    "memory, cpu, replicas, expected",
    [
        # The fraction rule's g5.xlarge request: 11445Mi = 12000952320 bytes =
        # 11719680Ki, and 2896m = 2.896 CPUs: the same quantities, no write.
        ("11719680Ki", "2896m", 1, False),
        ("12000952320", "2.896", 1, False),
        ("11719680Ki", "2896m", 4, True),   # someone scaled it
        ("14Gi", "2896m", 1, True),         # someone changed the request
    ],
    ids=["canonical-ki", "plain-units", "scaled", "changed-request"],
)
def test_needs_write_compares_quantities_by_value(memory, cpu, replicas, expected) -> None:
    from overprovisioner.service.diff import needs_write

    config = make_config()
    (desired,) = desired_objects([bucket(wanted=1)], config, resolve_catalog(config),
                                 "deployment")
    served = _served_copy(dict(desired.body), memory, cpu)
    served["spec"]["replicas"] = replicas
    assert needs_write(desired, served) is expected


NOW_S = 1_800_000_000.0


@pytest.mark.parametrize(
    "served_until_s, expected",
    [
        (NOW_S + 900, False),         # stamped by a write now: nothing to renew
        (NOW_S + 900 - 300, False),   # a tick (5 min) behind: within half of 15 min
        (NOW_S + 900 - 451, True),    # 451 s behind > 450 s (half of expire_after 15m)
        (None, True),                 # never stamped (an older headstart's object)
    ],
    ids=["fresh", "one-tick-behind", "past-half", "unstamped"],
)
def test_the_validity_stamp_is_renewed_only_past_half_its_window(served_until_s,
                                                                  expected) -> None:
    from overprovisioner.service.diff import needs_write
    from overprovisioner.service.objects import VALID_UNTIL, format_time

    config = make_config()
    (desired,) = desired_objects([bucket(wanted=1)], config, resolve_catalog(config),
                                 "deployment", valid_until_s=NOW_S + 900)
    served = _served_copy(dict(desired.body), "11719680Ki", "2896m")
    annotations = served["metadata"].setdefault("annotations", {})
    annotations.pop(VALID_UNTIL, None)
    if served_until_s is not None:
        annotations[VALID_UNTIL] = format_time(served_until_s)
    assert needs_write(desired, served, renew_slack_s=450) is expected


def test_a_buffer_never_points_at_a_foreign_pod_template(fake_kube) -> None:
    fake_kube.serve(CB_GV)
    fake_kube.create({"apiVersion": "v1", "kind": "PodTemplate",
                      "metadata": {"name": "headstart-placeholder-g5-xlarge", "namespace": NS},
                      "template": {"spec": {"containers": [{"name": "x", "image": "x:1"}]}}})
    harness = Harness(fake_kube, make_config("capacitybuffer"))
    result, _ = harness.run([bucket("g5.xlarge", "", 1), bucket("p4d.24xlarge", "", 1)])
    kinds = sorted(type(e).__name__ for e in result.errors)
    assert kinds == ["ApiCallError", "NotOwnedError"]
    assert fake_kube.get(CB_GV, "CapacityBuffer", "headstart-placeholder-g5-xlarge", NS) is None
    assert fake_kube.get(CB_GV, "CapacityBuffer", "headstart-placeholder-p4d-24xlarge",
                         NS) is not None


def test_a_failed_buffer_write_keeps_the_old_deployment_following_the_plan(fake_kube) -> None:
    # Deployment backend at 6; then auto finds CapacityBuffers but writing them is
    # forbidden: the Deployment must follow the plan (1), not stay at 6 every tick.
    Harness(fake_kube, make_config("deployment")).run([bucket(wanted=6)])
    fake_kube.serve(CB_GV)
    harness = Harness(fake_kube, make_config("auto"))
    fake_kube.fail_next("PATCH", "/capacitybuffers/", 403, count=1)
    result, _ = harness.run([bucket(wanted=1)])
    assert result.backend == "capacitybuffer" and not result.ok
    name = "headstart-placeholder-g5-xlarge"
    assert fake_kube.get(*DEPLOY, name, NS)["spec"]["replicas"] == 1
    assert result.held == (f"apps/v1 Deployment {NS}/{name}",)
    assert fake_kube.list(CB_GV, "CapacityBuffer", NS) == []
    # The next tick writes the buffer: only now does the Deployment go.
    result, _ = harness.run([bucket(wanted=1)])
    assert result.ok and result.held == ()
    assert fake_kube.get(*DEPLOY, name, NS) is None
    assert fake_kube.get(CB_GV, "CapacityBuffer", name, NS)["spec"]["replicas"] == 1


def test_buckets_the_plan_dropped_are_pruned_even_when_another_write_fails(harness) -> None:
    harness.run([bucket("g5.xlarge", "pg-a", 1), bucket("g5.xlarge", "pg-b", 3),
                 bucket("p4d.24xlarge", "", 1)])
    harness.fake.fail_next("PATCH", "/deployments/headstart-placeholder-p4d", 403)
    result, _ = harness.run([bucket("g5.xlarge", "pg-a", 1), bucket("p4d.24xlarge", "", 2)])
    (error,) = result.errors
    assert error.status == 403
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-g5-xlarge-pg-b", NS) is None
    assert result.pruned == ("apps/v1 Deployment headstart/headstart-placeholder-g5-xlarge-pg-b",)
    # the bucket whose write failed keeps its object (at its old count)
    assert harness.fake.get(*DEPLOY, "headstart-placeholder-p4d-24xlarge", NS)["spec"][
        "replicas"] == 1


@pytest.mark.parametrize("served", [(CB_GV,), (CB_ALPHA,), (CB_GV, CB_ALPHA)],
                         ids=["v1beta1", "v1alpha1", "both"])
def test_a_cluster_scoped_capacitybuffer_crd_is_detected(fake_kube, served) -> None:
    # cluster-autoscaler 1.34.0-1.34.1 shipped the CRD cluster-scoped: a namespaced list
    # would be a 404 every tick. auto passes over it with one reason; forced is an error.
    for group_version in served:
        fake_kube.serve(group_version)
        fake_kube.scope(group_version, "capacitybuffers", namespaced=False)
    result, observed = Harness(fake_kube, make_config("auto")).run([bucket(wanted=1)])
    assert result.ok and result.backend == "deployment"
    assert observed.capacity_buffer_api == ""
    assert "cluster-scoped" in observed.capacity_buffer_problem
    assert "1.34.2" in observed.capacity_buffer_problem
    assert len(fake_kube.list(*DEPLOY, NS)) == 1
    with pytest.raises(ApiCallError, match="cluster-scoped") as caught:
        Harness(fake_kube, make_config("capacitybuffer")).run([bucket(wanted=1)])
    assert "placeholders.backend" in str(caught.value)


def test_prune_deletes_only_the_object_it_observed(harness) -> None:
    # Between the tick's look and its delete, the bucket's Deployment is replaced by
    # another with the same name (a re-install, a user's): the delete carries the
    # observed uid and resourceVersion, the server refuses it (409, not retried), and
    # the new object stays.
    harness.run([bucket("g5.xlarge", "pg-a", 1), bucket("g5.xlarge", "pg-b", 1)])
    observed = harness.applier.observe()
    name = "headstart-placeholder-g5-xlarge-pg-b"
    old = harness.fake.get(*DEPLOY, name, NS)
    harness.fake.delete(*DEPLOY, name, NS)
    harness.fake.create({**old, "metadata": {
        key: value for key, value in old["metadata"].items()
        if key not in ("uid", "resourceVersion", "creationTimestamp", "managedFields")}})
    pruned, errors = harness.applier.prune([], observed)
    assert harness.fake.get(*DEPLOY, name, NS) is not None
    assert name not in " ".join(pruned)
    assert any("Precondition failed" in str(error) for error in errors), errors
    deletes = [p for m, p, _ in harness.fake.requests if m == "DELETE" and name in p]
    assert len(deletes) == 1  # a conflict: not sent again


class RecordingApi:
    """A KubeApi stand-in that records each request and answers {}."""

    def __init__(self):
        self.calls = []

    def request(self, method, path, query=(), body=None, content_type=None):
        self.calls.append((method, path, body, content_type))
        return {}


def test_a_scale_is_guarded_by_the_uid_and_resource_version_it_was_decided_on():
    api = RecordingApi()
    applier = Applier(api, make_config(), np.random.default_rng(0), lambda s: None)
    key = ("apps/v1", "Deployment", NS, "headstart-placeholder-g5-xlarge")
    applier.scale(key, 0, {"uid": "u-1", "resourceVersion": "42", "name": "ignored"})
    applier.scale(key, 1)
    (_, path, guarded, kind), (_, _, bare, _) = api.calls
    assert path.endswith("/deployments/headstart-placeholder-g5-xlarge/scale")
    assert kind == "application/merge-patch+json"
    assert guarded == {"spec": {"replicas": 0},
                       "metadata": {"uid": "u-1", "resourceVersion": "42"}}
    assert bare == {"spec": {"replicas": 1}}


class PriorityClassRace(RecordingApi):
    """The PriorityClass is absent when looked at, then another writer creates it before
    headstart's create arrives (409 AlreadyExists) with `value`."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def request(self, method, path, query=(), body=None, content_type=None):
        self.calls.append((method, path, body, content_type))
        if method == "POST":
            raise ApiException(status=409, reason="Conflict")
        if len(self.calls) == 1:
            raise ApiException(status=404, reason="Not Found")
        return {"value": self.value, "preemptionPolicy": "Never"}


@pytest.mark.parametrize("value, outcome", [(-5, "unchanged"), (7, "error")],
                         ids=["same-value", "other-value"])
def test_a_priority_class_created_meanwhile_is_read_and_checked_not_created_again(
        value, outcome):
    api = PriorityClassRace(value)
    sleeps = []
    applier = Applier(api, make_config(), np.random.default_rng(0), sleeps.append)
    if outcome == "error":
        with pytest.raises(ApiCallError, match="exists with value 7"):
            applier.ensure_priority_class(priority_class(applier.config))
    else:
        assert applier.ensure_priority_class(priority_class(applier.config)) == outcome
    assert [method for method, *_ in api.calls] == ["GET", "POST", "GET"] and sleeps == []
