"""The kube-scheduler extender wire format (`k8s.io/kube-scheduler/extender/v1`).

Decides: how a request body becomes `ExtenderArgs` (or `BindingArgs`,
`PreemptionArgs`) and how the answers become bytes. The Go request types carry no
JSON tags, so kube-scheduler sends PascalCase keys (`Pod`, `Nodes`, `NodeNames`); Go's
decoder matches keys case-insensitively (an exact match wins), so this parser does
too. The Pod and Node objects inside are ordinary camelCase Kubernetes JSON and stay
dicts here: the handler turns the Pod into `locality.model.Pod` with `locality.parse`.

Answers:
- filter, `nodeCacheCapable: true`: `{"NodeNames": [...], "FailedNodes": {...},
  "FailedAndUnresolvableNodes": {...}, "Error": ""}`.
- filter, `nodeCacheCapable: false`: `{"Nodes": {"metadata": {}, "items": [...]}, ...}`
  with the passing Node objects echoed as received (older kube-schedulers use the
  returned objects, not just their names); `"Nodes": null` would mean no node passes,
  so an empty list is sent as `{"items": []}` to keep the answer unambiguous.
- prioritize: `[{"Host": name, "Score": 0..10}]`, built from cached per-host string
  fragments because this list is rebuilt for every node of every pod.
- preempt: `{"NodeNameToMetaVictims": {node: {"Pods": [{"UID": ...}], "NumPDBViolations":
  n}}}` whichever form the request's victims came in (kube-scheduler reads only that
  field back).

Must not: look at the cluster, log, or decide anything about placement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from common.errors import InputError

_KNOWN_KEYS = ("Pod", "Nodes", "NodeNames")
_LOWER_TO_KEY = {key.lower(): key for key in _KNOWN_KEYS}
_EMPTY_DICT_JSON = "{}"
_SCORE_SUFFIXES = tuple(f"{score}}}" for score in range(11))
_HOST_FRAGMENT_CACHE_LIMIT = 200_000
_host_fragments: dict[str, str] = {}
# Anything json.dumps would escape (ensure_ascii): quotes, backslash, control, non-ASCII.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f-\U0010ffff]')


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """One filter or prioritize request.

    pod: the Pod object as JSON (validated to be an object with metadata and spec).
    node_names: the candidate names with `nodeCacheCapable: true`, else None.
    nodes: the candidate Node objects with `nodeCacheCapable: false`, else None.
    """

    pod: Mapping[str, Any]
    node_names: list[str] | None
    nodes: list[Mapping[str, Any]] | None

    def candidate_names(self) -> list[str]:
        """The candidates' names, in request order, whichever form they came in."""
        if self.node_names is not None:
            return self.node_names
        assert self.nodes is not None  # parse_extender_args guarantees one of the two
        return [node["metadata"]["name"] for node in self.nodes]


def decode_json(body: bytes) -> Any:
    """Decode a request body; invalid UTF-8 or JSON becomes an InputError with the position."""
    try:
        # Decode explicitly: json.loads(bytes) would also accept UTF-16/32, Go does not.
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(
            f"request body: not UTF-8 ({error.reason} at byte {error.start})"
        ) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"request body: invalid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except RecursionError:
        raise InputError("request body: JSON nested too deeply") from None


def parse_extender_args(document: Any) -> ExtenderArgs:
    """Validate a decoded ExtenderArgs document; faults raise InputError naming the field."""
    if not isinstance(document, dict):
        raise InputError(
            f"request body: expected a JSON object (ExtenderArgs), got {_json_type(document)}"
        )
    fields = _fold_keys(document)
    if "Pod" not in fields:
        raise InputError("request body: field Pod is missing")
    pod = fields["Pod"]
    if not isinstance(pod, dict):
        raise InputError(f"request body: Pod must be an object, got {_json_type(pod)}")
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        raise InputError("request body: Pod.metadata is missing or not an object")
    if not isinstance(pod.get("spec"), dict):
        raise InputError("request body: Pod.spec is missing or not an object")

    node_names = _node_names(fields.get("NodeNames"))
    nodes = _nodes(fields.get("Nodes"))
    if node_names is None and nodes is None:
        raise InputError("request body: neither NodeNames nor Nodes is set")
    if node_names is not None and nodes is not None:
        # kube-scheduler sends exactly one of them; names are what the cache path needs.
        nodes = None
    return ExtenderArgs(pod=pod, node_names=node_names, nodes=nodes)


def _fold_keys(document: dict[str, Any]) -> dict[str, Any]:
    """Map keys onto Pod/Nodes/NodeNames like Go's decoder: exact match wins over folded."""
    return _fold(document, _LOWER_TO_KEY)


def _node_names(raw: Any) -> list[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InputError(
            f"request body: NodeNames must be a list of strings, got {_json_type(raw)}"
        )
    try:
        "".join(raw)  # one C-level pass: raises TypeError at the first non-string
    except TypeError:
        for index, name in enumerate(raw):
            if type(name) is not str:
                raise InputError(
                    f"request body: NodeNames[{index}] must be a string, got {_json_type(name)}"
                ) from None
    return raw


def _nodes(raw: Any) -> list[Mapping[str, Any]] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError(f"request body: Nodes must be a NodeList object, got {_json_type(raw)}")
    items = raw.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise InputError(f"request body: Nodes.items must be a list, got {_json_type(items)}")
    for index, node in enumerate(items):
        if not isinstance(node, dict):
            raise InputError(f"request body: Nodes.items[{index}] must be an object")
        metadata = node.get("metadata")
        if not isinstance(metadata, dict) or type(metadata.get("name")) is not str:
            raise InputError(f"request body: Nodes.items[{index}].metadata.name must be a string")
    return items


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def encode_filter_result(
    passed: Sequence[str],
    failed: Mapping[str, str],
    unresolvable: Mapping[str, str],
    node_cache_capable: bool,
    nodes: Sequence[Mapping[str, Any]] | None = None,
    error: str = "",
) -> bytes:
    """An ExtenderFilterResult as bytes.

    With `node_cache_capable` the passing names go in `NodeNames`; otherwise `nodes`
    (the request's Node objects) must be given and the passing ones go in `Nodes`.
    """
    failed_json = json.dumps(failed) if failed else _EMPTY_DICT_JSON
    unresolvable_json = json.dumps(unresolvable) if unresolvable else _EMPTY_DICT_JSON
    error_json = json.dumps(error)
    if node_cache_capable:
        head = '{"NodeNames":' + encode_string_list(passed)
    else:
        keep = set(passed)
        items = [node for node in nodes or () if node["metadata"]["name"] in keep]
        head = '{"Nodes":{"metadata":{},"items":' + json.dumps(items) + "}"
    return (
        head
        + ',"FailedNodes":'
        + failed_json
        + ',"FailedAndUnresolvableNodes":'
        + unresolvable_json
        + ',"Error":'
        + error_json
        + "}"
    ).encode()


def encode_string_list(names: Sequence[str]) -> str:
    """A JSON list of strings; node names (DNS names) need no escaping, so this joins
    them directly, and falls back to json.dumps when any character would need it."""
    if not names:
        return "[]"
    if _NEEDS_ESCAPE.search("".join(names)):
        return json.dumps(list(names))
    return '["' + '","'.join(names) + '"]'


def encode_filter_error(message: str, node_cache_capable: bool) -> bytes:
    """A filter answer carrying only the protocol `Error` (kube-scheduler fails the cycle)."""
    return encode_filter_result((), {}, {}, node_cache_capable, (), message)


def _host_fragment(host: str) -> str:
    fragment = _host_fragments.get(host)
    if fragment is None:
        fragment = '{"Host":' + json.dumps(host) + ',"Score":'
        if len(_host_fragments) >= _HOST_FRAGMENT_CACHE_LIMIT:
            _host_fragments.clear()  # names from garbage requests must not grow memory forever
        _host_fragments[host] = fragment
    return fragment


def encode_host_priorities(hosts: Sequence[str], scores: Sequence[int]) -> bytes:
    """A HostPriorityList as bytes; scores are integers 0..10 (clamped here)."""
    if len(hosts) != len(scores):
        raise ValueError("encode_host_priorities: hosts and scores differ in length")
    if scores and (min(scores) < 0 or max(scores) > 10):
        scores = [10 if score > 10 else max(int(score), 0) for score in scores]
    get = _host_fragments.get
    suffixes = _SCORE_SUFFIXES
    pairs = zip(hosts, scores, strict=True)
    try:
        parts = [get(host) + suffixes[score] for host, score in pairs]
    except TypeError:  # a host seen for the first time (None + str), or a float score
        pairs = zip(hosts, scores, strict=True)
        parts = [_host_fragment(host) + suffixes[int(score)] for host, score in pairs]
    return ("[" + ",".join(parts) + "]").encode()


@dataclass(frozen=True, slots=True)
class BindingArgs:
    """ExtenderBindingArgs: bind pod `namespace/name` (uid) to `node`."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


_BINDING_KEYS = {"podname": "PodName", "podnamespace": "PodNamespace", "poduid": "PodUID",
                 "node": "Node"}


def parse_binding_args(document: Any) -> BindingArgs:
    """Validate a decoded ExtenderBindingArgs document (keys folded like Go's decoder)."""
    if not isinstance(document, dict):
        raise InputError(
            "request body: expected a JSON object (ExtenderBindingArgs), "
            f"got {_json_type(document)}"
        )
    fields: dict[str, Any] = {}
    for key, value in document.items():
        canonical = _BINDING_KEYS.get(key.lower())
        if canonical is not None and (key == canonical or canonical not in fields):
            fields[canonical] = value
    for required in ("PodName", "PodNamespace", "Node"):
        value = fields.get(required)
        if not isinstance(value, str) or not value:
            raise InputError(f"request body: {required} must be a non-empty string")
    uid = fields.get("PodUID", "")
    if not isinstance(uid, str):
        raise InputError("request body: PodUID must be a string")
    return BindingArgs(fields["PodName"], fields["PodNamespace"], uid, fields["Node"])


def encode_binding_result(error: str = "") -> bytes:
    """An ExtenderBindingResult: an empty `Error` means the binding was created."""
    return ('{"Error":' + json.dumps(error) + "}").encode()


# ---- preempt ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods kube-scheduler's preemption would evict on one node.

    uids: the victims' UIDs (`MetaPod.UID`, or each Pod's `metadata.uid`).
    pods: the victim Pod objects when kube-scheduler sent them (`nodeCacheCapable:
    false`), else None. pdb_violations: `NumPDBViolations`, echoed back unchanged.
    """

    uids: tuple[str, ...]
    pods: tuple[Mapping[str, Any], ...] | None
    pdb_violations: int


@dataclass(frozen=True, slots=True)
class PreemptionArgs:
    """ExtenderPreemptionArgs: the preemptor and, per candidate node, its victims."""

    pod: Mapping[str, Any]
    victims: dict[str, Victims]


def parse_preemption_args(document: Any) -> PreemptionArgs:
    """Validate a decoded ExtenderPreemptionArgs document (k8s.io/kube-scheduler/extender/v1:
    no JSON tags, so PascalCase keys, folded like Go's decoder). kube-scheduler sets
    `NodeNameToMetaVictims` (victims by UID) with `nodeCacheCapable: true`, else
    `NodeNameToVictims` (victim Pod objects); the other is null."""
    if not isinstance(document, dict):
        raise InputError(
            "request body: expected a JSON object (ExtenderPreemptionArgs), "
            f"got {_json_type(document)}"
        )
    fields = _fold(document, _PREEMPTION_FIELDS)
    pod = fields.get("Pod")
    if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict):
        raise InputError("request body: Pod must be an object with metadata")
    if not isinstance(pod.get("spec"), dict):
        raise InputError("request body: Pod.spec is missing or not an object")
    meta = fields.get("NodeNameToMetaVictims")
    full = fields.get("NodeNameToVictims")
    source, raw = ("NodeNameToMetaVictims", meta) if meta is not None else (
        "NodeNameToVictims", full)
    if raw is None:
        return PreemptionArgs(pod, {})
    if not isinstance(raw, dict):
        raise InputError(f"request body: {source} must be an object, got {_json_type(raw)}")
    victims = {}
    for node, entry in raw.items():
        victims[node] = _victims(entry, f"{source}[{node!r}]", meta is not None)
    return PreemptionArgs(pod, victims)


def _victims(entry: Any, where: str, by_uid: bool) -> Victims:
    if entry is None:  # a nil *Victims: no pod to evict there
        return Victims((), None if by_uid else (), 0)
    if not isinstance(entry, dict):
        raise InputError(f"request body: {where} must be an object, got {_json_type(entry)}")
    fields = _fold(entry, _VICTIMS_FIELDS)
    pdb = fields.get("NumPDBViolations", 0)
    if isinstance(pdb, bool) or not isinstance(pdb, int):
        raise InputError(f"request body: {where}.NumPDBViolations must be an integer")
    pods = fields.get("Pods") or []
    if not isinstance(pods, list):
        raise InputError(f"request body: {where}.Pods must be a list, got {_json_type(pods)}")
    uids = []
    for index, item in enumerate(pods):
        if not isinstance(item, dict):
            raise InputError(f"request body: {where}.Pods[{index}] must be an object")
        if by_uid:
            uid = _fold(item, _META_POD_FIELDS).get("UID")
        else:
            metadata = item.get("metadata")
            uid = metadata.get("uid") if isinstance(metadata, dict) else None
        if not isinstance(uid, str) or not uid:
            raise InputError(f"request body: {where}.Pods[{index}]: the pod's UID is missing")
        uids.append(uid)
    return Victims(tuple(uids), None if by_uid else tuple(pods), pdb)


def _fold(document: dict[str, Any], lower_to_key: Mapping[str, str]) -> dict[str, Any]:
    """Go's decoder: a key matches a field case-insensitively; an exact match wins."""
    fields: dict[str, Any] = {}
    exact: set[str] = set()
    for key, value in document.items():
        canonical = lower_to_key.get(key.lower())
        if canonical is None:
            continue
        if key == canonical:
            fields[canonical] = value
            exact.add(canonical)
        elif canonical not in exact:
            fields[canonical] = value
    return fields


def _lower_to_key(*keys: str) -> dict[str, str]:
    return {key.lower(): key for key in keys}


_PREEMPTION_FIELDS = _lower_to_key("Pod", "NodeNameToVictims", "NodeNameToMetaVictims")
_VICTIMS_FIELDS = _lower_to_key("Pods", "NumPDBViolations")
_META_POD_FIELDS = _lower_to_key("UID")


def encode_preemption_result(kept: Mapping[str, Victims]) -> bytes:
    """An ExtenderPreemptionResult: the nodes preemption may still use, each with its
    victims by UID (kube-scheduler reads only `NodeNameToMetaVictims` back, whatever it
    sent, and drops every candidate node missing from it). Never a node with no victim:
    kube-scheduler fails the whole preemption on one ("expected at least one victim")."""
    body = {
        node: {"Pods": [{"UID": uid} for uid in victims.uids],
               "NumPDBViolations": victims.pdb_violations}
        for node, victims in kept.items() if victims.uids
    }
    return json.dumps({"NodeNameToMetaVictims": body}).encode()
