"""The edge never fails with anything but InputError, whatever JSON arrives."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import InputError
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_node_topology, parse_pod
from tests.locality.test_parse import NRT

CONFIG = LocalityConfig()

POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u",
                 "labels": {"headstart.io/job": "j", "headstart.io/placeholder": "true"},
                 "annotations": {"headstart.io/packing": "spread"}},
    "spec": {
        "nodeName": "n1", "priority": 3,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                   "limits": {"nvidia.com/gpu": "1"}}}],
        "initContainers": [{"name": "i", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "500m"}}}],
        "overhead": {"cpu": "100m"},
        "resources": {"requests": {"cpu": "2"}, "limits": {"memory": "2Gi"}},
    },
    "status": {"phase": "Running"},
}
NODE = {
    "metadata": {"name": "n1", "labels": {"headstart.io/placement-group": "pg-a"}},
    "spec": {"unschedulable": False,
             "taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8"},
               "conditions": [{"type": "Ready", "status": "True"}]},
}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**12) | st.floats(allow_nan=True)
    | st.text(max_size=8) | st.sampled_from(["1", "500m", "-1", "1Gi", "Node", "true", ""]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


def paths(obj, prefix=()):
    """Every (container path) inside a JSON object, including the root."""
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from paths(value, (*prefix, index))


def mutated(base, data):
    obj = copy.deepcopy(base)
    all_paths = [path for path in paths(obj) if path]
    path = data.draw(st.sampled_from(all_paths))
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(JSON)
    return obj


PARSERS = [(parse_pod, POD), (parse_node, NODE), (parse_node_topology, NRT)]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_objects_parse_or_raise_input_error(data):
    parser, base = data.draw(st.sampled_from(PARSERS))
    obj = mutated(base, data)
    try:
        parser(obj, CONFIG)
    except InputError:
        pass


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_arbitrary_json_parses_or_raises_input_error(obj):
    for parser, _ in PARSERS:
        try:
            parser(obj, CONFIG)
        except InputError:
            pass
