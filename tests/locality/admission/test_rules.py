"""The admission rules as a list: which rule decides a job, that it decides what the
round does, and that docs/extender.md lists them in their order.

Nodes and jobs as in test_assign.py: 8-GPU nodes, pods of 8 GPUs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from locality.admission.config import NodeGroup
from locality.admission.gather import gather
from locality.admission.model import Domain
from locality.admission.pack import open_bins
from locality.admission.round import wider_levels
from locality.admission.round_state import Candidate, Capacity, RoundState
from locality.admission.rules import RULES, decide, listed
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.admission.trials import RoundBins
from tests.locality.admission.test_assign import CONFIG, LOCALITY, NOW, PG, job, nodes
from tests.locality.admission.test_assign import decide as planned


def fresh(pods, states, groups=()):
    """(the one job of `pods` as a candidate, a round with nothing else in it)."""
    gathered = gather(pods, {}, lambda key: pods, LOCALITY, CONFIG)
    [ready] = gathered.jobs
    rooms = {level: level_room(states, level, LOCALITY, groups, None)
             for level in {ready.level, PG, CLUSTER_LEVEL}}
    bins = RoundBins()
    for level, room in rooms.items():
        for value, domain_room in room.domains.items():
            bins.open(Domain(level, value), open_bins(domain_room, []))
    state = RoundState(bins, rooms, Capacity(rooms, [], bins.memo), NOW, CONFIG,
                       wider=wider_levels(LOCALITY))
    return Candidate(ready, bins.asked(ready.demand, ready.pods_per_node),
                     rooms.get(ready.level)), state


def first_rule(pods, states, groups=()):
    """The name of the rule that decides the one job of `pods`, asked in `RULES`' order
    by hand, and its decision."""
    candidate, state = fresh(pods, states, groups)
    for rule in RULES:
        decision = rule(candidate, state)
        if decision is not None:
            return rule.__name__, decision
    raise AssertionError("no rule decided")


@pytest.mark.parametrize("pods, states, groups, rule", [
    # 2 pods x 8 GPUs, pg-a 2 empty nodes: it fits.
    (job("a", 2), nodes("pg-a", 2), (), "admit_best_fit"),
    (job("a", 2, group="none"), nodes("pg-a", 2), (), "release_policy_none"),
    # No node carries a placement group.
    (job("a", 1), nodes("x", 2, unlabeled=True), (), "wait_without_level"),
    # 3 x 8 GPUs, pg-a at most 2 nodes (max 2, 1 seen): never.
    (job("a", 3), nodes("pg-a", 1), (NodeGroup("p4d-a", "p4d", "pg-a", 2),),
     "never_fits_a_domain"),
    # preferred, 3 x 8 GPUs, 2 nodes per domain: no domain ever, but the cluster's 4
    # nodes hold it now: the same rule releases it without a domain.
    (job("a", 3, group="preferred"), nodes("pg-a", 2) + nodes("pg-b", 2), (),
     "never_fits_a_domain"),
    # pg-a's one node is busy; empty, with 2 more, it would hold 3 x 8.
    (job("a", 3), nodes("pg-a", 1, used=8), (NodeGroup("p4d-a", "p4d", "pg-a", 3),),
     "wait_for_room"),
], ids=["fits", "policy-none", "no-level", "never", "preferred-cluster", "no-room"])
def test_the_first_rule_that_decides_decides_what_the_round_does(pods, states, groups,
                                                                   rule):
    # `decide` stops at the same rule as asking them in order by hand, and the round
    # (`assign.plan`) does what that rule decided.
    name, decision = first_rule(pods, states, groups)
    assert name == rule
    assert decide(*fresh(pods, states, groups)) == decision
    round_plan = planned(pods, states, groups)
    # The round numbers the jobs waiting for room afterwards (`Waiting.position`).
    assert (decision.admission, decision.waiting) == (
        round_plan.admissions[0] if round_plan.admissions else None,
        replace(round_plan.waiting[0], position=None) if round_plan.waiting else None)


def test_the_rules_are_the_ones_the_docs_list_in_their_order():
    page = (Path(__file__).resolve().parents[3] / "docs" / "extender.md").read_text()
    shown = page.split("<!-- admission-rules -->\n")[1].split("<!-- /admission-rules -->")[0]
    assert shown == listed(), "run python -m locality.admission.rules and paste it"
    assert [line.split("`")[1] for line in shown.splitlines()] == [
        rule.__name__ for rule in RULES]
