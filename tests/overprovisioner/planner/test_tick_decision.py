"""The tick's pure decision: one frozen observation in, the plan, sizes and columns out."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from overprovisioner.config.catalog import capacity_type_label, make_plan_config, resolve_catalog
from overprovisioner.planner.forecasting import BucketForecast
from overprovisioner.planner.tick_core import PinnedWindow, TickObservation
from overprovisioner.planner.tick_decision import decide_tick, nodes_per_type, placed_buckets
from overprovisioner.policy_names import parse_headroom
from tests.overprovisioner.service.test_loop import make_config

NOW = 1_700_000_100.0
G5 = ("g5.xlarge", "")


def forecast(quantile: float, in_use: float = 0.0) -> BucketForecast:
    return BucketForecast(point=quantile, quantile=quantile, in_use=in_use)


def decide(seen: TickObservation, config=None, headroom=None):
    config = config or make_config()
    return decide_tick(config, make_plan_config(config), resolve_catalog(config), seen,
                       parse_headroom(headroom) if headroom else None,
                       capacity_type_label(config))


def wanted(decision) -> dict[tuple[str, str], int]:
    return {(b.instance_type, b.placement_group): b.wanted for b in decision.plan.buckets
            if b.wanted}


def test_the_forecast_less_what_is_in_use_is_wanted_and_free_nodes_take_some() -> None:
    # 5 nodes forecast, 2 in use: ceil(5 - 2) = 3. The free node is not subtracted
    # (plan.py rule 1): it is where the first placeholder goes, nothing launched for it.
    seen = TickObservation(NOW, "forecast", {G5: forecast(5.0, 2.0)}, free={G5: 1})
    decision = decide(seen)
    assert wanted(decision) == {G5: 3}
    assert decision.plan.buckets[0].launches == 2
    # one column per planned bucket, a bucket wanting none included (its object goes to 0)
    assert [(c.instance_type, c.wanted) for c in decision.columns] == [
        ("g5.xlarge", 3), ("p4d.24xlarge", 0)]
    assert set(decision.requests) == {"g5.xlarge", "p4d.24xlarge"}


def test_known_demand_is_planned_with_a_forecast_but_not_under_a_headroom() -> None:
    # static:g5.xlarge=1 plans 1 whatever is known; the forecast's plan adds the 3 known.
    seen = TickObservation(NOW, "forecast", {G5: forecast(0.0)}, known={G5: 3.0})
    assert wanted(decide(seen)) == {G5: 3}
    headroom = dataclasses.replace(seen, mode="headroom", forecasts={})
    assert wanted(decide(headroom, headroom="static:g5.xlarge=1")) == {G5: 1}


def test_an_ungrouped_bucket_of_a_grouped_type_gets_no_object() -> None:
    config = make_config(limits={"cost_cap_per_hour": None,
                                 "placement_groups": {"g5.xlarge": ["pg-a"]}})
    seen = TickObservation(NOW, "forecast", {G5: forecast(2.0),
                                             ("g5.xlarge", "pg-a"): forecast(1.0)})
    decision = decide(seen, config)
    assert all(b.placement_group == "pg-a" for b in placed_buckets(config, decision.plan)
               if b.instance_type == "g5.xlarge")
    assert {c.placement_group for c in decision.columns if c.instance_type == "g5.xlarge"} \
        == {"pg-a"}


@pytest.mark.parametrize("pinned", [
    None,
    PinnedWindow(pd.DataFrame(), pd.DataFrame()),  # nothing recorded in the window
], ids=["not-recorded", "empty-window"])
def test_without_pinned_counts_every_column_is_unpinned(pinned) -> None:
    seen = TickObservation(NOW, "forecast", {G5: forecast(2.0)}, pinned=pinned)
    columns = decide(seen).columns
    assert columns and all(c.pin.zone is None and c.pin.capacity_type is None
                           for c in columns)


def test_the_observation_is_not_changed() -> None:
    seen = TickObservation(NOW, "forecast", {G5: forecast(5.0, 2.0)}, known={G5: 1.0},
                           free={G5: 1})
    before = dataclasses.replace(seen)
    decide(seen)
    assert seen == before


def test_nodes_per_type_sums_the_groups() -> None:
    assert nodes_per_type({("a", "pg-1"): 2, ("a", "pg-2"): 3, ("b", ""): 1}) == {"a": 5, "b": 1}
