"""Every object the placeholder backends write is valid for the real API server.

CapacityBuffers are checked against the CRD cluster-autoscaler ships (vendored in
data/, header names the commit), for every version it serves, with jsonschema:
- structurally: a field the schema does not declare would be pruned by the API server
  (or refused with strict field validation), so undeclared fields fail here
  (`additionalProperties: false` added where the schema has properties and does not
  preserve unknown fields);
- the CRD's CEL rules (`x-kubernetes-validations`), which jsonschema cannot evaluate,
  are translated below one by one; a rule this file does not know fails the test, so a
  new upstream rule cannot pass unnoticed.
Deployments, PodTemplates and the PriorityClass are checked with the Kubernetes OpenAPI
schemas of the oldest and newest supported releases (kubernetes-validate).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from bucketing.resources import Resources
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.parse import parse_config
from overprovisioner.planner.plan import PlannedBucket
from overprovisioner.service.objects import (
    CAPACITY_BUFFER_VERSIONS,
    desired_objects,
    priority_class,
)
from tests.manifests.checks import KUBERNETES_VERSIONS

CRD_FILE = Path(__file__).parents[1] / "data" / "autoscaling.x-k8s.io_capacitybuffers.yaml"
CRD = next(doc for doc in yaml.safe_load_all(CRD_FILE.read_text()) if doc)
SERVED = {v["name"]: v for v in CRD["spec"]["versions"] if v.get("served")}

# The CRD's CEL rules on `spec`, as Python: `has(self.x)` is "x is set".
CEL_RULES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)":
        lambda spec: "podTemplateRef" not in spec or "replicas" in spec or "limits" in spec,
    "!(has(self.podTemplateRef) && has(self.scalableRef))":
        lambda spec: not ("podTemplateRef" in spec and "scalableRef" in spec),
}


def strict(schema: Any) -> Any:
    """The schema with undeclared fields refused, as structural pruning would drop them."""
    if isinstance(schema, dict):
        result = {key: strict(value) for key, value in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            result["additionalProperties"] = False
        return result
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    return schema


def problems(body: Mapping[str, Any], version: str) -> list[str]:
    """Why the API server serving `version` of the CRD would refuse or prune `body`."""
    schema = SERVED[version]["schema"]["openAPIV3Schema"]
    found = [f"{'.'.join(map(str, e.absolute_path)) or '(object)'}: {e.message}"
             for e in jsonschema.Draft7Validator(strict(schema)).iter_errors(body)]
    spec_schema = schema["properties"]["spec"]
    for rule in spec_schema.get("x-kubernetes-validations") or []:
        check = CEL_RULES.get(rule["rule"])
        if check is None:
            found.append(f"spec: CEL rule {rule['rule']!r} is not translated in this test")
        elif not check(body.get("spec") or {}):
            found.append(f"spec: {rule['message']}")
    return found


def make_config(**placeholders):
    return parse_config({"instance_types": ["m5.large", "g5.xlarge", "p4d.24xlarge"],
                         "placeholders": {"backend": "capacitybuffer", **placeholders}},
                        "test.yaml")


def planned(instance_type, group="", wanted=1):
    return PlannedBucket(instance_type, group, float(wanted), 0, 0, 0, 0, wanted, None, "t")


PLANS = {
    "gpu-in-group": [planned("g5.xlarge", "pg-a", 3)],
    "cpu-type": [planned("m5.large")],
    "zero-wanted": [planned("p4d.24xlarge", "", 0)],
    "several": [planned("g5.xlarge", "pg-a", 1), planned("g5.xlarge", "pg-b", 2),
                planned("p4d.24xlarge", "", 1)],
}
CONFIGS = {
    "defaults": {},
    "no-gpus-default-scheduler": {"request_gpus": False, "scheduler_name": ""},
}


def written(plan: str, config_name: str, api_version: str, measured: bool = False):
    config = make_config(**CONFIGS[config_name])
    requests = {"g5.xlarge": Resources(1000, 3670, 13800 * 1024**2)} if measured else None
    return desired_objects(PLANS[plan], config, resolve_catalog(config), "capacitybuffer",
                           requests, api_version)


def test_the_code_knows_the_versions_the_crd_serves() -> None:
    assert set(SERVED) == set(CAPACITY_BUFFER_VERSIONS)
    assert [v["name"] for v in CRD["spec"]["versions"] if v.get("storage")] == ["v1beta1"]


@pytest.mark.parametrize("version", sorted(SERVED))
@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_every_capacity_buffer_written_is_valid(plan, config_name, version) -> None:
    api_version = f"{CRD['spec']['group']}/{version}"
    objects = written(plan, config_name, api_version, measured=plan == "several")
    buffers = [o for o in objects if o.kind == "CapacityBuffer"]
    templates = {o.name for o in objects if o.kind == "PodTemplate"}
    assert len(buffers) == len(PLANS[plan])
    for buffer in buffers:
        assert buffer.api_version == api_version
        assert problems(dict(buffer.body), version) == [], buffer.name
        # Its template is written beside it, in the same namespace.
        assert buffer.body["spec"]["podTemplateRef"]["name"] in templates


@pytest.mark.parametrize("version", sorted(SERVED))
def test_the_check_catches_what_the_server_would_refuse(version) -> None:
    (buffer,) = [o for o in written("cpu-type", "defaults", f"autoscaling.x-k8s.io/{version}")
                 if o.kind == "CapacityBuffer"]
    unknown = copy.deepcopy(dict(buffer.body))
    unknown["spec"]["replica"] = 2  # a typo the server would silently prune
    assert any("replica" in p for p in problems(unknown, version))
    no_count = copy.deepcopy(dict(buffer.body))
    del no_count["spec"]["replicas"]
    assert any("replicas or limits must also be set" in p for p in problems(no_count, version))
    negative = copy.deepcopy(dict(buffer.body))
    negative["spec"]["replicas"] = -1
    assert any("minimum" in p or "less than" in p for p in problems(negative, version))


@pytest.mark.parametrize("kubernetes", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("backend", ["deployment", "capacitybuffer"])
def test_built_in_objects_pass_the_kubernetes_schemas(backend, kubernetes) -> None:
    config = make_config(backend=backend)
    objects = desired_objects(PLANS["several"], config, resolve_catalog(config), backend)
    for obj in [*objects, priority_class(config)]:
        if obj.kind == "CapacityBuffer":
            continue  # a CRD: checked against its own schema above
        kubernetes_validate.validate(dict(obj.body), kubernetes, strict=True)
