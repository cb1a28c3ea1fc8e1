"""A job's pods as running totals, so a request's cost does not grow with the job's size.

Why: every filter and prioritize call judges a pod by where the rest of its job is.
Walking the job's pods for that costs O(job pods) per request, inside kube-scheduler's
sequential cycle: several times the whole request's cost for a job of thousands of
pods (bench/bench_job_size.py, docs/extender.md "By job size"). The extender's cache keeps a
`JobTally` per job instead, changed by each pod event (`add`, `remove`: O(1)), and
`locality.placement.placement_of_tally` turns it into the job's placement with
C-level copies of O(job's nodes) and Python work only for the job's live assumptions.
The tally also keeps its layout once its owner sets it (`locality.layout`: the placed
pods summed by role, node, group and domain), so the context a request builds from the
placement does not walk the job's nodes either.

The totals, over the pods the cache sees (Failed and Succeeded ones set apart as
`job_placement` treats them; Terminating ones are no members at all, `add`):
- on_node: (node, role) -> unfinished pods bound there;
- waiting: request -> unfinished pods not bound;
- roles: role -> unfinished pods; workers: request -> unfinished workers;
- counted: unfinished pods plus Succeeded ones (the pods a declared job size has
  seen; a Failed pod's replacement is still to come).

`JobTally.of(pods)` builds the same totals from a list: the rebuild
(`locality.placement.job_placement`) is the same code fed all at once.

Must not: read the clock, log, look at other jobs. Mutable: one owner (the cache, on
its event-loop thread), read between changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from bucketing.resources import Resources
from locality.config import LocalityConfig
from locality.jobs import role_of
from locality.layout import JobLayout, bump
from locality.model import Pod, Role


class JobTally:
    """Running totals of one job's pods (module docstring)."""

    __slots__ = ("config", "members", "role_of", "on_node", "waiting", "roles", "workers",
                 "counted", "layout")

    def __init__(self, config: LocalityConfig) -> None:
        self.config = config
        self.members: dict[str, Pod] = {}
        """uid -> the pod as last added, any phase, in the order first added."""
        self.role_of: dict[str, Role] = {}
        """uid -> the member's role (computed once per pod version)."""
        self.on_node: Counter[tuple[str, Role]] = Counter()
        self.waiting: Counter[Resources] = Counter()
        self.roles: Counter[Role] = Counter()
        self.workers: Counter[Resources] = Counter()
        self.counted = 0
        self.layout: JobLayout | None = None
        """`on_node` summed by role, node, group and domain (`locality.layout`), kept
        up to date once its owner sets it; the owner drops it when nodes change."""

    @classmethod
    def of(cls, pods: Iterable[Pod], config: LocalityConfig) -> JobTally:
        """The totals of `pods` (the first of two pods with one uid counts)."""
        tally = cls(config)
        for pod in pods:
            if pod.uid not in tally.members:
                tally.add(pod)
        return tally

    def __len__(self) -> int:
        return len(self.members)

    def add(self, pod: Pod) -> None:
        """Count `pod` (a new pod, or a new version of a member: it replaces the old). A
        Terminating pod is no member: it is leaving, so it neither places the job nor
        counts toward its size (or a restarted job would be pinned to the domain its
        old pods are leaving)."""
        if pod.uid in self.members:
            self.remove(pod.uid)
        if pod.deleting:
            return
        role = role_of(pod, self.config)
        self.members[pod.uid] = pod
        self.role_of[pod.uid] = role
        self._count(pod, role, 1)

    def remove(self, uid: str) -> None:
        """Stop counting the member `uid` (nothing when it is not one)."""
        pod = self.members.pop(uid, None)
        if pod is not None:
            self._count(pod, self.role_of.pop(uid), -1)

    def _count(self, pod: Pod, role: Role, sign: int) -> None:
        if pod.terminal:
            if pod.succeeded:
                self.counted += sign
            return
        self.counted += sign
        bump(self.roles, role, sign)
        if role is Role.WORKER:
            bump(self.workers, pod.request, sign)
        if pod.node_name is not None:
            bump(self.on_node, (pod.node_name, role), sign)
            if self.layout is not None:
                self.layout.add(pod.node_name, role, sign)
        else:
            bump(self.waiting, pod.request, sign)

    def totals(self) -> tuple:
        """Every total, for comparing two tallies (tests)."""
        return (dict(self.on_node), dict(self.waiting), dict(self.roles), dict(self.workers),
                self.counted, dict(self.role_of))

