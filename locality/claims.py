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
from locality.columns import NodeTable
from locality.firstfit import Room, fill
from locality.placement import JobPlacement


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
    first-fit (`locality.firstfit.fill`, the rule group sizing uses); what fits nowhere
    is not claimed. Nodes that take no new pods are skipped. max_pods_per_node: 1 for a
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
    rows = np.array([table.index[name] for name in order], dtype=np.int64)
    gpu, cpu, memory = table.free_after_assumed(taken)
    kinds = sorted({kind for request, _ in placement.remaining for kind, _ in request.devices})
    needed = sum(count for _, count in placement.remaining)
    room = Room(gpu[rows], cpu[rows], memory[rows],
                {kind: table.device_free_after_assumed(kind, taken)[rows] for kind in kinds},
                np.where(table.closed[rows], 0, max_pods_per_node or needed))
    claims: dict[str, Resources] = {}
    for request, count in placement.remaining:
        take, room = fill(room, request, count)
        for position in np.flatnonzero(take).tolist():
            name = order[position]
            copies = int(take[position])
            claimed = Resources(
                copies * request.gpu_milli, copies * request.cpu_milli,
                copies * request.memory_bytes,
                tuple((kind, copies * amount) for kind, amount in request.devices))
            current = claims.get(name)
            claims[name] = claimed if current is None else current + claimed
    return claims
