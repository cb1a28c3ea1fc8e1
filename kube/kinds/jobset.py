"""JobSet (`jobset.x-k8s.io/v1alpha2`): replicated jobs, started in stages by `dependsOn`.

The JobSet controller labels every pod `jobset.sigs.k8s.io/jobset-name` and
`jobset.sigs.k8s.io/replicatedjob-name`; a replicated job has `replicas` Jobs of
min(parallelism, completions) pods each. One with `dependsOn` is created only once the
ones it depends on are Ready or Complete: its stage is one more than the latest stage it
depends on. Suspended through `spec.suspend` (the JobSet controller suspends its Jobs);
its pods' controllers are its Jobs.
"""

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from kube.kinds.model import PodSet, WorkloadKind, any_condition
from kube.replicas import jobset_replicated_jobs

GROUP = "jobset.x-k8s.io"
NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    replicated = jobset_replicated_jobs(spec, where)
    depends = {job.name: job.depends_on for job in replicated}
    stages: dict[str, int] = {}

    def stage(name: str, seen: tuple[str, ...]) -> int:
        if name in stages:
            return stages[name]
        if name in seen or name not in depends:
            raise InputError(f"{where}.replicatedJobs: dependsOn "
                             f"{'cycles through' if name in seen else 'names unknown'} {name!r}")
        stages[name] = 1 + max((stage(d, (*seen, name)) for d in depends[name]), default=-1)
        return stages[name]

    return tuple(PodSet(job.name, job.pods, stage(job.name, ()), job.job_spec.get("template"),
                        f"{where}.replicatedJobs[{index}].template.spec.template")
                 for index, job in enumerate(replicated))


JOBSET = WorkloadKind(
    kind="JobSet", group=GROUP, plural="jobsets", versions=("v1alpha2",), pod_sets=_pod_sets,
    pod_label=NAME_LABEL, part_labels=(REPLICATED_JOB_LABEL,),
    managers={"v1alpha2": "jobset.sigs.k8s.io/jobset-controller"}, controls_pods=False,
    demand="jobset", demand_source="jobsets", finished=any_condition("Completed", "Failed"),
)
