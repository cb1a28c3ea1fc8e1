"""Job (`batch/v1`): a gang when Indexed with `completions` equal to `parallelism`.

The Job controller marks each pod of an Indexed Job with its index
(`batch.kubernetes.io/job-completion-index`) and a controller reference to the Job:
with `completions` = `parallelism` every pod runs at once, a gang of `parallelism`
pods. Any other Job declares no size (its pods settle one by one). Suspended through
`spec.suspend`: the Job controller deletes its active pods after removing their
tracking finalizer, so they count as no failure.
"""

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from kube.kinds.model import ElasticSize, PodSet, Resizing, WorkloadKind, any_condition
from kube.replicas import whole

INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
"""Set by the Job controller on every pod of an Indexed Job (and only there)."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Set by the Job controller on every pod of a Job."""


def _elastic_size(spec: Mapping[str, Any], where: str) -> ElasticSize:
    # Kubernetes changes parallelism and completions of an Indexed Job together (GA 1.31).
    parallelism = whole(spec.get("parallelism"), f"{where}: spec.parallelism", 1)
    completions = spec.get("completions")
    if spec.get("completionMode") != "Indexed" or completions is None or \
            whole(completions, f"{where}: spec.completions", 1) != parallelism:
        raise InputError(
            f"{where}: only an Indexed Job with completions equal to parallelism can be "
            "resized (Kubernetes changes both together); this Job cannot")
    return ElasticSize(parallelism)


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    parallelism = whole(spec.get("parallelism"), f"{where}.parallelism", 1)
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and completions is not None and \
            whole(completions, f"{where}.completions", 1) == parallelism:
        return (PodSet("", parallelism, 0, spec.get("template"), f"{where}.template"),)
    return ()


JOB = WorkloadKind(
    kind="Job", group="batch", plural="jobs", versions=("v1",), pod_sets=_pod_sets,
    managers={"v1": "kubernetes.io/job-controller"}, demand="job", demand_source="jobs",
    finished=any_condition("Complete", "Failed"),
    resizing=Resizing(_elastic_size,
                      lambda size: {"parallelism": size, "completions": size}),
)
