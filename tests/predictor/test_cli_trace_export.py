"""`headstart trace export` end to end: an aiohttp server speaking Prometheus' query_range
JSON, the CSV written, read back by bucketing's load_trace, then simulated."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest
from aiohttp import web

import headstart.cli as headstart_cli
import predictor.live.prometheus as prometheus
from jobtraces.load import load_trace
from predictor.live.prometheus import grid
from predictor.live.trace_export import job_table_from_results
from tests.predictor.live.test_prometheus import matrix, prometheus_app
from tests.predictor.live.test_trace_export import CONFIG, RESULTS, SINCE, STEP, UNTIL

# Which metric each role's query reads (the fake answers by the metric in the query).
NEEDLES = {
    "kube_pod_created": "created",
    "kube_pod_status_scheduled_time": "scheduled",
    "kube_pod_completion_time": "completed",
    "kube_pod_status_phase": "phase",
    "kube_pod_owner": "owner",
    "kube_pod_info": "info",
    "kube_pod_init_container_resource_requests": "init_requests",
    "kube_pod_container_resource_requests": "requests",
    "kube_job_created": "job_created",
    "kube_job_owner": "job_owner",
    "kube_cronjob_next_schedule_time": "cron_next",
}
UNTIL_TEXT = datetime.fromtimestamp(UNTIL, UTC).isoformat()


def ranged_prometheus_app(results: dict, calls: list) -> web.Application:
    """Like test_prometheus.prometheus_app, but answers only the samples inside the asked
    [start, end] and leaves out series with none there, as Prometheus does."""

    async def query_range(request: web.Request) -> web.Response:
        params = dict(request.query)
        params.update(await request.post())
        calls.append(params)
        start, end = float(params["start"]), float(params["end"])
        role = next(r for needle, r in NEEDLES.items() if needle in params["query"])
        result = []
        for series in results.get(role, ()):
            values = [v for v in series["values"] if start <= v[0] <= end]
            if values:
                result.append({"metric": series["metric"], "values": values})
        return web.json_response(matrix(result)[1])

    app = web.Application()
    app.router.add_route("*", "/api/v1/query_range", query_range)
    return app


@pytest.fixture
def run(monkeypatch, capsys):
    """`headstart ARGS` in a worker thread (the command runs its own event loop while the
    test's loop serves the fake Prometheus), with only the commands used here."""
    monkeypatch.setattr(headstart_cli, "COMMAND_MODULES", ("overprovisioner.sim.cli",))

    async def invoke(*argv: str) -> tuple[int, str, str]:
        code = await asyncio.to_thread(headstart_cli.main, [str(a) for a in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def export_args(url, out, *extra):
    return ("trace", "export", "--prometheus", url, "--since", "10m", "--until", UNTIL_TEXT,
            "--step", "1m", "--out", out, *extra)


async def test_export_round_trips_through_load_trace_and_simulates(
        aiohttp_server, run, tmp_path, monkeypatch):
    # 3 ticks per request: the 11-tick window (0..10) is asked in chunks 0-2, 3-5, 6-8, 9-10
    monkeypatch.setattr(prometheus, "MAX_POINTS", 4)
    calls: list = []
    server = await aiohttp_server(ranged_prometheus_app(RESULTS, calls))
    out = tmp_path / "cluster.csv.gz"
    code, stdout, stderr = await run(*export_args(str(server.make_url("/")), out))
    assert code == 0, stderr
    assert "9 pods in 9 jobs" in stdout and "1 in excluded namespaces" in stdout

    # 11 queries (8 for the pods, 3 for known_at) x 4 chunks, each at most
    # MAX_POINTS - 1 = 3 points, back to back
    assert len(calls) == 44
    created = [c for c in calls if "kube_pod_created" in c["query"]]
    assert [(float(c["start"]), float(c["end"])) for c in created] == [
        (SINCE, SINCE + 2 * STEP), (SINCE + 3 * STEP, SINCE + 5 * STEP),
        (SINCE + 6 * STEP, SINCE + 8 * STEP), (SINCE + 9 * STEP, UNTIL)]

    loaded = load_trace(out)
    expected, _ = job_table_from_results(RESULTS, grid(SINCE, UNTIL, STEP), STEP, SINCE,
                                         UNTIL, CONFIG)
    pd.testing.assert_frame_equal(loaded.frame, expected.frame)
    assert (loaded.trace_start_s, loaded.trace_end_s) == (SINCE, UNTIL)
    assert loaded.censoring.started_before_trace == expected.censoring.started_before_trace == 1
    assert loaded.censoring.running_at_end == expected.censoring.running_at_end
    # chunking must not lose the pods that span a chunk border: "running" lives at ticks 2-10
    assert np.isnan(loaded.frame.set_index("pod").loc["team/running", "end_s"])

    code, stdout, stderr = await run("simulate", "--trace", out, "--policy", "reactive",
                                     "--json")
    assert code == 0, stderr
    (report,) = json.loads(stdout)
    # 9 rows - 2 never scheduled (pending, lone) = 7 replayable; the simulator keeps those
    # that fit its default instance types and start inside its window
    assert report["policy"] == "reactive" and 0 < report["pods"] <= 7


@pytest.mark.parametrize(
    "answer, message",
    [
        ((400, {"status": "error", "errorType": "bad_data", "error": "invalid parameter"}),
         "bad_data: invalid parameter"),
        ((503, "<html>upstream down</html>"), "HTTP 503, not JSON"),
        (matrix([]), "no series for max by (namespace, pod, uid) (kube_pod_created"),
    ],
    ids=["error-body", "non-200-html", "empty-result"],
)
async def test_prometheus_faults_are_one_line_and_exit_2(aiohttp_server, run, tmp_path,
                                                         answer, message):
    server = await aiohttp_server(prometheus_app({"kube_pod": answer}, []))
    out = tmp_path / "x.csv"
    code, stdout, stderr = await run(*export_args(str(server.make_url("/")), out))
    assert code == 2
    assert stderr.startswith("headstart trace: error: prometheus: ") and message in stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert not out.exists()


async def test_unreachable_prometheus_names_the_url(run, tmp_path):
    code, _, stderr = await run(*export_args("http://127.0.0.1:9", tmp_path / "x.csv",
                                             "--timeout", "2s"))
    assert code == 2 and "cannot reach http://127.0.0.1:9/api/v1/query_range" in stderr


async def test_excluded_namespaces_and_gpu_resource_reach_the_queries(aiohttp_server, run,
                                                                     tmp_path):
    calls: list = []
    server = await aiohttp_server(ranged_prometheus_app(RESULTS, calls))
    code, _, stderr = await run(*export_args(
        str(server.make_url("/")), tmp_path / "x.csv", "--exclude-namespace", "headstart",
        "kube-system", "--gpu-resource", "amd.com/gpu"))
    assert code == 0, stderr
    assert all('namespace!~"headstart|kube-system"' in c["query"] for c in calls)
    requests = next(c for c in calls if "kube_pod_container_resource_requests" in c["query"])
    assert 'resource=~"amd_com_gpu|cpu|memory"' in requests["query"]


@pytest.mark.parametrize("extra, matcher", [
    # The shipped manifests keep placeholders in headstart-placeholders: not demand.
    ((), 'namespace!~"headstart|headstart-placeholders"'),
    (("--exclude-namespace",), None),  # the option alone: every namespace is demand
], ids=["default", "none"])
async def test_the_default_leaves_out_headstart_and_its_placeholders(aiohttp_server, run,
                                                                     tmp_path, extra, matcher):
    calls: list = []
    server = await aiohttp_server(ranged_prometheus_app(RESULTS, calls))
    code, _, stderr = await run(*export_args(str(server.make_url("/")), tmp_path / "x.csv",
                                             *extra))
    assert code == 0, stderr
    if matcher:
        assert all(matcher in c["query"] for c in calls)
    else:
        assert not any("namespace!~" in c["query"] for c in calls)


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--since", "0m"), "--since: must be positive"),
        (("--since", "2023-11-14T22:34:00Z"), "--since: the window is empty"),
        (("--until", "yesterday"), "--until: 'yesterday' is not an ISO-8601 time, UTC unless"),
        # the forms it takes, a UTC time among them
        (("--since", "yesterday"), "--since: 'yesterday' is not a duration before --until "
         "(14d, 36h) or an ISO-8601 time, UTC unless it names a zone (2026-11-01, "
         "2026-11-01T06:00:00Z)"),
        (("--since", "2026-13-01"), "--since: '2026-13-01' is not a duration before"),
        (("--since", "-14d"), "--since: '-14d' is negative"),
        (("--step", "fast"), "--step:"),
        (("--out", "no-such-dir/x.csv"), "is not a directory"),
    ],
    ids=["zero-since", "since-after-until", "bad-until", "words-since", "bad-date-since",
         "negative-since", "bad-step", "missing-out-dir"],
)
async def test_bad_options_exit_2(run, tmp_path, argv, message):
    base = {"--since": "10m", "--until": UNTIL_TEXT, "--step": "1m",
            "--out": str(tmp_path / "x.csv")}
    base.update(dict(zip(argv[::2], argv[1::2], strict=True)))
    if base["--out"].startswith("no-such-dir"):
        base["--out"] = str(tmp_path / base["--out"])
    flat = [part for pair in base.items() for part in pair]
    code, _, stderr = await run("trace", "export", "--prometheus", "http://127.0.0.1:9", *flat)
    assert code == 2 and message in stderr, stderr


def test_window_from_a_duration_and_a_utc_time():
    from predictor.commands_trace_export import window

    # 14 days before a fixed now; an ISO time without a zone is UTC
    assert window("14d", "now", 2_000_000_000.0) == (2_000_000_000.0 - 14 * 86_400,
                                                     2_000_000_000.0)
    assert window("2026-11-01T00:00:00", "2026-11-02T00:00:00Z", 0.0) == (
        1_793_491_200.0, 1_793_577_600.0)  # 2026-11-01 00:00 UTC and one day later
