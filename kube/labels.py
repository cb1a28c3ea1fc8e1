"""Label and annotation keys every headstart component reads the same way.

Decides: which node labels name a placement group, in which order (first match wins);
the per-job annotations the admitter reads; the labels headstart and Kueue put on a
workload object. A kind's own pod labels are its module's (`kube.kinds`).
One copy for every package (locality.config.DEFAULT_PLACEMENT_GROUP_LABELS is this tuple);
the overprovisioner reads only its configured key (placeholders must select on it).
"""

from __future__ import annotations

PLACEMENT_GROUP_LABELS: tuple[str, ...] = (
    "headstart.io/placement-group",
    "cloud.google.com/gke-placement-group",
    "topology.k8s.aws/network-node-layer-3",
    "cloud.google.com/gce-topology-block",
)
"""EC2 placement groups have no node label of their own: the node group sets headstart's."""

READY_TIMEOUT_ANNOTATION = "headstart.io/ready-timeout"
"""On a job's pods: seconds its gang may take from admission to every member Ready,
within the admin's bounds (`locality.admission.config.AdmissionConfig`)."""

SUSPENDED_LABEL = "headstart.io/suspended"
"""On a workload object headstart suspended: when to resume it (whole seconds since the
epoch); removed when headstart resumes it (`locality.suspension`)."""

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""Kueue manages a job that carries it (kubernetes-sigs/kueue pkg/controller/constants
QueueLabel): its suspension and its gate are Kueue's, and its Workload says when it runs."""
