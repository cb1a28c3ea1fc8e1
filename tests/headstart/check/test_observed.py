"""The edge of `headstart check`: the version, flags, mounted files, configs
(headstart/check/core/observed.py, configs.py)."""

from __future__ import annotations

import pytest
import yaml

from common.errors import InputError
from headstart.check.core.configs import installed as installed_configs
from headstart.check.core.configs import scheduler_config, url_host
from headstart.check.core.observed import FileSource, flag, parse_version, parse_workload
from tests.headstart.check.builders import installed, shipped_text, with_config


@pytest.mark.parametrize(("raw", "minor"), [
    ({"major": "1", "minor": "33+", "gitVersion": "v1.33.5-eks-3025e55"}, 33),
    ({"major": "1", "minor": "35", "gitVersion": "v1.35.2-gke.1485000"}, 35),
], ids=["eks", "gke"])
def test_the_control_planes_minor(raw, minor):
    assert parse_version(raw).minor == minor


def test_a_version_that_is_not_kubernetes_1_is_bad_input():
    with pytest.raises(InputError, match="not Kubernetes 1.x"):
        parse_version({"major": "2", "minor": "0"})


@pytest.mark.parametrize(("argv", "values"), [
    (("--cutoff=-10",), ["-10"]),
    (("--cutoff", "-10"), ["-10"]),
    (("--cutoff", "--v=2"), ["true"]),
    (("--cutoff",), ["true"]),
    (("--cutoff=1", "--cutoff=2"), ["1", "2"]),
    (("--cutoffs=1",), []),
], ids=["equals", "separate", "bare-before-flag", "bare-last", "repeated", "other-flag"])
def test_flags_as_pflag_reads_them(argv, values):
    assert flag(argv, "cutoff") == values


def test_a_file_comes_from_the_volume_mounted_at_its_folder():
    workload = parse_workload({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "template": {"spec": {
            "containers": [{"name": "c", "image": "i", "volumeMounts": [
                {"name": "tls", "mountPath": "/etc/tls"},
                {"name": "config", "mountPath": "/etc/app/"},
                {"name": "one", "mountPath": "/etc/one/file.yaml", "subPath": "file.yaml"}]}],
            "volumes": [{"name": "tls", "secret": {"secretName": "s"}},
                        {"name": "config", "configMap": {"name": "cm", "items": [
                            {"key": "real-key", "path": "config.yaml"}]}},
                        {"name": "one", "configMap": {"name": "other"}}]}}}})
    assert workload.file_source("/etc/tls/tls.crt") == FileSource("secret", "s", "tls.crt")
    assert workload.file_source("/etc/app/config.yaml") == FileSource("configMap", "cm",
                                                                      "real-key")
    assert workload.file_source("/etc/app/missing.yaml") is None
    assert workload.file_source("/etc/one/file.yaml") is None  # subPath mounts: not followed


def test_the_shipped_configs_load_from_their_configmaps():
    found = installed_configs(installed())
    assert found.scheduler.value.coscheduling
    assert found.scheduler.value.extender_host == "headstart-extender.headstart.svc"
    assert found.extender.value.tls_cert_file == "/etc/headstart-tls/tls.crt"
    assert found.overprovisioner.value.instance_types == ("g5.xlarge", "p4d.24xlarge")
    assert found.gate_tls_dir == ""


@pytest.mark.parametrize(("config", "error"), [
    ("port: [\n", "not valid YAML"),
    ("prot: 8888\n", "prot: unknown field"),
], ids=["yaml", "unknown-field"])
def test_a_config_the_process_would_refuse_is_an_error_naming_its_configmap(config, error):
    found = installed_configs(with_config(installed(), "headstart-extender-config", config))
    assert found.extender.value is None
    assert "ConfigMap headstart-extender-config (config.yaml)" in found.extender.error
    assert error in found.extender.error


def test_a_tuned_bucket_list_is_read_from_the_same_configmap():
    config = shipped_text("manifests/overlays/eks/overprovisioner-config.yaml").replace(
        "instance_types: [g5.xlarge, p4d.24xlarge]", "buckets_file: buckets.yaml")
    buckets = yaml.safe_dump({"buckets": {"catalog": "aws", "instance_types": ["g5.12xlarge"]}})
    observed = installed()
    observed = type(observed)(**{**observed.__dict__, "config_maps": {
        **observed.config_maps, "headstart-overprovisioner-config": {
            "config.yaml": config, "buckets.yaml": buckets}}})
    assert installed_configs(observed).overprovisioner.value.instance_types == ("g5.12xlarge",)
    del observed.config_maps["headstart-overprovisioner-config"]["buckets.yaml"]
    assert "has no key buckets.yaml" in installed_configs(observed).overprovisioner.error


@pytest.mark.parametrize(("url", "host"), [
    ("https://headstart-extender.headstart.svc:8888", "headstart-extender.headstart.svc"),
    ("http://127.0.0.1:9000/prefix", "127.0.0.1"),
    ("https://[::1]:8888", "::1"),
    ("not a url", ""),
], ids=["service", "ip", "ipv6", "none"])
def test_the_extenders_host(url, host):
    assert url_host(url) == host


def test_coscheduling_is_read_from_the_profiles_plugins():
    assert scheduler_config(yaml.safe_load(shipped_text(
        "manifests/base/scheduler/scheduler-config.yaml"))).coscheduling
    assert not scheduler_config(yaml.safe_load(shipped_text(
        "manifests/components/without-coscheduling/scheduler-config.yaml"))).coscheduling
