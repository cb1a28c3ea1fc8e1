"""`headstart simulate` and `headstart demo` through the real entry point and real files."""

from __future__ import annotations

import json

import pytest

from headstart.cli import main
from jobtraces.jobtable import JOB_COLUMNS_HELP
from tests.overprovisioner.simbuild import pod, table

REQUIRED = {"policy", "pods", "pending_seconds_mean", "pending_seconds_p95", "gpu_hours",
            "idle_gpu_hours", "cost_usd", "node_launches"}


@pytest.fixture
def trace_file(tmp_path):
    from jobtraces.write import write_job_table

    # A 60-s pod every 1000 s: each pod's node is gone (600 s after it empties) before the
    # next pod arrives, so under reactive each waits for CA (its first scan with the pod
    # 30 s old) and the start-up: 30 + 300 = 330 s.
    rows = [pod(f"p{i}", 1000 * i + 10, 60) for i in range(7)]
    return write_job_table(table(rows, end=7200.0), tmp_path / "trace.csv")


def test_simulate_json_has_every_policy(trace_file, capsys):
    code = main(["simulate", "--trace", str(trace_file), "--json", "--node-startup-spread",
                 "0", "--policy", "reactive", "static:1", "static:2", "static:4", "static:8",
                 "predictive", "oracle"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["policy"] for r in rows] == ["reactive", "static:1", "static:2", "static:4",
                                           "static:8", "predictive", "oracle"]
    assert all(REQUIRED <= set(r) for r in rows)
    assert rows[0]["pending_seconds_mean"] == pytest.approx(330.0)
    assert rows[4]["pending_seconds_mean"] < rows[0]["pending_seconds_mean"]
    # Each run's role, so a script can find the best peer at a cut without parsing names.
    assert [r["role"] for r in rows] == ["reactive", "peer", "peer", "peer", "peer",
                                         "predictive", "yardstick"]
    assert all({"pending_gpu_minutes", "gpu_hours"} <= set(r) for r in rows)


@pytest.mark.parametrize(
    "name, role",
    [("reactive", "reactive"), ("static:2", "peer"), ("proportional:4", "peer"),
     ("scheduled:09-17=2,else=0", "peer"), ("predictive", "predictive"),
     ("predictive:0.97", "predictive"), ("oracle", "yardstick"),
     ("rate-oracle:0.9", "yardstick")],
    ids=["reactive", "static", "proportional", "scheduled", "predictive", "quantile",
         "oracle", "rate-oracle"],
)
def test_every_policy_has_its_role(name, role):
    from overprovisioner.policy_names import parse_policy_name

    assert parse_policy_name(name).role == role


def test_simulate_plot_writes_files(trace_file, tmp_path, capsys):
    out = tmp_path / "plots"
    code = main(["simulate", "--trace", str(trace_file), "--policy", "reactive", "static:1",
                 "--plot", str(out)])
    assert code == 0
    assert (out / "tradeoff.png").stat().st_size > 0
    assert (out / "timeline-static-1.png").exists()
    assert "reactive" in capsys.readouterr().out


def test_demo_runs_the_models_asked_for_as_simulate_does(tmp_path, capsys):
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--days", "1", "--quick", "--models",
                 "last_adaptive,last"])
    assert code == 0
    table = capsys.readouterr().out
    # The configured model runs as plain predictive; the other gets its own run.
    assert "predictive:last " in table and "predictive:last_adaptive" not in table


def test_demo_refuses_an_unknown_model_before_any_work(tmp_path, capsys):
    code = main(["demo", "--out", str(tmp_path / "d"), "--models", "prophet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["headstart demo: error: --models: 'prophet' is not a "
                                 "forecaster"]
    assert not (tmp_path / "d").exists()


def test_demo_writes_report(tmp_path, capsys):
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--days", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'index.html'}" in printed
    page = (out / "index.html").read_text()
    assert "predictive" in page and "tradeoff.png" in page
    # It speaks to the user: the whole system's verdict first, then the placeholders',
    # the yardstick named, no tracker talk.
    lines = printed.splitlines()
    assert lines[0].startswith("The whole system (jobs as gangs") and "first 1 days" in lines[0]
    assert lines[1].startswith(("Verdict: run ", "Verdict: a tie"))
    placeholders = lines.index("Placeholders alone, pod by pod:")
    assert lines[placeholders + 1].startswith("Verdict: ")
    assert "FIFO + reactive" in printed and "What each part contributes" in printed
    assert "oracle (yardstick)" in printed and "oracle (yardstick)" in page
    assert page.index("<h2>The whole system</h2>") < page.index("<h2>Placeholders</h2>")
    assert '<div class="verdict"><p>Verdict: ' in page
    # The runs table has a dozen columns: it scrolls inside the page's 1,400 px rather
    # than widening the page past it.
    assert '<div class="wide"><table>' in page and ".wide{max-width:100%;overflow-x:auto}" in page
    for text in (printed, page):
        assert "issue" not in text.lower() and "target" not in text.lower()


def test_a_demo_on_a_trace_without_jobs_says_why_the_whole_system_is_not_replayed(
        trace_file, tmp_path, capsys):
    code = main(["demo", "--trace", str(trace_file), "--quick", "--out", str(tmp_path / "d")])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("Whole system: not replayed: trace.csv (headstart): no job has more "
                        "than one pod; the demo's whole-system replay admits jobs as gangs, "
                        f"so it needs {JOB_COLUMNS_HELP}")
    assert lines[lines.index("Placeholders alone, pod by pod:") + 1].startswith("Verdict: ")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--policy", "clairvoyant"], "unknown policy"),
        (["--policy", "static:-1"], "static:N"),
        (["--node-startup", "5x"], "not a duration"),
        (["--node-startup=-5m"], "is negative; a duration is positive"),
        (["--policy", "predictive:1.5"], "0 < Q < 1"),
        (["--policy", "proportional:4,min=0"], "raises min 0 to 1"),
        (["--policy", "scheduled:08-20=4,18-22=1"], "overlaps another range"),
        (["--days", "0"], "--days"),
        (["--scale-down-gpu-utilization-threshold", "2"],
         "--scale-down-gpu-utilization-threshold must lie in [0, 1]"),
        (["--seed", "-1"], "seed"),
        (["--groups", "0"], "groups_per_gpu_type"),
        (["--catalog", "nowhere.yaml"], "nowhere.yaml"),
        (["--config", "missing.yaml"], "missing.yaml"),
    ],
    ids=["unknown-policy", "negative-static", "bad-duration", "negative-duration",
         "quantile", "cpa-min-0", "overlapping-schedule", "zero-days", "gpu-threshold",
         "negative-seed", "zero-groups", "missing-catalog", "missing-config"],
)
def test_bad_input_is_one_line_exit_2(trace_file, extra, message, capsys):
    code = main(["simulate", "--trace", str(trace_file), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and message in err[0]


def test_a_window_where_no_pod_arrives_is_one_line_exit_2(capsys):
    # The synthetic workload's first 86 s: only the pods running before it (no
    # arrival, so no waiting to cut and no verdict to give).
    code = main(["simulate", "--synthetic", "--days", "0.001"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "no pod arrives in the chosen window" in err[0], err


def test_unknown_instance_type_in_bucket_file(trace_file, tmp_path, capsys):
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text("instance_types: [g4dn.xlarge, x9.huge]\n")
    code = main(["simulate", "--trace", str(trace_file), "--buckets", str(buckets)])
    err = capsys.readouterr().err
    assert code == 2 and "instance_types[1]" in err and "x9.huge" in err


def test_tuner_bucket_file_is_accepted(trace_file, tmp_path, capsys):
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text("buckets:\n  catalog: aws\n  instance_types: [g4dn.xlarge]\n")
    code = main(["simulate", "--trace", str(trace_file), "--buckets", str(buckets),
                 "--policy", "reactive", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)[0]["pods"] == 7


def service_file(tmp_path, body: str):
    path = tmp_path / "op.yaml"
    path.write_text(body)
    return path


def test_config_file_is_what_predictive_runs(trace_file, tmp_path, capsys):
    # The service's own file: its types are the simulated ones, its tick and forecast
    # settings what predictive runs (printed on the summary's second line).
    path = service_file(tmp_path, "instance_types: [g4dn.xlarge]\ntick: 1m\n"
                                  "forecast: {model: last, quantile: 0.8, fallback: false,"
                                  " stabilize_tau: 0s}\nplaceholders: {wake_debounce: 0s}\n")
    code = main(["simulate", "--trace", str(trace_file), "--config", str(path),
                 "--policy", "reactive", "predictive"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"as configured ({path}): 60-s tick" in out
    assert "last at quantile 0.8, no stabilization, no fallback" in out
    assert "on g4dn.xlarge;" in out
    assert "re-plans at its next tick" in out  # wake_debounce 0: no pod watch


@pytest.mark.parametrize(
    "body, extra, message",
    [
        # the service's own validation, naming file and field
        ("instance_types: [g4dn.xlarge]\nforecast: {quantile: 2}\n", [],
         "forecast.quantile: must lie strictly between 0 and 1"),
        ("instance_types: [g4dn.xlarge]\nforecast: {colour: red}\n", [],
         "forecast.colour: unknown field"),
        ("instance_types: [x9.huge]\n", [], "instance_types[0]: unknown instance type"),
        # the file names the types: --buckets would contradict it
        ("instance_types: [g4dn.xlarge]\n", ["--buckets", "b.yaml"], "--buckets: the --config"),
    ],
    ids=["bad-quantile", "unknown-field", "unknown-type", "buckets-too"],
)
def test_bad_config_file_is_one_line_exit_2(trace_file, tmp_path, capsys, body, extra,
                                            message):
    path = service_file(tmp_path, body)
    code = main(["simulate", "--trace", str(trace_file), "--config", str(path), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and message in err[0]
    if not extra:  # the service's loader names the file
        assert str(path) in err[0]


def test_a_limit_the_buckets_file_leaves_out_is_set_aside_with_the_services_warning(
        trace_file, tmp_path, capsys):
    # The install docs' tuned copy: the list comes from buckets_file, and a per-type limit
    # kept for a type the tuning left out applies to nothing; the service warns and runs,
    # so simulate does too, with the same line.
    from overprovisioner.config.checked import load_checked_config

    (tmp_path / "buckets.yaml").write_text(
        "buckets:\n  catalog: aws\n  instance_types: [g4dn.xlarge]\n")
    path = service_file(tmp_path, "catalog: aws\nbuckets_file: buckets.yaml\nlimits:\n"
                                  "  per_bucket: {p4d.24xlarge: {min: 0, max: 1}}\n")
    code = main(["simulate", "--trace", str(trace_file), "--config", str(path),
                 "--policy", "reactive", "predictive", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert [r["policy"] for r in json.loads(captured.out)] == ["reactive", "predictive"]
    (warning,) = load_checked_config(path).warnings
    assert "limits.per_bucket.p4d.24xlarge: p4d.24xlarge is not in buckets_file" in warning
    assert f"headstart simulate: warning: {warning}" in captured.err.splitlines()


def test_peers_run_from_the_command_line(trace_file, capsys):
    code = main(["simulate", "--trace", str(trace_file), "--json", "--policy", "reactive",
                 "proportional:2,max=3", "scheduled:00-01=2,else=0"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["policy"] for r in rows] == ["reactive", "proportional:2,max=3",
                                           "scheduled:00-01=2,else=0"]


def test_json_stays_pure_while_progress_goes_to_stderr(trace_file, capsys):
    code = main(["simulate", "--trace", str(trace_file), "--json", "--policy", "reactive",
                 "static:1"])
    captured = capsys.readouterr()
    assert code == 0
    assert [r["policy"] for r in json.loads(captured.out)] == ["reactive", "static:1"]
    runs = [line.split("] ", 1)[1] for line in captured.err.splitlines() if "run " in line]
    # A line as each run finishes: counted in order, the runs in the order they finished.
    assert [line.split(" done: ")[0] for line in runs] == ["run 1/2", "run 2/2"]
    assert sorted(line.split(" done: ")[1] for line in runs) == ["reactive", "static:1"]


@pytest.mark.parametrize("extra, scorings", [
    ([], ["headstart", "headstart"]),
    (["--compare-scoring"], ["headstart", "headstart", "default"]),
    (["--no-scoring-comparison"], ["headstart", "headstart"]),  # the old opt-out, accepted
], ids=["default-no-extra-run", "opt-in", "old-flag"])
def test_the_scoring_comparison_runs_only_when_asked(tmp_path, extra, scorings, capsys):
    from jobtraces.write import write_job_table

    # one two-pod job, so the comparison has something to compare
    rows = [pod("a-0", 10.0, 600.0, job="a"), pod("a-1", 10.0, 600.0, job="a")]
    path = write_job_table(table(rows, end=3600.0), tmp_path / "jobs.csv")
    code = main(["simulate", "--trace", str(path), "--json", "--policy", "reactive",
                 "predictive", *extra])
    assert code == 0
    assert [r["scoring"] for r in json.loads(capsys.readouterr().out)] == scorings


def test_quick_demo_keeps_one_run_of_each_family():
    from overprovisioner.sim.summary import quick_policies

    full = ("reactive", "static:1", "static:2", "static:4", "static:8", "proportional:8",
            "proportional:4", "proportional:2", "scheduled:08-20=1,else=0",
            "scheduled:08-20=2,else=0", "predictive",
            "oracle", "predictive:0.97", "predictive:0.99")
    # the middle proportional (index 3 // 2 = 1) and schedule (2 // 2 = 1)
    assert quick_policies(full) == ("reactive", "static:1", "static:2", "proportional:4",
                                    "scheduled:08-20=2,else=0", "predictive", "predictive:0.97",
                                    "oracle")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # the trace's pods ask for 1 GPU, 2 CPUs, 8 GiB: all go to g4dn.xlarge, none to
        # the dearer 1-GPU type after it or to the GPU-less type
        (["simulate", "--buckets", "BUCKETS"],
         "instance_types[1]: g4dn.2xlarge: no pod of trace.csv (headstart) would run on it "
         "(2 such types)"),
        (["simulate", "--plot", "FILE"], "--plot FILE: is a file; name a folder"),
        (["demo", "--out", "FILE"], "--out FILE: is a file; name a folder"),
    ],
    ids=["bucket-type-the-trace-cannot-use", "simulate-plot-is-a-file", "demo-out-is-a-file"],
)
def test_bad_list_or_output_is_one_line_exit_2(trace_file, tmp_path, capsys, argv, message):
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text("instance_types: [g4dn.xlarge, g4dn.2xlarge, m5.large]\n")
    taken = tmp_path / "taken"
    taken.write_text("")
    names = {"BUCKETS": str(buckets), "FILE": str(taken)}
    argv = [names.get(a, a) for a in argv] + ["--trace", str(trace_file)]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and message.replace("FILE", str(taken)) in err[0]


def test_a_share_of_a_gpu_takes_a_whole_one_unless_the_cluster_shares_gpus(tmp_path, capsys):
    from jobtraces.write import write_job_table

    # Two pods asking for half a GPU each, at once, on 1-GPU nodes.
    rows = [pod(f"half-{i}", 100, 600, gpus=0.5, cpu=1, memory_gib=4) for i in range(2)]
    path = write_job_table(table(rows, end=7200.0), tmp_path / "halves.csv")
    command = ["simulate", "--trace", str(path), "--buckets", str(tmp_path / "b.yaml"),
               "--policy", "reactive"]
    (tmp_path / "b.yaml").write_text("instance_types: [g4dn.xlarge]\n")
    assert main([*command, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["node_launches"] == 2
    assert main([*command, "--json", "--gpu-sharing"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["node_launches"] == 1
    assert main(command) == 0  # the header says what was rounded
    assert "2 pods asked for part of a GPU and take a whole one" in capsys.readouterr().out


def test_scale_down_delay_after_add_takes_a_duration_or_0(trace_file, capsys):
    command = ["simulate", "--trace", str(trace_file), "--policy", "reactive", "--json"]
    assert main([*command, "--scale-down-delay-after-add", "0"]) == 0
    capsys.readouterr()
    assert main([*command, "--scale-down-delay-after-add", "5"]) == 2
    assert "--scale-down-delay-after-add: '5' has no unit" in capsys.readouterr().err


def test_a_start_up_spread_outside_0_to_1_is_refused(trace_file, capsys):
    command = ["simulate", "--trace", str(trace_file), "--policy", "reactive"]
    assert main([*command, "--node-startup-spread", "1.5"]) == 2
    assert "--node-startup-spread must be at least 0 and below 1" in capsys.readouterr().err


def test_a_trace_with_no_gpu_pod_is_one_line_and_exit_2(tmp_path, capsys):
    from jobtraces.write import write_job_table

    rows = [pod(f"cpu-{i}", 100 * i, 600, gpus=0, cpu=2) for i in range(3)]
    path = write_job_table(table(rows, end=7200.0), tmp_path / "cpu.csv")
    assert main(["simulate", "--trace", str(path), "--policy", "reactive"]) == 2
    err = capsys.readouterr().err
    assert "no pod asks for a GPU" in err and err.count("\n") == 1


def test_a_schedule_that_keeps_nothing_in_the_window_is_one_line_and_exit_2(capsys):
    # The synthetic workload's first 6 hours (trace clock 00-06) against a schedule
    # keeping placeholders 08-20 only: it would run as reactive.
    code = main(["simulate", "--synthetic", "--days", "0.25", "--policy", "reactive",
                 "scheduled:08-20=2,else=0"])
    assert code == 2
    err = capsys.readouterr().err
    assert "keeps no placeholder at any hour of the simulated window" in err
    assert err.count("\n") == 1
