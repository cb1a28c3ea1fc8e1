"""KOD2's weight (locality.admission.weight)."""

from __future__ import annotations

import math

import pytest

from bucketing.resources import Resources
from common.errors import ConfigError
from locality.admission.config import AdmissionConfig
from locality.admission.weight import (
    ElasticConfig,
    WeightConfig,
    WorkerPlansConfig,
    units,
    weight,
)

CONFIG = WeightConfig()


def test_the_weight_is_the_sigmoid_of_minimum_over_the_request_in_units():
    request = Resources.of(0, 4, 16)  # 4 cores + 16 GiB / 4 = 8 units
    assert units(request, CONFIG) == pytest.approx(8.0)
    assert weight(2, request, 0, CONFIG) == pytest.approx(1 / (1 + math.exp(-2 / 8)))


def test_small_requests_go_first_and_gpus_count_only_when_asked():
    small, large = Resources.of(8, 2, 8), Resources.of(8, 32, 256)
    assert weight(1, small, 0, CONFIG) > weight(1, large, 0, CONFIG)
    assert units(Resources.of(8, 0, 0), CONFIG) == 0
    with_gpus = WeightConfig(gpus_per_unit=1.0)
    assert units(Resources.of(8, 0, 0), with_gpus) == 8


def test_a_starved_job_outweighs_every_job_that_has_not_starved():
    heavy = Resources.of(0, 512, 4096)
    starved = weight(1, heavy, CONFIG.starvation_seconds, CONFIG)
    assert starved > weight(1000, Resources.of(0, 0.1, 0.1), CONFIG.starvation_seconds - 1,
                            CONFIG)
    assert weight(1, Resources(), 0, CONFIG) == 1.0


@pytest.mark.parametrize("field,value", [("cpu_cores_per_unit", 0), ("memory_gib_per_unit", -1),
                                         ("gpus_per_unit", "x"), ("starvation_seconds", 0),
                                         ("starvation_bonus", -0.5)])
def test_bad_settings_name_the_file_and_the_field(field, value):
    with pytest.raises(ConfigError, match=f"extender.yaml: elastic: weight.{field}: expected"):
        AdmissionConfig.from_mapping({"elastic": {"weight": {field: value}}}, "extender.yaml")


def test_the_elastic_section_reads_its_fields_and_refuses_unknown_ones():
    config = AdmissionConfig.from_mapping(
        {"elastic": {"enabled": False, "scale_out_after_seconds": 5,
                     "weight": {"gpus_per_unit": 2}}}, "x.yaml").elastic
    assert config == ElasticConfig(False, WeightConfig(gpus_per_unit=2), 5.0)
    assert AdmissionConfig().elastic == ElasticConfig()
    with pytest.raises(ConfigError, match="x.yaml: elastic: scale_in: unknown field"):
        AdmissionConfig.from_mapping({"elastic": {"scale_in": 1}}, "x.yaml")
    with pytest.raises(ConfigError, match="x.yaml: elastic: weight.gpu: unknown field"):
        AdmissionConfig.from_mapping({"elastic": {"weight": {"gpu": 1}}}, "x.yaml")


def test_the_worker_plans_settings_default_to_the_overprovisioners_configmap():
    assert ElasticConfig().worker_plans == WorkerPlansConfig(
        "headstart-placeholders", "headstart-worker-plans", 15.0)
    config = AdmissionConfig.from_mapping(
        {"elastic": {"worker_plans": {"namespace": "plans", "refresh_seconds": 30}}},
        "x.yaml").elastic.worker_plans
    assert config == WorkerPlansConfig("plans", "headstart-worker-plans", 30.0)


@pytest.mark.parametrize("worker_plans, error", [
    ("on", "worker_plans: expected a mapping"),
    ({"name": ""}, "worker_plans: name: expected a non-empty string"),
    ({"namespace": 3}, "worker_plans: namespace: expected a non-empty string"),
    ({"refresh_seconds": 0}, "worker_plans: refresh_seconds: expected a number of seconds, "
                             "at least 1, got 0"),
    ({"refresh_seconds": True}, "worker_plans: refresh_seconds: expected"),
    ({"every": 5}, r"worker_plans: every: unknown field \(known here: name, namespace, "
                   "refresh_seconds"),
], ids=["not-a-mapping", "empty-name", "namespace-not-a-string", "refresh-zero",
        "refresh-bool", "unknown-field"])
def test_bad_worker_plans_settings_name_the_file_and_the_field(worker_plans, error):
    with pytest.raises(ConfigError, match=f"extender.yaml: elastic: {error}"):
        AdmissionConfig.from_mapping({"elastic": {"worker_plans": worker_plans}},
                                     "extender.yaml")
