"""The planner: from recorded demand to a placeholder plan, pure and shared by the service
and the simulator.

`tick_core` is one tick's core (the frozen `TickObservation` a tick reads, the forecast
with known demand, the observations per bucket, the plan) and `tick_decision` the whole
tick's decision from that observation (plan, sizes, columns); `forecasting`,
`service_forecast` and `adjust` make the forecast; `known_plan` adds announced work;
`plan` and `plan_config` size the plan; `sizing` sizes one placeholder; `pinned_plan`
splits it over zones and capacity types; `policy_names` is the policy grammar users type
(`simulate --policy`, the service's `headroom:`) and `headroom` counts a headroom
policy's placeholders per type, for the simulator's peers and the service alike.
"""
