"""The overprovisioner service: its tick loop and what it reads from and writes to the cluster.

`loop` ties a tick together; `observe`, `apply`, `objects`, `wake`, `expiry`, `checks`,
`diagnose` and `faults` are its adapters and reports; `server` serves /plan, /metrics and
the probes; `leader` elects one writer; `cli` starts it all. The arithmetic it runs is
the planner's (`overprovisioner.planner`).
"""
