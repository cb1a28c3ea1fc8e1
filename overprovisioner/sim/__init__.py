"""The cluster simulator: a discrete-event replay of a job table on a simulated cluster.

workload (job table -> arrays), cluster (nodes and indexes), scheduler (kube-scheduler-like
placement with the locality core's scoring), autoscaler (cluster-autoscaler's scale-up
estimate), policies (reactive, static:N, predictive, oracle through the shared plan),
build (config -> policy), engine (the event loop), metrics, compare (several policies
and the targets). See docs/simulator.md.
"""
