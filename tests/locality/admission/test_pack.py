"""The packer opens the nodes a shape needs from a node group at once: the same nodes,
rows and placements as opening them one at a time (the rule `pack` states), on random
rooms, node groups (one of them tainted) and demands."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bucketing.resources import Resources
from locality.admission.pack import Bins, _fill_allowed, may_use, pack
from locality.constraints import PodConstraints, Taint, Toleration
from locality.firstfit import Room
from locality.model import Node

TAINT = Taint("dedicated", "team-b", "NoSchedule")
TOLERATES = PodConstraints(tolerations=(Toleration("dedicated", "Equal", "team-b",
                                                   "NoSchedule"),))


def one_at_a_time(bins: Bins, demand, pods_per_node=None) -> int:
    """`pack` as it opened nodes before: one per step, the first group with room left."""
    per_node = pods_per_node or sum(count for _, _, count in demand)
    room = bins.room.with_pods(per_node)
    placed = 0
    for request, constraints, count in demand:
        take, room = _fill_allowed(room, request, count, bins.allowed(constraints))
        left = count - int(take.sum())
        while left > 0:
            entry = next((e for e in bins.pool if e[2] > 0
                          and Room.of([e[1]], bins.kinds, 1).copies(request)[0]
                          and may_use(constraints, e[3])), None)
            if entry is None:
                break
            entry[2] -= 1
            bins.opened += 1
            room = room.extended(Room.of([entry[1]], bins.kinds, per_node))
            bins.room = room
            bins.opened_nodes.append(entry[3])
            take, room = _fill_allowed(room, request, left, bins.allowed(constraints))
            left -= int(take.sum())
        placed += count - left
    bins.room = room
    return placed


def bins_of(free, groups) -> Bins:
    pool = [[f"g{index}", Resources.of(gpus, 96, 768), count,
             Node(f"(new g{index})", {}, Resources.of(gpus, 96, 768),
                  taints=(TAINT,) if tainted else ())]
            for index, (gpus, count, tainted) in enumerate(groups)]
    return Bins(Room.of([Resources.of(gpus, 96, 768) for gpus in free], [], 0), pool, [])


shapes = st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(1, 12), st.booleans()),
                  min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(free=st.lists(st.integers(0, 8), max_size=4),
       groups=st.lists(st.tuples(st.sampled_from([4, 8]), st.integers(0, 6), st.booleans()),
                       max_size=3),
       shapes=shapes, per_node=st.sampled_from([None, 1, 2]))
def test_opening_a_groups_nodes_at_once_places_as_one_at_a_time(free, groups, shapes,
                                                                  per_node):
    demand = tuple((Resources.of(gpus, 1, 1), TOLERATES if tolerates else PodConstraints(),
                    count)
                   for gpus, count, tolerates in sorted(shapes, key=lambda s: -s[0]))
    fast, slow = bins_of(free, groups), bins_of(free, groups)
    assert pack(fast, demand, per_node) == one_at_a_time(slow, demand, per_node)
    assert fast.opened == slow.opened
    assert [n.name for n in fast.opened_nodes] == [n.name for n in slow.opened_nodes]
    assert [entry[2] for entry in fast.pool] == [entry[2] for entry in slow.pool]
    assert fast.room.gpu.tolist() == slow.room.gpu.tolist()
    assert fast.room.pods.tolist() == slow.room.pods.tolist()
