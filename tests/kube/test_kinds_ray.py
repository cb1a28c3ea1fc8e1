"""KubeRay's RayCluster and RayJob (`ray.io/v1`) as headstart reads them: the size a
cluster's pods get, the path a bad field is named by, what is suspended to evict a ray
gang (and when it is released), and what a RayJob announces as known demand. Objects
are shaped as KubeRay v1.7.0 writes them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import InputError
from kube.kinds import BY_KIND
from locality.admission.suspend_owners import jobs_to_release, jobs_to_suspend, suspension_of
from locality.config import LocalityConfig
from locality.jobs import identify
from locality.model import JobKey, Role
from locality.owners import parse_owner, with_owner_size
from locality.suspension import SUSPENDED_LABEL, job_suspension, release_patch, suspend_patch
from predictor.known import kubeflow
from predictor.known.model import count_pods, pod_ref
from tests.locality.builders import make_pod
from tests.predictor.known.known_builders import NOW, meta, pod, template

GPU = "nvidia.com/gpu"
HOUR = 3600.0


def group(name="gpu", replicas=3, **fields):
    return {"groupName": name, "replicas": replicas, "rayStartParams": {},
            "template": template(gpus=4), **fields}


def cluster_spec(*groups):
    return {"headGroupSpec": {"rayStartParams": {}, "template": template(gpus=1)},
            "workerGroupSpecs": list(groups)}


def raycluster(*groups, name="rc", owner=None, labels=None, **spec):
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayJob",
                                        "name": owner, "uid": f"uid-{owner}",
                                        "controller": True}]
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata,
            "spec": {**cluster_spec(*groups), **spec}}


def rayjob(*groups, name="rj", labels=None, status=None, **spec):
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {**meta(name, namespace="ns", labels=labels), "uid": f"uid-{name}"},
            "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": cluster_spec(*groups), **spec},
            "status": status or {}}


def ray_pod(group_name="gpu", cluster="rc", node_type="worker"):
    """A pod as KubeRay labels it: its cluster, its node type, its group."""
    return replace(make_pod(f"{cluster}-{group_name}", namespace="ns", gpus=4),
                   labels={"ray.io/cluster": cluster, "ray.io/node-type": node_type,
                           "ray.io/group": group_name},
                   controller=("RayCluster", cluster))


def size_of(obj, pod_=None):
    owner = parse_owner(obj, obj["kind"], version="v1")
    return with_owner_size(pod_ or ray_pod(), {owner.key: {owner.source: owner}}).owner_size


# --------------------------------------------------------------------- a cluster's size

@pytest.mark.parametrize(("groups", "size"), [
    ((group(),), 1 + 3),
    ((group(numOfHosts=4),), 1 + 3 * 4),  # a multi-host group: replicas x hosts pods
    ((group(replicas=1, minReplicas=2),), 1 + 2),  # raised to minReplicas
    ((group(replicas=9, maxReplicas=5),), 1 + 5),  # cut to maxReplicas
    (({k: v for k, v in group().items() if k != "replicas"},), 1 + 0),  # CRD default 0
    ((group(minReplicas=2, maxReplicas=4) | {"replicas": None},), 1 + 2),
    ((group(suspend=True), group("cpu", 2)), 1 + 2),  # a suspended group has none
    ((group(), group("cpu", 2, numOfHosts=2)), 1 + 3 + 4),
    ((), 1),  # the head alone
], ids=["head-and-workers", "num-of-hosts", "min-clamp", "max-clamp", "replicas-absent",
        "replicas-null", "suspended-group", "two-groups", "head-only"])
def test_a_rayclusters_pods_get_the_whole_clusters_size(groups, size):
    obj = raycluster(*groups)
    # One stage: the head and every worker, whichever pod asks.
    assert size_of(obj) == size
    assert size_of(obj, ray_pod(HEAD, node_type="head")) == size


HEAD = "headgroup"


def test_a_ray_pod_is_one_job_per_cluster_and_its_head_coordinates():
    config = LocalityConfig()
    head, worker = identify(ray_pod(HEAD, node_type="head"), config), identify(ray_pod(), config)
    assert head.key == worker.key == JobKey("ns", "rc")
    assert (head.role, worker.role) == (Role.CHIEF, Role.WORKER)


@pytest.mark.parametrize(("change", "where"), [
    (lambda s: s.pop("headGroupSpec"), "spec.headGroupSpec"),
    (lambda s: s.update(workerGroupSpecs={"groupName": "gpu"}), "spec.workerGroupSpecs"),
    (lambda s: s["workerGroupSpecs"][1].pop("groupName"), "spec.workerGroupSpecs[1].groupName"),
    (lambda s: s["workerGroupSpecs"][1].update(replicas="3"),
     "spec.workerGroupSpecs[1].replicas"),
    (lambda s: s["workerGroupSpecs"][0].update(minReplicas=-1),
     "spec.workerGroupSpecs[0].minReplicas"),
    (lambda s: s["workerGroupSpecs"][0].update(maxReplicas=1.5),
     "spec.workerGroupSpecs[0].maxReplicas"),
    (lambda s: s["workerGroupSpecs"][1].update(numOfHosts=True),
     "spec.workerGroupSpecs[1].numOfHosts"),
    (lambda s: s["workerGroupSpecs"].append("gpu"), "spec.workerGroupSpecs[2]"),
], ids=["no-head", "groups-not-a-list", "no-group-name", "replicas-a-string",
        "negative-min", "fractional-max", "hosts-a-bool", "group-not-an-object"])
def test_a_bad_field_is_an_input_error_naming_its_path(change, where):
    spec = cluster_spec(group(), group("cpu", 2))
    change(spec)
    with pytest.raises(InputError) as cluster_error:
        BY_KIND["RayCluster"].pod_sets(spec, "spec", "v1")
    assert str(cluster_error.value).startswith(f"{where}:"), str(cluster_error.value)
    # A RayJob's cluster spec: the same field, under spec.rayClusterSpec.
    with pytest.raises(InputError) as job_error:
        BY_KIND["RayJob"].pod_sets({"rayClusterSpec": spec}, "spec", "v1")
    assert str(job_error.value).startswith(where.replace("spec", "spec.rayClusterSpec", 1))
    # As an owner, the size is withheld with the reason, not a default.
    obj = raycluster()
    obj["spec"] = spec
    sized = with_owner_size(ray_pod(), {(key := parse_owner(obj, "RayCluster", version="v1"))
                                        .key: {key.source: key}})
    assert sized.owner_size is None and where in sized.owner_wait


def test_a_rayjob_without_a_cluster_spec_names_the_field_unless_it_selects_a_cluster():
    with pytest.raises(InputError, match=r"^spec\.rayClusterSpec\.headGroupSpec: "):
        BY_KIND["RayJob"].pod_sets({"entrypoint": "x"}, "spec", "v1")
    # On an existing RayCluster (clusterSelector): it makes no pods, announces none.
    selecting = rayjob(suspend=True)
    selecting["spec"].pop("rayClusterSpec")
    selecting["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    assert BY_KIND["RayJob"].pod_sets(selecting["spec"], "spec", "v1") == ()
    assert ray_items(selecting) == []


# ------------------------------------------------------------------------- suspension

def seen(*objects):
    out = {}
    for obj in objects:
        job = job_suspension(obj, obj["kind"], "v1")
        out[job.key] = job
    return out


def test_a_rayjobs_cluster_is_suspended_through_the_rayjob():
    made = raycluster(group(), name="rj-x7k2p", owner="rj")
    jobs = seen(made, rayjob(group()))
    assert jobs[("RayCluster", "ns", "rj-x7k2p")].problem == \
        "its controller RayJob rj decides its suspension"
    pods = [ray_pod(HEAD, "rj-x7k2p", "head"), ray_pod("gpu", "rj-x7k2p")]
    assert suspension_of(pods[0], jobs).key == ("RayJob", "ns", "rj")
    [top] = jobs_to_suspend(pods, jobs)
    assert top.key == ("RayJob", "ns", "rj") and top.uid == "uid-rj"
    assert suspend_patch(top, 7) == {"metadata": {"uid": "uid-rj",
                                                  "labels": {SUSPENDED_LABEL: "7"}},
                                     "spec": {"suspend": True}}
    assert release_patch(top)["spec"] == {"suspend": False}
    # The RayJob not seen: its cluster is never suspended instead; the gang is evicted.
    assert jobs_to_suspend(pods, seen(made)) == ()


def test_a_standalone_raycluster_is_suspended_through_itself():
    jobs = seen(raycluster(group()))
    [top] = jobs_to_suspend([ray_pod(HEAD, node_type="head"), ray_pod()], jobs)
    assert top.key == ("RayCluster", "ns", "rc") and top.problem is None
    assert top.api_version == "ray.io/v1"
    assert jobs_to_suspend([ray_pod()], seen(raycluster(group(), suspend=True))) == ()


@pytest.mark.parametrize("obj", [
    raycluster(group(), managedBy="kueue.x-k8s.io/multikueue"),
    rayjob(group(), managedBy="kueue.x-k8s.io/multikueue"),
    rayjob(group(), labels={"kueue.x-k8s.io/queue-name": "q"}),
], ids=["raycluster-managed-by-multikueue", "rayjob-managed-by-multikueue", "rayjob-queued"])
def test_a_ray_object_another_controller_suspends_is_never_suspended(obj):
    made = raycluster(group(), name="rj-x7k2p", owner="rj")
    pods = [ray_pod("gpu", "rc"), ray_pod("gpu", "rj-x7k2p")]
    jobs = seen(obj, made)
    assert jobs[(obj["kind"], "ns", obj["metadata"]["name"])].problem is not None
    assert jobs_to_suspend(pods[:1] if obj["kind"] == "RayCluster" else pods[1:], jobs) == ()
    # Its own operator's name is no other controller.
    own = {**obj, "spec": {**obj["spec"], "managedBy": "ray.io/kuberay-operator"},
           "metadata": {**obj["metadata"], "labels": {}}}
    assert job_suspension(own, own["kind"], "v1").problem is None


@pytest.mark.parametrize(("spec", "why"), [
    ({"shutdownAfterJobFinishes": False}, "spec.shutdownAfterJobFinishes is not true"),
    ({"shutdownAfterJobFinishes": None}, "spec.shutdownAfterJobFinishes is not true"),
    ({"clusterSelector": {"ray.io/cluster": "shared"}}, "spec.clusterSelector"),
], ids=["shutdown-false", "shutdown-unset", "cluster-selector"])
def test_a_rayjob_its_operator_would_fail_when_suspended_is_never_suspended(spec, why):
    # KubeRay's ValidateRayJobSpec marks such a suspended RayJob ValidationFailed: its
    # cluster's gang is evicted pod by pod instead.
    obj = rayjob(group(), **spec)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    made = raycluster(group(), name="rj-x7k2p", owner="rj")
    jobs = seen(obj, made)
    assert why in jobs[("RayJob", "ns", "rj")].problem
    assert jobs_to_suspend([ray_pod("gpu", "rj-x7k2p")], jobs) == ()


@pytest.mark.parametrize(("status", "released"), [
    ({"jobDeploymentStatus": "Running"}, False),
    ({"jobDeploymentStatus": "Suspending"}, False),
    ({"jobDeploymentStatus": "Suspended"}, True),
], ids=["running", "suspending", "suspended"])
def test_a_rayjob_is_released_once_the_operator_says_suspended(status, released):
    marked = rayjob(group(), labels={SUSPENDED_LABEL: "5"}, status=status, suspend=True)
    assert [j.key for j in jobs_to_release(seen(marked), 10.0)] == \
        ([("RayJob", "ns", "rj")] if released else [])
    # Not before the time its mark names.
    assert jobs_to_release(seen(marked), 4.0) == []


def test_a_rayjob_is_not_released_while_its_cluster_is_still_seen():
    marked = rayjob(group(), labels={SUSPENDED_LABEL: "5"},
                    status={"jobDeploymentStatus": "Suspended"}, suspend=True)
    made = raycluster(group(), name="rj-x7k2p", owner="rj")
    assert jobs_to_release(seen(marked, made), 10.0) == []
    assert [j.key for j in jobs_to_release(seen(marked), 10.0)] == [("RayJob", "ns", "rj")]


def test_a_standalone_raycluster_is_released_once_it_says_suspended():
    marked = raycluster(group(), labels={SUSPENDED_LABEL: "5"}, suspend=True)
    assert jobs_to_release(seen(marked), 10.0) == []
    marked["status"] = {"conditions": [{"type": "RayClusterSuspended", "status": "True"}]}
    assert [j.key for j in jobs_to_release(seen(marked), 10.0)] == [("RayCluster", "ns", "rc")]


# ----------------------------------------------------------------------- known demand

def ray_items(obj, pods=()):
    parsed = kubeflow.parse_training_job(obj, BY_KIND["RayJob"], GPU)
    counts = count_pods(pod_ref(p) for p in pods)
    return [(i.source, i.name, i.pods, i.request.gpus, i.expected_s - NOW
             if i.expected_s is not None else None)
            for i in kubeflow.training_items([parsed], counts, NOW, HOUR)]


def test_a_suspended_rayjob_announces_its_cluster_specs_pods():
    suspended = rayjob(group(numOfHosts=2), group("small", 1, suspend=True), suspend=True,
                       status={"jobDeploymentStatus": "Suspended"})
    # The head (1 GPU) and 3 x 2 hosts of 4 GPUs; the suspended group none.
    assert ray_items(suspended) == [("rayjobs", "rj", 1, 1, 0), ("rayjobs", "rj", 6, 4, 0)]
    # headstart's admitter suspended it, resuming it in 10 minutes: expected then.
    ours = rayjob(group(), suspend=True, labels={SUSPENDED_LABEL: str(int(NOW + 600))})
    assert [item[4] for item in ray_items(ours)] == [600, 600]


def test_a_running_rayjob_announces_nothing_its_clusters_pods_are_not_its_own():
    # While it runs, its pods are its RayCluster's (controlled by the cluster, labelled
    # with the cluster's name): none can be counted for the RayJob, none is announced.
    running = rayjob(group(), status={"jobDeploymentStatus": "Initializing"})
    cluster_pod = pod("rj-x7k2p-head", owner=("ray.io/v1", "RayCluster", "rj-x7k2p"),
                      labels={"ray.io/cluster": "rj-x7k2p", "ray.io/node-type": "head"})
    assert ray_items(running) == [] and ray_items(running, [cluster_pod]) == []


@pytest.mark.parametrize("state", ["Complete", "Failed", "ValidationFailed"])
def test_a_finished_rayjob_announces_nothing(state):
    assert ray_items(rayjob(group(), suspend=True, status={"jobDeploymentStatus": state})) == []
