"""Packing trials remembered: does a demand fit a domain's room now, with how many new
nodes and how much GPU left, packed once per (room, demand) and not again until that
room changes.

Why: a round tries every waiting job against every domain of its level. Between two
jobs of a round only the domain the first one took has changed; between two rounds
most domains have not changed at all; and jobs of one shape ask the same question. So
`RoundBins`, a round's working room per domain, keeps a digest of each domain's current
room (its free room row by row, the nodes it opened, the nodes its groups can still
add), recomputed only when the round changes that domain, and `TrialMemo` keeps the
answers by (domain, digest, demand) across rounds. A domain whose nodes (labels, taints,
allocatable) or node groups differ from the last round's starts afresh, since which
rows a pod may use depends on them.

An answer is exactly what `pack` gives on a copy (memoised, never approximated; tests
compare plans made with and without the memo). The room a job takes is packed again
when it takes it (`RoundBins.take`): one pack per decision, not one per question.

Must not: read the clock, log. A memo serves one round at a time (not thread-safe).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from hashlib import blake2b

import numpy as np

from locality.admission.model import Demand, Domain
from locality.admission.pack import Bins, pack
from locality.admission.ranking import best_fit, most_placed
from locality.model import Node


@dataclass(frozen=True, slots=True)
class Trial:
    """What packing a demand into a domain's room gives: pods placed, nodes its groups
    would add for them, GPU (milli) left free on its rows after."""

    placed: int
    new_nodes: int
    free_gpu_milli: int


class Asked:
    """A demand and its pods-per-node bound, hashed once (a demand hashes its requests
    and constraints: too slow to repeat for every domain)."""

    __slots__ = ("demand", "per_node", "pods", "_hash")

    def __init__(self, demand: Demand, per_node: int | None) -> None:
        self.demand = demand
        self.per_node = per_node
        self.pods = sum(count for _, _, count in demand)
        self._hash = hash((demand, per_node))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Asked) and self._hash == other._hash
                                 and self.per_node == other.per_node
                                 and self.demand == other.demand)


class TrialMemo:
    """Answers across rounds, at most `capacity` of them (least recently used dropped
    first; 0 keeps none: every trial is packed, the reference the tests compare with).
    100,000 answers take about 30 MB (tracemalloc, Python 3.11).
    hits and misses count the trials answered from memory and packed."""

    def __init__(self, capacity: int = 100_000) -> None:
        self.capacity = capacity
        self._answers: OrderedDict[tuple, Trial] = OrderedDict()
        self._domains: dict[Domain, tuple[int, tuple, tuple]] = {}
        self._generations = 0
        self._asked: dict[Asked, Asked] = {}
        self.hits = 0
        self.misses = 0

    def generation(self, domain: Domain, bins: Bins) -> int:
        """The generation of `domain`'s nodes and node groups as `bins` has them: the
        same as the last round's when they are equal, else a new one (so answers about
        the old nodes are never given for the new)."""
        groups = tuple((entry[0], entry[1], entry[3]) for entry in bins.pool)
        seen = self._domains.get(domain)
        if seen is not None and _same_nodes(seen[1], bins.nodes) and len(seen[2]) == len(
                groups) and all(a[:2] == b[:2] and _same_node(a[2], b[2])
                                for a, b in zip(seen[2], groups, strict=True)):
            return seen[0]
        self._generations += 1
        self._domains[domain] = (self._generations, bins.nodes, groups)
        return self._generations

    def asked(self, demand: Demand, per_node: int | None) -> Asked:
        """The one `Asked` for this demand (equal demands share it: keys compare by
        identity)."""
        fresh = Asked(demand, per_node)
        found = self._asked.setdefault(fresh, fresh)
        if len(self._asked) > self.capacity:
            self._asked.clear()
        return found

    def answer(self, key: tuple[bytes, Asked], bins: Bins, asked: Asked) -> Trial:
        found = self._answers.get(key)
        if found is not None:
            self.hits += 1
            self._answers.move_to_end(key)
            return found
        self.misses += 1
        trial = bins.copy()
        placed = pack(trial, asked.demand, asked.per_node)
        found = Trial(placed, trial.opened - bins.opened, trial.free_gpu_milli())
        if self.capacity > 0:
            self._answers[key] = found
            if len(self._answers) > self.capacity:
                self._answers.popitem(last=False)
        return found


def _same_node(a: Node | None, b: Node | None) -> bool:
    """The same to a pod's constraints (`pack.may_use` reads these): a node object
    the cache replaced on a status update, or a node group's template built again for
    this round, is still the same node."""
    return a is b or (a is not None and b is not None and a.name == b.name
                      and a.taints == b.taints and a.labels == b.labels)


def _same_nodes(a: tuple[Node, ...], b: tuple[Node, ...]) -> bool:
    return len(a) == len(b) and all(map(_same_node, a, b))


def _entry_of(bins: Bins, opened: Node | None) -> int:
    """Which node group's template an opened node is (its entry in `pool`; templates
    are built again each round, so not the object)."""
    return next(index for index, entry in enumerate(bins.pool) if entry[3] is opened)


def digest(bins: Bins, domain: Domain, generation: int) -> bytes:
    """What decides a trial's answer besides the demand: the domain and the generation
    of its nodes and node groups (`TrialMemo.generation`), each row's free room, the
    nodes opened (by template) and the nodes each group can still add."""
    hashed = blake2b(digest_size=16)
    hashed.update(repr((domain.level, domain.value, generation)).encode())
    room = bins.room
    for column in (room.gpu, room.cpu, room.memory, *(room.devices[k] for k in bins.kinds)):
        hashed.update(np.ascontiguousarray(column, dtype=np.int64).data)
    hashed.update(repr((len(room), tuple(bins.kinds), bins.opened,
                        tuple(entry[2] for entry in bins.pool),
                        tuple(_entry_of(bins, node) for node in bins.opened_nodes))).encode())
    return hashed.digest()


@dataclass(frozen=True, slots=True)
class Search:
    """The domains of a level ranked for one demand (`ranking`).

    best: among the domains that hold all its pods, the first by `ranking.best_fit`
    (its rank and that domain); None when none does. most: among all, the first by
    `ranking.most_placed`, that domain and the pods it places."""

    best: tuple[tuple, Domain] | None
    most: tuple[tuple, Domain, int] | None


class _Ranking:
    """One level's domains ranked for one demand within a round: heaps whose stale
    entries (a domain changed since) are dropped when they reach the top."""

    __slots__ = ("seen", "stamps", "fits", "most")

    def __init__(self) -> None:
        self.seen = 0  # how much of the round's change log is in the heaps
        self.stamps: dict[Domain, int] = {}
        self.fits: list[tuple[tuple, int, Domain]] = []
        self.most: list[tuple[tuple, int, Domain, int]] = []


class RoundBins(MutableMapping[Domain, Bins]):
    """A round's working room per domain. Replace a domain's `Bins` (`rb[d] = bins`,
    `take`), never change one in place: the digest of a domain is dropped only when it
    is replaced."""

    def __init__(self, memo: TrialMemo | None = None) -> None:
        self.memo = memo if memo is not None else TrialMemo()
        self._bins: dict[Domain, Bins] = {}
        self._generation: dict[Domain, int] = {}
        self._digests: dict[Domain, bytes] = {}
        self._stamps: dict[Domain, int] = {}
        self._changes: list[Domain] = []  # each replacement of a domain's room, in order
        self._rankings: dict[tuple[str, Asked, frozenset[str] | None], _Ranking] = {}

    def open(self, domain: Domain, bins: Bins) -> None:
        """The domain's room at the round's start."""
        self._generation[domain] = self.memo.generation(domain, bins)
        self[domain] = bins

    def __getitem__(self, domain: Domain) -> Bins:
        return self._bins[domain]

    def __setitem__(self, domain: Domain, bins: Bins) -> None:
        self._bins[domain] = bins
        self._digests.pop(domain, None)
        self._stamps[domain] = len(self._changes)
        self._changes.append(domain)

    def __delitem__(self, domain: Domain) -> None:
        del self._bins[domain]
        self._digests.pop(domain, None)

    def __iter__(self) -> Iterator[Domain]:
        return iter(self._bins)

    @property
    def changes(self) -> int:
        """How many times any domain's room was replaced this round: equal counts, the
        same rooms (a question answered at one count holds until it moves)."""
        return len(self._changes)

    def __len__(self) -> int:
        return len(self._bins)

    def asked(self, demand: Demand, per_node: int | None) -> Asked:
        """A demand made ready to ask many domains (hashed once)."""
        return self.memo.asked(demand, per_node)

    def trial(self, domain: Domain, asked: Asked, state: Bins | None = None) -> Trial:
        """Packing `asked` into the domain's room now (or into `state`, an earlier room
        of that domain, e.g. a held one), answered from memory when it was packed before."""
        if state is None:
            bins = self._bins[domain]
            key = self._digests.get(domain)
            if key is None:
                key = self._digests[domain] = digest(bins, domain, self._generation_of(domain))
        else:
            bins, key = state, digest(state, domain, self._generation_of(domain))
        return self.memo.answer((key, asked), bins, asked)

    def _generation_of(self, domain: Domain) -> int:
        generation = self._generation.get(domain)
        if generation is None:  # a domain set without `open`
            generation = self._generation[domain] = self.memo.generation(
                domain, self._bins[domain])
        return generation

    def search(self, level: str, values: Iterable[str], asked: Asked,
               within: frozenset[str] | None = None) -> Search:
        """The domains `values` of `level` (only those `within`, when given) ranked
        for `asked` (`Search`), as a loop over all of them with `trial` would rank them.
        The first search of a (level, demand, within) in a round tries every domain;
        later ones only the domains changed since, so jobs of one shape cost one trial
        per domain a job took, not one per domain each."""
        key = (level, asked, within)
        ranking = self._rankings.get(key)
        if ranking is None:
            ranking = self._rankings[key] = _Ranking()
            changed: Iterable[Domain] = [Domain(level, value) for value in values
                                         if within is None or value in within]
        else:
            changed = {domain for domain in self._changes[ranking.seen:]
                       if domain.level == level and domain in ranking.stamps}
        ranking.seen = len(self._changes)
        for domain in changed:
            trial = self.trial(domain, asked)
            stamp = ranking.stamps[domain] = self._stamps[domain]
            if trial.placed == asked.pods:
                heapq.heappush(ranking.fits, (
                    best_fit(trial.new_nodes, trial.free_gpu_milli, domain.value), stamp,
                    domain))
            heapq.heappush(ranking.most, (
                most_placed(trial.placed, self._bins[domain].opened + trial.new_nodes,
                            domain.value), stamp, domain, trial.placed))
        stamps = ranking.stamps
        while ranking.fits and stamps[ranking.fits[0][2]] != ranking.fits[0][1]:
            heapq.heappop(ranking.fits)
        while ranking.most and stamps[ranking.most[0][2]] != ranking.most[0][1]:
            heapq.heappop(ranking.most)
        best = ranking.fits[0] if ranking.fits else None
        most = ranking.most[0] if ranking.most else None
        return Search(None if best is None else (best[0], best[2]),
                      None if most is None else (most[0], most[2], most[3]))

    def fits(self, domain: Domain, asked: Asked) -> bool:
        """The domain's room holds all of `asked`'s pods now."""
        return self.trial(domain, asked).placed == asked.pods

    def take(self, domain: Domain, demand: Demand, per_node: int | None = None) -> int:
        """The domain's room after `demand` took what it can use there: the new nodes
        it opened (pods it could not place take nothing)."""
        before = self._bins[domain]
        after = before.copy()
        pack(after, demand, per_node)
        self[domain] = after
        return after.opened - before.opened
