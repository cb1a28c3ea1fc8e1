"""The overprovisioner service: its tick loop and what it reads from and writes to the cluster.

`loop` runs a tick as observe -> decide -> apply: `tick_observe` reads it into one frozen
observation, the planner's `tick_decision` decides (pure), `apply` writes; `observe`,
`objects`, `wake`, `expiry`, `checks`, `diagnose` and `faults` are its adapters and
reports; `server` serves /plan, /metrics and the probes; `cli` starts it all (leader
election is `kube.leader`). The arithmetic it runs is
the planner's (`overprovisioner.planner`).
"""
