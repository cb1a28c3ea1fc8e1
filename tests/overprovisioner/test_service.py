"""The service through real HTTP (aiohttp test server), with the loop on the fake API server."""

from __future__ import annotations

import asyncio

from overprovisioner.config import LeaderElectionConfig
from overprovisioner.leader import LeaderElector
from overprovisioner.service import create_app
from tests.overprovisioner.test_loop import RISING, MemoryDemand, at_tick, make_config, make_loop


async def test_endpoints_before_and_after_the_first_tick(aiohttp_client, fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    gate = asyncio.Event()
    now = [at_tick(29)]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:
        await gate.wait()  # hold the loop after its first tick

    started = []
    app = create_app(loop, background=lambda: (started.append(1), lambda: started.append(0))[1],
                     clock=clock, sleep=sleep)
    client = await aiohttp_client(app)
    assert (await client.get("/healthz")).status == 200
    for _ in range(200):
        if loop.latest is not None:
            break
        await asyncio.sleep(0.02)
    response = await client.get("/readyz")
    assert response.status == 200
    response = await client.get("/plan")
    assert response.status == 200
    body = await response.json()
    assert body["ok"] and body["mode"] == "forecast" and body["model"] == "last"
    (g5,) = [b for b in body["buckets"] if b["instance_type"] == "g5.xlarge"]
    # Forecast 31 at q=0.9, 29 in use: 2 wanted, with the arithmetic in the reason.
    assert g5["wanted"] == 2 and g5["forecast"] == 31 and g5["forecast_point"] == 29
    assert "31.00" in g5["reason"]
    assert body["applied"]["backend"] == "deployment"
    metrics = await (await client.get("/metrics")).text()
    assert 'headstart_overprovisioner_placeholders_wanted{instance_type="g5.xlarge"' in metrics
    assert "headstart_overprovisioner_api_errors_total" in metrics
    assert started == [1]
    await client.close()
    assert started == [1, 0]  # background work stopped on shutdown


async def test_plan_and_readyz_wait_for_the_first_tick(aiohttp_client, fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    loop.tick = lambda now: None  # a tick that never finishes a report
    client = await aiohttp_client(create_app(loop, clock=lambda: at_tick(29),
                                             sleep=lambda s: asyncio.sleep(3600)))
    assert (await client.get("/readyz")).status == 503
    response = await client.get("/plan")
    assert response.status == 503 and "first tick" in (await response.json())["error"]
    await client.close()


async def test_shutdown_releases_the_lease(aiohttp_client, fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    elector = LeaderElector(fake_kube.api_client(), "headstart",
                            LeaderElectionConfig(lease_duration_s=3, renew_deadline_s=2,
                                                 retry_period_s=1), identity="svc")
    loop = make_loop(fake_kube, make_config(dry_run=True), demand)
    loop.is_leader = elector.is_leader
    client = await aiohttp_client(create_app(loop, elector=elector, clock=lambda: at_tick(29),
                                             sleep=lambda s: asyncio.sleep(3600)))
    for _ in range(250):
        if elector.is_leader():
            break
        await asyncio.sleep(0.02)
    assert elector.is_leader()
    await client.close()
    lease = fake_kube.get("coordination.k8s.io/v1", "Lease", "headstart-overprovisioner",
                          "headstart")
    assert not lease["spec"].get("holderIdentity")
