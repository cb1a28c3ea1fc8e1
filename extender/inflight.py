"""Binds in flight: pods the extender has answered for, whose bind has not come yet.

kube-scheduler runs a pod's binding cycle (Permit, PreBind, then our /bind) in a
goroutine and starts the next pod's scheduling cycle at once (scheduleOnePod in
pkg/scheduler/schedule_one.go), so the filter call for the next pod can reach the
extender before the bind call for the previous one. Without the previous pod's node
the next one is judged as if it did not exist: a job's next worker is not pulled to
it, and another job's pod does not see that the node (and the room the first job's
remaining pods will take around it, `locality.claims`) is taken. This module keeps
the pods of jobs answered (prioritize, or a filter that left one node: kube-scheduler
then skips prioritize) and not yet bound, and says how long a request for a pod of a
job should wait for them:

- until each pending pod's bind arrives, at most `wait_seconds` after the answer for
  it was given (its deadline);
- not for the pods of a job with a pending pod past its deadline: that job's binds
  are held (a Permit plugin such as Coscheduling waits for the whole gang, up to 60 s
  by default) or lost (the cycle failed after our answer). Waiting for each of a
  gang's pods in turn would add the bound once per pod; this adds it once per job
  until a bind of the job arrives, which drops the job's overdue entries;
- not at all for the pods of a PodGroup with fewer members answered than its
  `minMember`: Coscheduling's Permit holds their binds until the rest of the group is
  scheduled, which this very request may be part of. Waiting for them cost the bound
  once per gang: 512 gangs of 4 spent about 2 minutes of a 3-minute bench waiting
  (bench/bench_scheduler_gangs.py). Once the group's last member is answered its binds
  come together, and requests wait for them again.

In the common case the bind of pod N arrives while kube-scheduler still runs its own
filters for pod N+1, and nothing waits.

An entry is dropped when its bind arrives, when another pod's bind of the same job
arrives after its deadline, when the pod is answered again (rescheduled), or after
`ttl_seconds` (`locality.assumed_ttl_seconds`).

Threading: event-loop thread only, like `ClusterCache`. Must not: sleep, await or
read the clock (`now` is passed in); decide placements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from locality.model import JobKey, Pod


@dataclass(frozen=True, slots=True)
class Pending:
    """A pod of `job` the extender answered for at `answered_at`, not bound yet."""

    pod: Pod
    job: JobKey
    answered_at: float


class PendingBinds:
    """Pending pods by job and by uid, with the wait rule above."""

    def __init__(self, wait_seconds: float, ttl_seconds: float) -> None:
        self.wait_seconds = wait_seconds
        self.ttl_seconds = ttl_seconds
        self._by_uid: dict[str, Pending] = {}
        self._by_job: dict[JobKey, dict[str, Pending]] = {}

    def __len__(self) -> int:
        return len(self._by_uid)

    def answered(self, pod: Pod, job: JobKey, now: float) -> None:
        """The extender gave kube-scheduler its answer for `pod`; its bind is due."""
        self._drop(pod.uid)
        entry = Pending(pod, job, now)
        self._by_uid[pod.uid] = entry
        self._by_job.setdefault(job, {})[pod.uid] = entry

    def bound(self, uid: str, now: float) -> Pending | None:
        """The bind for pod `uid` arrived: its entry (None if it had none), removed.

        The job's entries past their deadline go too: a bind of the job arriving means
        its binds are not all held, and an overdue one that is still missing most
        likely failed (kube-scheduler retries it as a new scheduling cycle)."""
        entry = self._by_uid.get(uid)
        if entry is None:
            return None
        self._drop(uid)
        overdue = [
            other for other, pending in self._by_job.get(entry.job, {}).items()
            if pending.answered_at + self.wait_seconds <= now
        ]
        for other in overdue:
            self._drop(other)
        return entry

    def wait_deadline(self, uid: str, now: float) -> float | None:
        """Until when a request for pod `uid` should wait for binds in flight; None when
        there is nothing to wait for. Jobs with an overdue pending pod are skipped (held
        or lost: waiting again would only add latency), as is the pod's own earlier
        answer (it is being scheduled again)."""
        latest: float | None = None
        for entries in self._by_job.values():
            if _held_by_permit(entries.values()):
                continue
            job_latest: float | None = None
            for other, pending in entries.items():
                if other == uid:
                    continue
                deadline = pending.answered_at + self.wait_seconds
                if deadline <= now:
                    job_latest = None
                    break
                job_latest = deadline if job_latest is None else max(job_latest, deadline)
            if job_latest is not None:
                latest = job_latest if latest is None else max(latest, job_latest)
        return latest

    def expire(self, now: float) -> None:
        """Drop entries answered more than `ttl_seconds` ago."""
        stale = [uid for uid, p in self._by_uid.items() if p.answered_at + self.ttl_seconds <= now]
        for uid in stale:
            self._drop(uid)

    def _drop(self, uid: str) -> None:
        entry = self._by_uid.pop(uid, None)
        if entry is None:
            return
        entries = self._by_job[entry.job]
        del entries[uid]
        if not entries:
            del self._by_job[entry.job]


def _held_by_permit(pending: Iterable[Pending]) -> bool:
    """Whether these pending pods of one job are a PodGroup's members answered so far,
    fewer than its minMember: Coscheduling's Permit holds their binds until the rest of
    the group is scheduled (module docstring)."""
    entries = tuple(pending)
    groups = {(entry.pod.pod_group, entry.pod.group_min_member) for entry in entries}
    if len(groups) != 1:
        return False
    ((group, min_member),) = groups
    return group is not None and min_member is not None and len(entries) < min_member
