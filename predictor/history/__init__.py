"""Demand history as data, pure: the per-tick series and its column names, one tick's
snapshot from pods, and the zone / capacity-type pinning of a pod's demand."""
