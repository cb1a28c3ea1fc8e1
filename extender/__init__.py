"""The kube-scheduler extender HTTP service around the locality core."""
