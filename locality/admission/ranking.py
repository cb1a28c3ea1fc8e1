"""How an admission round ranks the domains of a level for a job: one named order per
question, each written once. Smaller ranks first: each function gives a tuple that
`min` and a heap compare as it is, the domain's name last so no two domains tie.

- `best_fit` (rule 3 of `assign`, and every rule "chosen as in 3": a `preferred` job's
  widening, a worker plan's size): among the domains that hold all of a job's pods now,
  the fewest new nodes, then the least free GPU left after it (best fit keeps big holes
  for big jobs), then the name.
- `most_placed` (rule 4: the domain a job waiting for room is told about, and the one it
  is released into when room is unknown): among all, the most of its pods placed, then
  the fewest nodes opened (this round's and the job's new ones), then the name.
- `largest_size` (rule 7: an elastic job resized to fit): the largest size the domain
  holds, then as `best_fit`.
- `fewest_removed` (rule 8: KOD2's scale-in): the fewest workers of lighter gangs
  removed, then the name.
- `gentlest_preemption` (rule 5): the lowest priority among the victims, then the least
  GPU evicted, then the fewest gangs, then the name.

`trials.RoundBins.search` keeps the first two in heaps per demand; `assign`'s rules and
`preempt.choose` take the minimum of the others.

Must not: pack, read the clock, log.
"""

from __future__ import annotations

from collections.abc import Sequence

from locality.admission.model import Gang

NO_VICTIM = -2**31
"""The priority `gentlest_preemption` gives a domain that needs no victim."""


def best_fit(new_nodes: int, free_gpu_milli: int, name: str) -> tuple[int, int, str]:
    """Fewest new nodes, then least free GPU (milli) left after, then name."""
    return (new_nodes, free_gpu_milli, name)


def most_placed(placed: int, opened: int, name: str) -> tuple[int, int, str]:
    """Most pods placed, then fewest nodes opened in all (so far and for the job), then
    name."""
    return (-placed, opened, name)


def largest_size(size: int, new_nodes: int, free_gpu_milli: int, name: str
                 ) -> tuple[int, int, int, str]:
    """Largest size held, then `best_fit` at that size."""
    return (-size, *best_fit(new_nodes, free_gpu_milli, name))


def fewest_removed(removed: int, name: str) -> tuple[int, str]:
    """Fewest workers scaled in, then name."""
    return (removed, name)


def gentlest_preemption(victims: Sequence[Gang], name: str) -> tuple[int, int, int, str]:
    """Lowest highest victim priority (none: lowest of all), then least victim GPU
    (milli), then fewest victims, then name."""
    return (max((victim.priority for victim in victims), default=NO_VICTIM),
            sum(victim.gpu_milli for victim in victims), len(victims), name)
