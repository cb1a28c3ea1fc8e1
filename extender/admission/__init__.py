"""The job admitter's adapters: the patch that writes a decision into a pod (`patch`)
and the leader-elected loop that reads the cache, plans (`locality.admission`) and
writes pods and Events (`admitter`)."""
