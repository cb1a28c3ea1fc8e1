"""`headstart size workers`: KALE's least sufficient size through the CLI agrees with
`predictor.models.throughput` on the same inputs, and every bad input is one line and
exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headstart.cli import main
from predictor.models.throughput import ThroughputModel, fit, least_sufficient

PAPER = ("0.00035", "2.5726", "0.9824", "0.02786")
SYNC = ["--model", "synchronous", "--global-batch", "16384"]
# KALE's model at 1, 2, 3, 4, 6, 8, 12, 16 workers with 1% noise (docs/examples' file)
MEASURED = [(1, 4572.0), (2, 10348.0), (3, 15552.0), (4, 19891.0), (6, 26155.0),
            (8, 28959.0), (12, 29492.0), (16, 27186.0)]


def size(capsys, *argv):
    assert main(["size", "workers", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_papers_worked_example_needs_10_workers(capsys):
    out = size(capsys, "--rate", "30000", *SYNC, "--thetas", ",".join(PAPER))
    model = ThroughputModel("synchronous", tuple(map(float, PAPER)), 16384)
    # f(9) = 29,840 falls short of 30,000, f(10) = 30,005 does not (KALE's paper)
    assert out["workers"] == 10 == least_sufficient(model, 30000, 1, 1024).workers
    assert out["throughput"] == pytest.approx(float(model.rate(10.0)))
    assert out["throughput_one_fewer"] == pytest.approx(29_840, abs=1)
    assert out["model"] == {"mode": "synchronous", "thetas": list(model.thetas),
                            "global_batch": 16384.0}
    assert out["fitted"] is None and (out["min_workers"], out["max_workers"]) == (1, 1024)
    assert main(["size", "workers", "--rate", "30000", *SYNC, "--thetas", ",".join(PAPER)]) == 0
    assert "30,000 samples/s needs 10 workers: f(10) = 30,005 samples/s; f(9) = 29,840 " \
        "falls short" in capsys.readouterr().out


@pytest.mark.parametrize("rate", [15_000.0, 25_000.0, 29_000.0], ids=["15k", "25k", "29k"])
def test_fitted_to_a_file_or_to_flags_it_is_the_fit_the_overprovisioner_makes(
        rate, tmp_path, capsys):
    path = tmp_path / "measured.csv"
    path.write_text("# a comment\nworkers,samples_per_s,note\n" +
                    "".join(f"{w},{r},x\n" for w, r in MEASURED))
    from_file = size(capsys, "--rate", str(rate), *SYNC, "--samples", str(path))
    from_flags = size(capsys, "--rate", str(rate), *SYNC,
                      *[arg for w, r in MEASURED for arg in ("--sample", f"{w}:{r:g}")])
    workers, rates = zip(*MEASURED, strict=True)
    model = fit("synchronous", workers, rates, 16384)
    expected = least_sufficient(model, rate, 1, 1024).workers
    assert from_file == from_flags
    assert from_file["workers"] == expected
    assert from_file["model"]["thetas"] == list(model.thetas)
    error = np.abs(model.rate(np.array(workers, dtype=float)) / np.array(rates) - 1).max()
    assert from_file["fitted"] == {"samples": 8, "sizes": 8,
                                   "max_relative_error": pytest.approx(error)}


def test_an_asynchronous_model_and_the_bounds(capsys):
    # f(w) = w / (0.001 + 0.1/w + 0.0001 w): f(5) = 5 / 0.0215 = 232.6, f(4) = 4 / 0.0264 = 151.5
    out = size(capsys, "--rate", "200", "--model", "asynchronous", "--thetas",
               "0.001,0.1,0.0001")
    assert out["workers"] == 5 and out["model"]["global_batch"] is None
    assert out["throughput"] == pytest.approx(5 / 0.0215)
    at_least = size(capsys, "--rate", "200", "--model", "asynchronous", "--thetas",
                    "0.001,0.1,0.0001", "--min-workers", "7", "--max-workers", "9")
    assert at_least["workers"] == 7 and at_least["throughput_one_fewer"] is None


@pytest.mark.parametrize("argv, message", [
    (["--rate", "1000", *SYNC, "--sample", "1:4000", "--sample", "2:9000"],
     "--sample: throughput fit: the synchronous model needs samples at 4 different worker "
     "counts, got 2 (1, 2): observe the job at more sizes"),
    (["--rate", "1000", *SYNC, "--sample", "1:4000", "--sample", "2:-9000"],
     "--sample 2:-9000: samples/s: expected a number > 0, got '-9000'"),
    (["--rate", "1000", *SYNC, "--sample", "0:4000"],
     "--sample 0:4000: workers: expected a whole number >= 1, got '0'"),
    (["--rate", "1000", *SYNC, "--sample", "4000"],
     "--sample: expected WORKERS:SAMPLES_PER_S, like 4:14500, got '4000'"),
    (["--rate", "60000", *SYNC, "--thetas", ",".join(PAPER)],
     "--rate: no size in 1..1024 workers exceeds 60,000 samples/s; the fastest, 10, gives "
     "30,005 (more workers only slow this job down)"),
    (["--rate", "9000", "--model", "asynchronous", "--thetas", "0.001,0.1,0.0001",
      "--max-workers", "50"],
     "--rate: no size in 1..50 workers exceeds 9,000 samples/s; the fastest, 50, gives "
     "6,250 (raise --max-workers: more workers may)"),
    (["--rate", "abc", *SYNC, "--thetas", ",".join(PAPER)],
     "--rate: expected a number, got 'abc'"),
    (["--rate", "-5", *SYNC, "--thetas", ",".join(PAPER)],
     "--rate: expected a number >= 0, got '-5'"),
    (["--rate", "1", *SYNC, "--thetas", "1,2,3"],
     "--thetas: throughput model: the synchronous model has 4 thetas, got 3"),
    (["--rate", "1", *SYNC, "--thetas", "1,2,x,4"],
     "--thetas: expected numbers separated by commas, got '1,2,x,4'"),
    (["--rate", "1", *SYNC, "--thetas", "1,-2,3,4"],
     "--thetas: throughput model: thetas must be finite and non-negative"),
    (["--rate", "1", "--model", "asynchronous", "--thetas", "0,0,0"],
     "--thetas: 0, 0, 0 make the time per sample 0 at 1 workers (an infinite rate)"),
    (["--rate", "1", "--model", "sync", "--thetas", "1,2,3,4"],
     "--model: expected one of synchronous, asynchronous, got 'sync'"),
    (["--rate", "1", "--model", "synchronous", "--thetas", "1,2,3,4"],
     "--global-batch: the synchronous model needs M"),
    (["--rate", "1", "--model", "synchronous", "--global-batch", "0", "--thetas", "1,2,3,4"],
     "--global-batch: expected a number > 0, got '0'"),
    (["--rate", "1", *SYNC], "--thetas, --sample, --samples: give exactly one"),
    (["--rate", "1", *SYNC, "--thetas", "1,2,3,4", "--sample", "1:5"],
     "got --thetas, --sample"),
    (["--rate", "1", *SYNC, "--thetas", "1,2,3,4", "--min-workers", "5", "--max-workers", "2"],
     "--min-workers: 5 is above --max-workers 2"),
    (["--rate", "1", *SYNC, "--thetas", "1,2,3,4", "--max-workers", "1.5"],
     "--max-workers: expected a whole number >= 1, got '1.5'"),
    (["--rate", "1", *SYNC, "--thetas", "1,2,3,4", "--max-workers", "999999"],
     "--max-workers: at most 100,000"),
], ids=["too-few-sizes", "negative-rate-sample", "zero-workers", "no-colon", "never-reached",
        "beyond-max", "rate-text", "rate-negative", "theta-count", "theta-text",
        "theta-negative", "theta-zero", "model", "no-batch", "zero-batch", "no-source",
        "two-sources", "bounds", "max-fraction", "max-huge"])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["size", "workers", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("headstart size workers: error: ") and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("text, message", [
    (None, "no such measurements file"),
    ("", "no header; expected the columns workers, samples_per_s"),
    ("workers,rate\n1,2\n", ":1: header lacks samples_per_s"),
    ("# made up\nworkers,samples_per_s\n1,2\n2,x\n", ":4: samples_per_s: expected a number, "
                                                      "got 'x'"),
    ("workers,samples_per_s\n1,2,3\n", ":2: expected 2 values, got 3"),
    ("workers,samples_per_s\n1.5,2\n", ":2: workers: expected a whole number >= 1"),
], ids=["missing", "empty", "header", "value", "row-length", "fraction"])
def test_a_bad_measurements_file_names_the_file_and_line(text, message, tmp_path, capsys):
    path = tmp_path / "m.csv"
    if text is not None:
        path.write_text(text)
    assert main(["size", "workers", "--rate", "1", *SYNC, "--samples", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}" in err and message in err and err.count("\n") == 1
