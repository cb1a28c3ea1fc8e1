"""`headstart buckets tune` end to end through the console entry point, on real files."""

from __future__ import annotations

import importlib.metadata
import json

import pytest
import yaml

from bucketing.catalog import load_catalog
from bucketing.fit import pin_buckets
from headstart.cli import main
from jobtraces.demand import resource_matrix
from jobtraces.load import load_trace
from jobtraces.write import write_job_table
from tests.bucketing.test_tune import CATALOG_DOC, PODS, make_table


@pytest.fixture
def files(tmp_path):
    trace = write_job_table(make_table(PODS), tmp_path / "trace.csv")
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump(CATALOG_DOC))
    return trace, catalog


def test_json_report(files, capsys):
    trace, catalog = files
    code = main(["buckets", "tune", "--trace", str(trace), "--catalog", str(catalog),
                 "--tick", "30m", "--gpu-model", "T4", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert {"recommended", "candidates", "unbucketable_pods"} <= set(report)
    # numbers from tests/bucketing/test_tune.py: base 0 costs (7 + 14) x 0.5 h = $10.5,
    # dropping c.small brings it to $9.5, dropping g.one too to $10 (rejected)
    assert report["recommended"] == ["g.one", "g.four"]
    base0 = report["candidates"][1]
    assert base0["instance_types"] == ["c.small", "g.one", "g.four"]
    assert base0["cost_usd"] == 10.5
    assert base0["node_hours"] == 3.0
    assert base0["gpu_waste_fraction"] == round(2 / 7, 4)
    assert report["unbucketable_pods"] == {
        "count": 0, "gpu_hours": 0.0, "cpu_hours": 0.0, "never_scheduled": 0, "examples": []}
    assert report["tick_s"] == 1800.0 and report["ticks"] == 2


def test_table_out_snippet_series_and_plot(files, tmp_path, capsys):
    trace, catalog = files
    out, plot, series = tmp_path / "buckets.yaml", tmp_path / "scale.png", tmp_path / "s.csv"
    code = main(["buckets", "tune", "--trace", str(trace), "--catalog", str(catalog),
                 "--tick", "30m", "--gpu-model", "T4", "--out", str(out), "--plot", str(plot),
                 "--series", str(series)])
    assert code == 0
    text = capsys.readouterr().out
    # the answer comes first, before the table
    assert text.splitlines()[2] == "recommended: 2 types (--max-types 4): g.one, g.four"
    assert text.splitlines()[3].startswith(
        "cannot bucket: 0 of 4 pods (0%; 0.0 GPU-hours, 0.0 CPU-hours)")
    assert "base 2" in text
    snippet = out.read_text()
    assert snippet.startswith("# Written by `headstart buckets tune` from")
    assert yaml.safe_load(snippet) == {
        "buckets": {"catalog": str(catalog), "instance_types": ["g.one", "g.four"]}}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # recommended (g.one, g.four): tick 0 p0+p1+p2 (2,10,40)/(1,8,32) -> 2 g.one, packed
    # 2 (p0 shares a node); tick 1 p0+p2 -> 1 g.one, p3 -> 1 g.four
    assert series.read_text().splitlines() == [
        "time_s,g.one,g.four,g.one_nodes,g.four_nodes",
        "0.0,2,0,2,0",
        "1800.0,1,1,1,1",
    ]


def test_synthetic_workload(capsys):
    assert main(["buckets", "tune", "--synthetic", "--catalog", "gcp", "--tick", "1h",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"].startswith("synthetic")
    assert report["recommended"]
    assert report["hours"] == 14 * 24  # SyntheticWorkload default: 14 days


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tick", "5x"], "--tick: '5x' is not a duration"),
        (["--tick", "0s"], "--tick: must be positive, got '0s'"),
        (["--catalog", "nope"], "--catalog: 'nope' is neither a built-in catalog (aws, gcp)"),
        (["--gpu-model", "H100"], "no GPU model 'H100'"),
    ],
    ids=["bad-duration", "zero-duration", "unknown-catalog", "unknown-gpu-model"],
)
def test_bad_input_is_one_line_and_exit_2(files, capsys, extra, message):
    trace, catalog = files
    argv = ["buckets", "tune", "--trace", str(trace), "--catalog", str(catalog), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_trace_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["buckets", "tune", "--trace", str(tmp_path / "none.csv")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.traces
def test_real_alibaba_trace(traces_dir, capsys):
    path = traces_dir / "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz"
    assert main(["buckets", "tune", "--trace", str(path), "--catalog", "aws",
                 "--tick", "1h", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    catalog = load_catalog("aws")
    recommended = [catalog.get(n) for n in report["recommended"]]
    assert len(recommended) <= 4  # --max-types' default
    # the unbucketable count is exactly the pods no recommended type holds under the
    # fit rule (DLRM has no never-scheduled pods), and the examples are among them
    table = load_trace(path)
    unplaced = pin_buckets(resource_matrix(table), recommended) < 0
    assert report["unbucketable_pods"]["count"] == int(unplaced.sum())
    names = set(table.frame["pod"].to_numpy()[unplaced])
    assert {e["pod"] for e in report["unbucketable_pods"]["examples"]} <= names
    kept = [c for c in report["candidates"] if c["accepted"]]
    assert kept[-1]["instance_types"] == report["recommended"]
    assert kept[-1]["label"] == "max 4"
    # packing can only need more nodes than the embedding's lower bound
    for candidate in report["candidates"]:
        assert candidate["node_hours"] >= candidate["embed_node_hours"] - 0.01
        assert 0.0 <= candidate["gpu_waste_fraction"] <= 1.0


def test_version(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"headstart {importlib.metadata.version('headstart')}"


@pytest.mark.parametrize(
    ("option", "target", "message"),
    [
        ("--out", "missing/buckets.yaml", "--out {tmp}/missing/buckets.yaml: the folder "
         "{tmp}/missing does not exist"),
        ("--series", ".", "--series {tmp}/.: is a folder; name a file"),
        ("--plot", "nowhere/p.png", "--plot {tmp}/nowhere/p.png: the folder"),
    ],
    ids=["out-folder-missing", "series-is-a-folder", "plot-folder-missing"],
)
def test_outputs_are_checked_before_the_trace_is_read(tmp_path, capsys, option, target,
                                                      message):
    # the trace does not exist either: the output error comes first, before any work
    argv = ["buckets", "tune", "--trace", str(tmp_path / "none.csv"), option,
            f"{tmp_path}/{target}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in err and err.count("\n") == 1


def test_max_types_bounds_the_list(files, capsys):
    trace, catalog = files
    assert main(["buckets", "tune", "--trace", str(trace), "--catalog", str(catalog),
                 "--tick", "30m", "--gpu-model", "T4", "--max-types", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # test_tune.py's test_max_types_cuts_the_kept_list: g.one goes, g.four holds all
    assert report["recommended"] == ["g.four"] and report["trimmed"] == ["g.one"]
    assert main(["buckets", "tune", "--trace", str(trace), "--max-types", "0"]) == 2
    assert "--max-types: must be at least 1, got 0" in capsys.readouterr().err


def test_a_trace_without_gpu_pods_is_one_line_exit_2(tmp_path, capsys):
    trace = write_job_table(make_table([(0, 2, 8, 0, 0, float("nan"))]), tmp_path / "t.csv")
    assert main(["buckets", "tune", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "t.csv (headstart): no pod asks for a GPU" in err and err.count("\n") == 1
