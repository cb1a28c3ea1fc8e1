"""Label, annotation and gate keys headstart defines or reads by name, one copy for every
package.

Decides: the `headstart.io/` keys (a test checks that no other product module spells
one: tests/kube/test_labels.py), which node labels name a placement group and in which
order (first match wins), and the labels headstart and Kueue put on a workload object.
A kind's own pod labels are its module's (`kube.kinds`, the registry of kinds).
Configurable keys (`locality.config.LocalityConfig`, `overprovisioner.config`) take
their defaults from here; the overprovisioner reads only its configured placement-group
key (placeholders must select on it).

Must not: read objects or decide anything from a key's value (`locality`,
`overprovisioner` do).
"""

from __future__ import annotations

# --- nodes -------------------------------------------------------------------------

PLACEMENT_GROUP_LABEL = "headstart.io/placement-group"
"""The placement group of a node (set on the node group: EC2 placement groups have no
node label of their own), and of a placeholder pod meant for one."""

PLACEMENT_GROUP_LABELS: tuple[str, ...] = (
    PLACEMENT_GROUP_LABEL,
    "cloud.google.com/gke-placement-group",
    "topology.k8s.aws/network-node-layer-3",
    "cloud.google.com/gce-topology-block",
)
"""Node labels naming a placement group, first match wins."""

# --- a training job's pods ---------------------------------------------------------

JOB_LABEL = "headstart.io/job"
"""headstart's own job label on pods (beside the operators' in `kube.kinds`)."""

ROLE_LABEL = "headstart.io/role"
"""headstart's own role label on pods (`ps`, `worker`, ...)."""

PACKING_ANNOTATION = "headstart.io/packing"
"""On a job's pods: `pack` or `spread`."""

PLACEMENT_GROUP_ANNOTATION = PLACEMENT_GROUP_LABEL
"""On a job's pods: placement-group locality, `required`, `preferred` or `none` (the
node label's key, as an annotation)."""

TOPOLOGY_LEVEL_ANNOTATION = "headstart.io/topology-level"
"""On a job's pods: the topology level the job must fit in."""

NUMA_ANNOTATION = "headstart.io/numa"
"""On a job's pods: NUMA locality, `required`, `preferred` or `none`."""

JOB_SIZE_ANNOTATION = "headstart.io/job-size"
"""On a job's pods: how many pods the job has."""

READY_TIMEOUT_ANNOTATION = "headstart.io/ready-timeout"
"""On a job's pods: seconds its gang may take from admission to every member Ready,
within the admin's bounds (`locality.admission.config.AdmissionConfig`)."""

# --- admission ---------------------------------------------------------------------

PLACEMENT_GATE = "headstart.io/placement"
"""The scheduling gate a job's pods are created behind until the admitter places the
whole job."""

DOMAIN_ANNOTATION = "headstart.io/domain"
"""Written with the admission patch, `LEVEL=DOMAIN`: for readers, it decides nothing."""

GANG_JOB_ANNOTATION = JOB_LABEL
"""On a Gang record: the job label value it is for (its name may be a sanitised form)."""

SUSPENDED_LABEL = "headstart.io/suspended"
"""On a workload object headstart suspended: when to resume it (whole seconds since the
epoch); removed when headstart resumes it (`locality.suspension`)."""

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""Kueue manages a job that carries it (kubernetes-sigs/kueue pkg/controller/constants
QueueLabel): its suspension and its gate are Kueue's, and its Workload says when it runs."""

# --- elastic owners (annotations on a Job or PyTorchJob) -----------------------------

MIN_SIZE_ANNOTATION = "headstart.io/min-size"
"""The fewest workers an elastic job runs with."""

MAX_SIZE_ANNOTATION = "headstart.io/max-size"
"""The most workers an elastic job may use."""

WARM_START_ANNOTATION = "headstart.io/warm-start"
"""`"true"`: start the job at the size its finished peers' profiles recommend
(`overprovisioner.planner.job_profile`)."""

SAMPLE_RATE_QUERY_ANNOTATION = "headstart.io/sample-rate-query"
"""PromQL: the rate of samples arriving for the job to train on (a worker plan's demand)."""

THROUGHPUT_QUERY_ANNOTATION = "headstart.io/throughput-query"
"""PromQL: the job's own training throughput, recorded at each size to fit the model."""

THROUGHPUT_MODEL_ANNOTATION = "headstart.io/throughput-model"
"""`synchronous` or `asynchronous` training."""

GLOBAL_BATCH_ANNOTATION = "headstart.io/global-batch"
"""The job's global batch size."""

THROUGHPUT_THETAS_ANNOTATION = "headstart.io/throughput-thetas"
"""The throughput model's parameters measured offline (4 synchronous, 3 asynchronous)."""

LAG_QUERY_ANNOTATION = "headstart.io/lag-query"
"""PromQL: how far the job lags its input (KALE's fallback: one worker more while
above `MAX_LAG_ANNOTATION`)."""

MAX_LAG_ANNOTATION = "headstart.io/max-lag-seconds"
"""The lag in seconds the job tolerates before it gets one worker more."""

# --- placeholders (the overprovisioner's objects) -----------------------------------

PLACEHOLDER_LABEL = "headstart.io/placeholder"
"""On placeholder pods and their Deployments or CapacityBuffers: `true`."""

INSTANCE_TYPE_LABEL = "headstart.io/instance-type"
"""On a placeholder object: the instance type of its bucket."""

ZONE_LABEL = "headstart.io/zone"
"""On a placeholder object: the zone it selects, if pinned to one."""

CAPACITY_TYPE_LABEL = "headstart.io/capacity-type"
"""On a placeholder object: the capacity type (on-demand, spot) it selects, if pinned."""

SPEC_HASH_ANNOTATION = "headstart.io/spec-hash"
"""On a placeholder object: the hash of what was written (a write is skipped when equal)."""

VALID_UNTIL_ANNOTATION = "headstart.io/valid-until"
"""On a placeholder object: when it is scaled down unless written again (the
overprovisioner's dead-man's switch)."""

OWNER_ANNOTATION = "headstart.io/owner"
"""`overprovisioner` on what the overprovisioner wrote; it never touches anything else."""
