"""Config loading: defaults, durations, the PriorityClass rule, unknown fields and types."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bucketing.resources import Resources
from common.durations import duration_seconds as parse_duration
from common.errors import ConfigError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import (
    capacity_type_label,
    config_warnings,
    make_plan_config,
    placeholder_request,
    resolve_catalog,
)
from overprovisioner.config.load import load_config
from overprovisioner.config.parse import parse_config

EXAMPLE = Path(__file__).parents[3] / "overprovisioner" / "example-config.yaml"


def write(tmp_path: Path, document: dict, name: str = "op.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def test_defaults_follow_the_conventions(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, {"instance_types": ["g5.xlarge"]}))
    assert config.placeholders.namespace == "headstart"
    assert config.placeholders.priority_class_name == "headstart-placeholder"
    assert config.placeholders.priority_class_value == -5
    assert config.placeholders.expendable_pods_priority_cutoff == -10
    assert config.leader_election.lease_name == "headstart-overprovisioner"
    assert config.port == 8080
    assert config.tick_s == 300 and config.horizon_s == 390
    # 6m30s at 5-minute ticks: 390 / 300 = 1.3 -> rounded up to 2 ticks.
    assert config.horizon_ticks == 2
    assert config.placeholders.pause_image == "registry.k8s.io/pause:3.10"
    assert config.placeholders.request_gpus is True
    assert config.placeholders.scheduler_name == "headstart-scheduler"
    assert config.placeholders.size_from_nodes is True
    assert (config.placeholders.gpu_type_fraction, config.placeholders.cpu_type_fraction) == (
        0.8, 0.9)
    assert config.placeholders.wake_debounce_s == 5.0
    assert config.placeholders.autoscaler_status == "kube-system/cluster-autoscaler-status"


def test_example_config_loads() -> None:
    config = load_config(EXAMPLE)
    assert resolve_catalog(config).names == config.instance_types


@pytest.mark.parametrize(
    "path",
    [EXAMPLE, *sorted((Path(__file__).parents[3] / "manifests" / "overlays").glob(
        "*/overprovisioner-config.yaml"))],
    ids=lambda p: p.parent.name if p.name != "example-config.yaml" else "example",
)
def test_shipped_configs_can_plan_every_type(path) -> None:
    config = load_config(path)
    assert config_warnings(config, resolve_catalog(config)) == ()


@pytest.mark.parametrize(
    "limits, warned",
    [
        # p4d.24xlarge 32.77 $/h > the default cap 25: never planned
        ({}, ["p4d.24xlarge"]),
        # 32.77 <= 40: both plannable
        ({"cost_cap_per_hour": 40}, []),
        # 2 g5.xlarge mins take 2 x 1.006 = 2.012 of 34: 31.99 left < 32.77
        ({"cost_cap_per_hour": 34, "per_bucket": {"g5.xlarge": {"min": 2}}},
         ["p4d.24xlarge"]),
        # no cap, nothing to warn about
        ({"cost_cap_per_hour": None}, []),
        # p4d capped at max 0: nothing of it is ever wanted, so the cap hides nothing
        ({"per_bucket": {"p4d.24xlarge": {"max": 0}}}, []),
    ],
    ids=["default-cap", "cap-covers", "mins-eat-the-cap", "no-cap", "max-zero"],
)
def test_a_type_the_cost_cap_never_pays_for_is_warned(limits, warned) -> None:
    config = parse_config({"instance_types": ["g5.xlarge", "p4d.24xlarge"], "limits": limits},
                          "op.yaml")
    warnings = config_warnings(config, resolve_catalog(config))
    assert [w.split(" at ")[0].rsplit(" ", 1)[-1] for w in warnings] == warned
    for warning in warnings:
        assert warning.startswith("op.yaml: limits.cost_cap_per_hour: ")
        assert "32.77 $/h" in warning and "can ever be planned" in warning


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("5m", 300), ("6m30s", 390), ("24h", 86400), ("35d", 35 * 86400),
     ("500ms", 0.5), (120, 120)],
    ids=["seconds", "minutes", "compound", "hours", "days", "millis", "number"],
)
def test_parse_duration(text, seconds) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5 minutes", "m5", "", "-3s", True], ids=str)
def test_parse_duration_rejects(text) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


BAD = [
    # 5m expiry with 5m ticks: a healthy leader's placeholders would expire at each tick
    ({"instance_types": ["g5.xlarge"], "placeholders": {"expire_after": "5m"}},
     "placeholders.expire_after", "not longer than tick"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"expire_after": "0s"}},
     "placeholders.expire_after", "longer than zero"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"priority_class_value": -11}},
     "placeholders.priority_class_value", "CA ignores pods below the cutoff"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"priority_class_value": 0}},
     "placeholders.priority_class_value", "cannot\npreempt".replace("\n", " ")),
    ({"instance_types": ["g5.xlarge"],
      "placeholders": {"priority_class_value": -20, "expendable_pods_priority_cutoff": -10}},
     "placeholders.priority_class_value", "never make it launch a node"),
    ({"instance_types": ["g5.xlarge"], "tik": "5m"}, "tik", "unknown field"),
    ({"instance_types": ["g5.xlarge"], "limits": {"default": {"maxx": 3}}},
     "limits.default.maxx", "unknown field"),
    ({"instance_types": ["g5.xlarge"], "limits": {"default": {"max": -1}}},
     "limits.default.max", "expected a non-negative integer, got -1"),
    ({"instance_types": ["g5.xlarge"], "limits": {"default": {"min": 3, "max": 2}}},
     "limits.default.min", "exceeds max"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"backend": "karpenter"}},
     "placeholders.backend", "not one of"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"gpu_type_fraction": 0.5}},
     "placeholders.gpu_type_fraction", "two placeholders can share one node"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"cpu_type_fraction": 1.2}},
     "placeholders.cpu_type_fraction", "must lie in (0.5, 1]"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"scheduler_name": "Headstart_Sched"}},
     "placeholders.scheduler_name", "not a DNS-1123 subdomain"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"autoscaler_status": "cluster-autoscaler"}},
     "placeholders.autoscaler_status", "NAMESPACE/NAME"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"wake_debounce": "soon"}},
     "placeholders.wake_debounce", "not a duration"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"pause_image": "registry.k8s.io/pause"}},
     "placeholders.pause_image", "pinned"),
    ({"instance_types": ["g5.xlarge"],
      "placeholders": {"pause_image": "registry.k8s.io/pause:latest"}},
     "placeholders.pause_image", "pinned"),
    ({"instance_types": ["g5.xlarge"], "forecast": {"quantile": 1.5}},
     "forecast.quantile", "between 0 and 1"),
    ({"instance_types": ["g5.xlarge"], "tick": "soon"}, "tick", "not a duration"),
    ({"instance_types": ["g5.xlarge"], "leader_election": {"renew_deadline": "20s"}},
     "leader_election", "lease_duration"),
    ({"instance_types": ["g5.xlarge"],
      "placeholders": {"gpu_tolerations": [{"key": "nvidia.com/gpu", "operator": "In"}]}},
     "placeholders.gpu_tolerations[0].operator", "not Exists or Equal"),
    ({}, "instance_types", "list the bucket instance types"),
    ({"instance_types": ["g5.xlarge", "g5.xlarge"]}, "instance_types", "twice"),
    ({"instance_types": ["g5.xlarge"], "port": 70000}, "port", "from 1 to 65535, got 70000"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"request_gpus": "no"}},
     "placeholders.request_gpus", "expected true or false, got 'no'"),
    ({"instance_types": ["g5.xlarge"], "placeholders": {"request_gpus": 0}},
     "placeholders.request_gpus", "expected true or false, got 0"),
    ({"instance_types": ["g5.xlarge"], "known_demand": {"kueue": "yes"}},
     "known_demand.kueue", "expected true or false, got 'yes'"),
    ({"instance_types": ["g5.xlarge"], "known_demand": {"cronjob_lead": "0s"}},
     "known_demand.cronjob_lead", "longer than zero"),
    ({"instance_types": ["g5.xlarge"], "known_demand": {"suspended_window": "soon"}},
     "known_demand.suspended_window", "soon"),
    ({"instance_types": ["g5.xlarge"], "known_demand": {"slurm": True}},
     "known_demand.slurm", "unknown field"),
]


@pytest.mark.parametrize(
    "document, field_path, explanation", BAD,
    ids=["expire-within-a-tick", "expire-zero", "below-cutoff", "not-negative",
         "far-below-cutoff", "unknown-top", "unknown-nested",
         "negative-max", "min-over-max", "backend", "gpu-fraction-half", "cpu-fraction-over-1",
         "scheduler-name", "autoscaler-status", "debounce-duration", "untagged-image",
         "latest-image", "quantile", "duration", "lease-order", "toleration-operator", "no-types",
         "duplicate-type", "port", "request-gpus-string", "request-gpus-zero",
         "known-source-not-bool", "known-lead-zero", "known-window-not-duration",
         "known-unknown-source"],
)
def test_bad_config_names_file_field_and_why(tmp_path, document, field_path, explanation) -> None:
    path = write(tmp_path, document)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert str(path) in message
    assert f"{field_path}:" in message
    assert explanation in message


def test_unknown_instance_type_names_it_and_the_catalog(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, {"catalog": "gcp", "instance_types": ["g5.xlarge"]}))
    with pytest.raises(ConfigError, match=r"instance_types\[0\]: unknown instance type "
                                          r"'g5.xlarge' in catalog 'gcp'"):
        resolve_catalog(config)


def test_cost_cap_below_the_mins_is_refused(tmp_path: Path) -> None:
    # min 2 x p4d.24xlarge at 32.77 $/h = 65.54 $/h > the 10 $/h cap.
    config = load_config(write(tmp_path, {
        "instance_types": ["p4d.24xlarge"],
        "limits": {"per_bucket": {"p4d.24xlarge": {"min": 2, "max": 4}}, "cost_cap_per_hour": 10},
    }))
    with pytest.raises(ConfigError, match="cost_cap_per_hour"):
        resolve_catalog(config)


def test_buckets_file_from_tune(tmp_path: Path) -> None:
    tuned = {"buckets": {"catalog": "aws", "instance_types": ["g4dn.xlarge", "g5.12xlarge"]}}
    write(tmp_path, tuned, "buckets.yaml")
    config = load_config(write(tmp_path, {"buckets_file": "buckets.yaml"}))
    assert config.instance_types == ("g4dn.xlarge", "g5.12xlarge")
    assert config.catalog == "aws"


def test_a_limit_for_a_type_the_tuning_left_out_is_set_aside_and_named(tmp_path: Path) -> None:
    """The install docs copy the overlay's config, whose limits name its example types,
    and point it at a tuned list without them: the service must start, not crash-loop."""
    from overprovisioner.config.catalog import config_warnings

    write(tmp_path, {"buckets": {"catalog": "aws", "instance_types": ["g5.xlarge"]}},
          "buckets.yaml")
    config = load_config(write(tmp_path, {
        "buckets_file": "buckets.yaml",
        "limits": {"per_bucket": {"p4d.24xlarge": {"max": 1}, "g5.xlarge": {"max": 3}},
                   "placement_groups": {"p4d.24xlarge": ["pg-a"]}, "cost_cap_per_hour": 60}}))
    catalog = resolve_catalog(config)
    plan = make_plan_config(config)
    assert plan.limits("g5.xlarge").max == 3  # the listed type keeps its own limit
    assert dict(plan.placement_groups) == {}
    warnings = config_warnings(config, catalog)
    assert [w.split(": ")[1] for w in warnings] == [
        "limits.per_bucket.p4d.24xlarge", "limits.placement_groups.p4d.24xlarge"]
    assert all("not in buckets_file buckets.yaml (g5.xlarge)" in w for w in warnings)


def test_a_limit_for_a_type_no_catalog_has_is_still_refused(tmp_path: Path) -> None:
    write(tmp_path, {"buckets": {"catalog": "aws", "instance_types": ["g5.xlarge"]}},
          "buckets.yaml")
    config = load_config(write(tmp_path, {
        "buckets_file": "buckets.yaml", "limits": {"per_bucket": {"p4d.24xlage": {"max": 1}}}}))
    with pytest.raises(ConfigError, match=r"limits.per_bucket.p4d.24xlage: unknown instance "
                                          r"type in catalog 'aws'"):
        resolve_catalog(config)


def test_without_a_buckets_file_a_limit_outside_the_list_is_refused() -> None:
    config = parse_config({"instance_types": ["g5.xlarge"],
                           "limits": {"per_bucket": {"p4d.24xlarge": {"max": 1}}}}, "x.yaml")
    with pytest.raises(ConfigError, match="limits.per_bucket.p4d.24xlarge: not one of the "
                                          "bucket instance types"):
        resolve_catalog(config)


def test_buckets_file_with_unknown_field_names_that_file(tmp_path: Path) -> None:
    bucket_path = write(tmp_path, {"buckets": {"types": ["g5.xlarge"]}}, "buckets.yaml")
    with pytest.raises(ConfigError, match=f"{bucket_path}: buckets.types: unknown field"):
        load_config(write(tmp_path, {"buckets_file": "buckets.yaml"}))


def test_plan_config_carries_limits_for_every_type() -> None:
    config = parse_config({
        "instance_types": ["g5.xlarge", "p4d.24xlarge"],
        "limits": {"default": {"max": 6}, "per_bucket": {"p4d.24xlarge": {"min": 1, "max": 2}},
                   "placement_groups": {"p4d.24xlarge": ["pg-a", "pg-b"]}},
    }, "x.yaml")
    plan = make_plan_config(config)
    assert plan.limits("g5.xlarge").max == 6
    assert (plan.limits("p4d.24xlarge").min, plan.limits("p4d.24xlarge").max) == (1, 2)
    assert plan.groups("p4d.24xlarge") == ("pg-a", "pg-b")
    # horizon 390 s rounds up to 2 ticks of 300 s = 600 s.
    assert plan.horizon_s == 600


def test_daemonset_overhead_override_sizes_the_placeholder() -> None:
    config = parse_config({"instance_types": ["g5.xlarge"],
                           "placeholders": {"daemonset_overhead": {"cpu": "1", "memory": "1Gi"}}},
                          "x.yaml")
    catalog = resolve_catalog(config)
    # g5.xlarge allocatable 3920m CPU, 14819Mi memory; less 1 CPU and 1024Mi = 2920m,
    # 13795Mi; x 0.8 = 2336m and 11036Mi.
    assert placeholder_request(config, catalog, "g5.xlarge") == Resources(
        1000, 2336, 11036 * 1024**2
    )


@pytest.mark.parametrize(
    "placeholders, expected",
    [
        # p4d.24xlarge allocatable 8 GPUs, 95690m CPU, 1178083Mi; less the aws catalog's
        # daemonset overhead 300m / 512Mi: 95390m and 1177571Mi; x 0.8 (gpu_type_fraction)
        # = 76312m and 942056.8Mi -> 942056Mi.
        ({}, Resources(8000, 76312, 942056 * 1024**2)),
        ({"request_gpus": True}, Resources(8000, 76312, 942056 * 1024**2)),
        # GPUs 0, CPU and memory as above, so a real pod must still preempt it.
        ({"request_gpus": False}, Resources(0, 76312, 942056 * 1024**2)),
        # An overhead override applies first: 95690m - 1000m = 94690m, 1178083Mi - 1024Mi
        # = 1177059Mi; x 0.8 = 75752m and 941647.2Mi -> 941647Mi.
        ({"request_gpus": False, "daemonset_overhead": {"cpu": "1", "memory": "1Gi"}},
         Resources(0, 75752, 941647 * 1024**2)),
        # A fraction of 1 takes the whole base, as before fractions existed.
        ({"gpu_type_fraction": 1.0}, Resources(8000, 95390, 1177571 * 1024**2)),
    ],
    ids=["default", "true", "false", "false-with-overhead", "fraction-1"],
)
def test_request_gpus_sets_only_the_placeholders_gpus(placeholders, expected) -> None:
    config = parse_config({"instance_types": ["p4d.24xlarge"], "placeholders": placeholders},
                          "x.yaml")
    assert placeholder_request(config, resolve_catalog(config), "p4d.24xlarge") == expected


def test_request_gpus_false_loads_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, {"instance_types": ["p5.48xlarge"],
                            "placeholders": {"request_gpus": False}})
    assert load_config(path).placeholders.request_gpus is False


def test_defaults_object_is_frozen() -> None:
    config = OverprovisionerConfig()
    with pytest.raises(AttributeError):
        config.port = 1  # type: ignore[misc]


def test_cli_bad_config_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    from headstart.cli import main

    path = write(tmp_path, {"instance_types": ["g5.xlarge"],
                            "placeholders": {"priority_class_value": 3}})
    assert main(["overprovisioner", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "placeholders.priority_class_value" in err


def test_the_tuners_snippet_loads_as_buckets_file(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from bucketing.commands import snippet

    report = SimpleNamespace(recommended=("g4dn.xlarge", "p4d.24xlarge"), source="trace.csv",
                             gpu_model="A100", tick_s=300.0, times=range(10),
                             unbucketable_pods=0)
    (tmp_path / "buckets.yaml").write_text(snippet(report, "aws"))
    config = load_config(write(tmp_path, {"buckets_file": "buckets.yaml"}))
    assert config.instance_types == ("g4dn.xlarge", "p4d.24xlarge")


def test_an_overhead_larger_than_a_type_is_refused_at_start_up() -> None:
    # g5.xlarge has 3920m allocatable CPU: an 8-CPU overhead leaves nothing, so the
    # service must refuse to start rather than fail every tick's apply.
    config = parse_config({"instance_types": ["g5.xlarge"],
                           "placeholders": {"daemonset_overhead": {"cpu": "8", "memory": "1Gi"}}},
                          "x.yaml")
    with pytest.raises(ConfigError, match=r"x.yaml: placeholders.daemonset_overhead: .*g5.xlarge"):
        resolve_catalog(config)


def test_a_prometheus_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match=r"x.yaml: forecast.prometheus_url: expected an http"):
        parse_config({"instance_types": ["g5.xlarge"],
                      "forecast": {"prometheus_url": "prometheus:9090"}}, "x.yaml")
    config = parse_config({"instance_types": ["g5.xlarge"],
                           "forecast": {"prometheus_url": "http://prom:9090", "backfill": "2d"}},
                          "x.yaml")
    assert config.forecast.backfill_s == 2 * 86400  # 2 x 86,400 s


@pytest.mark.parametrize(
    "catalog, message",
    [
        ("awz", "catalog: 'awz' is neither a built-in catalog (aws, gcp) nor a file"),
        ("catalogs/mine.yaml", "catalog: 'catalogs/mine.yaml' is neither a built-in catalog"),
    ],
    ids=["typo", "missing-file"],
)
def test_a_catalog_typo_names_the_config_file(tmp_path: Path, capsys, catalog, message) -> None:
    from headstart.cli import main

    path = write(tmp_path, {"catalog": catalog, "instance_types": ["g5.xlarge"]})
    assert main(["overprovisioner", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}: {message}" in err


def test_a_catalog_typo_in_a_buckets_file_names_that_file(tmp_path: Path, capsys) -> None:
    from headstart.cli import main

    buckets = tmp_path / "buckets.yaml"
    buckets.write_text("buckets: {catalog: gcpp, instance_types: [g2-standard-4]}\n")
    trace = tmp_path / "t.csv"
    trace.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                     "creation_time,deletion_time,scheduled_time\np0,4000,1024,1,1000,,LS,"
                     "Running,0,,0\n")
    assert main(["backtest", "--trace", str(trace), "--buckets", str(buckets),
                 "--horizon", "10m"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{buckets}: catalog: 'gcpp' is neither a built-in catalog" in err


@pytest.mark.parametrize("field", ["history_path", "model_path"])
def test_a_missing_directory_for_the_history_or_model_is_one_line(tmp_path: Path, capsys,
                                                                  field) -> None:
    from headstart.cli import main

    missing = tmp_path / "var" / "lib" / "headstart" / "file"
    path = write(tmp_path, {"instance_types": ["g5.xlarge"],
                            "forecast": {field: str(missing)}})
    assert main(["overprovisioner", "--config", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (f"{path}: forecast.{field}: directory {missing.parent} of {missing} does not "
            "exist") in err
    assert not (tmp_path / "var").exists()  # nothing created on the way


def test_the_default_history_is_in_the_working_directory() -> None:
    # Relative: `--dry-run` on a laptop works for any user and creates no directory.
    assert OverprovisionerConfig().forecast.history_path == "headstart-history.sqlite"


def test_known_demand_section() -> None:
    config = parse_config({"instance_types": ["g5.xlarge"], "horizon": "6m30s",
                           "known_demand": {"jobs": False, "gated": False, "cronjob_lead": "15m",
                                            "suspended_window": "30m"}}, "op.yaml")
    known = config.known_demand
    assert known.enabled() == ("kueue", "jobsets", "kubeflow", "rayjobs", "podgroups",
                               "cronjobs")
    assert (known.lead_s(config.horizon_s), known.suspended_window_s) == (900.0, 1800.0)
    default = parse_config({"instance_types": ["g5.xlarge"]}, "op.yaml").known_demand
    assert len(default.enabled()) == 8
    assert default.lead_s(390.0) == 390.0  # null lead = the horizon


@pytest.mark.parametrize(
    "tick_s, horizon_s, window_s",
    [(300.0, 390.0, 690.0),  # the defaults: 5 min + 6m30s
     (60.0, 600.0, 660.0)],  # 1 min + 10 min
    ids=["defaults", "short-tick"],
)
def test_known_demand_counts_within_tick_plus_horizon(tick_s, horizon_s, window_s):
    from overprovisioner.config import OverprovisionerConfig

    config = OverprovisionerConfig(tick_s=tick_s, horizon_s=horizon_s)
    assert config.known_window_s == window_s


@pytest.mark.parametrize("catalog, given, expected", [
    ("aws", None, "eks.amazonaws.com/capacityType"),  # auto: EKS managed node groups
    ("gcp", None, "cloud.google.com/gke-spot"),
    ("aws", "karpenter.sh/capacity-type", "karpenter.sh/capacity-type"),
    ("aws", "", ""),  # zones only
], ids=["aws-auto", "gcp-auto", "karpenter", "off"])
def test_the_capacity_type_label_defaults_by_catalog(catalog, given, expected) -> None:
    placeholders = {} if given is None else {"capacity_type_label": given}
    config = parse_config({"catalog": catalog, "instance_types": ["x"],
                           "placeholders": placeholders}, "op.yaml")
    assert capacity_type_label(config) == expected


def test_an_unknown_capacity_type_label_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"op.yaml: placeholders.capacity_type_label: "
                                          r"'node.kubernetes.io/lifecycle' is not one of"):
        parse_config({"instance_types": ["x"], "placeholders": {
            "capacity_type_label": "node.kubernetes.io/lifecycle"}}, "op.yaml")
