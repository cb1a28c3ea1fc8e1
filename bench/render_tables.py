"""Rewrite the benchmark figures in README.md and docs/*.md from bench/results.json.

Every figure a page quotes sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`;
this script renders NAME from the results file and replaces what is between the
markers, so the pages cannot drift from the file (tests/test_bench_tables.py fails when
a region differs from what this renders). Record new figures with a bench script's
`--record` (or edit the entry by hand, with its provenance), then run:

    python bench/render_tables.py          # rewrite the regions
    python bench/render_tables.py --check  # exit 1 and name each stale region
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import RESULTS, load  # noqa: E402

REGION = re.compile(r"(<!-- bench:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)"
                    r"(<!-- /bench:(?P=name) -->)", re.DOTALL)


def provenance(entry: dict) -> str:
    """Command, date, machine and load; the entry's `note` (how it was assembled, what it
    supersedes) stays in the results file."""
    return (f"`{entry['command']}`, {entry['date']}, {entry['machine']}, load average "
            f"{entry['load']}")


# bench_simulator's default policies, in its order; others follow by name.
SIMULATOR_ORDER = ("reactive", "static:2", "proportional:4", "predictive", "oracle")


def embed(results: dict) -> str:
    e = results["embed"]
    f = e["figures"]
    return (f"Embedding {f['pods']:,} pods into {f['buckets']} buckets takes {f['median_s']:g} s "
            f"(median of {f['repeats']}; target 1 s), {f['speedup']}x a pure-Python loop "
            f"measured in the same run ({provenance(e)}).\n")


def transformer(results: dict) -> str:
    e = results["transformer"]
    f = e["figures"]
    runs = "1 run" if f["runs"] == 1 else f"median of {f['runs']} runs"
    return (f"The Transformer trains on 30 days x 10 buckets (8,640 ticks) in "
            f"{f['transformer_fit_s']:g} s on {f['threads']} thread ({runs}; target 5 min), "
            f"{f['transformer_fit_s'] / f['hw_fit_s']:.1f}x Holt-Winters' fit in the same run "
            f"({f['hw_fit_s']:g} s), and predicts in {f['transformer_predict_ms']:g} ms (median "
            f"of {f['predicts']}; target 50 ms; Holt-Winters {f['hw_predict_ms']:g} ms, last "
            f"value {f['last_predict_ms']:g} ms) ({provenance(e)}).\n")


def simulator(results: dict) -> str:
    e = results["simulator"]
    f = e["figures"]
    policies = sorted(f["median_s"], key=lambda p: (SIMULATOR_ORDER.index(p)
                                                    if p in SIMULATOR_ORDER else 99, p))
    times = ", ".join(f"{f['median_s'][p]:.1f} s ({p})" for p in policies)
    total = sum(f["median_s"][p] for p in policies)
    text = (f"{f['days']:g} simulated days of the DLRM trace ({f['pods']:,} pods, the trace "
            f"tiled) take {times} per policy run, medians of {f['repeats']} (target: each "
            f"under 60 s; {total:.1f} s for all {len(policies)} together; {provenance(e)}).")
    before = f.get("before_s")
    if before:
        ratios = ", ".join(f"{f['median_s'][p] / before[p]:.2f}x ({p})"
                           for p in policies if p in before)
        text += (f" Run in alternation with the build of {f['before_commit'] or 'before'}, "
                 f"each policy's runs interleaved, this build takes {ratios} of its time.")
    return text + "\n"


def extender_table(results: dict) -> str:
    e = results["extender"]
    lines = ["| nodes | verb | p50 ms | p99 ms | do-nothing p50 | do-nothing p99 |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['nodes']} | {r['verb']} | {r['p50']:.2f} | {r['p99']:.2f} | "
              f"{r['baseline_p50']:.2f} | {r['baseline_p99']:.2f} |"
              for r in e["figures"]["latency_ms"]]
    return "\n".join(lines) + f"\n\n({provenance(e)}.)\n"


def extender_summary(results: dict) -> str:
    e = results["extender"]
    f = e["figures"]
    p99 = {r["verb"]: r["p99"] for r in f["latency_ms"] if r["nodes"] == "5,000"}
    waits = f["bind_wait_per_pod_ms"]
    return (
        f"Server CPU per pod at 1,000 nodes is {f['cpu_ratio_1000']:g}x a do-nothing aiohttp "
        f"extender that parses the request, accepts every node and answers bind "
        f"({f['cpu_ratio_1000_range']}x; target 1.3x), filter + prioritize p50 "
        f"{f['filter_prioritize_p50_ratio_1000']:g}x; p99 at 5,000 nodes {p99['filter']:g} ms "
        f"(filter) and {p99['prioritize']:g} ms (prioritize), "
        f"{f['p99_5000_filter_least_loaded_ms']:g} and "
        f"{f['p99_5000_prioritize_least_loaded_ms']:g} ms in the least loaded invocation "
        f"(target 10 ms); {f['requests_per_s_8_clients_1000']:,} requests/s with 8 clients at "
        f"1,000 nodes (target 500). Waiting for binds in flight adds what the bind is late: "
        f"{waits['at once']:g} / {waits['2 ms late']:g} / {waits['10 ms late']:g} ms per pod "
        f"when it comes 0 / 2 / 10 ms after the answer, and {f['held_job_wait_ms']:g} ms once "
        f"for a job whose binds are held ({provenance(e)}).\n")


def _pct(value: float) -> str:
    """Whole percent, one decimal above 99 (99.5% is not 100%)."""
    return f"{value:.1f}" if value > 99 else f"{value:.0f}"


# The cut of each real trace the figures come from: the first 60% of each public trace
# (the developers' cut; the rest is held out), so a reader with the
# public file gets other numbers unless they cut it the same way (docs/traces.md).
CUTS = {"openb": "openb (first 60%)", "dlrm": "DLRM (first 60%)", "synthetic": "synthetic"}
_RECORDED_TRACE_WORDS = ("openb as published", "openb", "DLRM", "synthetic")


def workload_name(w: dict) -> str:
    """A workload's label naming its trace cut: its recorded name ("openb as published,
    130.8 days", "DLRM, tuned list, 18.6 days") with the trace word replaced by the cut."""
    trace = w["key"].split("-", 1)[0]
    rest = w["name"]
    for word in _RECORDED_TRACE_WORDS:
        if rest.startswith(word):
            rest = rest[len(word):]
            break
    return CUTS[trace] + rest


def _simulated(results: dict) -> list[dict]:
    """bench_simulator_measured's workloads, each with its runs by policy name and its
    label naming the trace cut."""
    workloads = results["simulator-measured"]["figures"]["workloads"]
    for w in workloads:
        w["by_policy"] = {run["policy"]: run for run in w["runs"]}
        w["judged"] = {a["policy"]: a for a in w["assessments"]}
        w["label"] = workload_name(w)
    return workloads


def _ratio(a: dict) -> str:
    return "-" if a["ratio"] is None else f"{a['ratio']:.2f}x"


def simulator_headline(results: dict) -> str:
    """README's summary: each predictive quantile's cut for its extra GPU-hours (ratio to
    the cheapest peer family at the same cut; bold where it costs under half),
    static:1/2/4, the oracle."""
    lines = ["| workload | predictive (defaults) | predictive q 0.97 | predictive q 0.99 | "
             "peers: static:1 / 2 / 4 | oracle |", "|---|---|---|---|---|---|"]
    for w in _simulated(results):
        cells = []
        for name in ("predictive", "predictive:0.97", "predictive:0.99"):
            a = w["judged"][name]
            cell = f"{_pct(a['reduction_pct'])}% for {a['extra_gpu_hours']:+,} ({_ratio(a)})"
            cells.append(f"**{cell}**" if a["ratio"] is not None and a["ratio"] < 0.5
                         else cell)
        static = [w["by_policy"][f"static:{n}"] for n in (1, 2, 4)]
        peers = (" / ".join(_pct(r["reduction_pct"]) for r in static) + "% for "
                 + " / ".join(f"{r['extra_gpu_hours']:+,}" for r in static))
        oracle = w["by_policy"]["oracle"]
        lines.append(f"| {w['label']} | {' | '.join(cells)} | {peers} | "
                     f"{_pct(oracle['reduction_pct'])}% for {oracle['extra_gpu_hours']:+,} |")
    return "\n".join(lines) + "\n\n" + f"({provenance(results['simulator-measured'])})\n"


def simulator_direction(results: dict) -> str:
    """Whether the verdict (`simulate`'s recommended run against the cheapest peer at its
    cut) keeps its direction when the bucket list changes: each trace on its default
    list and on the list the tuner recommends."""
    by_key = {w["key"]: w for w in _simulated(results)}
    sentences = []
    for key, label in (("openb", "openb"), ("openb-active", "openb's active weeks"),
                       ("dlrm", "DLRM"), ("synthetic", "the synthetic workload")):
        default, tuned = by_key.get(key), by_key.get(f"{key}-tuned")
        if default is None or tuned is None:
            continue
        same = (default["verdict"] or {}).get("beats") == (tuned["verdict"] or {}).get("beats")
        sentences.append(
            f"on {label} it recommends {_verdict_words(default)} on the default list and "
            f"{_verdict_words(tuned)} on the tuned one"
            + (": the same direction" if same else ": the direction changes with the list"))
    return ("What `simulate`'s verdict recommends (the predictive run cheapest against the "
            "cheapest peer at its cut, and that ratio): " + "; ".join(sentences)
            + f" ({provenance(results['simulator-measured'])}).\n")


def _verdict_words(w: dict) -> str:
    v = w["verdict"]
    if v is None:
        return "nothing"
    ratio = "" if v["ratio"] is None else f"{v['ratio']:.2f}x, "
    if v["beats"]:
        words = "cheaper than every peer"
    elif " are a tie " in v["line"]:  # within the verdict's margin: the headroom, simpler
        words = "a tie within 5%: the headroom recommended"
    else:
        words = "not cheaper"
    return f"{v['policy']} ({ratio}{words})"


def simulator_measured(results: dict) -> str:
    """docs/simulator.md's summary: one decimal, the cheapest peer named with its cost,
    and what the verdict recommends."""
    lines = ["| workload | predictive (defaults: q 0.9) | q 0.97 | q 0.99 | oracle | verdict |",
             "|---|---|---|---|---|---|"]
    for w in _simulated(results):
        cells = []
        for name in ("predictive", "predictive:0.97", "predictive:0.99"):
            a = w["judged"][name]
            peer = ("no peer reaches it" if a["best_peer"] is None
                    else f"{a['best_peer']} {a['best_peer_extra']:+,}")
            cells.append(f"{a['reduction_pct']:.1f}% for {a['extra_gpu_hours']:+,} GPU-h: "
                         f"{_ratio(a)} ({peer})")
        oracle = w["by_policy"]["oracle"]
        lines.append(f"| {w['label']} | {' | '.join(cells)} | "
                     f"{oracle['reduction_pct']:.1f}% for {oracle['extra_gpu_hours']:+,} | "
                     f"{_verdict_words(w)} |")
    return "\n".join(lines) + "\n\n(GPU-hours over reactive; in brackets the cheapest peer " \
        "family at the same cut and what it needs; verdict: the run `simulate` recommends, " \
        "its ratio, and whether it is cheaper than every peer family at its cut; every run is in " \
        f"the tables below; {provenance(results['simulator-measured'])}.)\n"


def simulator_runs(results: dict) -> str:
    """docs/simulator.md's per-workload tables: every run, the judged ones against the
    cheapest peer family at their cut."""
    out = []
    for w in _simulated(results):
        reactive = w["by_policy"]["reactive"]
        rounded = (f"; {w['gpus_rounded']:,} pods asking for part of a GPU take a whole one"
                   if w["gpus_rounded"] else "")
        out.append(f"#### {w['label']}: reactive {reactive['pending_gpu_minutes']:,.0f} pending "
                   f"GPU-min, {reactive['gpu_hours']:,.0f} GPU-h, "
                   f"{reactive['node_launches']:,} launches\n")
        out.append(f"{w['pods']:,} pods on {', '.join(w['types'])}{rounded}; "
                   f"`{w['command']}`\n")
        out.append("| policy | pending GPU-min | mean / p95 wait s | cut | extra GPU-h | "
                   "cheapest peer for the same cut | ratio | launches |")
        out.append("|---|---|---|---|---|---|---|---|")
        for run in w["runs"]:
            a = w["judged"].get(run["policy"])
            peer = ratio = ""
            if a is not None:
                peer = ("none reaches it" if a["best_peer"] is None
                        else f"{a['best_peer']} {a['best_peer_extra']:+,}")
                ratio = _ratio(a)
            out.append(
                f"| {run['policy']} | {run['pending_gpu_minutes']:,.0f} | "
                f"{run['pending_seconds_mean']:.0f} / {run['pending_seconds_p95']:.0f} | "
                f"{run['reduction_pct']:.1f}% | {run['extra_gpu_hours']:+,} | {peer} | {ratio} | "
                f"{run['node_launches']:,} |")
        out.append("")
    return "\n".join(out)


def _lead_cell(point: dict) -> str:
    ratio = (" (no peer run reaches it)" if point["ratio"] is None
             else f" ({point['ratio']:.2f}x)")
    return f"{point['reduction_pct']:.1f}% for {point['extra_gpu_hours']:+,}{ratio}"


def _at(share: dict, lead_s: float) -> dict:
    return next(p for p in share["points"] if p["lead_s"] == lead_s)


def _half_and_every(workload: dict) -> tuple[dict, dict]:
    """A known-demand workload's curves with half the jobs and every job known."""
    by_share = {s["share"]: s for s in workload["shares"]}
    return by_share[0.5], by_share[1.0]


def known_demand_summary(results: dict) -> str:
    """known-demand.md's and README's summary: no announcement, half the jobs and every
    job known 10 minutes ahead, the oracle."""
    e = results["known-demand"]
    lines = ["| workload | reactive pending GPU-min | no announcement (lead 0) | half the jobs, "
             "10 min | every job, 10 min | oracle |", "|---|---|---|---|---|---|"]
    for w in e["figures"]["workloads"]:
        half, every = _half_and_every(w)
        at_half = _at(half, 600.0)
        lines.append(
            f"| {workload_name(w)} | {w['reactive_pending_gpu_minutes']:,} | "
            f"{_lead_cell(_at(half, 0.0))} | {_lead_cell(at_half)}, "
            f"{at_half['known_share']:.0%} of pods known | {_lead_cell(_at(every, 600.0))} | "
            f"{w['oracle']['reduction_pct']:.1f}% for {w['oracle']['extra_gpu_hours']:+,} |")
    return "\n".join(lines) + f"\n\n({provenance(e)})\n"


def known_demand_curves(results: dict) -> str:
    """known-demand.md's lead curves, one table per workload."""
    e = results["known-demand"]
    out = []
    for w in e["figures"]["workloads"]:
        half, every = _half_and_every(w)
        out += [f"**{workload_name(w)}**", "",
                "| lead | half the jobs known: cut, extra GPU-h (x best peer) | every job known |",
                "|---|---|---|"]
        for lead in e["figures"]["leads_s"]:
            out.append(f"| {lead / 60:g} min | {_lead_cell(_at(half, lead))} | "
                       f"{_lead_cell(_at(every, lead))} |")
        out += ["", f"oracle: {w['oracle']['reduction_pct']:.1f}% for "
                    f"{w['oracle']['extra_gpu_hours']:+,} GPU-h", ""]
    return "\n".join(out)


def tuner(results: dict) -> str:
    """README's bucket-tuning paragraph: what `buckets tune` recommends per trace."""
    e = results["tuner"]
    parts = []
    for t in e["figures"]["traces"]:
        text = (f"on {t['name']} it recommends {', '.join(t['recommended'])}, which pack "
                f"the trace for ${t['cost_usd']:,.0f}")
        if t["untrimmed_cost_usd"]:
            extra = t["cost_usd"] / t["untrimmed_cost_usd"] - 1
            text += (f", {extra:.1%} more than the {t['untrimmed_types']} types it would pick "
                     f"without the limit (${t['untrimmed_cost_usd']:,.0f})")
        text += ("; no pod is left out" if not t["unbucketable_pods"] else
                 f"; {t['unbucketable_pods']:,} of {t['pods']:,} pods fit no type, the same "
                 "pods `headstart simulate` drops on that list (one fit rule for both)")
        if t["gpus_rounded"]:
            text += (f" ({t['gpus_rounded']:,} pods asking for part of a GPU count as a whole "
                     "one)")
        parts.append(text)
    seconds = " and ".join(f"{t['seconds']:g} s" for t in e["figures"]["traces"])
    return "; ".join(parts) + f" ({seconds}; {provenance(e)}).\n"


def tuner_output(results: dict) -> str:
    """docs/buckets.md's sample: what `buckets tune` printed on openb, and its --out."""
    e = results["tuner"]
    t = next(t for t in e["figures"]["traces"] if t["name"] == "openb")
    text = ("The answer first, then every candidate (`headstart buckets tune --trace "
            f"openb.csv.gz --catalog aws`, the shared openb trace; {t['seconds']:g} s; "
            f"{provenance(e)}):\n\n```\n" + "\n".join(t["output"]) + "\n```\n")
    if t["untrimmed_cost_usd"]:
        extra = t["cost_usd"] / t["untrimmed_cost_usd"] - 1
        text += (f"\n{len(t['recommended'])} node groups instead of {t['untrimmed_types']} "
                 f"cost {extra:.1%} more here; `--max-types {t['untrimmed_types']}` keeps "
                 "the base-instance list.\n")
    return text + ("\nWith `--out FILE` it also writes the list the overprovisioner reads:"
                   "\n\n```yaml\n" + "\n".join(t["snippet"]) + "\n```\n")


def tuner_seconds(results: dict) -> str:
    """docs/buckets.md's line on how long a tune takes."""
    e = results["tuner"]
    each = " and ".join(f"{t['seconds']:g} s on {t['name']} ({t['ticks']:,} ticks)"
                        for t in e["figures"]["traces"])
    return (f"The tuner took {each} at 5-minute ticks, most of it the `--max-types` cut's "
            f"evaluations ({provenance(e)}).\n")


ASKED_SHORT = 0.10  # the backtests run at quantile 0.9: falling short on 10% is what was asked


def _backtest_rows(results: dict):
    """(series entry, model row) of every scored model (the fair baseline's own row left out)."""
    for entry in results["backtest"]["figures"]["series"]:
        for row in entry["rows"]:
            if row["model"] != "last+margin":
                yield entry, row


def _short_often(results: dict) -> str:
    """Which models fall short more often than asked, and where."""
    by_model: dict[str, list[str]] = {}
    for entry, row in _backtest_rows(results):
        if row["shortfall_rate"] > ASKED_SHORT:
            by_model.setdefault(row["model"], []).append(
                f"{entry['name']} ({100 * row['shortfall_rate']:.1f}%)")
    if not by_model:
        return "No model falls short more often than asked."
    return ("Falling short more often than asked: " + "; ".join(
        f"`{model}` on {', '.join(where)}" for model, where in by_model.items()) + ".")


def _keepers(results: dict) -> list[str]:
    """The models at or under the asked shortfall rate on every series."""
    seen: dict[str, bool] = {}
    for _, row in _backtest_rows(results):
        seen[row["model"]] = seen.get(row["model"], True) and row["shortfall_rate"] <= ASKED_SHORT
    return [model for model, kept in seen.items() if kept]


def _against_fair(results: dict, model: str) -> str:
    """`model`'s over-provision against the fair baseline's, per series."""
    ratios = [(entry["name"], row["mean_overprovision"] / row["fair_overprovision"])
              for entry, row in _backtest_rows(results)
              if row["model"] == model and row["fair_overprovision"]]
    if ratios and all(r < 1 for _, r in ratios):
        low, high = min(1 - r for _, r in ratios), max(1 - r for _, r in ratios)
        return (f"over-provides {100 * low:.0f}-{100 * high:.0f}% less than the fair baseline "
                "on each")
    return "over-provides " + ", ".join(f"{r:.2f}x the fair baseline on {name}"
                                        for name, r in ratios)


def backtest_summary(results: dict) -> str:
    """README's forecasting table and what it says."""
    e = results["backtest"]
    shown = ("last_adaptive", "last", "conditional")
    lines = ["| series | model | falls short on | over-provisions | fair baseline |",
             "|---|---|---|---|---|"]
    for entry in e["figures"]["series"]:
        first = True
        for row in entry["rows"]:
            if row["model"] not in shown:
                continue
            label = f"{entry['name']} {entry['measure']}" if first else ""
            model = "`last_adaptive` (default)" if row["model"] == "last_adaptive" else (
                "last value" if row["model"] == "last" else f"`{row['model']}`")
            short = f"{100 * row['shortfall_rate']:.1f}%" + (" of horizons" if first else "")
            lines.append(f"| {label} | {model} | {short} | {row['mean_overprovision']:.2f} | "
                         f"{row['fair_overprovision']:.2f} |")
            first = False
    keepers = [f"`{m}`" + (" (the default)" if m == "last_adaptive" else "")
               for m in _keepers(results)]
    kept = (", ".join(keepers) + (" is the only model that keeps" if len(keepers) == 1
                                  else " keep") if keepers else "No model keeps")
    return "\n".join(lines) + (
        f"\n\n{kept} the shortfall rate at or under the {ASKED_SHORT:.0%} asked for on all "
        f"{len(e['figures']['series'])} series. `last_adaptive` "
        f"{_against_fair(results, 'last_adaptive')} (its one-day window was chosen on these "
        f"same traces, which flatters it). {_short_often(results)} ({provenance(e)}.)\n")


def backtest_table(results: dict) -> str:
    """docs/predictor.md's full results table, the ranking lines and the reading."""
    e = results["backtest"]
    lines = ["| series | model | MAE | PMSE | short % | mean short | overprov | fair | fit s "
             "| predict ms |", "|---|---|---|---|---|---|---|---|---|---|"]

    def num(value, digits):
        return "-" if value is None else f"{value:.{digits}f}"

    def four_digits(value):  # 246.2, 19660, 5.251: four significant digits, no exponent
        return f"{value:.{max(0, 3 - math.floor(math.log10(abs(value))))}f}" if value else "0"

    for entry in e["figures"]["series"]:
        for i, row in enumerate(entry["rows"]):
            label = f"{entry['name']} {entry['measure']}" if i == 0 else ""
            if row["model"] == "last+margin":  # tuned on the test itself: no fit, no predict
                row = {**row, "fit_s": None, "predict_ms": None}
            lines.append(
                f"| {label} | {row['model']} | {row['mae']:.2f} | {four_digits(row['pmse'])} | "
                f"{100 * row['shortfall_rate']:.1f} | {row['mean_shortfall']:.2f} | "
                f"{row['mean_overprovision']:.2f} | {num(row['fair_overprovision'], 2)} | "
                f"{num(row['fit_s'], 3)} | {num(row['predict_ms'], 2)} |")
    ranking = []
    for entry in e["figures"]["series"]:
        what = (f"{entry['name']}'s {entry['bucket_series']} bucket series"
                if entry["bucket_series"] else f"{entry['name']}")
        first = next((line for line in entry["ranking"] if line.startswith("ranks first")),
                     None)
        if first:
            ranking.append(f"- {what}: {first.split(': ', 1)[1]}")
    seasonal = [(entry["name"], row["mae"]) for entry, row in _backtest_rows(results)
                if row["model"] == "seasonal"]
    last = {entry["name"]: row["mae"] for entry, row in _backtest_rows(results)
            if row["model"] == "last"}
    worse = [mae / last[name] for name, mae in seasonal if last.get(name)]
    reading = (f"{_short_often(results)} `last_adaptive` "
               f"{_against_fair(results, 'last_adaptive')}.")
    if worse:
        reading += (f" Seasonal naive's MAE is {min(worse):.0f}-{max(worse):.0f}x the last "
                    "value's, as the traces' README says.")
    seconds = ", ".join(f"{entry['name']} {entry['seconds']:g} s"
                        for entry in e["figures"]["series"])
    return ("\n".join(lines) + "\n\nThe command's ranking line (one model for all of a "
            "series' buckets):\n\n" + "\n".join(ranking) + f"\n\n{reading}\n\n"
            f"({seconds}; {provenance(e)}.)\n")


def backtest_ranking(results: dict) -> str:
    """docs/predictor.md's sample of the ranking lines, from the DLRM run."""
    e = results["backtest"]
    entry = next(s for s in e["figures"]["series"] if s["name"] == "DLRM")
    return ("```\n" + "\n".join(line for line in entry["ranking"]
                                 if not line.startswith("best for")) + "\n```\n\n"
            f"(`{entry['command']}`; {provenance(e)}.)\n")


def demo(results: dict) -> str:
    """README's lines on what `headstart demo` says and how long it takes."""
    e = results["demo"]
    f = e["figures"]
    verdict = f["demo"]["verdict"].split(". On this trace")[0] + "."
    instead = f" {f['demo']['instead']}" if f["demo"]["instead"] else ""
    system = f["demo"].get("system_verdict", "").split(". Against")[0]
    lead = (f"On this build the whole system's verdict begins: \"{system}.\" The "
            "placeholders' verdict: " if system else "On this build its verdict begins: ")
    return (f"{lead}\"{verdict}\"{instead} It took "
            f"{f['demo']['median_s']:g} s (median of {len(f['demo']['runs_s'])}), and "
            f"`headstart demo --quick` {f['quick']['median_s']:g} s ({provenance(e)}).\n")


def parallel(results: dict) -> str:
    """docs/simulator.md's table of bench_parallel: each command in one process and with
    a worker per core, medians of alternating runs, beside what a fixed CPU loop gained
    from as many processes at the same moments (how many cores the machine really gave)."""
    e = results["parallel"]
    f = e["figures"]
    n = f["cores"]
    lines = [f"| command | runs | `--jobs 1` | `--jobs {n}` | ratio | CPU loop, {n} processes "
             "against 1 |", "|---|---:|---:|---:|---:|---:|"]
    for c in f["commands"].values():
        lines.append(f"| `headstart {' '.join(c['argv'])}` | {c['runs']} | "
                     f"{c['serial_median_s']:.1f} s | {c['parallel_median_s']:.1f} s | "
                     f"{c['ratio']:.2f}x | {c['loop_ratio']:.2f}x |")
    return ("\n".join(lines) + f"\n\nMedians of {f['repeats']} runs of each, one process and "
            f"{n} in alternation, the outputs of both checked equal; the CPU loop's ratio is "
            f"1/{n} ({1 / n:.2f}x) on {n} idle cores and 1x where other work holds all but "
            f"one ({provenance(e)}).\n")


def demo_output(results: dict) -> str:
    """docs/simulator.md's sample: the verdict block `headstart demo` printed."""
    e = results["demo"]
    return ("```\n" + "\n".join(e["figures"]["demo"]["head"]) + "\n```\n\n"
            f"(`headstart demo`, {provenance(e)}.)\n")


def extender_details(results: dict) -> str:
    """docs/extender.md's bullets under the latency table."""
    f = results["extender"]["figures"]
    p99 = {r["verb"]: r["p99"] for r in f["latency_ms"] if r["nodes"] == "5,000"}
    each = ", ".join(f"{x:g}x" for x in f["cpu_ratio_1000_invocations"])
    mb = " / ".join(f"{x:g}" for x in f["no_cache_mb"])
    took = " / ".join(f"{x:,}" for x in f["no_cache_filter_ms"])
    base = " / ".join(f"{x:,}" for x in f["baseline_no_cache_filter_ms"])
    return (
        f"- Server CPU per pod (filter + prioritize + bind) at 1,000 nodes: {f['cpu_ms_1000']:g} "
        f"ms against {f['baseline_cpu_ms_1000']:g} ms for the do-nothing extender, "
        f"{f['cpu_ratio_1000']:g}x ({each} in the three invocations; target 1.3x). filter + "
        f"prioritize p50 at 1,000 nodes: {f['filter_prioritize_p50_ms_1000']:g} ms against "
        f"{f['baseline_filter_prioritize_p50_ms_1000']:g} ms, "
        f"{f['filter_prioritize_p50_ratio_1000']:g}x "
        f"({f['filter_prioritize_p50_ratio_1000_range']}x). The extra is the locality core's "
        "per-pod work (job placement and context, the numpy filter and score) plus, since the "
        "bind verb, recording each bind and keeping the waiting jobs' claims, about 0.05 ms of "
        f"it. At 5,000 nodes the CPU ratio is {f['cpu_ratio_5000']:g}x "
        f"({f['cpu_ratio_5000_range']}x).\n"
        f"- p99 at 5,000 nodes: {p99['filter']:g} ms filter, {p99['prioritize']:g} ms "
        f"prioritize ({f['p99_5000_filter_least_loaded_ms']:g} and "
        f"{f['p99_5000_prioritize_least_loaded_ms']:g} ms in the least loaded invocation; "
        "target 10 ms): at this load the latencies include waiting for a core; an earlier "
        f"measurement on a quieter machine gave {f['p99_5000_quiet_earlier_ms']} ms.\n"
        f"- 8 concurrent clients at 1,000 nodes: {f['requests_per_s_8_clients_1000']:,} "
        f"requests/s ({f['requests_per_s_range']}; do-nothing "
        f"{f['baseline_requests_per_s_range']}).\n"
        f"- `nodeCacheCapable: false`: {mb} MB requests at 100 / 1,000 / 5,000 nodes take "
        f"{took} ms for filter (do-nothing: {base} ms): parsing the megabytes dominates, which "
        "is why `true` is the recommended mode.\n")


def _pair(values: tuple[float, float] | list[float]) -> str:
    """Two figures as `a / b` (p50 / p99, or filter / prioritize), 2 decimals."""
    return f"{values[0]:.2f} / {values[1]:.2f}"


def extender_job_size(results: dict) -> str:
    """docs/extender.md's table of bench_job_size: per job size, CPU per pod and
    latencies against the do-nothing extender of the same run, and the build before the
    per-job running totals when the entry has it."""
    e = results["extender-job-size"]
    f = e["figures"]
    before = {row["job_pods"]: row["headstart"] for row in f.get("before", {}).get("rows", [])}
    lines = ["| job pods | CPU per pod ms | filter p50 / p99 ms | prioritize p50 / p99 ms | "
             "do-nothing CPU per pod | do-nothing filter / prioritize p99 | CPU ratio |"
             + (" before: CPU per pod, filter p99 |" if before else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if before else "")]
    for row in f["rows"]:
        ours, base = row["headstart"], row["baseline"]
        old = before.get(row["job_pods"])
        lines.append(
            f"| {row['job_pods']:,} | {ours['cpu_ms']:.2f} | {_pair(ours['filter'])} | "
            f"{_pair(ours['prioritize'])} | {base['cpu_ms']:.2f} | "
            f"{_pair((base['filter'][1], base['prioritize'][1]))} | {row['cpu_ratio']:.2f}x |"
            + (f" {old['cpu_ms']:.2f}, {old['filter'][1]:.2f} |" if old else ""))
    text = (f"{f['nodes']:,} nodes, medians of {f['runs']} runs of {f['pods_per_run']} pods "
            f"each ({provenance(e)}")
    if before:
        text += (f"; before: {f['before']['what']}, {f['before']['commit']}, run just "
                 f"{f['before']['when']}, load average {f['before']['load']}")
    text += ").\n"
    inside = f.get("in_process")
    if not inside:
        return "\n".join(lines) + "\n\n" + text
    old_inside = {row["job_pods"]: row["headstart"]
                  for row in f.get("before", {}).get("in_process", [])}
    smallest = inside[0]["headstart"]["cpu_ms"]
    table = ["| job pods | CPU per pod ms | against 32 pods | filter p50 / p99 ms | "
             "prioritize p50 / p99 ms | context p50 / p99 ms | do-nothing CPU per pod | "
             "do-nothing filter / prioritize p99 |" + (" before: context p50 / p99 |"
                                                       if old_inside else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|" if old_inside else "")]
    for row in inside:
        ours, base = row["headstart"], row["baseline"]
        old = old_inside.get(row["job_pods"])
        table.append(
            f"| {row['job_pods']:,} | {ours['cpu_ms']:.2f} | {ours['cpu_ms'] / smallest:.2f}x | "
            f"{_pair(ours['filter'])} | {_pair(ours['prioritize'])} | "
            f"{_pair(ours['context'])} | {base['cpu_ms']:.2f} | "
            f"{_pair((base['filter'][1], base['prioritize'][1]))} |"
            + (f" {_pair(old['context'])} |" if old else ""))
    fixed = f["fixed_work"]
    note = (f"The same requests in one process, without aiohttp and the network, every size "
            f"and both extenders in turn within each run (medians of {f['runs']} runs; "
            f"context: the pod's decision context built afresh after a bind, timed apart). "
            f"Machine jitter in the same runs: a fixed {fixed[0]:.2f} ms loop had p99 "
            f"{fixed[1]:.2f} ms.\n")
    return ("\n".join(lines) + "\n\n" + text + "\n" + "\n".join(table) + "\n\n" + note)


def scheduler_real(results: dict) -> str:
    """docs/extender.md's table of bench_scheduler_real invocations: each mode's median of
    its runs (the runs in brackets) and the ratios of the medians."""
    from statistics import median

    e = results["scheduler-real"]
    f = e["figures"]
    lines = ["| invocation (1-minute load average during it) | none | do-nothing | headstart | "
             "headstart / none | headstart / do-nothing |", "|---|---|---|---|---|---|"]
    for number, run in enumerate(f["invocations"], 1):
        medians = {mode: median(run[mode]) for mode in ("none", "do-nothing", "headstart")}
        cells = [f"{medians[mode]:.1f} ({', '.join(f'{x:.1f}' for x in run[mode])})"
                 for mode in ("none", "do-nothing", "headstart")]
        lines.append(f"| {number} ({run['load']}) | {cells[0]} pods/s | {cells[1]} | {cells[2]} | "
                     f"{medians['headstart'] / medians['none']:.2f} | "
                     f"{medians['headstart'] / medians['do-nothing']:.2f} |")
    return ("\n".join(lines) + f"\n\n{f['pods']:,} pods on {f['nodes']:,} kwok nodes, medians "
            f"of {f['runs']} runs, pods/s from the first create to the last binding "
            f"({provenance(e)}).\n")


GANG_MODES = {"coscheduling": "Coscheduling, no extender",
              "headstart": "headstart (admitter + extender)",
              "gang-scheduling": "1.36 in-tree GangScheduling"}
GANG_RATIOS = {"headstart": "headstart", "gang-scheduling": "in-tree"}


def _runs(values: list[float]) -> str:
    return ", ".join(f"{x:.1f}" for x in values)


def scheduler_gangs(nodes: int) -> Callable[[dict], str]:
    """docs/extender.md's table of one bench_scheduler_gangs invocation (`--nodes`): per
    gang size, each mode's median pods/s (its runs in brackets) and its median against
    Coscheduling's of the same gang size."""
    def render(results: dict) -> str:
        e = results[f"scheduler-gangs-{nodes}"]
        f = e["figures"]
        modes = [mode for mode in GANG_MODES if mode in f["modes"]]
        others = [mode for mode in modes if mode != "coscheduling"]
        lines = ["| gang size | " + " | ".join(GANG_MODES[m] for m in modes) + " | " +
                 " | ".join(f"{GANG_RATIOS[m]} / Coscheduling" for m in others) + " |",
                 "|---|" + "---|" * (len(modes) + len(others))]
        for size in f["gang_sizes"]:
            row = f["gangs"][str(size)]
            cells = [f"{row[m]['median']:.1f} ({_runs(row[m]['pods_per_s'])})" for m in modes]
            cells[0] += " pods/s"
            ratios = [f"{row[m]['vs_coscheduling']:.2f}" for m in others]
            lines.append(f"| {size} | " + " | ".join(cells + ratios) + " |")
        runs = (f"medians of {f['runs']} runs" if f["runs"] > 1
                else "one run (no median)")
        return ("\n".join(lines) + f"\n\n{f['pods']:,} one-GPU pods per run on {f['nodes']:,} "
                f"kwok nodes, {runs} per mode and gang size, in alternation, pods/s from "
                f"the first create to the last binding; "
                f"the whole invocation took {f['seconds'] / 60:.0f} minutes, 1-minute load "
                f"{f['load_range'][0]:.1f}-{f['load_range'][1]:.1f} after each run "
                f"({provenance(e)}).\n")
    return render


def admission(results: dict) -> str:
    e = results["admission"]
    f = e["figures"]
    rounds = ", ".join(f"{r['median_ms']:g} ms for {r['pods']:,} pods" for r in f["rounds"])
    return (f"One admission round (gather, snapshot, assign, patches) at {f['nodes']:,} nodes "
            f"takes {rounds} (medians of {f['repeats']} runs; target 1 s for 4,096 pods), "
            f"against {f['baseline_ms']:g} ms for a 1-pod job in the same run "
            f"({provenance(e)}).\n")


def admission_rounds(results: dict) -> str:
    e = results["admission-rounds"]
    f = e["figures"]
    m = f["modes"]

    def mode(key: str) -> str:
        entry = m[key]
        text = f"p50 {entry['p50_ms']:.1f} ms, p99 {entry['p99_ms']:.1f} ms"
        if key != "none":
            text += f" ({entry['p99_vs_none']:.2f}x)"
        return text + f", slowest {entry['max_ms']:.0f} ms"

    process = (f"; planned in the planning process (`admission.planning: process`, the "
               f"default), {mode('process')}, a round taking "
               f"{m['process']['round_s']:.2f} s of which {m['process']['loop_ms']:.0f} ms "
               f"on the event loop (the first, once per extender start and before the "
               f"measurement, {m['process']['first_round_s']:.2f} s: it ships the whole "
               f"first list; in the thread {m['thread']['first_round_s']:.2f} s)"
               if "process" in m else "")
    return (f"With {f['jobs']:,} gated 8-pod jobs at {f['nodes']:,} nodes, every round "
            f"admitting all of them again (a round of {m['loop']['round_s']:.2f} s when nothing "
            f"else runs; rounds {f['interval_s']:g} s apart, as the "
            f"admitter runs them), kube-scheduler's filter is answered in {mode('none')} "
            f"without rounds; with rounds on the event loop, {mode('loop')}; with rounds "
            f"planned in a worker thread, {mode('thread')}, the round itself "
            f"taking {m['thread']['round_s']:.2f} s as it shares the interpreter, of which "
            f"{m['thread']['loop_ms']:.0f} ms of snapshot on the event loop{process} "
            f"(medians of {f['runs']} runs of {f['seconds']:g} s per mode, in alternation; "
            f"{provenance(e)}).\n")


def admission_rounds_large(results: dict) -> str:
    """The second size issue 26 names (bench_admission_rounds.py --record-as
    admission-rounds-20000): thread against process only."""
    e = results["admission-rounds-20000"]
    f = e["figures"]
    m = f["modes"]

    def mode(key: str) -> str:
        entry = m[key]
        return (f"p99 {entry['p99_ms']:.1f} ms ({entry['p99_vs_none']:.2f}x), slowest "
                f"{entry['max_ms']:.0f} ms, rounds of {entry['round_s']:.2f} s, "
                f"{entry['loop_ms']:.0f} ms of each on the event loop (the first round "
                f"{entry['first_round_s']:.2f} s)")

    return (f"With {f['jobs']:,} gated {f['pods']}-pod jobs at {f['nodes']:,} nodes, the "
            f"filter is answered in p50 {m['none']['p50_ms']:.1f} ms, p99 "
            f"{m['none']['p99_ms']:.1f} ms without rounds; with rounds planned in a worker "
            f"thread, {mode('thread')}; in the planning process (the default), {mode('process')} "
            f"(medians of {f['runs']} runs of {f['seconds']:g} s per mode, in alternation; "
            f"{provenance(e)}{'; ' + e['note'] if e.get('note') else ''}).\n")


def planner_memory(results: dict) -> str:
    """The extender's and its planning process's memory (bench/bench_planner_memory.py)."""
    e = results["planner-memory"]
    f = e["figures"]
    process, thread = f["modes"]["process"], f["modes"]["thread"]
    return (f"At {f['nodes']:,} nodes and {process['pods']:,.0f} pods ({f['jobs']:,} gated "
            f"{f['pods_per_job']}-pod jobs among them), after three rounds, the extender "
            f"holds {process['extender_rss_mb']:.0f} MB and its planning process "
            f"{process['planner_rss_mb']:.0f} MB (peaks {process['extender_peak_mb']:.0f} and "
            f"{process['planner_peak_mb']:.0f} MB); planning in a thread, the extender holds "
            f"{thread['extender_rss_mb']:.0f} MB (resident sets; medians of {f['runs']} runs; "
            f"{provenance(e)}).\n")


def round_transfer(results: dict) -> str:
    """What shipping a round's inputs to another process would cost
    (bench/bench_round_transfer.py)."""
    e = results["round-transfer"]
    f = e["figures"]
    return (f"With the same {f['jobs']:,} jobs at {f['nodes']:,} nodes, a round's inputs are "
            f"{f['inputs_mb']:.1f} MB pickled: {f['inputs_out_ms']:.0f} ms to pickle, "
            f"{f['inputs_in_ms']:.0f} ms to unpickle, and {f['plan_back_ms']:.0f} ms to pickle "
            f"the {f['plan_mb']:.1f} MB plan back, {f['moving_ms']:.0f} ms in all against "
            f"{f['plan_ms']:.0f} ms of planning with the memo warm "
            f"({f['moving_vs_plan']:.1f}x; medians of {f['repeats']}; {provenance(e)}).\n")


def decode_limit(results: dict) -> str:
    """The largest body the limit admits, decoded and refused (bench/bench_decode.py)."""
    e = results["decode-limit"]
    f = e["figures"]
    return (f"the largest the limit admits, {f['limit_bytes'] / 2**20:g} MiB of tiny JSON "
            f"values, takes {f['largest_ms']:.0f} ms to decode and refuse (median of "
            f"{f['repeats']}; a 5,000-node filter request, {f['filter_5000_bytes']:,} bytes, "
            f"{f['filter_5000_ms']:.1f} ms; {provenance(e)}), during which `/healthz` waits.\n")


def round_memo(results: dict) -> str:
    """Round time packing every trial against the memo (bench/bench_round_memo.py)."""
    e = results["round-memo"]
    f = e["figures"]
    lines = ["| waiting jobs | nodes | every trial packed | first round | next round |",
             "|---|---:|---:|---:|---:|"]
    for size in f["sizes"]:
        lines.append(f"| {size['jobs']:,} x {size['pods']} pods | {size['nodes']:,} | "
                     f"{size['every_s']:.2f} s | {size['first_s']:.2f} s "
                     f"({size['first_vs_every']:.2f}x) | {size['next_s']:.2f} s "
                     f"({size['next_vs_every']:.2f}x) |")
    return "\n".join(lines) + (f"\n\n(Medians of {f['repeats']} rounds each, the same "
                               f"plans checked equal; {provenance(e)}.)\n")


def preemption_round(results: dict) -> str:
    """A round where preemption cannot satisfy many waiting jobs
    (bench/bench_preemption.py)."""
    e = results["preemption-round"]
    f = e["figures"]
    return (f"A round with {f['jobs']:,} waiting jobs, {f['unsatisfiable']} of them "
            f"preemption cannot satisfy (each of its own shape), at {f['nodes']:,} nodes "
            f"takes {f['shipped_s']:.2f} s, against {f['baseline_s']:.2f} s without the "
            f"necessary-room check and the round's memory of unsatisfied questions "
            f"({f['speedup']:.1f}x; medians of {f['repeats']}, the same plans checked "
            f"equal; {provenance(e)}).\n")


def elastic(results: dict) -> str:
    """The elastic table (bench/bench_elastic.py): per workload and node-group cap, each
    arm's times over the jobs every arm finished, its GPU-hours and resizes."""
    e = results["elastic"]
    lines = ["| workload | cap | arm | JCT mean / p95 (h) | queue mean / p95 (min) | "
             "node GPU-h | $ | resizes | never ran |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for run in e["figures"]["runs"]:
        base = run["arms"][0]
        for row in run["arms"]:
            resizes = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in row["resizes"].items())
            lines.append(
                f"| {run['workload']} | {run['max_nodes']} | {row['arm']} | "
                f"{_h(row['jct_mean_h'])} / {_h(row['jct_p95_h'])} | "
                f"{_h(row['queue_mean_min'], 1)} / {_h(row['queue_p95_min'], 1)} | "
                f"{row['node_gpu_hours']:,.0f} | {row['dollars']:,.0f} | {resizes or '-'} | "
                f"{row['unfinished']} |")
        best = run["arms"][1:]
        parts = [f"{row['arm']} {_x(row['jct_mean_h'], base['jct_mean_h'])} JCT, "
                 f"{_x(row['queue_mean_min'], base['queue_mean_min'])} queueing, "
                 f"{_x(row['node_gpu_hours'], base['node_gpu_hours'])} node GPU-hours"
                 for row in best]
        notes.append(f"{run['workload']}, cap {run['max_nodes']} ({base['measured']:,} of "
                     f"{base['jobs']:,} jobs timed; `{run['command']}`, "
                     f"{run['seconds']:g} s for the three arms): against fixed, "
                     + "; ".join(parts) + ".")
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + \
        "\n\n" + _elastic_parts(e["figures"]["runs"]) + f"\n({provenance(e)}.)\n"


def _elastic_parts(runs: list) -> str:
    """Where each arm's node GPU-hours and mean JCT go (`overprovisioner.sim.gangs.ledger`)."""
    lines = ["Where they go: node GPU-hours by part, and the mean JCT (h) as queueing + the "
             "trace run at its size + what smaller sizes added + stalled after the start.",
             "",
             "| workload | arm | pods at trace size | more by smaller gangs running longer | "
             "pods bound, not training | placeholders (beside pods / nodes held only for "
             "growth) | free beside pods | empty nodes | starting nodes | JCT = queue + run "
             "+ smaller + stalled |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in runs:
        for row in run["arms"]:
            by, jct = row["node_gpu_hours_by"], row["jct_mean_by_h"]
            lines.append(
                f"| {run['workload']} | {row['arm']} | {by['pods_full_size']:,.0f} | "
                f"{by['pods_smaller']:,.0f} | {by['pods_idle']:,.0f} | "
                f"{by['placeholders']:,.0f} / {by['growth_nodes']:,.0f} | {by['free']:,.0f} | "
                f"{by['empty']:,.0f} | {by['starting']:,.0f} | {_h(row['jct_mean_h'])} = "
                + " + ".join(_h(jct[part]) for part in ("queueing", "work", "smaller",
                                                         "stalled")) + " |")
    return "\n".join(lines) + "\n"


def _h(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _x(value: float | None, base: float | None) -> str:
    return "-" if value is None or not base else f"{value / base:.2f}x"


SYSTEM_FIGURES = ("queue_mean_min", "queue_p95_min", "jct_mean_h", "jct_p95_h",
                  "node_gpu_hours", "dollars")
SYSTEM_PARTS = ("forecast placeholders", "known-ahead work", "elastic sizing",
                "announced growth", "every placeholder (the overprovisioner)")


def system(results: dict) -> str:
    """The whole-system replay (bench/bench_system.py): per workload the verdict as the
    command prints it, every arm at seed 0, the repeated arms' medians and spreads, what
    each part contributes and the issue's target."""
    e = results["system"]
    out = []
    for run in e["figures"]["runs"]:
        rows = run["arms"]
        whole = rows[0]
        seeds = ", ".join(map(str, run["seeds"]))
        out += [f"**{run['workload']}**, node groups of at most {run['max_nodes']} "
                f"(`{run['command']}`, {run['seconds']:g} s for its "
                f"{len(rows) + (len(run['seeds']) - 1) * len(run['repeated'])} replays; "
                f"{whole['measured']:,} of {whole['jobs']:,} jobs timed):", ""]
        out += [f"> {line}" for line in run["verdict"]]
        out += ["", f"Every arm at seed {run['seeds'][0]}:", "",
                "| arm | JCT mean / p95 (h) | queue mean / p95 (min) | node GPU-h | $ | "
                "resizes | placeholder GPU-h |", "|---|---:|---:|---:|---:|---:|---:|"]
        for row in rows:
            by = row["node_gpu_hours_by"]
            out.append(f"| {row['arm']}{_system_marks(run, row['arm'])} | "
                       f"{_h(row['jct_mean_h'])} / {_h(row['jct_p95_h'])} | "
                       f"{_h(row['queue_mean_min'], 1)} / {_h(row['queue_p95_min'], 1)} | "
                       f"{row['node_gpu_hours']:,.0f} | {row['dollars']:,.0f} | "
                       f"{sum(row['resizes'].values())} | "
                       f"{by['placeholders'] + by['growth_nodes']:,.0f} |")
        out += ["", f"The arms the verdict compares, medians over seeds {seeds} (spread: "
                "(largest - smallest) / median, the run-to-run noise that widens a tie):", "",
                "| arm | JCT mean (h) | queue mean / p95 (min) | node GPU-h | $ | spread: "
                "queue mean / JCT mean / node GPU-h |", "|---|---:|---:|---:|---:|---:|"]
        for row in run["repeated"]:
            spread = row["spread"]
            out.append(f"| {row['arm']} | {_h(row['jct_mean_h'])} | "
                       f"{_h(row['queue_mean_min'], 1)} / {_h(row['queue_p95_min'], 1)} | "
                       f"{row['node_gpu_hours']:,.0f} | {row['dollars']:,.0f} | " + " / ".join(
                           _share(spread[key])
                           for key in ("queue_mean_min", "jct_mean_h", "node_gpu_hours")) + " |")
        out += ["", f"What each part contributes: its arm less the whole system, at seed "
                f"{run['seeds'][0]} (a positive queueing or JCT: the part cuts it; a negative "
                "one: the replay did better without it; ~: within the whole system's tie band, "
                "no difference to speak of).", "",
                "| part switched off | mean queueing (min) | p95 queueing (min) | mean JCT (h) | "
                "p95 JCT (h) | node GPU-h | $ |", "|---|---:|---:|---:|---:|---:|---:|"]
        for part in SYSTEM_PARTS:
            change = run["contributions"].get(part)
            if change is not None:
                out.append(f"| {part} | " + " | ".join(
                    _signed(change[key], key) + ("~" if change["within_noise"][key] else "")
                    for key in SYSTEM_FIGURES) + " |")
        out += ["", _system_target(run), ""]
    return "\n".join(out) + f"({provenance(e)}.)\n"


def _share(value: float | None) -> str:
    """A spread as a percent: whole above 10%, one decimal below (0.4% is not 0%)."""
    if value is None:
        return "-"
    return f"{value:.0%}" if value >= 0.1 else f"{value:.1%}"


def _system_marks(run: dict, arm: str) -> str:
    notes = []
    if arm == run["configuration"] and arm != run["arms"][0]["arm"]:
        notes.append("the verdict's configuration")
    if arm == run["strongest_peer"]:
        notes.append("strongest peer")
    if arm == run["cheapest_peer_reaching"]:
        notes.append("cheapest peer reaching its queueing")
    return f" ({', '.join(notes)})" if notes else ""


def _signed(value: float | None, key: str) -> str:
    if value is None:
        return "-"
    if key in ("node_gpu_hours", "dollars"):
        return f"{value:+,.0f}"
    return f"{value:+.1f}" if key.startswith("queue") else f"{value:+.2f}"


def _system_target(run: dict) -> str:
    """The issue's target, not tuned to: the whole system at most 0.5x the strongest
    peer's mean queueing at no more node GPU-hours (within the tie), on the medians."""
    rows = {row["arm"]: row for row in run["repeated"]}
    whole, peer = run["repeated"][0], rows.get(run["strongest_peer"] or "")
    if peer is None or not peer["queue_mean_min"] or not peer["node_gpu_hours"]:
        return ("Target (the whole system at most 0.5x the strongest peer's mean queueing at "
                "no more node GPU-hours): no peer within its node GPU-hours to judge it by.")
    queue = whole["queue_mean_min"] / peer["queue_mean_min"]
    hours = whole["node_gpu_hours"] / peer["node_gpu_hours"]
    allowed = max(run["tie"], whole["spread"]["node_gpu_hours"] or 0.0,
                  peer["spread"]["node_gpu_hours"] or 0.0)
    met_queue, met_hours = queue <= 0.5, hours <= 1 + allowed
    verdict = "met" if met_queue and met_hours else (
        "queueing met, node GPU-hours not" if met_queue else
        "node GPU-hours met, queueing not" if met_hours else "not met")
    return (f"Target, aimed at and not tuned to (the whole system at most 0.5x the strongest "
            f"peer's mean queueing at no more node GPU-hours, a tie allowed), on the medians: "
            f"{queue:.2f}x its mean queueing at {hours:.2f}x its node GPU-hours: {verdict}.")


RENDERERS: dict[str, Callable[[dict], str]] = {
    "system": system,
    "admission-rounds": admission_rounds,
    "round-transfer": round_transfer,
    "planner-memory": planner_memory,
    "admission-rounds-20000": admission_rounds_large,
    "decode-limit": decode_limit,
    "round-memo": round_memo,
    "preemption-round": preemption_round,
    "scheduler-real": scheduler_real,
    "scheduler-gangs-1000": scheduler_gangs(1000),
    "scheduler-gangs-5000": scheduler_gangs(5000),
    "extender-details": extender_details,
    "extender-job-size": extender_job_size,
    "simulator-headline": simulator_headline,
    "simulator-runs": simulator_runs,
    "simulator-measured": simulator_measured,
    "elastic": elastic,
    "simulator-direction": simulator_direction,
    "demo-output": demo_output,
    "parallel": parallel,
    "embed": embed,
    "transformer": transformer,
    "simulator": simulator,
    "extender-table": extender_table,
    "extender-summary": extender_summary,
    "admission": admission,
    "tuner": tuner,
    "backtest-summary": backtest_summary,
    "backtest-table": backtest_table,
    "backtest-ranking": backtest_ranking,
    "tuner-output": tuner_output,
    "tuner-seconds": tuner_seconds,
    "demo": demo,
    "known-demand-summary": known_demand_summary,
    "known-demand-curves": known_demand_curves,
}


def pages(repo: Path = REPO) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]


def render_page(text: str, results: dict, where: str) -> str:
    """The page with every marked region rendered; an unknown region, or one whose entry
    is missing from the results, is a ValueError naming the page."""
    def replace(match: re.Match) -> str:
        name = match.group("name")
        if name not in RENDERERS:
            raise ValueError(f"{where}: unknown bench region {name!r} "
                             f"(known: {', '.join(RENDERERS)})")
        try:
            body = RENDERERS[name](results)
        except KeyError as missing:
            raise ValueError(f"{where}: bench region {name!r} needs {missing} in "
                             "bench/results.json") from None
        return match.group(1) + body + match.group(4)
    return REGION.sub(replace, text)


def stale_regions(repo: Path = REPO, results_path: Path = RESULTS) -> list[str]:
    """`page: region` for each region that differs from its rendering."""
    results = load(results_path)
    stale = []
    for page in pages(repo):
        text = page.read_text()
        rendered = render_page(text, results, str(page))
        if rendered != text:
            now = {m.group("name"): m.group("body") for m in REGION.finditer(text)}
            new = {m.group("name"): m.group("body") for m in REGION.finditer(rendered)}
            stale += [f"{page.relative_to(repo)}: {name}" for name in now if now[name] != new[name]]
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 naming each region that is stale")
    args = parser.parse_args()
    if args.check:
        stale = stale_regions()
        for region in stale:
            print(f"stale: {region} (run python bench/render_tables.py)")
        return 1 if stale else 0
    results = load()
    for page in pages():
        text = page.read_text()
        rendered = render_page(text, results, str(page))
        if rendered != text:
            page.write_text(rendered)
            print(f"rewrote {page.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
