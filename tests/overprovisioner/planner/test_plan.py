"""Table tests of the placeholder plan: delta, limits, cost cap, balance, ladder, fallback."""

from __future__ import annotations

import pytest

from bucketing.catalog import load_catalog
from common.errors import ConfigError, InputError
from overprovisioner.config.plan_config import BucketLimits, PlanConfig
from overprovisioner.planner.plan import BucketObservation, make_plan

CATALOG = load_catalog("aws")
G4 = "g4dn.xlarge"  # 0.526 $/h
G5 = "g5.xlarge"  # 1.006 $/h
P4 = "p4d.24xlarge"


def obs(kind=G4, group="", forecast=0.0, in_use=0, free=0, placeholders=0, pending=0):
    return BucketObservation(kind, group, forecast, in_use, free, placeholders, pending)


@pytest.mark.parametrize(
    "observation, expected",
    [
        # 10 forecast - (6 in use + 0 pending) = 4; the free node takes one of them
        (obs(forecast=10, in_use=6, free=1), 4),
        # 9.2 - 6 = 3.2 -> ceil 4
        (obs(forecast=9.2, in_use=6), 4),
        # 3.0000000001 is float noise: 3 - 3 = 0
        (obs(forecast=3.0000000001, in_use=3), 0),
        # forecast below capacity: 5 - 6 = -1 -> never negative: 0 (the free nodes drain)
        (obs(forecast=5, in_use=6, free=2), 0),
        # pending pods' nodes are coming anyway: 10 - (6 + 3) = 1
        (obs(forecast=10, in_use=6, pending=3), 1),
        # existing placeholders do not count as capacity: still 10 - 6 = 4 (the apply diffs)
        (obs(forecast=10, in_use=6, placeholders=7), 4),
    ],
    ids=["free-absorbs", "round-up", "float-noise", "never-negative", "pending-counts",
         "existing-ignored"],
)
def test_delta(observation, expected):
    plan = make_plan([observation], PlanConfig(), CATALOG)
    assert plan.wanted(G4) == expected
    assert plan.buckets[0].capped_by is None


@pytest.mark.parametrize(
    "limits, expected, capped_by",
    [
        (BucketLimits(min=0, max=2), 2, "max"),  # delta 4 > max 2
        (BucketLimits(min=6, max=None), 6, "min"),  # delta 4 < min 6
        (BucketLimits(min=1, max=5), 4, None),  # 1 <= 4 <= 5
    ],
    ids=["max", "min", "inside"],
)
def test_limits(limits, expected, capped_by):
    # delta = 10 - 6 = 4
    plan = make_plan([obs(forecast=10, in_use=6)], PlanConfig(buckets={G4: limits}), CATALOG)
    assert (plan.wanted(G4), plan.buckets[0].capped_by) == (expected, capped_by)


@pytest.mark.parametrize(
    "cap, expected_g4, expected_g5",
    [
        # wanted 3 x 0.526 + 2 x 1.006 = 3.59 $/h; cap 10 -> untouched
        (10.0, 3, 2),
        # cap 2.6: excess 0.99 -> cut ceil(0.99 / 1.006) = 1 g5 -> 3 x 0.526 + 1.006 = 2.584
        (2.6, 3, 1),
        # cap 1.6: excess 1.99 -> cut both g5 (2.012 >= 1.99) -> 1.578 $/h
        (1.6, 3, 0),
        # cap 1.0: excess 2.59 -> 2 g5 (2.012), then ceil(0.578 / 0.526) = 2 g4 -> 0.526
        (1.0, 1, 0),
    ],
    ids=["under-cap", "cut-one-expensive", "cut-all-expensive", "then-cheaper"],
)
def test_cost_cap_cuts_most_expensive_first(cap, expected_g4, expected_g5):
    observed = [obs(G4, forecast=3), obs(G5, forecast=2)]
    plan = make_plan(observed, PlanConfig(cost_cap_per_hour=cap), CATALOG)
    assert (plan.wanted(G4), plan.wanted(G5)) == (expected_g4, expected_g5)
    assert plan.cost_per_hour <= cap + 1e-9
    assert plan.cost_per_hour == pytest.approx(expected_g4 * 0.526 + expected_g5 * 1.006)


def test_cost_cap_respects_min():
    # G5 min 2 costs 2.012 of the 2.1 cap; the 3 g4 (1.578) must go: 2.012 + 0 <= 2.1
    config = PlanConfig(cost_cap_per_hour=2.1, buckets={G5: BucketLimits(min=2)})
    plan = make_plan([obs(G4, forecast=3), obs(G5, forecast=2)], config, CATALOG)
    assert (plan.wanted(G4), plan.wanted(G5)) == (0, 2)
    assert plan.buckets[0].capped_by == "cost_cap"


@pytest.mark.parametrize(
    "block, nodes_now, expected",
    [
        # 5 placeholders, blocks of 1, equal groups: a b a b a -> a 3, b 2
        (1, {"a": 0, "b": 0}, {"a": 3, "b": 2}),
        # blocks of 2: a(2) b(2) a(1) -> a 3, b 2
        (2, {"a": 0, "b": 0}, {"a": 3, "b": 2}),
        # blocks of 4: a(4) b(1): a whole scale-up stays in one group
        (4, {"a": 0, "b": 0}, {"a": 4, "b": 1}),
        # group a already has 4 nodes: b gets blocks until 4 + 0 vs 0 + k balances:
        # b1 b2 b3 b4 (tie 4-4 -> a) a5 -> a 1, b 4
        (1, {"a": 4, "b": 0}, {"a": 1, "b": 4}),
    ],
    ids=["round-robin", "blocks-of-2", "block-kept-in-group", "fill-the-smaller-group"],
)
def test_placement_group_balance(block, nodes_now, expected):
    # forecast 5 + used now, all in group "" so the type-level delta is 5
    used = sum(nodes_now.values())
    observed = [obs(group=g, in_use=n) for g, n in nodes_now.items()]
    observed.append(obs(group="", forecast=5 + used))
    config = PlanConfig(placement_groups={G4: ("a", "b")}, virtual_instance_nodes=block)
    plan = make_plan(observed, config, CATALOG)
    assert {g: plan.wanted(G4, g) for g in ("a", "b")} == expected
    assert plan.wanted(G4, "") == 0
    assert plan.total == 5


@pytest.mark.parametrize(
    "existing, wanted_total, expected",
    [
        # 3 in a, 0 in b, forecast wants 5: keep a's 3, add 2 -> b b (b has fewer) -> a 3, b 2
        ({"a": 3, "b": 0}, 5, {"a": 3, "b": 2}),
        # 3 in a, 1 in b, wants 2: remove from the fuller group: a 2 b 1 -> a 1 b 1
        ({"a": 3, "b": 1}, 2, {"a": 1, "b": 1}),
        # 1 in b, wants 1: it stays in b (moving it would launch a node for nothing)
        ({"a": 0, "b": 1}, 1, {"a": 0, "b": 1}),
    ],
    ids=["add-to-smaller", "remove-from-fuller", "sticky"],
)
def test_placement_group_balance_keeps_existing(existing, wanted_total, expected):
    observed = [obs(group=g, placeholders=n) for g, n in existing.items()]
    observed.append(obs(group="", forecast=wanted_total))
    config = PlanConfig(placement_groups={G4: ("a", "b")})
    plan = make_plan(observed, config, CATALOG)
    assert {g: plan.wanted(G4, g) for g in ("a", "b")} == expected


@pytest.mark.parametrize(
    "mode, expected, capped_by",
    [
        ("ladder", 2, "ladder"),  # ladder says 2 whatever the forecast (delta would be 4)
        ("fallback", 0, "fallback"),  # reactive: no placeholders
        ("forecast", 4, None),  # 10 - 6
    ],
    ids=["ladder", "fallback", "forecast"],
)
def test_modes(mode, expected, capped_by):
    plan = make_plan([obs(forecast=10, in_use=6)], PlanConfig(), CATALOG, mode=mode,
                     ladder={G4: 2})
    assert (plan.wanted(G4), plan.buckets[0].capped_by, plan.mode) == (expected, capped_by, mode)


def test_bucket_modes_mix():
    plan = make_plan(
        [obs(G4, forecast=3), obs(G5, forecast=2)], PlanConfig(), CATALOG,
        bucket_modes={G5: "fallback"},
    )
    # g4 delta 3; g5 reactive 0
    assert (plan.wanted(G4), plan.wanted(G5), plan.mode) == (3, 0, "mixed")


@pytest.mark.parametrize(
    "free, existing, wanted_total, expected, launches",
    [
        # 1 free node in a, none in b, 2 wanted: one placeholder takes a's free node,
        # the other launches in b (not both in b: two launches)
        ({"a": 1, "b": 0}, {}, 2, {"a": 1, "b": 1}, {"a": 0, "b": 1}),
        # 2 free in a, 1 in b, 3 wanted: all three on free nodes, nothing launched
        ({"a": 2, "b": 1}, {}, 3, {"a": 2, "b": 1}, {"a": 0, "b": 0}),
        # free a 1, b 1, 1 wanted: the name breaks the tie (a), nothing launched
        ({"a": 1, "b": 1}, {}, 1, {"a": 1, "b": 0}, {"a": 0, "b": 0}),
        # 1 placeholder in b, 1 free in b, 3 wanted: b's free node takes one (b 2), then
        # one launch to the group with fewer nodes: a 0 < b 2 -> a 1
        ({"a": 0, "b": 1}, {"b": 1}, 3, {"a": 1, "b": 2}, {"a": 1, "b": 0}),
    ],
    ids=["free-node-in-a", "all-on-free-nodes", "tie-by-name", "free-then-launch"],
)
def test_balance_uses_free_nodes_before_launching(free, existing, wanted_total, expected,
                                                   launches):
    observed = [obs(group=g, free=free.get(g, 0), placeholders=existing.get(g, 0))
                for g in ("a", "b")]
    observed.append(obs(group="", forecast=wanted_total))
    config = PlanConfig(placement_groups={G4: ("a", "b")})
    plan = make_plan(observed, config, CATALOG)
    assert {g: plan.wanted(G4, g) for g in ("a", "b")} == expected
    by_group = {b.placement_group: b for b in plan.buckets}
    assert {g: by_group[g].launches for g in ("a", "b")} == launches
    total = sum(launches.values())
    assert f", {total} to launch;" in by_group["a"].reason
    for group in ("a", "b"):
        assert f"in group {group} ({launches[group]} to launch)" in by_group[group].reason


def test_free_nodes_of_the_ungrouped_bucket_take_no_grouped_placeholder():
    # a free node without a group label cannot hold a placeholder selecting pg a or b:
    # 1 wanted -> 1 launch
    observed = [obs(group="", forecast=1, free=1), obs(group="a"), obs(group="b")]
    plan = make_plan(observed, PlanConfig(placement_groups={G4: ("a", "b")}), CATALOG)
    assert sum(b.launches for b in plan.buckets) == 1
    assert ", 1 to launch" in plan.buckets[0].reason


def test_inputs_not_mutated_and_reason_says_why():
    observed = (obs(forecast=10, in_use=6, free=1, placeholders=1),)
    plan = make_plan(observed, PlanConfig(), CATALOG)
    assert observed == (obs(forecast=10, in_use=6, free=1, placeholders=1),)
    # wanted 4; 1 free node and 1 existing placeholder -> 4 - 1 - 1 = 2 launches
    assert "forecast 10.00" in plan.buckets[0].reason
    assert "2 to launch" in plan.buckets[0].reason
    capped = make_plan(observed, PlanConfig(buckets={G4: BucketLimits(max=2)}), CATALOG)
    assert "max 2" in capped.buckets[0].reason
    # capped at 2: the existing placeholder and the free node hold both, none launches
    assert "0 to launch" in capped.buckets[0].reason and capped.buckets[0].launches == 0


@pytest.mark.parametrize(
    "observation, message",
    [
        (obs(forecast=float("nan")), "forecast"),
        (obs(forecast=-1), "forecast"),
        (obs(free=-1), "free is negative"),
    ],
    ids=["nan", "negative-forecast", "negative-free"],
)
def test_bad_observation(observation, message):
    with pytest.raises(InputError, match=message):
        make_plan([observation], PlanConfig(), CATALOG)


def test_unknown_instance_type():
    with pytest.raises(ConfigError, match="unknown instance type"):
        make_plan([obs(kind="x9.huge", forecast=1)], PlanConfig(), CATALOG)


@pytest.mark.parametrize(
    "config, message",
    [
        (PlanConfig(buckets={G4: BucketLimits(min=-1)}), "must not be negative"),
        (PlanConfig(buckets={G4: BucketLimits(min=3, max=2)}), "below min"),
        (PlanConfig(buckets={"x9.huge": BucketLimits(max=2)}), "unknown instance type"),
        (PlanConfig(cost_cap_per_hour=1.0, buckets={G5: BucketLimits(min=1)}),
         "cannot pay"),  # 1.006 > 1
        (PlanConfig(quantile=1.5), "quantile"),
    ],
    ids=["negative-min", "max-below-min", "unknown-type", "cap-below-mins", "quantile"],
)
def test_config_errors(config, message):
    with pytest.raises(ConfigError, match=rf"^cfg.yaml: .*{message}"):
        config.validate(CATALOG, "cfg.yaml")


def test_config_limits_and_groups():
    config = PlanConfig(quantile=0.95, buckets={G4: BucketLimits(1, 8)}, cost_cap_per_hour=20,
                        placement_groups={G4: ("a", "b")}).validate(CATALOG)
    assert config.limits(G4) == BucketLimits(1, 8)
    assert config.groups(G4) == ("a", "b") and config.groups(G5) == ("",)


KNOWN = [
    # forecast of the rest 8 + known 2.5 - in use 6 = 4.5 -> 5
    ("forecast", obs(forecast=8, in_use=6), 2.5, 5, None),
    # known demand cannot make the delta negative either: 3 + 1 - 6 -> 0
    ("forecast", obs(forecast=3, in_use=6), 1.0, 0, None),
    # cold start: ladder 1 + ceil(known 1.2) = 2 more than the ladder alone
    ("ladder", obs(), 1.2, 3, "ladder"),
    # fallback keeps no headroom for the unknown, but known work is still known: ceil(2)
    ("fallback", obs(forecast=30, in_use=6), 2.0, 2, "fallback"),
    # max caps known demand too: 10 + 20 - 6 = 24 > max 8
    ("forecast", obs(forecast=10, in_use=6), 20.0, 8, "max"),
]


@pytest.mark.parametrize("mode, observation, known, expected, capped_by",
                         KNOWN,
                         ids=["added-to-forecast", "never-negative", "on-top-of-ladder",
                              "kept-in-fallback", "capped-by-max"])
def test_known_demand_is_added_in_every_mode(mode, observation, known, expected, capped_by):
    observation = BucketObservation(**{**observation.__dict__, "known": known})
    plan = make_plan([observation], PlanConfig(buckets={G4: BucketLimits(0, 8)}), CATALOG,
                     mode=mode, ladder={G4: 1} if mode == "ladder" else None)
    bucket = plan.buckets[0]
    assert (bucket.wanted, bucket.capped_by, bucket.known) == (expected, capped_by, known)
    assert f"known {known:.2f}" in bucket.reason


def test_negative_known_demand_is_an_input_error():
    with pytest.raises(InputError, match="known -1"):
        make_plan([BucketObservation(G4, known=-1.0)], PlanConfig(), CATALOG)
