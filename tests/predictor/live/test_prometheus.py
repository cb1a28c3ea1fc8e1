"""Prometheus source (predictor.live.prometheus) against an aiohttp server speaking its JSON."""

from __future__ import annotations

import numpy as np
import pytest
from aiohttp import web

from bucketing.resources import Resources
from predictor.live.prometheus import (
    PrometheusConfig,
    PrometheusError,
    demand_from_results,
    grid,
    load_series,
    matrix_of,
    queries,
)
from tests.predictor.builders import CATALOG

TYPES = list(CATALOG.instance_types)
TICK = 300.0
T0 = 1_700_000_100.0
GIB = 2**30


def series(metric, points):
    return {"metric": metric, "values": [[T0 + i * TICK, str(v)] for i, v in points]}


def request(pod, resource, points, ns="team"):
    return series({"namespace": ns, "pod": pod, "resource": resource}, points)


def phase(pod, name, ticks, ns="team"):
    return series({"namespace": ns, "pod": pod, "phase": name}, [(i, 1) for i in ticks])


# Pod "train": 1 GPU, 4 cores, 8 GiB, running at ticks 0-2; pod "wait": 2 cores pending at
# 1-2 with an init container asking 3 cores; tick 3 has no phase sample at all (a gap).
RESULTS = {
    "requests": [
        request("train", "nvidia_com_gpu", [(0, 1), (1, 1), (2, 1)]),
        request("train", "cpu", [(0, 4), (1, 4), (2, 4)]),
        request("train", "memory", [(0, 8 * GIB), (1, 8 * GIB), (2, 8 * GIB)]),
        request("wait", "cpu", [(1, 2), (2, 2)]),
        request("wait", "memory", [(1, GIB), (2, GIB)]),
    ],
    "init_requests": [request("wait", "cpu", [(1, 3), (2, 3)])],
    "phase": [phase("train", "Running", [0, 1, 2]), phase("wait", "Pending", [1, 2])],
}


def test_demand_per_tick_with_init_containers_and_gaps():
    times = T0 + TICK * np.arange(4)
    per_tick = demand_from_results(RESULTS, times, TICK)
    assert [None if p is None else len(p) for p in per_tick] == [1, 2, 2, None]
    wait = next(p for p in per_tick[1] if p.key == "team/wait")
    # containers sum to 2 cores; the init container's 3 cores is the larger floor
    assert wait.request == Resources(0, 3000, GIB) and wait.pending
    train = next(p for p in per_tick[1] if p.key == "team/train")
    assert train.request == Resources.of(1, 4, 8) and not train.pending


@pytest.mark.parametrize(
    "body, message",
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"},
         "bad_data: parse error at char 3"),
        ({"status": "success", "data": {"resultType": "vector", "result": []}},
         "expected a matrix result, got 'vector'"),
        ([1, 2], "not a JSON object"),
    ],
    ids=["error-status", "vector", "not-object"],
)
def test_matrix_of_refuses_bad_answers(body, message):
    with pytest.raises(PrometheusError, match=message):
        matrix_of(body, "q")


def test_grid_is_on_the_epoch_tick():
    # start 10 s after a tick -> the first tick is the next one
    assert grid(T0 + 10, T0 + 3 * TICK, TICK).tolist() == [T0 + TICK, T0 + 2 * TICK,
                                                           T0 + 3 * TICK]


def prometheus_app(answers: dict, calls: list) -> web.Application:
    """A Prometheus stand-in: query_range (GET or POST form) answered from `answers`."""

    async def query_range(request: web.Request) -> web.Response:
        params = dict(request.query)
        params.update(await request.post())
        calls.append(params)
        query = params["query"]
        for needle, (status, body) in answers.items():
            if needle in query:
                if isinstance(body, str):
                    return web.Response(status=status, text=body)
                return web.json_response(body, status=status)
        return web.json_response({"status": "success",
                                  "data": {"resultType": "matrix", "result": []}})

    app = web.Application()
    app.router.add_route("*", "/api/v1/query_range", query_range)
    return app


def matrix(result):
    return (200, {"status": "success", "data": {"resultType": "matrix", "result": result}})


async def test_load_series_over_http(aiohttp_server):
    calls: list = []
    answers = {
        "kube_pod_init_container_resource_requests": matrix(RESULTS["init_requests"]),
        "kube_pod_container_resource_requests": matrix(RESULTS["requests"]),
        "kube_pod_status_phase": matrix(RESULTS["phase"]),
    }
    server = await aiohttp_server(prometheus_app(answers, calls))
    config = PrometheusConfig(url=str(server.make_url("/")))
    demand = await load_series(config, T0, T0 + 3 * TICK, TICK, TYPES)
    # tick 0: train -> gpu1 1 | ticks 1-2: + wait (3 cores, 1 GiB) -> cpu4 1 | tick 3: gap
    np.testing.assert_array_equal(demand.counts["gpu1"].to_numpy(), [1, 1, 1, np.nan])
    np.testing.assert_array_equal(demand.counts["cpu4"].to_numpy(), [0, 1, 1, np.nan])
    assert demand.totals["cpus_pending"].tolist()[:3] == [0.0, 3.0, 3.0]
    assert len(calls) == 3 and all(c["step"] == "300s" for c in calls)
    assert calls[0]["start"] == f"{T0:.3f}" and calls[0]["end"] == f"{T0 + 3 * TICK:.3f}"
    # headstart's and its placeholders' namespaces are excluded in every query
    assert all('namespace!~"headstart|headstart-placeholders"' in c["query"] for c in calls)


@pytest.mark.parametrize(
    "answer, message",
    [
        ((400, {"status": "error", "errorType": "bad_data", "error": "invalid parameter"}),
         "bad_data: invalid parameter"),
        ((503, "<html>upstream down</html>"), "HTTP 503, not JSON"),
        ((422, {"status": "error", "errorType": "execution", "error": "too many samples"}),
         "execution: too many samples"),
    ],
    ids=["bad-data", "html-503", "execution"],
)
async def test_prometheus_errors_are_reported(aiohttp_server, answer, message):
    server = await aiohttp_server(prometheus_app({"kube_pod": answer}, []))
    config = PrometheusConfig(url=str(server.make_url("/")))
    with pytest.raises(PrometheusError, match=message):
        await load_series(config, T0, T0 + TICK, TICK, TYPES)


async def test_unreachable_prometheus():
    config = PrometheusConfig(url="http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(PrometheusError, match="cannot reach"):
        await load_series(config, T0, T0 + TICK, TICK, TYPES)


def test_queries_use_the_configured_gpu_resource():
    text = queries(PrometheusConfig(gpu_resource="amd_com_gpu", exclude_namespaces=()))
    assert 'resource=~"amd_com_gpu|cpu|memory"' in text["requests"]
    assert "namespace!~" not in text["phase"]
