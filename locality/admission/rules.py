"""The admission rules a ready job meets, in order: the first that decides, decides.

`RULES` is the order (`python -m locality.admission.rules` lists it as docs/extender.md
shows it; a test checks the page). Each rule is a function of the job (`Candidate`) and
the round so far (`RoundState`) that returns a `Decision`, or None to pass the job on to
the next rule; a rule takes room (`state.bins`) only when it decides. The last rule
always decides. The numbers in the rules' docstrings are those of `assign`'s docstring,
which states the whole policy (the order jobs are taken in, reservations, scale-out);
the elastic rules are in `elastic_rules`, the domain orders in `ranking`.

Must not: read the clock (`state.now` is passed), log, mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from locality.admission.elastic_rules import resize_to_fit, resize_to_worker_plan, scale_in_lighter
from locality.admission.gang_preemption import choose
from locality.admission.model import Admission, Domain, WaitCode, Waiting
from locality.admission.pack import pack
from locality.admission.round_state import (
    Candidate,
    Decision,
    RoundState,
    cluster_holds,
    search_of,
)
from locality.admission.snapshot import CLUSTER_LEVEL, LevelRoom
from locality.model import Locality

Rule = Callable[[Candidate, RoundState], Decision | None]


def join_recorded_domain(candidate: Candidate, state: RoundState) -> Decision | None:
    """Pods that already carry a domain join it if it holds them now, else wait there (3)."""
    job = candidate.job
    recorded = job.recorded
    if recorded is None:
        return None
    target = state.bins.get(recorded)
    room = state.rooms.get(recorded.level)
    domain_room = room.domains.get(recorded.value) if room else None
    if target is None or domain_room is None:
        return Decision(waiting=Waiting(job.key, job.gated, WaitCode.NO_FIT, (
            f"its job was admitted into {recorded}, which has no node now and no node "
            "group that can add one")))
    trial = target.copy()
    placed = pack(trial, job.demand, job.pods_per_node)
    if placed < len(job.gated):
        return Decision(waiting=Waiting(job.key, job.gated, WaitCode.NO_FIT, (
            f"its job was admitted into {recorded}, which holds {placed} of these "
            f"{len(job.gated)} pods now, even with the nodes the autoscaler can add")))
    new_nodes = trial.opened - target.opened
    state.bins[recorded] = trial
    return Decision(admission=Admission(
        job.key, job.gated, recorded, domain_room.label_key, job.policy.placement_group,
        new_nodes, f"joins {recorded}, where its other pods were admitted"))


def release_policy_none(candidate: Candidate, state: RoundState) -> Decision | None:
    """Placement-group policy `none`: released without a domain (3)."""
    job = candidate.job
    if job.policy.placement_group is not Locality.NONE:
        return None
    return Decision(admission=Admission(job.key, job.gated, None, None, Locality.NONE, 0,
                                        "placement-group policy none: no domain"))


def wait_without_level(candidate: Candidate, state: RoundState) -> Decision | None:
    """No domain at its level: `no_level` (`preferred`: the cluster's room, 4)."""
    job, room = candidate.job, candidate.room
    if room is not None and room.domains:
        return None
    reason = (f"no node carries a {job.level} label and no node group names a "
              f"{job.level} domain")
    if state.unknown:
        reason += f"; unknown room: {described(state.unknown)}"
    return unplaced(candidate, WaitCode.NO_LEVEL, reason, state)


def admit_best_fit(candidate: Candidate, state: RoundState) -> Decision | None:
    """A domain of its level holds it now: the best fit takes it (3)."""
    best = search_of(candidate, state).best
    if best is None:
        return None
    job, room = candidate.job, candidate.room
    assert room is not None
    _, domain = best
    new_nodes = state.bins.take(domain, job.demand, job.pods_per_node)
    return Decision(admission=Admission(
        job.key, job.gated, domain, room.domains[domain.value].label_key,
        job.policy.placement_group, new_nodes,
        f"fits {domain}" + (f" with {new_nodes} new node(s)" if new_nodes else "")))


def widen_preferred(candidate: Candidate, state: RoundState) -> Decision | None:
    """`preferred`: the nearest wider level with a domain that holds it now (4)."""
    job, asked = candidate.job, candidate.asked
    if job.policy.placement_group is not Locality.PREFERRED:
        return None
    for level in state.wider.get(job.level, ()):
        room = state.rooms.get(level)
        if room is None:
            continue
        best = state.bins.search(level, room.domains, asked).best
        if best is not None:
            _, domain = best
            new_nodes = state.bins.take(domain, asked.demand, asked.per_node)
            return Decision(admission=Admission(
                job.key, job.gated, domain, room.domains[domain.value].label_key,
                Locality.PREFERRED, new_nodes,
                f"no {job.level} domain holds it; widened (policy preferred) to {domain}"
                + (f" with {new_nodes} new node(s)" if new_nodes else "")))
    return None


def never_fits_a_domain(candidate: Candidate, state: RoundState) -> Decision | None:
    """All room known, no domain could ever hold it: `inadmissible` (`preferred`: 4)."""
    job = candidate.job
    if state.unknown or state.ever.holds(candidate.asked, job.level):
        return None
    return unplaced(candidate, WaitCode.INADMISSIBLE, (
        f"no {job.level} domain could hold its {len(job.gated)} pods even empty, with every "
        f"node the autoscaler can add, counting only the nodes its pods may use "
        f"(nodeSelector, node affinity, tolerations){room_notes(candidate)}"), state)


def wait_behind_head(candidate: Candidate, state: RoundState) -> Decision | None:
    """`required`, and it would fit the room an older job holds: `held` (6)."""
    job = candidate.job
    if state.head is None or job.policy.placement_group is not Locality.REQUIRED:
        return None
    held_job, held_domain, before = state.head
    if state.bins.trial(held_domain, candidate.asked, before).placed != len(job.gated):
        return None
    return Decision(waiting=Waiting(job.key, job.gated, WaitCode.HELD, (
        f"{held_domain} would hold it, but that room is held for {held_job.key} "
        f"(higher in admission order and waiting longer than "
        f"{state.config.head_reserve_after_seconds:g} s)")))


def preempt_lower(candidate: Candidate, state: RoundState) -> Decision | None:
    """It may preempt: lower-priority gangs evicted whole in one domain, `preempting` (5)."""
    job, asked, room, bins = candidate.job, candidate.asked, candidate.room, state.bins
    if not job.preempts or not (state.gangs or state.leaving) or cluster_holds(
            candidate, state):
        return None
    assert room is not None
    question = state.unsatisfied.key(job, asked, frozenset(state.taken), bins.changes)
    preemption = None if state.unsatisfied.known(question) else choose(
        job, job.demand, {Domain(job.level, v): bins[Domain(job.level, v)]
                          for v in room.domains}, state.gangs, state.leaving,
        frozenset(state.taken))
    if preemption is None:
        state.unsatisfied.add(question)
        return None
    state.taken.update(victim.job for victim in preemption.victims)
    # What it can use there now is its: no job after it takes that room.
    bins.take(preemption.domain, job.demand, job.pods_per_node)
    return Decision(waiting=Waiting(job.key, job.gated, WaitCode.PREEMPTING,
                                    preemption.note), preemption=preemption)


def release_into_unknown_room(candidate: Candidate, state: RoundState) -> Decision | None:
    """Some room unknown: released into the domain holding most of it (4)."""
    if not state.unknown or cluster_holds(candidate, state):
        return None
    job, room = candidate.job, candidate.room
    most = search_of(candidate, state).most
    assert room is not None and most is not None
    _, domain, placed = most
    new_nodes = state.bins.take(domain, job.demand, job.pods_per_node)
    return Decision(admission=Admission(
        job.key, job.gated, domain, room.domains[domain.value].label_key,
        job.policy.placement_group, new_nodes,
        f"released into {domain} for the autoscaler to grow: what is known holds "
        f"{placed} of its {len(job.gated)} pods there, and the room of "
        f"{described(state.unknown)} is unknown (docs/extender.md, \"Room the autoscaler "
        "can add\": make it known, and jobs wait for known room instead)",
        tuple(state.unknown)))


def wait_for_room(candidate: Candidate, state: RoundState) -> Decision:
    """Else it waits for room, `no_fit`; the first such job may hold room (4, 6)."""
    job = candidate.job
    most = search_of(candidate, state).most
    assert most is not None
    _, domain, placed = most
    reason = (f"no {job.level} domain holds its {len(job.gated)} pods now, even with the "
              f"nodes the autoscaler can add; the most is {placed} in {domain}"
              f"{room_notes(candidate)}")
    decision = unplaced(candidate, WaitCode.NO_FIT, reason, state)
    waited = state.now - job.last_created_at
    held, expires = state.config.head_reserve_after_seconds, state.config.head_hold_seconds
    if (state.head is None and job.policy.placement_group is Locality.REQUIRED
            and held <= waited and (expires is None or waited < held + expires)):
        state.head = (job, domain, state.bins[domain])
        state.bins.take(domain, job.demand, job.pods_per_node)  # all of it that room holds
    return decision


RULES: tuple[Rule, ...] = (
    join_recorded_domain,
    release_policy_none,
    wait_without_level,
    resize_to_worker_plan,
    admit_best_fit,
    resize_to_fit,
    widen_preferred,
    never_fits_a_domain,
    wait_behind_head,
    scale_in_lighter,
    preempt_lower,
    release_into_unknown_room,
    wait_for_room,
)


def decide(candidate: Candidate, state: RoundState) -> Decision:
    """The decision of the first rule of `RULES` that decides."""
    for rule in RULES:
        decision = rule(candidate, state)
        if decision is not None:
            return decision
    raise AssertionError("wait_for_room always decides")


def listed() -> str:
    """`RULES` as docs/extender.md lists them: a numbered line per rule."""
    return "".join(f"{index}. `{rule.__name__}`: {(rule.__doc__ or '').splitlines()[0]}\n"
                   for index, rule in enumerate(RULES, 1))


def unplaced(candidate: Candidate, code: WaitCode, reason: str,
             state: RoundState) -> Decision:
    """`required` waits, whole. `preferred` is released without a domain when the whole
    cluster's room holds all its pods now (which it then takes), never in part: else it
    waits, whole, and is inadmissible when the cluster could never hold it."""
    job, asked, bins = candidate.job, candidate.asked, state.bins
    if job.policy.placement_group is Locality.REQUIRED:
        return Decision(waiting=Waiting(job.key, job.gated, code, reason))
    cluster = Domain(CLUSTER_LEVEL, CLUSTER_LEVEL)
    whole = bins.get(cluster)
    size = len(job.gated)
    if whole is not None and bins.fits(cluster, asked):
        bins.take(cluster, asked.demand, asked.per_node)
        return Decision(admission=Admission(
            job.key, job.gated, None, None, Locality.PREFERRED, 0,
            f"released without a domain (policy preferred): {reason}; the cluster holds "
            f"all {size} pods"))
    if whole is None or not state.ever.holds(asked, CLUSTER_LEVEL):
        return Decision(waiting=Waiting(job.key, job.gated, WaitCode.INADMISSIBLE, (
            f"{reason}; the whole cluster could not hold its {size} pods even empty, with "
            "every node the autoscaler can add (policy preferred never binds part of a job)")))
    # The cluster could hold it: it waits for room, even if no single domain ever could.
    code = WaitCode.NO_FIT if code is WaitCode.INADMISSIBLE else code
    return Decision(waiting=Waiting(job.key, job.gated, code, (
        f"{reason}; the whole cluster does not hold its {size} pods now either (policy "
        "preferred never binds part of a job)")))


def room_notes(candidate: Candidate) -> str:
    """What the reason adds about its level's room: nodes not counted, node groups
    without a known shape."""
    room: LevelRoom | None = candidate.room
    assert room is not None
    notes = ""
    if room.unlabeled:
        notes += f" ({room.unlabeled} node(s) carry no {candidate.job.level} label: not counted)"
    if room.notes:
        notes += "; " + "; ".join(room.notes)
    return notes


def described(unknown: Sequence[str]) -> str:
    shown = "; ".join(unknown[:3])
    return shown + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")



if __name__ == "__main__":
    print(listed(), end="")
