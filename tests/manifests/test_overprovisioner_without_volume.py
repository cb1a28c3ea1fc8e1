"""manifests/components/overprovisioner-without-volume: the overprovisioner with no
volume a lost zone can hold (its history on an emptyDir, read back from Prometheus at
start-up), rendered with the real kustomize and checked like the overlays."""

from __future__ import annotations

import pytest
import yaml

from tests.manifests import checks

COMPONENT = "overprovisioner-without-volume"


def with_prometheus(rendered: checks.Rendered, url: str) -> None:
    """Set forecast.prometheus_url in the rendered overprovisioner config, as the user's
    copy of the config does before adding the component."""
    configmap, config = checks.config_file(rendered, "headstart-overprovisioner-config")
    config.setdefault("forecast", {})["prometheus_url"] = url
    configmap["data"]["config.yaml"] = yaml.safe_dump(config)


@pytest.mark.parametrize("overlay", checks.OVERLAYS)
def test_no_claim_and_the_history_on_an_empty_dir(tmp_path, overlay):
    rendered = checks.render(overlay, checks.MANIFESTS, tmp_path, (COMPONENT,))
    assert not rendered.of_kind("PersistentVolumeClaim")
    deployment = rendered.find("Deployment", "headstart-overprovisioner")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["history"] == {"name": "history", "emptyDir": {"sizeLimit": "2Gi"}}
    # Without Prometheus every restart would cold-start: the check says so, naming it.
    problems = checks.consistency_problems(rendered)
    assert len(problems) == 1 and "forecast.prometheus_url" in problems[0], problems
    with_prometheus(rendered, "http://prometheus.monitoring.svc:9090")
    assert checks.consistency_problems(rendered) == []
    assert checks.security_problems(rendered) == []
