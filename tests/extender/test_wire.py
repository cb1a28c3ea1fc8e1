"""The wire format against real kube-scheduler captures, key folding, faults, and a fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import InputError
from extender.wire import (
    decode_json,
    encode_binding_result,
    encode_filter_result,
    encode_host_priorities,
    parse_binding_args,
    parse_extender_args,
)
from locality.config import LocalityConfig
from locality.parse import parse_pod
from tests.extender.builders import make_pod

CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "extender-captures"


def capture(name: str):
    path = CAPTURES / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    return json.loads(path.read_text())


def shape(value):
    """Keys and JSON types, recursively for objects (the part of a response Go decodes)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    return type(value).__name__


# ---- requests from the captures -------------------------------------------------------


@pytest.mark.parametrize(
    "name, names, nodes",
    [
        ("filter-nodecachecapable-true", ["gpu-b-1", "gpu-a-1"], None),
        ("prioritize-nodecachecapable-true", ["gpu-b-1", "gpu-a-1"], None),
        ("filter-nodecachecapable-false", None, ["cpu-a-1", "gpu-a-1"]),
        ("prioritize-nodecachecapable-false", None, ["cpu-a-1", "gpu-a-1"]),
    ],
    ids=["filter-cache", "prioritize-cache", "filter-nocache", "prioritize-nocache"],
)
def test_captured_requests_parse(name, names, nodes):
    args = parse_extender_args(capture(f"{name}.request.json"))
    assert args.node_names == names
    if nodes is None:
        assert args.nodes is None
    else:
        assert [node["metadata"]["name"] for node in args.nodes] == nodes
    assert args.candidate_names() == (names or nodes)
    assert args.pod["metadata"]["namespace"] == "ext-test"


def test_filter_answer_with_cache_has_the_accepted_shape():
    accepted = capture("filter-nodecachecapable-true.response.json")
    ours = json.loads(
        encode_filter_result(["gpu-b-1", "gpu-a-1"], {}, {}, node_cache_capable=True)
    )
    assert ours == accepted  # both nodes pass, nothing failed: byte-for-byte the same data


def test_filter_answer_without_cache_echoes_the_nodes_like_the_accepted_one():
    request = capture("filter-nodecachecapable-false.request.json")
    accepted = capture("filter-nodecachecapable-false.response.json")
    nodes = request["Nodes"]["items"]
    ours = json.loads(
        encode_filter_result(["cpu-a-1", "gpu-a-1"], {}, {}, node_cache_capable=False,
                             nodes=nodes)
    )
    assert shape(ours) == shape(accepted)
    assert ours["Nodes"]["items"] == accepted["Nodes"]["items"]


@pytest.mark.parametrize("mode", ["true", "false"], ids=["cache", "nocache"])
def test_prioritize_answer_has_the_accepted_shape(mode):
    accepted = capture(f"prioritize-nodecachecapable-{mode}.response.json")
    hosts = [entry["Host"] for entry in accepted]
    ours = json.loads(encode_host_priorities(hosts, [0] * len(hosts)))
    assert ours == accepted


def test_filter_answer_without_cache_keeps_only_passing_nodes_and_never_null():
    nodes = [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]
    kept = json.loads(encode_filter_result(["b"], {"a": "full"}, {}, False, nodes))
    none = json.loads(encode_filter_result([], {}, {"a": "x", "b": "y"}, False, nodes))
    assert kept["Nodes"]["items"] == [{"metadata": {"name": "b"}}]
    assert kept["FailedNodes"] == {"a": "full"}
    # A null Nodes would also mean "none pass"; an empty list says it without ambiguity.
    assert none["Nodes"] == {"metadata": {}, "items": []}


@pytest.mark.parametrize(
    "scores, expected",
    [([0, 10], [0, 10]), ([-3, 14], [0, 10]), ([7, 5], [7, 5])],
    ids=["bounds", "clamped", "middle"],
)
def test_host_priorities_clamp_scores_to_0_10(scores, expected):
    ours = json.loads(encode_host_priorities(["n1", 'we"ird'], scores))
    assert ours == [{"Host": "n1", "Score": expected[0]}, {"Host": 'we"ird', "Score": expected[1]}]


# ---- key folding (Go decodes keys case-insensitively, an exact match first) ------------


POD = make_pod("p")


@pytest.mark.parametrize(
    "document, names",
    [
        ({"pod": POD, "nodenames": ["a"]}, ["a"]),
        ({"POD": POD, "NODENAMES": ["a"], "nodes": None}, ["a"]),
        ({"Pod": POD, "NodeNames": ["exact"], "nodeNames": ["folded"]}, ["exact"]),
        ({"Pod": POD, "nodeNames": ["folded"], "NodeNames": ["exact"]}, ["exact"]),
        ({"Pod": POD, "NodeNames": ["a"], "Extra": 1}, ["a"]),
    ],
    ids=["lower", "upper", "exact-first", "exact-last", "unknown-key-ignored"],
)
def test_keys_fold_like_go(document, names):
    assert parse_extender_args(document).node_names == names


# ---- faults ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document, message",
    [
        ([], "expected a JSON object"),
        ({"NodeNames": ["a"]}, "field Pod is missing"),
        ({"Pod": None, "NodeNames": ["a"]}, "Pod must be an object, got null"),
        ({"Pod": {"spec": {}}, "NodeNames": ["a"]}, "Pod.metadata"),
        ({"Pod": {"metadata": {}}, "NodeNames": ["a"]}, "Pod.spec"),
        ({"Pod": POD, "NodeNames": "a"}, "NodeNames must be a list"),
        ({"Pod": POD, "NodeNames": ["a", 3]}, "NodeNames[1] must be a string"),
        ({"Pod": POD, "Nodes": []}, "Nodes must be a NodeList object"),
        ({"Pod": POD, "Nodes": {"items": {}}}, "Nodes.items must be a list"),
        ({"Pod": POD, "Nodes": {"items": [{"metadata": {}}]}}, "Nodes.items[0].metadata.name"),
        ({"Pod": POD, "Nodes": None, "NodeNames": None}, "neither NodeNames nor Nodes"),
    ],
    ids=["list", "no-pod", "null-pod", "no-metadata", "no-spec", "names-string",
         "name-number", "nodes-list", "items-object", "item-no-name", "neither"],
)
def test_bad_documents_raise_input_errors_naming_the_field(document, message):
    with pytest.raises(InputError, match=None) as raised:
        parse_extender_args(document)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "body, message",
    [(b"{", "invalid JSON"), (b"\xff\xfe", "not UTF-8"), (b"[" * 100_000, "nested too deeply")],
    ids=["truncated", "not-utf8", "deep"],
)
def test_undecodable_bodies_raise_input_errors(body, message):
    with pytest.raises(InputError) as raised:
        decode_json(body)
    assert message in str(raised.value)


def test_binding_args_fold_keys_and_require_fields():
    args = parse_binding_args({"podName": "p", "PodNamespace": "ns", "PodUID": "u", "node": "n"})
    assert (args.pod_name, args.pod_namespace, args.pod_uid, args.node) == ("p", "ns", "u", "n")
    with pytest.raises(InputError, match="Node must be a non-empty string"):
        parse_binding_args({"PodName": "p", "PodNamespace": "ns"})
    assert json.loads(encode_binding_result("")) == {"Error": ""}


# ---- fuzz: any body gives an ExtenderArgs or an InputError, nothing else --------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                   max_size=4),
    max_leaves=4,
)
_QUANTITY = st.one_of(
    st.sampled_from(["1", "500m", "2Gi", "1e3", "-1", "", "abc", "1.5", "0x10", "NaN", "1Ei"]),
    st.integers(-5, 10**12), st.floats(allow_nan=True), st.none(), st.lists(st.integers()),
)
_RESOURCES = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods"]), _QUANTITY, max_size=3
)
_CONTAINER = st.fixed_dictionaries(
    {"name": st.text(max_size=3)},
    optional={"resources": st.one_of(
        st.fixed_dictionaries({}, optional={"requests": _RESOURCES | _JSON,
                                            "limits": _RESOURCES | _JSON}),
        _JSON,
    ), "restartPolicy": st.sampled_from(["Always", "Never"]) | _JSON},
)
_POD = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {}, optional={"name": st.text(max_size=5) | _JSON, "namespace": st.text(max_size=5)
                          | _JSON, "uid": _JSON, "labels": st.dictionaries(
                              st.text(max_size=5), st.text(max_size=5) | _JSON, max_size=3),
                          "annotations": _JSON}),
        "spec": st.fixed_dictionaries(
            {}, optional={"containers": st.lists(_CONTAINER, max_size=3) | _JSON,
                          "initContainers": st.lists(_CONTAINER, max_size=2) | _JSON,
                          "overhead": _RESOURCES | _JSON, "nodeName": _JSON,
                          "priority": _JSON}),
        "status": _JSON,
    },
) | _JSON
_KEY = st.sampled_from(["Pod", "pod", "Nodes", "nodes", "NodeNames", "nodeNames", "X"])
_ARGS = st.dictionaries(
    _KEY,
    st.one_of(_POD, st.lists(st.text(max_size=4) | _JSON, max_size=4),
              st.fixed_dictionaries({"items": st.lists(_JSON, max_size=3) | _JSON}), _JSON),
    max_size=4,
) | _JSON
_CONFIG = LocalityConfig()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_ARGS)
def test_fuzzed_documents_parse_or_raise_input_error(document):
    body = json.dumps(document).encode()
    try:
        args = parse_extender_args(decode_json(body))
        parse_pod(args.pod, _CONFIG, where="Pod")
    except InputError:
        return
    assert isinstance(args.candidate_names(), list)


@settings(max_examples=1000, deadline=None)
@given(body=st.binary(max_size=64))
def test_fuzzed_bytes_never_escape_as_anything_but_input_error(body):
    try:
        parse_extender_args(decode_json(body))
    except InputError:
        pass
