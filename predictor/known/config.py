"""Which known-demand sources the service reads, and the two timing knobs.

Decides: the settings of the overprovisioner's `known_demand` YAML section (parsed and
validated, with errors naming the file and field, by `overprovisioner.config.parse`).

Must not: parse YAML, talk to the cluster, or log.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownDemandConfig:
    """Known-ahead demand: work the cluster announced before its pods exist."""

    kueue: bool = True
    """Kueue Workloads not admitted yet (kueue.x-k8s.io: workloads, localqueues,
    clusterqueues, admissionchecks). Jobs queued in Kueue (label kueue.x-k8s.io/queue-name)
    are counted through their Workloads only, so with this off they are not counted."""
    gated: bool = True
    """Pending pods held by scheduling gates other than Kueue's (read from the recorder's
    pod watch: no API of its own). cluster-autoscaler ignores gated pods, so they are
    never observed demand; with this off they are not counted at all."""
    jobs: bool = True
    """Suspended batch/v1 Jobs (not those queued in Kueue: their Workloads count them)."""
    jobsets: bool = True
    """Suspended JobSets (jobset.x-k8s.io/v1alpha2)."""
    kubeflow: bool = True
    """Kubeflow PyTorchJob, TFJob, MPIJob (kubeflow.org/v1) and TrainJob
    (trainer.kubeflow.org/v1alpha1) whose pods are not all created."""
    rayjobs: bool = True
    """Suspended KubeRay RayJobs (ray.io/v1): their cluster spec's pods."""
    cronjobs: bool = True
    """The next run of each batch/v1 CronJob."""
    podgroups: bool = True
    """PodGroups (scheduling.x-k8s.io/v1alpha1 coscheduling, scheduling.volcano.sh/v1beta1)
    with fewer pods than minMember."""
    cronjob_lead_s: float | None = None
    """How long before a CronJob run it counts as known (YAML `cronjob_lead: 10m`);
    null = the window known demand counts in (tick + horizon). Only runs due within that
    window reach the plan."""
    suspended_window_s: float = 3600.0
    """Suspended work (Jobs, JobSets, training jobs not queued in Kueue) counts as due now
    for this long after it was suspended; after that it is taken as parked by a person and
    not counted (YAML `suspended_window: 1h`)."""

    def enabled(self) -> tuple[str, ...]:
        """The enabled sources, in precedence order."""
        from predictor.known.model import SOURCES

        return tuple(source for source in SOURCES if getattr(self, source))

    def lead_s(self, horizon_s: float) -> float:
        return horizon_s if self.cronjob_lead_s is None else self.cronjob_lead_s
