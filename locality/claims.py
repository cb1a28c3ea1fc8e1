"""Where other jobs' pods not placed yet are expected to go: their claims on nodes.

Why: jobs submitted together are scheduled interleaved, one pod at a time, and a pod
of one job sees the room another job's next pods will take as free. Against
kube-scheduler's own scoring that splits jobs (tests/extender/test_interleaved_jobs.py):
job B's parameter server scores the same on job A's PS node as on an empty node
(both are "idle"), MostAllocated breaks the tie toward the fuller node, and then A's
and B's workers, each pulled to its PS, share that node and both jobs spill onto
extra nodes; likewise B picks a placement group whose room A's remaining pods are
about to fill.

A job with pods still to place claims, in order, the room left on the nodes it already
occupies (its counterpart's nodes first: the PS node, where its workers are pulled),
then the most idle nodes of its home group: where the extender will steer those pods.
Claims are soft. The idle term of the score and the choice of groups that "hold" a
job (the group term's preferred groups) read them; filters never do: the room is
really free, and a `required` policy still sizes groups on capacity alone.

Decides: one job's claims (`claims_of_job`). Must not: read the clock, log, mutate
its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from bucketing.resources import Resources
from locality.placement import JobPlacement
from locality.table import NodeTable

_NOTHING = Resources(0, 0, 0)


def claims_of_job(
    placement: JobPlacement,
    occupied: Iterable[str],
    home_group: str | None,
    table: NodeTable,
    taken: Mapping[str, Resources],
    max_pods_per_node: int | None = None,
) -> dict[str, Resources]:
    """The room the job's remaining pods (`placement.remaining`) are expected to take.

    occupied: the job's nodes in the order its pods are pulled to them (counterpart
    nodes first). home_group: where the rest goes, its most idle nodes first (most
    free GPUs, then CPU, then memory: the idle term's order for a GPU job). taken: per
    node, requests already expected beyond its bound pods (assumptions, claims of
    other jobs). Each request shape, largest first, fills the nodes in that order,
    first-fit, as `locality.context.fit_job_into_groups` does; what fits nowhere is
    not claimed. Nodes that take no new pods are skipped. max_pods_per_node: 1 for a
    `spread` job. Cost: O(job nodes + nodes of the home group x log) once per job.
    """
    if not placement.remaining:
        return {}
    order = [name for name in dict.fromkeys(occupied) if name in table]
    if home_group is not None and home_group in table.groups:
        code = table.groups.index(home_group)
        rows = np.flatnonzero((table.group_codes == code) & ~table.closed)
        rows = rows[np.lexsort((-table.free_memory[rows], -table.free_cpu[rows],
                                -table.free_gpu[rows]))]
        listed = set(order)
        order += [table.names[row] for row in rows.tolist() if table.names[row] not in listed]
    claims: dict[str, Resources] = {}
    free: dict[str, list[int]] = {}
    pods_on: dict[str, int] = {}
    for request, count in placement.remaining:
        left = count
        for name in order:
            if left == 0:
                break
            room = free.get(name)
            if room is None:
                state = table[name]
                if not state.node.takes_new_pods:
                    continue
                already = taken.get(name, _NOTHING)
                room = free[name] = [state.free_gpu_milli - already.gpu_milli,
                                     state.free_cpu_milli - already.cpu_milli,
                                     state.free_memory_bytes - already.memory_bytes]
            copies = left
            if max_pods_per_node is not None:
                copies = min(copies, max_pods_per_node - pods_on.get(name, 0))
            for have, want in zip(room, (request.gpu_milli, request.cpu_milli,
                                         request.memory_bytes), strict=True):
                if want > 0:
                    copies = min(copies, max(have, 0) // want)
            if copies:
                room[0] -= copies * request.gpu_milli
                room[1] -= copies * request.cpu_milli
                room[2] -= copies * request.memory_bytes
                claimed = Resources(copies * request.gpu_milli, copies * request.cpu_milli,
                                    copies * request.memory_bytes)
                current = claims.get(name)
                claims[name] = claimed if current is None else current + claimed
                pods_on[name] = pods_on.get(name, 0) + copies
                left -= copies
    return claims
