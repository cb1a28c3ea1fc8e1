"""Known-ahead demand: work the cluster has announced before its pods exist.

Queued Kueue Workloads, suspended Jobs and JobSets, Kubeflow training jobs whose pods
are not all created, the next run of each CronJob and PodGroups short of their minimum
are demand the cluster already knows about. The pure modules here turn those objects
(typed at the edge) into `KnownItem`s: a pod shape, how many pods, when they are
expected to need nodes, and the source that said so. `predictor.live.known_reader` is the
adapter that keeps them cached from the API; `predictor.known.combine` places them in
time and in buckets, and decides which running pods were announced ahead.
"""
