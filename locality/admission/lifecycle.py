"""A gang's lifecycle as data: every state change the admitter makes, and why.

`TRANSITIONS` lists them (the states are `record.GangState`); `mermaid()` renders the
diagram docs/extender.md shows (`python -m locality.admission.lifecycle` prints it; a
test checks the page holds this rendering). The rules themselves live in `assign` and
`rules` (admission and waiting, `rules.RULES` their order), `preempt` (which gangs a
higher-priority job evicts) and `recovery` (after admission).

Must not: decide anything.
"""

from __future__ import annotations

from locality.admission.record import GangState

W, NEVER, A, R, C, E = (GangState.WAITING, GangState.INADMISSIBLE, GangState.ADMITTED,
                        GangState.RUNNING, GangState.RECOVERING, GangState.EVICTED)
START = "created"
GONE = "deleted"

TRANSITIONS: tuple[tuple[str, str, str], ...] = (
    (START, W.value, "pods gated, not whole or no room"),
    (START, A.value, "whole, and one domain holds it"),
    (START, NEVER.value, "no domain could ever hold it, or a rule it does not model"),
    (W.value, A.value, "room appears"),
    (W.value, NEVER.value, "no domain could ever hold it"),
    (NEVER.value, W.value, "nodes or node groups added"),
    (A.value, R.value, "every member bound and Ready"),
    (A.value, E.value, "not bound within bind_timeout_seconds, not Ready within "
                       "ready_timeout_seconds, a lost member its domain cannot replace, "
                       "or preempted"),
    (A.value, NEVER.value, "evicted past requeue_limit"),
    (R.value, C.value, "a member lost (node, failure, eviction) or not Ready"),
    (C.value, R.value, "its replacement bound and Ready in the domain"),
    (R.value, C.value, "elastic: scaled out, its new workers binding"),
    (C.value, R.value, "elastic: new workers found no room; resized back to the bound"),
    (C.value, E.value, "still short after bind_timeout_seconds, un-Ready after "
                       "ready_timeout_seconds, or preempted"),
    (R.value, E.value, "a lost member its domain cannot replace now (fail fast), or "
                       "preempted whole by a higher-priority job"),
    (C.value, NEVER.value, "evicted past requeue_limit"),
    (E.value, W.value, "owner recreated the pods; backoff over"),
    (E.value, A.value, "backoff over, and one domain holds it"),
    (R.value, A.value, "restarted: every pod new, admitted afresh"),
    (R.value, GONE, "no pod of the job left"),
    (W.value, GONE, "no pod of the job left"),
    (E.value, GONE, "no pod left after requeueAt"),
    (NEVER.value, GONE, "no pod of the job left"),
)


def mermaid() -> str:
    lines = ["stateDiagram-v2"]
    for source, target, why in TRANSITIONS:
        name = {START: "[*]", GONE: "[*]"}
        lines.append(f"    {name.get(source, source)} --> {name.get(target, target)}: {why}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(mermaid(), end="")
