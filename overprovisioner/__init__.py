"""The predictive overprovisioner: placeholder plans sized to the forecast, and the simulator.

- `planner/`: from recorded demand to a placeholder plan, pure; one tick core
  (`planner.tick_core`) that the service and the simulator both run;
- `service/`: `headstart overprovisioner`, its tick loop and what it reads from and
  writes to the cluster;
- `config/`: the service's YAML configuration, parsed and checked against the catalog;
- `sim/`: `headstart simulate` and `headstart demo`: a trace replayed on a simulated
  cluster under placeholder policies, the verdict, the report and its plots.
"""
