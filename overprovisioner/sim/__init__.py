"""The cluster simulator: a discrete-event replay of a job table on a simulated cluster.

workload (job table -> arrays), cluster (nodes and indexes), scheduler (kube-scheduler-like
placement with the locality core's scoring), autoscaler (cluster-autoscaler's scale-up
estimate), policies (what every policy sees; reactive and the peers: static,
proportional, scheduled, per-type, counted by the planner's `headroom`; their names are
`overprovisioner.policy_names`), predictive (the overprovisioner service's tick from its
config), oracles (oracle, rate-oracle), build (config -> policy),
engine (the event loop), metrics, compare (several policies, judged against the cheapest
peer). See docs/simulator.md.
"""
