"""Job admission: one domain for the whole job, decided before any pod is scheduled.

The parts, as Kueue's topology-aware scheduling has them: `config` (settings and node
groups), `gather` (gated jobs and the reservations of admitted jobs, from pods),
`snapshot` (free room and autoscaler headroom per domain), `pack` (does a job fit a
domain: a bin-pack onto nodes), `assign` (which jobs go where, in which order, or why
not). The adapter that writes the decision into pods is `extender.admission`.
"""
