"""`headstart size weight`: KOD2's weight through the CLI is
`locality.admission.weight.weight` of the job's minimum and its whole request at that
size, and every bad input is one line and exit 2."""

from __future__ import annotations

import json

import pytest
import yaml

from bucketing.resources import Resources
from headstart.cli import main
from locality.admission.weight import WeightConfig, weight
from tests.overprovisioner.planner.test_job_profile import indexed_job, pytorch_job


def manifest(tmp_path, job):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


def weigh(capsys, *argv):
    assert main(["size", "weight", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_indexed_jobs_weight_is_kod2s_at_its_minimum(tmp_path, capsys):
    # min-size 3 workers of 4 CPU, 16 GiB, 1 GPU: 12 cores + 48 GiB / 4 = 24 units
    job = indexed_job("clicks", 5, **{"headstart.io/min-size": "3"})
    out = weigh(capsys, manifest(tmp_path, job))
    request = Resources.of(gpus=3, cpu=12, memory_gib=48)
    assert out["job"] == "Job ml/clicks" and out["minimum"] == 3
    assert out["request"] == {"cpu": 12.0, "memory_gib": 48.0, "gpus": 3.0}
    assert out["units"] == 24.0
    assert out["weight"] == weight(3, request, 0.0, WeightConfig())
    assert out["weight"] == pytest.approx(1 / (1 + 2.718281828459045 ** (-3 / 24)))
    assert out["starved"] is False and out["weight_unstarved"] == out["weight"]


def test_a_pytorchjobs_request_counts_its_master(tmp_path, capsys):
    job = pytorch_job("p", 4)
    job["metadata"]["annotations"] = {"headstart.io/min-size": "2",
                                      "headstart.io/max-size": "8"}
    # 2 workers + 1 Master, each 8 CPU, 32 GiB, 8 GPUs: 24 cores + 96 GiB / 4 = 48 units
    out = weigh(capsys, manifest(tmp_path, job))
    assert out["request"] == {"cpu": 24.0, "memory_gib": 96.0, "gpus": 24.0}
    assert out["units"] == 48.0 and out["minimum"] == 2
    assert out["weight"] == weight(2, Resources.of(gpus=24, cpu=24, memory_gib=96), 0.0,
                                   WeightConfig())


def test_from_numbers_with_the_settings_and_starvation(capsys):
    # 4 workers of 2 CPU, 8 GiB, 1 GPU: 8 / 2 + 32 / 8 + 4 / 1 = 12 units; waited 15m >= 10m
    out = weigh(capsys, "--minimum", "4", "--cpu", "2000m", "--memory", "8Gi", "--gpus", "1",
                "--waited", "15m", "--cpu-cores-per-unit", "2", "--memory-gib-per-unit", "8",
                "--gpus-per-unit", "1", "--starvation", "10m", "--starvation-bonus", "0.5")
    config = WeightConfig(2.0, 8.0, 1.0, 600.0, 0.5)
    request = Resources.of(gpus=4, cpu=8, memory_gib=32)
    assert out["job"] is None and out["units"] == 12.0 and out["starved"] is True
    assert out["weight"] == weight(4, request, 900.0, config)
    assert out["weight"] == pytest.approx(out["weight_unstarved"] + 0.5)
    assert out["settings"] == {"cpu_cores_per_unit": 2.0, "memory_gib_per_unit": 8.0,
                               "gpus_per_unit": 1.0, "starvation_seconds": 600.0,
                               "starvation_bonus": 0.5}
    unstarved = weigh(capsys, "--minimum", "4", "--cpu", "2", "--memory", "8Gi",
                      "--waited", "9m59s")
    assert unstarved["starved"] is False and unstarved["waited_seconds"] == 599.0


def test_the_text_says_how_the_weight_is_reached(capsys):
    assert main(["size", "weight", "--minimum", "2", "--cpu", "4", "--memory", "16Gi"]) == 0
    assert capsys.readouterr().out == (
        "KOD2 weight 0.5312\n"
        "  2 workers at its minimum ask 8 CPU, 32 GiB, 0 GPU = 16 units (1 core or 4 GiB a "
        "unit, GPUs not counted)\n"
        "  sigmoid(2 / 16) = 0.5312; waited 0 s, not starved (under 600 s)\n")


@pytest.mark.parametrize("argv, message", [
    ([], "--minimum, --cpu, --memory: missing"),
    (["--minimum", "2", "--cpu", "1"], "--memory: missing"),
    (["--minimum", "0", "--cpu", "1", "--memory", "1Gi"],
     "--minimum: expected a whole number >= 1, got '0'"),
    (["--minimum", "2", "--cpu", "lots", "--memory", "1Gi"],
     "--cpu: 'lots' is not a Kubernetes quantity"),
    (["--minimum", "2", "--cpu", "1", "--memory=-1Gi"], "--memory: '-1Gi' is negative"),
    (["--minimum", "2", "--cpu", "1", "--memory", "1Gi", "--waited", "5"],
     "--waited: '5' has no unit"),
    (["--minimum", "2", "--cpu", "1", "--memory", "1Gi", "--starvation", "0s"],
     "--starvation: must be positive"),
    (["--minimum", "2", "--cpu", "1", "--memory", "1Gi", "--cpu-cores-per-unit", "-1"],
     "--cpu-cores-per-unit: expected a number > 0, got -1.0"),
    (["--minimum", "2", "--cpu", "1", "--memory", "1Gi", "--memory-gib-per-unit", "x"],
     "--memory-gib-per-unit: expected a number, got 'x'"),
    (["--minimum", "2", "--cpu", "1", "--memory", "1Gi", "--starvation-bonus", "-1"],
     "--starvation-bonus: expected a number >= 0, got -1.0"),
    (["/no/such/job.yaml"], "/no/such/job.yaml: cannot read"),
], ids=["nothing", "no-memory", "minimum", "cpu", "memory", "waited-unit", "starvation",
        "cpu-unit", "memory-unit-text", "bonus", "missing-file"])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["size", "weight", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("headstart size weight: error: ") and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("change, message", [
    (lambda job: job["metadata"].pop("annotations"), "not an elastic job"),
    (lambda job: job["metadata"]["annotations"].update({"headstart.io/min-size": "9"}),
     "headstart.io/min-size=9 is above headstart.io/max-size=8"),
    (lambda job: job.update(kind="Deployment"), "expected a Job or a PyTorchJob manifest"),
], ids=["not-elastic", "bad-bounds", "kind"])
def test_a_manifest_that_cannot_be_weighed_says_why(change, message, tmp_path, capsys):
    job = indexed_job("clicks", 4, **{"headstart.io/max-size": "8"})
    change(job)
    assert main(["size", "weight", manifest(tmp_path, job)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_manifest_and_numbers_together_are_refused(tmp_path, capsys):
    path = manifest(tmp_path, indexed_job("clicks", 4))
    assert main(["size", "weight", path, "--minimum", "2", "--cpu", "1"]) == 2
    assert "--minimum, --cpu: give JOB.yaml or these, not both" in capsys.readouterr().err
