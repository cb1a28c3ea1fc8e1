"""The verdict: which predictive run to configure, in the user's words and dollars, and the
config lines; the table's columns that mean something for the runs."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from common.errors import InputError
from jobtraces.synthetic import SyntheticWorkload, generate
from overprovisioner.config.parse import parse_config
from overprovisioner.sim.assess import assess_all
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.metrics import measure
from overprovisioner.sim.pod_engine import run as simulate_run
from overprovisioner.sim.table import format_table, table_header, table_rows
from overprovisioner.sim.verdict import build_verdict, display_name, recommend
from overprovisioner.sim.workload import build_workload, default_types
from tests.overprovisioner.sim.test_sim_compare import metrics
from tests.overprovisioner.simbuild import CATALOG


def run(policy, pending, gpu_hours, cost):
    return replace(metrics(policy, pending, gpu_hours), cost_usd=cost)


BASE = [run("reactive", 1000.0, 100.0, 200.0),
        run("static:1", 500.0, 110.0, 220.0),    # 50% for +10 GPU-h, +$20
        run("static:2", 100.0, 130.0, 260.0)]    # 90% for +30 GPU-h, +$60


@pytest.mark.parametrize("judged, chosen", [
    # predictive 30% for +3 (static at 30%: 10 x 30/50 = 6; 0.5x);
    # predictive:0.97 70% for +12 (static 10 + 20 x 20/40 = 20; 0.6x): 0.5x wins
    ([run("predictive", 700.0, 103.0, 206.0), run("predictive:0.97", 300.0, 112.0, 224.0)],
     "predictive"),
    # predictive:0.97 at 70% for +8: 8/20 = 0.4x beats predictive's 0.5x
    ([run("predictive", 700.0, 103.0, 206.0), run("predictive:0.97", 300.0, 108.0, 216.0)],
     "predictive:0.97"),
    # no cut at all: nothing to recommend
    ([run("predictive", 1000.0, 103.0, 206.0)], None),
    # cuts 99%, beyond every static run (90%): no ratio, the largest cut
    ([run("predictive", 10.0, 150.0, 300.0), run("predictive:0.97", 50.0, 140.0, 280.0)],
     "predictive"),
    # the rate-oracle is cheaper still but a yardstick: never recommended
    ([run("predictive", 700.0, 103.0, 206.0), run("rate-oracle", 100.0, 101.0, 202.0)],
     "predictive"),
], ids=["lowest-ratio", "lowest-ratio-higher-quantile", "no-cut", "beyond-every-peer",
        "yardstick-never"])
def test_the_recommended_run(judged, chosen):
    picked = recommend(assess_all(BASE + judged))
    assert (picked.policy if picked else None) == chosen


def test_verdict_says_cut_hours_dollars_peers_and_the_config_lines():
    runs = BASE + [run("predictive:0.97", 300.0, 112.0, 224.0), run("oracle", 0.0, 101.0, 202.0)]
    verdict = build_verdict(runs, assess_all(runs), 0.9, "last_adaptive", "at test prices",
                            "op.yaml")
    # 70% cut: 1000 -> 300; +12 GPU-h, +$24; static at 70%: +20 GPU-h and
    # 20 + (60 - 20) x 20/40 = +$40: 12/20 = 0.60x, 8 GPU-hours fewer; 24/40 = 0.60x, $16 less
    assert verdict.lines[0] == (
        "Verdict: configure predictive at quantile 0.97. On this trace it cuts the time pods "
        "wait for capacity by 70% (1,000 -> 300 pending GPU-minutes) for +12 GPU-hours, +$24 "
        "at test prices, over cluster-autoscaler alone.")
    assert verdict.lines[1].startswith("Pods that waited for capacity: ")
    # No static run cuts exactly 70%: the peer's figures are interpolated, and say so.
    assert verdict.lines[2] == ("Headroom users run today, for the same cut: static +20 GPU-h "
                                "(+$40, interpolated between its runs: the cheapest that "
                                "reaches the cut, static:2, cuts 90% for +30).")
    assert verdict.lines[3] == ("In GPU-hours predictive spends 0.60x the cheapest (static "
                                "headroom): 8 fewer.")
    assert verdict.lines[4] == ("In dollars predictive spends 0.60x the cheapest (static "
                                "headroom, +$40): $16 less.")
    assert verdict.snippet.splitlines()[1:] == ["forecast:", "  model: last_adaptive",
                                                "  quantile: 0.97"]
    assert "other fields as in op.yaml" in verdict.snippet


@pytest.mark.parametrize("predictive, gpu_line, dollar_line", [
    # predictive 50% for +15 GPU-h, +$30: static:1 does it for +10, +$20: 1.50x both
    (run("predictive", 500.0, 115.0, 230.0),
     "In GPU-hours predictive spends 1.50x the cheapest (static headroom): no fewer for "
     "the same cut.",
     "In dollars predictive spends 1.50x the cheapest (static headroom, +$20): $10 more."),
    # fewer GPU-hours (+5 against +10: 0.50x) but dearer in dollars (+$50 against +$20:
    # 2.50x), as GPU-less placeholder nodes make it
    (run("predictive", 500.0, 105.0, 250.0),
     "In GPU-hours predictive spends 0.50x the cheapest (static headroom): 5 fewer.",
     "In dollars predictive spends 2.50x the cheapest (static headroom, +$20): $30 more."),
], ids=["dearer-on-both", "dearer-in-dollars-only"])
def test_verdict_is_honest_when_predictive_is_dearer(predictive, gpu_line, dollar_line):
    runs = BASE + [predictive]
    verdict = build_verdict(runs, assess_all(runs), 0.9, "last", "at test prices", "x")
    assert verdict.lines[0].startswith(
        "Verdict: on this trace predictive does not beat the headroom users run today for "
        "the same cut (below); its best run is quantile 0.9. On this trace it cuts")
    assert verdict.lines[3:5] == (gpu_line, dollar_line)
    # A peer wins: the verdict names the run to configure instead (static:1 reaches 50%)
    # and the config line the overprovisioner runs it with, not predictive's forecast.
    assert verdict.lines[5] == (
        "The headroom to run instead: static:1 (cuts 50% for +10 GPU-hours, +$20; the "
        "overprovisioner runs it with the `headroom:` line below instead of a forecast).")
    assert verdict.snippet.splitlines()[1:] == ['headroom: "static:1"']


def test_the_headroom_to_run_instead_is_the_cheapest_in_dollars():
    # Both families reach predictive's 50%: static:1 for +10 GPU-h and +$20, the
    # per-type count for +12 GPU-h but +$14 (its nodes are cheaper). Dollars are paid.
    per_type = run("static:g4dn.xlarge=2", 450.0, 112.0, 214.0)
    runs = BASE + [per_type, run("predictive", 500.0, 115.0, 230.0)]
    verdict = build_verdict(runs, assess_all(runs), 0.9, "last", "at test prices", "x")
    assert verdict.snippet.splitlines()[1:] == ['headroom: "static:g4dn.xlarge=2"']
    # The snippet is a config the overprovisioner loads as it is.
    document = {**yaml.safe_load(verdict.snippet), "instance_types": ["g4dn.xlarge"]}
    assert parse_config(document, "printed").headroom == "static:g4dn.xlarge=2"
    # Without prices (a catalog without them) GPU-hours decide.
    unpriced = [replace(m, cost_usd=float("nan")) for m in runs]
    verdict = build_verdict(unpriced, assess_all(unpriced), 0.9, "last", "", "x")
    assert verdict.snippet.splitlines()[1:] == ['headroom: "static:1"']


def test_without_predictive_runs_there_is_no_verdict():
    verdict = build_verdict(BASE, assess_all(BASE), 0.9, "last", "", "x")
    assert verdict.lines == () and verdict.snippet == ""


def test_table_hides_what_means_nothing_and_names_yardsticks():
    runs = BASE + [run("oracle", 0.0, 101.0, 202.0)]
    header = table_header(runs)
    # metrics() builds runs without multi-pod jobs, all with one scoring
    assert "nodes/job" not in header and "groups/job" not in header
    assert "scoring" not in header
    rows = {row[0]: dict(zip(header, row, strict=True)) for row in table_rows(runs)}
    assert rows["oracle (yardstick)"]["cut"] == "100%"
    assert rows["static:2"]["extra GPU-h"] == "+30"   # 130 - 100
    assert rows["static:2"]["extra $"] == "+60"       # 260 - 200
    with_jobs = [replace(m, multi_pod_jobs=3) for m in runs] + [
        replace(runs[0], scoring="default")]
    assert {"nodes/job", "groups/job", "scoring"} <= set(table_header(with_jobs))
    assert format_table(runs).splitlines()[0].startswith("policy")
    assert display_name("rate-oracle:0.97") == "rate-oracle:0.97 (yardstick)"


def test_the_plots_call_a_run_that_does_not_beat_headroom_only_the_best():
    dearer = BASE + [run("predictive", 500.0, 115.0, 230.0)]   # 1.50x static (above)
    cheaper = BASE + [run("predictive", 700.0, 103.0, 206.0)]  # 0.50x in both
    assert build_verdict(dearer, assess_all(dearer), 0.9, "last", "", "x").ring == \
        "best predictive run"
    assert build_verdict(cheaper, assess_all(cheaper), 0.9, "last", "", "x").ring == \
        "recommended"


def test_the_verdict_says_how_long_the_pods_that_waited_waited():
    reactive = replace(BASE[0], waited_pods=40, waited_p50_s=330.0, waited_p95_s=338.0)
    judged = replace(run("predictive", 300.0, 112.0, 224.0), waited_pods=12,
                     waited_p50_s=95.0, waited_p95_s=331.0)
    runs = [reactive, *BASE[1:], judged]
    verdict = build_verdict(runs, assess_all(runs), 0.9, "last", "at test prices", "x")
    assert verdict.lines[1] == ("Pods that waited for capacity: 40 -> 12; their wait p50 "
                                "330 -> 95 s, p95 338 -> 331 s.")


def test_the_verdict_says_whether_jobs_end_up_more_spread():
    reactive = replace(BASE[0], multi_pod_jobs=30, mean_nodes_per_job=2.0,
                       mean_groups_per_job=1.02)
    judged = replace(run("predictive", 300.0, 112.0, 224.0), multi_pod_jobs=30,
                     mean_nodes_per_job=2.1, mean_groups_per_job=1.11)
    runs = [reactive, *BASE[1:], judged]
    lines = build_verdict(runs, assess_all(runs), 0.9, "last", "", "x").lines
    assert lines[2] == ("Locality (30 multi-pod jobs): nodes per job 2.00 -> 2.10, placement "
                        "groups per job 1.02 -> 1.11: its jobs are more spread than under "
                        "cluster-autoscaler alone (more nodes and more placement groups per "
                        "job).")
    # Fewer nodes but more groups is not "more spread": the words follow each number.
    mixed = [reactive, *BASE[1:], replace(judged, mean_nodes_per_job=1.9)]
    assert build_verdict(mixed, assess_all(mixed), 0.9, "last", "", "x").lines[2].endswith(
        "its jobs run on fewer nodes but across more placement groups per job than under "
        "cluster-autoscaler alone.")
    same = [reactive, *BASE[1:], replace(judged, mean_nodes_per_job=2.0,
                                         mean_groups_per_job=1.02)]
    assert build_verdict(same, assess_all(same), 0.9, "last", "", "x").lines[2].endswith(
        "its jobs are no more spread.")
    # Without multi-pod jobs there is no locality line.
    plain = BASE + [run("predictive", 300.0, 112.0, 224.0)]
    lines = build_verdict(plain, assess_all(plain), 0.9, "last", "", "x").lines
    assert lines[0].startswith("Verdict: configure predictive")
    assert not any(line.startswith("Locality") for line in lines)


def test_the_verdict_says_which_limits_held_the_plan_back():
    judged = replace(run("predictive", 300.0, 112.0, 224.0), planned_ticks=864,
                     ticks_capped_by_max=12, ticks_capped_by_cost_cap=0)
    runs = [*BASE, judged]
    lines = build_verdict(runs, assess_all(runs), 0.9, "last", "", "x").lines
    assert ("Limits held the plan back: the per-type max (limits.*.max) at 12 of its 864 "
            "ticks.") in "\n".join(lines)
    free = [*BASE, replace(judged, ticks_capped_by_max=0)]
    assert not any(line.startswith("Limits") for line in build_verdict(
        free, assess_all(free), 0.9, "last", "", "x").lines)


def test_a_run_counts_the_ticks_its_limits_capped():
    # Two synthetic days under a 5 $/h cost cap: its GPU types meet the cap at some ticks.
    table = generate(SyntheticWorkload(days=2))
    workload = build_workload(table, default_types(table, CATALOG))
    tight = replace(SimConfig().service, limits=replace(SimConfig().service.limits,
                                                        cost_cap_per_hour=5.0))
    metrics = measure(simulate_run(workload, CATALOG, "predictive", SimConfig(service=tight)))
    assert metrics.planned_ticks > 0
    assert metrics.ticks_capped_by_cost_cap > 0


def test_the_verdict_says_what_lifting_the_limits_buys():
    judged = replace(run("predictive", 300.0, 112.0, 224.0), planned_ticks=864,
                     ticks_capped_by_max=0, ticks_capped_by_cost_cap=40)
    lifted = run("predictive:unlimited", 100.0, 125.0, 250.0)  # 90% for +25 GPU-h
    runs = [*BASE, judged, lifted]
    verdict = build_verdict(runs, assess_all(runs), 0.9, "last", "", "x")
    text = "\n".join(verdict.lines)
    # static reaches 90% for +30: the lifted run is 25 / 30 = 0.83x of it.
    assert ("Without them (predictive:unlimited in the table) it cuts 90% instead of 70% "
            "for +25 GPU-hours instead of +12 (+$50), 0.83x the cheapest headroom at that "
            "cut") in text
    # ...but a run without limits is never the config recommended, nor an "other quantile".
    assert verdict.assessment.policy == "predictive"
    assert "predictive:unlimited cuts" not in text


def test_a_capped_run_gets_a_run_without_limits():
    from overprovisioner.policy_names import parse_policy_name
    from overprovisioner.sim.compare import run_policies

    spec = parse_policy_name("predictive:0.97,unlimited")
    assert (spec.kind, spec.quantile, spec.unlimited, spec.role) == (
        "predictive", 0.97, True, "predictive")
    assert parse_policy_name("predictive:unlimited").quantile is None
    with pytest.raises(InputError, match="quantile 0 < Q < 1"):
        parse_policy_name("predictive:1.5,unlimited")
    table = generate(SyntheticWorkload(days=2))
    workload = build_workload(table, default_types(table, CATALOG))
    tight = replace(SimConfig().service, limits=replace(SimConfig().service.limits,
                                                        cost_cap_per_hour=5.0))
    results = run_policies(workload, CATALOG, ["reactive", "predictive"],
                           SimConfig(service=tight), hindsight=False)
    by_name = {m.policy: m for _, m in results}
    assert set(by_name) == {"reactive", "predictive", "predictive:unlimited"}
    capped, free = by_name["predictive"], by_name["predictive:unlimited"]
    assert capped.ticks_capped_by_cost_cap > 0
    assert free.ticks_capped_by_cost_cap == free.ticks_capped_by_max == 0
    assert free.pending_gpu_minutes < capped.pending_gpu_minutes


def test_only_the_recommended_run_a_limit_held_back_gets_a_run_without_limits():
    from overprovisioner.sim.compare import lifted_runs

    held = replace(run("predictive:0.97", 300.0, 112.0, 224.0), ticks_capped_by_max=3)
    free = replace(run("predictive", 300.0, 112.0, 224.0), ticks_capped_by_max=0,
                   ticks_capped_by_cost_cap=0)
    results = [(None, free), (None, held), (None, run("static:1", 1, 1, 1))]
    asked = []

    def one(name):
        asked.append(name)
        return None, run(name, 1, 1, 1)

    assert len(lifted_runs(results, one, "predictive:0.97")) == 1
    assert asked == ["predictive:0.97,unlimited"]
    # not the run recommended, or one no limit held back: nothing more
    assert lifted_runs(results, one, None) == lifted_runs(results, one, "predictive") == []
    # ...and not twice when the user listed it already.
    again = [(None, held), (None, run("predictive:0.97,unlimited", 1, 1, 1))]
    assert lifted_runs(again, one, "predictive:0.97") == []
    assert asked == ["predictive:0.97,unlimited"]


def test_dollars_name_their_price_list_and_its_date():
    from overprovisioner.sim.summary import price_text

    dated = CATALOG.get("g4dn.xlarge")
    assert dated.price_date and dated.price_date in price_text((dated,))
    # A catalog of one's own without price_date: said, not left out silently.
    undated = replace(dated, price_date="", price_source="my-prices.yaml")
    assert price_text((undated,)) == ("at on-demand list prices (my-prices.yaml, undated: "
                                      "the catalog gives no price_date)")


@pytest.mark.parametrize("predictive, expected", [
    # 50% for +9.7 GPU-h, +$19.4 against static:1's +10, +$20: 0.97x both, a tie
    (run("predictive", 500.0, 109.7, 219.4), "tie"),
    # +9.4, +$18.8: 0.94x both, beyond the margin: predictive
    (run("predictive", 500.0, 109.4, 218.8), "predictive"),
    # 0.97x in GPU-hours but 1.04x in dollars: a tie
    (run("predictive", 500.0, 109.7, 220.8), "tie"),
    # 1.06x both: dearer, not a tie
    (run("predictive", 500.0, 110.6, 221.2), "dearer"),
], ids=["0.97x", "0.94x", "0.97x-1.04x", "1.06x"])
def test_within_five_percent_of_the_cheapest_headroom_is_a_tie(predictive, expected):
    runs = BASE + [predictive]
    verdict = build_verdict(runs, assess_all(runs), 0.9, "last", "at test prices", "x")
    head = verdict.lines[0]
    assert head.startswith({
        "tie": "Verdict: on this trace predictive and the headroom users run today are a "
               "tie for the same cut (within 5% of the cheapest, below): configure the "
               "simpler, the headroom to run instead (below)",
        "predictive": "Verdict: configure predictive at quantile 0.9.",
        "dearer": "Verdict: on this trace predictive does not beat"}[expected])
    # A tie recommends the simpler option: the headroom's config line, not a forecast.
    assert (verdict.snippet.splitlines()[1] == 'headroom: "static:1"') is (
        expected != "predictive")
    gpu_line = next(line for line in verdict.lines if line.startswith("In GPU-hours"))
    assert ("a tie" in gpu_line) is (expected == "tie")


def test_the_limits_paragraph_only_when_lifting_them_changes_the_result():
    judged = replace(run("predictive", 300.0, 112.0, 224.0), planned_ticks=864,
                     ticks_capped_by_max=3, ticks_capped_by_cost_cap=0)
    same = run("predictive:unlimited", 300.0, 112.0, 224.0)  # lifting buys nothing
    runs = [*BASE, judged, same]
    lines = build_verdict(runs, assess_all(runs), 0.9, "last", "", "x").lines
    assert not any(line.startswith("Limits") for line in lines)
