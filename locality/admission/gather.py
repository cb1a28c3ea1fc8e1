"""From pods to what admission decides on: gated jobs, pods to release, reservations.

Decides: which gated pods form a job (the job labels, `locality.jobs`), what its
declared size is (`JobPolicy.job_size`: the annotation, the PodGroup's minMember, or the
owner's replica counts, the largest its gated pods declare) and how many of its pods
exist, its priority and age, which gated pods are not the admitter's (no job label:
released as they are; another admitter's gate or assignment, Kueue's: released
untouched, left to it), and the reservations of admitted jobs: their unbound pods,
in the domain their gang record names (`record.reservations`). Records are read back
from the API, not kept in memory, so a restarted admitter or a new leader counts them
the same; only headstart can write them, so no pod annotation decides a domain.

An elastic job's size is its owner's count (headstart resizes it; a
`headstart.io/job-size` in its pod template cannot follow). Pods of an elastic owner
whose index is at or above the owner's size are leaving (the owner removes them after a
resize): neither gated members nor counted.

A job whose record holds a domain joins it (`recorded`) while some pod of its current
attempt is past the gate there (bound, or admitted and pending): a replacement pod
fills its running gang. When none is (every earlier pod gone, failed or Terminating:
a restart), the job is a new attempt and is admitted whole, anywhere.

A JobSet with exclusive placement is left to JobSet (its followers are created only after
its leaders are scheduled: gated, they could never be whole). A LeaderWorkerSet group
with `startupPolicy: LeaderReady` is admitted by stage (`locality.owners`): its leader
alone, then its workers into the leader's domain.

Across rounds (`JobMemo`, optional): a pod's job key and a job's `GatedJob` are worked
out again only when the pods or record they come from are new objects (pods and
records are immutable: a change is a new object), so a round costs little for the
jobs that did not change.

Must not: read the clock, log, look at nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from locality.admission.config import FOREIGN_ANNOTATIONS, FOREIGN_GATE_PREFIXES, AdmissionConfig
from locality.admission.model import GatedJob, Release, Reservation, demand_of
from locality.admission.record import GangRecord, GangState, is_member, reservations
from locality.admission.resize import beyond_size
from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig
from locality.jobs import job_key_of, job_policy
from locality.model import JobKey, Pod

JOBSET_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
"""JobSet's exclusive placement (kubernetes-sigs/jobset api/jobset/v1alpha2
`ExclusiveKey`): its pod webhook admits a job's follower pods only once the leader pod
(completion index 0) is scheduled, and pins them to the leader's domain."""


@dataclass(frozen=True, slots=True)
class Gathered:
    jobs: tuple[GatedJob, ...]
    releases: tuple[Release, ...]
    reservations: tuple[Reservation, ...]


def foreign_admitter(pod: Pod, gate: str) -> str | None:
    """The other admitter's gate or annotation on the pod, None when there is none."""
    for name in pod.scheduling_gates:
        if name != gate and name.startswith(FOREIGN_GATE_PREFIXES):
            return f"scheduling gate {name}"
    for key in FOREIGN_ANNOTATIONS:
        if key in pod.annotations:
            return f"annotation {key}"
    return None


class JobMemo:
    """The last round's job keys by pod and `GatedJob`s by job, for one caller with
    one configuration (one round at a time): reused only for the very same objects."""

    def __init__(self) -> None:
        self.keys: dict[int, tuple[Pod, JobKey | None]] = {}
        self.jobs: dict[JobKey, tuple[tuple[Pod, ...], tuple[Pod, ...], GangRecord | None,
                                      GatedJob]] = {}

    def key_of(self, pod: Pod, locality: LocalityConfig,
               seen: dict[int, tuple[Pod, JobKey | None]]) -> JobKey | None:
        """`job_key_of(pod)`, remembered by the pod object (kept in `seen`, the next
        round's memory)."""
        known = self.keys.get(id(pod))
        key = known[1] if known is not None and known[0] is pod else job_key_of(pod, locality)
        seen[id(pod)] = (pod, key)
        return key


def gather(
    gated: Iterable[Pod],
    records: Mapping[JobKey, GangRecord],
    pods_of_job: Callable[[JobKey], Sequence[Pod]],
    locality: LocalityConfig,
    admission: AdmissionConfig,
    memo: JobMemo | None = None,
) -> Gathered:
    """gated: pods carrying the admission gate (any others are ignored). records: the
    gang records by job. pods_of_job: every pod of a job in any phase. memo: the
    caller's earlier rounds (`JobMemo`; None: none)."""
    memo = memo if memo is not None else JobMemo()
    seen_keys: dict[int, tuple[Pod, JobKey | None]] = {}
    gate = admission.gate
    by_job: dict[JobKey, list[Pod]] = {}
    releases: list[Release] = []
    for pod in gated:
        if (gate not in pod.scheduling_gates or pod.node_name is not None or pod.terminal
                or pod.deleting or beyond_size(pod)):
            continue
        other = foreign_admitter(pod, gate)
        if other is not None:
            releases.append(Release(pod, f"carries {other}: left to that admitter"))
            continue
        if JOBSET_EXCLUSIVE in pod.annotations:
            releases.append(Release(pod, (
                f"its JobSet places each job exclusively ({JOBSET_EXCLUSIVE}): JobSet "
                "creates a job's other pods only once its leader pod is scheduled, so "
                "the job could never be whole behind the gate; left to JobSet")))
            continue
        job = memo.key_of(pod, locality, seen_keys)
        if job is None:
            releases.append(Release(pod, "belongs to no job headstart knows (no job label): "
                                         "released without a domain, placed pod by pod"))
            continue
        by_job.setdefault(job, []).append(pod)
    seen_jobs = {}
    for key, pods in sorted(by_job.items(), key=lambda item: (item[0].namespace,
                                                              item[0].name)):
        members = tuple(sorted(pods, key=lambda p: p.name))
        every = tuple(pods_of_job(key))
        record = records.get(key)
        known = memo.jobs.get(key)
        # Pods compare by identity (`Pod` has eq=False): the same objects, the same job.
        if known is not None and known[0] == members and known[1] == every \
                and known[2] is record:
            seen_jobs[key] = known
        else:
            seen_jobs[key] = (members, every, record,
                              _job(key, list(members), every, locality, admission, record))
    memo.keys, memo.jobs = seen_keys, seen_jobs
    jobs = tuple(entry[3] for entry in seen_jobs.values())
    return Gathered(jobs, tuple(releases),
                    reservations(records.values(), pods_of_job, admission.gate))


LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
"""The pods of each LeaderWorkerSet group, on every pod of it (kubernetes-sigs/lws)."""


def _group_size(gated: Sequence[Pod], size: int | None) -> int | None:
    """The whole group's size when `gated` is an earlier, smaller stage of it."""
    raw = gated[0].annotations.get(LWS_SIZE_ANNOTATION, "")
    total = int(raw) if raw.isdigit() else None
    return total if total is not None and size is not None and total > size else None


def _job(key: JobKey, gated: list[Pod], all_pods: Sequence[Pod], locality: LocalityConfig,
         admission: AdmissionConfig, record: GangRecord | None) -> GatedJob:
    policy = job_policy(gated[0], locality)
    # A Failed pod is replaced, a Terminating one is leaving: neither is a member.
    known = sum(1 for pod in all_pods if is_member(pod) and not beyond_size(pod))
    awaiting = owner_wait = None
    size = policy.job_size
    if size is None:
        named = next((p.pod_group for p in gated if p.pod_group is not None), None)
        if named is not None:
            awaiting = named[1]
        owner_wait = next((p.owner_wait for p in gated if p.owner_wait is not None), None)
    elif size == gated[0].owner_size:
        # A staged JobSet's later stage is larger: the largest any gated pod declares.
        size = max(p.owner_size or 0 for p in gated)
    elastic = next((p.elastic for p in gated
                    if p.elastic is not None and p.elastic.bounds is not None), None)
    if elastic is not None:  # resized by headstart: the owner's count, whatever pods say
        size, awaiting, owner_wait = elastic.pods(elastic.size), None, None
    level = (locality.topology_levels[policy.topology_level].name
             if policy.topology_level is not None else PLACEMENT_GROUP_LEVEL)
    recorded = None
    if record is not None and record.state.holds_domain and any(
            is_member(pod) and admission.gate not in pod.scheduling_gates for pod in all_pods):
        recorded = record.domain
    requeue_at = record.requeue_at if record is not None and \
        record.state is GangState.EVICTED else None
    created = [pod.created_at for pod in gated]
    return GatedJob(
        key=key, gated=tuple(gated), policy=policy, known_pods=known, size=size,
        awaiting_group=awaiting, owner_wait=owner_wait, level=level,
        priority=max(pod.priority for pod in gated),
        created_at=min(created), last_created_at=max(created), demand=demand_of(gated),
        recorded=recorded,
        requeue_at=requeue_at, preempts=all(pod.preempts for pod in gated),
        deactivated=record.message if record is not None and record.deactivated else None,
        finished=sum(1 for pod in all_pods if pod.succeeded and not beyond_size(pod)),
        rules_per_node=min((p.rules.per_node for p in gated if p.rules.per_node is not None),
                           default=None),
        unmodelled=next((p.rules.unmodelled for p in gated if p.rules.unmodelled), None),
        owner_size=max((p.owner_size for p in gated if p.owner_size is not None), default=None),
        elastic=elastic,
        group_size=_group_size(gated, size),
        elastic_problem=next((p.elastic.problem for p in gated
                              if p.elastic is not None and p.elastic.problem), None),
    )
