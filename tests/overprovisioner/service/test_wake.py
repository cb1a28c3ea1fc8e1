"""A preempted placeholder wakes the loop within seconds, once per burst."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from overprovisioner.service.wake import PreemptionSignal, preempted_by_scheduler
from tests.overprovisioner.service.test_loop import (
    NS,
    RISING,
    MemoryDemand,
    at_tick,
    make_config,
    make_loop,
    run_and_poke,
)

# What kube-scheduler patches onto a victim before deleting it
# (pkg/scheduler/framework/preemption/preemption.go, prepareCandidate).
PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": "headstart-scheduler: preempting to accommodate a higher priority pod"}


def placeholder_pod(name="headstart-placeholder-g5-xlarge-5d8f7c9b6-x2k4q", conditions=()):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "labels": {"headstart.io/placeholder": "true"}},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
                     "nodeName": "g5-a"},
            "status": {"phase": "Running", "conditions": list(conditions)}}


@pytest.mark.parametrize(
    "conditions, expected",
    [
        ([PREEMPTED], True),
        ([], False),
        # Evicted through the Eviction API (a drain): another reason, not a preemption.
        ([{**PREEMPTED, "reason": "EvictionByEvictionAPI"}], False),
        ([{**PREEMPTED, "status": "False"}], False),
    ],
    ids=["preempted", "running", "drained", "reset"],
)
def test_preempted_by_scheduler(conditions, expected) -> None:
    assert preempted_by_scheduler(placeholder_pod(conditions=conditions)) is expected


def test_each_preempted_pod_signals_once() -> None:
    calls = []
    signal = PreemptionSignal(lambda: calls.append(1))
    victim = placeholder_pod(conditions=[PREEMPTED])
    signal("MODIFIED", victim)
    signal("DELETED", victim)  # the same pod's deletion: already told
    signal("MODIFIED", placeholder_pod())  # an ordinary update
    signal("MODIFIED", placeholder_pod("headstart-placeholder-g5-xlarge-5d8f7c9b6-zzzzz",
                                       [PREEMPTED]))
    assert len(calls) == 2


def test_a_burst_of_preemptions_runs_one_tick(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(dry_run=True, placeholders={"backend": "deployment",
                                                     "wake_debounce": "200ms"})
    loop = make_loop(fake_kube, config, demand)

    def preempt_three() -> None:
        # Three placeholders taken by one job's pods within milliseconds, told from the
        # watch's thread.
        for _ in range(3):
            threading.Thread(target=loop.wake_debounced).start()

    # 0.4 s after the woken tick: room for a wrongly repeated wake-up to show.
    run_and_poke(loop, demand, preempt_three, settle_s=0.4)
    assert demand.recorded == [at_tick(29), at_tick(29)]
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_wakeups_total", {"reason": "preemption"}) == 1


async def test_the_service_wakes_after_a_placeholder_is_preempted(aiohttp_client, fake_kube,
                                                                  tmp_path) -> None:
    """build_app as the CLI runs it: the placeholder-pod watch, the debounce, the tick."""
    from kubernetes import config as kube_config

    from overprovisioner.service.commands import build_app

    fake_kube.create(placeholder_pod())
    config = make_config(forecast={"history_path": str(tmp_path / "history.sqlite")},
                         leader_election={"enabled": False},
                         placeholders={"backend": "deployment", "wake_debounce": "300ms"})
    api_client = kube_config.new_client_from_config(
        config_file=fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))
    app = build_app(config, api_client, clock=lambda: at_tick(29),
                    sleep=lambda s: asyncio.sleep(3600))  # no tick but the first, unless woken
    client = await aiohttp_client(app)
    registry = None
    try:
        for _ in range(300):
            if (await client.get("/readyz")).status == 200:
                break
            await asyncio.sleep(0.02)
        from overprovisioner.service.server import LOOP

        loop = app[LOOP]
        registry = loop.metrics.registry

        def ticks() -> float:
            return sum(registry.get_sample_value("headstart_overprovisioner_ticks_total",
                                                 {"result": r}) or 0
                       for r in ("ok", "partial", "failed"))

        assert ticks() == 1
        await asyncio.sleep(0.5)  # the watch is open
        victim = fake_kube.get("v1", "Pod", "headstart-placeholder-g5-xlarge-5d8f7c9b6-x2k4q",
                               NS)
        victim["status"]["conditions"] = [PREEMPTED]
        fake_kube.replace(victim)
        fake_kube.delete("v1", "Pod", victim["metadata"]["name"], NS)
        for _ in range(250):
            if ticks() >= 2:
                break
            await asyncio.sleep(0.02)
        assert ticks() == 2
        assert registry.get_sample_value("headstart_overprovisioner_wakeups_total",
                                         {"reason": "preemption"}) == 1
    finally:
        await client.close()


def test_the_placeholder_watch_wakes_on_a_preemption_event_not_on_its_list(fake_kube) -> None:
    """As wired in the service (one ListWatch on the placeholder namespace and label): a
    pod already preempted when the watch lists wakes nothing; one preempted afterwards,
    told by a watch event, wakes the loop once; other namespaces' pods are not watched."""
    from overprovisioner.service.wake import placeholder_pod_watch
    from predictor.live.recorder import RecorderConfig

    fake_kube.create(placeholder_pod("headstart-placeholder-old", [PREEMPTED]))
    other = placeholder_pod("elsewhere", [PREEMPTED])
    other["metadata"]["namespace"] = "team"
    woken: list[int] = []
    watch = placeholder_pod_watch(fake_kube.api_client(), make_config(),
                                  RecorderConfig(watch_timeout_s=1), lambda: woken.append(1))
    watch.start()
    try:
        deadline = time.monotonic() + 10
        while not watch.status.synced and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watch.status.synced and woken == []
        fake_kube.create(other)
        victim = fake_kube.create(placeholder_pod("headstart-placeholder-new"))
        victim["status"]["conditions"] = [PREEMPTED]
        fake_kube.replace(victim)
        while not woken and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # room for a wrong second wake-up
        assert woken == [1]
    finally:
        watch.stop()
        assert watch.join(5)
