"""Every waiting job's claims (`locality.claims`), kept up to date incrementally.

Decides: when a job's claims are computed again (when its pods or its assumptions
changed, checked once per cache change, and only when another job's request reads
them: a big job's own pods, placed one after another, would otherwise recompute its
claims on every pod), and what a request gets (the claims of the jobs other than its
own, summed per node). A job's claims are computed against the cache's nodes and live
assumptions at that moment: a job whose pods do not change keeps them while other
jobs' bindings fill the same nodes, and two jobs may claim the same room. Both only
make nodes look fuller than they are for a third job, for a soft preference;
recomputing every job on every change cost O(waiting jobs x their pods) per scheduled
pod (bench/bench_extender.py).

Which jobs: those with at least one pod placed (bound or assumed) and pods to place:
pods waiting (neither bound nor finished), or pods not created yet, when the job
declares a size (`headstart.io/job-size`, PodGroup minMember) larger than its pods
known. A job with nothing placed has no home yet. A job with no pod waiting is claimed
for as if its next pod were waiting, shaped as `locality.placement.unseen_request` says.

Threading: event-loop thread only, like `ClusterCache`. Must not: do I/O, read the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from bucketing.resources import Resources
from extender.cache import ClusterCache
from locality.claims import claims_of_job
from locality.config import LocalityConfig
from locality.context import build_context
from locality.jobs import identify, job_policy
from locality.model import JobKey, Locality, Packing, Pod, Role
from locality.placement import placement_of_tally, unseen_request
from locality.tally import JobTally

UNSEEN_UID = "/headstart-unseen"  # not a UID the API server gives (those are UUIDs)


class ClaimsBook:
    """Per-job claims with what they were computed from, and their per-node sum."""

    def __init__(self, cache: ClusterCache, config: LocalityConfig) -> None:
        self.cache = cache
        self.config = config
        self._checked_version: int | None = None
        # A job whose claims were stale at `_checked_version` and left so (`_update`).
        self._left_stale: JobKey | None = None
        # job -> ((cache's job version, the job's assumptions tuple), claims)
        self._by_job: dict[JobKey, tuple[tuple[object, object], dict[str, Resources]]] = {}
        self._total: dict[str, Resources] = {}

    def others(self, job: JobKey, now: float) -> Mapping[str, Resources]:
        """The claims of every job but `job`, summed per node."""
        self._update(now, job)
        if job in self._by_job:
            # Out of the total until another job asks (then it is computed afresh): the
            # asking job's next pods need no copy of the total less its own claims.
            self._replace(job, None)
        return self._total

    def _update(self, now: float, asking: JobKey) -> None:
        """Bring every job's claims but `asking`'s up to date. The asking job's own are
        never read by its request (`others` takes them out again), and it is the job
        whose pods and binds change pod after pod: recomputing its claims on each would
        cost O(its nodes) per pod of a big job. They are brought up to date when another
        job asks."""
        cache = self.cache
        if self._checked_version == cache.version and self._left_stale in (None, asking):
            return
        short = set(cache.jobs_short_of_size())
        waiting = set(cache.jobs_with_waiting_pods()) | short
        for job in [job for job in self._by_job if job not in waiting]:
            self._replace(job, None)
        by_job_assumed = cache.assumed.by_job
        self._left_stale = None
        for job in waiting:
            source = (cache.job_version(job), by_job_assumed.get(job))
            entry = self._by_job.get(job)
            if job == asking:
                self._left_stale = job
                continue
            if entry is not None and entry[0][0] == source[0] and entry[0][1] is source[1]:
                continue
            self._replace(job, (source, self._claims_of(job, job in short, now)))
        self._checked_version = cache.version

    def _replace(self, job: JobKey, entry) -> None:
        old = self._by_job.pop(job, None)
        total = self._total
        if old is not None:
            for name, claimed in old[1].items():
                _take(total, name, claimed)
        if entry is not None:
            self._by_job[job] = entry
            for name, claimed in entry[1].items():
                current = total.get(name)
                total[name] = claimed if current is None else current + claimed

    def _claims_of(self, job: JobKey, short: bool, now: float) -> dict[str, Resources]:
        """short: the job declares more pods than the cache knows (pods to come)."""
        cache = self.cache
        assumed = cache.assumed
        tally = cache.tally_of(job)
        waiting = next((p for p in cache.waiting_pods_of_job(job)
                        if p.uid not in assumed.by_uid), None)  # usually the first
        if waiting is None and short:
            waiting = _next_unseen(tally, self.config)
        identity = identify(waiting, self.config) if waiting is not None else None
        if waiting is None or identity is None:
            return {}
        policy = job_policy(waiting, self.config)
        placement = placement_of_tally(waiting, job, policy, tally, assumed, now, self.config)
        if not placement.placed_pods:
            return {}
        table = cache.table()
        # The home group and the nodes the job's pods are pulled to, as its own requests
        # see them (no group sizing: a job with a pod placed has a home or none to size).
        shape = build_context(waiting, identity, replace(policy, placement_group=Locality.NONE),
                              placement, table)
        occupied = sorted(shape.counterpart_nodes) + sorted(
            shape.job_nodes - shape.counterpart_nodes)
        return claims_of_job(placement, occupied, shape.home_group, table,
                             assumed.requested_by_node(now),
                             1 if policy.packing is Packing.SPREAD else None)


def _next_unseen(tally: JobTally, config: LocalityConfig) -> Pod | None:
    """A stand-in for the next pod of a job none of whose known pods waits: a copy of
    one of its unfinished workers (else of any unfinished pod), pending, under a uid no
    pod has, requesting what `unseen_request` says its unseen pods request."""
    model = None
    for uid, pod in tally.members.items():
        if pod.terminal:
            continue
        if tally.role_of[uid] is Role.WORKER:
            model = pod
            break
        model = model or pod
    if model is None:
        return None
    # The job's unfinished workers (the model among them when it is one).
    return replace(model, uid=UNSEEN_UID, name=f"{model.name}{UNSEEN_UID}", node_name=None,
                   request=unseen_request(model, tally.workers))


def _take(total: dict[str, Resources], name: str, claimed: Resources) -> None:
    """Subtract `claimed` from `total[name]`, dropping the entry when nothing is left."""
    rest = total[name] - claimed
    if rest.gpu_milli or rest.cpu_milli or rest.memory_bytes:
        total[name] = rest
    else:
        del total[name]
