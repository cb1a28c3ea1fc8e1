"""The preempt verb through real HTTP, against golden requests written from
k8s.io/kube-scheduler/extender/v1 (`ExtenderPreemptionArgs`, no JSON tags: Go field
names, nil maps as null) as kube-scheduler 1.36's `HTTPExtender.ProcessPreemption`
sends them: `NodeNameToMetaVictims` (victims by UID) with nodeCacheCapable true,
`NodeNameToVictims` (victim Pod objects) with false. The answer is always
`ExtenderPreemptionResult{NodeNameToMetaVictims}`; a node missing from it is no longer
a candidate (pkg/scheduler/framework/preemption `callExtenders`)."""

# ruff: noqa: F811 - test_app's fixtures, imported, are the tests' parameters

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.errors import InputError
from extender.config import ExtenderConfig
from extender.wire import Victims, encode_preemption_result, parse_preemption_args
from locality.admission.model import Domain
from locality.admission.record import GangRecord, GangState
from locality.model import JobKey
from locality.parse import parse_pod
from tests.extender.builders import make_node, make_nrt, make_pod
from tests.extender.test_app import LOCALITY, build_cache, ops_of, post, serve  # noqa: F401

GOLDEN = Path(__file__).resolve().parent / "golden"


def golden(name: str):
    return json.loads((GOLDEN / name).read_text())


def cluster():
    """Group pg-a (a-1 holds the job's PS and a batch pod, a-2 a placeholder, a-3 a
    placeholder and two 4-GPU NUMA zones) and group pg-b (b-1, a placeholder)."""
    nodes = [make_node("a-1", group="pg-a"), make_node("a-2", group="pg-a"),
             make_node("a-3", group="pg-a"), make_node("b-1", group="pg-b")]
    request = golden("preempt-nodecachecapable-false.request.json")
    victims = [pod for entry in request["NodeNameToVictims"].values() for pod in entry["Pods"]]
    ps = make_pod("bert-ps-0", namespace="train", cpu="8", job="bert", role="ps",
                  node="a-1", phase="Running")
    nrt = make_nrt("a-3", [(48, 4), (48, 4)])
    for zone in nrt["zones"]:  # the placeholder holds every GPU
        zone["resources"][1]["available"] = "0"
    return build_cache(nodes, [ps, *victims], [nrt])


@pytest.mark.parametrize("mode", ["true", "false"], ids=["meta-victims", "victim-pods"])
async def test_golden_preemption_keeps_only_nodes_the_filter_would_accept(serve, mode):
    client = await serve(cluster(), ExtenderConfig(node_cache_capable=mode == "true"))
    body = (GOLDEN / f"preempt-nodecachecapable-{mode}.request.json").read_bytes()
    status, text = await post(client, "preempt", body)
    assert status == 200
    # a-1: the batch pod's 8 GPUs freed, beside the job's PS: kept. a-2: kept (the
    # placeholder's room counts free). b-1: outside the job's group pg-a (policy
    # required), a-3: no 4-GPU zone holds 8 GPUs (single-numa-node), new-node: not in
    # the cache under a required policy: dropped. Victims and PDB counts echoed.
    assert json.loads(text) == golden("preempt.response.json")


async def test_preemption_nodes_are_counted_by_outcome_and_reason(serve, ops_of):
    client = await serve(cluster())
    await post(client, "preempt",
               (GOLDEN / "preempt-nodecachecapable-true.request.json").read_bytes())
    text = await (await (await ops_of(client)).get("/metrics")).text()
    for outcome, reason, count in (("kept", "", 2), ("dropped", "placement_group", 1),
                                   ("dropped", "numa", 1), ("dropped", "unknown_node", 1)):
        line = (f'headstart_extender_preemption_nodes_total{{outcome="{outcome}",'
                f'reason="{reason}"}} {count:.1f}')
        assert line in text


async def test_a_pod_of_no_job_keeps_every_candidate(serve):
    request = golden("preempt-nodecachecapable-true.request.json")
    request["Pod"] = make_pod("web", namespace="apps", gpus=8)
    client = await serve(cluster())
    _, text = await post(client, "preempt", json.dumps(request).encode())
    assert set(json.loads(text)["NodeNameToMetaVictims"]) == set(
        request["NodeNameToMetaVictims"])


async def test_a_malformed_preemption_request_is_a_400(serve):
    client = await serve(cluster())
    status, text = await post(client, "preempt", b'{"Pod": {"metadata": {}, "spec": {}}, '
                                                 b'"NodeNameToMetaVictims": {"a-1": 3}}')
    assert status == 400 and "NodeNameToMetaVictims['a-1'] must be an object" in text


# ---- wire ------------------------------------------------------------------------------


def test_meta_victims_parse_by_uid_with_folded_keys():
    args = parse_preemption_args({"pod": {"metadata": {}, "spec": {}},
                                  "nodeNameToMetaVictims": {"n": {"pods": [{"uid": "u1"}],
                                                                  "numPDBViolations": 2}}})
    assert args.victims == {"n": Victims(("u1",), None, 2)}


def test_nil_victims_and_no_candidates():
    args = parse_preemption_args({"Pod": {"metadata": {}, "spec": {}},
                                  "NodeNameToVictims": None, "NodeNameToMetaVictims": None})
    assert args.victims == {}
    args = parse_preemption_args({"Pod": {"metadata": {}, "spec": {}},
                                  "NodeNameToMetaVictims": {"n": None}})
    assert args.victims == {"n": Victims((), None, 0)}


@pytest.mark.parametrize("document, message", [
    ([], "expected a JSON object"),
    ({"Pod": None}, "Pod must be an object"),
    ({"Pod": {"metadata": {}, "spec": {}}, "NodeNameToMetaVictims": {"n": {"Pods": [{}]}}},
     "the pod's UID is missing"),
    ({"Pod": {"metadata": {}, "spec": {}},
      "NodeNameToMetaVictims": {"n": {"Pods": [], "NumPDBViolations": "1"}}},
     "NumPDBViolations must be an integer"),
], ids=["not-object", "no-pod", "no-uid", "pdb-not-int"])
def test_malformed_preemption_args(document, message):
    with pytest.raises(InputError, match=message):
        parse_preemption_args(document)


def test_a_node_left_with_no_victim_is_never_answered():
    # kube-scheduler fails the whole preemption on a node with no victim pod.
    body = encode_preemption_result({"a": Victims(("u",), None, 0), "b": Victims((), None, 0)})
    assert json.loads(body) == {"NodeNameToMetaVictims": {
        "a": {"Pods": [{"UID": "u"}], "NumPDBViolations": 0}}}


@pytest.mark.parametrize("preemptor", ["bert-worker-7", "web"], ids=["job-pod", "pod-of-no-job"])
async def test_a_node_whose_victim_is_in_an_admitted_gang_is_dropped(serve, ops_of, preemptor):
    """a-1's victim is a member of gang `low` (Running): kube-scheduler would take one
    member of it; the admitter preempts gangs whole. The other candidates are judged as
    before (a-2 kept: its victim is a placeholder), whoever the preemptor is."""
    cache = cluster()
    member = make_pod("low-0", namespace="train", gpus=8, job="low", node="a-1",
                      phase="Running")
    cache.apply_pod(parse_pod(member, LOCALITY))
    cache.replace_gangs([GangRecord(JobKey("train", "low"), GangState.RUNNING,
                                    Domain("placement-group", "pg-a"), name="low")])
    request = golden("preempt-nodecachecapable-true.request.json")
    request["NodeNameToMetaVictims"] = {
        "a-1": {"Pods": [{"UID": member["metadata"]["uid"]}], "NumPDBViolations": 0},
        "a-2": request["NodeNameToMetaVictims"]["a-2"]}
    if preemptor == "web":
        request["Pod"] = make_pod("web", namespace="apps", gpus=8)
    client = await serve(cache)
    _, text = await post(client, "preempt", json.dumps(request).encode())
    assert set(json.loads(text)["NodeNameToMetaVictims"]) == {"a-2"}
    metrics = await (await (await ops_of(client)).get("/metrics")).text()
    assert ('headstart_extender_preemption_nodes_total{outcome="dropped",'
            'reason="gang_member"} 1.0') in metrics
